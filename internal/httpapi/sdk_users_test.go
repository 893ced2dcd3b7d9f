package httpapi_test

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

// TestServerSDKUsers drives the user routes as the Python and Ruby server
// SDKs do (server-sdk-compat §1, §3), on each engine: the admin user read
// with the user's live sessions, the user search, body-less requests that
// still say Content-Type: application/json, and the older identifier lookup.
func TestServerSDKUsers(t *testing.T) {
	forEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		for _, g := range []struct {
			name string
			fn   func(t *testing.T, e *env)
		}{
			{"admin_read_sessions", testAdminReadSessions},
			{"search", testUserSearch},
			{"json_without_body", testJSONWithoutBody},
			{"lookup_with_secret", testLookupWithSecret},
		} {
			t.Run(g.name, func(t *testing.T) { g.fn(t, envOf(t, sys, g.name)) })
		}
	})
}

// sessionsOf reads user.sessions of a response, failing unless it is an array.
func sessionsOf(t *testing.T, r response) []any {
	t.Helper()
	list, ok := userOf(t, r)["sessions"].([]any)
	if !ok {
		t.Fatalf("user.sessions = %#v; want an array (body %s)", userOf(t, r)["sessions"], r.raw)
	}
	return list
}

func sessionIDs(list []any) []string {
	var out []string
	for _, s := range list {
		id, _ := s.(map[string]any)["id"].(string)
		out = append(out, id)
	}
	return out
}

func testAdminReadSessions(t *testing.T, e *env) {
	const email = "sessions@example.com"
	userID, first, _ := e.signIn(t, email)
	_, second, _ := e.signIn(t, email)
	_, third, _ := e.signIn(t, email)
	path := "/v1/" + e.app.ID + "/users/" + userID
	auth := bearer(e.appSecret)
	key, _, err := e.Tenants.CreateAPIKey(context.Background(), servertest.Operator, e.app.ID, "sdk")
	if err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	e.remember(key)
	me := e.authPath("/current_user")

	// The sessions route's items, as users.get must repeat them.
	listed := func(t *testing.T) []any {
		t.Helper()
		r := scenario{method: "GET", path: path + "/sessions", headers: auth, wantStatus: 200}.run(t, e)
		var list []any
		if err := json.Unmarshal(r.raw, &list); err != nil {
			t.Fatalf("sessions = %s: %v", r.raw, err)
		}
		return list
	}
	// sameAsListed checks user.sessions against the sessions route and the
	// number of live sessions.
	sameAsListed := func(n int) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			got, want := sessionsOf(t, r), listed(t)
			if len(got) != n || !jsonEqual(got, want) {
				t.Errorf("user.sessions = %v; want the %d of GET …/sessions: %v", got, n, want)
			}
			for _, s := range got {
				if s.(map[string]any)["current"] != false {
					t.Errorf("session %v is current; no session is the caller's on an admin read", s)
				}
			}
		}
	}
	var newest string
	runScenarios(t, e, []scenario{
		{name: "users.get lists the live sessions", method: "GET", path: path, headers: auth, wantStatus: 200,
			check: func(t *testing.T, r response) {
				sameAsListed(3)(t, r)
				if u := userOf(t, r); u["id"] != userID || u["email"] != email {
					t.Errorf("user = %v; want %s", u, userID)
				}
				s := sessionsOf(t, r)[0].(map[string]any)
				newest, _ = s["id"].(string)
				for _, k := range []string{"id", "type", "user_agent", "browser", "platform", "ip_address", "created_at", "last_used_at"} {
					if _, ok := s[k]; !ok {
						t.Errorf("session lacks %q: %v", k, s)
					}
				}
			}},
		{name: "with an API key", method: "GET", path: path, headers: bearer(key), wantStatus: 200, check: sameAsListed(3)},
		{name: "with a workspace secret", method: "GET", path: path, headers: bearer(e.wsSecret), wantStatus: 200, check: sameAsListed(3)},
		{name: "another app's secret may not", method: "GET", path: path,
			headers: bearer(e.appSecretFor(t, e.createApp(t, e.ws.ID, "Elsewhere", nil).ID)), wantStatus: 403},
		{name: "the list does not carry sessions", method: "GET", path: "/v1/" + e.app.ID + "/users?q=" + url.QueryEscape(email),
			headers: auth, wantStatus: 200, check: func(t *testing.T, r response) {
				users, _ := r.body["users"].([]any)
				if len(users) != 1 || !jsonEqual(users[0].(map[string]any)["sessions"], []any{}) {
					t.Errorf("users = %v; want the one user with sessions []", users)
				}
			}},
	})
	if newest == "" {
		t.Fatal("no session id read")
	}
	runScenarios(t, e, []scenario{
		{name: "sessions.revoke takes an id users.get gave", method: "DELETE", path: path + "/sessions/" + newest, headers: auth,
			wantStatus: 200},
		{name: "that session's token stops working", method: "GET", path: me, headers: user(third), wantStatus: 401},
		{name: "a revoked session is no longer listed", method: "GET", path: path, headers: auth, wantStatus: 200,
			check: func(t *testing.T, r response) {
				sameAsListed(2)(t, r)
				if slices.Contains(sessionIDs(sessionsOf(t, r)), newest) {
					t.Errorf("revoked session %s still listed", newest)
				}
			}},
		{name: "the user signs out of another", method: "DELETE", path: me, headers: user(second), wantStatus: 200},
		{name: "a signed-out session is not listed", method: "GET", path: path, headers: auth, wantStatus: 200, check: sameAsListed(1)},
		{name: "the first session still works", method: "GET", path: me, headers: user(first), wantStatus: 200},
	})
	// Sessions end at their absolute lifetime, refreshed or not.
	e.Clock.Advance(e.Config.Tokens.SessionLifetime + time.Second)
	runScenarios(t, e, []scenario{
		{name: "an expired session is not listed", method: "GET", path: path, headers: auth, wantStatus: 200, check: sameAsListed(0)},
		{name: "unknown user", method: "GET", path: "/v1/" + e.app.ID + "/users/00000000-0000-7000-8000-000000000000", headers: auth,
			wantStatus: 404, wantCode: "user_not_found"},
	})
}

