package store_test

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// TestQueuedMessagesStayInline: a sealed e-mail of a few kilobytes (its
// HTML part) stays in its row on PostgreSQL, with nothing written out of
// line (00016_inline_messages), and reads back whole.
func TestQueuedMessagesStayInline(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		_, app := seed(t, db)
		sealed := make([]byte, 6000) // random: sealed bytes do not compress
		_, _ = rand.Read(sealed)
		m := store.QueuedMessage{ID: "m1", AppID: app.ID, What: "login_code", Channel: "email", Recipient: "a***@example.com",
			Sealed: sealed, Attempts: 1, MaxAttempts: 10, RunAt: t0, CreatedAt: t0}
		if err := db.Tx(ctx, func(tx *store.Tx) error { return tx.Deferred(nil).QueueMessage(ctx, m) }); err != nil {
			t.Fatal(err)
		}
		due, err := db.ClaimDueMessages(ctx, t0.Add(1), t0.Add(60), 10)
		if err != nil || len(due) != 1 || string(due[0].Sealed) != string(sealed) {
			t.Fatalf("ClaimDueMessages = %d rows, %v; want the message back whole", len(due), err)
		}
		if db.Kind() != store.Postgres {
			return
		}
		var toast int64
		if err := db.Pool().QueryRow(ctx, `SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE relname = 'queued_messages'`).Scan(&toast); err != nil {
			t.Fatal(err)
		}
		if toast != 0 {
			t.Errorf("queued_messages' TOAST table holds %d bytes after one 6 KB message; want none (the row inline)", toast)
		}
	})
}
