package httpapi_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/social"
	"github.com/gatehouse-auth/gatehouse/internal/social/socialtest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// socialApp is an app for social sign-in: its callback URL on appOrigin,
// sign-up open unless closed.
func socialApp(t *testing.T, e *env, name string, signup bool) tenant.App {
	t.Helper()
	return e.App(t, e.ws.ID, name, func(s *tenant.AppSettings) {
		s.Origin, s.CallbackURL, s.PublicSignup = ptr(appOrigin), ptr(appOrigin+"/welcome"), ptr(signup)
		s.AllowedOrigins = &[]string{"https://admin.example.com"}
	})
}

// jwtClaims decodes a JWT's claims without checking it (the server did).
func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOAuthSignIn: the social sign-in flow end to end against a real
// OpenID provider (socialtest), as a browser follows it: authorize, the
// provider's login, the callback, back to the app with sct_magic, and the
// client SDK's C5 turning it into a session of type oauth. Each refusal of
// issue 25's list comes back to the app as sct_error (or, when where to
// return is unknown, as a page), on both engines.
func TestOAuthSignIn(t *testing.T) {
	// The provider stamps its tokens with the wall clock.
	forEach(t, servertest.Options{Serve: true, RealClock: true}, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		ctx := t.Context()
		app := socialApp(t, e, "Social", true)
		closed := socialApp(t, e, "Closed", false)
		secret := "op-client-secret-for-gatehouse-42"
		e.remember(secret)
		callbackOf := func(a tenant.App) string { return e.Config.BaseURL + "/v1/auth/" + a.ID + "/oauth/callback" }
		op := socialtest.Start(t, []socialtest.User{
			{ID: "ada", Email: "ada@example.com", EmailVerified: true, FirstName: "Ada", LastName: "Lovelace"},
			{ID: "bob", Email: "Bob@Example.com", EmailVerified: true},
			{ID: "eve", Email: "eve@example.com"},
			{ID: "carol", Email: "carol@example.com", EmailVerified: true},
			{ID: "dan", Email: "dan@example.com", EmailVerified: true},
		}, []socialtest.Client{{ID: "gatehouse", Secret: secret, Redirects: []string{callbackOf(app), callbackOf(closed)}}})
		put := func(a tenant.App, slug string, extra map[string]any) {
			t.Helper()
			body := map[string]any{"type": "oidc", "issuer": op.Issuer, "client_id": "gatehouse", "client_secret": secret, "name": "Corp SSO"}
			for k, v := range extra {
				body[k] = v
			}
			if r := e.do(t, "PUT", "/v1/apps/"+a.ID+"/oauth_providers/"+slug, bearer(e.appSecretFor(t, a.ID)), body); r.status/100 != 2 {
				t.Fatalf("PUT provider = %d %s", r.status, r.raw)
			}
		}
		put(app, "corp", nil)
		put(app, "strict", map[string]any{"link_existing": false})
		e.app = app
		e.recordEvents(t)
		put(closed, "corp", nil)
		for _, u := range []struct {
			a     tenant.App
			email string
		}{{app, "bob@example.com"}, {app, "eve@example.com"}, {app, "carol@example.com"}} {
			if _, _, err := e.Users.Create(ctx, servertest.Operator, u.a, appuser.CreateInput{Email: u.email}); err != nil {
				t.Fatal(err)
			}
		}
		authorize := func(a tenant.App, provider string, extra url.Values) string {
			q := url.Values{"provider": {provider}}
			for k, v := range extra {
				q[k] = v
			}
			return e.Config.BaseURL + "/v1/auth/" + a.ID + "/oauth/authorize?" + q.Encode()
		}
		// signIn runs the whole flow for username and returns where the
		// browser lands at the app.
		signIn := func(t *testing.T, a tenant.App, provider, username string) url.Values {
			t.Helper()
			end, status, body := op.Follow(t, socialtest.NewBrowser(), authorize(a, provider, nil), username, appOrigin)
			if end == nil {
				t.Fatalf("the flow did not come back to the app: %d %s", status, body)
			}
			if end.Path != "/welcome" {
				t.Errorf("came back to %s; want the app's callback URL", end)
			}
			return end.Query()
		}
		authenticate := func(t *testing.T, a tenant.App, tok string) response {
			t.Helper()
			return e.do(t, "PATCH", "/v1/auth/"+a.ID+"/magic_links/authenticate", nil, map[string]any{"token": tok})
		}
		refused := func(t *testing.T, q url.Values, code string) {
			t.Helper()
			if q.Get("sct_error") != code || q.Has("sct_magic") {
				t.Errorf("came back with %v; want sct_error=%s and no token", q, code)
			}
		}

		t.Run("the app's public data lists the enabled providers, with an icon served here", func(t *testing.T) {
			r := e.do(t, "GET", "/v1/apps/"+app.ID, nil, nil)
			ps, _ := r.body["oauth_providers"].([]any)
			if len(ps) != 2 {
				t.Fatalf("oauth_providers = %v; want corp and strict", r.body["oauth_providers"])
			}
			p, _ := ps[0].(map[string]any)
			if p["provider"] != "corp" || p["name"] != "Corp SSO" || p["icon"] != "/v1/assets/oauth/oidc.svg" || p["type"] != "oidc" {
				t.Errorf("oauth_providers[0] = %v", p)
			}
			icon := e.do(t, "GET", "/v1/assets/oauth/oidc.svg", nil, nil)
			if icon.status != 200 || icon.header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(string(icon.raw), "<svg") {
				t.Errorf("icon = %d %s", icon.status, icon.header.Get("Content-Type"))
			}
			if r := e.do(t, "GET", "/v1/assets/oauth/nope.svg", nil, nil); r.status != 404 || r.str("error_code") != "not_found" {
				t.Errorf("unknown icon = %d %s", r.status, r.raw)
			}
		})

		var adaID string
		t.Run("a new person signs up and C5 gives a session of type oauth", func(t *testing.T) {
			q := signIn(t, app, "corp", "ada")
			tok := q.Get("sct_magic")
			if tok == "" || q.Get("sct_oauth") != tok || q.Get("sct_sk") != "true" {
				t.Fatalf("came back with %v; want sct_magic, sct_oauth (the same) and sct_sk=true", q)
			}
			r := authenticate(t, app, tok)
			if r.status != 200 {
				t.Fatalf("C5 = %d %s", r.status, r.raw)
			}
			access := r.str("access")
			c := jwtClaims(t, access)
			adaID, _ = c["uuid"].(string)
			if amr, _ := c["amr"].([]any); len(amr) != 1 || amr[0] != "oauth:corp" {
				t.Errorf("amr = %v; want [oauth:corp]", c["amr"])
			}
			s := e.do(t, "GET", "/v1/auth/"+app.ID+"/sessions", map[string]string{"X-Authorization": access}, nil)
			ss, _ := s.body["sessions"].([]any)
			if len(ss) != 1 || ss[0].(map[string]any)["type"] != "oauth" {
				t.Errorf("sessions = %d %s; want one of type oauth", s.status, s.raw)
			}
			u, err := e.Users.Get(ctx, servertest.Operator, app, adaID)
			if err != nil || u.Email != "ada@example.com" || !u.EmailVerified {
				t.Errorf("user = %+v, %v; want ada@example.com, verified", u.AppUser, err)
			}
			if r := authenticate(t, app, tok); r.status != 404 {
				t.Errorf("the token used again: %d %s; want 404", r.status, r.raw)
			}
			got := e.events.take(t)
			for _, want := range []string{"user.created", "user.identity_linked", "challenge.created", "challenge.completed"} {
				if !slices.Contains(got, want) {
					t.Errorf("events = %v; want %s among them", got, want)
				}
			}
			if d := e.events.eventData(t, "user.created"); d["method"] != "oauth" || d["provider"] != "corp" {
				t.Errorf("user.created = %v; want method oauth, provider corp", d)
			}
			if d := e.events.eventData(t, "challenge.completed"); d["method"] != "oauth" || d["provider"] != "corp" {
				t.Errorf("challenge.completed = %v; want method oauth, provider corp", d)
			}
		})
		t.Run("started on another host name than base_url's", func(t *testing.T) {
			// The cookie must end up where the provider sends the browser back.
			start := authorize(app, "corp", nil)
			other := strings.Replace(start, "127.0.0.1", "localhost", 1)
			if other == start {
				t.Skip("base_url is not on 127.0.0.1")
			}
			end, status, body := op.Follow(t, socialtest.NewBrowser(), other, "ada", appOrigin)
			if end == nil || end.Query().Get("sct_magic") == "" {
				t.Errorf("came back to %v (%d %s); want the app with sct_magic", end, status, body)
			}
		})
		t.Run("the same identity signs in to the same user", func(t *testing.T) {
			q := signIn(t, app, "corp", "ada")
			r := authenticate(t, app, q.Get("sct_magic"))
			if uuid := jwtClaims(t, r.str("access"))["uuid"]; uuid != adaID || adaID == "" {
				t.Errorf("uuid = %v; want %s", uuid, adaID)
			}
		})
		t.Run("identities: listed, unlinked, never the last way in", func(t *testing.T) {
			q := signIn(t, app, "corp", "ada")
			access := authenticate(t, app, q.Get("sct_magic")).str("access")
			me := e.do(t, "GET", "/v1/auth/"+app.ID+"/current_user", map[string]string{"X-Authorization": access, "User-Agent": "Mozilla/5.0"}, nil)
			ids, _ := me.obj("user")["identities"].([]any)
			if len(ids) != 1 {
				t.Fatalf("current_user identities = %v", me.obj("user")["identities"])
			}
			id := ids[0].(map[string]any)
			if id["provider"] != "corp" || id["email"] != "ada@example.com" || id["id"] == "" {
				t.Errorf("identity = %v", id)
			}
			admin := bearer(e.appSecretFor(t, app.ID))
			if u := e.do(t, "GET", "/v1/"+app.ID+"/users/"+adaID, admin, nil); !jsonEqual(u.obj("user")["identities"], ids) {
				t.Errorf("admin read identities = %v; want %v", u.obj("user")["identities"], ids)
			}
			if r := e.do(t, "DELETE", "/v1/auth/"+app.ID+"/identities/nope", map[string]string{"X-Authorization": access}, nil); r.status != 404 || r.str("error_code") != "identity_not_found" {
				t.Errorf("unknown identity = %d %s", r.status, r.raw)
			}
			// When the app stops taking e-mail addresses, the identity is
			// ada's only way in.
			setIdentifiers := func(kinds ...string) {
				t.Helper()
				if r := e.do(t, "PATCH", "/v1/apps/"+app.ID, admin, map[string]any{"app": map[string]any{"allowed_identifiers": kinds}}); r.status != 200 {
					t.Fatalf("PATCH app = %d %s", r.status, r.raw)
				}
			}
			setIdentifiers("phone")
			path := "/v1/" + app.ID + "/users/" + adaID + "/identities/" + id["id"].(string)
			if r := e.do(t, "DELETE", path, admin, nil); r.status != 409 || r.str("error_code") != "last_sign_in_method" {
				t.Errorf("unlinking the only way in = %d %s; want 409 last_sign_in_method", r.status, r.raw)
			}
			setIdentifiers("email", "phone")
			e.events.take(t)
			if r := e.do(t, "DELETE", "/v1/auth/"+app.ID+"/identities/"+id["id"].(string), map[string]string{"X-Authorization": access}, nil); r.status != 204 {
				t.Fatalf("unlink = %d %s", r.status, r.raw)
			}
			if got := e.events.take(t); !slices.Contains(got, "user.identity_unlinked") {
				t.Errorf("events = %v; want user.identity_unlinked", got)
			}
			if r := e.do(t, "DELETE", path, admin, nil); r.status != 404 || r.str("error_code") != "identity_not_found" {
				t.Errorf("unlinked again = %d %s; want 404", r.status, r.raw)
			}
		})
		t.Run("a verified address links the existing user", func(t *testing.T) {
			bob, err := e.Users.Lookup(ctx, app, "bob@example.com")
			if err != nil || bob == nil {
				t.Fatal(bob, err)
			}
			q := signIn(t, app, "corp", "bob")
			r := authenticate(t, app, q.Get("sct_magic"))
			if uuid := jwtClaims(t, r.str("access"))["uuid"]; uuid != bob.ID {
				t.Errorf("uuid = %v; want bob's %s", uuid, bob.ID)
			}
		})
		t.Run("an unverified address that matches a user is refused", func(t *testing.T) {
			refused(t, signIn(t, app, "corp", "eve"), "email_not_verified")
		})
		t.Run("a provider that may not link is refused for an existing user", func(t *testing.T) {
			refused(t, signIn(t, app, "strict", "carol"), "account_exists")
		})
		t.Run("sign-up closed", func(t *testing.T) {
			refused(t, signIn(t, closed, "corp", "dan"), "signup_closed")
		})
		t.Run("a wrong nonce", func(t *testing.T) {
			op.SignNonce("the-nonce-of-another-sign-in")
			defer op.SignNonce("")
			refused(t, signIn(t, app, "corp", "ada"), "id_token_invalid")
		})
		t.Run("an unknown provider goes back to the app", func(t *testing.T) {
			resp, err := socialtest.NewBrowser().Get(authorize(app, "nope", nil))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc, _ := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != http.StatusFound || loc == nil || loc.Query().Get("sct_error") != "provider_not_found" ||
				!strings.HasPrefix(loc.String(), appOrigin+"/welcome?") {
				t.Errorf("= %d %s", resp.StatusCode, resp.Header.Get("Location"))
			}
		})
		t.Run("callback_url", func(t *testing.T) {
			for _, bad := range []string{"https://evil.example.com/welcome", "https://app.example.com.evil.example/", "javascript:alert(1)",
				"//evil.example.com/", "https://user@app.example.com/", "/relative", "http://app.example.com/welcome"} {
				resp, err := socialtest.NewBrowser().Get(authorize(app, "corp", url.Values{"callback_url": {bad}}))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
					t.Errorf("callback_url %q: %d, Location %q; want 400 and no redirect", bad, resp.StatusCode, resp.Header.Get("Location"))
				}
			}
			b := socialtest.NewBrowser()
			end, _, _ := op.Follow(t, b, authorize(app, "corp", url.Values{"callback_url": {"https://admin.example.com/sso?x=1"}}), "ada", "https://admin.example.com/")
			if end == nil || end.Query().Get("sct_magic") == "" || end.Query().Get("x") != "1" {
				t.Errorf("an allowed origin's URL: came back to %v; want it with sct_magic and its own query", end)
			}
		})

		// callbackURL runs the flow in b up to Gatehouse's callback,
		// which it does not call.
		callbackURL := func(t *testing.T, b *http.Client, username string) string {
			t.Helper()
			end, status, body := op.Follow(t, b, authorize(app, "corp", nil), username, callbackOf(app))
			if end == nil {
				t.Fatalf("no callback: %d %s", status, body)
			}
			return end.String()
		}
		get := func(t *testing.T, b *http.Client, u string) (int, url.Values) {
			t.Helper()
			resp, err := b.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.Header.Get("Location") == "" {
				return resp.StatusCode, nil
			}
			loc, _ := url.Parse(resp.Header.Get("Location"))
			return resp.StatusCode, loc.Query()
		}
		t.Run("a state is single use", func(t *testing.T) {
			b := socialtest.NewBrowser()
			cb := callbackURL(t, b, "ada")
			if status, q := get(t, b, cb); status != http.StatusFound || q.Get("sct_magic") == "" {
				t.Fatalf("first use: %d %v", status, q)
			}
			if status, q := get(t, b, cb); status != http.StatusBadRequest || q != nil {
				t.Errorf("used again: %d %v; want the 400 page", status, q)
			}
		})
		t.Run("a state is bound to the browser that started", func(t *testing.T) {
			cb := callbackURL(t, socialtest.NewBrowser(), "ada")
			status, q := get(t, socialtest.NewBrowser(), cb)
			if status != http.StatusFound {
				t.Fatalf("= %d", status)
			}
			refused(t, q, "state_invalid")
		})
		t.Run("declined at the provider", func(t *testing.T) {
			b := socialtest.NewBrowser()
			resp, err := b.Get(authorize(app, "corp", nil))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			to, _ := url.Parse(resp.Header.Get("Location"))
			q := to.Query()
			if !strings.HasPrefix(to.String(), op.Issuer) || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
				q.Get("nonce") == "" || q.Get("state") == "" || q.Get("redirect_uri") != callbackOf(app) {
				t.Fatalf("authorize sent the browser to %s", to)
			}
			status, back := get(t, b, callbackOf(app)+"?"+url.Values{"state": {q.Get("state")}, "error": {"access_denied"}}.Encode())
			if status != http.StatusFound {
				t.Fatalf("= %d", status)
			}
			refused(t, back, "access_denied")
		})
		t.Run("no state", func(t *testing.T) {
			if status, q := get(t, socialtest.NewBrowser(), callbackOf(app)+"?code=abc"); status != http.StatusBadRequest || q != nil {
				t.Errorf("= %d %v; want the 400 page", status, q)
			}
		})
		t.Run("a slug moved to another issuer does not sign in the old identity's user", func(t *testing.T) {
			other := socialtest.Start(t, []socialtest.User{{ID: "ada", Email: "ada@example.com", EmailVerified: true}},
				[]socialtest.Client{{ID: "gatehouse", Secret: secret, Redirects: []string{callbackOf(app)}}})
			if r := e.do(t, "PUT", "/v1/apps/"+app.ID+"/oauth_providers/corp", bearer(e.appSecretFor(t, app.ID)),
				map[string]any{"type": "oidc", "issuer": other.Issuer, "client_id": "gatehouse", "client_secret": secret}); r.status != 200 {
				t.Fatalf("PUT = %d %s", r.status, r.raw)
			}
			end, status, body := other.Follow(t, socialtest.NewBrowser(), authorize(app, "corp", nil), "ada", appOrigin)
			if end == nil {
				t.Fatalf("no end: %d %s", status, body)
			}
			refused(t, end.Query(), "identity_conflict")
		})
		t.Run("the provider's secret is in no log line", func(t *testing.T) {
			if strings.Contains(e.Logs.String(), secret) {
				t.Error("the provider's client secret is in the logs")
			}
			if !strings.Contains(e.Logs.String(), `"msg":"social sign-in refused"`) {
				t.Error("no refusal was logged")
			}
		})
	})
}

