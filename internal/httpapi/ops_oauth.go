package httpapi

import (
	"context"
	"embed"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/social"
)

// OAuthProviderConfig is one of an app's social sign-in providers as the
// API shows it: secrets as a hint, never in clear.
type OAuthProviderConfig struct {
	Slug         string    `json:"slug" example:"google" doc:"Names the provider within the app: what the sign-in link's provider parameter says."`
	Type         string    `json:"type" enum:"google,apple,microsoft,github,oidc" example:"google" doc:"The provider type."`
	Name         string    `json:"name" example:"Google" doc:"The name on the sign-in button: the type's (or, for oidc, the issuer's host) until one is set."`
	Enabled      bool      `json:"enabled" doc:"Offered to the app's users."`
	ClientID     string    `json:"client_id" example:"1234567890-abc.apps.googleusercontent.com" doc:"The client id the provider issued (Apple: the Services ID)."`
	ClientSecret string    `json:"client_secret,omitempty" example:"****XMPL" doc:"A hint of the client secret: the last 4 characters after **** when it has 16 or more, else ********. Not for apple."`
	Issuer       string    `json:"issuer,omitempty" doc:"oidc only: the OpenID issuer, whose discovery document says everything else."`
	Tenant       string    `json:"tenant,omitempty" doc:"microsoft only: common (the default), organizations, consumers, a directory (tenant) id or a domain name."`
	TeamID       string    `json:"team_id,omitempty" doc:"apple only: the Apple developer team id."`
	KeyID        string    `json:"key_id,omitempty" doc:"apple only: the id of the Sign in with Apple key."`
	PrivateKey   string    `json:"private_key,omitempty" doc:"apple only: a hint of the .p8 private key."`
	Scopes       []string  `json:"scopes" example:"[\"openid\",\"email\",\"profile\"]" doc:"The scopes asked for."`
	Color        string    `json:"color,omitempty" example:"#4285f4" doc:"The button's colour, if set."`
	LinkExisting bool      `json:"link_existing" doc:"A first sign-in may join an existing user with the same e-mail address, when the provider says it verified it."`
	RedirectURI  string    `json:"redirect_uri" example:"https://auth.example.com/v1/auth/app_123/oauth/callback" doc:"The redirect (callback) URI to register with the provider, exactly as shown."`
	CreatedAt    time.Time `json:"created_at" doc:"When it was added (RFC 3339)."`
	UpdatedAt    time.Time `json:"updated_at" doc:"When it last changed (RFC 3339)."`
}

