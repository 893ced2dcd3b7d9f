package httpapi_test

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
)

// Machine-to-machine clients, the client_credentials grant, M2M sessions
// and their revocation (interface §4.13, security R-KEY-3), over HTTP on
// both engines.

func TestM2M(t *testing.T) {
	forEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		groups := []struct {
			name string
			fn   func(t *testing.T, e *env)
		}{
			{"clients", testM2MClients},
			{"token_and_revoke", testM2MSecurityCheck46},
			{"token_errors", testM2MTokenErrors},
			{"client_revoked", testM2MClientRevoked},
			{"session_required", testM2MSessionRequired},
			{"wrong_roles", testM2MWrongRoles},
			{"expiry", testM2MExpiry},
			{"algorithm", testM2MAlgorithm},
		}
		// Each group has an app of its own; the logs are scanned at the end
		// for every secret any group handed out.
		scan := &env{System: sys}
		for _, g := range groups {
			t.Run(g.name, func(t *testing.T) {
				e := envOf(t, sys, g.name)
				g.fn(t, e)
				for _, s := range e.remembered() {
					scan.remember(s)
				}
			})
		}
		t.Run("log_scan", func(t *testing.T) { testLogScan(t, scan) })
	})
}

func (e *env) m2mPath(rest string) string { return "/v1/apps/" + e.app.ID + "/m2m" + rest }

// m2mClient creates an M2M client with the app secret and returns its id and secret.
func (e *env) m2mClient(t *testing.T, scopes ...string) (id, secret string) {
	t.Helper()
	r := scenario{method: "POST", path: e.m2mPath("/clients"), headers: bearer(e.appSecret),
		body: map[string]any{"client": map[string]any{"name": "worker", "scopes": scopes}}, wantStatus: 200}.run(t, e)
	id, _ = r.obj("client")["id"].(string)
	secret = r.str("client_secret")
	if id == "" || !strings.HasPrefix(secret, "ghm_") {
		t.Fatalf("create client = %s; want a client id and a ghm_ secret", r.raw)
	}
	e.remember(secret)
	return id, secret
}

func basicAuth(id, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
}

func form(headers map[string]string) map[string]string {
	out := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for k, v := range headers {
		out[k] = v
	}
	return out
}

// m2mToken gets a token with the form body and HTTP Basic.
func (e *env) m2mToken(t *testing.T, id, secret, scope string) string {
	t.Helper()
	body := url.Values{"grant_type": {"client_credentials"}}
	if scope != "" {
		body.Set("scope", scope)
	}
	r := scenario{method: "POST", path: e.authPath("/oauth/token"), headers: form(map[string]string{"Authorization": basicAuth(id, secret)}),
		body: body.Encode(), wantStatus: 200}.run(t, e)
	tok := r.str("access_token")
	if tok == "" {
		t.Fatalf("token = %s; want an access_token", r.raw)
	}
	e.remember(tok)
	return tok
}

func m2mHeader(tok string) map[string]string { return map[string]string{"X-M2M-Token": tok} }

