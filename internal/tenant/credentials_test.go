package tenant_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// apiKey issues an API key for an app as the operator.
func apiKey(t *testing.T, sys *servertest.System, appID string) string {
	t.Helper()
	key, _, err := sys.Tenants.CreateAPIKey(context.Background(), operator, appID, "k")
	if err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	return key
}

// TestAuthorizeApp checks the access levels the principals that Authenticate
// makes get on an app, as every app-scoped method asks them (access.App,
// reading a member's role in the store).
func TestAuthorizeApp(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		tm := newTeam(t, sys, "Authz")
		other := newTeam(t, sys, "Other team")
		appA, appB := sys.App(t, tm.ws.ID, "A", nil), sys.App(t, tm.ws.ID, "B", nil)

		const ok, no = true, false
		cases := []struct {
			name                string
			p                   access.Principal
			read, write, manage bool
		}{
			{"operator", operator, ok, ok, ok},
			{"app secret of the app", sys.Principal(t, sys.AppSecret(t, appA.ID)), ok, ok, ok},
			{"app secret of another app", sys.Principal(t, sys.AppSecret(t, appB.ID)), no, no, no},
			{"api key of the app", sys.Principal(t, apiKey(t, sys, appA.ID)), ok, ok, no},
			{"api key of another app", sys.Principal(t, apiKey(t, sys, appB.ID)), no, no, no},
			{"workspace member", tm.pUser, ok, no, no},
			{"workspace admin", tm.pAdmin, ok, ok, ok},
			{"workspace owner", tm.pOwner, ok, ok, ok},
			{"owner of another workspace", other.pOwner, no, no, no},
			{"admin of another workspace", other.pAdmin, no, no, no},
			{"zero principal", access.Principal{}, no, no, no},
		}
		for _, tc := range cases {
			for _, lv := range []struct {
				name string
				need access.Level
				want bool
			}{{"read", access.Read, tc.read}, {"write", access.Write, tc.write}, {"manage", access.Manage, tc.manage}} {
				err := access.App(ctx, sys.DB.Queries, tc.p, appA.ID, lv.need)
				if lv.want && err != nil {
					t.Errorf("%s access.App(%s) = %v; want nil", tc.name, lv.name, err)
				}
				if !lv.want && !errors.Is(err, access.ErrForbidden) {
					t.Errorf("%s access.App(%s) = %v; want ErrForbidden", tc.name, lv.name, err)
				}
			}
		}
		// A member's app of an unknown id is refused like another tenant's.
		if err := access.App(ctx, sys.DB.Queries, tm.pOwner, "no-such-app", access.Read); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("owner access.App(unknown app) = %v; want ErrForbidden", err)
		}
	})
}