func testUserSearch(t *testing.T, e *env) {
	ctx := context.Background()
	other := e.createApp(t, e.ws.ID, "Other", nil)
	// In creation order; the same people in another app of the workspace.
	people := []struct{ email, phone string }{
		{"ann@search.test", ""},
		{"anna@search.test", "+1 415 555 2671"},
		{"ann+x@search.test", ""},
		{"a_b@search.test", ""},
		{"axb@search.test", ""},
		{"a%b@search.test", ""},
		{"bob@search.test", "+1 415 555 2672"},
		{"", "+44 20 7946 0018"},
	}
	for _, p := range people {
		for _, app := range []string{e.app.ID, other.ID} {
			e.Clock.Advance(time.Second) // distinct creation times: a stable order
			a := e.app
			if app == other.ID {
				a = other
			}
			if _, _, err := e.Users.Create(ctx, servertest.Operator, a, appuser.CreateInput{Email: p.email, Phone: p.phone}); err != nil {
				t.Fatalf("create %q %q: %v", p.email, p.phone, err)
			}
		}
	}
	base := "/v1/" + e.app.ID + "/users"
	auth := bearer(e.appSecret)
	// found checks the users of a page, newest first, by e-mail (or phone),
	// and that each is the env's app's.
	found := func(want ...string) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			t.Helper()
			list, ok := r.body["users"].([]any)
			if !ok {
				t.Fatalf("users = %s; want an array", r.raw)
			}
			got := []string{}
			for _, it := range list {
				u := it.(map[string]any)
				if u["app_id"] != e.app.ID {
					t.Errorf("user %v is of app %v", u["id"], u["app_id"])
				}
				if s, ok := u["email"].(string); ok {
					got = append(got, s)
				} else {
					got = append(got, u["phone"].(string))
				}
			}
			if want == nil {
				want = []string{}
			}
			if !slices.Equal(got, want) {
				t.Errorf("users = %q; want %q", got, want)
			}
		}
	}
	q := func(s string) string { return base + "?q=" + url.QueryEscape(s) }
	runScenarios(t, e, []scenario{
		{name: "a prefix", method: "GET", path: q("ann"), headers: auth, wantStatus: 200, wantBody: map[string]any{"total_count": 3},
			check: found("ann+x@search.test", "anna@search.test", "ann@search.test")},
		{name: "a whole address, in capitals", method: "GET", path: q("ANN@Search.TEST"), headers: auth, wantStatus: 200,
			wantBody: map[string]any{"total_count": 1}, check: found("ann@search.test")},
		{name: "a plus in an address", method: "GET", path: q("ann+"), headers: auth, wantStatus: 200, check: found("ann+x@search.test")},
		{name: "a percent sign is literal", method: "GET", path: q("a%"), headers: auth, wantStatus: 200, check: found("a%b@search.test")},
		{name: "an underscore is literal", method: "GET", path: q("a_"), headers: auth, wantStatus: 200, check: found("a_b@search.test")},
		{name: "a prefix, not a substring", method: "GET", path: q("search.test"), headers: auth, wantStatus: 200,
			wantBody: map[string]any{"total_count": 0, "total_pages": 0}, check: found()},
		{name: "nothing matches", method: "GET", path: q("zed"), headers: auth, wantStatus: 200, check: found()},
		{name: "non-ASCII finds no ASCII look-alike", method: "GET", path: q("\u212aate"), headers: auth, wantStatus: 200, check: found()},
		{name: "non-ASCII", method: "GET", path: q("änn"), headers: auth, wantStatus: 200, check: found()},
		{name: "a phone number prefix, formatted", method: "GET", path: q("+1 (415) 555-26"), headers: auth, wantStatus: 200,
			check: found("bob@search.test", "anna@search.test")},
		{name: "a phone number without its plus", method: "GET", path: q("1415"), headers: auth, wantStatus: 200,
			check: found("bob@search.test", "anna@search.test")},
		{name: "an unescaped plus is a space, so the same", method: "GET", path: base + "?q=+1415", headers: auth, wantStatus: 200,
			check: found("bob@search.test", "anna@search.test")},
		{name: "a whole number", method: "GET", path: q("+14155552671"), headers: auth, wantStatus: 200, check: found("anna@search.test")},
		{name: "00 for plus", method: "GET", path: q("0044"), headers: auth, wantStatus: 200, check: found("+442079460018")},
		{name: "search is q", method: "GET", path: base + "?search=ann", headers: auth, wantStatus: 200,
			check: found("ann+x@search.test", "anna@search.test", "ann@search.test")},
		{name: "search and q alike", method: "GET", path: base + "?search=ann&q=ann", headers: auth, wantStatus: 200,
			check: found("ann+x@search.test", "anna@search.test", "ann@search.test")},
		{name: "search and q differ", method: "GET", path: base + "?search=ann&q=bob", headers: auth, wantStatus: 400,
			wantCode: "invalid_request", wantBody: map[string]any{"error": "search must equal q when both are sent"}},
		{name: "an empty q searches nothing", method: "GET", path: base + "?q=+&limit=100", headers: auth, wantStatus: 200,
			wantBody: map[string]any{"total_count": len(people)}},
		{name: "per_page pages a search", method: "GET", path: q("a") + "&per_page=2", headers: auth, wantStatus: 200,
			wantBody: map[string]any{"total_count": 6, "total_pages": 3, "per_page": 2, "current_page": 1, "next_page": 2},
			check:    found("a%b@search.test", "axb@search.test")},
		{name: "the next page", method: "GET", path: q("a") + "&per_page=2&page=2", headers: auth, wantStatus: 200,
			wantBody: map[string]any{"current_page": 2, "prev_page": 1, "next_page": 3},
			check:    found("a_b@search.test", "ann+x@search.test")},
		{name: "the last page", method: "GET", path: q("a") + "&limit=2&page=3", headers: auth, wantStatus: 200,
			wantBody: map[string]any{"current_page": 3, "next_page": nil}, check: found("anna@search.test", "ann@search.test")},
		{name: "limit and per_page alike", method: "GET", path: q("a") + "&limit=3&per_page=3", headers: auth, wantStatus: 200,
			wantBody: map[string]any{"per_page": 3, "total_pages": 2}},
		{name: "limit and per_page differ", method: "GET", path: q("a") + "&limit=2&per_page=3", headers: auth, wantStatus: 400,
			wantCode: "invalid_request", wantBody: map[string]any{"error": "per_page must equal limit when both are sent"}},
		{name: "a bad per_page", method: "GET", path: base + "?per_page=many", headers: auth, wantStatus: 400, wantCode: "invalid_request"},
		{name: "with a status", method: "GET", path: q("ann") + "&status=inactive", headers: auth, wantStatus: 200, check: found()},
		{name: "with the e-mail filter", method: "GET", path: q("a") + "&email=b%40", headers: auth, wantStatus: 200,
			check: found("a%b@search.test", "axb@search.test", "a_b@search.test")},
		{name: "with a workspace secret", method: "GET", path: q("bob"), headers: bearer(e.wsSecret), wantStatus: 200,
			check: found("bob@search.test")},
		{name: "the SDK's literal undefined is no search", method: "GET", path: base + "?q=undefined&search=undefined&per_page=undefined",
			headers: auth, wantStatus: 200, wantBody: map[string]any{"total_count": len(people), "per_page": 25}},
	})
}