func oauthProviderOut(p social.Provider) OAuthProviderConfig {
	return OAuthProviderConfig{Slug: p.Slug, Type: p.Type, Name: p.Name, Enabled: p.Enabled, ClientID: p.ClientID,
		ClientSecret: p.Settings["client_secret"], Issuer: p.Settings["issuer"], Tenant: p.Settings["tenant"],
		TeamID: p.Settings["team_id"], KeyID: p.Settings["key_id"], PrivateKey: p.Settings["private_key"],
		Scopes: nonNil(p.Scopes), Color: p.Color, LinkExisting: p.LinkExisting, RedirectURI: p.RedirectURI, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

var exOAuthProvider = OAuthProviderConfig{Slug: "google", Type: "google", Name: "Google", Enabled: true,
	ClientID: "1234567890-abc.apps.googleusercontent.com", ClientSecret: "****XMPL", Scopes: []string{"openid", "email", "profile"},
	LinkExisting: true, RedirectURI: "https://auth.example.com/v1/auth/app_123/oauth/callback", CreatedAt: exT1, UpdatedAt: exT1}

type oauthProvidersOutput struct {
	Body struct {
		Providers []OAuthProviderConfig `json:"oauth_providers" doc:"The app's social sign-in providers, by slug."`
	}
}

const oauthProvidersDoc = "The app's social sign-in providers (docs/social-sign-in.md), secrets as a hint. " +
	"With the app's API secret, an API key or a workspace secret of a member. " +
	"The enabled ones are listed in the app's public data (`oauth_providers`), and users sign in through them with `GET /v1/auth/{app_id}/oauth/authorize?provider={slug}`."

var listOauthProvidersOp = operation{id: "listOauthProviders", method: "GET", path: "/v1/apps/{app_id}/oauth_providers", summary: "List social sign-in providers", tag: "Apps",
	auth: authAppHidden,
	desc: oauthProvidersDoc,
	resp: body(func(o *oauthProvidersOutput) { o.Body.Providers = []OAuthProviderConfig{exOAuthProvider} })}

func (s *Server) listOAuthProviders(ctx context.Context, _ *appIDInput) (*oauthProvidersOutput, error) {
	ps, err := s.Social.List(ctx, principalFrom(ctx), appFrom(ctx).ID)
	if err != nil {
		return nil, err
	}
	out := &oauthProvidersOutput{}
	out.Body.Providers = make([]OAuthProviderConfig, 0, len(ps))
	for _, p := range ps {
		out.Body.Providers = append(out.Body.Providers, oauthProviderOut(p))
	}
	return out, nil
}

// OAuthProviderBody is a social sign-in provider as PUT: all of it. A
// secret left out, or sent back as its hint, keeps its stored value, unless
// the type, the issuer (oidc) or the tenant (microsoft) changes.
type OAuthProviderBody struct {
	Type         string   `json:"type" enum:"google,apple,microsoft,github,oidc" doc:"The provider type."`
	Enabled      *bool    `json:"enabled,omitempty" doc:"Offered to the app's users; default true."`
	Name         string   `json:"name,omitempty" maxLength:"100" doc:"The name on the sign-in button; default the type's (for oidc, the issuer's host)."`
	ClientID     string   `json:"client_id" maxLength:"255" doc:"The client id the provider issued (Apple: the Services ID)."`
	ClientSecret string   `json:"client_secret,omitempty" maxLength:"8192" doc:"The client secret (not for apple). Required when the provider is created or its type, issuer or tenant changes."`
	Issuer       string   `json:"issuer,omitempty" maxLength:"2048" doc:"oidc only, required: the OpenID issuer (https; http only in development), without a trailing /.well-known path."`
	Tenant       string   `json:"tenant,omitempty" maxLength:"255" doc:"microsoft only: common (default), organizations, consumers, a directory (tenant) id or a domain name."`
	TeamID       string   `json:"team_id,omitempty" maxLength:"10" doc:"apple only, required: the developer team id (10 characters)."`
	KeyID        string   `json:"key_id,omitempty" maxLength:"10" doc:"apple only, required: the Sign in with Apple key's id (10 characters)."`
	PrivateKey   string   `json:"private_key,omitempty" maxLength:"8192" doc:"apple only, required when created: the .p8 key file's contents (PEM, P-256)."`
	Scopes       []string `json:"scopes,omitempty" maxItems:"20" doc:"Scopes to ask for; default the type's (openid email profile; github read:user user:email; apple name email). OpenID types always ask for openid."`
	Color        string   `json:"color,omitempty" doc:"The button's colour, #rrggbb."`
	LinkExisting *bool    `json:"link_existing,omitempty" doc:"A first sign-in with this provider may join an existing user with the same e-mail address when the provider says it verified it (default true). false: such a sign-in is refused with account_exists."`
}

type putOAuthProviderInput struct {
	AppID string            `path:"app_id" doc:"The app id."`
	Slug  string            `path:"slug" maxLength:"40" doc:"The provider's slug: 1 to 40 lower-case letters, digits and hyphens."`
	Body  OAuthProviderBody `required:"true"`
}

type oauthProviderOutput struct {
	Status int
	Body   struct {
		Provider OAuthProviderConfig `json:"oauth_provider" doc:"The provider as saved."`
	}
}

var putOauthProviderOp = operation{id: "putOauthProvider", method: "PUT", path: "/v1/apps/{app_id}/oauth_providers/{slug}", summary: "Add or replace a social sign-in provider", tag: "Apps",
	auth: authAppHidden, errors: []string{errorsShape},
	desc: "Adds the provider named by `slug` (201) or replaces it (200). Each type takes its own settings: `google` and `github` a client id and secret; " +
		"`microsoft` also a `tenant`; `oidc` an `issuer` (any conforming OpenID provider: Keycloak, Authentik, Okta, Auth0, Dex, Zitadel…; several per app under different slugs); " +
		"`apple` a Services ID as `client_id`, `team_id`, `key_id` and the `.p8` `private_key` (its client secret is minted from the key). A setting of another type is refused, naming it. " +
		"Secrets are sealed and never shown again: a secret left out or sent back as its hint keeps its value, but a change of type, issuer or tenant needs the secrets sent again (a stored secret never follows a provider to a new destination). " +
		"Register `redirect_uri` from the answer with the provider. Every change is logged with the names of the settings it changed. " +
		"Who may manage the app may: its API secret, or a workspace secret of an owner or admin; not an API key.",
	req:  `{"type":"google","client_id":"1234567890-abc.apps.googleusercontent.com","client_secret":"GOCSPX-example-secret-XMPL"}`,
	resp: body(func(o *oauthProviderOutput) { o.Body.Provider = exOAuthProvider })}

func (s *Server) putOAuthProvider(ctx context.Context, in *putOAuthProviderInput) (*oauthProviderOutput, error) {
	b := in.Body
	enabled := b.Enabled == nil || *b.Enabled
	settings := map[string]string{}
	for name, v := range map[string]string{"client_secret": b.ClientSecret, "issuer": b.Issuer, "tenant": b.Tenant,
		"team_id": b.TeamID, "key_id": b.KeyID, "private_key": b.PrivateKey} {
		if v != "" {
			settings[name] = v
		}
	}
	p, created, err := s.Social.Put(ctx, principalFrom(ctx), appFrom(ctx).ID, social.Change{Slug: in.Slug, Type: b.Type,
		Enabled: enabled, Name: b.Name, ClientID: b.ClientID, Settings: settings, Scopes: strings.Join(b.Scopes, " "), Color: b.Color,
		LinkExisting: b.LinkExisting})
	if err != nil {
		return nil, err
	}
	out := &oauthProviderOutput{Status: http.StatusOK}
	if created {
		out.Status = http.StatusCreated
	}
	out.Body.Provider = oauthProviderOut(p)
	return out, nil
}

type oauthProviderSlugInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Slug  string `path:"slug" maxLength:"40" doc:"The provider's slug."`
}

var deleteOauthProviderOp = operation{id: "deleteOauthProvider", method: "DELETE", path: "/v1/apps/{app_id}/oauth_providers/{slug}", summary: "Delete a social sign-in provider", tag: "Apps",
	auth: authAppHidden, errors: []string{"oauth_provider_not_found"},
	desc: "Deletes the provider: it is no longer offered, and its settings are gone. 404 oauth_provider_not_found when the app has none by that slug. Who may manage the app may.",
	resp: okBody}

func (s *Server) deleteOAuthProvider(ctx context.Context, in *oauthProviderSlugInput) (*okOutput, error) {
	if err := s.Social.Delete(ctx, principalFrom(ctx), appFrom(ctx).ID, in.Slug); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

// Social sign-in (docs/social-sign-in.md; client-compat C25, §6.4): the
// browser comes to authorize, goes to the provider, comes back to the
// callback and is sent on to the app with a single-use token (sct_magic),
// which the client SDK turns into a session with PATCH
// /magic_links/authenticate. Once the sign-in's return address is known,
// every refusal goes back there as sct_error; never a raw 500.

// oauthCookie is the browser binding's cookie: __Host- (Secure, Path=/, no
// Domain) when the server is on https. SameSite=None so that Apple's form
// post back to the callback carries it; it grants nothing by itself.
func (s *Server) oauthCookie(value string, maxAge int) *http.Cookie {
	c := &http.Cookie{Name: "gatehouse_oauth", Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, MaxAge: maxAge}
	if strings.HasPrefix(s.BaseURL, "https://") {
		c.Name, c.Secure, c.SameSite = "__Host-gatehouse_oauth", true, http.SameSiteNoneMode
	}
	return c
}

// oauthBinding is the browser's binding from its cookie, if valid.
func (s *Server) oauthBinding(r *http.Request) string {
	if c, err := r.Cookie(s.oauthCookie("", 0).Name); err == nil && social.ValidBinding(c.Value) {
		return c.Value
	}
	return ""
}

const oauthErrorCodes = "`access_denied` (declined at the provider), `state_invalid` (the sign-in is unknown, used, expired or was started in another browser), " +
	"`provider_not_found` (no enabled provider by that slug), `provider_error` (the provider failed, could not be reached or answered wrongly), " +
	"`id_token_invalid` (the ID token failed a check), `email_not_verified` (a first sign-in without an e-mail address the provider verified), " +
	"`account_exists` (a user has the address and the provider may not link to it), `signup_closed` (nobody has the address and the app does not let people sign up), " +
	"`signup_refused` (the app cannot take the person, e.g. it does not identify users by e-mail address), `user_inactive`, " +
	"`identity_conflict` (the identity was linked under another issuer), `rate_limited`, `server_error`"

var oauthAuthorizeOp = operation{id: "oauthAuthorize", method: "GET", path: "/v1/auth/{app_id}/oauth/authorize", summary: "Start a social sign-in (browser navigation)", tag: "Sign-in",
	contentType: "text/html", errors: []string{"503"},
	pages: map[int]string{http.StatusFound: "To the provider's sign-in page (`Location`), or back to the return address with `sct_error`",
		http.StatusBadRequest: "callback_url is not the app's callback URL nor at one of its origins (no redirect: never an open redirect)",
		http.StatusNotFound:   "Unknown app"},
	desc: "Where the client SDK's `signInWithOAuthProvider(provider)` sends the browser: `?provider={slug}` and optionally `callback_url` " +
		"(the app's `callback_url` exactly, or any URL at the app's origin or one of its allowed origins; default the app's callback URL, else its login URL, else its origin). " +
		"Answers 302 to the provider with a fresh `state` (stored for 10 minutes, single use, bound to this browser by the `__Host-gatehouse_oauth` cookie; `gatehouse_oauth` on http), " +
		"a PKCE S256 challenge and, for OpenID providers, a `nonce`. A refusal goes back to the return address with `sct_error`: " + oauthErrorCodes +
		". At most 30 sign-ins a minute start from one address per app. A request that reached the server by another host name than base_url's is first redirected (302) to the same address on base_url, so that the cookie is set where the provider sends the browser back."}

func (s *Server) oauthAuthorize(w http.ResponseWriter, r *http.Request) {
	app, ok := s.pageApp(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	// The binding cookie must be set on the host the provider sends the
	// browser back to, base_url's: a browser that came by another name
	// (127.0.0.1 for localhost, say) is sent there first, once (the
	// marker keeps a proxy that rewrites Host from looping).
	if base, err := url.Parse(s.BaseURL); err == nil && base.Host != "" && !strings.EqualFold(r.Host, base.Host) && q.Get("gh_host") == "" {
		q.Set("gh_host", "1")
		noStore(w)
		http.Redirect(w, r, s.BaseURL+r.URL.Path+"?"+q.Encode(), http.StatusFound)
		return
	}
	callback, err := social.CallbackFor(app, strings.TrimSpace(q.Get("callback_url")))
	if err != nil {
		s.renderNotice(w, r, http.StatusBadRequest, noticeView{Title: "Sign-in not started",
			Message: "The address to return to after signing in is not one of this app's. Start again from the app."}, 0)
		return
	}
	binding := s.oauthBinding(r)
	if binding == "" {
		binding = social.NewBinding()
	}
	dest, err := s.Social.Authorize(r.Context(), app, strings.TrimSpace(q.Get("provider")), callback, binding, client(r.Context(), "").IP)
	if err != nil {
		s.oauthRefused(w, r, app.ID, q.Get("provider"), callback, err, social.SignInError(err))
		return
	}
	http.SetCookie(w, s.oauthCookie(binding, int((10*time.Minute)/time.Second)))
	noStore(w)
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, dest, http.StatusFound)
}

var oauthCallbackOp = operation{id: "oauthCallback", method: "GET", path: "/v1/auth/{app_id}/oauth/callback", summary: "Return from a social sign-in provider", tag: "Sign-in",
	contentType: "text/html", errors: []string{"503"},
	pages: map[int]string{http.StatusFound: "Back to the app: `?sct_magic=<token>&sct_sk=true&sct_oauth=<token>`, or `?sct_error=<code>`",
		http.StatusBadRequest: "No state, or one that is unknown or already used: where to return is not known, so a page says to start again",
		http.StatusNotFound:   "Unknown app"},
	desc: "The redirect URI to register with every provider of the app (the same for all: the state says which provider answers). " +
		"Takes the sign-in's state (single use: of two callbacks with one state exactly one proceeds), checks it was started in this browser, " +
		"checks the RFC 9207 `iss` parameter when sent or promised, exchanges the code with the PKCE verifier, verifies the ID token (signature by the provider's published key with an algorithm it advertises, never none nor HMAC; `iss`, `aud`, `azp`, `nonce`, `exp`, `iat`) " +
		"or, for GitHub, reads `/user` and `/user/emails`, then signs the person in: a known identity is its user; a new one joins the user with the e-mail address the provider verified (when the provider's `link_existing` allows) or signs up a new user (when the app allows sign-up). " +
		"Then 302 back to the app with a single-use token valid for 2 minutes (`sct_magic`, and `sct_oauth` for newer SDKs, with `sct_sk=true`), which `PATCH /v1/auth/{app_id}/magic_links/authenticate` turns into tokens " +
		"(session `type` oauth, `amr` [\"oauth:{slug}\"], the app's MFA policy applies). A refusal goes back with `sct_error`: " + oauthErrorCodes + "."}

var oauthCallbackPostOp = operation{id: "oauthCallbackPost", method: "POST", path: "/v1/auth/{app_id}/oauth/callback", summary: "Return from a social sign-in provider (form post)", tag: "Sign-in",
	contentType: "text/html", errors: []string{"503"},
	pages: map[int]string{http.StatusSeeOther: "Back to the app, as the GET callback",
		http.StatusBadRequest: "No state, or one that is unknown or already used", http.StatusNotFound: "Unknown app"},
	desc: "The same callback for providers that answer with a form post (`response_mode=form_post`: Apple, whose first sign-in also posts the person's name as `user`). " +
		"The body is `application/x-www-form-urlencoded` (at most 64 KiB)."}

// maxCallbackForm bounds a provider's form post: a code, a state, an ID
// token and Apple's user.
const maxCallbackForm = 64 << 10

func (s *Server) oauthCallback(w http.ResponseWriter, r *http.Request) {
	app, ok := s.pageApp(w, r)
	if !ok {
		return
	}
	vals := r.URL.Query()
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxCallbackForm)
		if err := r.ParseForm(); err != nil {
			vals = nil
		} else {
			vals = r.PostForm
		}
	}
	a, callback, err := s.Social.Finish(r.Context(), app, social.Callback{State: vals.Get("state"), Code: vals.Get("code"),
		Error: vals.Get("error"), Iss: vals.Get("iss"), User: vals.Get("user"), Binding: s.oauthBinding(r)})
	if callback == "" {
		if err != nil && !errors.Is(err, social.ErrStateInvalid) {
			s.Log.ErrorContext(r.Context(), "social sign-in", "request_id", requestID(r.Context()), "app_id", app.ID, "err", err)
			http.Error(w, "Service temporarily unavailable", http.StatusServiceUnavailable)
			return
		}
		s.renderNotice(w, r, http.StatusBadRequest, noticeView{Title: "Sign-in expired",
			Message: "This sign-in is unknown, was already used or has expired. Go back to the app and start again."}, 0)
		return
	}
	if err != nil {
		s.oauthRefused(w, r, app.ID, a.Provider, callback, err, social.SignInError(err))
		return
	}
	tok, err := s.SignIn.SignInExternal(r.Context(), app, signin.External{Provider: a.Provider, Issuer: a.Issuer, Subject: a.Subject,
		Email: a.Email, Name: a.Name, LinkByEmail: a.LinkByEmail}, client(r.Context(), r.UserAgent()))
	if err != nil {
		code, ok := signin.ExternalError(err)
		if !ok {
			code = "server_error"
		}
		s.oauthRefused(w, r, app.ID, a.Provider, callback, err, code)
		return
	}
	s.oauthReturn(w, r, callback, url.Values{"sct_magic": {tok}, "sct_sk": {"true"}, "sct_oauth": {tok}})
}