func testM2MClients(t *testing.T, e *env) {
	clients := e.m2mPath("/clients")
	other := e.createApp(t, e.ws.ID, "Other", nil)
	otherSecret := e.appSecretFor(t, other.ID)
	key := e.apiKey(t)
	memberSecret := e.memberSecret(t, "m2m-member@acme.test")

	var created map[string]any
	var secret string
	runScenarios(t, e, []scenario{
		{name: "create with the app secret", method: "POST", path: clients, headers: bearer(e.appSecret),
			body:       map[string]any{"client": map[string]any{"name": "Billing worker", "scopes": []string{"invoices:read", "invoices:write", "invoices:read"}}},
			wantStatus: 200, check: func(t *testing.T, r response) {
				created, secret = r.obj("client"), r.str("client_secret")
				e.remember(secret)
				if !strings.HasPrefix(secret, "ghm_") || len(secret) < 40 {
					t.Errorf("client_secret = %q; want a ghm_ secret", secret)
				}
				want := map[string]any{"name": "Billing worker", "scopes": []string{"invoices:read", "invoices:write"},
					"secret_last4": secret[len(secret)-4:], "last_used_at": nil}
				for k, v := range want {
					if !jsonEqual(created[k], v) {
						t.Errorf("client.%s = %v; want %v", k, created[k], v)
					}
				}
				if created["id"] == "" || created["created_at"] == nil {
					t.Errorf("client = %v; want an id and created_at", created)
				}
			}},
		{name: "create with the owner's workspace secret, no body fields", method: "POST", path: clients, headers: bearer(e.wsSecret),
			body: map[string]any{"client": map[string]any{}}, wantStatus: 200, check: func(t *testing.T, r response) {
				e.remember(r.str("client_secret"))
				if c := r.obj("client"); c["name"] != "M2M client" || !jsonEqual(c["scopes"], []string{}) {
					t.Errorf("client = %v; want the default name and no scopes", c)
				}
			}},
		{name: "an API key may not", method: "POST", path: clients, headers: bearer(key), body: map[string]any{"client": map[string]any{}}, wantStatus: 403},
		{name: "a member's workspace secret may not", method: "POST", path: clients, headers: bearer(memberSecret), body: map[string]any{"client": map[string]any{}}, wantStatus: 403},
		{name: "another app's secret may not", method: "POST", path: clients, headers: bearer(otherSecret), body: map[string]any{"client": map[string]any{}}, wantStatus: 403},
		{name: "no credential", method: "POST", path: clients, body: map[string]any{"client": map[string]any{}}, wantStatus: 401},
		{name: "a scope with a space", method: "POST", path: clients, headers: bearer(e.appSecret),
			body: map[string]any{"client": map[string]any{"scopes": []string{"a b"}}}, wantStatus: 400, wantCode: "invalid_request"},
		{name: "a scope with a quote", method: "POST", path: clients, headers: bearer(e.appSecret),
			body: map[string]any{"client": map[string]any{"scopes": []string{`a"b`}}}, wantStatus: 400, wantCode: "invalid_request"},
		{name: "an API key may not list", method: "GET", path: clients, headers: bearer(key), wantStatus: 403},
		{name: "list never shows secrets", method: "GET", path: clients, headers: bearer(e.appSecret), wantStatus: 200,
			check: func(t *testing.T, r response) {
				list, _ := r.body["clients"].([]any)
				if len(list) != 2 {
					t.Fatalf("clients = %s; want the 2 created", r.raw)
				}
				if strings.Contains(string(r.raw), secret) || strings.Contains(string(r.raw), "secret_hash") ||
					strings.Contains(string(r.raw), "client_secret") {
					t.Errorf("list = %s; shows a secret", r.raw)
				}
				first := list[1].(map[string]any) // newest first
				if first["id"] != created["id"] || first["secret_last4"] != created["secret_last4"] {
					t.Errorf("listed client = %v; want %v", first, created)
				}
			}},
		{name: "revoke an unknown client", method: "DELETE", path: clients + "/no-such-client", headers: bearer(e.appSecret),
			wantStatus: 404, wantCode: "m2m_client_not_found"},
	})
	if created == nil {
		t.Fatalf("no client created")
	}
	runScenarios(t, e, []scenario{
		{name: "another app's secret may not revoke", method: "DELETE", path: clients + "/" + created["id"].(string), headers: bearer(otherSecret), wantStatus: 403},
		{name: "revoke", method: "DELETE", path: clients + "/" + created["id"].(string), headers: bearer(e.appSecret), wantStatus: 200},
		{name: "revoke again", method: "DELETE", path: clients + "/" + created["id"].(string), headers: bearer(e.appSecret), wantStatus: 200},
		{name: "listed as revoked", method: "GET", path: clients, headers: bearer(e.appSecret), wantStatus: 200,
			check: func(t *testing.T, r response) {
				list, _ := r.body["clients"].([]any)
				for _, it := range list {
					c := it.(map[string]any)
					if revoked := c["revoked_at"] != nil; revoked != (c["id"] == created["id"]) {
						t.Errorf("client %v revoked_at = %v", c["id"], c["revoked_at"])
					}
				}
			}},
	})
}