// testJSONWithoutBody: the Ruby SDK sends Content-Type: application/json on
// GET, DELETE and body-less POST requests (server-sdk-compat §1).
func testJSONWithoutBody(t *testing.T, e *env) {
	userID, _, _ := e.signIn(t, "ruby@example.com")
	typed := func(h map[string]string) map[string]string {
		h["Content-Type"], h["Accept"] = jsonType, jsonType
		return h
	}
	secret := func() map[string]string { return typed(bearer(e.appSecret)) }
	users := "/v1/" + e.app.ID + "/users"
	path := users + "/" + userID
	status := func(want string) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			if s := userOf(t, r)["status"]; s != want {
				t.Errorf("status = %v; want %s", s, want)
			}
		}
	}
	runScenarios(t, e, []scenario{
		{name: "users.get", method: "GET", path: path, headers: secret(), wantStatus: 200,
			check: func(t *testing.T, r response) {
				if n := len(sessionsOf(t, r)); n != 1 {
					t.Errorf("user has %d sessions; want 1", n)
				}
			}},
		{name: "users.list", method: "GET", path: users + "?q=ruby&per_page=100", headers: secret(), wantStatus: 200,
			wantBody: map[string]any{"total_count": 1}},
		{name: "sessions.list", method: "GET", path: path + "/sessions", headers: secret(), wantStatus: 200},
		{name: "deactivate", method: "POST", path: path + "/deactivate", headers: secret(), wantStatus: 200, check: status("inactive")},
		{name: "activate", method: "POST", path: path + "/activate", headers: secret(), wantStatus: 200, check: status("active")},
		{name: "lookup", method: "GET", path: e.authPath("/users?identifier=ruby%40example.com"), headers: secret(), wantStatus: 200,
			check: func(t *testing.T, r response) { userOf(t, r) }},
	})
	// Deactivating ended the sessions: sign in again for the user's own calls.
	_, access, refresh := e.signIn(t, "ruby@example.com")
	_, other, _ := e.signIn(t, "ruby@example.com")
	r := scenario{method: "GET", path: path, headers: secret(), wantStatus: 200}.run(t, e)
	sessionID := sessionIDs(sessionsOf(t, r))[0] // the newest: other's
	runScenarios(t, e, []scenario{
		{name: "sessions.revoke", method: "DELETE", path: path + "/sessions/" + sessionID, headers: secret(), wantStatus: 200},
		{name: "its token is refused", method: "GET", path: e.authPath("/current_user"), headers: typed(user(other)), wantStatus: 401},
		{name: "current_user", method: "GET", path: e.authPath("/current_user"), headers: typed(user(access)), wantStatus: 200},
		{name: "sessions.refresh", method: "POST", path: e.authPath("/tokens/refresh"),
			headers: typed(map[string]string{"X-Refresh-Token": refresh}), wantStatus: 200,
			check: func(t *testing.T, r response) { access, _ = e.tokenSet(t, r, userID) }},
		{name: "sign_out", method: "DELETE", path: e.authPath("/current_user"), headers: typed(user(access)), wantStatus: 200},
		{name: "users.delete", method: "DELETE", path: path, headers: secret(), wantStatus: 200},
	})
}

