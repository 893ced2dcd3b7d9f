package httpapi_test

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// TestTimeoutsAnswer503: a request that runs out of time answers 503
// {error, error_code: timeout} with Retry-After, and changes nothing. The
// waits are real: the workspace's row (PostgreSQL) or the database's write
// lock (SQLite) is held by another session while PATCH /v1/workspaces/{id}
// needs it, until a bound passes; the log line names which bound it was.
func TestTimeoutsAnswer503(t *testing.T) {
	const long = "1h" // a bound that must not be the one that ends the wait
	tests := []struct {
		name     string
		kind     string
		settings map[string]string
		hold     func(t *testing.T, e *env) (release func())
		cause    string // in the "request timed out" log line
	}{
		{"postgres lock_timeout", store.Postgres, map[string]string{"GATEHOUSE_DATABASE_LOCK_TIMEOUT": "50ms"},
			holdWorkspaceRow, "SQLSTATE 55P03"},
		// 500 ms, not less: the bound also applies to the server's start-up
		// statements, which took over 50 ms on a loaded CI box.
		{"postgres statement_timeout", store.Postgres, map[string]string{"GATEHOUSE_DATABASE_STATEMENT_TIMEOUT": "500ms",
			"GATEHOUSE_DATABASE_LOCK_TIMEOUT": long}, holdWorkspaceRow, "SQLSTATE 57014"},
		{"postgres request deadline", store.Postgres, map[string]string{"GATEHOUSE_HTTP_REQUEST_TIMEOUT": "250ms",
			"GATEHOUSE_DATABASE_STATEMENT_TIMEOUT": long, "GATEHOUSE_DATABASE_LOCK_TIMEOUT": long}, holdWorkspaceRow, "context deadline exceeded"},
		{"sqlite busy_timeout", store.SQLite, map[string]string{"GATEHOUSE_DATABASE_LOCK_TIMEOUT": "50ms"},
			holdSQLiteWriteLock, "SQLITE_BUSY"},
		{"sqlite request deadline", store.SQLite, map[string]string{"GATEHOUSE_HTTP_REQUEST_TIMEOUT": "250ms",
			"GATEHOUSE_DATABASE_LOCK_TIMEOUT": long}, holdStoreWriter, "context deadline exceeded"},
	}
	kinds := storetest.Kinds(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(strings.Join(kinds, " "), tc.kind) {
				t.Skipf("%s is not tested here", tc.kind)
			}
			sys := newSystem(t, tc.kind, servertest.Options{Serve: true, Settings: tc.settings})
			e := envOf(t, sys, "Acme")
			path := "/v1/workspaces/" + e.ws.ID
			release := tc.hold(t, e)
			r := e.do(t, "PATCH", path, bearer(e.wsSecret), map[string]any{"name": "Renamed"})
			release()
			checkInvariants(t, "PATCH", false, r)
			if r.status != 503 || r.str("error_code") != "timeout" || r.str("error") == "" {
				t.Fatalf("PATCH %s while the row is held = %d %s; want 503 with error_code timeout", path, r.status, r.raw)
			}
			if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
				t.Errorf("Retry-After = %q; want a number of seconds", r.header.Get("Retry-After"))
			}
			if strings.Contains(string(r.raw), "SQLSTATE") || strings.Contains(string(r.raw), "deadline") {
				t.Errorf("body = %s; want no driver detail", r.raw)
			}
			// The log names the bound: on the request's own line, or, when the
			// job queue's polls met the same held lock first and the outage
			// watch found the database not answering, on its one "database
			// unreachable" line, which then leaves the request's line out on
			// purpose (a timeout during an outage is counted, not logged).
			if lines := sys.Logs.Lines(`"request timed out"`, tc.cause); len(lines) == 0 &&
				len(sys.Logs.Lines(`"database unreachable`, tc.cause)) == 0 {
				t.Errorf("no \"request timed out\" or \"database unreachable\" log line names %q; log:\n%s", tc.cause, sys.Logs.String())
			}
			// Nothing was half-written, and the next request is served.
			got := e.do(t, "GET", path, bearer(e.wsSecret), nil)
			if name, _ := got.obj("workspace")["name"].(string); got.status != 200 || name != "Acme" {
				t.Errorf("GET %s after the timeout = %d %s; want 200 with the name unchanged", path, got.status, got.raw)
			}
		})
	}
}

// holdWorkspaceRow locks the workspace's row from a session of its own (as
// another request's transaction would) until release.
func holdWorkspaceRow(t *testing.T, e *env) func() {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.Config.Database.URL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	if _, err := tx.Exec(ctx, `SELECT id FROM workspaces WHERE id = $1 FOR UPDATE`, e.ws.ID); err != nil {
		t.Fatalf("lock the workspace: %v", err)
	}
	return func() {
		_ = tx.Rollback(ctx)
		_ = conn.Close(ctx)
	}
}

// holdSQLiteWriteLock takes the database file's write lock from another
// connection (as a command run beside the server would) until release.
func holdSQLiteWriteLock(t *testing.T, e *env) func() {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(e.Config.Database.URL, "sqlite:"))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatalf("conn: %v", err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("BEGIN IMMEDIATE: %v", err)
	}
	return func() {
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		_ = conn.Close()
		_ = db.Close()
	}
}

// holdStoreWriter holds the server's own SQLite writer connection in a
// transaction until release, so that the request queues for it.
func holdStoreWriter(t *testing.T, e *env) func() {
	t.Helper()
	held, done := make(chan struct{}), make(chan struct{})
	finished := make(chan error, 1)
	go func() {
		finished <- e.DB.Tx(context.Background(), func(*store.Tx) error {
			close(held)
			<-done
			return nil
		})
	}()
	<-held
	return func() {
		close(done)
		if err := <-finished; err != nil {
			t.Errorf("the holding transaction: %v", err)
		}
	}
}