// testM2MSecurityCheck46 is security.md §18 check 46 (R-KEY-3): an M2M
// token works until DELETE /m2m/revoke, then the same token fails (401).
func testM2MSecurityCheck46(t *testing.T, e *env) {
	id, secret := e.m2mClient(t, "invoices:read", "invoices:write")
	key := e.apiKey(t)
	tokenPath := e.authPath("/oauth/token")

	// By form and HTTP Basic, with a scope.
	var tok string
	scenario{name: "form and Basic", method: "POST", path: tokenPath, headers: form(map[string]string{"Authorization": basicAuth(id, secret)}),
		body: "grant_type=client_credentials&scope=invoices%3Aread", wantStatus: 200,
		wantBody: map[string]any{"token_type": "Bearer", "expires_in": 600, "scope": "invoices:read"},
		check: func(t *testing.T, r response) {
			tok = r.str("access_token")
			e.remember(tok)
			if r.header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control = %q; want no-store", r.header.Get("Cache-Control"))
			}
			if _, ok := r.body["refresh_token"]; ok {
				t.Errorf("token answer = %s; want no refresh token", r.raw)
			}
		}}.run(t, e)
	if typ := token.Peek(tok); typ != token.TypeM2M {
		t.Errorf("token typ = %q; want %q", typ, token.TypeM2M)
	}
	c := tokentest.Payload(t, tok)
	now := e.Clock.Now().Unix()
	for k, want := range map[string]any{"iss": e.Config.Tokens.Issuer, "aud": e.app.ID, "aid": e.app.ID, "wid": e.ws.ID,
		"sub": id, "m2m": true, "scope": "invoices:read", "iat": float64(now), "exp": float64(now + 600)} {
		if !jsonEqual(c[k], want) {
			t.Errorf("claim %s = %v; want %v", k, c[k], want)
		}
	}
	if c["sid"] == "" || c["jti"] == "" || c["uuid"] != nil {
		t.Errorf("claims = %v; want sid and jti, and no uuid (no user)", c)
	}

	// By JSON body (client_secret_post), without a scope: another session.
	var tok2 string
	scenario{name: "JSON and client_secret_post", method: "POST", path: tokenPath,
		body: map[string]any{"grant_type": "client_credentials", "client_id": id, "client_secret": secret}, wantStatus: 200,
		check: func(t *testing.T, r response) {
			tok2 = r.str("access_token")
			e.remember(tok2)
			if _, ok := r.body["scope"]; ok {
				t.Errorf("token answer = %s; want no scope when none was asked for", r.raw)
			}
			if c := tokentest.Payload(t, tok2); c["scope"] != nil || c["sid"] == tokentest.Payload(t, tok)["sid"] {
				t.Errorf("claims = %v; want no scope and a session of its own", c)
			}
		}}.run(t, e)

	sid := c["sid"].(string)
	session := e.m2mPath("/session")
	introspect := e.m2mPath("/introspect")
	runScenarios(t, e, []scenario{
		{name: "the session, token in Authorization", method: "GET", path: session, headers: bearer(tok), wantStatus: 200,
			check: func(t *testing.T, r response) {
				s := r.obj("m2m_session")
				if s["id"] != sid || s["client_id"] != id || !jsonEqual(s["scopes"], []string{"invoices:read"}) || s["expires_at"] == nil {
					t.Errorf("m2m_session = %v; want session %s of client %s", s, sid, id)
				}
			}},
		{name: "the session, token in X-M2M-Token", method: "GET", path: session, headers: m2mHeader(tok), wantStatus: 200},
		{name: "the session, token in X-Authorization", method: "GET", path: session, headers: map[string]string{"X-Authorization": tok}, wantStatus: 200},
		{name: "introspect: active", method: "POST", path: introspect, headers: bearer(e.appSecret), body: map[string]any{"token": tok},
			wantStatus: 200, wantBody: map[string]any{"active": true, "client_id": id, "scope": "invoices:read", "sid": sid,
				"exp": now + 600, "iat": now, "token_type": "Bearer"}},
		{name: "introspect with an API key", method: "POST", path: introspect, headers: bearer(key), body: map[string]any{"token": tok},
			wantStatus: 200, wantBody: map[string]any{"active": true}},
		{name: "introspect a user's token: inactive", method: "POST", path: introspect, headers: bearer(e.appSecret),
			body: map[string]any{"token": e.userAccess(t, "introspect@acme.test")}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if !jsonEqual(r.body, map[string]any{"active": false}) {
					t.Errorf("introspect = %s; want only active false", r.raw)
				}
			}},
		{name: "introspect without a credential", method: "POST", path: introspect, body: map[string]any{"token": tok}, wantStatus: 401},
		{name: "revoke, with the API secret, the API key and the token", method: "DELETE", path: e.m2mPath("/revoke"),
			headers:    map[string]string{"Authorization": "Bearer " + e.appSecret, "X-Authorization": key, "X-M2M-Token": tok},
			wantStatus: 200, wantBody: map[string]any{"message": "ok", "verified": true}},
		{name: "the same token no longer works", method: "GET", path: session, headers: bearer(tok), wantStatus: 401},
		{name: "revoking again with it fails", method: "DELETE", path: e.m2mPath("/revoke"), headers: m2mHeader(tok), wantStatus: 401},
		{name: "introspect: inactive", method: "POST", path: introspect, headers: bearer(e.appSecret), body: map[string]any{"token": tok},
			wantStatus: 200, check: func(t *testing.T, r response) {
				if !jsonEqual(r.body, map[string]any{"active": false}) {
					t.Errorf("introspect = %s; want only active false", r.raw)
				}
			}},
		{name: "the client's other session still works", method: "GET", path: session, headers: bearer(tok2), wantStatus: 200},
		{name: "a machine revokes its own session with its token alone", method: "DELETE", path: e.m2mPath("/revoke"), headers: bearer(tok2),
			wantStatus: 200, wantBody: map[string]any{"message": "ok", "verified": true}},
		{name: "and then that token fails too", method: "GET", path: session, headers: m2mHeader(tok2), wantStatus: 401},
	})
	if lines := e.Logs.Lines(`"m2m session revoked"`, sid); len(lines) != 1 {
		t.Errorf("log lines for the revocation = %d; want 1", len(lines))
	}
	// The client's last use is recorded.
	r := scenario{method: "GET", path: e.m2mPath("/clients"), headers: bearer(e.appSecret), wantStatus: 200}.run(t, e)
	if c := r.body["clients"].([]any)[0].(map[string]any); c["last_used_at"] == nil {
		t.Errorf("client = %v; want last_used_at set", c)
	}
}

