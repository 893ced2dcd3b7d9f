package httpapi_test

import (
	"context"
	"errors"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
)

// TestAPI runs every scenario group against one server per engine, then
// scans the server's logs for the secrets the groups handed out.
func TestAPI(t *testing.T) {
	forEach(t, servertest.Options{Serve: true, Settings: map[string]string{"GATEHOUSE_DEV": "true"}}, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		groups := []struct {
			name string
			fn   func(t *testing.T, e *env)
		}{
			{"show_app", testShowApp},
			{"create_user", testCreateUser},
			{"credentials", testCredentials},
			{"request_errors", testRequestErrors},
			{"bad_text", testBadText},
			{"list_users", testListUsers},
			{"user_lifecycle", testUserLifecycle},
			{"invite", testInvite},
			{"lookup", testLookup},
			{"api_keys", testAPIKeys},
			{"workspaces", testWorkspaces},
			{"workspace_apps", testWorkspaceApps},
			{"request_id", testRequestID},
			{"cors", testCORS},
			{"operations", testOperations},
			{"dev_outbox", testDevOutbox},
		}
		for _, g := range groups {
			t.Run(g.name, func(t *testing.T) { g.fn(t, e) })
		}
		t.Run("log_scan", func(t *testing.T) { testLogScan(t, e) })
	})
}

func testShowApp(t *testing.T, e *env) {
	path := "/v1/apps/" + e.app.ID
	public := func(t *testing.T, r response) {
		for _, k := range []string{"workspace_id", "allowed_origins"} {
			if _, ok := r.body[k]; ok {
				t.Errorf("GET %s has private field %q", path, k)
			}
		}
		for _, k := range []string{"allowed_identifiers", "user_meta_data_schema", "required_identifiers", "oauth_providers"} {
			if _, ok := r.body[k].([]any); !ok {
				t.Errorf("GET %s %s = %v; want an array", path, k, r.body[k])
			}
		}
		if _, ok := r.body["access_expiration"].(float64); !ok {
			t.Errorf("GET %s access_expiration = %#v; want a number", path, r.body["access_expiration"])
		}
		for _, k := range []string{"scute_branding", "service_branding", "auto_refresh", "public_signup"} {
			if _, ok := r.body[k].(bool); !ok {
				t.Errorf("GET %s %s = %#v; want a bool", path, k, r.body[k])
			}
		}
		if n := len(r.body["user_meta_data_schema"].([]any)); n != 2 {
			t.Errorf("GET %s user_meta_data_schema has %d fields; want 2", path, n)
		}
	}
	runScenarios(t, e, []scenario{
		{name: "public without credentials", method: "GET", path: path, wantStatus: 200,
			wantBody: map[string]any{"id": e.app.ID, "name": "Demo", "email_auth_type": "magic", "auto_refresh": true,
				"access_expiration": 900, "allowed_identifiers": []string{"email", "phone"}, "origin": appOrigin,
				"scute_branding": true, "service_branding": true},
			check: public},
		{name: "an API secret is not required but harmless", method: "GET", path: path, headers: bearer(e.appSecret),
			wantStatus: 200, wantBody: map[string]any{"id": e.app.ID}},
		{name: "a garbage Authorization is ignored", method: "GET", path: path, headers: bearer("garbage"),
			wantStatus: 200, wantBody: map[string]any{"id": e.app.ID}},
		{name: "unknown app", method: "GET", path: "/v1/apps/00000000-0000-7000-8000-000000000000", wantStatus: 404,
			wantCode: "app_not_found", check: func(t *testing.T, r response) {
				if len(r.body) != 2 {
					t.Errorf("404 body = %s; want only error and error_code", r.raw)
				}
			}},
	})
}

// userOf reads the user object of a response.
func userOf(t *testing.T, r response) map[string]any {
	t.Helper()
	u := r.obj("user")
	if u == nil {
		t.Fatalf("body = %s; want a user object", r.raw)
	}
	return u
}

// createUser creates a user through the API and returns it.
func (e *env) createUser(t *testing.T, appID, secret string, body map[string]any) map[string]any {
	t.Helper()
	r := scenario{method: "POST", path: "/v1/" + appID + "/users", headers: bearer(secret), body: body, wantStatus: 200}.run(t, e)
	return userOf(t, r)
}

func testCreateUser(t *testing.T, e *env) {
	var ss []scenario
	for i, via := range []struct{ label, path string }{
		{"admin path", "/v1/" + e.app.ID + "/users"},
		{"client path", "/v1/auth/" + e.app.ID + "/users"},
	} {
		base, label := via.path, via.label
		n := string(rune('1' + i))
		email := "ada" + n + "@example.com"
		phone := "+14155552" + []string{"671", "672"}[i]
		ss = append(ss,
			scenario{name: label + " e-mail is normalised", method: "POST", path: base, headers: bearer(e.appSecret),
				body: map[string]any{"identifier": "  Ada" + n + "@Example.COM "}, wantStatus: 200,
				wantBody: map[string]any{"user_meta_errors": nil},
				check: func(t *testing.T, r response) {
					u := userOf(t, r)
					if u["email"] != email || u["phone"] != nil || u["status"] != "active" {
						t.Errorf("user = %v; want email %s, phone null, status active", u, email)
					}
					if u["id"] == "" || u["app_id"] != e.app.ID {
						t.Errorf("user id, app_id = %v, %v; want an id and %s", u["id"], u["app_id"], e.app.ID)
					}
				}},
			scenario{name: label + " phone is normalised", method: "POST", path: base, headers: bearer(e.appSecret),
				body: map[string]any{"identifier": "+1 415-555-2" + phone[len(phone)-3:]}, wantStatus: 200,
				check: func(t *testing.T, r response) {
					if u := userOf(t, r); u["phone"] != phone || u["email"] != nil {
						t.Errorf("user = %v; want phone %s and email null", u, phone)
					}
				}},
			scenario{name: label + " duplicate", method: "POST", path: base, headers: bearer(e.appSecret),
				body: map[string]any{"identifier": strings.ToUpper(email)}, wantStatus: 400, wantCode: "user_exists"},
			scenario{name: label + " invalid identifier", method: "POST", path: base, headers: bearer(e.appSecret),
				body: map[string]any{"identifier": "not-an-address"}, wantStatus: 400, wantCode: "invalid_identifier"},
			scenario{name: label + " no identifier", method: "POST", path: base, headers: bearer(e.appSecret),
				body: map[string]any{"user_meta": map[string]any{}}, wantStatus: 400, wantCode: "invalid_identifier"},
			scenario{name: label + " undeclared and ill-typed meta are dropped", method: "POST", path: base, headers: bearer(e.appSecret),
				body: map[string]any{"identifier": "meta" + n + "@example.com",
					"user_meta": map[string]any{"first_name": "Ada", "age": "old", "shoe_size": 42}},
				wantStatus: 200,
				check: func(t *testing.T, r response) {
					u := userOf(t, r)
					want := map[string]any{"first_name": "Ada"}
					if !jsonEqual(u["meta"], want) || !jsonEqual(u["user_meta"], want) {
						t.Errorf("meta, user_meta = %v, %v; want %v", u["meta"], u["user_meta"], want)
					}
					errs := r.obj("user_meta_errors")
					if _, ok := errs["age"]; !ok || len(errs) != 2 || errs["shoe_size"] == nil {
						t.Errorf("user_meta_errors = %v; want age and shoe_size", errs)
					}
				}},
			scenario{name: label + " email and phone fields", method: "POST", path: base, headers: bearer(e.appSecret),
				body:       map[string]any{"email": "Both" + n + "@Example.com", "phone": "+44 20 7946 095" + n, "user_meta": map[string]any{"age": 36}},
				wantStatus: 200, wantBody: map[string]any{"user_meta_errors": nil},
				check: func(t *testing.T, r response) {
					u := userOf(t, r)
					if u["email"] != "both"+n+"@example.com" || u["phone"] != "+44207946095"+n {
						t.Errorf("user email, phone = %v, %v; want both set and normalised", u["email"], u["phone"])
					}
					if !jsonEqual(u["meta"], map[string]any{"age": 36}) {
						t.Errorf("meta = %v; want age 36", u["meta"])
					}
				}},
		)
	}
	runScenarios(t, e, ss)
}

