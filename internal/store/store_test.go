package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

var t0 = time.Date(2026, 11, 21, 8, 30, 15, 123456789, time.UTC)

func seed(t *testing.T, db *store.DB) (store.Workspace, store.App) {
	t.Helper()
	ctx := context.Background()
	ws := store.Workspace{ID: "ws1", Name: "Acme", Slug: "acme", Settings: []byte(`{"onboarding":{"fullName":true}}`),
		PublicSignup: true, UserInfoRequirement: "none", CreatedAt: t0, UpdatedAt: t0}
	if err := db.CreateWorkspace(ctx, ws); err != nil {
		t.Fatalf("CreateWorkspace: %v", err)
	}
	app := store.App{ID: "app1", WorkspaceID: "ws1", Name: "Demo", Slug: "demo", Origin: "http://localhost:3000",
		AllowedOrigins: []string{"https://a.example"}, PublicSignup: true, EmailAuthType: "magic", AutoRefresh: true,
		AccessExpiration: 900, RefreshExpiration: 86400, MagicLinkExpiration: 600,
		AllowedIdentifiers: []string{"email", "phone"}, MetaSchema: []byte(`[{"field_name":"first_name"}]`),
		CreatedAt: t0, UpdatedAt: t0}
	if err := db.CreateApp(ctx, app); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
	return ws, app
}

// seedUser stores an active app user of app with e-mail email, and its person.
func seedUser(t *testing.T, db *store.DB, ws store.Workspace, app store.App, id, email string) store.AppUser {
	t.Helper()
	ctx := context.Background()
	b := store.BaseUser{ID: "b-" + id, WorkspaceID: ws.ID, Email: email, CreatedAt: t0}
	u := store.AppUser{ID: id, AppID: app.ID, UserID: b.ID, Status: store.StatusActive, Email: email, CreatedAt: t0, UpdatedAt: t0}
	if err := db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateBaseUser(ctx, b); err != nil {
			return err
		}
		return tx.CreateAppUser(ctx, u)
	}); err != nil {
		t.Fatalf("seedUser(%s): %v", id, err)
	}
	return u
}

func TestRoundTrip(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, app := seed(t, db)
		gotWS, err := db.GetWorkspace(ctx, ws.ID)
		if err != nil {
			t.Fatalf("GetWorkspace: %v", err)
		}
		if !gotWS.CreatedAt.Equal(t0.Truncate(time.Microsecond)) || gotWS.CreatedAt.Location() != time.UTC {
			t.Errorf("CreatedAt = %v; want %v UTC", gotWS.CreatedAt, t0.Truncate(time.Microsecond))
		}
		if !gotWS.PublicSignup || gotWS.Personal {
			t.Errorf("booleans = %v/%v; want true/false", gotWS.PublicSignup, gotWS.Personal)
		}
		gotApp, err := db.GetApp(ctx, app.ID)
		if err != nil {
			t.Fatalf("GetApp: %v", err)
		}
		if fmt.Sprint(gotApp.AllowedOrigins) != "[https://a.example]" || fmt.Sprint(gotApp.RequiredIdentifiers) != "[]" {
			t.Errorf("slices = %v %v", gotApp.AllowedOrigins, gotApp.RequiredIdentifiers)
		}
		if gotApp.AccessExpiration != 900 || !gotApp.AutoRefresh {
			t.Errorf("GetApp = %+v", gotApp)
		}
		if _, err := db.GetApp(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetApp(nope) err = %v; want ErrNotFound", err)
		}
		if err := db.CreateWorkspace(ctx, store.Workspace{ID: "ws2", Name: "x", Slug: "acme", CreatedAt: t0, UpdatedAt: t0}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("duplicate slug err = %v; want ErrConflict", err)
		}
		if gotApp.TestIdentities {
			t.Errorf("TestIdentities = true on an app created without; want false")
		}
		gotApp.Name, gotApp.UpdatedAt, gotApp.TestIdentities = "Renamed", t0.Add(time.Hour), true
		if err := db.UpdateApp(ctx, gotApp); err != nil {
			t.Fatalf("UpdateApp: %v", err)
		}
		if a, _ := db.GetApp(ctx, app.ID); a.Name != "Renamed" || !a.UpdatedAt.Equal(t0.Add(time.Hour).Truncate(time.Microsecond)) || !a.TestIdentities {
			t.Errorf("after update = %q %v test_identities=%v", a.Name, a.UpdatedAt, a.TestIdentities)
		}
	})
}