// TestOAuthProviderTypes: GitHub, Apple and Microsoft sign-ins against
// local fakes that speak each provider's wire format (socialtest), on both
// engines: GitHub's API with only a verified primary address counting,
// Apple's form post with its name on the first sign-in and a client
// secret minted from the .p8 key, Microsoft's multi-tenant issuer and
// xms_edov.
func TestOAuthProviderTypes(t *testing.T) {
	gh := socialtest.StartGitHub(t, "Iv1.gatehouse", "github-secret-0123456789",
		socialtest.GitHubAccount{ID: 583231, Login: "octocat", Name: "The Octocat",
			Emails: []socialtest.GitHubEmail{{Email: "octo@old.example", Verified: true}, {Email: "Octo@Example.com", Primary: true, Verified: true}}},
		socialtest.GitHubAccount{ID: 99, Login: "unverified",
			Emails: []socialtest.GitHubEmail{{Email: "primary@example.com", Primary: true}, {Email: "other@example.com", Verified: true}}})
	teamKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	apple := socialtest.NewApple(t, "com.example.web", "TEAM123456", "KEY1234567", &teamKey.PublicKey)
	apple.Claims["relay"] = map[string]any{"sub": "001234.abcdef0123456789.0001", "email": "x7k2@privaterelay.appleid.com",
		"email_verified": "true", "is_private_email": "true", "auth_time": 1700000000, "nonce_supported": true}
	ms := socialtest.NewMicrosoft(t, "ms-client-id", "ms-secret-0123456789")
	tid := "72f988bf-86f1-41af-91ab-2d7cd011db47"
	ms.Claims["verified"] = map[string]any{"sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ", "tid": tid, "email": "ada@contoso.com",
		"xms_edov": true, "name": "Ada"}
	ms.Claims["unverified"] = map[string]any{"sub": "BBBB", "tid": tid, "email": "eve@contoso.com"}
	ms.Claims["badtenant"] = map[string]any{"sub": "CCCC", "tid": "not-a-tenant", "email": "x@contoso.com", "xms_edov": true}
	forged := socialtest.NewGeneric(t, "forged-client", "forged-secret-0123456789")
	forged.Claims["ada"] = map[string]any{"sub": "ada", "email": "ada@forged.example", "email_verified": true}
	opts := servertest.Options{Serve: true, RealClock: true,
		SocialEndpoints: social.Endpoints{Google: "https://accounts.google.invalid", Apple: apple.URL, Microsoft: ms.URL, GitHub: gh.URL, GitHubAPI: gh.URL}}
	forEach(t, opts, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		app := e.App(t, e.ws.ID, "Types", func(s *tenant.AppSettings) {
			s.Origin, s.CallbackURL, s.PublicSignup = ptr(appOrigin), ptr(appOrigin+"/welcome"), ptr(true)
			s.MetaSchema = &appuser.Schema{{ID: "name", Name: "Name", FieldName: "name", FieldType: appuser.FieldString, VisibleRegistration: true}}
		})
		owner := bearer(e.appSecretFor(t, app.ID))
		for slug, body := range map[string]map[string]any{
			"gh":     {"type": "github", "client_id": gh.ClientID, "client_secret": gh.Secret},
			"apple":  {"type": "apple", "client_id": "com.example.web", "team_id": "TEAM123456", "key_id": "KEY1234567", "private_key": pkcs8PEM(t, teamKey)},
			"ms":     {"type": "microsoft", "client_id": "ms-client-id", "client_secret": "ms-secret-0123456789"},
			"forged": {"type": "oidc", "issuer": forged.URL, "client_id": "forged-client", "client_secret": "forged-secret-0123456789"},
		} {
			if r := e.do(t, "PUT", "/v1/apps/"+app.ID+"/oauth_providers/"+slug, owner, body); r.status != 201 {
				t.Fatalf("PUT %s = %d %s", slug, r.status, r.raw)
			}
		}
		authorize := e.Config.BaseURL + "/v1/auth/" + app.ID + "/oauth/authorize?provider="
		// follow walks b through redirects to the app and returns its query.
		follow := func(t *testing.T, b *http.Client, start string) url.Values {
			t.Helper()
			next := start
			for range 10 {
				if strings.HasPrefix(next, appOrigin) {
					u, _ := url.Parse(next)
					return u.Query()
				}
				resp, err := b.Get(next)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
				if resp.StatusCode/100 != 3 || err != nil {
					t.Fatalf("GET %s = %d without a redirect", next, resp.StatusCode)
				}
				next = loc.String()
			}
			t.Fatalf("no end at %s", next)
			return nil
		}
		signedIn := func(t *testing.T, q url.Values, amr string) map[string]any {
			t.Helper()
			r := e.do(t, "PATCH", "/v1/auth/"+app.ID+"/magic_links/authenticate", nil, map[string]any{"token": q.Get("sct_magic")})
			if r.status != 200 {
				t.Fatalf("came back with %v; C5 = %d %s", q, r.status, r.raw)
			}
			c := jwtClaims(t, r.str("access"))
			if a, _ := c["amr"].([]any); len(a) != 1 || a[0] != amr {
				t.Errorf("amr = %v; want [%s]", c["amr"], amr)
			}
			return c
		}
		user := func(t *testing.T, c map[string]any) appuser.User {
			t.Helper()
			u, err := e.Users.Get(t.Context(), servertest.Operator, app, c["uuid"].(string))
			if err != nil {
				t.Fatal(err)
			}
			return u
		}

		t.Run("github: the verified primary address", func(t *testing.T) {
			gh.SignInAs("octocat")
			u := user(t, signedIn(t, follow(t, socialtest.NewBrowser(), authorize+"gh"), "oauth:gh"))
			if u.Email != "octo@example.com" || !u.EmailVerified {
				t.Errorf("user = %s (verified %v); want octo@example.com, the primary", u.Email, u.EmailVerified)
			}
		})
		t.Run("github: an unverified primary address does not count", func(t *testing.T) {
			gh.SignInAs("unverified")
			if q := follow(t, socialtest.NewBrowser(), authorize+"gh"); q.Get("sct_error") != "email_not_verified" {
				t.Errorf("came back with %v; want sct_error=email_not_verified", q)
			}
		})
		t.Run("apple: a form post, the name on the first sign-in, a private relay address", func(t *testing.T) {
			apple.SignInAs("relay")
			apple.User = `{"name":{"firstName":"Jane","lastName":"Appleseed"},"email":"x7k2@privaterelay.appleid.com"}`
			defer func() { apple.User = "" }()
			b := socialtest.NewBrowser()
			resp, err := b.Get(authorize + "apple")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			to, _ := url.Parse(resp.Header.Get("Location"))
			if to.Query().Get("response_mode") != "form_post" || !strings.HasPrefix(to.String(), apple.URL) {
				t.Fatalf("authorize sent the browser to %s; want Apple with response_mode=form_post", to)
			}
			resp, err = b.Get(to.String())
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			back := socialtest.SubmitForm(t, b, string(page))
			back.Body.Close()
			loc, _ := url.Parse(back.Header.Get("Location"))
			if back.StatusCode != http.StatusSeeOther || loc == nil {
				t.Fatalf("the form post = %d %s", back.StatusCode, back.Header.Get("Location"))
			}
			u := user(t, signedIn(t, loc.Query(), "oauth:apple"))
			if u.Email != "x7k2@privaterelay.appleid.com" || !u.EmailVerified || u.Meta["name"] != "Jane Appleseed" {
				t.Errorf("user = %s (verified %v), meta %v", u.Email, u.EmailVerified, u.Meta)
			}
		})
		t.Run("microsoft: a multi-tenant issuer, xms_edov", func(t *testing.T) {
			ms.SignInAs("verified")
			u := user(t, signedIn(t, follow(t, socialtest.NewBrowser(), authorize+"ms"), "oauth:ms"))
			if u.Email != "ada@contoso.com" {
				t.Errorf("user = %s", u.Email)
			}
			ms.SignInAs("unverified")
			if q := follow(t, socialtest.NewBrowser(), authorize+"ms"); q.Get("sct_error") != "email_not_verified" {
				t.Errorf("without xms_edov: came back with %v; want email_not_verified", q)
			}
			ms.SignInAs("badtenant")
			if q := follow(t, socialtest.NewBrowser(), authorize+"ms"); q.Get("sct_error") != "id_token_invalid" {
				t.Errorf("an issuer that is no tenant's: came back with %v; want id_token_invalid", q)
			}
		})
		t.Run("an ID token a provider forged: alg none, another audience", func(t *testing.T) {
			forged.SignInAs("ada")
			for _, forge := range []string{"none", "audience"} {
				forged.Forge(forge)
				if q := follow(t, socialtest.NewBrowser(), authorize+"forged"); q.Get("sct_error") != "id_token_invalid" {
					t.Errorf("%s: came back with %v; want sct_error=id_token_invalid", forge, q)
				}
			}
			forged.Forge("")
			signedIn(t, follow(t, socialtest.NewBrowser(), authorize+"forged"), "oauth:forged")
		})
		t.Run("google unreachable: provider_error, not a 500", func(t *testing.T) {
			if r := e.do(t, "PUT", "/v1/apps/"+app.ID+"/oauth_providers/google", owner,
				map[string]any{"type": "google", "client_id": "x.apps.googleusercontent.com", "client_secret": "google-secret-0123"}); r.status != 201 {
				t.Fatalf("PUT google = %d %s", r.status, r.raw)
			}
			if q := follow(t, socialtest.NewBrowser(), authorize+"google"); q.Get("sct_error") != "provider_error" {
				t.Errorf("came back with %v; want sct_error=provider_error", q)
			}
		})
	})
}

