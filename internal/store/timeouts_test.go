package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// openWith opens a migrated store of kind with opts, and says where.
func openWith(t *testing.T, kind string, opts store.Options) (*store.DB, string) {
	t.Helper()
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "gatehouse.db")
	if kind == store.Postgres {
		target = storetest.PostgresURL(t)
	}
	db, err := store.Open(ctx, kind, target, opts)
	if err != nil {
		t.Fatalf("Open(%s) error = %v", kind, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if kind == store.SQLite {
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	return db, target
}

// TestSessionBounds: every PostgreSQL session of the store's pool, in a
// transaction or not, runs with the statement, lock and idle-transaction
// timeouts of its Options (or their defaults); SQLite's writer and readers
// with its busy timeout.
func TestSessionBounds(t *testing.T) {
	for _, kind := range storetest.Kinds(t) {
		t.Run(kind, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				opts store.Options
				want map[string]string // PostgreSQL's SHOW
				busy int               // SQLite's busy_timeout, ms
			}{
				{"set", store.Options{MaxConns: 2, StatementTimeout: 1500 * time.Millisecond, LockTimeout: 250 * time.Millisecond,
					IdleInTransactionTimeout: 45 * time.Second},
					map[string]string{"statement_timeout": "1500ms", "lock_timeout": "250ms", "idle_in_transaction_session_timeout": "45s"}, 250},
				{"defaults", store.Options{MaxConns: 2},
					map[string]string{"statement_timeout": "10s", "lock_timeout": "5s", "idle_in_transaction_session_timeout": "30s"}, 5000},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ctx := context.Background()
					db, _ := openWith(t, kind, tc.opts)
					if kind == store.SQLite {
						w, r, err := db.BusyTimeouts(ctx)
						if err != nil || w != tc.busy || r != tc.busy {
							t.Errorf("busy_timeout = %d (writer), %d (reader), %v; want %d", w, r, err, tc.busy)
						}
						return
					}
					// Both connections of the pool at once, so neither is the other.
					for i := range 2 {
						c, err := db.Pool().Acquire(ctx)
						if err != nil {
							t.Fatalf("Acquire: %v", err)
						}
						defer c.Release()
						for name, want := range tc.want {
							var got string
							if err := c.QueryRow(ctx, "SHOW "+name).Scan(&got); err != nil || got != want {
								t.Errorf("connection %d: SHOW %s = %q, %v; want %q", i, name, got, err, want)
							}
						}
					}
				})
			}
		})
	}
	if t.Failed() {
		return
	}
	t.Run("postgres in a transaction", func(t *testing.T) {
		db, _ := openWith(t, store.Postgres, store.Options{StatementTimeout: 1234 * time.Millisecond})
		ctx := context.Background()
		err := db.Tx(ctx, func(tx *store.Tx) error {
			var got string
			if err := pgxTxOf(t, tx).QueryRow(ctx, "SHOW statement_timeout").Scan(&got); err != nil || got != "1234ms" {
				t.Errorf("SHOW statement_timeout in a transaction = %q, %v; want 1234ms", got, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestLockWaitTimesOut: a statement that waits for a lock another session
// holds fails with ErrTimeout once database.lock_timeout passes (PostgreSQL's
// lock_timeout, SQLite's busy timeout), and the store works once the lock
// is gone.
func TestLockWaitTimesOut(t *testing.T) {
	for _, kind := range storetest.Kinds(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			db, target := openWith(t, kind, store.Options{LockTimeout: 20 * time.Millisecond})
			seed(t, db)
			release := holdLock(t, kind, target)
			err := db.Tx(ctx, func(tx *store.Tx) error {
				_, err := tx.GetWorkspace(ctx, "ws1")
				if err == nil {
					err = tx.CreateWorkspace(ctx, store.Workspace{ID: "ws2", Name: "Other", Slug: "other", Settings: []byte(`{}`),
						UserInfoRequirement: "none", CreatedAt: t0, UpdatedAt: t0})
				}
				return err
			})
			release()
			if !errors.Is(err, store.ErrTimeout) || errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("a write while another session holds the lock = %v; want ErrTimeout", err)
			}
			if _, err := db.GetWorkspace(ctx, "ws2"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetWorkspace(ws2) after the timeout = %v; want ErrNotFound (nothing written)", err)
			}
			if _, err := db.GetWorkspace(ctx, "ws1"); err != nil {
				t.Errorf("GetWorkspace(ws1) after the lock is gone = %v", err)
			}
		})
	}
}

// holdLock makes another session hold what a new workspace needs: the
// workspaces table (PostgreSQL) or the file's write lock (SQLite).
func holdLock(t *testing.T, kind, target string) func() {
	t.Helper()
	ctx := context.Background()
	if kind == store.SQLite {
		// A second store on the same file stands for another process.
		other, err := store.Open(ctx, store.SQLite, target, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		held, done, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(finished)
			_ = other.Tx(ctx, func(tx *store.Tx) error {
				// The write lock is taken at BEGIN (IMMEDIATE).
				close(held)
				<-done
				return errors.New("roll back")
			})
		}()
		<-held
		return func() { close(done); <-finished; _ = other.Close() }
	}
	conn, err := pgx.Connect(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE workspaces IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	return func() { _ = tx.Rollback(ctx); _ = conn.Close(ctx) }
}

// TestStatementTimesOut: a PostgreSQL statement that runs past
// database.statement_timeout is cancelled and fails with ErrTimeout.
func TestStatementTimesOut(t *testing.T) {
	db, target := openWith(t, store.Postgres, store.Options{StatementTimeout: 20 * time.Millisecond, LockTimeout: time.Hour})
	seed(t, db)
	release := holdLock(t, store.Postgres, target) // the statement waits for it, until its time is up
	defer release()
	if _, err := db.GetWorkspace(context.Background(), "ws1"); !errors.Is(err, store.ErrTimeout) {
		t.Fatalf("GetWorkspace while the table is locked = %v; want ErrTimeout", err)
	}
}

// TestIdleTransactionEnded: a PostgreSQL transaction left idle past
// database.idle_in_transaction_session_timeout is ended by the server (its
// locks released), and the statement that comes too late fails with
// ErrTimeout.
func TestIdleTransactionEnded(t *testing.T) {
	db, target := openWith(t, store.Postgres, store.Options{IdleInTransactionTimeout: 20 * time.Millisecond})
	seed(t, db)
	ctx := context.Background()
	watcher, err := pgx.Connect(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(ctx)
	err = db.Tx(ctx, func(tx *store.Tx) error {
		var pid int
		if err := pgxTxOf(t, tx).QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			return err
		}
		// Idle in the transaction until the server has ended the session.
		for deadline := time.Now().Add(30 * time.Second); ; {
			var n int
			if err := watcher.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("session %d still open 30 s into an idle transaction", pid)
			}
			time.Sleep(5 * time.Millisecond) // real time: the server's timeout runs in it
		}
		_, err := tx.GetWorkspace(ctx, "ws1")
		return err
	})
	if !errors.Is(err, store.ErrTimeout) {
		t.Fatalf("a statement after the idle transaction was ended = %v; want ErrTimeout", err)
	}
	if _, err := db.GetWorkspace(ctx, "ws1"); err != nil {
		t.Errorf("GetWorkspace on another session afterwards = %v", err)
	}
}

// TestMigrateWaitsForTheMigrationLock: a replica whose sessions have tiny
// statement and lock timeouts still waits as long as another replica holds
// the queue's migration lock, then migrates: migrations run without those
// bounds.
func TestMigrateWaitsForTheMigrationLock(t *testing.T) {
	url := storetest.EmptyPostgresURL(t)
	ctx := context.Background()
	db, err := store.Open(ctx, store.Postgres, url, store.Options{StatementTimeout: time.Millisecond, LockTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	const riverLock = 7204651011 // withMigrationLock's key
	if _, err := other.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(riverLock)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- db.Migrate(ctx) }()
	// Wait until Migrate waits for the lock (or has failed).
	for deadline := time.Now().Add(60 * time.Second); ; {
		var waiting int
		if err := other.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Migrate returned %v while another session held the migration lock; want it to wait", err)
		case <-time.After(5 * time.Millisecond): // real time: the migrations run in it
		}
		if time.Now().After(deadline) {
			t.Fatal("Migrate never waited for the migration lock")
		}
	}
	if _, err := other.Exec(ctx, "SELECT pg_advisory_unlock($1)", int64(riverLock)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Migrate after the lock was released = %v", err)
	}
	check, err := store.Open(ctx, store.Postgres, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	if pending, err := check.Pending(ctx); err != nil || pending {
		t.Errorf("Pending() = %v, %v; want false", pending, err)
	}
}

// pgxTxOf is tx's pgx transaction, begun.
func pgxTxOf(t *testing.T, tx *store.Tx) pgx.Tx {
	t.Helper()
	p, err := tx.PgxTx(t.Context())
	if err != nil || p == nil {
		t.Fatalf("PgxTx = %v, %v", p, err)
	}
	return p
}