func TestUsers(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, app := seed(t, db)
		for i := range 30 {
			err := db.Tx(ctx, func(tx *store.Tx) error {
				b := store.BaseUser{ID: fmt.Sprintf("b%02d", i), WorkspaceID: ws.ID, Email: fmt.Sprintf("u%02d@example.com", i), CreatedAt: t0}
				if err := tx.CreateBaseUser(ctx, b); err != nil {
					return err
				}
				return tx.CreateAppUser(ctx, store.AppUser{ID: fmt.Sprintf("u%02d", i), AppID: app.ID, UserID: b.ID,
					Status: store.StatusActive, Email: b.Email, Meta: []byte(`{"first_name":"Ada"}`),
					CreatedAt: t0.Add(time.Duration(i) * time.Second), UpdatedAt: t0})
			})
			if err != nil {
				t.Fatalf("create user %d: %v", i, err)
			}
		}
		err := db.CreateAppUser(ctx, store.AppUser{ID: "dup", AppID: app.ID, UserID: "b00", Status: "active", Email: "u00@example.com", CreatedAt: t0, UpdatedAt: t0})
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("duplicate e-mail err = %v; want ErrConflict", err)
		}
		page, total, err := db.ListAppUsers(ctx, app.ID, store.UserFilter{}, 10, 10)
		if err != nil {
			t.Fatalf("ListAppUsers: %v", err)
		}
		if total != 30 || len(page) != 10 || page[0].ID != "u19" {
			t.Errorf("page = %d users (first %q), total %d; want 10 (u19), 30", len(page), page[0].ID, total)
		}
		got, total, err := db.ListAppUsers(ctx, app.ID, store.UserFilter{Email: "U2"}, 100, 0)
		if err != nil || total != 10 || len(got) != 10 {
			t.Errorf("email filter = %d/%d, %v; want 10", len(got), total, err)
		}
		before := t0.Add(3 * time.Second)
		if _, total, _ := db.ListAppUsers(ctx, app.ID, store.UserFilter{CreatedBefore: &before}, 100, 0); total != 3 {
			t.Errorf("created_before total = %d; want 3", total)
		}
		if _, total, _ := db.ListAppUsers(ctx, app.ID, store.UserFilter{Email: "%"}, 100, 0); total != 0 {
			t.Errorf("LIKE wildcard not escaped: total = %d", total)
		}
		u, err := db.SetAppUserStatus(ctx, app.ID, "u05", store.StatusInactive, t0.Add(time.Minute))
		if err != nil || u.Status != store.StatusInactive || u.Email != "u05@example.com" || u.Phone != "" {
			t.Errorf("SetAppUserStatus = %+v, %v", u, err)
		}
		if _, err := db.SetAppUserStatus(ctx, "other", "u05", "active", t0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("status on other app err = %v; want ErrNotFound", err)
		}
		f, err := db.FindAppUser(ctx, app.ID, "u07@example.com", "")
		if err != nil || f.ID != "u07" || string(f.Meta) == "" {
			t.Errorf("FindAppUser = %+v, %v", f, err)
		}
		if err := db.DeleteAppUser(ctx, app.ID, "u07"); err != nil {
			t.Fatalf("DeleteAppUser: %v", err)
		}
		if _, err := db.GetAppUser(ctx, app.ID, "u07"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted user err = %v", err)
		}
	})
}

func TestTxRollback(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		boom := errors.New("boom")
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if err := tx.CreateWorkspace(ctx, store.Workspace{ID: "w", Name: "n", Slug: "s", CreatedAt: t0, UpdatedAt: t0}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Tx err = %v; want boom", err)
		}
		if _, err := db.GetWorkspace(ctx, "w"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("rolled-back workspace is visible: %v", err)
		}
	})
}

