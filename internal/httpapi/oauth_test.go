package httpapi_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

// pkcs8PEM is key as a .p8 file holds it.
func pkcs8PEM(t *testing.T, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// TestOAuthProviders: an app's social sign-in providers are added,
// replaced, listed and deleted through the API, each type with its own
// settings checked; secrets are sealed, shown only as a hint, kept when
// left out and never carried to a new destination; only who may manage
// the app may change them.
func TestOAuthProviders(t *testing.T) {
	// As in production: an issuer on a private address is refused.
	opts := servertest.Options{Serve: true, Settings: map[string]string{"GATEHOUSE_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "false"}}
	forEach(t, opts, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		ctx := context.Background()
		path := "/v1/apps/" + e.app.ID + "/oauth_providers"
		owner := bearer(e.appSecret)
		key := e.apiKey(t)
		member, err := e.Tenants.AddMember(ctx, servertest.Operator, e.ws.ID, "viewer@acme.test", "Viewer", access.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		memberSecret := e.workspaceSecret(t, e.ws.ID, member.ID)
		other := e.createApp(t, e.ws.ID, "Other", nil)
		otherSecret := e.appSecretFor(t, other.ID)

		googleSecret := "GOCSPX-google-secret-7d1e"
		oidcSecret := "oidc-client-secret-0a9b8c7d"
		oidcSecret2 := "oidc-client-secret-second-5e6f"
		ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		appleKey := pkcs8PEM(t, ec)
		rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
		secrets := []string{googleSecret, oidcSecret, oidcSecret2, strings.Split(appleKey, "\n")[1]}
		noSecret := func(t *testing.T, r response) {
			t.Helper()
			for _, s := range secrets {
				if strings.Contains(string(r.raw), s) {
					t.Errorf("answer %d %s holds a provider secret", r.status, r.raw)
				}
			}
		}
		provider := func(check func(t *testing.T, p map[string]any)) func(t *testing.T, r response) {
			return func(t *testing.T, r response) {
				t.Helper()
				noSecret(t, r)
				p := r.obj("oauth_provider")
				if p == nil {
					t.Fatalf("no oauth_provider in %s", r.raw)
				}
				if want := e.Config.BaseURL + "/v1/auth/" + e.app.ID + "/oauth/callback"; p["redirect_uri"] != want {
					t.Errorf("redirect_uri = %v; want %s", p["redirect_uri"], want)
				}
				if check != nil {
					check(t, p)
				}
			}
		}
		names := func(field string) func(t *testing.T, r response) {
			return func(t *testing.T, r response) {
				t.Helper()
				noSecret(t, r)
				if !strings.HasPrefix(r.str("error"), field+" ") {
					t.Errorf("error = %q; want it to name %s", r.str("error"), field)
				}
			}
		}
		google := map[string]any{"type": "google", "client_id": "123-abc.apps.googleusercontent.com", "client_secret": googleSecret}

		runScenarios(t, e, []scenario{
			{name: "none at first", method: "GET", path: path, headers: owner, wantStatus: 200,
				wantBody: map[string]any{"oauth_providers": []any{}}},
			{name: "google is added: 201, the secret as a hint, the default scopes and name", method: "PUT", path: path + "/google",
				headers: owner, body: google, wantStatus: 201, check: provider(func(t *testing.T, p map[string]any) {
					if p["client_secret"] != "****"+googleSecret[len(googleSecret)-4:] || p["name"] != "Google" || p["enabled"] != true ||
						!jsonEqual(p["scopes"], []string{"openid", "email", "profile"}) || p["type"] != "google" {
						t.Errorf("provider = %v", p)
					}
				})},
			{name: "replaced without its secret: 200, the secret kept", method: "PUT", path: path + "/google", headers: owner,
				body: map[string]any{"type": "google", "client_id": "123-abc.apps.googleusercontent.com", "name": "Sign in with Google",
					"enabled": false, "scopes": []string{"email"}, "color": "#4285F4"},
				wantStatus: 200, check: provider(func(t *testing.T, p map[string]any) {
					if p["client_secret"] != "****"+googleSecret[len(googleSecret)-4:] || p["name"] != "Sign in with Google" ||
						p["enabled"] != false || !jsonEqual(p["scopes"], []string{"openid", "email"}) || p["color"] != "#4285f4" {
						t.Errorf("provider = %v", p)
					}
				})},
			{name: "a setting of another type names itself", method: "PUT", path: path + "/google", headers: owner,
				body: map[string]any{"type": "google", "client_id": "x", "issuer": "https://idp.example.com"}, wantStatus: 400,
				wantCode: "invalid_request", check: names("issuer")},
			{name: "no client_id", method: "PUT", path: path + "/gh", headers: owner,
				body: map[string]any{"type": "github", "client_secret": "s"}, wantStatus: 400, wantCode: "invalid_request", check: names("client_id")},
			{name: "a new provider needs its secret", method: "PUT", path: path + "/gh", headers: owner,
				body: map[string]any{"type": "github", "client_id": "Iv1.abc"}, wantStatus: 400, wantCode: "invalid_request", check: names("client_secret")},
			{name: "an unknown type", method: "PUT", path: path + "/x", headers: owner,
				body: map[string]any{"type": "myspace", "client_id": "a"}, wantStatus: 400, wantCode: "invalid_request"},
			{name: "a bad slug", method: "PUT", path: path + "/Bad_Slug", headers: owner,
				body: google, wantStatus: 400, wantCode: "invalid_request", check: names("slug")},
			{name: "an unknown field", method: "PUT", path: path + "/google", headers: owner,
				body: map[string]any{"type": "google", "client_id": "a", "client_secrett": "x"}, wantStatus: 400, wantCode: "invalid_request"},
			{name: "a bad scope", method: "PUT", path: path + "/google", headers: owner,
				body: map[string]any{"type": "google", "client_id": "a", "scopes": []string{"a\"b"}}, wantStatus: 400,
				wantCode: "invalid_request", check: names("scopes")},
			{name: "a bad colour", method: "PUT", path: path + "/google", headers: owner,
				body: map[string]any{"type": "google", "client_id": "a", "color": "blue"}, wantStatus: 400,
				wantCode: "invalid_request", check: names("color")},
			{name: "oidc needs its issuer", method: "PUT", path: path + "/corp", headers: owner,
				body: map[string]any{"type": "oidc", "client_id": "gatehouse", "client_secret": oidcSecret}, wantStatus: 400,
				wantCode: "invalid_request", check: names("issuer")},
			{name: "an issuer that is not https", method: "PUT", path: path + "/corp", headers: owner,
				body:       map[string]any{"type": "oidc", "client_id": "gatehouse", "client_secret": oidcSecret, "issuer": "ftp://idp.example.com"},
				wantStatus: 400, wantCode: "invalid_request", check: names("issuer")},
			{name: "an issuer on a private address", method: "PUT", path: path + "/corp", headers: owner,
				body:       map[string]any{"type": "oidc", "client_id": "gatehouse", "client_secret": oidcSecret, "issuer": "https://10.1.2.3/realms/acme"},
				wantStatus: 400, wantCode: "invalid_request", check: names("issuer")},
			{name: "an issuer with a query", method: "PUT", path: path + "/corp", headers: owner,
				body:       map[string]any{"type": "oidc", "client_id": "gatehouse", "client_secret": oidcSecret, "issuer": "https://idp.example.com/?a=b"},
				wantStatus: 400, wantCode: "invalid_request", check: names("issuer")},
			{name: "oidc is added, named by its issuer's host, openid always asked", method: "PUT", path: path + "/corp", headers: owner,
				body: map[string]any{"type": "oidc", "client_id": "gatehouse", "client_secret": oidcSecret,
					"issuer": "https://93.184.216.34/realms/acme/", "scopes": []string{"email"}},
				wantStatus: 201, check: provider(func(t *testing.T, p map[string]any) {
					if p["issuer"] != "https://93.184.216.34/realms/acme" || p["name"] != "93.184.216.34" ||
						!jsonEqual(p["scopes"], []string{"openid", "email"}) {
						t.Errorf("provider = %v", p)
					}
				})},
			{name: "a new issuer without the secret: refused, naming it", method: "PUT", path: path + "/corp", headers: owner,
				body: map[string]any{"type": "oidc", "client_id": "gatehouse", "issuer": "https://93.184.216.66"}, wantStatus: 400,
				wantCode: "invalid_request", check: names("client_secret")},
			{name: "a new issuer with the hint sent back: refused", method: "PUT", path: path + "/corp", headers: owner,
				body: map[string]any{"type": "oidc", "client_id": "gatehouse", "issuer": "https://93.184.216.66",
					"client_secret": "****" + oidcSecret[len(oidcSecret)-4:]}, wantStatus: 400, wantCode: "invalid_request", check: names("client_secret")},
			{name: "a new issuer with its secret", method: "PUT", path: path + "/corp", headers: owner,
				body:       map[string]any{"type": "oidc", "client_id": "gatehouse", "issuer": "https://93.184.216.35", "client_secret": oidcSecret2},
				wantStatus: 200, check: provider(func(t *testing.T, p map[string]any) {
					if p["client_secret"] != "****"+oidcSecret2[len(oidcSecret2)-4:] {
						t.Errorf("client_secret = %v; want the new one's hint", p["client_secret"])
					}
				})},
			{name: "a second oidc provider under another slug", method: "PUT", path: path + "/partners", headers: owner,
				body:       map[string]any{"type": "oidc", "client_id": "gh", "client_secret": oidcSecret, "issuer": "https://93.184.216.36"},
				wantStatus: 201},
			{name: "a new type needs the secret again", method: "PUT", path: path + "/partners", headers: owner,
				body: map[string]any{"type": "github", "client_id": "Iv1.abc"}, wantStatus: 400, wantCode: "invalid_request", check: names("client_secret")},
			{name: "microsoft: a bad tenant", method: "PUT", path: path + "/ms", headers: owner,
				body: map[string]any{"type": "microsoft", "client_id": "11111111-2222-3333-4444-555555555555", "client_secret": oidcSecret,
					"tenant": "not a tenant"}, wantStatus: 400, wantCode: "invalid_request", check: names("tenant")},
			{name: "microsoft with a tenant id", method: "PUT", path: path + "/ms", headers: owner,
				body: map[string]any{"type": "microsoft", "client_id": "11111111-2222-3333-4444-555555555555", "client_secret": oidcSecret,
					"tenant": "9188040d-6c67-4c5b-b112-36a304b66dad"}, wantStatus: 201},
			{name: "apple: an RSA key is refused", method: "PUT", path: path + "/apple", headers: owner,
				body: map[string]any{"type": "apple", "client_id": "com.example.web", "team_id": "ABCDE12345", "key_id": "KEY1234567",
					"private_key": pkcs8PEM(t, rsaKey)}, wantStatus: 400, wantCode: "invalid_request", check: names("private_key")},
			{name: "apple: a malformed team id", method: "PUT", path: path + "/apple", headers: owner,
				body: map[string]any{"type": "apple", "client_id": "com.example.web", "team_id": "abc", "key_id": "KEY1234567",
					"private_key": appleKey}, wantStatus: 400, wantCode: "invalid_request", check: names("team_id")},
			{name: "apple: a client secret is not its setting", method: "PUT", path: path + "/apple", headers: owner,
				body: map[string]any{"type": "apple", "client_id": "com.example.web", "team_id": "ABCDE12345", "key_id": "KEY1234567",
					"private_key": appleKey, "client_secret": "x"}, wantStatus: 400, wantCode: "invalid_request", check: names("client_secret")},
			{name: "apple with its P-256 key, shown as a hint", method: "PUT", path: path + "/apple", headers: owner,
				body: map[string]any{"type": "apple", "client_id": "com.example.web", "team_id": "ABCDE12345", "key_id": "KEY1234567",
					"private_key": appleKey}, wantStatus: 201, check: provider(func(t *testing.T, p map[string]any) {
					if p["private_key"] != "****"+strings.TrimSpace(appleKey)[len(strings.TrimSpace(appleKey))-4:] || p["team_id"] != "ABCDE12345" ||
						!jsonEqual(p["scopes"], []string{"openid", "name", "email"}) {
						t.Errorf("provider = %v", p)
					}
				})},
			{name: "an API key may read", method: "GET", path: path, headers: map[string]string{"X-Authorization": key}, wantStatus: 200,
				check: func(t *testing.T, r response) {
					noSecret(t, r)
					list, _ := r.body["oauth_providers"].([]any)
					var slugs []string
					for _, v := range list {
						slugs = append(slugs, v.(map[string]any)["slug"].(string))
					}
					if strings.Join(slugs, ",") != "apple,corp,google,ms,partners" {
						t.Errorf("slugs = %v; want apple,corp,google,ms,partners", slugs)
					}
				}},
			{name: "an API key may not change them", method: "PUT", path: path + "/google", headers: map[string]string{"X-Authorization": key},
				body: google, wantStatus: 403},
			{name: "nor may a member", method: "PUT", path: path + "/google", headers: bearer(memberSecret), body: google, wantStatus: 403},
			{name: "nor another app's secret", method: "PUT", path: path + "/google", headers: bearer(otherSecret), body: google,
				wantStatus: 404, wantCode: "app_not_found"},
			{name: "no credentials", method: "GET", path: path, wantStatus: 401},
			{name: "delete", method: "DELETE", path: path + "/partners", headers: owner, wantStatus: 200},
			{name: "delete again", method: "DELETE", path: path + "/partners", headers: owner, wantStatus: 404, wantCode: "oauth_provider_not_found"},
			{name: "a member may not delete", method: "DELETE", path: path + "/google", headers: bearer(memberSecret), wantStatus: 403},
			{name: "the public app data lists the enabled ones only, nothing secret", method: "GET", path: "/v1/apps/" + e.app.ID, wantStatus: 200,
				check: func(t *testing.T, r response) {
					noSecret(t, r)
					list, _ := r.body["oauth_providers"].([]any)
					var slugs []string
					for _, v := range list {
						p := v.(map[string]any)
						slugs = append(slugs, p["provider"].(string))
						if p["icon"] != "/v1/assets/oauth/"+p["type"].(string)+".svg" || p["name"] == "" || p["client_id"] != nil {
							t.Errorf("listed as %v", p)
						}
					}
					if strings.Join(slugs, ",") != "apple,corp,ms" {
						t.Errorf("listed %v; want apple,corp,ms (google is disabled, partners deleted)", slugs)
					}
				}},
		})

		// No secret in a log line; each change logged by its settings' names.
		logs := e.Logs.String()
		for _, s := range secrets {
			if strings.Contains(logs, s) {
				t.Errorf("a provider secret is in the server's log")
			}
		}
		if lines := e.Logs.Lines("oauth provider changed", e.app.ID, `"slug":"corp"`); len(lines) != 2 {
			t.Errorf("%d change lines of the corp provider; want 2 (added, new issuer): %q", len(lines), lines)
		} else if !strings.Contains(lines[1], `"changed":["name","client_secret","issuer","scopes"]`) {
			t.Errorf("the new issuer's line = %s; want changed [name client_secret issuer scopes] (the name follows the issuer; the scopes back to the defaults)", lines[1])
		}
		if lines := e.Logs.Lines("oauth provider deleted", `"slug":"partners"`); len(lines) != 1 {
			t.Errorf("%d delete lines; want 1", len(lines))
		}
	})
}
