package tenant_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

func ptr[T any](v T) *T { return &v }

// app creates an app with the given name and origin and no other settings.
func (e *env) app(t *testing.T, workspaceID, name string) tenant.App {
	t.Helper()
	a, err := e.svc.CreateApp(e.ctx, workspaceID, tenant.AppSettings{Name: ptr(name), Origin: ptr("https://" + tenant.Slugify(name) + ".example")})
	if err != nil {
		t.Fatalf("CreateApp(%q): %v", name, err)
	}
	return a
}

func TestCreateAppDefaults(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ws, _ := e.workspace(t, "Apps")
		a, err := e.svc.CreateApp(e.ctx, ws.ID, tenant.AppSettings{Name: ptr(" My Shop! "), Origin: ptr("HTTPS://Shop.Example:8443/")})
		if err != nil {
			t.Fatalf("CreateApp: %v", err)
		}
		got, err := e.svc.GetApp(e.ctx, a.ID)
		if err != nil {
			t.Fatalf("GetApp: %v", err)
		}
		now := t0.Truncate(time.Microsecond)
		want := tenant.App{ID: a.ID, WorkspaceID: ws.ID, Name: "My Shop!", Slug: "my-shop", Origin: "https://shop.example:8443",
			AllowedOrigins: []string{}, PublicSignup: true, ProfileManagement: true, ServiceBranding: true, EmailAuthType: "magic",
			AutoRefresh: true, AccessExpiration: 900, RefreshExpiration: 7 * 24 * 3600, MagicLinkExpiration: 600,
			AllowedIdentifiers: []string{"email", "phone"}, RequiredIdentifiers: []string{}, MetaSchema: []byte("[]"),
			CreatedAt: now, UpdatedAt: now}
		if !reflect.DeepEqual(a, want) {
			t.Errorf("CreateApp = %+v;\nwant %+v", a, want)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GetApp = %+v;\nwant %+v", got, want)
		}

		if _, err := e.svc.CreateApp(e.ctx, ws.ID, tenant.AppSettings{Name: ptr("my shop"), Origin: ptr("https://b.example")}); !errors.Is(err, tenant.ErrSlugTaken) {
			t.Errorf("CreateApp(same slug in workspace) = %v; want ErrSlugTaken", err)
		}
		ws2, _ := e.workspace(t, "Apps 2")
		if _, err := e.svc.CreateApp(e.ctx, ws2.ID, tenant.AppSettings{Name: ptr("My shop"), Origin: ptr("https://b.example")}); err != nil {
			t.Errorf("CreateApp(same slug in another workspace) = %v; want nil", err)
		}
		if _, err := e.svc.CreateApp(e.ctx, "no-such-workspace", tenant.AppSettings{Name: ptr("X"), Origin: ptr("https://x.example")}); !errors.Is(err, tenant.ErrWorkspaceNotFound) {
			t.Errorf("CreateApp(unknown workspace) = %v; want ErrWorkspaceNotFound", err)
		}
		if _, err := e.svc.GetApp(e.ctx, "nope"); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("GetApp(unknown) = %v; want ErrAppNotFound", err)
		}
		list, err := e.svc.ListApps(e.ctx, ws.ID)
		if err != nil || len(list) != 1 || list[0].ID != a.ID {
			t.Errorf("ListApps = %d apps, %v; want just %s", len(list), err, a.ID)
		}
	})
}

