package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

// TestImportUsers drives POST /v1/{app_id}/users/import on both engines:
// users arrive with status imported, a batch sent again creates nothing,
// one bad row refuses the batch, and an imported user signs in as usual.
func TestImportUsers(t *testing.T) {
	forEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		t.Run("batches", func(t *testing.T) {
			e := envOf(t, sys, "import")
			e.recordEvents(t)
			testImportBatches(t, e)
		})
		t.Run("credentials", func(t *testing.T) { testImportCredentials(t, envOf(t, sys, "import-creds")) })
		t.Run("limits", func(t *testing.T) { testImportLimits(t, envOf(t, sys, "import-limits")) })
	})
}

// importPath is the import route of the env's app.
func (e *env) importPath() string { return "/v1/" + e.app.ID + "/users/import" }

func importBody(users ...map[string]any) map[string]any { return map[string]any{"users": users} }

// importedRows reads the users of an import answer, checking their indexes.
func importedRows(t *testing.T, r response, n int) []map[string]any {
	t.Helper()
	list, _ := r.body["users"].([]any)
	if len(list) != n {
		t.Fatalf("import answered %d users; want %d (body %s)", len(list), n, r.raw)
	}
	out := make([]map[string]any, n)
	for i, v := range list {
		out[i], _ = v.(map[string]any)
		if out[i]["index"] != float64(i) {
			t.Errorf("users[%d].index = %v; want %d", i, out[i]["index"], i)
		}
	}
	return out
}

// rowErrors reads details.rows of a refused import as "index field error_code".
func rowErrors(t *testing.T, r response) []string {
	t.Helper()
	d := r.obj("details")
	list, _ := d["rows"].([]any)
	var out []string
	for _, v := range list {
		m, _ := v.(map[string]any)
		if s, _ := m["error"].(string); s == "" {
			t.Errorf("row error %v has no error text", m)
		}
		out = append(out, fmt.Sprintf("%v %v %v", m["index"], m["field"], m["error_code"]))
	}
	if d["total"] != float64(len(out)) {
		t.Errorf("details.total = %v; want %d", d["total"], len(out))
	}
	return out
}

