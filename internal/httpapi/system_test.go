package httpapi_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestReadyzFollowsTheStore: /readyz answers 503 once the database is gone,
// while /healthz still answers 200.
func TestReadyzFollowsTheStore(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
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
