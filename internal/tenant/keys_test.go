package tenant_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/server"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
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

func signingKey(t *testing.T, sys *servertest.System, kid string) tenant.SigningKey {
	t.Helper()
	keys, err := sys.Tenants.ListSigningKeys(context.Background(), operator)
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
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		// server.New ran EnsureSigningKey: the first key exists and is loaded.
		kid := sys.Keyring().SignerID()
		if kid == "" {
			t.Fatal("SignerID after EnsureSigningKey is empty")
		}
		for range 2 {
			if err := sys.Tenants.EnsureSigningKey(ctx); err != nil {
				t.Fatalf("EnsureSigningKey again: %v", err)
			}
		}
		keys, err := sys.Tenants.ListSigningKeys(ctx, operator)
		if err != nil {
			t.Fatalf("ListSigningKeys: %v", err)
		}
		if len(keys) != 1 || keys[0].ID != kid || keys[0].Status != store.KeyActive || !keys[0].Published || keys[0].Alg != token.Algorithm {
			t.Errorf("ListSigningKeys = %+v; want the one active %s key %s", keys, token.Algorithm, kid)
		}
		if got := sys.Keyring().SignerID(); got != kid {
			t.Errorf("SignerID = %s; want %s unchanged", got, kid)
		}
		if got := jwksKids(t, sys.Keyring()); !slices.Equal(got, []string{kid}) {
			t.Errorf("JWKS kids = %v; want [%s]", got, kid)
		}
	})
}