// TestOAuthBursts: social sign-in's single-use rules and its limit under
// 50 parallel requests on both engines, with a pool smaller than the
// burst (concurrencyOptions): a state proceeds once, a token signs in once,
// 30 sign-ins a minute start from one address, and 50 first sign-ins of one
// new person at once make one user and one identity.
func TestOAuthBursts(t *testing.T) {
	opts := concurrencyOptions()
	opts.RealClock = true
	forEach(t, opts, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		app := socialApp(t, e, "Social", true)
		callback := e.Config.BaseURL + "/v1/auth/" + app.ID + "/oauth/callback"
		op := socialtest.Start(t, []socialtest.User{{ID: "ada", Email: "ada@example.com", EmailVerified: true},
			{ID: "zoe", Email: "zoe@example.com", EmailVerified: true}},
			[]socialtest.Client{{ID: "gatehouse", Secret: "op-secret-0123456789", Redirects: []string{callback}}})
		if r := e.do(t, "PUT", "/v1/apps/"+app.ID+"/oauth_providers/corp", bearer(e.appSecretFor(t, app.ID)),
			map[string]any{"type": "oidc", "issuer": op.Issuer, "client_id": "gatehouse", "client_secret": "op-secret-0123456789"}); r.status != 201 {
			t.Fatalf("PUT provider = %d %s", r.status, r.raw)
		}
		authorize := e.Config.BaseURL + "/v1/auth/" + app.ID + "/oauth/authorize?provider=corp"
		// burst sends n requests at once with their clients and returns
		// each answer's status and Location.
		burst := func(n int, send func(i int) (*http.Response, error)) ([]int, []string) {
			statuses, locs := make([]int, n), make([]string, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					resp, err := send(i)
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					statuses[i], locs[i] = resp.StatusCode, resp.Header.Get("Location")
				})
			}
			close(start)
			wg.Wait()
			return statuses, locs
		}
		count := func(locs []string, param string) (n int) {
			for _, l := range locs {
				if u, err := url.Parse(l); err == nil && u.Query().Get(param) != "" {
					n++
				}
			}
			return n
		}

		t.Run("a state proceeds once", func(t *testing.T) {
			b := socialtest.NewBrowser()
			end, status, body := op.Follow(t, b, authorize, "ada", callback)
			if end == nil {
				t.Fatalf("no callback: %d %s", status, body)
			}
			statuses, locs := burst(50, func(int) (*http.Response, error) { return b.Get(end.String()) })
			if n := count(locs, "sct_magic"); n != 1 {
				t.Errorf("%d of 50 callbacks with one state signed in; want exactly 1", n)
			}
			for _, s := range statuses {
				if s != http.StatusFound && s != http.StatusBadRequest {
					t.Errorf("a callback answered %d; want 302 or the 400 page", s)
				}
			}
			// The winner's token, sent 50 times at once, signs in once.
			var tok string
			for _, l := range locs {
				if u, _ := url.Parse(l); u != nil && u.Query().Get("sct_magic") != "" {
					tok = u.Query().Get("sct_magic")
				}
			}
			shots := make([]shot, 50)
			for i := range shots {
				shots[i] = shot{method: "PATCH", path: "/v1/auth/" + app.ID + "/magic_links/authenticate", body: map[string]any{"token": tok}}
			}
			ok := 0
			for _, a := range e.burst(t, shots) {
				switch a.status {
				case 200:
					ok++
				case 404:
				default:
					t.Errorf("C5 answered %s", a)
				}
			}
			if ok != 1 {
				t.Errorf("%d of 50 C5 with one token signed in; want exactly 1", ok)
			}
		})
		t.Run("30 sign-ins a minute start from one address", func(t *testing.T) {
			other := socialApp(t, e, "Limited", true)
			if r := e.do(t, "PUT", "/v1/apps/"+other.ID+"/oauth_providers/corp", bearer(e.appSecretFor(t, other.ID)),
				map[string]any{"type": "oidc", "issuer": op.Issuer, "client_id": "gatehouse", "client_secret": "op-secret-0123456789"}); r.status != 201 {
				t.Fatalf("PUT provider = %d %s", r.status, r.raw)
			}
			b := socialtest.NewBrowser()
			statuses, locs := burst(50, func(int) (*http.Response, error) {
				return b.Get(e.Config.BaseURL + "/v1/auth/" + other.ID + "/oauth/authorize?provider=corp")
			})
			started, limited := 0, 0
			for i, l := range locs {
				switch {
				case strings.HasPrefix(l, op.Issuer):
					started++
				case strings.Contains(l, "sct_error=rate_limited"):
					limited++
				default:
					t.Errorf("authorize answered %d %s", statuses[i], l)
				}
			}
			if started != 30 || limited != 20 {
				t.Errorf("%d started and %d limited of 50; want 30 and 20", started, limited)
			}
		})
		t.Run("50 first sign-ins of one person make one user", func(t *testing.T) {
			// Each from an address of its own (the server trusts the
			// loopback proxy), as 50 people's browsers would be.
			browsers, cbs := make([]*http.Client, 50), make([]string, 50)
			for i := range browsers {
				browsers[i] = socialtest.NewBrowser()
				browsers[i].Transport = forwardedFor{ip: fmt.Sprintf("203.0.113.%d", i+1)}
				end, status, body := op.Follow(t, browsers[i], authorize, "zoe", callback)
				if end == nil {
					t.Fatalf("no callback: %d %s", status, body)
				}
				cbs[i] = end.String()
			}
			_, locs := burst(50, func(i int) (*http.Response, error) { return browsers[i].Get(cbs[i]) })
			if n := count(locs, "sct_magic"); n != 50 {
				t.Errorf("%d of 50 first sign-ins came back with a token; want all: %v", n, locs)
			}
			// Each of them signs in: no sign-in's token supersedes another's.
			shots := make([]shot, 0, 50)
			for _, l := range locs {
				if u, _ := url.Parse(l); u != nil && u.Query().Get("sct_magic") != "" {
					shots = append(shots, shot{method: "PATCH", path: "/v1/auth/" + app.ID + "/magic_links/authenticate",
						body: map[string]any{"token": u.Query().Get("sct_magic")}})
				}
			}
			for _, a := range e.burst(t, shots) {
				if a.status != 200 {
					t.Errorf("C5 of one of 50 parallel sign-ins = %s; want 200", a)
				}
			}
			zoe, err := e.Users.Lookup(t.Context(), app, "zoe@example.com")
			if err != nil || zoe == nil {
				t.Fatal(zoe, err)
			}
			ids, err := e.SignIn.UserIdentities(t.Context(), zoe.ID)
			if err != nil || len(ids) != 1 {
				t.Errorf("zoe's identities = %v, %v; want one", ids, err)
			}
		})
	})
}

// forwardedFor sends requests as a proxy would for ip.
type forwardedFor struct{ ip string }

func (f forwardedFor) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.ip)
	return http.DefaultTransport.RoundTrip(r)
}
