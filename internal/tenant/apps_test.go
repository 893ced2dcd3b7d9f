package tenant_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

func TestCreateAppDefaults(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		ws, _ := sys.Workspace(t, "Apps")
		a, err := sys.Tenants.CreateApp(ctx, operator, ws.ID, tenant.AppSettings{Name: ptr(" My Shop! "), Origin: ptr("HTTPS://Shop.Example:8443/")})
		if err != nil {
			t.Fatalf("CreateApp: %v", err)
		}
		got, err := sys.Tenants.GetApp(ctx, a.ID)
		if err != nil {
			t.Fatalf("GetApp: %v", err)
		}
		now := servertest.Start().Truncate(time.Microsecond)
		want := tenant.App{ID: a.ID, WorkspaceID: ws.ID, Name: "My Shop!", Slug: "my-shop", Origin: "https://shop.example:8443",
			AllowedOrigins: []string{}, PublicSignup: true, ProfileManagement: true, ServiceBranding: true, EmailAuthType: "magic",
			AutoRefresh: true, AccessExpiration: 900, RefreshExpiration: 7 * 24 * 3600, MagicLinkExpiration: 600,
			AllowedIdentifiers: []string{"email", "phone"}, RequiredIdentifiers: []string{}, MetaSchema: []byte("[]"),
			WebauthnUserVerification: "required", WebauthnAttestation: "none", MFAPolicy: "off",
			MFAMethodsAllowed: []string{"totp", "backup_code", "webauthn"}, MFAReverifyMinutes: 10, CreatedAt: now, UpdatedAt: now}
		if !reflect.DeepEqual(a, want) {
			t.Errorf("CreateApp = %+v;\nwant %+v", a, want)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GetApp = %+v;\nwant %+v", got, want)
		}
		if cached, err := sys.Tenants.App(ctx, a.ID); err != nil || !reflect.DeepEqual(cached, want) {
			t.Errorf("App = %+v, %v;\nwant %+v", cached, err, want)
		}

		if _, err := sys.Tenants.CreateApp(ctx, operator, ws.ID, tenant.AppSettings{Name: ptr("my shop"), Origin: ptr("https://b.example")}); !errors.Is(err, tenant.ErrSlugTaken) {
			t.Errorf("CreateApp(same slug in workspace) = %v; want ErrSlugTaken", err)
		}
		ws2, _ := sys.Workspace(t, "Apps 2")
		if _, err := sys.Tenants.CreateApp(ctx, operator, ws2.ID, tenant.AppSettings{Name: ptr("My shop"), Origin: ptr("https://b.example")}); err != nil {
			t.Errorf("CreateApp(same slug in another workspace) = %v; want nil", err)
		}
		if _, err := sys.Tenants.CreateApp(ctx, operator, "no-such-workspace", tenant.AppSettings{Name: ptr("X"), Origin: ptr("https://x.example")}); !errors.Is(err, tenant.ErrWorkspaceNotFound) {
			t.Errorf("CreateApp(unknown workspace) = %v; want ErrWorkspaceNotFound", err)
		}
		if _, err := sys.Tenants.GetApp(ctx, "nope"); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("GetApp(unknown) = %v; want ErrAppNotFound", err)
		}
		if _, err := sys.Tenants.App(ctx, "nope"); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("App(unknown) = %v; want ErrAppNotFound", err)
		}
		list, err := sys.Tenants.ListApps(ctx, operator, ws.ID)
		if err != nil || len(list) != 1 || list[0].ID != a.ID {
			t.Errorf("ListApps = %d apps, %v; want just %s", len(list), err, a.ID)
		}
		if all, err := sys.Tenants.ListApps(ctx, operator, ""); err != nil || len(all) != 2 {
			t.Errorf("ListApps(operator, every workspace) = %d apps, %v; want 2", len(all), err)
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
		{"meta schema bad field name", tenant.AppSettings{MetaSchema: ptr(appuser.Schema{{Name: "X", FieldName: "Bad Name", FieldType: appuser.FieldString}})}, "user_meta_data_schema[0]", nil},
		{"meta schema bad type", tenant.AppSettings{MetaSchema: ptr(appuser.Schema{{Name: "X", FieldName: "x", FieldType: "blob"}})}, "user_meta_data_schema[0]", nil},
		{"meta schema duplicate", tenant.AppSettings{MetaSchema: ptr(append(okSchema, okSchema[0]))}, "user_meta_data_schema[1]", nil},
		{"meta schema ok", tenant.AppSettings{MetaSchema: ptr(okSchema)}, "",
			func(a tenant.App) bool { return reflect.DeepEqual(appuser.SchemaOf(a), okSchema) }},
		{"slug upper case", tenant.AppSettings{Slug: ptr("Shop")}, "slug", nil},
	}
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		ws, _ := sys.Workspace(t, "Validation")
		base := sys.App(t, ws.ID, "Base", nil)
		for i, tc := range cases {
			in := tc.in
			// Each case sets only what it tests; fill in the required fields.
			if in.Name == nil && tc.field != "name" {
				in.Name = ptr("App " + string(rune('a'+i%26)) + strings.Repeat("x", i/26))
			}
			if in.Origin == nil && tc.field != "origin" {
				in.Origin = ptr("https://ok.example")
			}
			a, err := sys.Tenants.CreateApp(ctx, operator, ws.ID, in)
			checkInvalid(t, "CreateApp("+tc.name+")", err, tc.field)
			if err == nil && tc.check != nil {
				stored, gerr := sys.Tenants.GetApp(ctx, a.ID)
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
			u, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, base.ID, upd)
			checkInvalid(t, "UpdateApp("+tc.name+")", err, tc.field)
			if err == nil && tc.check != nil && !tc.check(u) {
				t.Errorf("UpdateApp(%s) = %+v; want the setting applied", tc.name, u)
			}
			if err != nil {
				stored, _ := sys.Tenants.GetApp(ctx, base.ID)
				if stored.Name != "Base" || !stored.UpdatedAt.Equal(base.UpdatedAt) {
					t.Errorf("UpdateApp(%s) failed but stored app changed: %+v", tc.name, stored)
				}
			}
			// Put the base app back so that cases do not depend on each other.
			reset := tenant.AppSettings{Origin: ptr(base.Origin), AllowedOrigins: ptr(base.AllowedOrigins), LoginURL: ptr(""),
				AccessExpiration: ptr(base.AccessExpiration), RefreshExpiration: ptr(base.RefreshExpiration),
				AllowedIdentifiers: ptr(base.AllowedIdentifiers), RequiredIdentifiers: ptr(base.RequiredIdentifiers),
				EmailAuthType: ptr(base.EmailAuthType), MetaSchema: ptr(appuser.Schema{})}
			if _, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, base.ID, reset); err != nil {
				t.Fatalf("UpdateApp(reset): %v", err)
			}
		}
	})
}