// TestRotateSigningKey follows one key from signer to retired-and-published to
// retired-and-unpublished, checking that API secrets it signed keep working.
func TestRotateSigningKey(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		keyring := sys.Keyring()
		ws, _ := sys.Workspace(t, "Keys")
		app := sys.App(t, ws.ID, "Long", func(in *tenant.AppSettings) {
			in.AccessExpiration, in.RefreshExpiration = ptr[int64](3600), ptr[int64](20*24*3600)
		})
		oldKid := keyring.SignerID()
		oldTok, oldRec, err := sys.Tenants.CreateAppSecret(ctx, operator, app.ID, "old")
		if err != nil {
			t.Fatalf("CreateAppSecret: %v", err)
		}
		if got := signedBy(t, keyring, oldTok); got != oldKid {
			t.Fatalf("secret signed by %s; want %s", got, oldKid)
		}

		sys.Clock.Advance(time.Hour)
		rotatedAt := sys.Clock.Now().Truncate(time.Microsecond)
		nk, err := rotateES256(ctx, sys.Tenants, operator)
		if err != nil {
			t.Fatalf("RotateSigningKey: %v", err)
		}
		if nk.ID == oldKid || keyring.SignerID() != nk.ID || nk.Status != store.KeyActive || !nk.CreatedAt.Equal(rotatedAt) {
			t.Fatalf("RotateSigningKey = %+v, signer %s; want a new active signer (old %s)", nk, keyring.SignerID(), oldKid)
		}
		if got, want := jwksKids(t, keyring), sorted(oldKid, nk.ID); !slices.Equal(got, want) {
			t.Errorf("JWKS after rotation = %v; want %v", got, want)
		}
		// One INFO line names the new key and its algorithm, and nothing of its private part.
		lines := sys.Logs.Lines(`"level":"INFO"`, `"msg":"signing key rotated"`)
		if len(lines) != 1 || !strings.Contains(lines[0], `"kid":"`+nk.ID+`"`) || !strings.Contains(lines[0], `"alg":"ES256"`) {
			t.Errorf("rotation log lines = %v; want one with kid %s and alg ES256", lines, nk.ID)
		}
		for _, line := range lines {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			for k := range rec {
				if !slices.Contains([]string{"time", "level", "msg", "kid", "alg"}, k) {
					t.Errorf("rotation log line has %q: %s", k, line)
				}
			}
		}
		old := signingKey(t, sys, oldKid)
		wantUntil := rotatedAt.Add(20*24*time.Hour + time.Minute)
		if old.Status != store.KeyRetired || !old.Published || old.RetiredAt == nil || !old.RetiredAt.Equal(rotatedAt) ||
			old.PublishUntil == nil || !old.PublishUntil.Equal(wantUntil) {
			t.Errorf("old key = %+v; want retired at %v, published until %v", old, rotatedAt, wantUntil)
		}
		newTok, _, err := sys.Tenants.CreateAppSecret(ctx, operator, app.ID, "new")
		if err != nil {
			t.Fatalf("CreateAppSecret: %v", err)
		}
		if got := signedBy(t, keyring, newTok); got != nk.ID {
			t.Errorf("new secret signed by %s; want %s", got, nk.ID)
		}

		// Just before the window ends the old key is still published.
		sys.Clock.Advance(wantUntil.Sub(sys.Clock.Now()) - time.Second)
		if err := keyring.Reload(ctx); err != nil {
			t.Fatalf("Reload: %v", err)
		}
		if got := jwksKids(t, keyring); !slices.Contains(got, oldKid) {
			t.Errorf("JWKS 1 s before publish_until = %v; want %s still in it", got, oldKid)
		}

		sys.Clock.Advance(time.Second)
		if err := keyring.Reload(ctx); err != nil {
			t.Fatalf("Reload: %v", err)
		}
		if got := jwksKids(t, keyring); !slices.Equal(got, []string{nk.ID}) {
			t.Errorf("JWKS at publish_until = %v; want only [%s]", got, nk.ID)
		}
		if k := signingKey(t, sys, oldKid); k.Published {
			t.Errorf("ListSigningKeys old key = %+v; want not published", k)
		}
		if keyring.SignerID() != nk.ID {
			t.Errorf("SignerID = %s; want %s", keyring.SignerID(), nk.ID)
		}
		// API secrets live as long as their row: the unpublished key still verifies them.
		if p, err := sys.Tenants.Authenticate(ctx, oldTok); err != nil || p.CredentialID != oldRec.ID {
			t.Errorf("Authenticate(secret signed by the unpublished key) = %+v, %v; want credential %s", p, err, oldRec.ID)
		}
		if _, err := sys.Tenants.Authenticate(ctx, newTok); err != nil {
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
			servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
				ctx := t.Context()
				ws, _ := sys.Workspace(t, "Window")
				for i, exp := range tc.apps {
					sys.App(t, ws.ID, strings.Repeat("a", i+1), func(in *tenant.AppSettings) {
						in.AccessExpiration, in.RefreshExpiration = ptr(exp[0]), ptr(exp[1])
					})
				}
				oldKid := sys.Keyring().SignerID()
				sys.Clock.Advance(90 * time.Second)
				now := sys.Clock.Now().Truncate(time.Microsecond)
				if _, err := rotateES256(ctx, sys.Tenants, operator); err != nil {
					t.Fatalf("RotateSigningKey: %v", err)
				}
				k := signingKey(t, sys, oldKid)
				if want := now.Add(tc.longest + time.Minute); k.PublishUntil == nil || !k.PublishUntil.Equal(want) {
					t.Errorf("publish_until = %v; want %v", k.PublishUntil, want)
				}
			})
		})
	}
}