func testImportBatches(t *testing.T, e *env) {
	auth := bearer(e.appSecret)
	batch := importBody(
		map[string]any{"identifier": "  Grace@Example.COM ", "user_meta": map[string]any{"first_name": "Grace", "age": 85}, "email_verified": true},
		map[string]any{"phone": "+1 (415) 555-2671", "phone_verified": true},
		map[string]any{"email": "linus@example.com", "phone": "+442079460018"},
	)
	var ids []string
	first := scenario{name: "a batch creates imported users", method: "POST", path: e.importPath(), headers: auth, body: batch,
		wantStatus: 200, wantBody: map[string]any{"created": 3, "existing": 0},
		events: []string{"user.created", "user.created", "user.created"},
		check: func(t *testing.T, r response) {
			rows := importedRows(t, r, 3)
			want := []struct{ email, phone any }{{"grace@example.com", nil}, {nil, "+14155552671"}, {"linus@example.com", "+442079460018"}}
			for i, row := range rows {
				if row["outcome"] != "created" || row["status"] != "imported" || row["id"] == "" || row["user_id"] == "" ||
					row["email"] != want[i].email || row["phone"] != want[i].phone {
					t.Errorf("users[%d] = %v; want created, imported, contacts %v", i, row, want[i])
				}
				ids = append(ids, row["id"].(string))
			}
		}}.run(t, e)
	_ = first
	g := userOf(t, scenario{method: "GET", path: "/v1/" + e.app.ID + "/users/" + ids[0], headers: auth, wantStatus: 200}.run(t, e))
	if g["status"] != "imported" || g["email_verified"] != true || g["phone_verified"] != false ||
		!jsonEqual(g["user_meta"], map[string]any{"first_name": "Grace", "age": 85}) {
		t.Errorf("imported user = %v; want status imported, e-mail verified, the metadata given", g)
	}
	listed := scenario{method: "GET", path: "/v1/" + e.app.ID + "/users?status=imported", headers: auth, wantStatus: 200}.run(t, e)
	if listed.body["total_count"] != float64(3) {
		t.Errorf("users with status imported = %v; want 3", listed.body["total_count"])
	}

	sameIDs := func(t *testing.T, r response, outcomes ...string) {
		rows := importedRows(t, r, len(outcomes))
		for i, row := range rows {
			if row["outcome"] != outcomes[i] || (i < len(ids) && row["id"] != ids[i]) {
				t.Errorf("users[%d] = %v; want %s with id %s", i, row, outcomes[i], ids[min(i, len(ids)-1)])
			}
		}
	}
	runScenarios(t, e, []scenario{
		{name: "the same batch again creates nothing and answers the same ids", method: "POST", path: e.importPath(), headers: auth,
			body: batch, wantStatus: 200, wantBody: map[string]any{"created": 0, "existing": 3},
			check: func(t *testing.T, r response) { sameIDs(t, r, "exists", "exists", "exists") }},
		{name: "an existing user found by either contact, written differently", method: "POST", path: e.importPath(), headers: auth,
			body: importBody(map[string]any{"identifier": "GRACE@example.com", "user_meta": map[string]any{"first_name": "Other"}},
				map[string]any{"identifier": "0014155552671"}, map[string]any{"phone": "+44 20 7946 0018"},
				map[string]any{"identifier": "ada@example.com", "user_meta": map[string]any{"first_name": "Ada"}}),
			wantStatus: 200, wantBody: map[string]any{"created": 1, "existing": 3}, events: []string{"user.created"},
			check: func(t *testing.T, r response) {
				sameIDs(t, r, "exists", "exists", "exists", "created")
				ids = append(ids, importedRows(t, r, 4)[3]["id"].(string))
			}},
		{name: "exists leaves the user unchanged", method: "GET", path: "/v1/" + e.app.ID + "/users/" + ids[0], headers: auth, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if m := userOf(t, r)["user_meta"]; !jsonEqual(m, map[string]any{"first_name": "Grace", "age": 85}) {
					t.Errorf("user_meta after a second import = %v; want it unchanged", m)
				}
			}},
	})

	// A user created otherwise (active) answers exists with its status.
	active := userOf(t, scenario{method: "POST", path: "/v1/" + e.app.ID + "/users", headers: auth,
		body: map[string]any{"identifier": "active@example.com"}, wantStatus: 200, events: []string{"user.created"}}.run(t, e))
	scenario{name: "a user created by the API is found too", method: "POST", path: e.importPath(), headers: auth,
		body: importBody(map[string]any{"email": "active@example.com"}), wantStatus: 200,
		check: func(t *testing.T, r response) {
			row := importedRows(t, r, 1)[0]
			if row["outcome"] != "exists" || row["id"] != active["id"] || row["status"] != "active" {
				t.Errorf("users[0] = %v; want exists, %v, active", row, active["id"])
			}
		}}.run(t, e)

	// Refused batches: every problem named, nothing written, no events.
	refused := func(name string, body any, want ...string) scenario {
		return scenario{name: name, method: "POST", path: e.importPath(), headers: auth, body: body, wantStatus: 400,
			wantCode: "invalid_request", check: func(t *testing.T, r response) {
				if got := rowErrors(t, r); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("details.rows = %q; want %q", got, want)
				}
			}}
	}
	runScenarios(t, e, []scenario{
		refused("invalid rows refuse the batch", importBody(
			map[string]any{"identifier": "new1@example.com"},
			map[string]any{"identifier": "not an address"},
			map[string]any{"email": "new2@example.com", "user_meta": map[string]any{"nickname": "x", "age": "old"}},
			map[string]any{"phone": "+14155552000", "email_verified": true},
			map[string]any{},
			map[string]any{"identifier": "a@example.com", "email": "b@example.com"},
		), "1 identifier invalid_identifier", "2 user_meta.age invalid_user_meta", "2 user_meta.nickname invalid_user_meta",
			"3 email_verified invalid_request", "4 identifier invalid_identifier", "5 email invalid_request"),
		refused("a contact twice in one batch", importBody(
			map[string]any{"identifier": "twin@example.com"},
			map[string]any{"email": "Twin@Example.com"},
			map[string]any{"phone": "+14155550100"},
			map[string]any{"email": "other@example.com", "phone": "+1 415 555 0100"},
		), "1 email duplicate_identifier", "3 phone duplicate_identifier"),
		refused("e-mail and phone of two different users", importBody(
			map[string]any{"email": "grace@example.com", "phone": "+14155552671"},
		), "0 phone identifier_conflict"),
	})
	for _, email := range []string{"new1@example.com", "new2@example.com", "twin@example.com", "other@example.com"} {
		if u, err := e.Users.Lookup(t.Context(), e.app, email); err != nil || u != nil {
			t.Errorf("Lookup(%s) after refused imports = %v, %v; want no user", email, u, err)
		}
	}

	// An imported user signs in by code and becomes active.
	runScenarios(t, e, []scenario{
		{name: "an imported user asks for a code", method: "POST", path: e.authPath("/otps/login"),
			body: map[string]any{"identifier": "ada@example.com"}, wantStatus: 200,
			events: []string{"verification.email.requested", "challenge.created"},
			check: func(t *testing.T, r response) {
				if r.str("user_id") != ids[3] {
					t.Errorf("user_id = %q; want the imported user %q", r.str("user_id"), ids[3])
				}
			}},
	})
	r := scenario{name: "the code signs the imported user in", method: "POST", path: e.authPath("/otps/verify"),
		body: map[string]any{"otp": e.code(t, "ada@example.com"), "user_id": ids[3]}, wantStatus: 200,
		events: []string{"verification.email.verified", "challenge.completed"}}.run(t, e)
	acc, _ := e.tokenSet(t, r, ids[3])
	me := userOf(t, scenario{method: "GET", path: e.authPath("/current_user"), headers: user(acc), wantStatus: 200}.run(t, e))
	if me["status"] != "active" || me["email_verified"] != true || !jsonEqual(me["meta"], map[string]any{"first_name": "Ada"}) {
		t.Errorf("current_user after the first sign-in = %v; want active, e-mail verified, the imported metadata", me)
	}
	scenario{name: "importing the user again answers exists, active", method: "POST", path: e.importPath(), headers: auth,
		body: importBody(map[string]any{"identifier": "ada@example.com"}), wantStatus: 200,
		check: func(t *testing.T, r response) {
			if row := importedRows(t, r, 1)[0]; row["outcome"] != "exists" || row["status"] != "active" || row["id"] != ids[3] {
				t.Errorf("users[0] = %v; want exists, active, %s", row, ids[3])
			}
		}}.run(t, e)
}