// testLookupWithSecret: the SDKs' older find_by_identifier,
// GET /v1/auth/{app}/users?identifier= with the secret → {user} or {user: null}.
func testLookupWithSecret(t *testing.T, e *env) {
	u := e.createUser(t, e.app.ID, e.appSecret, map[string]any{"email": "Found@Example.com", "phone": "+1 212 555 0187"})
	other := e.createApp(t, e.ws.ID, "Other", nil)
	e.createUser(t, other.ID, e.appSecretFor(t, other.ID), map[string]any{"identifier": "elsewhere@example.com"})
	lookup := func(identifier string) string {
		return e.authPath("/users?identifier=" + url.QueryEscape(identifier))
	}
	auth := bearer(e.appSecret)
	// full: the user, with both contacts unmasked (the caller holds the secret).
	full := func(t *testing.T, r response) {
		got := userOf(t, r)
		if got["id"] != u["id"] || got["email"] != "found@example.com" || got["phone"] != "+12125550187" || len(r.body) != 1 {
			t.Errorf("body = %s; want {user} %v with both contacts", r.raw, u["id"])
		}
	}
	null := func(t *testing.T, r response) {
		if v, ok := r.body["user"]; !ok || v != nil || len(r.body) != 1 {
			t.Errorf("body = %s; want {\"user\":null}", r.raw)
		}
	}
	runScenarios(t, e, []scenario{
		{name: "by e-mail", method: "GET", path: lookup("FOUND@example.com"), headers: auth, wantStatus: 200, check: full},
		{name: "by phone", method: "GET", path: lookup("+1 (212) 555-0187"), headers: auth, wantStatus: 200, check: full},
		{name: "unknown", method: "GET", path: lookup("ghost@example.com"), headers: auth, wantStatus: 200, check: null},
		{name: "not an identifier", method: "GET", path: lookup("ghost"), headers: auth, wantStatus: 200, check: null},
		{name: "another app's user", method: "GET", path: lookup("elsewhere@example.com"), headers: auth, wantStatus: 200, check: null},
		{name: "with a workspace secret", method: "GET", path: lookup("found@example.com"), headers: bearer(e.wsSecret), wantStatus: 200,
			check: full},
		{name: "a revoked secret is refused", method: "GET", path: lookup("found@example.com"), headers: bearer(revokedSecret(t, e)),
			wantStatus: 401},
	})
}

