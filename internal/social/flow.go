package social

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// The sign-in flow (RFC 9700's authorization code grant with PKCE, OpenID
// Connect Core §3.1): Authorize sends the browser to the provider with a
// state stored here (single use, ten minutes, bound to the browser by a
// cookie), Finish takes the state back at the callback, exchanges the code
// and says who the provider vouches for. What becomes of that person (a
// user, a link, a refusal) is the signin package's.

// stateTTL is how long a browser has at the provider.
const stateTTL = 10 * time.Minute

// authorizeRule bounds the sign-ins one address may start at an app (each
// stores a state until it is used or expires).
var authorizeRule = ratelimit.Rule{Limit: 30, Period: time.Minute}

// Refusals of the flow. Each has the code the callback's redirect carries
// as sct_error (docs/social-sign-in.md lists them); the first two come
// before a callback is known and answer a page instead.
var (
	// ErrCallbackNotAllowed: callback_url is neither the app's callback
	// URL nor at one of its origins.
	ErrCallbackNotAllowed = errors.New("callback_url is not one of the app's")
	// ErrStateInvalid: no state, or one that is unknown, used, expired or
	// started in another browser.
	ErrStateInvalid = errors.New("the sign-in's state is missing, unknown, used, expired or of another browser")
	// ErrAccessDenied: the person declined at the provider.
	ErrAccessDenied = errors.New("the sign-in was declined at the provider")
)

// RateLimitedError: too many sign-ins started from one address.
type RateLimitedError struct{ RetryAfter time.Duration }

func (e *RateLimitedError) Error() string { return "too many social sign-ins started" }

// Endpoints are where the providers of the fixed types answer: their real
// addresses unless a test points them at local fakes.
type Endpoints struct {
	Google    string // issuer
	Apple     string // issuer
	Microsoft string // the login host, before /{tenant}/v2.0
	GitHub    string // the web host (authorize, access_token)
	GitHubAPI string
}

// DefaultEndpoints are the providers' own.
var DefaultEndpoints = Endpoints{Google: "https://accounts.google.com", Apple: "https://appleid.apple.com",
	Microsoft: "https://login.microsoftonline.com", GitHub: "https://github.com", GitHubAPI: "https://api.github.com"}

// Assertion is who the provider vouches for.
type Assertion struct {
	Provider string // the slug
	Type     string
	// Issuer and Subject name the account at the provider.
	Issuer, Subject string
	// Email, when the provider gave one; EmailVerified only when it says
	// it checked that the person holds it.
	Email         string
	EmailVerified bool
	Name          string
	// LinkByEmail: the provider may be linked to an existing user with the
	// same, verified, e-mail address (its link_existing setting).
	LinkByEmail bool
}

// loaded is an enabled provider with its settings in clear.
type loaded struct {
	row      store.OAuthProvider
	kind     Kind
	settings map[string]string
	scopes   []string
}

// load returns the app's enabled provider slug.
func (s *Service) load(ctx context.Context, appID, slug string) (loaded, error) {
	row, err := s.d.DB.GetOAuthProvider(ctx, appID, slug)
	if err != nil {
		return loaded{}, notFound(err, ErrProviderNotFound)
	}
	k, ok := KindOf(row.Type)
	if !ok || !row.Enabled {
		return loaded{}, ErrProviderNotFound
	}
	settings, err := s.settings(row)
	if err != nil {
		return loaded{}, err
	}
	scopes, _ := k.parseScopes(settings["scopes"])
	return loaded{row: row, kind: k, settings: settings, scopes: scopes}, nil
}