// oauthRefused sends the browser back to the app with sct_error=code, and
// logs the refusal by its class (never what the provider sent).
func (s *Server) oauthRefused(w http.ResponseWriter, r *http.Request, appID, provider, callback string, err error, code string) {
	level := slog.LevelInfo
	if code == "server_error" {
		level = slog.LevelError
	}
	if len(provider) > 40 { // a slug is at most 40; this one came from the query
		provider = provider[:40]
	}
	s.Log.Log(r.Context(), level, "social sign-in refused", "request_id", requestID(r.Context()), "app_id", appID,
		"provider", provider, "error_code", code, "class", social.ErrorClass(err))
	if code == "server_error" {
		s.Log.ErrorContext(r.Context(), "social sign-in", "request_id", requestID(r.Context()), "app_id", appID, "err", err)
	}
	s.oauthReturn(w, r, callback, url.Values{"sct_error": {code}})
}

// oauthReturn redirects to callback with q added to its query.
func (s *Server) oauthReturn(w http.ResponseWriter, r *http.Request, callback string, q url.Values) {
	u, err := url.Parse(callback)
	if err != nil {
		http.Error(w, "Service temporarily unavailable", http.StatusServiceUnavailable)
		return
	}
	have := u.Query()
	for k, v := range q {
		have[k] = v
	}
	u.RawQuery = have.Encode()
	noStore(w)
	w.Header().Set("Referrer-Policy", "no-referrer")
	status := http.StatusFound
	if r.Method == http.MethodPost {
		status = http.StatusSeeOther
	}
	http.Redirect(w, r, u.String(), status)
}