func testCredentials(t *testing.T, e *env) {
	ctx := context.Background()
	users := "/v1/" + e.app.ID + "/users"
	other := e.createApp(t, e.ws.ID, "Other", nil)
	otherSecret := e.appSecretFor(t, other.ID)
	otherKey, _, err := e.Tenants.CreateAPIKey(ctx, servertest.Operator, other.ID, "other")
	if err != nil {
		t.Fatalf("CreateAPIKey() error = %v", err)
	}
	e.remember(otherKey)
	ownKey, _, err := e.Tenants.CreateAPIKey(ctx, servertest.Operator, e.app.ID, "own")
	if err != nil {
		t.Fatalf("CreateAPIKey() error = %v", err)
	}
	e.remember(ownKey)

	otherWS, _ := e.Workspace(t, "Elsewhere")
	otherWSSecret := e.workspaceSecret(t, otherWS.ID, "")
	viewer, err := e.Tenants.AddMember(ctx, servertest.Operator, e.ws.ID, "viewer@acme.test", "Viewer", access.RoleMember)
	if err != nil {
		t.Fatalf("AddMember() error = %v", err)
	}
	viewerSecret := e.workspaceSecret(t, e.ws.ID, viewer.ID)

	now := time.Now()
	accessTok, err := e.Keyring().Sign(token.TypeAccess, token.Claims{Issuer: e.Config.Tokens.Issuer, Subject: "someone",
		Audience: token.Audience{e.app.ID}, IssuedAt: now.Unix(), Expiry: now.Add(time.Hour).Unix(), ID: "at-1"})
	if err != nil {
		t.Fatalf("Sign(at+jwt) error = %v", err)
	}
	e.remember(accessTok)

	magic, err := e.Keyring().Sign(token.TypeMagic, token.Claims{Issuer: e.Config.Tokens.Issuer, Subject: "someone",
		Audience: token.Audience{e.app.ID}, IssuedAt: now.Unix(), Expiry: now.Add(time.Hour).Unix(), ID: "mg-1"})
	if err != nil {
		t.Fatalf("Sign(magic+jwt) error = %v", err)
	}
	e.remember(magic)

	revocable, rec, err := e.Tenants.CreateAppSecret(ctx, servertest.Operator, e.app.ID, "soon revoked")
	if err != nil {
		t.Fatalf("CreateAppSecret() error = %v", err)
	}
	e.remember(revocable)

	unauthorized := map[string]any{"error": "Unauthorized"}
	create := func(email string) map[string]any { return map[string]any{"identifier": email} }
	runScenarios(t, e, []scenario{
		{name: "missing Authorization", method: "POST", path: users, body: create("c1@example.com"), wantStatus: 401,
			check: func(t *testing.T, r response) {
				if got := strings.TrimSpace(string(r.raw)); got != `{"error":"Unauthorized"}` {
					t.Errorf("body = %s; want {\"error\":\"Unauthorized\"}", got)
				}
			}},
		{name: "empty bearer", method: "POST", path: users, headers: map[string]string{"Authorization": "Bearer "},
			body: create("c1@example.com"), wantStatus: 401, wantBody: unauthorized},
		{name: "garbage bearer", method: "POST", path: users, headers: bearer("not.a.token"), body: create("c1@example.com"),
			wantStatus: 401, wantBody: unauthorized},
		{name: "unknown API key", method: "GET", path: users, headers: bearer(tenant.APIKeyPrefix + "nope"), wantStatus: 401},
		{name: "secret without Bearer scheme", method: "GET", path: users, headers: map[string]string{"Authorization": e.appSecret},
			wantStatus: 401},
		{name: "secret under Basic scheme", method: "GET", path: users, headers: map[string]string{"Authorization": "Basic " + e.appSecret},
			wantStatus: 401},
		{name: "access token in Authorization", method: "GET", path: users, headers: bearer(accessTok), wantStatus: 401},
		{name: "magic-link token in Authorization", method: "GET", path: users, headers: bearer(magic), wantStatus: 401},
		{name: "API secret in X-Authorization is no user token", method: "GET", path: "/v1/auth/" + e.app.ID + "/sessions",
			headers: map[string]string{"X-Authorization": e.appSecret}, wantStatus: 401},
		{name: "API secret as X-Authorization Bearer is no user token", method: "GET", path: "/v1/auth/" + e.app.ID + "/sessions",
			headers: map[string]string{"X-Authorization": "Bearer " + e.appSecret}, wantStatus: 401},
		{name: "access token in X-Authorization only", method: "GET", path: users,
			headers: map[string]string{"X-Authorization": accessTok}, wantStatus: 401},
		{name: "another app's secret", method: "POST", path: users, headers: bearer(otherSecret), body: create("c1@example.com"),
			wantStatus: 403},
		{name: "another app's API key", method: "POST", path: users, headers: bearer(otherKey), body: create("c1@example.com"),
			wantStatus: 403},
		// Refused before the input is read: a foreign credential learns
		// nothing from how its input would have been judged.
		{name: "another app's secret with a malformed body", method: "POST", path: users, headers: bearer(otherSecret),
			body: `{"identifier": 42}`, wantStatus: 403},
		{name: "another app's secret with a bad page", method: "GET", path: users + "?page=abc", headers: bearer(otherSecret),
			wantStatus: 403},
		{name: "another app's key with a bad webhook body", method: "POST", path: "/v1/apps/" + e.app.ID + "/webhooks",
			headers: bearer(otherKey), body: `{"webhook": 1}`, wantStatus: 403},
		{name: "another workspace's secret with a bad body", method: "PATCH", path: "/v1/workspaces/" + e.ws.ID,
			headers: bearer(otherWSSecret), body: `{"name": 42}`, wantStatus: 403},
		{name: "an app secret on a workspace route", method: "PATCH", path: "/v1/workspaces/" + e.ws.ID,
			headers: bearer(e.appSecret), body: `{"name": 42}`, wantStatus: 403},
		{name: "a secret for an app that does not exist", method: "GET", path: "/v1/00000000-0000-7000-8000-000000000000/users",
			headers: bearer(e.appSecret), wantStatus: 403},
		{name: "another workspace's secret", method: "GET", path: users, headers: bearer(otherWSSecret), wantStatus: 403},
		{name: "own API key creates", method: "POST", path: users, headers: bearer(ownKey), body: create("bykey@example.com"),
			wantStatus: 200},
		{name: "workspace secret creates", method: "POST", path: users, headers: bearer(e.wsSecret), body: create("byws@example.com"),
			wantStatus: 200},
		{name: "workspace secret of a member lists", method: "GET", path: users, headers: bearer(viewerSecret), wantStatus: 200},
		{name: "workspace secret of a member cannot create", method: "POST", path: users, headers: bearer(viewerSecret),
			body: create("byviewer@example.com"), wantStatus: 403},
		{name: "secret before revocation", method: "GET", path: users, headers: bearer(revocable), wantStatus: 200},
	})
	if err := e.Tenants.RevokeSecret(ctx, servertest.Operator, rec.ID); err != nil {
		t.Fatalf("RevokeSecret() error = %v", err)
	}
	runScenarios(t, e, []scenario{
		{name: "revoked secret on the next request", method: "GET", path: users, headers: bearer(revocable), wantStatus: 401,
			wantBody: unauthorized},
		{name: "the other secrets still work", method: "GET", path: users, headers: bearer(e.appSecret), wantStatus: 200},
	})
}

func testRequestErrors(t *testing.T, e *env) {
	users := "/v1/" + e.app.ID + "/users"
	auth := bearer(e.appSecret)
	plain := map[string]string{"Authorization": "Bearer " + e.appSecret, "Content-Type": "text/plain"}
	runScenarios(t, e, []scenario{
		{name: "malformed JSON", method: "POST", path: users, headers: auth, body: `{"identifier":`, wantStatus: 400,
			wantCode: "invalid_request"},
		{name: "wrongly typed field", method: "POST", path: users, headers: auth, body: `{"identifier": 42}`, wantStatus: 400,
			wantCode: "invalid_request"},
		{name: "missing body", method: "POST", path: users, headers: auth, wantStatus: 400, wantCode: "invalid_request"},
		{name: "body over 1 MiB", method: "POST", path: users, headers: auth,
			body:       `{"identifier":"big@example.com","user_meta":{"first_name":"` + strings.Repeat("x", 1<<20) + `"}}`,
			wantStatus: 413},
		{name: "text/plain body", method: "POST", path: users, headers: plain, body: `{"identifier":"plain@example.com"}`,
			wantStatus: 415},
		{name: "unknown route", method: "GET", path: "/v1/nothing/here/at/all", wantStatus: 404, wantCode: "not_found"},
		{name: "unknown top-level route", method: "GET", path: "/nope", wantStatus: 404, wantCode: "not_found"},
		{name: "unknown route under auth", method: "GET", path: "/v1/auth/" + e.app.ID + "/nothing", wantStatus: 404,
			wantCode: "not_found"},
		{name: "wrong method", method: "PUT", path: users, headers: auth, body: `{}`, wantStatus: 405,
			check: func(t *testing.T, r response) {
				allow := r.header.Get("Allow")
				if !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") || strings.Contains(allow, "PUT") {
					t.Errorf("Allow = %q; want GET and POST", allow)
				}
			}},
		{name: "wrong method on a plain route", method: "POST", path: "/healthz", wantStatus: 405,
			check: func(t *testing.T, r response) {
				if allow := r.header.Get("Allow"); allow != "GET" {
					t.Errorf("Allow = %q; want GET", allow)
				}
			}},
	})
}