// CallbackFor is where a sign-in of app that asked for callback (may be
// empty) returns: callback itself when it is the app's callback URL or an
// http(s) URL at one of the app's origins, else ErrCallbackNotAllowed;
// without one, the app's callback URL (else its login URL, else its
// origin). Never anywhere else: no open redirect.
func CallbackFor(app store.App, callback string) (string, error) {
	if callback == "" {
		for _, u := range []string{app.CallbackURL, app.LoginURL, app.Origin} {
			if u != "" {
				return u, nil
			}
		}
		return "", ErrCallbackNotAllowed
	}
	u, err := url.Parse(callback)
	if err != nil || len(callback) > 2048 || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		u.Fragment != "" || u.Opaque != "" {
		return "", ErrCallbackNotAllowed
	}
	if callback == app.CallbackURL {
		return callback, nil
	}
	origin := u.Scheme + "://" + u.Host
	if origin == app.Origin || slices.Contains(app.AllowedOrigins, origin) {
		return callback, nil
	}
	return "", ErrCallbackNotAllowed
}

// bindingPattern is a browser binding as NewBinding makes them.
var bindingPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// NewBinding is a fresh value for the browser's binding cookie.
func NewBinding() string { return token.RandomString(32) }

// ValidBinding reports whether a cookie's value can be a binding.
func ValidBinding(b string) bool { return bindingPattern.MatchString(b) }

// derived are the values a state stands for: the PKCE verifier and the
// nonce are keyed hashes of it, so neither is stored.
func (s *Service) verifier(state string) string { return s.d.Hasher.Hash("oauth-pkce", state) }
func (s *Service) nonce(state string) string    { return s.d.Hasher.Hash("oauth-nonce", state) }

func pkceChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Authorize starts a sign-in of app with its provider slug for the browser
// holding binding, returning where to send the browser: the provider's
// authorization endpoint with a fresh state, the PKCE challenge (S256) and,
// for OpenID providers, a nonce. callback must already be CallbackFor's.
func (s *Service) Authorize(ctx context.Context, app store.App, slug, callback, binding, ip string) (_ string, err error) {
	defer errs.Wrap(&err, "start social sign-in")
	if s.d.Limiter != nil && ip != "" {
		res, err := s.d.Limiter.Allow(ctx, "oauth-authorize:"+app.ID+":ip:"+ip, authorizeRule)
		if err != nil {
			return "", err
		}
		if !res.Allowed {
			return "", &RateLimitedError{RetryAfter: res.RetryAfter}
		}
	}
	p, err := s.load(ctx, app.ID, slug)
	if err != nil {
		return "", err
	}
	state := token.RandomString(32)
	q := url.Values{"response_type": {"code"}, "client_id": {p.settings["client_id"]}, "redirect_uri": {s.RedirectURI(app.ID)},
		"scope": {strings.Join(p.scopes, " ")}, "state": {state},
		"code_challenge": {pkceChallenge(s.verifier(state))}, "code_challenge_method": {"S256"}}
	var endpoint string
	if p.kind.OpenID {
		d, err := s.discover(ctx, p)
		if err != nil {
			return "", err
		}
		endpoint = d.AuthorizationEndpoint
		q.Set("nonce", s.nonce(state))
		if p.kind.Type == TypeApple && (slices.Contains(p.scopes, "email") || slices.Contains(p.scopes, "name")) {
			// Apple answers a request for the name or e-mail only by
			// posting the form to the callback.
			q.Set("response_mode", "form_post")
		}
	} else {
		endpoint = s.d.Endpoints.GitHub + "/login/oauth/authorize"
	}
	now := s.now.Now()
	if err := s.d.DB.CreateOAuthState(ctx, store.OAuthState{StateHash: s.d.Hasher.Hash("oauth-state", state), AppID: app.ID,
		Provider: slug, CallbackURL: callback, BindingHash: s.d.Hasher.Hash("oauth-binding", binding),
		CreatedAt: now, ExpiresAt: now.Add(stateTTL)}); err != nil {
		return "", err
	}
	return addQuery(endpoint, q), nil
}

// addQuery appends q to endpoint's own query, if any.
func addQuery(endpoint string, q url.Values) string {
	sep := "?"
	if strings.Contains(endpoint, "?") {
		sep = "&"
	}
	return endpoint + sep + q.Encode()
}

