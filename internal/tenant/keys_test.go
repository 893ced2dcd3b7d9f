package tenant_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// jwksKids lists the kids the keyring publishes.
func jwksKids(t *testing.T, keys *token.Keyring) []string {
	t.Helper()
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(keys.JWKS(), &set); err != nil {
		t.Fatalf("JWKS is not JSON: %v", err)
	}
	var out []string
	for _, k := range set.Keys {
		out = append(out, k.Kid)
	}
	slices.Sort(out)
	return out
}

func sorted(s ...string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func signingKey(t *testing.T, e *env, kid string) tenant.SigningKey {
	t.Helper()
	keys, err := e.svc.ListSigningKeys(e.ctx)
	if err != nil {
		t.Fatalf("ListSigningKeys: %v", err)
	}
	for _, k := range keys {
		if k.ID == kid {
			return k
		}
	}
	t.Fatalf("ListSigningKeys has no key %s", kid)
	return tenant.SigningKey{}
}

// signedBy returns the kid in a token's header.
func signedBy(t *testing.T, keys *token.Keyring, tok string) string {
	t.Helper()
	kid, err := keys.Verify(tok, token.TypeAPISecret, &map[string]any{})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return kid
}

func TestEnsureSigningKey(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		kid := e.keys.SignerID()
		if kid == "" {
			t.Fatal("SignerID after EnsureSigningKey is empty")
		}
		for range 2 {
			if err := e.svc.EnsureSigningKey(e.ctx); err != nil {
				t.Fatalf("EnsureSigningKey again: %v", err)
			}
		}
		keys, err := e.svc.ListSigningKeys(e.ctx)
		if err != nil {
			t.Fatalf("ListSigningKeys: %v", err)
		}
		if len(keys) != 1 || keys[0].ID != kid || keys[0].Status != store.KeyActive || !keys[0].Published || keys[0].Alg != token.Algorithm {
			t.Errorf("ListSigningKeys = %+v; want the one active %s key %s", keys, token.Algorithm, kid)
		}
		if got := e.keys.SignerID(); got != kid {
			t.Errorf("SignerID = %s; want %s unchanged", got, kid)
		}
		if got := jwksKids(t, e.keys); !slices.Equal(got, []string{kid}) {
			t.Errorf("JWKS kids = %v; want [%s]", got, kid)
		}
	})
}

// TestRotateSigningKey follows one key from signer to retired-and-published to
// retired-and-unpublished, checking that API secrets it signed keep working.
func TestRotateSigningKey(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ws, _ := e.workspace(t, "Keys")
		app, err := e.svc.CreateApp(e.ctx, ws.ID, tenant.AppSettings{Name: ptr("Long"), Origin: ptr("https://long.example"),
			AccessExpiration: ptr[int64](3600), RefreshExpiration: ptr[int64](20 * 24 * 3600)})
		if err != nil {
			t.Fatalf("CreateApp: %v", err)
		}
		oldKid := e.keys.SignerID()
		oldTok, oldRec, err := e.svc.CreateAppSecret(e.ctx, app.ID, "old")
		if err != nil {
			t.Fatalf("CreateAppSecret: %v", err)
		}
		if got := signedBy(t, e.keys, oldTok); got != oldKid {
			t.Fatalf("secret signed by %s; want %s", got, oldKid)
		}

		e.clock.Advance(time.Hour)
		rotatedAt := e.clock.Now().Truncate(time.Microsecond)
		nk, err := e.svc.RotateSigningKey(e.ctx)
		if err != nil {
			t.Fatalf("RotateSigningKey: %v", err)
		}
		if nk.ID == oldKid || e.keys.SignerID() != nk.ID || nk.Status != store.KeyActive || !nk.CreatedAt.Equal(rotatedAt) {
			t.Fatalf("RotateSigningKey = %+v, signer %s; want a new active signer (old %s)", nk, e.keys.SignerID(), oldKid)
		}
		if got, want := jwksKids(t, e.keys), sorted(oldKid, nk.ID); !slices.Equal(got, want) {
			t.Errorf("JWKS after rotation = %v; want %v", got, want)
		}
		old := signingKey(t, e, oldKid)
		wantUntil := rotatedAt.Add(20*24*time.Hour + time.Minute)
		if old.Status != store.KeyRetired || !old.Published || old.RetiredAt == nil || !old.RetiredAt.Equal(rotatedAt) ||
			old.PublishUntil == nil || !old.PublishUntil.Equal(wantUntil) {
			t.Errorf("old key = %+v; want retired at %v, published until %v", old, rotatedAt, wantUntil)
		}
		newTok, _, err := e.svc.CreateAppSecret(e.ctx, app.ID, "new")
		if err != nil {
			t.Fatalf("CreateAppSecret: %v", err)
		}
		if got := signedBy(t, e.keys, newTok); got != nk.ID {
			t.Errorf("new secret signed by %s; want %s", got, nk.ID)
		}

		// Just before the window ends the old key is still published.
		e.clock.Advance(wantUntil.Sub(e.clock.Now()) - time.Second)
		if err := e.svc.LoadKeys(e.ctx); err != nil {
			t.Fatalf("LoadKeys: %v", err)
		}
		if got := jwksKids(t, e.keys); !slices.Contains(got, oldKid) {
			t.Errorf("JWKS 1 s before publish_until = %v; want %s still in it", got, oldKid)
		}

		e.clock.Advance(time.Second)
		if err := e.svc.LoadKeys(e.ctx); err != nil {
			t.Fatalf("LoadKeys: %v", err)
		}
		if got := jwksKids(t, e.keys); !slices.Equal(got, []string{nk.ID}) {
			t.Errorf("JWKS at publish_until = %v; want only [%s]", got, nk.ID)
		}
		if k := signingKey(t, e, oldKid); k.Published {
			t.Errorf("ListSigningKeys old key = %+v; want not published", k)
		}
		if e.keys.SignerID() != nk.ID {
			t.Errorf("SignerID = %s; want %s", e.keys.SignerID(), nk.ID)
		}
		// API secrets live as long as their row: the unpublished key still verifies them.
		if p, err := e.svc.Authenticate(e.ctx, oldTok); err != nil || p.CredentialID != oldRec.ID {
			t.Errorf("Authenticate(secret signed by the unpublished key) = %+v, %v; want credential %s", p, err, oldRec.ID)
		}
		if _, err := e.svc.Authenticate(e.ctx, newTok); err != nil {
			t.Errorf("Authenticate(secret signed by the new key) = %v; want nil", err)
		}
	})
}