// testBadText: NUL characters and invalid UTF-8 are refused as 400 on both
// engines (PostgreSQL cannot store them and used to answer 500).
func testBadText(t *testing.T, e *env) {
	auth := bearer(e.appSecret)
	users := "/v1/" + e.app.ID + "/users"
	runScenarios(t, e, []scenario{
		{name: "NUL in a public path", method: "GET", path: "/v1/apps/%00", wantStatus: 400, wantCode: "invalid_request"},
		{name: "invalid UTF-8 in a public path", method: "GET", path: "/v1/apps/%ff", wantStatus: 400, wantCode: "invalid_request"},
		{name: "valid UTF-8 in a path", method: "GET", path: "/v1/apps/%C3%A9", wantStatus: 404, wantCode: "app_not_found"},
		{name: "invalid UTF-8 in a user id", method: "GET", path: users + "/%ff", headers: auth, wantStatus: 400,
			wantCode: "invalid_request"},
		{name: "NUL in a filter", method: "GET", path: users + "?email=%00", headers: auth, wantStatus: 400, wantCode: "invalid_request"},
		{name: "invalid UTF-8 in a lookup", method: "GET", path: "/v1/auth/" + e.app.ID + "/users?user_id=%ff", wantStatus: 400,
			wantCode: "invalid_request"},
		{name: "NUL in a lookup behind a semicolon", method: "GET", path: "/v1/auth/" + e.app.ID + "/users?user_id=%00;x",
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "NUL in user_meta", method: "POST", path: users, headers: auth,
			body: `{"identifier":"nul@example.com","user_meta":{"first_name":"a\u0000b"}}`, wantStatus: 400, wantCode: "invalid_request"},
		{name: "an escaped backslash before u0000 is text", method: "POST", path: users, headers: auth,
			body: `{"identifier":"backslash@example.com","user_meta":{"first_name":"a\\u0000b"}}`, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if got := userOf(t, r)["meta"].(map[string]any)["first_name"]; got != `a\u0000b` {
					t.Errorf("first_name = %q; want %q", got, `a\u0000b`)
				}
			}},
		{name: "NUL in an API key nickname", method: "POST", path: "/v1/apps/" + e.app.ID + "/api_keys", headers: auth,
			body: `{"nickname":"a\u0000"}`, wantStatus: 400, wantCode: "invalid_request"},
		{name: "NUL in a workspace name", method: "PATCH", path: "/v1/workspaces/" + e.ws.ID, headers: bearer(e.wsSecret),
			body: `{"name":"a\u0000"}`, wantStatus: 400, wantCode: "invalid_request"},
	})
}

func testListUsers(t *testing.T, e *env) {
	app := e.createApp(t, e.ws.ID, "Lister", nil)
	secret := e.appSecretFor(t, app.ID)
	var made []map[string]any
	for _, email := range []string{"one@list.test", "two@list.test", "three@list.test"} {
		e.Clock.Advance(time.Second) // distinct creation times, for created_before
		made = append(made, e.createUser(t, app.ID, secret, map[string]any{"identifier": email}))
	}
	e.do(t, "POST", "/v1/"+app.ID+"/users/"+made[2]["id"].(string)+"/deactivate", bearer(secret), nil)
	base := "/v1/" + app.ID + "/users"
	auth := bearer(secret)
	emailsOf := func(t *testing.T, r response) []string {
		t.Helper()
		list, ok := r.body["users"].([]any)
		if !ok {
			t.Fatalf("users = %#v; want an array", r.body["users"])
		}
		out := []string{}
		for _, u := range list {
			out = append(out, u.(map[string]any)["email"].(string))
		}
		return out
	}
	want := func(emails ...string) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			if got := emailsOf(t, r); !slices.Equal(got, emails) {
				t.Errorf("users = %v; want %v", got, emails)
			}
		}
	}
	createdBefore := url.QueryEscape(made[1]["created_at"].(string))
	runScenarios(t, e, []scenario{
		{name: "first page", method: "GET", path: base + "?limit=2", headers: auth, wantStatus: 200,
			wantBody: map[string]any{"total_pages": 2, "current_page": 1, "next_page": 2, "prev_page": nil, "per_page": 2},
			check:    want("three@list.test", "two@list.test")},
		{name: "second page", method: "GET", path: base + "?limit=2&page=2", headers: auth, wantStatus: 200,
			wantBody: map[string]any{"total_pages": 2, "current_page": 2, "next_page": nil, "prev_page": 1, "per_page": 2},
			check:    want("one@list.test")},
		{name: "undefined parameters are ignored", method: "GET",
			path:    base + "?limit=undefined&page=undefined&email=undefined&status=undefined&id=undefined&created_before=undefined",
			headers: auth, wantStatus: 200, wantBody: map[string]any{"per_page": 25, "current_page": 1, "total_pages": 1},
			check: want("three@list.test", "two@list.test", "one@list.test")},
		{name: "email filter", method: "GET", path: base + "?email=TWO@list", headers: auth, wantStatus: 200,
			check: want("two@list.test")},
		{name: "status filter", method: "GET", path: base + "?status=inactive", headers: auth, wantStatus: 200,
			check: want("three@list.test")},
		{name: "id filter", method: "GET", path: base + "?id=" + made[0]["id"].(string), headers: auth, wantStatus: 200,
			check: want("one@list.test")},
		{name: "created_before filter", method: "GET", path: base + "?created_before=" + createdBefore, headers: auth,
			wantStatus: 200, check: want("one@list.test")},
		{name: "bad status", method: "GET", path: base + "?status=sleeping", headers: auth, wantStatus: 400,
			wantCode: "invalid_request"},
		{name: "bad created_before", method: "GET", path: base + "?created_before=yesterday", headers: auth, wantStatus: 400,
			wantCode: "invalid_request"},
		{name: "bad limit", method: "GET", path: base + "?limit=many", headers: auth, wantStatus: 400, wantCode: "invalid_request"},
		{name: "negative page", method: "GET", path: base + "?page=-1", headers: auth, wantStatus: 400, wantCode: "invalid_request"},
		// (page-1)*limit used to overflow into a negative OFFSET: a 500 on PostgreSQL.
		{name: "page so large the offset would overflow", method: "GET", path: base + "?page=368934881474191034", headers: auth,
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "limit above the maximum is capped", method: "GET", path: base + "?limit=1000", headers: auth, wantStatus: 200,
			wantBody: map[string]any{"per_page": 100}},
		{name: "page beyond the last", method: "GET", path: base + "?limit=2&page=9", headers: auth, wantStatus: 200,
			wantBody: map[string]any{"users": []any{}, "current_page": 9, "next_page": nil}},
	})
}

func testUserLifecycle(t *testing.T, e *env) {
	u := e.createUser(t, e.app.ID, e.appSecret, map[string]any{"identifier": "life@example.com",
		"user_meta": map[string]any{"first_name": "Ada", "age": 36}})
	id := u["id"].(string)
	path := "/v1/" + e.app.ID + "/users/" + id
	auth := bearer(e.appSecret)
	wantUser := func(status string, meta map[string]any) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			got := userOf(t, r)
			if got["id"] != id || got["status"] != status {
				t.Errorf("user id, status = %v, %v; want %s, %s", got["id"], got["status"], id, status)
			}
			if meta != nil && (!jsonEqual(got["meta"], meta) || !jsonEqual(got["user_meta"], meta)) {
				t.Errorf("meta, user_meta = %v, %v; want %v", got["meta"], got["user_meta"], meta)
			}
		}
	}
	runScenarios(t, e, []scenario{
		{name: "get", method: "GET", path: path, headers: auth, wantStatus: 200,
			check: wantUser("active", map[string]any{"first_name": "Ada", "age": 36})},
		{name: "patch merges", method: "PATCH", path: path, headers: auth, body: map[string]any{"user_meta": map[string]any{"age": 37}},
			wantStatus: 200, check: wantUser("active", map[string]any{"first_name": "Ada", "age": 37})},
		{name: "patch null removes", method: "PATCH", path: path, headers: auth,
			body: map[string]any{"user_meta": map[string]any{"first_name": nil}}, wantStatus: 200,
			check: wantUser("active", map[string]any{"age": 37})},
		{name: "patch with an undeclared key is refused", method: "PATCH", path: path, headers: auth,
			body: map[string]any{"user_meta": map[string]any{"age": 38, "shoe_size": 42}}, wantStatus: 422,
			wantCode: "invalid_user_meta", check: func(t *testing.T, r response) {
				if errs := r.obj("user_meta_errors"); len(errs) != 1 || errs["shoe_size"] == nil {
					t.Errorf("user_meta_errors = %v; want shoe_size only", errs)
				}
			}},
		{name: "a refused patch changes nothing", method: "GET", path: path, headers: auth, wantStatus: 200,
			check: wantUser("active", map[string]any{"age": 37})},
		{name: "patch with an unknown body field is ignored", method: "PATCH", path: path, headers: auth,
			body: map[string]any{"authz_attributes": map[string]any{"role": "x"}}, wantStatus: 200,
			check: wantUser("active", map[string]any{"age": 37})},
		{name: "deactivate without a body", method: "POST", path: path + "/deactivate", headers: auth, wantStatus: 200,
			check: wantUser("inactive", nil)},
		{name: "deactivated shows in get", method: "GET", path: path, headers: auth, wantStatus: 200,
			check: wantUser("inactive", nil)},
		{name: "activate without a body", method: "POST", path: path + "/activate", headers: auth, wantStatus: 200,
			check: wantUser("active", nil)},
		{name: "unknown user", method: "GET", path: "/v1/" + e.app.ID + "/users/00000000-0000-7000-8000-000000000000",
			headers: auth, wantStatus: 404, wantCode: "user_not_found"},
		{name: "delete", method: "DELETE", path: path, headers: auth, wantStatus: 200},
		{name: "get after delete", method: "GET", path: path, headers: auth, wantStatus: 404, wantCode: "user_not_found"},
		{name: "activate after delete", method: "POST", path: path + "/activate", headers: auth, wantStatus: 404,
			wantCode: "user_not_found"},
		{name: "delete again", method: "DELETE", path: path, headers: auth, wantStatus: 404, wantCode: "user_not_found"},
		{name: "the identifier is free again", method: "POST", path: "/v1/" + e.app.ID + "/users", headers: auth,
			body: map[string]any{"identifier": "life@example.com"}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if got := userOf(t, r)["id"]; got == id {
					t.Errorf("re-created user has the deleted id %v", got)
				}
			}},
	})

	other := e.createUser(t, e.app.ID, e.appSecret, map[string]any{"identifier": "taken@example.com"})
	v := e.createUser(t, e.app.ID, e.appSecret, map[string]any{"identifier": "contact@example.com"})
	vPath := "/v1/" + e.app.ID + "/users/" + v["id"].(string)
	foreign := e.createApp(t, e.ws.ID, "Foreign", nil)
	foreignSecret := e.appSecretFor(t, foreign.ID)
	f := e.createUser(t, foreign.ID, foreignSecret, map[string]any{"identifier": "foreign@example.com"})
	runScenarios(t, e, []scenario{
		{name: "change e-mail and add a phone", method: "PATCH", path: vPath, headers: auth,
			body: map[string]any{"email": "New@Example.com", "phone": "+1 415 555 2699"}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if u := userOf(t, r); u["email"] != "new@example.com" || u["phone"] != "+14155552699" {
					t.Errorf("user = %v; want the new contacts normalised", u)
				}
			}},
		{name: "take another user's e-mail", method: "PATCH", path: vPath, headers: auth,
			body: map[string]any{"email": other["email"]}, wantStatus: 400, wantCode: "user_exists"},
		{name: "invalid phone", method: "PATCH", path: vPath, headers: auth, body: map[string]any{"phone": "12"}, wantStatus: 400,
			wantCode: "invalid_identifier"},
		{name: "remove both contacts", method: "PATCH", path: vPath, headers: auth, body: map[string]any{"email": "", "phone": ""},
			wantStatus: 400, wantCode: "invalid_identifier"},
		{name: "a user of another app is not found", method: "GET", path: "/v1/" + e.app.ID + "/users/" + f["id"].(string),
			headers: auth, wantStatus: 404, wantCode: "user_not_found"},
		{name: "nor can it be deleted through this app", method: "DELETE", path: "/v1/" + e.app.ID + "/users/" + f["id"].(string),
			headers: auth, wantStatus: 404, wantCode: "user_not_found"},
		{name: "the other app's secret cannot read this app's user", method: "GET", path: vPath, headers: bearer(foreignSecret),
			wantStatus: 403},
		{name: "the other app's user is intact", method: "GET", path: "/v1/" + foreign.ID + "/users/" + f["id"].(string),
			headers: bearer(foreignSecret), wantStatus: 200},
	})
}