func testM2MTokenErrors(t *testing.T, e *env) {
	id, secret := e.m2mClient(t, "reports:read")
	tokenPath := e.authPath("/oauth/token")
	other := e.createApp(t, e.ws.ID, "Elsewhere", nil)
	grant := "grant_type=client_credentials"
	basic := form(map[string]string{"Authorization": basicAuth(id, secret)})
	challenged := func(want bool) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			if got := r.header.Get("WWW-Authenticate") != ""; got != want {
				t.Errorf("WWW-Authenticate = %q; want one: %v", r.header.Get("WWW-Authenticate"), want)
			}
		}
	}
	runScenarios(t, e, []scenario{
		{name: "wrong secret by Basic", method: "POST", path: tokenPath, headers: form(map[string]string{"Authorization": basicAuth(id, secret+"x")}),
			body: grant, wantStatus: 401, wantCode: "invalid_client", check: challenged(true)},
		{name: "wrong secret in the body", method: "POST", path: tokenPath, headers: form(nil),
			body: grant + "&client_id=" + id + "&client_secret=nope", wantStatus: 401, wantCode: "invalid_client", check: challenged(false)},
		{name: "unknown client", method: "POST", path: tokenPath, headers: form(map[string]string{"Authorization": basicAuth("no-such-client", secret)}),
			body: grant, wantStatus: 401, wantCode: "invalid_client", check: challenged(true)},
		{name: "no client credentials", method: "POST", path: tokenPath, headers: form(nil), body: grant, wantStatus: 401, wantCode: "invalid_client"},
		{name: "not Basic", method: "POST", path: tokenPath, headers: form(bearer(e.appSecret)), body: grant, wantStatus: 401, wantCode: "invalid_client",
			check: challenged(true)},
		{name: "the client at another app's endpoint", method: "POST", path: "/v1/auth/" + other.ID + "/oauth/token", headers: basic,
			body: grant, wantStatus: 401, wantCode: "invalid_client"},
		{name: "no grant_type", method: "POST", path: tokenPath, headers: basic, body: "scope=reports%3Aread", wantStatus: 400, wantCode: "invalid_request"},
		{name: "another grant", method: "POST", path: tokenPath, headers: basic, body: "grant_type=password", wantStatus: 400, wantCode: "unsupported_grant_type"},
		{name: "a scope the client lacks", method: "POST", path: tokenPath, headers: basic, body: grant + "&scope=reports%3Aread+reports%3Awrite",
			wantStatus: 400, wantCode: "invalid_scope"},
		{name: "a malformed scope", method: "POST", path: tokenPath, headers: basic, body: grant + "&scope=%22x%22", wantStatus: 400, wantCode: "invalid_scope"},
		{name: "an unknown client learns nothing of its scope", method: "POST", path: tokenPath,
			headers: form(map[string]string{"Authorization": basicAuth("no-such-client", secret)}), body: grant + "&scope=%22x%22",
			wantStatus: 401, wantCode: "invalid_client"},
		{name: "both authentication methods", method: "POST", path: tokenPath, headers: basic, body: grant + "&client_secret=" + secret,
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "a repeated parameter", method: "POST", path: tokenPath, headers: basic, body: grant + "&" + grant, wantStatus: 400, wantCode: "invalid_request"},
		{name: "a JSON value that is no string", method: "POST", path: tokenPath, headers: map[string]string{"Authorization": basicAuth(id, secret)},
			body: map[string]any{"grant_type": "client_credentials", "scope": []string{"reports:read"}}, wantStatus: 400, wantCode: "invalid_request"},
		{name: "neither form nor JSON", method: "POST", path: tokenPath, headers: map[string]string{"Authorization": basicAuth(id, secret), "Content-Type": "text/plain"},
			body: grant, wantStatus: 415},
		{name: "no body", method: "POST", path: tokenPath, headers: basic, wantStatus: 400, wantCode: "invalid_request"},
		{name: "unknown app", method: "POST", path: "/v1/auth/no-such-app/oauth/token", headers: basic, body: grant, wantStatus: 404},
		{name: "Basic with a scope granted", method: "POST", path: tokenPath, headers: basic, body: grant + "&scope=reports%3Aread+reports%3Aread",
			wantStatus: 200, wantBody: map[string]any{"scope": "reports:read"}, check: func(t *testing.T, r response) { e.remember(r.str("access_token")) }},
		{name: "a form anywhere else is refused", method: "POST", path: "/v1/" + e.app.ID + "/users", headers: form(bearer(e.appSecret)),
			body: "email=x%40acme.test", wantStatus: 415},
	})
}

