package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// TestSparseUniqueKeys: a challenge's poll handle and short link and a
// user's passkey handle stay unique, while the rows without one (most
// challenges, most users) never collide; on PostgreSQL their unique indexes
// hold only the rows that have a value (00028), so a code sign-in writes no
// entry into them.
func TestSparseUniqueKeys(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, app := seed(t, db)
		seedUser(t, db, ws, app, "u1", "u1@example.com")
		seedUser(t, db, ws, app, "u2", "u2@example.com")
		challenge := func(id, user, poll, short string) error {
			return db.CreateChallenge(ctx, store.Challenge{ID: id, AppID: app.ID, AppUserID: user, Purpose: "authenticate", Method: "email_otp",
				Recipient: user + "@example.com", Status: "pending", SecretHash: "secret-" + id, PollHash: poll, ShortHash: short,
				RemainingAttempts: 3, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
		}
		// Two without a poll handle or short link, then one with both.
		for _, err := range []error{challenge("c1", "u1", "", ""), challenge("c2", "u2", "", ""), challenge("c3", "u1", "p", "s")} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := challenge("c4", "u2", "p", ""); !errors.Is(err, store.ErrConflict) {
			t.Errorf("a second challenge with poll handle p: %v; want ErrConflict", err)
		}
		if err := challenge("c5", "u2", "q", "s"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("a second challenge with short link s: %v; want ErrConflict", err)
		}
		if _, err := db.EnsureWebauthnHandle(ctx, "u1", []byte("h")); err != nil {
			t.Fatal(err)
		}
		if _, err := db.EnsureWebauthnHandle(ctx, "u2", []byte("h")); !errors.Is(err, store.ErrConflict) {
			t.Errorf("a second user with passkey handle h: %v; want ErrConflict", err)
		}

		if db.Kind() != store.Postgres {
			return
		}
		for table, columns := range map[string][]string{"challenges": {"poll_hash", "short_hash"}, "app_users": {"webauthn_handle"}} {
			defs, err := db.IndexDefs(ctx, table)
			if err != nil {
				t.Fatal(err)
			}
			for _, col := range columns {
				found := false
				for _, def := range defs {
					if !strings.Contains(def, "USING btree ("+col+")") {
						continue
					}
					found = true
					if !strings.Contains(def, "UNIQUE") || !strings.Contains(def, "WHERE ("+col+" IS NOT NULL)") {
						t.Errorf("%s: %s; want a unique index of the rows with a %s only", table, def, col)
					}
				}
				if !found {
					t.Errorf("%s: no index on %s (%v)", table, col, defs)
				}
			}
		}
	})
}