func TestAppSettingsValidation(t *testing.T) {
	okSchema := appuser.Schema{{ID: "1", Name: "Nick", FieldName: "nick", FieldType: appuser.FieldString}}
	cases := []struct {
		name  string
		in    tenant.AppSettings
		field string // "" when valid
		check func(tenant.App) bool
	}{
		{"missing name", tenant.AppSettings{Name: nil}, "name", nil},
		{"blank name", tenant.AppSettings{Name: ptr("  ")}, "name", nil},
		{"missing origin", tenant.AppSettings{Origin: nil}, "origin", nil},
		{"origin with path", tenant.AppSettings{Origin: ptr("https://a.example/app")}, "origin", nil},
		{"origin with query", tenant.AppSettings{Origin: ptr("https://a.example?x=1")}, "origin", nil},
		{"origin with fragment", tenant.AppSettings{Origin: ptr("https://a.example#top")}, "origin", nil},
		{"origin with user", tenant.AppSettings{Origin: ptr("https://me@a.example")}, "origin", nil},
		{"origin without scheme", tenant.AppSettings{Origin: ptr("a.example")}, "origin", nil},
		{"origin of another scheme", tenant.AppSettings{Origin: ptr("ftp://a.example")}, "origin", nil},
		{"origin without host name", tenant.AppSettings{Origin: ptr("https://:443")}, "origin", nil},
		{"origin with trailing slash", tenant.AppSettings{Origin: ptr("https://A.example/")}, "",
			func(a tenant.App) bool { return a.Origin == "https://a.example" }},
		{"allowed origin with path", tenant.AppSettings{AllowedOrigins: ptr([]string{"https://b.example/x"})}, "allowed_origins", nil},
		{"allowed origins deduplicated", tenant.AppSettings{AllowedOrigins: ptr([]string{"https://b.example", "https://B.example/", "http://localhost:3000"})}, "",
			func(a tenant.App) bool {
				return reflect.DeepEqual(a.AllowedOrigins, []string{"https://b.example", "http://localhost:3000"})
			}},
		{"too many allowed origins", tenant.AppSettings{AllowedOrigins: ptr(slices.Repeat([]string{"https://b.example"}, 21))}, "allowed_origins", nil},
		{"relative login_url", tenant.AppSettings{LoginURL: ptr("/login")}, "login_url", nil},
		{"login_url without host", tenant.AppSettings{LoginURL: ptr("https:///login")}, "login_url", nil},
		{"login_url without host name", tenant.AppSettings{LoginURL: ptr("https://:8080/login")}, "login_url", nil},
		{"javascript login_url", tenant.AppSettings{LoginURL: ptr("javascript:alert(1)")}, "login_url", nil},
		{"absolute login_url", tenant.AppSettings{LoginURL: ptr("https://a.example/login?next=1")}, "",
			func(a tenant.App) bool { return a.LoginURL == "https://a.example/login?next=1" }},
		{"relative callback_url", tenant.AppSettings{CallbackURL: ptr("cb")}, "callback_url", nil},
		{"relative logo", tenant.AppSettings{Logo: ptr("logo.png")}, "logo", nil},
		{"relative logo_dark", tenant.AppSettings{LogoDark: ptr("dark.png")}, "logo_dark", nil},
		{"access below minimum", tenant.AppSettings{AccessExpiration: ptr[int64](59)}, "access_expiration", nil},
		{"access above maximum", tenant.AppSettings{AccessExpiration: ptr[int64](3601)}, "access_expiration", nil},
		{"access at bounds", tenant.AppSettings{AccessExpiration: ptr[int64](3600)}, "",
			func(a tenant.App) bool { return a.AccessExpiration == 3600 }},
		{"refresh below minimum", tenant.AppSettings{RefreshExpiration: ptr[int64](299), AccessExpiration: ptr[int64](60)}, "refresh_expiration", nil},
		{"refresh above maximum", tenant.AppSettings{RefreshExpiration: ptr[int64](30*24*3600 + 1)}, "refresh_expiration", nil},
		{"refresh shorter than access", tenant.AppSettings{RefreshExpiration: ptr[int64](300), AccessExpiration: ptr[int64](600)}, "refresh_expiration", nil},
		{"refresh at minimum", tenant.AppSettings{RefreshExpiration: ptr[int64](300), AccessExpiration: ptr[int64](300)}, "",
			func(a tenant.App) bool { return a.RefreshExpiration == 300 && a.AccessExpiration == 300 }},
		{"magic link below minimum", tenant.AppSettings{MagicLinkExpiration: ptr[int64](59)}, "magic_link_expiration", nil},
		{"magic link above maximum", tenant.AppSettings{MagicLinkExpiration: ptr[int64](601)}, "magic_link_expiration", nil},
		{"email_auth_type link", tenant.AppSettings{EmailAuthType: ptr("link")}, "email_auth_type", nil},
		{"email_auth_type otp", tenant.AppSettings{EmailAuthType: ptr("otp")}, "",
			func(a tenant.App) bool { return a.EmailAuthType == "otp" }},
		{"allowed identifiers empty", tenant.AppSettings{AllowedIdentifiers: ptr([]string{})}, "allowed_identifiers", nil},
		{"allowed identifiers unknown", tenant.AppSettings{AllowedIdentifiers: ptr([]string{"email", "username"})}, "allowed_identifiers", nil},
		{"required not allowed", tenant.AppSettings{AllowedIdentifiers: ptr([]string{"email"}), RequiredIdentifiers: ptr([]string{"phone"})}, "required_identifiers", nil},
		{"required unknown", tenant.AppSettings{RequiredIdentifiers: ptr([]string{"passkey"})}, "required_identifiers", nil},
		{"required subset", tenant.AppSettings{AllowedIdentifiers: ptr([]string{"phone", "email", "phone"}), RequiredIdentifiers: ptr([]string{"email"})}, "",
			func(a tenant.App) bool {
				return reflect.DeepEqual(a.AllowedIdentifiers, []string{"phone", "email"}) && reflect.DeepEqual(a.RequiredIdentifiers, []string{"email"})
			}},
		{"meta schema bad field name", tenant.AppSettings{MetaSchema: ptr(appuser.Schema{{Name: "X", FieldName: "Bad Name", FieldType: appuser.FieldString}})}, "user_meta_data_schema", nil},
		{"meta schema bad type", tenant.AppSettings{MetaSchema: ptr(appuser.Schema{{Name: "X", FieldName: "x", FieldType: "blob"}})}, "user_meta_data_schema", nil},
		{"meta schema duplicate", tenant.AppSettings{MetaSchema: ptr(append(okSchema, okSchema[0]))}, "user_meta_data_schema", nil},
		{"meta schema ok", tenant.AppSettings{MetaSchema: ptr(okSchema)}, "",
			func(a tenant.App) bool { return reflect.DeepEqual(appuser.SchemaOf(a), okSchema) }},
		{"slug upper case", tenant.AppSettings{Slug: ptr("Shop")}, "slug", nil},
	}
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ws, _ := e.workspace(t, "Validation")
		base := e.app(t, ws.ID, "Base")
		for i, tc := range cases {
			in := tc.in
			// Each case sets only what it tests; fill in the required fields.
			if in.Name == nil && tc.field != "name" {
				in.Name = ptr("App " + string(rune('a'+i%26)) + strings.Repeat("x", i/26))
			}
			if in.Origin == nil && tc.field != "origin" {
				in.Origin = ptr("https://ok.example")
			}
			a, err := e.svc.CreateApp(e.ctx, ws.ID, in)
			checkInvalid(t, "CreateApp("+tc.name+")", err, tc.field)
			if err == nil && tc.check != nil {
				stored, gerr := e.svc.GetApp(e.ctx, a.ID)
				if gerr != nil || !tc.check(a) || !tc.check(stored) {
					t.Errorf("CreateApp(%s) = %+v (stored %+v, %v); want the setting applied", tc.name, a, stored, gerr)
				}
			}
			// The same rules hold on update, where unset fields are kept.
			if tc.field == "name" || (tc.field == "origin" && tc.in.Origin == nil) {
				continue
			}
			upd := tc.in
			upd.Name = nil
			u, err := e.svc.UpdateApp(e.ctx, ws.ID, base.ID, upd)
			checkInvalid(t, "UpdateApp("+tc.name+")", err, tc.field)
			if err == nil && tc.check != nil && !tc.check(u) {
				t.Errorf("UpdateApp(%s) = %+v; want the setting applied", tc.name, u)
			}
			if err != nil {
				stored, _ := e.svc.GetApp(e.ctx, base.ID)
				if stored.Name != "Base" || !stored.UpdatedAt.Equal(base.UpdatedAt) {
					t.Errorf("UpdateApp(%s) failed but stored app changed: %+v", tc.name, stored)
				}
			}
			// Put the base app back so that cases do not depend on each other.
			reset := tenant.AppSettings{Origin: ptr(base.Origin), AllowedOrigins: ptr(base.AllowedOrigins), LoginURL: ptr(""),
				AccessExpiration: ptr(base.AccessExpiration), RefreshExpiration: ptr(base.RefreshExpiration),
				AllowedIdentifiers: ptr(base.AllowedIdentifiers), RequiredIdentifiers: ptr(base.RequiredIdentifiers),
				EmailAuthType: ptr(base.EmailAuthType), MetaSchema: ptr(appuser.Schema{})}
			if _, err := e.svc.UpdateApp(e.ctx, ws.ID, base.ID, reset); err != nil {
				t.Fatalf("UpdateApp(reset): %v", err)
			}
		}
	})
}