func TestAuthenticate(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		issuer := sys.Config.Tokens.Issuer
		t0 := sys.Clock.Now()
		tm := newTeam(t, sys, "Authn")
		app := sys.App(t, tm.ws.ID, "Shop", nil)
		other := sys.App(t, tm.ws.ID, "Other", nil)

		appTok, appRec, err := sys.Tenants.CreateAppSecret(ctx, operator, app.ID, " ci ")
		if err != nil {
			t.Fatalf("CreateAppSecret: %v", err)
		}
		if appRec.Name != "ci" || appRec.AppID != app.ID || appRec.WorkspaceID != "" {
			t.Errorf("app secret record = %+v; want name ci for %s", appRec, app.ID)
		}
		p := sys.Principal(t, appTok)
		if want := (access.Principal{Kind: access.KindAppSecret, CredentialID: appRec.ID, AppID: app.ID}); p != want {
			t.Errorf("Authenticate(app secret) = %+v; want %+v", p, want)
		}
		if _, _, err := sys.Tenants.CreateAppSecret(ctx, operator, "nope", ""); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("CreateAppSecret(unknown app) = %v; want ErrAppNotFound", err)
		}

		wsTok, wsRec, err := sys.Tenants.CreateWorkspaceSecret(ctx, operator, tm.ws.ID, "", "ops")
		if err != nil {
			t.Fatalf("CreateWorkspaceSecret: %v", err)
		}
		p = sys.Principal(t, wsTok)
		if want := (access.Principal{Kind: access.KindWorkspaceSecret, CredentialID: wsRec.ID, WorkspaceID: tm.ws.ID,
			MemberID: tm.owner.ID}); p != want {
			t.Errorf("Authenticate(workspace secret for the first owner) = %+v; want %+v", p, want)
		}
		if wsRec.MemberRole != access.RoleOwner || wsRec.MemberID != tm.owner.ID {
			t.Errorf("workspace secret record = %+v; want it acting for the owner %s", wsRec, tm.owner.ID)
		}
		if p := principal(t, sys, tm.ws.ID, "MEMBER@team.example"); p.MemberID != tm.member.ID {
			t.Errorf("CreateWorkspaceSecret(by e-mail) acts for %s; want %s", p.MemberID, tm.member.ID)
		}
		if _, _, err := sys.Tenants.CreateWorkspaceSecret(ctx, operator, tm.ws.ID, "stranger@team.example", ""); !errors.Is(err, tenant.ErrMemberNotFound) {
			t.Errorf("CreateWorkspaceSecret(not a member) = %v; want ErrMemberNotFound", err)
		}
		if _, _, err := sys.Tenants.CreateWorkspaceSecret(ctx, operator, "no-such-workspace", "", ""); !errors.Is(err, tenant.ErrWorkspaceNotFound) {
			t.Errorf("CreateWorkspaceSecret(unknown workspace) = %v; want ErrWorkspaceNotFound", err)
		}

		key, keyRec, err := sys.Tenants.CreateAPIKey(ctx, operator, app.ID, "")
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		if !strings.HasPrefix(key, tenant.APIKeyPrefix) || keyRec.Last4 != key[len(key)-4:] || keyRec.Nickname != "API key" ||
			keyRec.KeyHash == key || strings.Contains(keyRec.KeyHash, key[len(tenant.APIKeyPrefix):]) {
			t.Errorf("CreateAPIKey record = %+v; want a keyed hash, last4 and the default nickname", keyRec)
		}
		if _, _, err := sys.Tenants.CreateAPIKey(ctx, operator, "nope", ""); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("CreateAPIKey(unknown app) = %v; want ErrAppNotFound", err)
		}
		_, _, err = sys.Tenants.CreateAPIKey(ctx, operator, app.ID, strings.Repeat("n", 101))
		checkInvalid(t, "CreateAPIKey(long nickname)", err, "nickname")
		if p := sys.Principal(t, key); p != (access.Principal{Kind: access.KindAPIKey, CredentialID: keyRec.ID, AppID: app.ID}) {
			t.Errorf("Authenticate(api key) = %+v; want the key of %s", p, app.ID)
		}
		revokedKey, revokedKeyRec, err := sys.Tenants.CreateAPIKey(ctx, operator, app.ID, "old")
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		if _, err := sys.Tenants.RevokeAPIKey(ctx, operator, other.ID, revokedKeyRec.ID); !errors.Is(err, tenant.ErrAPIKeyNotFound) {
			t.Errorf("RevokeAPIKey(through another app) = %v; want ErrAPIKeyNotFound", err)
		}
		if k, err := sys.Tenants.RevokeAPIKey(ctx, operator, app.ID, revokedKeyRec.ID); err != nil || k.RevokedAt == nil {
			t.Fatalf("RevokeAPIKey = %+v, %v; want it revoked", k, err)
		}
		keys, err := sys.Tenants.ListAPIKeys(ctx, operator, app.ID)
		if err != nil || len(keys) != 2 {
			t.Errorf("ListAPIKeys = %+v, %v; want the 2 keys of the app", keys, err)
		}
		for _, k := range keys {
			if k.KeyHash == key || k.KeyHash == revokedKey || (k.ID == revokedKeyRec.ID) != (k.RevokedAt != nil) {
				t.Errorf("ListAPIKeys lists %+v; want only the revoked key revoked, and no key in clear", k)
			}
		}

		revokedTok, revokedRec, err := sys.Tenants.CreateAppSecret(ctx, operator, app.ID, "old")
		if err != nil {
			t.Fatalf("CreateAppSecret: %v", err)
		}
		if err := sys.Tenants.RevokeSecret(ctx, operator, revokedRec.ID); err != nil {
			t.Fatalf("RevokeSecret: %v", err)
		}
		if err := sys.Tenants.RevokeSecret(ctx, operator, "nope"); !errors.Is(err, tenant.ErrSecretNotFound) {
			t.Errorf("RevokeSecret(unknown) = %v; want ErrSecretNotFound", err)
		}
		if err := sys.Tenants.RevokeSecret(ctx, tm.pOwner, "nope"); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("owner RevokeSecret(unknown) = %v; want ErrForbidden (ids cannot be probed)", err)
		}

		keyring := sys.Keyring()
		// A token of another type carrying exactly an app secret's claims.
		accessTok, err := keyring.Sign(token.TypeAccess, map[string]any{"iss": issuer, "sub": app.ID, "aud": app.ID,
			"iat": t0.Unix(), "jti": appRec.ID, "scope": "app"})
		if err != nil {
			t.Fatalf("Sign(access): %v", err)
		}
		// API-secret tokens with the right type and key whose claims do not match their row.
		forge := func(claims map[string]any) string {
			t.Helper()
			tok, err := keyring.Sign(token.TypeAPISecret, claims)
			if err != nil {
				t.Fatalf("Sign(api secret): %v", err)
			}
			return tok
		}
		// A well-formed secret signed by a key the server does not know.
		strange, err := token.GenerateKey()
		if err != nil {
			t.Fatalf("GenerateKey: %v", err)
		}
		foreign := token.NewKeyring(nil)
		foreign.Replace(strange, nil, nil)
		foreignTok, err := foreign.Sign(token.TypeAPISecret, map[string]any{"iss": issuer, "sub": app.ID, "aud": app.ID, "jti": appRec.ID, "scope": "app"})
		if err != nil {
			t.Fatalf("Sign(foreign): %v", err)
		}
		// The secret of a member that is then removed.
		goneTok := sys.WorkspaceSecret(t, tm.ws.ID, tm.admin.ID)
		if err := sys.Tenants.RemoveMember(ctx, tm.pOwner, tm.ws.ID, tm.admin.ID); err != nil {
			t.Fatalf("RemoveMember: %v", err)
		}

		for name, bearer := range map[string]string{
			"empty":                         "",
			"garbage":                       "not a token",
			"three dots of garbage":         "a.b.c",
			"app secret with a bit flip":    flipSig(appTok),
			"revoked app secret":            revokedTok,
			"unknown api key":               tenant.APIKeyPrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
			"api key prefix only":           tenant.APIKeyPrefix,
			"revoked api key":               revokedKey,
			"access token with same claims": accessTok,
			"foreign signing key":           foreignTok,
			"secret of a removed member":    goneTok,
			"app scope with workspace id":   forge(map[string]any{"iss": issuer, "aud": tm.ws.ID, "jti": wsRec.ID, "scope": "app"}),
			"workspace scope with app id":   forge(map[string]any{"iss": issuer, "aud": app.ID, "jti": appRec.ID, "scope": "workspace"}),
			"audience of another app":       forge(map[string]any{"iss": issuer, "aud": other.ID, "jti": appRec.ID, "scope": "app"}),
			"two audiences":                 forge(map[string]any{"iss": issuer, "aud": []string{app.ID, other.ID}, "jti": appRec.ID, "scope": "app"}),
			"no issuer":                     forge(map[string]any{"aud": app.ID, "jti": appRec.ID, "scope": "app"}),
			"no id":                         forge(map[string]any{"iss": issuer, "aud": app.ID, "scope": "app"}),
			"unknown id":                    forge(map[string]any{"iss": issuer, "aud": app.ID, "jti": "nope", "scope": "app"}),
			"expired":                       forge(map[string]any{"iss": issuer, "aud": app.ID, "jti": appRec.ID, "scope": "app", "exp": t0.Add(-time.Hour).Unix()}),
			"issued in the future":          forge(map[string]any{"iss": issuer, "aud": app.ID, "jti": appRec.ID, "scope": "app", "iat": t0.Add(time.Hour).Unix()}),
		} {
			if p, err := sys.Tenants.Authenticate(ctx, bearer); !errors.Is(err, tenant.ErrUnauthorized) {
				t.Errorf("Authenticate(%s) = %+v, %v; want ErrUnauthorized", name, p, err)
			}
		}
		// The same claims under the right type do authenticate, so the cases above fail for the reason named.
		if p := sys.Principal(t, forge(map[string]any{"iss": "https://old-name.example", "aud": app.ID, "jti": appRec.ID, "scope": "app"})); p.CredentialID != appRec.ID {
			t.Errorf("Authenticate(re-signed app secret) = %+v; want credential %s", p, appRec.ID)
		}
	})
}