func testInvite(t *testing.T, e *env) {
	path := "/v1/" + e.app.ID + "/users/invite"
	auth := bearer(e.appSecret)
	e.createUser(t, e.app.ID, e.appSecret, map[string]any{"identifier": "already@example.com"})
	var invited map[string]any
	scenario{method: "POST", path: path, headers: auth, wantStatus: 200,
		body: map[string]any{"identifier": "Invitee@Example.com", "user_meta": map[string]any{"first_name": "Ivy", "shoe": 1}},
		check: func(t *testing.T, r response) {
			invited = userOf(t, r)
			if invited["status"] != "pending" || invited["email"] != "invitee@example.com" {
				t.Errorf("invited user = %v; want status pending, email invitee@example.com", invited)
			}
			if errs := r.obj("user_meta_errors"); errs["shoe"] == nil {
				t.Errorf("user_meta_errors = %s; want shoe", r.raw)
			}
		}}.run(t, e)
	msg, ok := e.Mail.Last("invitee@example.com")
	if !ok {
		t.Fatalf("no message recorded to invitee@example.com")
	}
	e.remember(msg.Link)
	link, err := url.Parse(msg.Link)
	if err != nil {
		t.Fatalf("invitation link %q does not parse: %v", msg.Link, err)
	}
	if got := link.Scheme + "://" + link.Host; got != appOrigin {
		t.Errorf("invitation link origin = %q; want %q", got, appOrigin)
	}
	magic := link.Query().Get("sct_magic")
	if magic == "" {
		t.Fatalf("invitation link has no sct_magic")
	}
	e.remember(magic)
	claims := tokentest.Payload(t, magic)
	for k, want := range map[string]any{"uuid": invited["id"], "user_status": "pending", "webauthnEnabled": false,
		"email": "invitee@example.com"} {
		if got, ok := claims[k]; !ok || got != want {
			t.Errorf("invitation claim %s = %#v; want %#v", k, got, want)
		}
	}
	if !strings.Contains(msg.Text, msg.Link) {
		t.Errorf("invitation text does not carry the link")
	}
	before := len(e.Mail.Messages())
	runScenarios(t, e, []scenario{
		{name: "invite a pending user again resends", method: "POST", path: path, headers: auth,
			body: map[string]any{"identifier": "invitee@example.com"}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if u := userOf(t, r); u["id"] != invited["id"] || u["status"] != "pending" {
					t.Errorf("re-invited user = %v; want the same pending user", u)
				}
				if got := len(e.Mail.Messages()); got != before+1 {
					t.Errorf("messages after re-invite = %d; want %d", got, before+1)
				}
				if m, _ := e.Mail.Last("invitee@example.com"); m.Link != "" {
					e.remember(m.Link)
					if u, err := url.Parse(m.Link); err == nil {
						e.remember(u.Query().Get("sct_magic"))
					}
				}
			}},
		{name: "invite by phone sends an SMS", method: "POST", path: path, headers: auth,
			body: map[string]any{"identifier": "+1 415 555 2673"}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				m, ok := e.Mail.Last("+14155552673")
				if !ok || m.Channel != "sms" || !strings.HasPrefix(m.Link, e.URL+"/m/") || !strings.Contains(m.Text, m.Link) {
					t.Fatalf("SMS invitation = %+v, %v; want an SMS carrying a short link", m, ok)
				}
				e.remember(m.Link)
				_, long, err := e.SignIn.ResolveShortLink(t.Context(), strings.TrimPrefix(m.Link, e.URL+"/m/"), signin.Client{})
				if err != nil {
					t.Fatalf("ResolveShortLink(%s): %v", m.Link, err)
				}
				u, _ := url.Parse(long)
				tok := u.Query().Get("sct_magic")
				e.remember(tok)
				if c := tokentest.Payload(t, tok); c["uuid"] != userOf(t, r)["id"] || c["phone"] != "+14155552673" || c["user_status"] != "pending" {
					t.Errorf("SMS invitation claims = %v; want the invited user", c)
				}
			}},
		{name: "invite an active user", method: "POST", path: path, headers: auth,
			body: map[string]any{"identifier": "already@example.com"}, wantStatus: 400, wantCode: "user_exists"},
		{name: "invite an invalid identifier", method: "POST", path: path, headers: auth,
			body: map[string]any{"identifier": "nobody"}, wantStatus: 400, wantCode: "invalid_identifier"},
		{name: "invite without credentials", method: "POST", path: path, body: map[string]any{"identifier": "x@example.com"},
			wantStatus: 401},
		{name: "invited user is pending in lookup", method: "GET",
			path: "/v1/auth/" + e.app.ID + "/users?identifier=" + url.QueryEscape("invitee@example.com"), wantStatus: 200,
			check: func(t *testing.T, r response) {
				if u := userOf(t, r); u["status"] != "pending" {
					t.Errorf("lookup status = %v; want pending", u["status"])
				}
			}},
	})
}