// TestInvalidSettingsError checks the whole error a caller gets for a
// setting that breaks a rule: an *errs.Invalid naming the field, with a
// reason that does not repeat it, wrapped with the operation.
func TestInvalidSettingsError(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		ws, _ := sys.Workspace(t, "Invalid")
		a := sys.App(t, ws.ID, "Shop", nil)
		cases := []struct {
			name          string
			do            func() error
			op            string
			field, reason string
		}{
			{"app slug", func() error {
				_, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, a.ID, tenant.AppSettings{Slug: ptr("Not A Slug")})
				return err
			}, "update app", "slug", "must be lower-case letters, digits and dashes"},
			{"app origin", func() error {
				_, err := sys.Tenants.CreateApp(ctx, operator, ws.ID, tenant.AppSettings{Name: ptr("X"), Origin: ptr("https://x.example/path")})
				return err
			}, "create app", "origin", "must be an origin such as https://app.example.com"},
			{"app name", func() error {
				_, err := sys.Tenants.CreateApp(ctx, operator, ws.ID, tenant.AppSettings{Name: ptr(strings.Repeat("n", 101)), Origin: ptr("https://x.example")})
				return err
			}, "create app", "name", "must be at most 100 characters"},
			{"app schema field", func() error {
				_, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, a.ID, tenant.AppSettings{MetaSchema: ptr(appuser.Schema{
					{Name: "Nick", FieldName: "nick", FieldType: appuser.FieldString}, {Name: "X", FieldName: "x", FieldType: "blob"}})})
				return err
			}, "update app", "user_meta_data_schema[1]", "has an unknown field_type"},
			{"workspace slug", func() error {
				_, err := sys.Tenants.UpdateWorkspace(ctx, operator, ws.ID, tenant.WorkspacePatch{Slug: ptr("UPPER")})
				return err
			}, "update workspace", "slug", "must be lower-case letters, digits and dashes"},
			{"workspace name", func() error {
				_, err := sys.Tenants.CreateWorkspace(ctx, operator, tenant.WorkspaceInput{Name: " ", OwnerEmail: "a@b.example"})
				return err
			}, "create workspace", "name", "is required"},
			{"member e-mail", func() error {
				_, err := sys.Tenants.AddMember(ctx, operator, ws.ID, "nobody", "", "")
				return err
			}, "add member", "email", "must be an e-mail address"},
			{"api key nickname", func() error {
				_, _, err := sys.Tenants.CreateAPIKey(ctx, operator, a.ID, strings.Repeat("n", 101))
				return err
			}, "create api key", "nickname", "must be at most 100 characters"},
		}
		for _, tc := range cases {
			err := tc.do()
			var ie *errs.Invalid
			if !errors.As(err, &ie) {
				t.Errorf("%s = %v; want *errs.Invalid", tc.name, err)
				continue
			}
			if ie.Field != tc.field || ie.Reason != tc.reason {
				t.Errorf("%s = {Field: %q, Reason: %q}; want {Field: %q, Reason: %q}", tc.name, ie.Field, ie.Reason, tc.field, tc.reason)
			}
			base, _, _ := strings.Cut(tc.field, "[")
			if strings.HasPrefix(ie.Reason, base) {
				t.Errorf("%s reason %q starts with the field %q", tc.name, ie.Reason, base)
			}
			if want := tc.op + ": " + tc.field + " " + tc.reason; err.Error() != want {
				t.Errorf("%s error = %q; want %q", tc.name, err.Error(), want)
			}
		}
		if got, err := sys.Tenants.GetApp(ctx, a.ID); err != nil || !reflect.DeepEqual(got, a) {
			t.Errorf("app after refused updates = %+v, %v; want %+v", got, err, a)
		}
	})
}