// revokedSecret issues an app secret for the env's app and revokes it.
func revokedSecret(t *testing.T, e *env) string {
	t.Helper()
	tok, rec, err := e.Tenants.CreateAppSecret(context.Background(), servertest.Operator, e.app.ID, "revoked")
	if err != nil {
		t.Fatalf("CreateAppSecret: %v", err)
	}
	e.remember(tok)
	if err := e.Tenants.RevokeSecret(context.Background(), servertest.Operator, rec.ID); err != nil {
		t.Fatalf("RevokeSecret: %v", err)
	}
	return tok
}

// TestOpenAPIDocumentsUserSearch: the document names the SDKs' parameters
// and says what user.sessions holds.
func TestOpenAPIDocumentsUserSearch(t *testing.T) {
	e, doc := fetchOpenAPI(t)
	list := doc.Paths["/v1/{app_id}/users"]["get"]
	var names []string
	for _, p := range list.Parameters {
		if p.In == "query" {
			names = append(names, p.Name)
		}
	}
	for _, want := range []string{"q", "search", "page", "limit", "per_page"} {
		if !slices.Contains(names, want) {
			t.Errorf("GET /v1/{app_id}/users query parameters = %v; want %s among them", names, want)
		}
	}
	r := scenario{method: "GET", path: "/v1/openapi.json", wantStatus: 200}.run(t, e)
	var raw struct {
		Paths map[string]map[string]struct {
			Description string `json:"description"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(r.raw, &raw); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if d := raw.Components.Schemas["User"].Properties["sessions"].Description; !strings.Contains(d, "live sessions") ||
		!strings.Contains(d, "GET /v1/{app_id}/users/{id}") {
		t.Errorf("User.sessions description = %q; want what it lists and where", d)
	}
	if d := raw.Paths["/v1/{app_id}/users"]["get"].Description; !strings.Contains(d, "prefix") {
		t.Errorf("GET /v1/{app_id}/users description = %q; want the search explained", d)
	}
	if d := raw.Paths["/v1/{app_id}/users/{id}"]["get"].Description; !strings.Contains(d, "sessions") {
		t.Errorf("GET /v1/{app_id}/users/{id} description = %q; want sessions explained", d)
	}
}
