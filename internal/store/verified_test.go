package store_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// TestCodeSignInWrites: a code sign-in takes its attempt with the user
// (TakeLatestCodeAttemptWithUser), then defers the completion and the
// verified contact (CompleteAttemptAndMarkVerified) and trusts
// AppUser.Verified for the user it wrote: for every status and contact,
// the row the commit leaves is exactly what Verified said, and the
// challenge is completed with its attempt given back.
func TestCodeSignInWrites(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, app := seed(t, db)
		now := t0.Add(time.Hour)
		i := 0
		for _, status := range []string{store.StatusPending, store.StatusImported, store.StatusActive, store.StatusInactive} {
			for _, sms := range []bool{false, true} {
				i++
				u := store.AppUser{ID: fmt.Sprintf("u%d", i), AppID: app.ID, UserID: fmt.Sprintf("b%d", i), Status: status,
					Email: fmt.Sprintf("u%d@example.com", i), Phone: fmt.Sprintf("+1555010%04d", i), PhoneVerified: i%4 == 0,
					Meta: []byte(`{}`), CreatedAt: t0, UpdatedAt: t0}
				ch := store.Challenge{ID: fmt.Sprintf("c%d", i), AppID: app.ID, AppUserID: u.ID, Purpose: "authenticate", Method: "email_otp",
					Recipient: u.Email, SecretHash: fmt.Sprintf("h%d", i), Status: store.ChallengePending, RemainingAttempts: 5, CreatedAt: t0, ExpiresAt: now.Add(time.Minute)}
				if sms {
					ch.Method, ch.Recipient = "sms_otp", u.Phone
				}
				err := db.Tx(ctx, func(tx *store.Tx) error {
					if err := tx.CreateBaseUser(ctx, store.BaseUser{ID: u.UserID, WorkspaceID: ws.ID, Email: u.Email, CreatedAt: t0}); err != nil {
						return err
					}
					if err := tx.CreateAppUser(ctx, u); err != nil {
						return err
					}
					return tx.CreateChallenge(ctx, ch)
				})
				if err != nil {
					t.Fatal(err)
				}
				var want store.AppUser
				err = db.Tx(ctx, func(tx *store.Tx) error {
					if err := tx.Deferred(nil).LockGuesses(ctx, u.ID); err != nil {
						return err
					}
					g, got, err := tx.TakeLatestCodeAttemptWithUser(ctx, app.ID, u.ID, "127.0.0.1", now, now.Add(-time.Hour))
					if err != nil {
						return err
					}
					if g.Challenge.ID != ch.ID || g.Challenge.RemainingAttempts != 4 {
						t.Errorf("%s: took %s with %d attempts left; want %s with 4", status, g.Challenge.ID, g.Challenge.RemainingAttempts, ch.ID)
					}
					stored, err := tx.GetAppUser(ctx, app.ID, u.ID)
					if err != nil {
						return err
					}
					if !reflect.DeepEqual(got, stored) {
						t.Errorf("%s: the take's user %+v; want the stored row %+v", status, got, stored)
					}
					want = got.Verified(!sms, sms, now)
					return tx.Deferred(nil).CompleteAttemptAndMarkVerified(ctx, ch.ID, app.ID, u.ID, !sms, sms, now)
				})
				if err != nil {
					t.Fatalf("%s: %v", status, err)
				}
				after, err := db.GetAppUser(ctx, app.ID, u.ID)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(after, want) {
					t.Errorf("%s, sms %v: the row after commit %+v; Verified said %+v", status, sms, after, want)
				}
				c, err := db.GetChallenge(ctx, app.ID, ch.ID)
				if err != nil {
					t.Fatal(err)
				}
				if c.Status != store.ChallengeCompleted || c.RemainingAttempts != 5 {
					t.Errorf("%s: challenge %s with %d attempts; want completed with 5", status, c.Status, c.RemainingAttempts)
				}
			}
		}
	})
}

// TestSignInUpdateIsHeapOnly: on PostgreSQL the writes every sign-in makes
// to its user (MarkUserVerified: the verified contact, the status,
// last_used_at; TouchAppUser: last_used_at) change no indexed column of
// app_users, so on a page with room each is a heap-only (HOT) update that
// adds no index entry (00030 dropped the index on last_used_at for this).
// An index that holds one of those columns makes this test fail.
func TestSignInUpdateIsHeapOnly(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		if db.Kind() != store.Postgres {
			t.Skip("heap-only updates are PostgreSQL's")
		}
		ctx := context.Background()
		ws, app := seed(t, db)
		u := seedUser(t, db, ws, app, "u1", "a@example.com")
		for name, write := range map[string]func(tx *store.Tx) error{
			"MarkUserVerified": func(tx *store.Tx) error {
				_, err := tx.MarkUserVerified(ctx, app.ID, u.ID, true, false, t0.Add(time.Hour))
				return err
			},
			"TouchAppUser": func(tx *store.Tx) error { return tx.TouchAppUser(ctx, app.ID, u.ID, t0.Add(2*time.Hour)) },
		} {
			err := db.Tx(ctx, func(tx *store.Tx) error {
				// The counters are the connection's, not yet reported: count
				// what this statement adds to them.
				all0, hot0, err := tx.Updates(ctx, "app_users")
				if err != nil {
					return err
				}
				if err := write(tx); err != nil {
					return err
				}
				all, hot, err := tx.Updates(ctx, "app_users")
				if err == nil && (all-all0 != 1 || hot-hot0 != 1) {
					t.Errorf("%s updated %d rows of app_users, %d of them heap-only; want 1 and 1 (an index holds a column it writes)",
						name, all-all0, hot-hot0)
				}
				return err
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	})
}
