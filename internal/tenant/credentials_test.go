package tenant_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

func (e *env) authenticate(t *testing.T, bearer string) tenant.Principal {
	t.Helper()
	p, err := e.svc.Authenticate(e.ctx, bearer)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	return p
}

func TestAuthorizeApp(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		tm := e.team(t, "Authz")
		other := e.team(t, "Other team")
		appA, appB := e.app(t, tm.ws.ID, "A"), e.app(t, tm.ws.ID, "B")
		secret := func(appID string) tenant.Principal {
			tok, _, err := e.svc.CreateAppSecret(e.ctx, appID, "s")
			if err != nil {
				t.Fatalf("CreateAppSecret: %v", err)
			}
			return e.authenticate(t, tok)
		}
		apiKey := func(appID string) tenant.Principal {
			key, _, err := e.svc.CreateAPIKey(e.ctx, appID, "k")
			if err != nil {
				t.Fatalf("CreateAPIKey: %v", err)
			}
			return e.authenticate(t, key)
		}

		const ok, no = true, false
		cases := []struct {
			name                string
			p                   tenant.Principal
			read, write, manage bool
		}{
			{"app secret of the app", secret(appA.ID), ok, ok, ok},
			{"app secret of another app", secret(appB.ID), no, no, no},
			{"api key of the app", apiKey(appA.ID), ok, ok, no},
			{"api key of another app", apiKey(appB.ID), no, no, no},
			{"workspace member", tm.pUser, ok, no, no},
			{"workspace admin", tm.pAdmin, ok, ok, ok},
			{"workspace owner", tm.pOwner, ok, ok, ok},
			{"owner of another workspace", other.pOwner, no, no, no},
			{"admin of another workspace", other.pAdmin, no, no, no},
			{"zero principal", tenant.Principal{}, no, no, no},
		}
		for _, tc := range cases {
			for _, lv := range []struct {
				name string
				need tenant.Access
				want bool
			}{{"read", tenant.AccessRead, tc.read}, {"write", tenant.AccessWrite, tc.write}, {"manage", tenant.AccessManage, tc.manage}} {
				err := tc.p.AuthorizeApp(appA, lv.need)
				if lv.want && err != nil {
					t.Errorf("%s AuthorizeApp(%s) = %v; want nil", tc.name, lv.name, err)
				}
				if !lv.want && !errors.Is(err, tenant.ErrForbidden) {
					t.Errorf("%s AuthorizeApp(%s) = %v; want ErrForbidden", tc.name, lv.name, err)
				}
			}
		}
	})
}