// flipSig changes one character inside the signature of a compact JWS. It
// avoids the last character, whose low bits may be padding that decoders ignore.
func flipSig(s string) string {
	i := len(s) - 10
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

func TestReissueSecret(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		tm := newTeam(t, sys, "Reissue")
		app := sys.App(t, tm.ws.ID, "Shop", nil)
		sys.App(t, tm.ws.ID, "Other", nil)
		appTok, appRec, err := sys.Tenants.CreateAppSecret(ctx, operator, app.ID, "dev")
		if err != nil {
			t.Fatalf("CreateAppSecret: %v", err)
		}
		wsTok, wsRec, err := sys.Tenants.CreateWorkspaceSecret(ctx, operator, tm.ws.ID, tm.admin.ID, "dev")
		if err != nil {
			t.Fatalf("CreateWorkspaceSecret: %v", err)
		}
		for _, tc := range []struct {
			name string
			tok  string
			rec  tenant.APISecret
		}{{"app secret", appTok, appRec}, {"workspace secret", wsTok, wsRec}} {
			if _, _, err := sys.Tenants.ReissueSecret(ctx, sys.Principal(t, tc.tok), tc.rec.ID); !errors.Is(err, access.ErrForbidden) {
				t.Errorf("ReissueSecret(%s, by itself) = %v; want ErrForbidden (operator only)", tc.name, err)
			}
			again, rec, err := sys.Tenants.ReissueSecret(ctx, operator, tc.rec.ID)
			if err != nil {
				t.Fatalf("ReissueSecret(%s): %v", tc.name, err)
			}
			if again == tc.tok || rec.ID != tc.rec.ID {
				t.Errorf("ReissueSecret(%s) = same token %v, id %s; want a new token for %s", tc.name, again == tc.tok, rec.ID, tc.rec.ID)
			}
			p1, p2 := sys.Principal(t, tc.tok), sys.Principal(t, again)
			if p1 != p2 || p2.CredentialID != tc.rec.ID {
				t.Errorf("ReissueSecret(%s): old token is %+v, new is %+v; want the same credential %s", tc.name, p1, p2, tc.rec.ID)
			}
		}
		if err := sys.Tenants.RevokeSecret(ctx, operator, appRec.ID); err != nil {
			t.Fatalf("RevokeSecret: %v", err)
		}
		if _, _, err := sys.Tenants.ReissueSecret(ctx, operator, appRec.ID); !errors.Is(err, tenant.ErrSecretNotFound) {
			t.Errorf("ReissueSecret(revoked) = %v; want ErrSecretNotFound", err)
		}
		if _, _, err := sys.Tenants.ReissueSecret(ctx, operator, "nope"); !errors.Is(err, tenant.ErrSecretNotFound) {
			t.Errorf("ReissueSecret(unknown) = %v; want ErrSecretNotFound", err)
		}
		list, err := sys.Tenants.ListSecrets(ctx, operator, app.ID, "")
		if err != nil || len(list) != 1 || list[0].ID != appRec.ID || list[0].RevokedAt == nil {
			t.Errorf("ListSecrets(app) = %+v, %v; want the one revoked secret", list, err)
		}
		list, err = sys.Tenants.ListSecrets(ctx, tm.pOwner, "", tm.ws.ID)
		if err != nil {
			t.Fatalf("ListSecrets(workspace): %v", err)
		}
		// The workspace has the dev secret and the three made for the team's principals.
		found := false
		for _, s := range list {
			if s.AppID != "" || s.WorkspaceID != tm.ws.ID {
				t.Errorf("ListSecrets(workspace) lists %+v; want only secrets of %s", s, tm.ws.ID)
			}
			found = found || (s.ID == wsRec.ID && s.RevokedAt == nil && s.MemberRole == access.RoleAdmin)
		}
		if len(list) != 4 || !found {
			t.Errorf("ListSecrets(workspace) = %+v; want 4, with the admin's dev secret unrevoked", list)
		}
	})
}