func testLookup(t *testing.T, e *env) {
	ctx := context.Background()
	u := e.createUser(t, e.app.ID, e.appSecret, map[string]any{"identifier": "look@example.com", "user_meta": map[string]any{"first_name": "Lou"}})
	p := e.createUser(t, e.app.ID, e.appSecret, map[string]any{"identifier": "+1 212 555 0187"})
	lookup := "/v1/auth/" + e.app.ID + "/users"
	meta := "/v1/auth/" + e.app.ID + "/users/metafields"

	// An app whose schema requires a field, set by UpdateApp before any request reads the app.
	req := e.createApp(t, e.ws.ID, "Strict", nil)
	schema := appuser.Schema{
		{ID: "company", Name: "Company", FieldName: "company", FieldType: appuser.FieldString, Required: true, VisibleRegistration: true},
		{ID: "nick", Name: "Nick", FieldName: "nick", FieldType: appuser.FieldString},
	}
	if _, err := e.Tenants.UpdateApp(ctx, servertest.Operator, e.ws.ID, req.ID, tenant.AppSettings{MetaSchema: &schema}); err != nil {
		t.Fatalf("UpdateApp() error = %v", err)
	}
	reqSecret := e.appSecretFor(t, req.ID)
	incomplete := scenario{method: "POST", path: "/v1/" + req.ID + "/users", headers: bearer(reqSecret),
		body: map[string]any{"identifier": "strict@example.com", "user_meta": map[string]any{"nick": "s"}}, wantStatus: 200,
		wantBody: map[string]any{"user_meta_errors": map[string]any{"company": "is required"}}}.run(t, e)
	strictID := userOf(t, incomplete)["id"].(string)

	noMeta := func(want map[string]any) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			got := userOf(t, r)
			for k, v := range want {
				if !jsonEqual(got[k], v) {
					t.Errorf("user[%q] = %v; want %v", k, got[k], v)
				}
			}
			for _, k := range []string{"meta", "user_meta"} {
				if _, ok := got[k]; ok {
					t.Errorf("lookup user has %q: %v", k, got)
				}
			}
			for _, k := range []string{"email_verified", "phone_verified", "webauthn_enabled", "required_fields"} {
				if _, ok := got[k]; !ok {
					t.Errorf("lookup user lacks %q: %v", k, got)
				}
			}
		}
	}
	null := func(t *testing.T, r response) {
		if v, ok := r.body["user"]; !ok || v != nil || len(r.body) != 1 {
			t.Errorf("body = %s; want {\"user\":null}", r.raw)
		}
	}
	runScenarios(t, e, []scenario{
		{name: "by e-mail, anonymous", method: "GET", path: lookup + "?identifier=" + url.QueryEscape("LOOK@example.com"),
			wantStatus: 200, check: noMeta(map[string]any{"id": u["id"], "status": "active", "email": "look@example.com", "phone": nil})},
		{name: "by phone", method: "GET", path: lookup + "?identifier=" + url.QueryEscape("+12125550187"), wantStatus: 200,
			check: noMeta(map[string]any{"id": p["id"], "phone": "+12125550187", "email": nil})},
		{name: "with the API secret too", method: "GET", path: lookup + "?identifier=look%40example.com", headers: bearer(e.appSecret),
			wantStatus: 200, check: noMeta(map[string]any{"id": u["id"], "email": "look@example.com"})},
		{name: "by formatted phone", method: "GET", path: lookup + "?identifier=" + url.QueryEscape("+1 (212) 555-0187"), wantStatus: 200,
			check: noMeta(map[string]any{"id": p["id"]})},
		{name: "a garbage Authorization is refused, not ignored", method: "GET", path: lookup + "?identifier=look%40example.com",
			headers: bearer("garbage"), wantStatus: 401},
		{name: "unknown identifier", method: "GET", path: lookup + "?identifier=ghost%40example.com", wantStatus: 200, check: null},
		{name: "invalid identifier", method: "GET", path: lookup + "?identifier=ghost", wantStatus: 200, check: null},
		{name: "by user_id, anonymous: contacts masked", method: "GET", path: lookup + "?user_id=" + u["id"].(string), wantStatus: 200,
			check: noMeta(map[string]any{"id": u["id"], "email": "l•••@example.com", "phone": nil})},
		{name: "by user_id with the API secret", method: "GET", path: lookup + "?user_id=" + u["id"].(string), headers: bearer(e.appSecret),
			wantStatus: 200, check: noMeta(map[string]any{"id": u["id"], "email": "look@example.com"})},
		{name: "unknown user_id", method: "GET", path: lookup + "?user_id=00000000-0000-7000-8000-000000000000", wantStatus: 200,
			check: null},
		{name: "a user of another app is unknown", method: "GET", path: lookup + "?user_id=" + strictID, wantStatus: 200, check: null},
		{name: "neither identifier nor user_id", method: "GET", path: lookup, wantStatus: 400, wantCode: "invalid_request"},
		{name: "unknown app", method: "GET", path: "/v1/auth/00000000-0000-7000-8000-000000000000/users?identifier=a%40b.com",
			wantStatus: 404, wantCode: "app_not_found"},
		{name: "required fields listed", method: "GET", path: "/v1/auth/" + req.ID + "/users?user_id=" + strictID, wantStatus: 200,
			check: noMeta(map[string]any{"required_fields": []any{map[string]any{"field": "company", "required": true}}})},
		{name: "metafields without required fields", method: "GET", path: meta + "?user_id=" + u["id"].(string), wantStatus: 200,
			wantBody: map[string]any{"meta": true}},
		{name: "metafields missing a required field", method: "GET", path: "/v1/auth/" + req.ID + "/users/metafields?user_id=" + strictID,
			wantStatus: 200, wantBody: map[string]any{"meta": false}},
		{name: "fill the required field", method: "PATCH", path: "/v1/" + req.ID + "/users/" + strictID, headers: bearer(reqSecret),
			body: map[string]any{"user_meta": map[string]any{"company": "Acme"}}, wantStatus: 200},
		{name: "metafields complete", method: "GET", path: "/v1/auth/" + req.ID + "/users/metafields?user_id=" + strictID,
			wantStatus: 200, wantBody: map[string]any{"meta": true}},
		{name: "required fields now empty", method: "GET", path: "/v1/auth/" + req.ID + "/users?user_id=" + strictID, wantStatus: 200,
			check: noMeta(map[string]any{"required_fields": []any{}})},
		{name: "metafields of an unknown user", method: "GET", path: meta + "?user_id=00000000-0000-7000-8000-000000000000",
			wantStatus: 404, wantCode: "user_not_found"},
	})
}

func testAPIKeys(t *testing.T, e *env) {
	keysPath := "/v1/apps/" + e.app.ID + "/api_keys"
	users := "/v1/" + e.app.ID + "/users"
	member, err := e.Tenants.AddMember(context.Background(), servertest.Operator, e.ws.ID, "keyless@acme.test", "", access.RoleMember)
	if err != nil {
		t.Fatalf("AddMember() error = %v", err)
	}
	memberSecret := e.workspaceSecret(t, e.ws.ID, member.ID)

	var key map[string]any
	runScenarios(t, e, []scenario{
		{name: "create", method: "POST", path: keysPath, headers: bearer(e.appSecret), body: map[string]any{"nickname": "ci"},
			wantStatus: 200, check: func(t *testing.T, r response) {
				key = r.obj("api_key")
				tok, _ := key["token"].(string)
				e.remember(tok)
				if !strings.HasPrefix(tok, "ghk_") || len(tok) < 24 {
					t.Errorf("api_key.token = %q; want a ghk_ key", tok)
				}
				for _, k := range []string{"id", "nickname", "token", "created_at"} {
					if _, ok := key[k]; !ok {
						t.Errorf("api_key lacks %q: %v", k, key)
					}
				}
				if key["nickname"] != "ci" {
					t.Errorf("api_key.nickname = %v; want ci", key["nickname"])
				}
			}},
		{name: "create without a body", method: "POST", path: keysPath, headers: bearer(e.appSecret), wantStatus: 200,
			check: func(t *testing.T, r response) {
				k := r.obj("api_key")
				tok, _ := k["token"].(string)
				e.remember(tok)
				if !strings.HasPrefix(tok, "ghk_") || k["nickname"] == "" {
					t.Errorf("api_key = %v; want a token and a default nickname", k)
				}
			}},
		{name: "create with the owner's workspace secret", method: "POST", path: keysPath, headers: bearer(e.wsSecret),
			body: map[string]any{}, wantStatus: 200, check: func(t *testing.T, r response) {
				tok, _ := r.obj("api_key")["token"].(string)
				e.remember(tok)
			}},
		{name: "a member's workspace secret cannot create", method: "POST", path: keysPath, headers: bearer(memberSecret),
			body: map[string]any{}, wantStatus: 403},
	})
	if key == nil {
		t.Fatalf("no API key created")
	}
	tok := key["token"].(string)
	runScenarios(t, e, []scenario{
		{name: "list never shows tokens", method: "GET", path: keysPath, headers: bearer(e.appSecret), wantStatus: 200,
			check: func(t *testing.T, r response) {
				list, _ := r.body["api_keys"].([]any)
				found := false
				for _, it := range list {
					k := it.(map[string]any)
					if _, ok := k["token"]; ok {
						t.Errorf("listed key has a token: %v", k)
					}
					if k["id"] == key["id"] {
						found = true
						if k["last4"] != tok[len(tok)-4:] {
							t.Errorf("last4 = %v; want %s", k["last4"], tok[len(tok)-4:])
						}
					}
				}
				if !found || len(list) < 3 {
					t.Errorf("api_keys = %s; want the new key among at least 3", r.raw)
				}
				if strings.Contains(string(r.raw), tok) {
					t.Errorf("list contains the key itself")
				}
			}},
		{name: "the key reads users", method: "GET", path: users, headers: bearer(tok), wantStatus: 200},
		{name: "the key cannot create keys", method: "POST", path: keysPath, headers: bearer(tok), body: map[string]any{},
			wantStatus: 403},
		{name: "the key cannot list keys", method: "GET", path: keysPath, headers: bearer(tok), wantStatus: 403},
		{name: "revoke", method: "DELETE", path: keysPath + "/" + key["id"].(string), headers: bearer(e.appSecret), wantStatus: 200},
		{name: "the revoked key on the next request", method: "GET", path: users, headers: bearer(tok), wantStatus: 401},
		{name: "revoke an unknown key", method: "DELETE", path: keysPath + "/00000000-0000-7000-8000-000000000000",
			headers: bearer(e.appSecret), wantStatus: 404, wantCode: "api_key_not_found"},
		{name: "listed as revoked", method: "GET", path: keysPath, headers: bearer(e.appSecret), wantStatus: 200,
			check: func(t *testing.T, r response) {
				for _, it := range r.body["api_keys"].([]any) {
					if k := it.(map[string]any); k["id"] == key["id"] && k["revoked_at"] == nil {
						t.Errorf("revoked key listed without revoked_at: %v", k)
					}
				}
			}},
	})
}

