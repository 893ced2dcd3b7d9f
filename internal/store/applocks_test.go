package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestSignInLeavesTheAppRowAlone: a known user's sign-in (its challenge,
// the take and completion of an attempt, its session and refresh token)
// takes no lock on the app's row, which every concurrent sign-in of the app
// would otherwise lock too (on PostgreSQL a foreign key check's shared key
// lock, held as a multixact of all of them). And without those keys an
// app's deletion still removes its challenges and sessions, through its
// users.
func TestSignInLeavesTheAppRowAlone(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, app := seed(t, db)
		u := seedUser(t, db, ws, app, "u1", "known@example.com")
		c := store.Challenge{ID: "c1", AppID: app.ID, AppUserID: u.ID, Purpose: "authenticate", Method: "email_otp",
			Recipient: u.Email, Status: "pending", SecretHash: "s1", RemainingAttempts: 3, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		s := store.Session{ID: "s1", AppID: app.ID, AppUserID: u.ID, Method: "email_otp", CreatedAt: t0, LastActiveAt: t0, ExpiresAt: t0.Add(time.Hour)}
		r := store.RefreshToken{ID: "r1", SessionID: s.ID, TokenHash: "h1", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if err := tx.SupersedeAndCreateChallenge(ctx, c, []string{"email_otp", "sms_otp"}); err != nil {
				return err
			}
			if err := tx.LockGuesses(ctx, u.ID); err != nil {
				return err
			}
			if _, _, err := tx.TakeLatestCodeAttemptWithUser(ctx, app.ID, u.ID, "ip", t0, t0.Add(-time.Hour)); err != nil {
				return err
			}
			if err := tx.CompleteAttemptAndMarkVerified(ctx, c.ID, app.ID, u.ID, true, false, t0); err != nil {
				return err
			}
			if err := tx.CreateSessionWithRefresh(ctx, s, r); err != nil {
				return err
			}
			if db.Kind() != store.Postgres {
				return nil // one writer: no row locks to look at
			}
			// Still inside the sign-in's transaction: its locks are held.
			if err := db.LockAppRowNoWait(ctx, app.ID); err != nil {
				t.Errorf("the app's row could not be locked while a sign-in was under way (%v): the sign-in holds a lock on it", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}

		if err := db.DeleteApp(ctx, ws.ID, app.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.GetChallenge(ctx, app.ID, c.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the deleted app's challenge: GetChallenge = %v; want ErrNotFound", err)
		}
		if _, _, err := db.GetSessionWithUser(ctx, app.ID, s.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the deleted app's session: GetSessionWithUser = %v; want ErrNotFound", err)
		}
		if n, err := db.CountRows(ctx, "refresh_tokens"); err != nil || n != 0 {
			t.Errorf("refresh tokens left after the app's deletion: %d (%v); want 0", n, err)
		}
	})
}

// TestSignUpLeavesTheWorkspaceRowAlone: a sign-up (a new person and its
// first app user) takes no lock on the workspace's row, which every
// concurrent sign-up in the workspace would otherwise lock too. It still
// locks the app's row (the app user's key to its app, which keeps an app's
// deletion from missing a user being signed up), as the test checks first.
func TestSignUpLeavesTheWorkspaceRowAlone(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		if db.Kind() != store.Postgres {
			t.Skip("one writer: no row locks to look at")
		}
		ctx := context.Background()
		ws, app := seed(t, db)
		b := store.BaseUser{ID: "b-new", WorkspaceID: ws.ID, Email: "new@example.com", CreatedAt: t0}
		u := store.AppUser{ID: "u-new", AppID: app.ID, UserID: b.ID, Status: store.StatusActive, Email: b.Email, CreatedAt: t0, UpdatedAt: t0}
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if err := tx.CreateBaseUser(ctx, b); err != nil {
				return err
			}
			if err := tx.CreateAppUser(ctx, u); err != nil {
				return err
			}
			if err := db.LockAppRowNoWait(ctx, app.ID); !lockNotAvailable(err) {
				t.Errorf("locking the app's row while a sign-up was under way: %v; want lock_not_available (the test must see a key's lock)", err)
			}
			if err := db.LockRowNoWait(ctx, "workspaces", ws.ID); err != nil {
				t.Errorf("the workspace's row could not be locked while a sign-up was under way (%v): the sign-up holds a lock on it", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// lockNotAvailable reports whether err is PostgreSQL's lock_not_available
// (55P03), what a NOWAIT lock on a row another transaction locks fails with.
func lockNotAvailable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}