//go:embed pages/icons/*.svg
var oauthIcons embed.FS

var oauthIconOp = operation{id: "oauthIcon", method: "GET", path: "/v1/assets/oauth/{icon}", summary: "A social sign-in button's icon", tag: "Sign-in",
	contentType: "image/svg+xml", errors: []string{"not_found"},
	desc: "The icon the app's public data names for each provider (`oauth_providers[].icon`): `google.svg`, `apple.svg`, `microsoft.svg`, `github.svg`, `oidc.svg`. " +
		"Simple monograms in each provider's colour; apps that want the providers' own brand marks draw their own buttons. Cached for a day."}

func (s *Server) oauthIcon(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("icon")
	b, err := oauthIcons.ReadFile("pages/icons/" + name)
	if err != nil || strings.ContainsAny(name, "/\\") {
		writeJSON(w, http.StatusNotFound, ErrorBody{Error: "Not found", Code: "not_found"})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "image/svg+xml")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	h.Set("Cache-Control", "public, max-age=86400")
	_, _ = w.Write(b)
}

// Identities: a user's accounts at the app's social sign-in providers.

type unlinkIdentityInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	ID        string `path:"id" maxLength:"64" doc:"The identity's id, as current_user's identities list it."`
	Challenge string `query:"challenge" maxLength:"128" doc:"A completed step_up challenge's token; needed once the session's sign-in is older than the app's mfa_reverify_minutes."`
}