func testWorkspaces(t *testing.T, e *env) {
	ctx := context.Background()
	nw, err := e.Tenants.CreateWorkspace(ctx, servertest.Operator, tenant.WorkspaceInput{Name: "Team", OwnerEmail: "owner@team.test"})
	if err != nil {
		t.Fatalf("CreateWorkspace() error = %v", err)
	}
	ws, owner := nw.Workspace, nw.Owner
	ownerSecret := e.workspaceSecret(t, ws.ID, owner.ID)
	wsPath := "/v1/workspaces/" + ws.ID
	members := wsPath + "/members"
	asOwner := bearer(ownerSecret)
	role := func(want string) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			w := r.obj("workspace")
			m, _ := w["membership"].(map[string]any)
			if w["id"] != ws.ID || m["role"] != want {
				t.Errorf("workspace = %s; want id %s with membership.role %s", r.raw, ws.ID, want)
			}
		}
	}
	var adminID, memberID string
	runScenarios(t, e, []scenario{
		{name: "list", method: "GET", path: "/v1/workspaces", headers: asOwner, wantStatus: 200,
			check: func(t *testing.T, r response) {
				list, _ := r.body["workspaces"].([]any)
				if len(list) != 1 || list[0].(map[string]any)["id"] != ws.ID {
					t.Errorf("workspaces = %s; want only %s", r.raw, ws.ID)
				}
			}},
		{name: "get", method: "GET", path: wsPath, headers: asOwner, wantStatus: 200, check: role("owner")},
		{name: "patch", method: "PATCH", path: wsPath, headers: asOwner, body: map[string]any{"name": "Team Renamed"}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				role("owner")(t, r)
				if n := r.obj("workspace")["name"]; n != "Team Renamed" {
					t.Errorf("workspace.name = %v; want Team Renamed", n)
				}
			}},
		{name: "without credentials", method: "GET", path: "/v1/workspaces", wantStatus: 401},
		{name: "with an app secret", method: "GET", path: "/v1/workspaces", headers: bearer(e.appSecret), wantStatus: 403},
		{name: "another workspace", method: "GET", path: "/v1/workspaces/" + e.ws.ID, headers: asOwner, wantStatus: 403},
		{name: "another workspace's members", method: "GET", path: "/v1/workspaces/" + e.ws.ID + "/members", headers: asOwner,
			wantStatus: 403},
		{name: "add an admin", method: "POST", path: members, headers: asOwner,
			body: map[string]any{"email": "Admin@Team.test", "name": "Ann", "role": "admin"}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				m := r.obj("member")
				adminID, _ = m["id"].(string)
				if m["email"] != "admin@team.test" || m["role"] != "admin" {
					t.Errorf("member = %v; want admin@team.test as admin", m)
				}
			}},
		{name: "add a member (default role)", method: "POST", path: members, headers: asOwner,
			body: map[string]any{"email": "mem@team.test"}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				m := r.obj("member")
				memberID, _ = m["id"].(string)
				if m["role"] != "member" {
					t.Errorf("member.role = %v; want member", m["role"])
				}
			}},
		{name: "add the same e-mail again", method: "POST", path: members, headers: asOwner,
			body: map[string]any{"email": "mem@team.test"}, wantStatus: 409, wantCode: "member_exists"},
		{name: "add with an unknown role", method: "POST", path: members, headers: asOwner,
			body: map[string]any{"email": "x@team.test", "role": "boss"}, wantStatus: 400, wantCode: "invalid_request"},
		{name: "list members", method: "GET", path: members, headers: asOwner, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if list, _ := r.body["members"].([]any); len(list) != 3 {
					t.Errorf("members = %s; want 3", r.raw)
				}
			}},
	})
	if adminID == "" || memberID == "" {
		t.Fatalf("members were not added")
	}
	adminSecret := e.workspaceSecret(t, ws.ID, adminID)
	memberSecret := e.workspaceSecret(t, ws.ID, memberID)
	asAdmin, asMember := bearer(adminSecret), bearer(memberSecret)
	newApp := map[string]any{"name": "Team App", "origin": "https://team.example.com"}
	runScenarios(t, e, []scenario{
		{name: "admin cannot add an owner", method: "POST", path: members, headers: asAdmin,
			body: map[string]any{"email": "o2@team.test", "role": "owner"}, wantStatus: 403},
		{name: "admin cannot grant owner", method: "PATCH", path: members + "/" + memberID, headers: asAdmin,
			body: map[string]any{"role": "owner"}, wantStatus: 403},
		{name: "admin cannot demote the owner", method: "PATCH", path: members + "/" + owner.ID, headers: asAdmin,
			body: map[string]any{"role": "member"}, wantStatus: 403},
		{name: "admin cannot remove the owner", method: "DELETE", path: members + "/" + owner.ID, headers: asAdmin, wantStatus: 403},
		{name: "last owner cannot be demoted", method: "PATCH", path: members + "/" + owner.ID, headers: asOwner,
			body: map[string]any{"role": "admin"}, wantStatus: 409, wantCode: "last_owner"},
		{name: "last owner cannot be removed", method: "DELETE", path: members + "/" + owner.ID, headers: asOwner, wantStatus: 409,
			wantCode: "last_owner"},
		{name: "unknown member", method: "PATCH", path: members + "/00000000-0000-7000-8000-000000000000", headers: asOwner,
			body: map[string]any{"role": "admin"}, wantStatus: 404, wantCode: "member_not_found"},
		{name: "member reads the workspace", method: "GET", path: wsPath, headers: asMember, wantStatus: 200, check: role("member")},
		{name: "member lists members", method: "GET", path: members, headers: asMember, wantStatus: 200},
		{name: "member lists apps", method: "GET", path: wsPath + "/apps", headers: asMember, wantStatus: 200},
		{name: "member cannot patch the workspace", method: "PATCH", path: wsPath, headers: asMember,
			body: map[string]any{"name": "Mine"}, wantStatus: 403},
		{name: "member cannot add members", method: "POST", path: members, headers: asMember,
			body: map[string]any{"email": "m2@team.test"}, wantStatus: 403},
		{name: "member cannot change roles", method: "PATCH", path: members + "/" + adminID, headers: asMember,
			body: map[string]any{"role": "member"}, wantStatus: 403},
		{name: "member cannot remove members", method: "DELETE", path: members + "/" + adminID, headers: asMember, wantStatus: 403},
		{name: "member cannot create apps", method: "POST", path: wsPath + "/apps", headers: asMember, body: newApp, wantStatus: 403},
		{name: "member cannot create workspaces", method: "POST", path: "/v1/workspaces", headers: asMember,
			body: map[string]any{"name": "Member Spin-off"}, wantStatus: 403},
		{name: "admin patches the workspace", method: "PATCH", path: wsPath, headers: asAdmin,
			body: map[string]any{"public_signup": false}, wantStatus: 200, check: role("admin")},
		{name: "admin creates an app", method: "POST", path: wsPath + "/apps", headers: asAdmin, body: newApp, wantStatus: 200},
		{name: "owner demotes the admin", method: "PATCH", path: members + "/" + adminID, headers: asOwner,
			body: map[string]any{"role": "member"}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if got := r.obj("member")["role"]; got != "member" {
					t.Errorf("member.role = %v; want member", got)
				}
			}},
		{name: "demoted admin is denied at once", method: "POST", path: wsPath + "/apps", headers: asAdmin, body: newApp,
			wantStatus: 403},
		{name: "demoted admin still reads", method: "GET", path: wsPath, headers: asAdmin, wantStatus: 200, check: role("member")},
		{name: "owner removes the member", method: "DELETE", path: members + "/" + memberID, headers: asOwner, wantStatus: 200},
		{name: "removed member's secret stops working", method: "GET", path: "/v1/workspaces", headers: asMember, wantStatus: 401},
		{name: "remove again", method: "DELETE", path: members + "/" + memberID, headers: asOwner, wantStatus: 404,
			wantCode: "member_not_found"},
		{name: "create a workspace", method: "POST", path: "/v1/workspaces", headers: asOwner, body: map[string]any{"name": "Team Spin-off"},
			wantStatus: 200, check: func(t *testing.T, r response) {
				secret := r.str("api_secret")
				e.remember(secret)
				w := r.obj("workspace")
				if m, _ := w["membership"].(map[string]any); w["id"] == ws.ID || w["slug"] != "team-spin-off" || m["role"] != "owner" {
					t.Errorf("created workspace = %s; want a new one owned by the caller", r.raw)
				}
				got := scenario{method: "GET", path: "/v1/workspaces", headers: bearer(secret), wantStatus: 200}.run(t, e)
				list, _ := got.body["workspaces"].([]any)
				if len(list) != 1 || list[0].(map[string]any)["id"] != w["id"] {
					t.Errorf("GET /v1/workspaces with the new secret = %s; want the new workspace", got.raw)
				}
				members := scenario{method: "GET", path: "/v1/workspaces/" + w["id"].(string) + "/members", headers: bearer(secret),
					wantStatus: 200}.run(t, e)
				if list, _ := members.body["members"].([]any); len(list) != 1 || list[0].(map[string]any)["email"] != "owner@team.test" {
					t.Errorf("members of the new workspace = %s; want the caller only", members.raw)
				}
			}},
		{name: "create a workspace whose slug is taken", method: "POST", path: "/v1/workspaces", headers: asOwner,
			body: map[string]any{"name": "Team Spin-off"}, wantStatus: 409, wantCode: "slug_taken"},
		{name: "create a workspace without a name", method: "POST", path: "/v1/workspaces", headers: asOwner,
			body: map[string]any{}, wantStatus: 400, wantCode: "invalid_request"},
		{name: "owner promotes the admin back to owner", method: "PATCH", path: members + "/" + adminID, headers: asOwner,
			body: map[string]any{"role": "owner"}, wantStatus: 200},
		{name: "with two owners one may step down", method: "PATCH", path: members + "/" + owner.ID, headers: asOwner,
			body: map[string]any{"role": "admin"}, wantStatus: 200},
	})
}

