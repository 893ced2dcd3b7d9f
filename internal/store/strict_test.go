package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestStrictTxRefusesASecondConnection: in strict mode (the suites' tripwire
// for issue 22's pool deadlock) a statement or a transaction asked of the
// pool by the goroutine that holds a transaction fails at once with
// ErrSecondConnection, while other goroutines, and the same one after the
// transaction ends, use the pool as usual. Without strict mode the same
// calls succeed, so the suites' silence means something.
func TestStrictTxRefusesASecondConnection(t *testing.T) {
	for _, kind := range []string{store.SQLite, store.Postgres} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			strict, _ := openWith(t, kind, store.Options{MaxConns: 4, StrictTx: true})
			err := strict.Tx(ctx, func(tx *store.Tx) error {
				if _, err := tx.ListWorkspaces(ctx); err != nil {
					t.Errorf("a read on the transaction: %v", err)
				}
				if _, err := strict.ListWorkspaces(ctx); !errors.Is(err, store.ErrSecondConnection) {
					t.Errorf("a pool read inside the transaction = %v; want ErrSecondConnection", err)
				}
				if _, err := strict.AccessTokenAlgs(ctx); !errors.Is(err, store.ErrSecondConnection) {
					t.Errorf("a pool row read inside the transaction = %v; want ErrSecondConnection", err)
				}
				nested := strict.Tx(ctx, func(*store.Tx) error { return nil })
				if !errors.Is(nested, store.ErrSecondConnection) {
					t.Errorf("a nested transaction = %v; want ErrSecondConnection", nested)
				}
				other := make(chan error, 1)
				go func() {
					_, err := strict.ListWorkspaces(ctx)
					other <- err
				}()
				if err := <-other; err != nil {
					t.Errorf("another goroutine's pool read during the transaction: %v", err)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Tx: %v", err)
			}
			if _, err := strict.ListWorkspaces(ctx); err != nil {
				t.Errorf("a pool read after the transaction: %v", err)
			}

			lax, _ := openWith(t, kind, store.Options{MaxConns: 4})
			err = lax.Tx(ctx, func(*store.Tx) error {
				_, err := lax.ListWorkspaces(ctx)
				return err
			})
			if err != nil {
				t.Errorf("without StrictTx, a pool read inside a transaction = %v; want it served", err)
			}
		})
	}
}
