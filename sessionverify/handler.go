package sessionverify

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

// claimsKey is the context key for the Claims that Middleware stores.
type claimsKey struct{}

// TokenFromRequest returns the access token a request carries: the Authorization header's
// Bearer value, else the raw X-Authorization header (what Gatehouse's own API reads), or "".
func TokenFromRequest(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok)
		}
		return ""
	}
	return strings.TrimSpace(r.Header.Get("X-Authorization"))
}

// Middleware wraps next: it verifies the request's access token (see TokenFromRequest) and puts
// its Claims in the request context (see ClaimsFrom). Without a valid token it answers 401 with
// WWW-Authenticate: Bearer and does not call next; when the key set cannot be read it answers
// 503. The answer names the reason (expired, wrong audience, …), never the token.
func (v *Verifier) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := v.Verify(r.Context(), TokenFromRequest(r))
		switch {
		case errors.Is(err, ErrKeys):
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		case errors.Is(err, ErrNoToken):
			w.Header().Set("WWW-Authenticate", `Bearer`)
			http.Error(w, err.Error(), http.StatusUnauthorized)
		case err != nil:
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, err.Error(), http.StatusUnauthorized)
		default:
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), claimsKey{}, c)))
		}
	})
}

// ClaimsFrom returns the Claims that Middleware stored in ctx.
func ClaimsFrom(ctx context.Context) (*Claims, bool) {
	c, ok := ctx.Value(claimsKey{}).(*Claims)
	return c, ok
}
