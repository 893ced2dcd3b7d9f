package httpapi_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// TestReadyzFollowsTheStore: /readyz answers 503 once the database is gone,
// while /healthz still answers 200.
func TestReadyzFollowsTheStore(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, true)
		scenario{method: "GET", path: "/readyz", wantStatus: 200, wantBody: map[string]any{"status": "ready"}}.run(t, e)
		if err := db.Close(); err != nil {
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
	e := newEnv(t, storetest.Open(t, store.SQLite), false)
	runScenarios(t, e, []scenario{
		{name: "outbox", method: "GET", path: "/dev/outbox", wantStatus: 404, wantCode: "not_found"},
		{name: "outbox for one address", method: "GET", path: "/dev/outbox?to=dev%40example.com", wantStatus: 404, wantCode: "not_found"},
	})
	for _, rt := range e.api.Routes() {
		if strings.HasPrefix(rt.Path, "/dev/") {
			t.Errorf("Routes() has %s %s without development mode", rt.Method, rt.Path)
		}
	}
	if _, ok := e.api.OpenAPI().Paths["/dev/outbox"]; ok {
		t.Errorf("the OpenAPI document lists /dev/outbox without development mode")
	}
}
