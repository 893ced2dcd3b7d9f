package httpapi_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestRequestBodies: a body is read only as JSON declared as such, and only
// when each of its objects names every key once. Two keys that differ only
// in case, or the same key twice, are refused (400): huma validated one of
// them and encoding/json used the other, so an identifier that was never
// checked got stored. A body without Content-Type application/json is
// refused (415), so a cross-site form or a bare fetch, which browsers send
// without a CORS preflight, never reaches an operation; requests without a
// body (the SDK's body-less POSTs) still need no Content-Type.
func TestRequestBodies(t *testing.T) {
	e := newEnv(t, store.SQLite, false)
	users := "/v1/" + e.app.ID + "/users"
	auth := bearer(e.appSecret)
	withType := func(ct string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + e.appSecret, "Content-Type": ct}
	}
	// exists reports whether the app has a user with this e-mail address.
	exists := func(t *testing.T, email string) bool {
		t.Helper()
		r := scenario{method: "GET", path: "/v1/auth/" + e.app.ID + "/users?identifier=" + url.QueryEscape(email), headers: auth,
			wantStatus: 200}.run(t, e)
		return r.body["user"] != nil
	}
	const dup = "Request body has a duplicate key (keys are compared ignoring case)"
	for _, tc := range []struct{ name, body string }{
		{"the same key twice", `{"identifier":"twice@example.com","identifier":"twice-b@example.com"}`},
		{"a case variant after the key", `{"identifier":"case@example.com","Identifier":"case-b@example.com"}`},
		{"a case variant before the key", `{"IDENTIFIER":"upper-b@example.com","identifier":"upper@example.com"}`},
		{"two case variants, neither exact", `{"IdEntifier":"mixed@example.com","IDENTIFIER":"mixed-b@example.com"}`},
		{"case variants in a nested object", `{"identifier":"nested@example.com","user_meta":{"first_name":"A","First_Name":"B"}}`},
		{"duplicates in an object in an array", `{"identifier":"deep@example.com","user_meta":{"x":[1,{"k":1,"k":2}]}}`},
		{"a Kelvin sign folding to k", `{"identifier":"kelvin@example.com","user_meta":{"k":1,"\u212a":2}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scenario{method: "POST", path: users, headers: auth, body: tc.body, wantStatus: 400, wantCode: "invalid_request",
				wantBody: map[string]any{"error": dup}}.run(t, e)
			for _, addr := range []string{"twice", "twice-b", "case", "case-b", "upper", "upper-b", "mixed", "mixed-b", "nested", "deep", "kelvin"} {
				if exists(t, addr+"@example.com") {
					t.Errorf("%s: user %s@example.com was created", tc.name, addr)
				}
			}
		})
	}

	runScenarios(t, e, []scenario{
		{name: "the same key in sibling objects", method: "POST", path: users, headers: auth,
			body: `{"identifier":"siblings@example.com","user_meta":{"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}]}}`, wantStatus: 200},
		{name: "a body without Content-Type", method: "POST", path: users, headers: withType(""),
			body: `{"identifier":"untyped@example.com"}`, wantStatus: 415, wantCode: "unsupported_media_type",
			wantBody: map[string]any{"error": "Content-Type must be application/json"}},
		{name: "a form", method: "POST", path: users, headers: withType("application/x-www-form-urlencoded"),
			body: `identifier=form@example.com`, wantStatus: 415, wantCode: "unsupported_media_type"},
		{name: "text/plain", method: "POST", path: users, headers: withType("text/plain"),
			body: `{"identifier":"plain@example.com"}`, wantStatus: 415, wantCode: "unsupported_media_type"},
		{name: "a +json type", method: "POST", path: users, headers: withType("application/merge-patch+json"),
			body: `{"identifier":"merge@example.com"}`, wantStatus: 415, wantCode: "unsupported_media_type"},
		{name: "a body on a body-less route", method: "POST", path: users + "/no-such-user/activate", headers: withType("text/plain"),
			body: `x`, wantStatus: 415, wantCode: "unsupported_media_type"},
		{name: "application/json with a charset, in capitals", method: "POST", path: users,
			headers: withType("Application/JSON; charset=utf-8"), body: `{"identifier":"charset@example.com"}`, wantStatus: 200},
	})
	for _, addr := range []string{"untyped", "form", "plain", "merge"} {
		if exists(t, addr+"@example.com") {
			t.Errorf("user %s@example.com was created from a body not declared JSON", addr)
		}
	}

	// A chunked body (no Content-Length) without Content-Type is refused too.
	req, err := http.NewRequest("POST", e.URL+users, io.MultiReader(strings.NewReader(`{"identifier":"chunked@example.com"}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.appSecret)
	res, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s (chunked): %v", users, err)
	}
	res.Body.Close()
	if res.StatusCode != 415 || exists(t, "chunked@example.com") {
		t.Errorf("POST %s (chunked, no Content-Type) = %d; want 415 and no user", users, res.StatusCode)
	}

	// The SDK's body-less POSTs send neither a body nor a Content-Type (A8,
	// A9); an empty body with some other type passes too.
	id, _ := userOf(t, scenario{method: "POST", path: users, headers: auth, body: map[string]any{"identifier": "bodyless@example.com"},
		wantStatus: 200}.run(t, e))["id"].(string)
	runScenarios(t, e, []scenario{
		{name: "deactivate without a body", method: "POST", path: users + "/" + id + "/deactivate", headers: auth, wantStatus: 200},
		{name: "activate without a body, typed text/plain", method: "POST", path: users + "/" + id + "/activate",
			headers: withType("text/plain"), wantStatus: 200},
	})
}