func testM2MClientRevoked(t *testing.T, e *env) {
	id, secret := e.m2mClient(t)
	tok := e.m2mToken(t, id, secret, "")
	runScenarios(t, e, []scenario{
		{name: "works", method: "GET", path: e.m2mPath("/session"), headers: m2mHeader(tok), wantStatus: 200},
		{name: "revoke the client", method: "DELETE", path: e.m2mPath("/clients/" + id), headers: bearer(e.wsSecret), wantStatus: 200},
		{name: "its token fails at once", method: "GET", path: e.m2mPath("/session"), headers: m2mHeader(tok), wantStatus: 401},
		{name: "its token is inactive", method: "POST", path: e.m2mPath("/introspect"), headers: bearer(e.appSecret),
			body: map[string]any{"token": tok}, wantStatus: 200, wantBody: map[string]any{"active": false}},
		{name: "it gets no new token", method: "POST", path: e.authPath("/oauth/token"), headers: form(map[string]string{"Authorization": basicAuth(id, secret)}),
			body: "grant_type=client_credentials", wantStatus: 401, wantCode: "invalid_client"},
	})
}

func testM2MSessionRequired(t *testing.T, e *env) {
	revoke := e.m2mPath("/revoke")
	access := e.userAccess(t, "person@acme.test")
	id, secret := e.m2mClient(t)
	tok := e.m2mToken(t, id, secret, "")
	other := e.createApp(t, e.ws.ID, "Else", nil)
	otherKey := e.apiKeyFor(t, other.ID, e.appSecretFor(t, other.ID))
	key := e.apiKey(t)
	runScenarios(t, e, []scenario{
		{name: "a user's access token in X-Authorization", method: "DELETE", path: revoke, headers: map[string]string{"X-Authorization": access},
			wantStatus: 401, wantCode: "m2m_session_required"},
		{name: "a user's access token in Authorization", method: "DELETE", path: revoke, headers: bearer(access),
			wantStatus: 401, wantCode: "m2m_session_required"},
		{name: "a user's access token in X-M2M-Token", method: "DELETE", path: revoke, headers: m2mHeader(access),
			wantStatus: 401, wantCode: "m2m_session_required"},
		{name: "the API secret alone", method: "DELETE", path: revoke, headers: bearer(e.appSecret),
			wantStatus: 401, wantCode: "m2m_session_required"},
		{name: "the API secret and key, no M2M token", method: "DELETE", path: revoke,
			headers: map[string]string{"Authorization": "Bearer " + e.appSecret, "X-Authorization": key}, wantStatus: 401, wantCode: "m2m_session_required"},
		{name: "nothing at all", method: "DELETE", path: revoke, wantStatus: 401, wantCode: "m2m_session_required"},
		{name: "the session read without a token", method: "GET", path: e.m2mPath("/session"), headers: bearer(e.appSecret),
			wantStatus: 401, wantCode: "m2m_session_required"},
		{name: "a bad API secret beside the token", method: "DELETE", path: revoke,
			headers: map[string]string{"Authorization": "Bearer not-a-secret", "X-M2M-Token": tok}, wantStatus: 401},
		{name: "a revoked-looking API key beside the token", method: "DELETE", path: revoke,
			headers: map[string]string{"X-Authorization": "ghk_unknown", "X-M2M-Token": tok}, wantStatus: 401},
		{name: "another app's API key beside the token", method: "DELETE", path: revoke,
			headers: map[string]string{"X-Authorization": otherKey, "X-M2M-Token": tok}, wantStatus: 403},
		{name: "another app's API secret beside the token", method: "DELETE", path: revoke,
			headers: map[string]string{"Authorization": "Bearer " + e.appSecretFor(t, other.ID), "X-M2M-Token": tok}, wantStatus: 403},
		{name: "a garbage M2M token", method: "DELETE", path: revoke, headers: m2mHeader("x.y.z"), wantStatus: 401},
		{name: "the token survived all that", method: "GET", path: e.m2mPath("/session"), headers: m2mHeader(tok), wantStatus: 200},
	})
	tok2 := e.m2mToken(t, id, secret, "")
	scenario{name: "two different M2M tokens", method: "DELETE", path: revoke, headers: map[string]string{"Authorization": "Bearer " + tok, "X-M2M-Token": tok2},
		wantStatus: 401}.run(t, e)
	scenario{name: "the same token twice", method: "GET", path: e.m2mPath("/session"), headers: map[string]string{"Authorization": "Bearer " + tok, "X-M2M-Token": tok},
		wantStatus: 200}.run(t, e)
}

