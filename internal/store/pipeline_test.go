package store_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// errTaken is what the tests' translate makes of a conflict.
var errTaken = errors.New("taken")

func takenOr(err error) error {
	if errors.Is(err, store.ErrConflict) {
		return errTaken
	}
	return err
}

func workspace(id, slug string) store.Workspace {
	return store.Workspace{ID: id, Name: id, Slug: slug, CreatedAt: t0, UpdatedAt: t0}
}

// idle checks that every connection went back to the pool.
func idle(t *testing.T, db *store.DB) {
	t.Helper()
	for _, p := range db.PoolStats() {
		if p.InUse != 0 {
			t.Errorf("pool %s: %d connections still in use after the transactions", p.Pool, p.InUse)
		}
	}
}

// TestDeferredWrites: writes deferred on a transaction commit with it, are
// seen by its later reads, and their errors come back (translated) from
// the statement or the commit they went out with, the whole transaction
// rolled back, on both engines.
func TestDeferredWrites(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		if err := db.CreateWorkspace(ctx, workspace("taken", "taken")); err != nil {
			t.Fatal(err)
		}

		t.Run("commit", func(t *testing.T) {
			err := db.Tx(ctx, func(tx *store.Tx) error {
				for i := range 3 {
					if err := tx.Deferred(nil).CreateWorkspace(ctx, workspace(fmt.Sprint("c", i), fmt.Sprint("c", i))); err != nil {
						return err
					}
				}
				// A read sends them first, in its round trip.
				if _, err := tx.GetWorkspace(ctx, "c1"); err != nil {
					return fmt.Errorf("read after deferred writes: %w", err)
				}
				return tx.Deferred(nil).CreateWorkspace(ctx, workspace("c3", "c3"))
			})
			if err != nil {
				t.Fatalf("Tx = %v", err)
			}
			for i := range 4 {
				if _, err := db.GetWorkspace(ctx, fmt.Sprint("c", i)); err != nil {
					t.Errorf("workspace c%d after commit: %v", i, err)
				}
			}
		})

		t.Run("error at commit", func(t *testing.T) {
			err := db.Tx(ctx, func(tx *store.Tx) error {
				if err := tx.CreateWorkspace(ctx, workspace("a1", "a1")); err != nil {
					return err
				}
				return tx.Deferred(takenOr).CreateWorkspace(ctx, workspace("a2", "taken"))
			})
			if !errors.Is(err, errTaken) {
				t.Fatalf("Tx = %v; want the deferred write's conflict, translated", err)
			}
			if _, err := db.GetWorkspace(ctx, "a1"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the transaction's other write survived its failed commit: %v", err)
			}
		})

		// Only queued writes: PostgreSQL gets them without BEGIN and COMMIT,
		// as one implicit transaction, which must still be all or nothing.
		t.Run("error at commit, only queued writes", func(t *testing.T) {
			err := db.Tx(ctx, func(tx *store.Tx) error {
				if err := tx.Deferred(nil).CreateWorkspace(ctx, workspace("d1", "d1")); err != nil {
					return err
				}
				if err := tx.Deferred(takenOr).CreateWorkspace(ctx, workspace("d2", "taken")); err != nil {
					return err
				}
				return tx.Deferred(nil).CreateWorkspace(ctx, workspace("d3", "d3"))
			})
			if !errors.Is(err, errTaken) {
				t.Fatalf("Tx = %v; want the second write's conflict, translated", err)
			}
			for _, id := range []string{"d1", "d3"} {
				if _, err := db.GetWorkspace(ctx, id); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("workspace %s of the failed transaction: %v; want not found", id, err)
				}
			}
		})

		t.Run("error at the next statement", func(t *testing.T) {
			var writeErr, readErr error
			err := db.Tx(ctx, func(tx *store.Tx) error {
				// SQLite runs it at once; PostgreSQL with the read.
				if writeErr = tx.Deferred(takenOr).CreateWorkspace(ctx, workspace("b1", "taken")); writeErr != nil {
					return writeErr
				}
				_, readErr = tx.GetWorkspace(ctx, "taken")
				return readErr
			})
			if !errors.Is(err, errTaken) || !errors.Is(cmp.Or(writeErr, readErr), errTaken) {
				t.Fatalf("write = %v, read = %v, Tx = %v; want the write's conflict, translated, from it or the read, and from Tx",
					writeErr, readErr, err)
			}
			if db.Kind() == store.Postgres && writeErr != nil {
				t.Errorf("the deferred write failed when queued (%v); want it sent with the read", writeErr)
			}
		})

		t.Run("rolled back", func(t *testing.T) {
			boom := errors.New("boom")
			err := db.Tx(ctx, func(tx *store.Tx) error {
				if err := tx.Deferred(nil).CreateWorkspace(ctx, workspace("r1", "r1")); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("Tx = %v; want boom", err)
			}
			if _, err := db.GetWorkspace(ctx, "r1"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a deferred write of a rolled-back transaction is visible: %v", err)
			}
		})

		t.Run("nothing asked", func(t *testing.T) {
			if err := db.Tx(ctx, func(*store.Tx) error { return nil }); err != nil {
				t.Fatalf("empty Tx = %v", err)
			}
		})

		t.Run("pgx transaction", func(t *testing.T) {
			err := db.Tx(ctx, func(tx *store.Tx) error {
				if err := tx.Deferred(nil).CreateWorkspace(ctx, workspace("p1", "p1")); err != nil {
					return err
				}
				pg, err := tx.PgxTx(ctx)
				if err != nil || pg == nil {
					return err // SQLite: nil, nil
				}
				var n int
				if err := pg.QueryRow(ctx, "SELECT count(*) FROM workspaces WHERE id = 'p1'").Scan(&n); err != nil || n != 1 {
					t.Errorf("the pgx transaction sees %d deferred rows (%v); want 1", n, err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})

		// Every connection went back usable: a transaction after all the
		// failures works.
		idle(t, db)
		if err := db.Tx(ctx, func(tx *store.Tx) error {
			return tx.Deferred(nil).CreateWorkspace(ctx, workspace("last", "last"))
		}); err != nil {
			t.Fatalf("Tx after the failures = %v", err)
		}
		if _, err := db.GetWorkspace(ctx, "last"); err != nil {
			t.Error(err)
		}
		idle(t, db)
	})
}