var unlinkIdentityOp = operation{id: "unlinkIdentity", method: "DELETE", path: "/v1/auth/{app_id}/identities/{id}", summary: "Unlink one of your social sign-in identities", tag: "Sessions",
	auth: authUser, errors: []string{"identity_not_found", "last_sign_in_method", "verification_required"},
	desc: "Unlinks one of the signed-in user's social sign-in identities (GET current_user lists them for browsers): that provider account no longer signs in as this user; signing in with it again makes a new link by the usual rules. " +
		"Refused with 409 last_sign_in_method when it is the user's only way in (no e-mail address or phone number the app signs in with, no passkey, no other identity). " +
		"Once the session's sign-in is older than the app's mfa_reverify_minutes it needs `?challenge=` with a completed step_up challenge's token (else 403 verification_required). " +
		"204 on success; emits `user.identity_unlinked`."}

func (s *Server) unlinkIdentity(ctx context.Context, in *unlinkIdentityInput) (*noContentOutput, error) {
	if err := s.SignIn.UnlinkIdentity(ctx, appFrom(ctx), callerFrom(ctx), in.ID, in.Challenge); err != nil {
		return nil, err
	}
	return &noContentOutput{Status: http.StatusNoContent}, nil
}

type userIdentityInput struct {
	AppID      string `path:"app_id" doc:"The app id."`
	ID         string `path:"id" doc:"The user id."`
	IdentityID string `path:"identity_id" maxLength:"64" doc:"The identity's id, as GET /v1/{app_id}/users/{id} lists it."`
}

var unlinkUserIdentityOp = operation{id: "unlinkUserIdentity", method: "DELETE", path: "/v1/{app_id}/users/{id}/identities/{identity_id}", summary: "Unlink a user's social sign-in identity", tag: "Users",
	auth: authApp, errors: []string{"user_not_found", "identity_not_found", "last_sign_in_method"},
	desc: "Unlinks one of a user's social sign-in identities for an administrator (GET /v1/{app_id}/users/{id} lists them), unless it is the user's only way in (409 last_sign_in_method). Emits `user.identity_unlinked`.",
	resp: okBody}

func (s *Server) unlinkUserIdentity(ctx context.Context, in *userIdentityInput) (*okOutput, error) {
	if err := s.SignIn.AdminUnlinkIdentity(ctx, principalFrom(ctx), appFrom(ctx), in.ID, in.IdentityID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}