// testM2MWrongRoles: an M2M token works for its own app's M2M routes only,
// never as a user's token or an API secret, and no other token works as one.
func testM2MWrongRoles(t *testing.T, e *env) {
	id, secret := e.m2mClient(t)
	tok := e.m2mToken(t, id, secret, "")
	other := e.createApp(t, e.ws.ID, "Beta", nil)
	otherSecret := e.appSecretFor(t, other.ID)
	_, refresh := func() (string, string) {
		_, a, r := e.signIn(t, "roles@acme.test")
		return a, r
	}()
	o := e.withApp(other, otherSecret)
	oid, osecret := o.m2mClient(t)
	otherTok := o.m2mToken(t, oid, osecret, "")
	e.remember(osecret)
	e.remember(otherTok)
	runScenarios(t, e, []scenario{
		{name: "at another app's session read", method: "GET", path: "/v1/apps/" + other.ID + "/m2m/session", headers: m2mHeader(tok), wantStatus: 401},
		{name: "at another app's revoke", method: "DELETE", path: "/v1/apps/" + other.ID + "/m2m/revoke", headers: bearer(tok), wantStatus: 401},
		{name: "another app's token here", method: "GET", path: e.m2mPath("/session"), headers: m2mHeader(otherTok), wantStatus: 401},
		{name: "another app's token introspected here", method: "POST", path: e.m2mPath("/introspect"), headers: bearer(e.appSecret),
			body: map[string]any{"token": otherTok}, wantStatus: 200, wantBody: map[string]any{"active": false}},
		{name: "as a user's access token", method: "GET", path: e.authPath("/current_user"), headers: user(tok), wantStatus: 401},
		{name: "as a user's access token at sessions", method: "GET", path: e.authPath("/sessions"), headers: user(tok), wantStatus: 401},
		{name: "as an API secret", method: "GET", path: "/v1/" + e.app.ID + "/users", headers: bearer(tok), wantStatus: 401},
		{name: "as a client secret", method: "POST", path: e.authPath("/oauth/token"), headers: form(map[string]string{"Authorization": basicAuth(id, tok)}),
			body: "grant_type=client_credentials", wantStatus: 401, wantCode: "invalid_client"},
		{name: "a refresh token as an M2M token", method: "GET", path: e.m2mPath("/session"), headers: m2mHeader(refresh), wantStatus: 401},
		{name: "an API secret as an M2M token", method: "GET", path: e.m2mPath("/session"), headers: m2mHeader(e.appSecret), wantStatus: 401},
		{name: "unknown app", method: "GET", path: "/v1/apps/no-such-app/m2m/session", headers: m2mHeader(tok), wantStatus: 404},
		{name: "unknown app with an API secret", method: "GET", path: "/v1/apps/no-such-app/m2m/session",
			headers: map[string]string{"Authorization": "Bearer " + e.appSecret, "X-M2M-Token": tok}, wantStatus: 403},
		{name: "still works here", method: "GET", path: e.m2mPath("/session"), headers: m2mHeader(tok), wantStatus: 200},
	})
}

