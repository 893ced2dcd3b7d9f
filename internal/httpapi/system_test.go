package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestReadyzFollowsTheStore: /readyz answers 503 once the database is gone,
// while /healthz still answers 200.
func TestReadyzFollowsTheStore(t *testing.T) {
	forEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		scenario{method: "GET", path: "/readyz", wantStatus: 200, wantBody: map[string]any{"status": "ready"}}.run(t, e)
		if err := e.DB.Close(); err != nil {
			t.Fatalf("Close() error = %v", err)
		}
		r := scenario{method: "GET", path: "/readyz", wantStatus: 503}.run(t, e)
		if strings.Contains(string(r.raw), "closed") {
			t.Errorf("/readyz body = %s; want no driver detail", r.raw)
		}
		scenario{method: "GET", path: "/healthz", wantStatus: 200}.run(t, e)
	})
}

// TestDevOutboxNeedsDevMode: without development mode the outbox route does
// not exist at all.
func TestDevOutboxNeedsDevMode(t *testing.T) {
	e := newEnv(t, store.SQLite, false)
	runScenarios(t, e, []scenario{
		{name: "outbox", method: "GET", path: "/dev/outbox", wantStatus: 404, wantCode: "not_found"},
		{name: "outbox for one address", method: "GET", path: "/dev/outbox?to=dev%40example.com", wantStatus: 404, wantCode: "not_found"},
	})
	for _, rt := range e.API().Routes() {
		if strings.HasPrefix(rt.Path, "/dev/") {
			t.Errorf("Routes() has %s %s without development mode", rt.Method, rt.Path)
		}
	}
	if _, ok := e.API().OpenAPI().Paths["/dev/outbox"]; ok {
		t.Errorf("the OpenAPI document lists /dev/outbox without development mode")
	}
}

// TestRefusingPostgresAnswers503: a PostgreSQL server that refuses work
// (SQLSTATE class 08, 53, 55000, 57P0x: too many connections, shutting
// down, cannot connect now, …) answers 503 like an unreachable database, so
// the client SDK retries, and tells the caller nothing of the driver; any
// other database error stays a 500. The refusal is raised by a trigger on
// the statement the request runs.
func TestRefusingPostgresAnswers503(t *testing.T) {
	e := envOf(t, newSystem(t, store.Postgres, servertest.Options{Serve: true}), "Acme")
	exec := func(q string) {
		t.Helper()
		if _, err := e.DB.Pool().Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE FUNCTION refuse_workspaces() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`)
	exec(`CREATE TRIGGER refuse_workspaces BEFORE INSERT ON workspaces FOR EACH ROW EXECUTE FUNCTION refuse_workspaces()`)
	for _, tc := range []struct {
		code   string
		status int
	}{
		{"08006", 503}, // connection failure
		{"53300", 503}, // too many connections
		{"53100", 503}, // disk full
		{"55000", 503}, // object not in prerequisite state
		{"57P01", 503}, // admin shutdown
		{"57P02", 503}, // crash shutdown
		{"57P03", 503}, // cannot connect now
		{"42P01", 500}, // undefined table: a bug, not an outage
	} {
		exec(fmt.Sprintf(`CREATE OR REPLACE FUNCTION refuse_workspaces() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'refused by the test' USING ERRCODE = '%s'; END $$`, tc.code))
		r := e.do(t, "POST", "/v1/workspaces", bearer(e.wsSecret), map[string]any{"name": "Refused " + tc.code})
		checkInvariants(t, "POST", false, r)
		if r.status != tc.status || strings.Contains(string(r.raw), "refused") || strings.Contains(string(r.raw), tc.code) {
			t.Errorf("SQLSTATE %s: POST /v1/workspaces = %d %s; want %d without driver detail", tc.code, r.status, r.raw, tc.status)
		}
	}
}

// TestRootRedirectsToDocs: the server's address leads a browser to the API
// documentation (there is no console yet), and only the exact path does:
// every other unknown path still answers the JSON 404.
func TestRootRedirectsToDocs(t *testing.T) {
	forEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		testRootRedirectsToDocs(t, envOf(t, sys, "Acme"))
	})
}

func testRootRedirectsToDocs(t *testing.T, e *env) {
	get := noFollowGet(t)
	res := get(e.URL + "/")
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/v1/docs/" {
		t.Errorf("GET / = %d, Location %q; want 302 to /v1/docs/", res.StatusCode, res.Header.Get("Location"))
	}
	// Followed, it ends on the page (the client resolves the relative Location).
	scenario{method: "GET", path: "/", wantStatus: 200, notJSON: true, check: func(t *testing.T, r response) {
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(string(r.raw), "app.js") {
			t.Errorf("GET / followed = %q %.200s; want the docs page", ct, r.raw)
		}
	}}.run(t, e)
	runScenarios(t, e, []scenario{
		{name: "unknown path", method: "GET", path: "/nope", wantStatus: 404, wantCode: "not_found"},
		{name: "unknown nested path", method: "GET", path: "/a/b/", wantStatus: 404, wantCode: "not_found"},
		{name: "unknown v1 path", method: "GET", path: "/v1/", wantStatus: 404, wantCode: "not_found"},
		{name: "post to root", method: "POST", path: "/", wantStatus: 405, wantCode: "method_not_allowed"},
	})
}

// TestOpenAPIOverview: the document opens with the overview the docs page
// renders first, and documents GET / as the redirect it is.
func TestOpenAPIOverview(t *testing.T) {
	e := newEnv(t, store.SQLite, false)
	r := scenario{method: "GET", path: "/v1/openapi.json", wantStatus: 200}.run(t, e)
	var doc struct {
		Info struct {
			Description string `json:"description"`
		} `json:"info"`
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Headers map[string]any `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		t.Fatalf("decode /v1/openapi.json: %v", err)
	}
	for _, want := range []string{"## Credentials", "## Errors", "## Pagination", "## Rate limits",
		"Authorization: Bearer", "X-Authorization", "X-M2M-Token", "error_code", "user_meta_errors", "Retry-After"} {
		if !strings.Contains(doc.Info.Description, want) {
			t.Errorf("info.description lacks %q", want)
		}
	}
	root := doc.Paths["/"]["get"].Responses["302"]
	if _, ok := root.Headers["Location"]; !ok {
		t.Errorf("GET / in the document = %+v; want a 302 with its Location header", doc.Paths["/"])
	}
}