// TestConcurrentWrites shows that concurrent transactions on one store neither
// fail with "database is locked" on SQLite nor lose writes.
func TestConcurrentWrites(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		seed(t, db)
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 40 {
			wg.Go(func() {
				errs <- db.Tx(ctx, func(tx *store.Tx) error {
					return tx.CreateMember(ctx, store.Member{ID: fmt.Sprint("m", i), WorkspaceID: "ws1", Email: fmt.Sprintf("m%d@x.io", i), Role: "member", CreatedAt: t0, UpdatedAt: t0})
				})
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent tx: %v", err)
			}
		}
		ms, err := db.ListMembers(ctx, "ws1")
		if err != nil || len(ms) != 40 {
			t.Errorf("members = %d, %v; want 40", len(ms), err)
		}
	})
}

func TestSecretsAndKeys(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		seed(t, db)
		if err := db.CreateMember(ctx, store.Member{ID: "m1", WorkspaceID: "ws1", Email: "o@x.io", Role: "owner", CreatedAt: t0, UpdatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateAPISecret(ctx, store.APISecret{ID: "s1", WorkspaceID: "ws1", MemberID: "m1", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateAPISecret(ctx, store.APISecret{ID: "s2", AppID: "app1", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		s, err := db.GetAPISecret(ctx, "s1")
		if err != nil || s.MemberRole != "owner" || s.RevokedAt != nil || s.AppID != "" {
			t.Errorf("GetAPISecret = %+v, %v", s, err)
		}
		if err := db.RevokeAPISecret(ctx, "s2", t0); err != nil {
			t.Fatal(err)
		}
		if s, _ := db.GetAPISecret(ctx, "s2"); s.RevokedAt == nil || s.AppID != "app1" {
			t.Errorf("revoked secret = %+v", s)
		}
		if err := db.CreateAPISecret(ctx, store.APISecret{ID: "bad", CreatedAt: t0}); err == nil {
			t.Errorf("secret with neither app nor workspace was accepted")
		}
		k := store.APIKey{ID: "k1", AppID: "app1", Nickname: "ci", KeyHash: "h1", Last4: "abcd", CreatedAt: t0}
		if err := db.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		if got, err := db.GetAPIKeyByHash(ctx, "h1"); err != nil || got.ID != "k1" {
			t.Errorf("GetAPIKeyByHash = %+v, %v", got, err)
		}
		if got, err := db.RevokeAPIKey(ctx, "app1", "k1", t0); err != nil || got.RevokedAt == nil {
			t.Errorf("RevokeAPIKey = %+v, %v", got, err)
		}
		if _, err := db.RevokeAPIKey(ctx, "other", "k1", t0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("revoke on other app err = %v", err)
		}
		// An RS256 key made first stays active: retiring is per algorithm.
		if err := db.InsertSigningKey(ctx, store.SigningKey{ID: "kR", Alg: "RS256", PrivateSealed: []byte{3}, Status: store.KeyActive, CreatedAt: t0.Add(-time.Second)}); err != nil {
			t.Fatal(err)
		}
		for i, id := range []string{"kA", "kB"} {
			err := db.InsertSigningKey(ctx, store.SigningKey{ID: id, Alg: "ES256", PrivateSealed: []byte{1, 2, byte(i)}, Status: store.KeyActive, CreatedAt: t0.Add(time.Duration(i) * time.Second)})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := db.RetireSigningKeys(ctx, "kB", "ES256", t0, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		keys, err := db.ListSigningKeys(ctx)
		if err != nil || len(keys) != 3 || keys[0].ID != "kB" || keys[0].Status != store.KeyActive || keys[1].Status != store.KeyRetired || keys[1].PublishUntil == nil ||
			keys[2].ID != "kR" || keys[2].Status != store.KeyActive {
			t.Errorf("ListSigningKeys = %+v, %v", keys, err)
		}
		if string(keys[1].PrivateSealed) != string([]byte{1, 2, 0}) {
			t.Errorf("sealed bytes = %v", keys[1].PrivateSealed)
		}
		if m, err := db.MaxTokenLifetime(ctx); err != nil || m != 86400 {
			t.Errorf("MaxTokenLifetime = %d, %v", m, err)
		}
		if err := db.PutState(ctx, "k", "v1", t0); err != nil {
			t.Fatal(err)
		}
		if err := db.PutState(ctx, "k", "v2", t0); err != nil {
			t.Fatal(err)
		}
		if v, err := db.GetState(ctx, "k"); v != "v2" || err != nil {
			t.Errorf("GetState = %q, %v", v, err)
		}
	})
}