// Callback is what the provider sent back through the browser.
type Callback struct {
	State, Code string
	// Error is the provider's error code (RFC 6749 §4.1.2.1), if any.
	Error string
	// Iss is the RFC 9207 issuer parameter, if sent.
	Iss string
	// User is Apple's user parameter: the name, on the first sign-in only.
	User string
	// Binding is the browser's binding cookie.
	Binding string
}

// Finish takes the state of a callback and, when the provider answered a
// code, exchanges it and checks what the provider vouches for. It returns
// the callback URL as soon as the state is known (also with an error), so
// that every refusal after that goes back to the app.
func (s *Service) Finish(ctx context.Context, app store.App, cb Callback) (_ Assertion, callback string, err error) {
	defer errs.Wrap(&err, "finish social sign-in")
	if cb.State == "" || len(cb.State) > 256 {
		return Assertion{}, "", ErrStateInvalid
	}
	st, err := s.d.DB.TakeOAuthState(ctx, app.ID, s.d.Hasher.Hash("oauth-state", cb.State))
	if errors.Is(err, store.ErrNotFound) {
		return Assertion{}, "", ErrStateInvalid
	}
	if err != nil {
		return Assertion{}, "", err
	}
	callback = st.CallbackURL
	// From here on a refusal names the provider (for the log) and goes back
	// to the app.
	known := Assertion{Provider: st.Provider}
	if !s.now.Now().Before(st.ExpiresAt) || !ValidBinding(cb.Binding) || !s.d.Hasher.Equal(st.BindingHash, "oauth-binding", cb.Binding) {
		return known, callback, ErrStateInvalid
	}
	p, err := s.load(ctx, app.ID, st.Provider)
	if err != nil {
		return known, callback, err
	}
	switch {
	case cb.Error == "access_denied":
		return known, callback, ErrAccessDenied
	case cb.Error != "":
		return known, callback, providerError("the provider answered an error")
	case cb.Code == "" || len(cb.Code) > 4096:
		return known, callback, providerError("the provider answered no code")
	}
	var a Assertion
	if p.kind.OpenID {
		a, err = s.finishOpenID(ctx, app, p, cb)
	} else {
		a, err = s.finishGitHub(ctx, app, p, cb)
	}
	if err != nil {
		return known, callback, err
	}
	a.Provider, a.Type, a.LinkByEmail = p.row.Slug, p.kind.Type, p.settings["link_existing"] != "false"
	if !a.EmailVerified {
		// An address nobody checked is not kept: it could be anyone's.
		a.Email = ""
	}
	return a, callback, nil
}

// discover returns p's discovery document.
func (s *Service) discover(ctx context.Context, p loaded) (Discovery, error) {
	switch p.kind.Type {
	case TypeGoogle:
		return s.oidc.Discover(ctx, s.d.Endpoints.Google)
	case TypeApple:
		return s.oidc.Discover(ctx, s.d.Endpoints.Apple)
	case TypeMicrosoft:
		return s.oidc.discoverMicrosoft(ctx, s.d.Endpoints.Microsoft, cmp.Or(p.settings["tenant"], "common"))
	default:
		return s.oidc.Discover(ctx, p.settings["issuer"])
	}
}