// TestPublishWindow checks publish_until = rotation + max(longest app token
// lifetime, invitation lifetime) + 1 min.
func TestPublishWindow(t *testing.T) {
	week := 7 * 24 * time.Hour
	cases := []struct {
		name    string
		apps    [][2]int64 // access and refresh expirations of the apps to create
		longest time.Duration
	}{
		{"no apps: the invitation lifetime", nil, week},
		{"short-lived apps: the invitation lifetime", [][2]int64{{60, 300}, {3600, 3 * 24 * 3600}}, week},
		{"a long refresh lifetime", [][2]int64{{900, 3 * 24 * 3600}, {900, 30 * 24 * 3600}}, 30 * 24 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			storetest.ForEach(t, func(t *testing.T, db *store.DB) {
				e := newEnv(t, db)
				ws, _ := e.workspace(t, "Window")
				for i, exp := range tc.apps {
					_, err := e.svc.CreateApp(e.ctx, ws.ID, tenant.AppSettings{Name: ptr(strings.Repeat("a", i+1)), Origin: ptr("https://w.example"),
						AccessExpiration: ptr(exp[0]), RefreshExpiration: ptr(exp[1])})
					if err != nil {
						t.Fatalf("CreateApp: %v", err)
					}
				}
				oldKid := e.keys.SignerID()
				e.clock.Advance(90 * time.Second)
				now := e.clock.Now().Truncate(time.Microsecond)
				if _, err := e.svc.RotateSigningKey(e.ctx); err != nil {
					t.Fatalf("RotateSigningKey: %v", err)
				}
				k := signingKey(t, e, oldKid)
				if want := now.Add(tc.longest + time.Minute); k.PublishUntil == nil || !k.PublishUntil.Equal(want) {
					t.Errorf("publish_until = %v; want %v", k.PublishUntil, want)
				}
			})
		})
	}
}

func TestLoadKeysWrongMasterKey(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		if _, err := e.svc.RotateSigningKey(e.ctx); err != nil {
			t.Fatalf("RotateSigningKey: %v", err)
		}
		raw, err := token.GenerateMasterKey()
		if err != nil {
			t.Fatalf("GenerateMasterKey: %v", err)
		}
		master, err := token.ParseMasterKey(raw)
		if err != nil {
			t.Fatalf("ParseMasterKey: %v", err)
		}
		keys := token.NewKeyring()
		wrong, _ := newService(t, db, master, keys, e.clock)
		err = wrong.LoadKeys(e.ctx)
		if err == nil || !strings.Contains(err.Error(), "cannot be opened with this master key") {
			t.Fatalf("LoadKeys(other master key) = %v; want an error naming the master key", err)
		}
		if strings.Contains(err.Error(), raw) {
			t.Errorf("LoadKeys error %q quotes the master key", err)
		}
		if keys.SignerID() != "" || string(keys.JWKS()) != `{"keys":[]}` {
			t.Errorf("after a failed LoadKeys the keyring has signer %q and JWKS %s; want it left empty", keys.SignerID(), keys.JWKS())
		}
		// The right master key still loads.
		if err := e.svc.LoadKeys(e.ctx); err != nil {
			t.Errorf("LoadKeys(right master key) = %v; want nil", err)
		}
	})
}