func testM2MExpiry(t *testing.T, e *env) {
	id, secret := e.m2mClient(t)
	tok := e.m2mToken(t, id, secret, "")
	sid := tokentest.Payload(t, tok)["sid"].(string)
	e.Clock.Advance(10*time.Minute - time.Second)
	scenario{name: "works until it expires", method: "GET", path: e.m2mPath("/session"), headers: m2mHeader(tok), wantStatus: 200}.run(t, e)
	// Checked before it expires: once it has, the server's own periodic
	// purge may delete it at any moment.
	if _, err := e.DB.GetM2MSession(t.Context(), sid); err != nil {
		t.Fatalf("GetM2MSession before it expires = %v; want the row", err)
	}
	e.Clock.Advance(time.Second)
	runScenarios(t, e, []scenario{
		{name: "expired", method: "GET", path: e.m2mPath("/session"), headers: m2mHeader(tok), wantStatus: 401},
		{name: "expired: revoke refused", method: "DELETE", path: e.m2mPath("/revoke"), headers: m2mHeader(tok), wantStatus: 401},
		{name: "expired: inactive", method: "POST", path: e.m2mPath("/introspect"), headers: bearer(e.appSecret),
			body: map[string]any{"token": tok}, wantStatus: 200, wantBody: map[string]any{"active": false}},
	})
	if err := e.Machines.PurgeSessions(t.Context()); err != nil {
		t.Fatalf("PurgeSessions() = %v", err)
	}
	if _, err := e.DB.GetM2MSession(t.Context(), sid); err != store.ErrNotFound {
		t.Errorf("GetM2MSession after the purge = %v; want ErrNotFound", err)
	}
	fresh := e.m2mToken(t, id, secret, "")
	scenario{name: "a new token works", method: "GET", path: e.m2mPath("/session"), headers: m2mHeader(fresh), wantStatus: 200}.run(t, e)
}

