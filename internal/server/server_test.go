package server_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestServeAnswers: the assembled system serves its API on both engines,
// reports ready, and its fixtures go through the real services.
func TestServeAnswers(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ws, _ := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		if app.WorkspaceID != ws.ID {
			t.Fatalf("App(...).WorkspaceID = %q; want %q", app.WorkspaceID, ws.ID)
		}
		for _, path := range []string{"/readyz", "/v1/apps/" + app.ID} {
			res, err := http.Get(sys.URL + path)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("GET %s = %d; want 200", path, res.StatusCode)
			}
		}
		st, err := sys.MigrationStatus(context.Background())
		if err != nil {
			t.Fatalf("MigrationStatus: %v", err)
		}
		sets := map[string]int{}
		for _, m := range st {
			if !m.Applied {
				t.Errorf("migration %s %s is not applied", m.Set, m.Name)
			}
			sets[m.Set]++
		}
		if sets["gatehouse"] == 0 || sets["river"] == 0 {
			t.Errorf("MigrationStatus lists %v; want both sets", sets)
		}
	})
}

// TestServeReturnsWhenItCannotServe: when the listener fails, Serve stops
// its own background loops and workers and returns the error, rather than
// waiting for a context that nobody will cancel.
func TestServeReturnsWhenItCannotServe(t *testing.T) {
	sys := servertest.New(t, store.SQLite, servertest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_ = ln.Close() // Accept fails at once
	done := make(chan error, 1)
	go func() { done <- sys.Serve(context.Background(), ln) }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("Serve on a closed listener = nil; want its error")
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Serve on a closed listener did not return")
	}
}