func checkInvalid(t *testing.T, what string, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Errorf("%s = %v; want nil", what, err)
		}
		return
	}
	var ie *tenant.InvalidError
	if !errors.As(err, &ie) || ie.Field != field {
		t.Errorf("%s = %v; want *InvalidError on %s", what, err, field)
	}
}

func TestUpdateApp(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ws, _ := e.workspace(t, "Updates")
		a, err := e.svc.CreateApp(e.ctx, ws.ID, tenant.AppSettings{Name: ptr("Shop"), Origin: ptr("https://shop.example"),
			LoginURL: ptr("https://shop.example/login"), AccessExpiration: ptr[int64](600), EmailAuthType: ptr("otp")})
		if err != nil {
			t.Fatalf("CreateApp: %v", err)
		}
		e.app(t, ws.ID, "Other")
		e.clock.Advance(time.Minute)

		u, err := e.svc.UpdateApp(e.ctx, ws.ID, a.ID, tenant.AppSettings{Name: ptr("Shop 2"), PublicSignup: ptr(false)})
		if err != nil {
			t.Fatalf("UpdateApp: %v", err)
		}
		want := a
		want.Name, want.PublicSignup, want.UpdatedAt = "Shop 2", false, t0.Add(time.Minute).Truncate(time.Microsecond)
		stored, err := e.svc.GetApp(e.ctx, a.ID)
		if err != nil {
			t.Fatalf("GetApp: %v", err)
		}
		for _, got := range []tenant.App{u, stored} {
			if !reflect.DeepEqual(got, want) {
				t.Errorf("after a partial update app = %+v;\nwant %+v", got, want)
			}
		}

		if _, err := e.svc.UpdateApp(e.ctx, ws.ID, a.ID, tenant.AppSettings{Slug: ptr("other")}); !errors.Is(err, tenant.ErrSlugTaken) {
			t.Errorf("UpdateApp(taken slug) = %v; want ErrSlugTaken", err)
		}
		ws2, _ := e.workspace(t, "Not yours")
		if _, err := e.svc.UpdateApp(e.ctx, ws2.ID, a.ID, tenant.AppSettings{Name: ptr("Stolen")}); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("UpdateApp(app of another workspace) = %v; want ErrAppNotFound", err)
		}
		if _, err := e.svc.UpdateApp(e.ctx, ws.ID, "nope", tenant.AppSettings{Name: ptr("X")}); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("UpdateApp(unknown) = %v; want ErrAppNotFound", err)
		}
		// A refresh lifetime shorter than the stored access lifetime is refused.
		checkInvalid(t, "UpdateApp(refresh below stored access)", func() error {
			_, err := e.svc.UpdateApp(e.ctx, ws.ID, a.ID, tenant.AppSettings{RefreshExpiration: ptr[int64](300)})
			return err
		}(), "refresh_expiration")
		// So is narrowing allowed identifiers below the stored required ones.
		if _, err := e.svc.UpdateApp(e.ctx, ws.ID, a.ID, tenant.AppSettings{RequiredIdentifiers: ptr([]string{"phone"})}); err != nil {
			t.Fatalf("UpdateApp(required phone): %v", err)
		}
		checkInvalid(t, "UpdateApp(allowed without required)", func() error {
			_, err := e.svc.UpdateApp(e.ctx, ws.ID, a.ID, tenant.AppSettings{AllowedIdentifiers: ptr([]string{"email"})})
			return err
		}(), "required_identifiers")
	})
}