// finishOpenID exchanges the code at an OpenID provider and checks its ID
// token; the e-mail address comes from the ID token or, when it has none,
// from userinfo.
func (s *Service) finishOpenID(ctx context.Context, app store.App, p loaded, cb Callback) (Assertion, error) {
	d, err := s.discover(ctx, p)
	if err != nil {
		return Assertion{}, err
	}
	// RFC 9207: an issuer parameter must name this provider; a provider
	// that promises one must send it (mix-up defence).
	if cb.Iss != "" || d.IssParameter {
		if !d.issuerMatches(cb.Iss, "") {
			return Assertion{}, providerError("the answer names another issuer")
		}
	}
	clientID, secret := p.settings["client_id"], p.settings["client_secret"]
	if p.kind.Type == TypeApple {
		if secret, err = AppleClientSecret(p.settings["team_id"], p.settings["key_id"], clientID, p.settings["private_key"], s.now.Now()); err != nil {
			return Assertion{}, err
		}
	}
	toks, err := s.oidc.Exchange(ctx, d, clientID, secret, cb.Code, s.verifier(cb.State), s.RedirectURI(app.ID))
	if err != nil {
		return Assertion{}, err
	}
	if toks.IDToken == "" {
		return Assertion{}, providerError("the token endpoint answered no ID token")
	}
	c, err := s.oidc.VerifyIDToken(ctx, d, clientID, s.nonce(cb.State), toks.IDToken)
	if err != nil {
		return Assertion{}, err
	}
	if c.Email == "" && d.UserinfoEndpoint != "" && p.kind.Type != TypeApple {
		info, err := s.oidc.Userinfo(ctx, d, toks.AccessToken, c.Subject)
		if err != nil {
			return Assertion{}, err
		}
		c.Email, c.EmailVerified = info.Email, info.EmailVerified
		c.DomainOwnerVerified = info.DomainOwnerVerified
		if c.Name == "" {
			c.Name = info.Name
		}
	}
	verified := bool(c.EmailVerified)
	if p.kind.Type == TypeMicrosoft {
		// Entra ID never says email_verified: only xms_edov (the domain's
		// owner vouches for the address) counts.
		verified = bool(c.DomainOwnerVerified)
	}
	a := Assertion{Issuer: c.Issuer, Subject: c.Subject, Email: strings.ToLower(strings.TrimSpace(c.Email)), EmailVerified: verified && c.Email != "",
		Name: c.Name}
	if p.kind.Type == TypeApple && cb.User != "" {
		a.Name = appleName(cb.User)
	}
	return a, nil
}

// appleName reads the name Apple posts (as JSON) on a first sign-in.
func appleName(raw string) string {
	var u struct {
		Name struct {
			FirstName string `json:"firstName"`
			LastName  string `json:"lastName"`
		} `json:"name"`
	}
	if len(raw) > 4096 || json.Unmarshal([]byte(raw), &u) != nil {
		return ""
	}
	return strings.TrimSpace(u.Name.FirstName + " " + u.Name.LastName)
}

// issuerMatches reports whether iss is d's issuer; a Microsoft
// multi-tenant issuer ({tenantid}) matches with the token's tenant tid,
// or, for an authorization answer (tid ""), any tenant id.
func (d Discovery) issuerMatches(iss, tid string) bool {
	before, after, templated := strings.Cut(d.Issuer, "{tenantid}")
	if !templated {
		return iss == d.Issuer
	}
	if !strings.HasPrefix(iss, before) || !strings.HasSuffix(iss, after) || len(iss) < len(before)+len(after) {
		return false
	}
	got := iss[len(before) : len(iss)-len(after)]
	return tenantID.MatchString(got) && (tid == "" || got == tid)
}

var tenantID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// SignInError is the code a refusal of err comes back to the app with
// (sct_error), from the list in docs/social-sign-in.md.
func SignInError(err error) string {
	var limited *RateLimitedError
	switch {
	case errors.Is(err, ErrStateInvalid):
		return "state_invalid"
	case errors.Is(err, ErrAccessDenied):
		return "access_denied"
	case errors.Is(err, ErrProviderNotFound):
		return "provider_not_found"
	case errors.Is(err, ErrIDToken):
		return "id_token_invalid"
	case errors.Is(err, ErrProvider):
		return "provider_error"
	case errors.As(err, &limited):
		return "rate_limited"
	}
	return "server_error"
}

// ErrorClass is what a log line may say of a refusal: its class (a fixed
// string of this package), never what the provider sent.
func ErrorClass(err error) string {
	msg := err.Error()
	for _, e := range []error{ErrProvider, ErrIDToken} {
		if i := strings.LastIndex(msg, e.Error()+": "); i >= 0 && errors.Is(err, e) {
			return msg[i+len(e.Error())+2:]
		}
	}
	return SignInError(err)
}