func testWorkspaceApps(t *testing.T, e *env) {
	apps := "/v1/workspaces/" + e.ws.ID + "/apps"
	auth := bearer(e.wsSecret)
	otherWS, _ := e.Workspace(t, "Rival")
	rivalSecret := e.workspaceSecret(t, otherWS.ID, "")
	rivalApp := e.createApp(t, otherWS.ID, "Rival App", nil)

	var created map[string]any
	runScenarios(t, e, []scenario{
		{name: "list", method: "GET", path: apps, headers: auth, wantStatus: 200,
			check: func(t *testing.T, r response) {
				found := false
				for _, it := range r.body["apps"].([]any) {
					a := it.(map[string]any)
					if a["workspace_id"] != e.ws.ID {
						t.Errorf("listed app %v of workspace %v; want %s", a["id"], a["workspace_id"], e.ws.ID)
					}
					found = found || a["id"] == e.app.ID
				}
				if !found {
					t.Errorf("apps = %s; want %s among them", r.raw, e.app.ID)
				}
			}},
		{name: "create", method: "POST", path: apps, headers: auth,
			body: map[string]any{"name": "Second", "origin": "https://second.example.com"}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				created = r.obj("app")
				if created["name"] != "Second" || created["workspace_id"] != e.ws.ID || !jsonEqual(created["allowed_origins"], []any{}) {
					t.Errorf("app = %s; want Second in %s with allowed_origins []", r.raw, e.ws.ID)
				}
			}},
		{name: "create without origin", method: "POST", path: apps, headers: auth, body: map[string]any{"name": "No Origin"},
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "create with a bad origin", method: "POST", path: apps, headers: auth,
			body: map[string]any{"name": "Bad", "origin": "ftp://x"}, wantStatus: 400, wantCode: "invalid_request"},
		{name: "another workspace lists", method: "GET", path: apps, headers: bearer(rivalSecret), wantStatus: 403},
		{name: "another workspace's app", method: "GET", path: apps + "/" + rivalApp.ID, headers: auth, wantStatus: 404,
			wantCode: "app_not_found"},
	})
	if created == nil {
		t.Fatalf("no app created")
	}
	id := created["id"].(string)
	one := apps + "/" + id
	public := "/v1/apps/" + id
	runScenarios(t, e, []scenario{
		{name: "get", method: "GET", path: one, headers: auth, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if a := r.obj("app"); a["id"] != id || a["workspace_id"] != e.ws.ID {
					t.Errorf("app = %s; want %s", r.raw, id)
				}
			}},
		{name: "public view before the update", method: "GET", path: public, wantStatus: 200,
			wantBody: map[string]any{"name": "Second", "email_auth_type": "magic"}},
		{name: "update", method: "PATCH", path: one, headers: auth,
			body:       map[string]any{"name": "Second v2", "email_auth_type": "otp", "access_expiration": 600, "allowed_origins": []string{"https://extra.example.com"}},
			wantStatus: 200, check: func(t *testing.T, r response) {
				a := r.obj("app")
				if a["name"] != "Second v2" || !jsonEqual(a["allowed_origins"], []string{"https://extra.example.com"}) {
					t.Errorf("app = %s; want the update applied", r.raw)
				}
			}},
		{name: "public view sees the update at once", method: "GET", path: public, wantStatus: 200,
			wantBody: map[string]any{"name": "Second v2", "email_auth_type": "otp", "access_expiration": 600}},
		{name: "update out of range", method: "PATCH", path: one, headers: auth, body: map[string]any{"access_expiration": 5},
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "another workspace updates", method: "PATCH", path: one, headers: bearer(rivalSecret),
			body: map[string]any{"name": "Taken"}, wantStatus: 403},
		{name: "another workspace deletes", method: "DELETE", path: one, headers: bearer(rivalSecret), wantStatus: 403},
		{name: "update another workspace's app", method: "PATCH", path: apps + "/" + rivalApp.ID, headers: auth,
			body: map[string]any{"name": "Taken"}, wantStatus: 404, wantCode: "app_not_found"},
		{name: "delete", method: "DELETE", path: one, headers: auth, wantStatus: 200},
		{name: "public view after delete", method: "GET", path: public, wantStatus: 404, wantCode: "app_not_found"},
		{name: "get after delete", method: "GET", path: one, headers: auth, wantStatus: 404, wantCode: "app_not_found"},
		{name: "delete again", method: "DELETE", path: one, headers: auth, wantStatus: 404, wantCode: "app_not_found"},
	})
}

func testRequestID(t *testing.T, e *env) {
	generated := func(sent string) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			got := r.header.Get("X-Request-Id")
			if got == "" || got == sent || len(got) > 64 || strings.ContainsAny(got, " <>\"") {
				t.Errorf("X-Request-Id = %q (sent %q); want a fresh, sane id", got, sent)
			}
		}
	}
	echoed := func(sent string) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			if got := r.header.Get("X-Request-Id"); got != sent {
				t.Errorf("X-Request-Id = %q; want %q", got, sent)
			}
		}
	}
	long := strings.Repeat("a", 65)
	runScenarios(t, e, []scenario{
		{name: "generated when absent", method: "GET", path: "/healthz", wantStatus: 200, check: generated("")},
		{name: "echoed when sane", method: "GET", path: "/healthz", headers: map[string]string{"X-Request-Id": "req-42.A_b"},
			wantStatus: 200, check: echoed("req-42.A_b")},
		{name: "echoed on errors", method: "GET", path: "/nope", headers: map[string]string{"X-Request-Id": "req-43"},
			wantStatus: 404, check: echoed("req-43")},
		{name: "replaced when it has odd characters", method: "GET", path: "/healthz",
			headers: map[string]string{"X-Request-Id": "<script>alert(1)</script>"}, wantStatus: 200,
			check: generated("<script>alert(1)</script>")},
		{name: "replaced when too long", method: "GET", path: "/healthz", headers: map[string]string{"X-Request-Id": long},
			wantStatus: 200, check: generated(long)},
	})
	a := e.do(t, "GET", "/healthz", nil, nil).header.Get("X-Request-Id")
	b := e.do(t, "GET", "/healthz", nil, nil).header.Get("X-Request-Id")
	if a == b {
		t.Errorf("two requests got the same generated X-Request-Id %q", a)
	}
}

func testCORS(t *testing.T, e *env) {
	preflight := func(origin, method string) map[string]string {
		return map[string]string{"Origin": origin, "Access-Control-Request-Method": method,
			"Access-Control-Request-Headers": "content-type,x-authorization,x-refresh-token,x-fingerprint"}
	}
	extra := "https://extra.example.com"
	withExtra, err := e.Tenants.CreateApp(context.Background(), servertest.Operator, e.ws.ID, tenant.AppSettings{Name: ptr("Extra"), Origin: ptr(appOrigin),
		AllowedOrigins: &[]string{extra}})
	if err != nil {
		t.Fatalf("CreateApp() error = %v", err)
	}
	allowed := func(origin string) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			h := r.header
			if got := h.Get("Access-Control-Allow-Origin"); got != origin {
				t.Errorf("Access-Control-Allow-Origin = %q; want %q", got, origin)
			}
			if got := h.Get("Access-Control-Allow-Credentials"); got != "true" {
				t.Errorf("Access-Control-Allow-Credentials = %q; want true", got)
			}
			if !slices.Contains(h.Values("Vary"), "Origin") {
				t.Errorf("Vary = %v; want Origin", h.Values("Vary"))
			}
		}
	}
	preflightAllowed := func(origin string) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			allowed(origin)(t, r)
			hdrs := strings.ToLower(r.header.Get("Access-Control-Allow-Headers"))
			for _, h := range []string{"content-type", "authorization", "x-authorization", "x-refresh-token", "x-fingerprint"} {
				if !slices.Contains(strings.Split(strings.ReplaceAll(hdrs, " ", ""), ","), h) {
					t.Errorf("Access-Control-Allow-Headers = %q; want %s", hdrs, h)
				}
			}
			methods := r.header.Get("Access-Control-Allow-Methods")
			for _, m := range []string{"GET", "POST", "PATCH", "DELETE", "PUT"} {
				if !strings.Contains(methods, m) {
					t.Errorf("Access-Control-Allow-Methods = %q; want %s", methods, m)
				}
			}
		}
	}
	denied := func(t *testing.T, r response) {
		for _, h := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Access-Control-Allow-Headers"} {
			if got := r.header.Get(h); got != "" {
				t.Errorf("%s = %q; want none for a foreign origin", h, got)
			}
		}
	}
	users := "/v1/auth/" + e.app.ID + "/users"
	runScenarios(t, e, []scenario{
		{name: "preflight from the app's origin", method: "OPTIONS", path: users, headers: preflight(appOrigin, "POST"),
			wantStatus: 204, check: preflightAllowed(appOrigin)},
		{name: "preflight for an admin path", method: "OPTIONS", path: "/v1/" + e.app.ID + "/users", headers: preflight(appOrigin, "GET"),
			wantStatus: 204, check: preflightAllowed(appOrigin)},
		{name: "preflight from another origin", method: "OPTIONS", path: users, headers: preflight("https://evil.example.com", "POST"),
			wantStatus: 204, check: denied},
		{name: "preflight for an unknown app", method: "OPTIONS", path: "/v1/auth/00000000-0000-7000-8000-000000000000/users",
			headers: preflight(appOrigin, "POST"), wantStatus: 204, check: denied},
		{name: "preflight from an extra allowed origin", method: "OPTIONS", path: "/v1/auth/" + withExtra.ID + "/users",
			headers: preflight(extra, "POST"), wantStatus: 204, check: preflightAllowed(extra)},
		{name: "simple request from the app's origin", method: "GET", path: "/v1/apps/" + e.app.ID,
			headers: map[string]string{"Origin": appOrigin}, wantStatus: 200, check: allowed(appOrigin)},
		{name: "error from the app's origin keeps CORS", method: "POST", path: users, headers: map[string]string{"Origin": appOrigin},
			body: map[string]any{"identifier": "cors@example.com"}, wantStatus: 401, check: allowed(appOrigin)},
		{name: "simple request from another origin", method: "GET", path: "/v1/apps/" + e.app.ID,
			headers: map[string]string{"Origin": "https://evil.example.com"}, wantStatus: 200, check: denied},
		{name: "origin of another app", method: "GET", path: "/v1/apps/" + e.app.ID,
			headers: map[string]string{"Origin": extra}, wantStatus: 200, check: denied},
	})
}