func TestAuthenticate(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		tm := e.team(t, "Authn")
		app := e.app(t, tm.ws.ID, "Shop")
		other := e.app(t, tm.ws.ID, "Other")

		appTok, appRec, err := e.svc.CreateAppSecret(e.ctx, app.ID, " ci ")
		if err != nil {
			t.Fatalf("CreateAppSecret: %v", err)
		}
		if appRec.Name != "ci" || appRec.AppID != app.ID || appRec.WorkspaceID != "" {
			t.Errorf("app secret record = %+v; want name ci for %s", appRec, app.ID)
		}
		p := e.authenticate(t, appTok)
		if want := (tenant.Principal{Kind: tenant.KindAppSecret, CredentialID: appRec.ID, AppID: app.ID}); p != want {
			t.Errorf("Authenticate(app secret) = %+v; want %+v", p, want)
		}
		if _, _, err := e.svc.CreateAppSecret(e.ctx, "nope", ""); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("CreateAppSecret(unknown app) = %v; want ErrAppNotFound", err)
		}

		wsTok, wsRec, err := e.svc.CreateWorkspaceSecret(e.ctx, tm.ws.ID, "", "ops")
		if err != nil {
			t.Fatalf("CreateWorkspaceSecret: %v", err)
		}
		p = e.authenticate(t, wsTok)
		if want := (tenant.Principal{Kind: tenant.KindWorkspaceSecret, CredentialID: wsRec.ID, WorkspaceID: tm.ws.ID,
			MemberID: tm.owner.ID, Role: tenant.RoleOwner}); p != want {
			t.Errorf("Authenticate(workspace secret for the first owner) = %+v; want %+v", p, want)
		}
		if p := e.principal(t, tm.ws.ID, "MEMBER@team.example"); p.MemberID != tm.member.ID {
			t.Errorf("CreateWorkspaceSecret(by e-mail) acts for %s; want %s", p.MemberID, tm.member.ID)
		}
		if _, _, err := e.svc.CreateWorkspaceSecret(e.ctx, tm.ws.ID, "stranger@team.example", ""); !errors.Is(err, tenant.ErrMemberNotFound) {
			t.Errorf("CreateWorkspaceSecret(not a member) = %v; want ErrMemberNotFound", err)
		}

		key, keyRec, err := e.svc.CreateAPIKey(e.ctx, app.ID, "")
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		if !strings.HasPrefix(key, tenant.APIKeyPrefix) || keyRec.Last4 != key[len(key)-4:] || keyRec.Nickname != "API key" ||
			keyRec.KeyHash == key || strings.Contains(keyRec.KeyHash, key[len(tenant.APIKeyPrefix):]) {
			t.Errorf("CreateAPIKey record = %+v; want a keyed hash, last4 and the default nickname", keyRec)
		}
		if _, _, err := e.svc.CreateAPIKey(e.ctx, "nope", ""); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("CreateAPIKey(unknown app) = %v; want ErrAppNotFound", err)
		}
		var ie *tenant.InvalidError
		if _, _, err := e.svc.CreateAPIKey(e.ctx, app.ID, strings.Repeat("n", 101)); !errors.As(err, &ie) {
			t.Errorf("CreateAPIKey(long nickname) = %v; want *InvalidError", err)
		}
		if p := e.authenticate(t, key); p != (tenant.Principal{Kind: tenant.KindAPIKey, CredentialID: keyRec.ID, AppID: app.ID}) {
			t.Errorf("Authenticate(api key) = %+v; want the key of %s", p, app.ID)
		}
		revokedKey, revokedKeyRec, err := e.svc.CreateAPIKey(e.ctx, app.ID, "old")
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		if _, err := e.svc.RevokeAPIKey(e.ctx, other.ID, revokedKeyRec.ID); !errors.Is(err, tenant.ErrAPIKeyNotFound) {
			t.Errorf("RevokeAPIKey(through another app) = %v; want ErrAPIKeyNotFound", err)
		}
		if k, err := e.svc.RevokeAPIKey(e.ctx, app.ID, revokedKeyRec.ID); err != nil || k.RevokedAt == nil {
			t.Fatalf("RevokeAPIKey = %+v, %v; want it revoked", k, err)
		}

		revokedTok, revokedRec, err := e.svc.CreateAppSecret(e.ctx, app.ID, "old")
		if err != nil {
			t.Fatalf("CreateAppSecret: %v", err)
		}
		if err := e.svc.RevokeSecret(e.ctx, revokedRec.ID); err != nil {
			t.Fatalf("RevokeSecret: %v", err)
		}
		if err := e.svc.RevokeSecret(e.ctx, "nope"); !errors.Is(err, tenant.ErrSecretNotFound) {
			t.Errorf("RevokeSecret(unknown) = %v; want ErrSecretNotFound", err)
		}

		// A token of another type carrying exactly an app secret's claims.
		accessTok, err := e.keys.Sign(token.TypeAccess, map[string]any{"iss": issuer, "sub": app.ID, "aud": app.ID,
			"iat": t0.Unix(), "jti": appRec.ID, "scope": "app"})
		if err != nil {
			t.Fatalf("Sign(access): %v", err)
		}
		// API-secret tokens with the right type and key whose claims do not match their row.
		forge := func(claims map[string]any) string {
			t.Helper()
			tok, err := e.keys.Sign(token.TypeAPISecret, claims)
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
		foreign := token.NewKeyring()
		foreign.Replace(strange, nil, nil)
		foreignTok, err := foreign.Sign(token.TypeAPISecret, map[string]any{"iss": issuer, "sub": app.ID, "aud": app.ID, "jti": appRec.ID, "scope": "app"})
		if err != nil {
			t.Fatalf("Sign(foreign): %v", err)
		}
		// The secret of a member that is then removed.
		goneTok := e.wsSecret(t, tm.ws.ID, tm.admin.ID)
		if err := e.svc.RemoveMember(e.ctx, tm.pOwner, tm.ws.ID, tm.admin.ID); err != nil {
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
			if p, err := e.svc.Authenticate(e.ctx, bearer); !errors.Is(err, tenant.ErrUnauthorized) {
				t.Errorf("Authenticate(%s) = %+v, %v; want ErrUnauthorized", name, p, err)
			}
		}
		// The same claims under the right type do authenticate, so the cases above fail for the reason named.
		if p := e.authenticate(t, forge(map[string]any{"iss": "https://old-name.example", "aud": app.ID, "jti": appRec.ID, "scope": "app"})); p.CredentialID != appRec.ID {
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
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		tm := e.team(t, "Reissue")
		app := e.app(t, tm.ws.ID, "Shop")
		appTok, appRec, err := e.svc.CreateAppSecret(e.ctx, app.ID, "dev")
		if err != nil {
			t.Fatalf("CreateAppSecret: %v", err)
		}
		wsTok, wsRec, err := e.svc.CreateWorkspaceSecret(e.ctx, tm.ws.ID, tm.admin.ID, "dev")
		if err != nil {
			t.Fatalf("CreateWorkspaceSecret: %v", err)
		}
		for _, tc := range []struct {
			name string
			tok  string
			rec  tenant.APISecret
		}{{"app secret", appTok, appRec}, {"workspace secret", wsTok, wsRec}} {
			again, rec, err := e.svc.ReissueSecret(e.ctx, tc.rec.ID)
			if err != nil {
				t.Fatalf("ReissueSecret(%s): %v", tc.name, err)
			}
			if again == tc.tok || rec.ID != tc.rec.ID {
				t.Errorf("ReissueSecret(%s) = same token %v, id %s; want a new token for %s", tc.name, again == tc.tok, rec.ID, tc.rec.ID)
			}
			p1, p2 := e.authenticate(t, tc.tok), e.authenticate(t, again)
			if p1 != p2 || p2.CredentialID != tc.rec.ID {
				t.Errorf("ReissueSecret(%s): old token is %+v, new is %+v; want the same credential %s", tc.name, p1, p2, tc.rec.ID)
			}
		}
		if err := e.svc.RevokeSecret(e.ctx, appRec.ID); err != nil {
			t.Fatalf("RevokeSecret: %v", err)
		}
		if _, _, err := e.svc.ReissueSecret(e.ctx, appRec.ID); !errors.Is(err, tenant.ErrSecretNotFound) {
			t.Errorf("ReissueSecret(revoked) = %v; want ErrSecretNotFound", err)
		}
		if _, _, err := e.svc.ReissueSecret(e.ctx, "nope"); !errors.Is(err, tenant.ErrSecretNotFound) {
			t.Errorf("ReissueSecret(unknown) = %v; want ErrSecretNotFound", err)
		}
		list, err := e.svc.ListSecrets(e.ctx, app.ID, "")
		if err != nil || len(list) != 1 || list[0].RevokedAt == nil {
			t.Errorf("ListSecrets(app) = %+v, %v; want the one revoked secret", list, err)
		}
	})
}