// TestWrongMasterKey: keys sealed under one master key cannot be opened with
// another. A server started with the wrong key refuses to start, with an
// error naming the master key but not quoting it; the key source returns no
// key at all rather than part of the set.
func TestWrongMasterKey(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		if _, err := rotateES256(ctx, sys.Tenants, operator); err != nil {
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

		var logs bytes.Buffer
		srv, err := server.New(ctx, sys.Config, server.Options{Log: slog.New(slog.NewTextHandler(&logs, nil)),
			Clock: sys.Clock.Now, Courier: sys.Mail, MasterKey: master, Version: "test"})
		if err == nil {
			_ = srv.Close()
			t.Fatal("server.New(other master key) = nil error; want it to refuse to start")
		}
		if !strings.Contains(err.Error(), "cannot be opened with this master key") {
			t.Errorf("server.New(other master key) = %v; want an error naming the master key", err)
		}
		for _, secret := range []string{raw, string(master)} {
			if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
				t.Errorf("server.New error %q or its log quotes the master key", err)
			}
		}

		wrongSealer, _, err := token.FromMasterKey(master)
		if err != nil {
			t.Fatalf("FromMasterKey: %v", err)
		}
		set, err := tenant.KeySource(sys.DB, wrongSealer, sys.Clock.Now, slog.New(slog.DiscardHandler))(ctx)
		if err == nil || !strings.Contains(err.Error(), "cannot be opened with this master key") {
			t.Errorf("KeySource(other master key) = %v; want an error naming the master key", err)
		}
		if len(set.Signers) != 0 || len(set.Verify) != 0 || len(set.Published) != 0 {
			t.Errorf("KeySource(other master key) = %+v; want no keys at all", set)
		}

		// The right master key still loads, and the running system is untouched.
		rightSealer, _, err := token.FromMasterKey(sys.MasterKey)
		if err != nil {
			t.Fatalf("FromMasterKey: %v", err)
		}
		set, err = tenant.KeySource(sys.DB, rightSealer, sys.Clock.Now, slog.New(slog.DiscardHandler))(ctx)
		if err != nil || len(set.Signers) != 1 || set.Signers[0].ID != sys.Keyring().SignerID() || len(set.Verify) != 2 {
			t.Errorf("KeySource(right master key) = %+v, %v; want signer %s and 2 keys", set, err, sys.Keyring().SignerID())
		}
		if err := sys.Keyring().Reload(ctx); err != nil {
			t.Errorf("Reload(right master key) = %v; want nil", err)
		}
	})
}

// rotateES256 rotates the default algorithm's key and returns the new one.
func rotateES256(ctx context.Context, s *tenant.Service, p access.Principal) (tenant.SigningKey, error) {
	keys, err := s.RotateSigningKeys(ctx, p, token.Algorithm)
	if err != nil {
		return tenant.SigningKey{}, err
	}
	return keys[0], nil
}

// TestKeySourceParsesEachKeyOnce: a reload reuses the keys it has already
// opened and parsed (an RSA key costs about 0.14 ms of CPU to parse), and parses
// only the keys it has not seen.
func TestKeySourceParsesEachKeyOnce(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		if _, err := sys.Tenants.RotateSigningKeys(ctx, operator, token.RS256); err != nil {
			t.Fatalf("RotateSigningKeys(RS256): %v", err)
		}
		sealer, _, err := token.FromMasterKey(sys.MasterKey)
		if err != nil {
			t.Fatal(err)
		}
		source := tenant.KeySource(sys.DB, sealer, sys.Clock.Now, slog.New(slog.DiscardHandler))
		byID := func() map[string]*token.Key {
			t.Helper()
			set, err := source(ctx)
			if err != nil {
				t.Fatalf("KeySource: %v", err)
			}
			out := map[string]*token.Key{}
			for _, k := range set.Verify {
				out[k.ID] = k
			}
			return out
		}
		first := byID()
		if len(first) != 2 {
			t.Fatalf("KeySource loaded %d keys; want the ES256 and the RS256 key", len(first))
		}
		second := byID()
		for id, k := range first {
			if second[id] != k {
				t.Errorf("key %s (%s) was parsed again on the second load", id, k.Alg)
			}
		}
		nk, err := sys.Tenants.RotateSigningKeys(ctx, operator, token.RS256)
		if err != nil {
			t.Fatalf("RotateSigningKeys(RS256): %v", err)
		}
		third := byID()
		if len(third) != 3 || third[nk[0].ID] == nil {
			t.Fatalf("after a rotation KeySource has %d keys; want 3 with the new %s", len(third), nk[0].ID)
		}
		for id, k := range first {
			if third[id] != k {
				t.Errorf("key %s (%s) was parsed again after another key was added", id, k.Alg)
			}
		}
		if got := third[nk[0].ID]; got.Alg != token.RS256 || got.Private == nil {
			t.Errorf("the new key = %+v; want an RS256 signing key", got)
		}
	})
}
