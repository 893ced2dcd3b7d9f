package tenant_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// TestAppCache checks the bound on how stale Service.App may be: a change
// made by another replica or the command line (peer, a second system on the
// same database and clock) is seen within tenant.AppCacheTTL (2 s)
// of the moment the app was cached, and not before that bound is reached;
// a change or delete made through the same Service is seen at once.
func TestAppCache(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		peer := servertest.New(t, sys.DB.Kind(), servertest.Options{Peer: sys})
		ws, _ := sys.Workspace(t, "Cache")
		a := sys.App(t, ws.ID, "Shop", nil)

		cached, err := sys.Tenants.App(ctx, a.ID)
		if err != nil || !reflect.DeepEqual(cached, a) {
			t.Fatalf("App = %+v, %v; want %+v", cached, err, a)
		}

		// Another replica changes the app, a little after sys cached it.
		sys.Clock.Advance(500 * time.Millisecond)
		changed, err := peer.Tenants.UpdateApp(ctx, operator, ws.ID, a.ID, tenant.AppSettings{Name: ptr("Shop 2"),
			Origin: ptr("https://shop2.example")})
		if err != nil {
			t.Fatalf("peer UpdateApp: %v", err)
		}
		if got, err := sys.Tenants.GetApp(ctx, a.ID); err != nil || !reflect.DeepEqual(got, changed) {
			t.Errorf("GetApp after the peer's update = %+v, %v; want the database's %+v", got, err, changed)
		}
		// Up to the bound, sys may serve what it cached...
		sys.Clock.Advance(tenant.AppCacheTTL - 500*time.Millisecond - time.Nanosecond)
		if got, err := sys.Tenants.App(ctx, a.ID); err != nil || !reflect.DeepEqual(got, a) {
			t.Errorf("App just under %v after caching = %+v, %v; want the cached %+v", tenant.AppCacheTTL, got, err, a)
		}
		// ...and once it is reached, it reads the app again.
		sys.Clock.Advance(time.Nanosecond)
		got, err := sys.Tenants.App(ctx, a.ID)
		if err != nil || !reflect.DeepEqual(got, changed) || got.Origin != "https://shop2.example" {
			t.Errorf("App %v after caching = %+v, %v; want the peer's change %+v", tenant.AppCacheTTL, got, err, changed)
		}
		// The peer, which changed it, sees its own change at once.
		if got, err := peer.Tenants.App(ctx, a.ID); err != nil || !reflect.DeepEqual(got, changed) {
			t.Errorf("peer App = %+v, %v; want %+v", got, err, changed)
		}

		// A change through sys itself is seen at once, though sys had the app cached.
		mine, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, a.ID, tenant.AppSettings{PublicSignup: ptr(false)})
		if err != nil {
			t.Fatalf("UpdateApp: %v", err)
		}
		if got, err := sys.Tenants.App(ctx, a.ID); err != nil || !reflect.DeepEqual(got, mine) || got.PublicSignup {
			t.Errorf("App right after its own update = %+v, %v; want %+v", got, err, mine)
		}
		// The peer, which had it cached, sees it within the bound.
		if got, err := peer.Tenants.App(ctx, a.ID); err != nil || !got.PublicSignup {
			t.Errorf("peer App right after sys's update = %+v, %v; want its cached copy (public signup on)", got, err)
		}
		sys.Clock.Advance(tenant.AppCacheTTL)
		if got, err := peer.Tenants.App(ctx, a.ID); err != nil || !reflect.DeepEqual(got, mine) {
			t.Errorf("peer App %v after sys's update = %+v, %v; want %+v", tenant.AppCacheTTL, got, err, mine)
		}

		// A refused update leaves the cache as it was.
		if _, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, a.ID, tenant.AppSettings{Origin: ptr("nope")}); err == nil {
			t.Fatal("UpdateApp(bad origin) = nil; want an error")
		}
		if got, err := sys.Tenants.App(ctx, a.ID); err != nil || !reflect.DeepEqual(got, mine) {
			t.Errorf("App after a refused update = %+v, %v; want %+v", got, err, mine)
		}

		// An app deleted through sys is gone at once, though it was cached.
		if err := sys.Tenants.DeleteApp(ctx, operator, ws.ID, a.ID); err != nil {
			t.Fatalf("DeleteApp: %v", err)
		}
		if got, err := sys.Tenants.App(ctx, a.ID); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("App right after DeleteApp = %+v, %v; want ErrAppNotFound", got, err)
		}
		// The peer had it cached: gone within the bound.
		if _, err := peer.Tenants.App(ctx, a.ID); err != nil {
			t.Errorf("peer App right after sys's delete = %v; want its cached copy", err)
		}
		sys.Clock.Advance(tenant.AppCacheTTL)
		if got, err := peer.Tenants.App(ctx, a.ID); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("peer App %v after sys's delete = %+v, %v; want ErrAppNotFound", tenant.AppCacheTTL, got, err)
		}

		// A miss is not cached: an app made by the peer is found by sys at once.
		b := peer.App(t, ws.ID, "Later", nil)
		if got, err := sys.Tenants.App(ctx, b.ID); err != nil || got.ID != b.ID {
			t.Errorf("App(made by the peer) = %+v, %v; want %s", got, err, b.ID)
		}
	})
}