func TestUpdateApp(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		ws, _ := sys.Workspace(t, "Updates")
		a := sys.App(t, ws.ID, "Shop", func(in *tenant.AppSettings) {
			in.LoginURL, in.AccessExpiration, in.EmailAuthType = ptr("https://shop.example/login"), ptr[int64](600), ptr("otp")
		})
		sys.App(t, ws.ID, "Other", nil)
		sys.Clock.Advance(time.Minute)

		u, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, a.ID, tenant.AppSettings{Name: ptr("Shop 2"), PublicSignup: ptr(false)})
		if err != nil {
			t.Fatalf("UpdateApp: %v", err)
		}
		want := a
		want.Name, want.PublicSignup, want.UpdatedAt = "Shop 2", false, servertest.Start().Add(time.Minute).Truncate(time.Microsecond)
		stored, err := sys.Tenants.GetApp(ctx, a.ID)
		if err != nil {
			t.Fatalf("GetApp: %v", err)
		}
		for _, got := range []tenant.App{u, stored} {
			if !reflect.DeepEqual(got, want) {
				t.Errorf("after a partial update app = %+v;\nwant %+v", got, want)
			}
		}

		if _, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, a.ID, tenant.AppSettings{Slug: ptr("other")}); !errors.Is(err, tenant.ErrSlugTaken) {
			t.Errorf("UpdateApp(taken slug) = %v; want ErrSlugTaken", err)
		}
		ws2, owner2 := sys.Workspace(t, "Not yours")
		if _, err := sys.Tenants.UpdateApp(ctx, operator, ws2.ID, a.ID, tenant.AppSettings{Name: ptr("Stolen")}); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("UpdateApp(app of another workspace) = %v; want ErrAppNotFound", err)
		}
		// The owner of another workspace naming its own workspace finds no such app there.
		p2 := principal(t, sys, ws2.ID, owner2.ID)
		if _, err := sys.Tenants.UpdateApp(ctx, p2, ws2.ID, a.ID, tenant.AppSettings{Name: ptr("Stolen")}); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("UpdateApp(by another workspace's owner, through its workspace) = %v; want ErrAppNotFound", err)
		}
		if err := sys.Tenants.DeleteApp(ctx, p2, ws2.ID, a.ID); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("DeleteApp(by another workspace's owner, through its workspace) = %v; want ErrAppNotFound", err)
		}
		if _, err := sys.Tenants.WorkspaceApp(ctx, p2, ws2.ID, a.ID); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("WorkspaceApp(by another workspace's owner, through its workspace) = %v; want ErrAppNotFound", err)
		}
		if got, err := sys.Tenants.GetApp(ctx, a.ID); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("after refused updates app = %+v, %v;\nwant %+v", got, err, want)
		}
		if _, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, "nope", tenant.AppSettings{Name: ptr("X")}); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("UpdateApp(unknown) = %v; want ErrAppNotFound", err)
		}
		// A refresh lifetime shorter than the stored access lifetime is refused.
		checkInvalid(t, "UpdateApp(refresh below stored access)", func() error {
			_, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, a.ID, tenant.AppSettings{RefreshExpiration: ptr[int64](300)})
			return err
		}(), "refresh_expiration")
		// So is narrowing allowed identifiers below the stored required ones.
		if _, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, a.ID, tenant.AppSettings{RequiredIdentifiers: ptr([]string{"phone"})}); err != nil {
			t.Fatalf("UpdateApp(required phone): %v", err)
		}
		checkInvalid(t, "UpdateApp(allowed without required)", func() error {
			_, err := sys.Tenants.UpdateApp(ctx, operator, ws.ID, a.ID, tenant.AppSettings{AllowedIdentifiers: ptr([]string{"email"})})
			return err
		}(), "required_identifiers")
	})
}