func ptr[T any](v T) *T { return &v }

func testOperations(t *testing.T, e *env) {
	jwks := func(t *testing.T, r response) {
		list, _ := r.body["keys"].([]any)
		if len(list) == 0 {
			t.Fatalf("JWKS = %s; want keys", r.raw)
		}
		found := false
		for _, it := range list {
			k := it.(map[string]any)
			if _, ok := k["d"]; ok {
				t.Errorf("JWKS key %v has a private part", k["kid"])
			}
			if k["alg"] != "ES256" {
				t.Errorf("JWKS key alg = %v; want ES256", k["alg"])
			}
			found = found || k["kid"] == e.Keyring().SignerID()
		}
		if !found {
			t.Errorf("JWKS = %s; want the signing key %s", r.raw, e.Keyring().SignerID())
		}
	}
	runScenarios(t, e, []scenario{
		{name: "healthz", method: "GET", path: "/healthz", wantStatus: 200, wantBody: map[string]any{"status": "ok"}},
		{name: "readyz", method: "GET", path: "/readyz", wantStatus: 200},
		{name: "metrics", method: "GET", path: "/metrics", wantStatus: 200, notJSON: true,
			check: func(t *testing.T, r response) {
				if !strings.Contains(string(r.raw), "gatehouse_http_requests_total") {
					t.Errorf("metrics lack gatehouse_http_requests_total")
				}
				if !strings.Contains(string(r.raw), `route="/v1/{app_id}/users"`) {
					t.Errorf("metrics lack the route label of /v1/{app_id}/users")
				}
			}},
		{name: "jwks", method: "GET", path: "/.well-known/jwks.json", wantStatus: 200, check: jwks},
		{name: "jwks per app", method: "GET", path: "/v1/auth/" + e.app.ID + "/.well-known/jwks.json", wantStatus: 200, check: jwks},
		{name: "unknown docs asset answers JSON", method: "GET", path: "/v1/docs/missing.js", wantStatus: 404, wantCode: "not_found"},
		{name: "docs asset", method: "GET", path: "/v1/docs/style.css", wantStatus: 200, notJSON: true},
		{name: "docs page", method: "GET", path: "/v1/docs/", wantStatus: 200, notJSON: true,
			check: func(t *testing.T, r response) {
				if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
					t.Errorf("docs Content-Type = %q; want text/html", ct)
				}
			}},
	})
}

func testDevOutbox(t *testing.T, e *env) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	for i, m := range []store.OutboxMessage{
		{ID: "out-1", Channel: "email", Recipient: "dev@example.com", Subject: "first", Code: "111111", CreatedAt: t0},
		{ID: "out-2", Channel: "email", Recipient: "someone@example.com", Subject: "other", CreatedAt: t0.Add(time.Second)},
		{ID: "out-3", Channel: "email", Recipient: "dev@example.com", Subject: "second", Link: "https://app.example.com/?x=1",
			CreatedAt: t0.Add(2 * time.Second)},
	} {
		m.AppID = e.app.ID
		if err := e.DB.InsertOutboxMessage(ctx, m); err != nil {
			t.Fatalf("InsertOutboxMessage(%d) error = %v", i, err)
		}
	}
	ids := func(want ...string) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			var got []string
			for _, it := range r.body["messages"].([]any) {
				got = append(got, it.(map[string]any)["id"].(string))
			}
			if !slices.Equal(got, want) {
				t.Errorf("messages = %v; want %v", got, want)
			}
		}
	}
	runScenarios(t, e, []scenario{
		{name: "newest first for one recipient", method: "GET", path: "/dev/outbox?to=" + url.QueryEscape("Dev@Example.com"),
			wantStatus: 200, check: func(t *testing.T, r response) {
				ids("out-3", "out-1")(t, r)
				first := r.body["messages"].([]any)[0].(map[string]any)
				if first["link"] != "https://app.example.com/?x=1" || first["to"] != "dev@example.com" || first["channel"] != "email" {
					t.Errorf("newest message = %v; want its link, to and channel", first)
				}
			}},
		{name: "everyone, newest first", method: "GET", path: "/dev/outbox", wantStatus: 200, check: ids("out-3", "out-2", "out-1")},
		{name: "limit", method: "GET", path: "/dev/outbox?limit=1", wantStatus: 200, check: ids("out-3")},
		{name: "nobody", method: "GET", path: "/dev/outbox?to=nobody%40example.com", wantStatus: 200,
			wantBody: map[string]any{"messages": []any{}}},
		{name: "since", method: "GET", path: "/dev/outbox?to=dev%40example.com&since=" + url.QueryEscape(t0.Add(time.Second).Format(time.RFC3339)),
			wantStatus: 200, check: ids("out-3")},
		{name: "since, none yet", method: "GET", path: "/dev/outbox?since=" + url.QueryEscape(t0.Add(time.Hour).Format(time.RFC3339)),
			wantStatus: 200, wantBody: map[string]any{"messages": []any{}}},
		{name: "bad since", method: "GET", path: "/dev/outbox?since=yesterday", wantStatus: 400, wantCode: "invalid_request"},
		{name: "wait too long", method: "GET", path: "/dev/outbox?wait_ms=60000", wantStatus: 400, wantCode: "invalid_request"},
		{name: "wait, nothing comes", method: "GET", path: "/dev/outbox?to=nobody%40example.com&wait_ms=50", wantStatus: 200,
			wantBody: map[string]any{"messages": []any{}}},
	})

	// Phone numbers are found however they are written, even with the "+"
	// left unescaped (it arrives as a space).
	if err := e.DB.InsertOutboxMessage(ctx, store.OutboxMessage{ID: "out-sms", AppID: e.app.ID, Channel: "sms",
		Recipient: "+14155550999", Text: "123456 is your code", Code: "123456", CreatedAt: t0}); err != nil {
		t.Fatalf("InsertOutboxMessage(sms) error = %v", err)
	}
	for _, q := range []string{"+14155550999", "%2B14155550999", "%2B1%20415-555-0999", "%2B1+(415)+555.0999"} {
		runScenarios(t, e, []scenario{{name: "phone " + q, method: "GET", path: "/dev/outbox?to=" + q, wantStatus: 200, check: ids("out-sms")}})
	}

	// A reader waiting for a message gets it when it is kept, not an empty list.
	done := make(chan error, 1)
	go func() {
		// Sent once the request below waits for the recipient: ordered by
		// the outbox itself, not by a guess at how long the request takes.
		for deadline := time.Now().Add(10 * time.Second); !e.API().Outbox.Waiting("waiter@example.com"); runtime.Gosched() {
			if time.Now().After(deadline) {
				done <- errors.New("the request never waited for waiter@example.com")
				return
			}
		}
		_, err := e.API().Outbox.Send(ctx, courier.Message{AppID: e.app.ID, Channel: courier.ChannelEmail, To: "waiter@example.com",
			Subject: "late", Code: "424242"})
		done <- err
	}()
	runScenarios(t, e, []scenario{
		{name: "wait for a message", method: "GET", path: "/dev/outbox?to=waiter%40example.com&wait_ms=5000", wantStatus: 200,
			check: func(t *testing.T, r response) {
				msgs, _ := r.body["messages"].([]any)
				if len(msgs) != 1 || msgs[0].(map[string]any)["code"] != "424242" {
					t.Errorf("messages = %v; want the one kept while waiting", msgs)
				}
			}},
	})
	if err := <-done; err != nil {
		t.Fatalf("Outbox.Send: %v", err)
	}
}

// testLogScan runs last: no credential, API key or invitation issued during
// the groups may appear in the server's logs.
func testLogScan(t *testing.T, e *env) {
	logs := e.Logs.String()
	if !strings.Contains(logs, `"msg":"request"`) {
		t.Fatalf("captured logs have no request lines; the scan would prove nothing")
	}
	secrets := e.remembered()
	if len(secrets) < 10 {
		t.Fatalf("only %d secrets remembered; the groups should have issued more", len(secrets))
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		// A JWT's payload or signature alone is a leak; a one-time code
		// only as a word (not six digits inside some logged number).
		if servertest.Leaks(logs, s) {
			t.Errorf("logs contain a secret (or a token's signature or claims) starting %q", s[:min(8, len(s))])
		}
	}
	for _, q := range []string{"identifier=", "sct_magic", "user_id="} {
		if strings.Contains(logs, q) {
			t.Errorf("logs contain %q: query strings and links must not be logged", q)
		}
	}
	if strings.Contains(logs, "Bearer") || strings.Contains(logs, tenant.APIKeyPrefix) {
		t.Errorf("logs contain an Authorization value")
	}
}