func testImportCredentials(t *testing.T, e *env) {
	ctx := t.Context()
	other := e.createApp(t, e.ws.ID, "Other", nil)
	otherSecret := e.appSecretFor(t, other.ID)
	ownKey, _, err := e.Tenants.CreateAPIKey(ctx, servertest.Operator, e.app.ID, "own")
	if err != nil {
		t.Fatalf("CreateAPIKey() error = %v", err)
	}
	e.remember(ownKey)
	viewer, err := e.Tenants.AddMember(ctx, servertest.Operator, e.ws.ID, "viewer@import.test", "Viewer", access.RoleMember)
	if err != nil {
		t.Fatalf("AddMember() error = %v", err)
	}
	viewerSecret := e.workspaceSecret(t, e.ws.ID, viewer.ID)
	one := func(email string) map[string]any { return importBody(map[string]any{"identifier": email}) }
	path := e.importPath()
	runScenarios(t, e, []scenario{
		{name: "no credentials", method: "POST", path: path, body: one("c1@example.com"), wantStatus: 401},
		{name: "a garbage secret", method: "POST", path: path, headers: bearer("not.a.token"), body: one("c1@example.com"), wantStatus: 401},
		{name: "another app's secret", method: "POST", path: path, headers: bearer(otherSecret), body: one("c1@example.com"), wantStatus: 403},
		{name: "another app's secret with a malformed body", method: "POST", path: path, headers: bearer(otherSecret),
			body: `{"users": 1}`, wantStatus: 403},
		{name: "a member's workspace secret may not create users", method: "POST", path: path, headers: bearer(viewerSecret),
			body: one("c1@example.com"), wantStatus: 403},
		// As on POST /v1/{app_id}/users: an app id is not probed, so an
		// unknown one answers as another tenant's does.
		{name: "an unknown app", method: "POST", path: "/v1/00000000-0000-7000-8000-000000000000/users/import",
			headers: bearer(e.appSecret), body: one("c1@example.com"), wantStatus: 403},
		{name: "an unknown app without credentials", method: "POST", path: "/v1/00000000-0000-7000-8000-000000000000/users/import",
			body: one("c1@example.com"), wantStatus: 401},
		{name: "the app's API key", method: "POST", path: path, headers: bearer(ownKey), body: one("bykey@example.com"),
			wantStatus: 200, wantBody: map[string]any{"created": 1}},
		{name: "a workspace owner's secret", method: "POST", path: path, headers: bearer(e.wsSecret), body: one("byws@example.com"),
			wantStatus: 200, wantBody: map[string]any{"created": 1}},
		{name: "the app's API secret", method: "POST", path: path, headers: bearer(e.appSecret), body: one("bysecret@example.com"),
			wantStatus: 200, wantBody: map[string]any{"created": 1}},
	})
	if u, err := e.Users.Lookup(ctx, e.app, "c1@example.com"); err != nil || u != nil {
		t.Errorf("Lookup(c1) after refused imports = %v, %v; want no user", u, err)
	}
}