// apiKey creates an API key for the env's app with its secret.
func (e *env) apiKey(t *testing.T) string {
	t.Helper()
	return e.apiKeyFor(t, e.app.ID, e.appSecret)
}

func (e *env) apiKeyFor(t *testing.T, appID, secret string) string {
	t.Helper()
	r := scenario{method: "POST", path: "/v1/apps/" + appID + "/api_keys", headers: bearer(secret), wantStatus: 200}.run(t, e)
	tok, _ := r.obj("api_key")["token"].(string)
	if tok == "" {
		t.Fatalf("create API key = %s", r.raw)
	}
	e.remember(tok)
	return tok
}

// apiKeyID finds a key's id by its last four characters.
func (e *env) apiKeyID(t *testing.T, key string) string {
	t.Helper()
	r := scenario{method: "GET", path: "/v1/apps/" + e.app.ID + "/api_keys", headers: bearer(e.appSecret), wantStatus: 200}.run(t, e)
	list, _ := r.body["api_keys"].([]any)
	for _, it := range list {
		if k := it.(map[string]any); k["last4"] == key[len(key)-4:] {
			return k["id"].(string)
		}
	}
	t.Fatalf("no API key ending %q", key[len(key)-4:])
	return ""
}

// memberSecret is a workspace secret of a new plain member.
func (e *env) memberSecret(t *testing.T, email string) string {
	t.Helper()
	m, err := e.Tenants.AddMember(t.Context(), servertest.Operator, e.ws.ID, email, "", "member")
	if err != nil {
		t.Fatalf("AddMember() error = %v", err)
	}
	return e.workspaceSecret(t, e.ws.ID, m.ID)
}

// userAccess signs a user in and returns their access token.
func (e *env) userAccess(t *testing.T, email string) string {
	t.Helper()
	_, access, _ := e.signIn(t, email)
	return access
}

// withApp is e acting on another app of the same system, with that app's
// secret; what it hands out is remembered by e.
func (e *env) withApp(app tenant.App, secret string) *env {
	o := &env{System: e.System, client: e.client, ws: e.ws, owner: e.owner, app: app, appSecret: secret, wsSecret: e.wsSecret}
	o.secrets = []string{}
	return o
}

// testM2MAlgorithm: an M2M token is signed with the app's algorithm, so a
// backend verifies it with the keys it uses for the app's user tokens; the
// SDK-style user-session check refuses it (m2m: true).
func testM2MAlgorithm(t *testing.T, e *env) {
	id, secret := e.m2mClient(t)
	for _, alg := range []string{"RS256", "EdDSA", "ES256"} {
		scenario{method: "PATCH", path: "/v1/apps/" + e.app.ID, headers: bearer(e.appSecret),
			body: map[string]any{"app": map[string]any{"access_token_alg": alg}}, wantStatus: 200}.run(t, e)
		tok := e.m2mToken(t, id, secret, "")
		if h := tokentest.Header(t, tok); h["alg"] != alg || h["kid"] != e.Keyring().SignerIDFor(alg) {
			t.Errorf("M2M token header on an %s app = %v; want alg %s and its key", alg, h, alg)
		}
		scenario{method: "GET", path: e.m2mPath("/session"), headers: m2mHeader(tok), wantStatus: 200}.run(t, e)
		if alg == "RS256" {
			if _, err := e.sdkVerify(t, tok, e.Clock.Now()); err == nil || !strings.Contains(err.Error(), "M2M") {
				t.Errorf("SDK user-session check of an M2M token = %v; want a refusal for m2m", err)
			}
		}
	}
}