// TestKeysAcrossReplicas: a key rotated by another replica (or the command
// line) signs tokens that this replica accepts at once, by reloading its
// keys when a token names a kid it does not hold, and its JWKS then lists
// the new key.
func TestKeysAcrossReplicas(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		peer := servertest.New(t, sys.DB.Kind(), servertest.Options{Peer: sys})
		ws, _ := sys.Workspace(t, "Replicas")
		app := sys.App(t, ws.ID, "Shop", nil)
		oldKid := sys.Keyring().SignerID()
		if oldKid == "" || peer.Keyring().SignerID() != oldKid {
			t.Fatalf("signers = %q and %q; want both replicas on the one first key", oldKid, peer.Keyring().SignerID())
		}

		nk, err := rotateES256(ctx, peer.Tenants, operator)
		if err != nil {
			t.Fatalf("peer RotateSigningKey: %v", err)
		}
		if sys.Keyring().Has(nk.ID) || slices.Contains(jwksKids(t, sys.Keyring()), nk.ID) {
			t.Fatalf("sys holds the peer's new key %s before any token named it; the test would prove nothing", nk.ID)
		}

		tok, rec, err := peer.Tenants.CreateAppSecret(ctx, operator, app.ID, "from the peer")
		if err != nil {
			t.Fatalf("peer CreateAppSecret: %v", err)
		}
		if got := signedBy(t, peer.Keyring(), tok); got != nk.ID {
			t.Fatalf("the peer's secret is signed by %s; want the new key %s", got, nk.ID)
		}
		p, err := sys.Tenants.Authenticate(ctx, tok)
		if err != nil || p.CredentialID != rec.ID || p.AppID != app.ID {
			t.Fatalf("sys Authenticate(secret signed with the peer's new key) = %+v, %v; want credential %s", p, err, rec.ID)
		}
		if got, want := jwksKids(t, sys.Keyring()), sorted(oldKid, nk.ID); !slices.Equal(got, want) {
			t.Errorf("sys JWKS after the reload = %v; want %v (the new key and the retired, still published one)", got, want)
		}
		if got := sys.Keyring().SignerID(); got != nk.ID {
			t.Errorf("sys signer after the reload = %s; want the new key %s", got, nk.ID)
		}

		// Tokens sys signs now verify on the peer, and the old key's secrets on both.
		mine := sys.AppSecret(t, app.ID)
		if got := signedBy(t, sys.Keyring(), mine); got != nk.ID {
			t.Errorf("sys signs with %s; want %s", got, nk.ID)
		}
		if _, err := peer.Tenants.Authenticate(ctx, mine); err != nil {
			t.Errorf("peer Authenticate(secret signed by sys) = %v; want nil", err)
		}
		// A kid that no replica knows is still refused after the reload.
		stranger, err := token.GenerateKey()
		if err != nil {
			t.Fatalf("GenerateKey: %v", err)
		}
		foreign := token.NewKeyring(nil)
		foreign.Replace(stranger, nil, nil)
		forged, err := foreign.Sign(token.TypeAPISecret, map[string]any{"iss": sys.Config.Tokens.Issuer, "aud": app.ID, "jti": rec.ID, "scope": "app"})
		if err != nil {
			t.Fatalf("Sign: %v", err)
		}
		if _, err := sys.Tenants.Authenticate(ctx, forged); !errors.Is(err, tenant.ErrUnauthorized) {
			t.Errorf("Authenticate(unknown kid) = %v; want ErrUnauthorized", err)
		}
	})
}