func testImportLimits(t *testing.T, e *env) {
	auth := bearer(e.appSecret)
	rows := func(n int) map[string]any {
		users := make([]map[string]any, n)
		for i := range users {
			users[i] = map[string]any{"identifier": fmt.Sprintf("bulk%04d@example.com", i)}
		}
		return importBody(users...)
	}
	runScenarios(t, e, []scenario{
		{name: "no users", method: "POST", path: e.importPath(), headers: auth, body: importBody(), wantStatus: 400, wantCode: "invalid_request"},
		{name: "no users field", method: "POST", path: e.importPath(), headers: auth, body: map[string]any{}, wantStatus: 400, wantCode: "invalid_request"},
		{name: "1001 users", method: "POST", path: e.importPath(), headers: auth, body: rows(1001), wantStatus: 400, wantCode: "invalid_request"},
		{name: "an unknown field is refused, not ignored", method: "POST", path: e.importPath(), headers: auth,
			body:       importBody(map[string]any{"identifier": "x@example.com", "meta": map[string]any{"first_name": "X"}}),
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "a body over 1 MiB", method: "POST", path: e.importPath(), headers: auth,
			body:       importBody(map[string]any{"identifier": "big@example.com", "user_meta": map[string]any{"first_name": strings.Repeat("a", 1<<20)}}),
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: "body_too_large"},
		{name: "1000 users in one request", method: "POST", path: e.importPath(), headers: auth, body: rows(1000), wantStatus: 200,
			wantBody: map[string]any{"created": 1000, "existing": 0}},
		{name: "1000 users again", method: "POST", path: e.importPath(), headers: auth, body: rows(1000), wantStatus: 200,
			wantBody: map[string]any{"created": 0, "existing": 1000}},
	})
}
