// Package web serves the operators' console (docs/console.md): pages
// rendered on the server with html/template, enhanced by htmx (vendored,
// pinned, allowEval off) and readable with JavaScript off. A console action
// is an API action: it calls the same domain services with a principal of
// kind console, so access, events, errors and audit entries are the API's.
//
// Every answer carries a Content-Security-Policy with a fresh nonce, no
// framing, nosniff and a referrer policy (HSTS is set by the HTTP layer
// when base_url is https). Every state change is a POST that passes Go's
// cross-origin protection and carries the session's CSRF token; GET
// changes nothing.
package web

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/console"
	"github.com/gatehouse-auth/gatehouse/internal/machine"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/social"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// CookieName is the console session's cookie: __Host- (Secure, Path=/, no
// Domain), HttpOnly, SameSite=Strict. Browsers keep Secure cookies of
// http://localhost and 127.0.0.1, so development works too.
const CookieName = "__Host-gatehouse_console"

// Describe is the API's error table: the status, code and message an API
// call failing with err answers (it logs what the API logs).
type Describe func(ctx context.Context, err error) (status int, code, message string)

// Deps are the console's collaborators.
type Deps struct {
	Console  *console.Service
	Tenants  *tenant.Service
	Users    *appuser.Service
	SignIn   *signin.Service
	Webhooks *webhook.Service
	Machines *machine.Service
	Outbound *outbound.Service
	Social   *social.Service
	Describe Describe
	Log      *slog.Logger
	Now      func() time.Time
	// Sealer and Hasher keep the hosted pages' cookies (hosted.go): the
	// pending sign-in sealed, the CSRF tokens derived.
	Sealer *token.Sealer
	Hasher *token.Hasher
	// SendMinTime is the shortest time the code sign-in form answers in
	// (rate_limit.send_min_time, as the API's sends): an operator's address
	// and a stranger's take the same time.
	SendMinTime time.Duration
}

// Handler serves /console/.
type Handler struct {
	Deps
	mux  *http.ServeMux
	cop  *http.CrossOriginProtection
	page *renderer
}

// New builds the console.
func New(d Deps) *Handler {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	h := &Handler{Deps: d, mux: http.NewServeMux(), cop: http.NewCrossOriginProtection(), page: newRenderer()}
	h.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.render(w, r, http.StatusForbidden, "error", view{Title: "Refused", Message: "This request came from another site and was refused."})
	}))
	h.routes()
	return h
}

type ctxKey int

const (
	keyNonce ctxKey = iota
	keySession
)

func nonceOf(ctx context.Context) string { s, _ := ctx.Value(keyNonce).(string); return s }

func sessionOf(ctx context.Context) (console.Session, bool) {
	s, ok := ctx.Value(keySession).(console.Session)
	return s, ok
}

// ServeHTTP sets the security headers with a new nonce, refuses
// cross-origin state changes, and routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if hostedPath(r.URL.Path) { // the apps' hosted pages: their own headers (hosted.go)
		h.serveHosted(w, r)
		return
	}
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	nonce := base64.RawURLEncoding.EncodeToString(b) // no + or /, which templates would escape
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+"'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	r = r.WithContext(context.WithValue(r.Context(), keyNonce, nonce))
	h.cop.Handler(h.mux).ServeHTTP(w, r)
}

// session wraps a page that needs a signed-in operator: without one, a
// GET goes to the sign-in page and anything else is 401. A POST must carry
// the session's CSRF token (form field csrf, or X-CSRF-Token from htmx).
func (h *Handler) session(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var sess console.Session
		c, err := r.Cookie(CookieName)
		if err == nil {
			sess, err = h.Console.Authenticate(r.Context(), c.Value)
		}
		if err != nil {
			if !errors.Is(err, console.ErrSignedOut) && !errors.Is(err, http.ErrNoCookie) {
				h.fail(w, r, err)
				return
			}
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
				return
			}
			h.render(w, r, http.StatusUnauthorized, "error", view{Title: "Signed out", Message: "Your console session has ended. Sign in again."})
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			t := r.Header.Get("X-CSRF-Token")
			if t == "" {
				r.Body = http.MaxBytesReader(w, r.Body, maxForm)
				t = r.PostFormValue("csrf")
			}
			if !h.Console.CheckCSRF(sess, t) {
				h.render(w, r, http.StatusForbidden, "error", view{Title: "Refused", Message: "This form was not sent from your console session (its CSRF token is missing or wrong). Reload the page and try again."})
				return
			}
		}
		next(w, r.WithContext(context.WithValue(r.Context(), keySession, sess)))
	}
}

// principal is the signed-in operator acting in the request's workspace.
func (h *Handler) principal(r *http.Request) (access.Principal, console.Membership, error) {
	sess, _ := sessionOf(r.Context())
	return h.Console.Principal(r.Context(), sess, r.PathValue("ws"))
}

// fresh refuses (with a page asking to sign in again) a destructive action
// when the operator's sign-in is older than console.ReauthWindow.
func (h *Handler) fresh(w http.ResponseWriter, r *http.Request) bool {
	sess, _ := sessionOf(r.Context())
	if h.Console.Fresh(sess) {
		return true
	}
	h.render(w, r, http.StatusForbidden, "reauth", view{Title: "Sign in again"})
	return false
}

// fail answers err with the API's status and message on an error page.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, console.ErrNotMember):
		h.render(w, r, http.StatusForbidden, "error", view{Title: "Not a member", Message: "You are not a member of this workspace."})
		return
	case errors.Is(err, console.ErrSecondFactorRequired):
		h.render(w, r, http.StatusForbidden, "strong", view{Title: "Second factor required"})
		return
	case errors.Is(err, console.ErrSignedOut):
		h.render(w, r, http.StatusUnauthorized, "error", view{Title: "Signed out", Message: "Your console session has ended. Sign in again."})
		return
	}
	status, code, msg := h.Describe(r.Context(), err)
	if status == http.StatusForbidden {
		msg = "Your role in this workspace does not allow this."
	}
	h.render(w, r, status, "error", view{Title: http.StatusText(status), Message: msg, Code: code})
}