func TestDeleteApp(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ws, _ := e.workspace(t, "Deletes")
		doomed, kept := e.app(t, ws.ID, "Doomed"), e.app(t, ws.ID, "Kept")
		users := appuser.New(appuser.Deps{DB: db, Keyring: e.keys, Hasher: e.hasher, Issuer: issuer, Now: e.clock.Now})
		var doomedIDs []string
		for _, who := range []string{"a@users.example", "b@users.example"} {
			u, _, err := users.Create(e.ctx, doomed, appuser.CreateInput{Identifier: who})
			if err != nil {
				t.Fatalf("Create(%s): %v", who, err)
			}
			doomedIDs = append(doomedIDs, u.ID)
		}
		keptUser, _, err := users.Create(e.ctx, kept, appuser.CreateInput{Identifier: "a@users.example"})
		if err != nil {
			t.Fatalf("Create in kept app: %v", err)
		}
		secret, _, err := e.svc.CreateAppSecret(e.ctx, doomed.ID, "ci")
		if err != nil {
			t.Fatalf("CreateAppSecret: %v", err)
		}
		key, _, err := e.svc.CreateAPIKey(e.ctx, doomed.ID, "")
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}

		ws2, _ := e.workspace(t, "Intruder")
		if err := e.svc.DeleteApp(e.ctx, ws2.ID, doomed.ID); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("DeleteApp(from another workspace) = %v; want ErrAppNotFound", err)
		}
		if _, err := users.Get(e.ctx, doomed, doomedIDs[0]); err != nil {
			t.Fatalf("a refused DeleteApp removed users: Get = %v", err)
		}

		if err := e.svc.DeleteApp(e.ctx, ws.ID, doomed.ID); err != nil {
			t.Fatalf("DeleteApp: %v", err)
		}
		if _, err := e.svc.GetApp(e.ctx, doomed.ID); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("GetApp(deleted) = %v; want ErrAppNotFound", err)
		}
		for _, id := range doomedIDs {
			if _, err := db.GetAppUser(e.ctx, doomed.ID, id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetAppUser(%s of deleted app) = %v; want ErrNotFound", id, err)
			}
		}
		if _, err := users.Get(e.ctx, kept, keptUser.ID); err != nil {
			t.Errorf("Get(user of the other app) = %v; want nil", err)
		}
		for what, tok := range map[string]string{"app secret": secret, "api key": key} {
			if _, err := e.svc.Authenticate(e.ctx, tok); !errors.Is(err, tenant.ErrUnauthorized) {
				t.Errorf("Authenticate(%s of deleted app) = %v; want ErrUnauthorized", what, err)
			}
		}
		if err := e.svc.DeleteApp(e.ctx, ws.ID, doomed.ID); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("DeleteApp(twice) = %v; want ErrAppNotFound", err)
		}
		// The person's e-mail is free again in a new app.
		again := e.app(t, ws.ID, "Doomed")
		if _, _, err := users.Create(e.ctx, again, appuser.CreateInput{Identifier: "b@users.example"}); err != nil {
			t.Errorf("Create in a new app after delete = %v; want nil", err)
		}
	})
}