func TestDeleteApp(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		ws, _ := sys.Workspace(t, "Deletes")
		doomed, kept := sys.App(t, ws.ID, "Doomed", nil), sys.App(t, ws.ID, "Kept", nil)
		var doomedIDs []string
		for _, who := range []string{"a@users.example", "b@users.example"} {
			u, _, err := sys.Users.Create(ctx, operator, doomed, appuser.CreateInput{Identifier: who})
			if err != nil {
				t.Fatalf("Create(%s): %v", who, err)
			}
			doomedIDs = append(doomedIDs, u.ID)
		}
		keptUser, _, err := sys.Users.Create(ctx, operator, kept, appuser.CreateInput{Identifier: "a@users.example"})
		if err != nil {
			t.Fatalf("Create in kept app: %v", err)
		}
		secret := sys.AppSecret(t, doomed.ID)
		key, _, err := sys.Tenants.CreateAPIKey(ctx, operator, doomed.ID, "")
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}

		ws2, _ := sys.Workspace(t, "Intruder")
		if err := sys.Tenants.DeleteApp(ctx, operator, ws2.ID, doomed.ID); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("DeleteApp(from another workspace) = %v; want ErrAppNotFound", err)
		}
		if _, err := sys.Users.Get(ctx, operator, doomed, doomedIDs[0]); err != nil {
			t.Fatalf("a refused DeleteApp removed users: Get = %v", err)
		}

		if err := sys.Tenants.DeleteApp(ctx, operator, ws.ID, doomed.ID); err != nil {
			t.Fatalf("DeleteApp: %v", err)
		}
		if _, err := sys.Tenants.GetApp(ctx, doomed.ID); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("GetApp(deleted) = %v; want ErrAppNotFound", err)
		}
		for _, id := range doomedIDs {
			if _, err := sys.DB.GetAppUser(ctx, doomed.ID, id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetAppUser(%s of deleted app) = %v; want ErrNotFound", id, err)
			}
		}
		if _, err := sys.Users.Get(ctx, operator, kept, keptUser.ID); err != nil {
			t.Errorf("Get(user of the other app) = %v; want nil", err)
		}
		for what, tok := range map[string]string{"app secret": secret, "api key": key} {
			if _, err := sys.Tenants.Authenticate(ctx, tok); !errors.Is(err, tenant.ErrUnauthorized) {
				t.Errorf("Authenticate(%s of deleted app) = %v; want ErrUnauthorized", what, err)
			}
		}
		if err := sys.Tenants.DeleteApp(ctx, operator, ws.ID, doomed.ID); !errors.Is(err, tenant.ErrAppNotFound) {
			t.Errorf("DeleteApp(twice) = %v; want ErrAppNotFound", err)
		}
		// The person's e-mail is free again in a new app.
		again := sys.App(t, ws.ID, "Doomed", nil)
		if _, _, err := sys.Users.Create(ctx, operator, again, appuser.CreateInput{Identifier: "b@users.example"}); err != nil {
			t.Errorf("Create in a new app after delete = %v; want nil", err)
		}
	})
}
