package tenant_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// activeKeys returns the kid of each algorithm's active keys.
func activeKeys(t *testing.T, s *tenant.Service) map[string][]string {
	t.Helper()
	keys, err := s.ListSigningKeys(t.Context(), operator)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, k := range keys {
		if k.Status == store.KeyActive {
			out[k.Alg] = append(out[k.Alg], k.ID)
		}
	}
	return out
}

// TestAccessTokenAlgPerApp: choosing RS256 or EdDSA for an app makes that
// algorithm's first key with the change, once; the replica that made it
// signs with it at once and another replica loads it the first time it
// needs it; rotation is per algorithm; a bad value names the field.
func TestAccessTokenAlgPerApp(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		peer := servertest.New(t, sys.DB.Kind(), servertest.Options{Peer: sys})
		ws, _ := sys.Workspace(t, "Algorithms")
		app := sys.App(t, ws.ID, "Shop", nil)
		if got := sys.Tenants.AccessTokenAlg(app); got != token.ES256 || app.AccessTokenAlg != "" {
			t.Fatalf("a new app signs with %s (own choice %q); want the default ES256", got, app.AccessTokenAlg)
		}
		if got := activeKeys(t, sys.Tenants); len(got) != 1 || len(got[token.ES256]) != 1 {
			t.Fatalf("active keys of a new server = %v; want one ES256 key", got)
		}

		for _, bad := range []string{"HS256", "rs256", "none", "PS256"} {
			_, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, app.ID, tenant.AppSettings{AccessTokenAlg: &bad})
			var inv *errs.Invalid
			if !errors.As(err, &inv) || inv.Field != "access_token_alg" {
				t.Errorf("UpdateApp(access_token_alg %q) = %v; want invalid access_token_alg", bad, err)
			}
		}
		if got := activeKeys(t, sys.Tenants); len(got) != 1 {
			t.Errorf("refused changes made keys: %v", got)
		}

		// A change its caller may not make stores no key (one is made in
		// advance, outside the transaction, and kept for the next try).
		rs := token.RS256
		apiKey := access.Principal{Kind: access.KindAPIKey, AppID: app.ID, CredentialID: "k"}
		for range 2 {
			if _, err := sys.Tenants.UpdateOwnApp(ctx, apiKey, app.ID, tenant.AppSettings{AccessTokenAlg: &rs}); !errors.Is(err, access.ErrForbidden) {
				t.Fatalf("UpdateOwnApp(RS256) with an API key = %v; want ErrForbidden", err)
			}
		}
		if got := activeKeys(t, sys.Tenants); len(got[token.RS256]) != 0 {
			t.Fatalf("a refused change stored an RS256 key: %v", got)
		}
		app, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, app.ID, tenant.AppSettings{AccessTokenAlg: &rs})
		if err != nil || app.AccessTokenAlg != token.RS256 || sys.Tenants.AccessTokenAlg(app) != token.RS256 {
			t.Fatalf("UpdateApp(RS256) = %+v, %v", app, err)
		}
		active := activeKeys(t, sys.Tenants)
		if len(active[token.RS256]) != 1 || len(active[token.ES256]) != 1 {
			t.Fatalf("active keys after choosing RS256 = %v; want one ES256 and one RS256 key", active)
		}
		rsaKid := active[token.RS256][0]
		if sys.Keyring().SignerIDFor(token.RS256) != rsaKid || !slices.Contains(jwksKids(t, sys.Keyring()), rsaKid) {
			t.Errorf("this replica's RS256 signer = %q, JWKS %v; want %s signing and published at once",
				sys.Keyring().SignerIDFor(token.RS256), jwksKids(t, sys.Keyring()), rsaKid)
		}
		// Choosing it again (or for another app) makes no second key.
		other := sys.App(t, ws.ID, "Other", func(s *tenant.AppSettings) { s.AccessTokenAlg = &rs })
		if _, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, app.ID, tenant.AppSettings{AccessTokenAlg: &rs}); err != nil {
			t.Fatal(err)
		}
		if got := activeKeys(t, sys.Tenants)[token.RS256]; !slices.Equal(got, []string{rsaKid}) || other.AccessTokenAlg != token.RS256 {
			t.Errorf("RS256 keys after choosing it twice more = %v; want only %s", got, rsaKid)
		}

		// The peer has not loaded the key yet; it does when it first reads
		// the app (at a request's start, before any transaction signs).
		if peer.Keyring().Signs(token.RS256) {
			t.Fatal("the peer holds the RS256 key before it needed it; the test would prove nothing")
		}
		if _, _, err := peer.Keyring().SignWith(token.RS256, token.TypeAccess, map[string]any{"sub": "u"}); err == nil {
			t.Fatal("the peer signed with a key it has not loaded; SignWith must not read the key source")
		}
		if _, err := peer.Tenants.App(ctx, app.ID); err != nil {
			t.Fatal(err)
		}
		raw, kid, err := peer.Keyring().SignWith(token.RS256, token.TypeAccess, map[string]any{"sub": "u"})
		if err != nil || kid != rsaKid {
			t.Fatalf("peer SignWith(RS256) = %v, kid %q; want the key sys made, %s", err, kid, rsaKid)
		}
		var claims map[string]any
		if got, err := sys.Keyring().Verify(raw, token.TypeAccess, &claims); err != nil || got != rsaKid {
			t.Errorf("sys Verify(the peer's RS256 token) = %q, %v", got, err)
		}

		// Rotating RS256 leaves ES256 alone; the old RS256 key stays published.
		esKid := sys.Keyring().SignerID()
		rotated, err := sys.Tenants.RotateSigningKeys(ctx, operator, token.RS256)
		if err != nil || len(rotated) != 1 || rotated[0].Alg != token.RS256 || rotated[0].ID == rsaKid {
			t.Fatalf("RotateSigningKeys(RS256) = %+v, %v; want one new RS256 key", rotated, err)
		}
		if sys.Keyring().SignerID() != esKid || sys.Keyring().SignerIDFor(token.RS256) != rotated[0].ID {
			t.Errorf("signers after rotating RS256 = %s, %s; want ES256 %s unchanged and RS256 %s",
				sys.Keyring().SignerID(), sys.Keyring().SignerIDFor(token.RS256), esKid, rotated[0].ID)
		}
		if kids := jwksKids(t, sys.Keyring()); !slices.Contains(kids, rsaKid) || !slices.Contains(kids, rotated[0].ID) || !slices.Contains(kids, esKid) {
			t.Errorf("JWKS after rotating RS256 = %v; want %s (retired, still published), %s and %s", kids, rsaKid, rotated[0].ID, esKid)
		}
		if _, err := sys.Keyring().Verify(raw, token.TypeAccess, &claims); err != nil {
			t.Errorf("Verify(token of the retired RS256 key) = %v; want nil until its tokens expire", err)
		}
		// Rotating every algorithm rotates both.
		all, err := sys.Tenants.RotateSigningKeys(ctx, operator, "")
		if err != nil || len(all) != 2 || all[0].Alg != token.ES256 || all[1].Alg != token.RS256 {
			t.Errorf("RotateSigningKeys(all) = %+v, %v; want new ES256 and RS256 keys", all, err)
		}
		if _, err := sys.Tenants.RotateSigningKeys(ctx, operator, "HS256"); err == nil {
			t.Error("RotateSigningKeys(HS256) succeeded")
		}

		// Back to the default: the app signs with ES256 again.
		def := "default"
		app, err = sys.Tenants.UpdateApp(ctx, operator, ws.ID, app.ID, tenant.AppSettings{AccessTokenAlg: &def})
		if err != nil || app.AccessTokenAlg != "" || sys.Tenants.AccessTokenAlg(app) != token.ES256 {
			t.Errorf("UpdateApp(default) = %+v, %v; want the default again", app, err)
		}
	})
}

// TestServerDefaultAccessTokenAlg: with tokens.access_token_alg set, the
// server makes that algorithm's key at start-up and apps that keep the
// default sign with it.
func TestServerDefaultAccessTokenAlg(t *testing.T) {
	opts := servertest.Options{Settings: map[string]string{"GATEHOUSE_TOKENS_ACCESS_TOKEN_ALG": "EdDSA"}}
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ws, _ := sys.Workspace(t, "Default")
		app := sys.App(t, ws.ID, "Shop", nil)
		if got := sys.Tenants.AccessTokenAlg(app); got != token.EdDSA {
			t.Errorf("an app on the default signs with %s; want EdDSA", got)
		}
		if !sys.Keyring().Signs(token.EdDSA) || !sys.Keyring().Signs(token.ES256) {
			t.Error("the server did not make its EdDSA key (and the ES256 one for internal tokens) at start-up")
		}
	})
}
