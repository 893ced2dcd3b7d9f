package tenant_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// The callers of TestAuthorizationMatrix, by the names its table uses.
const (
	asOperator  = "operator"
	asOwner     = "owner"
	asAdmin     = "admin"
	asMember    = "member"
	asOutsider  = "owner of another workspace"
	asAppSecret = "app secret of the app"
	asOtherApp  = "app secret of another app"
	asAPIKey    = "api key of the app"
	asNobody    = "zero principal"
)

var everyCaller = []string{asOperator, asOwner, asAdmin, asMember, asOutsider, asAppSecret, asOtherApp, asAPIKey, asNobody}

// TestAuthorizationMatrix calls every tenant method that acts for a caller as
// each kind of caller, and checks that the method itself allows it or
// refuses it with access.ErrForbidden, and that a refused call changes
// nothing (an allowed one does what it says). Each call that changes
// something gets a target of its own, so the cases do not depend on each
// other. The rules (read from the code):
//   - workspace reads (GetWorkspace, ListMembers, ListApps, WorkspaceApp): any member;
//   - workspace writes (UpdateWorkspace, CreateApp, UpdateApp, DeleteApp,
//     AddMember, ChangeMemberRole, RemoveMember): owners and admins, and
//     only owners grant, take away or remove the owner role;
//   - app credentials (API keys, app secrets): who may manage the app: its
//     owners and admins and its own app secret, not its API key;
//   - workspace secrets: owners;
//   - signing keys and ReissueSecret: the operator only;
//   - CreateWorkspace: an owner or admin of any workspace (a member of another
//     workspace counts), never a member-role secret nor an app's credential;
//   - ListWorkspaces: any workspace member (a secret is scoped to one
//     workspace, so a member of another workspace counts), never an app's credential.
//
// The operator may do everything.
func TestAuthorizationMatrix(t *testing.T) {
	admins := []string{asOperator, asOwner, asAdmin}
	members := []string{asOperator, asOwner, asAdmin, asMember}
	owners := []string{asOperator, asOwner}
	managers := []string{asOperator, asOwner, asAdmin, asAppSecret}
	anyMember := []string{asOperator, asOwner, asAdmin, asMember, asOutsider}
	anyAdmin := []string{asOperator, asOwner, asAdmin, asOutsider}

	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		tm := newTeam(t, sys, "Matrix")
		other := newTeam(t, sys, "Elsewhere")
		app := sys.App(t, tm.ws.ID, "Target", nil)
		otherApp := sys.App(t, tm.ws.ID, "Sibling", nil)
		callers := map[string]access.Principal{
			asOperator:  operator,
			asOwner:     tm.pOwner,
			asAdmin:     tm.pAdmin,
			asMember:    tm.pUser,
			asOutsider:  other.pOwner,
			asAppSecret: sys.Principal(t, sys.AppSecret(t, app.ID)),
			asOtherApp:  sys.Principal(t, sys.AppSecret(t, otherApp.ID)),
			asAPIKey:    sys.Principal(t, apiKey(t, sys, app.ID)),
			asNobody:    {},
		}
		var n atomic.Int64
		uniq := func(s string) string { return fmt.Sprintf("%s %d", s, n.Add(1)) }
		email := func() string { return fmt.Sprintf("m%d@matrix.example", n.Add(1)) }
		// addMember adds a member of the given role, as the operator, as a target.
		addMember := func(role string) tenant.Member {
			m, err := sys.Tenants.AddMember(ctx, operator, tm.ws.ID, email(), "", role)
			if err != nil {
				t.Fatalf("AddMember(%s): %v", role, err)
			}
			return m
		}
		roleOf := func(id string) string { return roles(t, sys, tm.ws.ID)[id] }
		roleByEmail := func(addr string) string {
			ms, err := sys.Tenants.ListMembers(ctx, operator, tm.ws.ID)
			if err != nil {
				t.Fatalf("ListMembers: %v", err)
			}
			for _, m := range ms {
				if m.Email == addr {
					return m.Role
				}
			}
			return ""
		}
		secretNamed := func(appID, workspaceID, name string) bool {
			list, err := sys.Tenants.ListSecrets(ctx, operator, appID, workspaceID)
			if err != nil {
				t.Fatalf("ListSecrets: %v", err)
			}
			return slices.ContainsFunc(list, func(s tenant.APISecret) bool { return s.Name == name && s.RevokedAt == nil })
		}
		appExists := func(id string) bool {
			_, err := sys.Tenants.GetApp(ctx, id)
			if err != nil && !errors.Is(err, tenant.ErrAppNotFound) {
				t.Fatalf("GetApp: %v", err)
			}
			return err == nil
		}
		secretRevoked := func(appID, workspaceID, id string) bool {
			list, err := sys.Tenants.ListSecrets(ctx, operator, appID, workspaceID)
			if err != nil {
				t.Fatalf("ListSecrets: %v", err)
			}
			for _, s := range list {
				if s.ID == id {
					return s.RevokedAt != nil
				}
			}
			t.Fatalf("ListSecrets has no secret %s", id)
			return false
		}
		countWorkspaces := func() int {
			all, err := sys.Tenants.ListWorkspaces(ctx, operator)
			if err != nil {
				t.Fatalf("ListWorkspaces: %v", err)
			}
			return len(all)
		}
		countSigningKeys := func() int {
			keys, err := sys.Tenants.ListSigningKeys(ctx, operator)
			if err != nil {
				t.Fatalf("ListSigningKeys: %v", err)
			}
			return len(keys)
		}

		// Each run makes its own target when it changes something, calls the
		// method as p, and returns whether the change it asked for was made
		// (nil for reads).
		type run func(p access.Principal) (changed func() bool, err error)
		cases := []struct {
			name  string
			allow []string
			run   run
		}{
			{"GetWorkspace", members, func(p access.Principal) (func() bool, error) {
				v, err := sys.Tenants.GetWorkspace(ctx, p, tm.ws.ID)
				if err == nil && v.ID != tm.ws.ID {
					t.Errorf("GetWorkspace returned %s; want %s", v.ID, tm.ws.ID)
				}
				return nil, err
			}},
			{"UpdateWorkspace", admins, func(p access.Principal) (func() bool, error) {
				name := uniq("Matrix")
				_, err := sys.Tenants.UpdateWorkspace(ctx, p, tm.ws.ID, tenant.WorkspacePatch{Name: &name})
				return func() bool {
					v, err := sys.Tenants.GetWorkspace(ctx, operator, tm.ws.ID)
					return err == nil && v.Name == name
				}, err
			}},
			{"ListMembers", members, func(p access.Principal) (func() bool, error) {
				_, err := sys.Tenants.ListMembers(ctx, p, tm.ws.ID)
				return nil, err
			}},
			{"AddMember(member)", admins, func(p access.Principal) (func() bool, error) {
				addr := email()
				_, err := sys.Tenants.AddMember(ctx, p, tm.ws.ID, addr, "", access.RoleMember)
				return func() bool { return roleByEmail(addr) == access.RoleMember }, err
			}},
			{"AddMember(owner)", owners, func(p access.Principal) (func() bool, error) {
				addr := email()
				_, err := sys.Tenants.AddMember(ctx, p, tm.ws.ID, addr, "", access.RoleOwner)
				return func() bool { return roleByEmail(addr) == access.RoleOwner }, err
			}},
			{"ChangeMemberRole(member to admin)", admins, func(p access.Principal) (func() bool, error) {
				m := addMember(access.RoleMember)
				_, err := sys.Tenants.ChangeMemberRole(ctx, p, tm.ws.ID, m.ID, access.RoleAdmin)
				return func() bool { return roleOf(m.ID) == access.RoleAdmin }, err
			}},
			{"ChangeMemberRole(member to owner)", owners, func(p access.Principal) (func() bool, error) {
				m := addMember(access.RoleMember)
				_, err := sys.Tenants.ChangeMemberRole(ctx, p, tm.ws.ID, m.ID, access.RoleOwner)
				return func() bool { return roleOf(m.ID) == access.RoleOwner }, err
			}},
			{"ChangeMemberRole(owner to admin)", owners, func(p access.Principal) (func() bool, error) {
				m := addMember(access.RoleOwner)
				_, err := sys.Tenants.ChangeMemberRole(ctx, p, tm.ws.ID, m.ID, access.RoleAdmin)
				return func() bool { return roleOf(m.ID) == access.RoleAdmin }, err
			}},
			{"RemoveMember(member)", admins, func(p access.Principal) (func() bool, error) {
				m := addMember(access.RoleMember)
				err := sys.Tenants.RemoveMember(ctx, p, tm.ws.ID, m.ID)
				return func() bool { return roleOf(m.ID) == "" }, err
			}},
			{"RemoveMember(owner)", owners, func(p access.Principal) (func() bool, error) {
				m := addMember(access.RoleOwner)
				err := sys.Tenants.RemoveMember(ctx, p, tm.ws.ID, m.ID)
				return func() bool { return roleOf(m.ID) == "" }, err
			}},
			{"CreateWorkspaceSecret", owners, func(p access.Principal) (func() bool, error) {
				name := uniq("matrix")
				_, _, err := sys.Tenants.CreateWorkspaceSecret(ctx, p, tm.ws.ID, tm.member.ID, name)
				return func() bool { return secretNamed("", tm.ws.ID, name) }, err
			}},
			{"ListSecrets(workspace)", owners, func(p access.Principal) (func() bool, error) {
				_, err := sys.Tenants.ListSecrets(ctx, p, "", tm.ws.ID)
				return nil, err
			}},
			{"RevokeSecret(workspace secret)", owners, func(p access.Principal) (func() bool, error) {
				_, rec, err := sys.Tenants.CreateWorkspaceSecret(ctx, operator, tm.ws.ID, tm.member.ID, "target")
				if err != nil {
					t.Fatalf("CreateWorkspaceSecret: %v", err)
				}
				err = sys.Tenants.RevokeSecret(ctx, p, rec.ID)
				return func() bool { return secretRevoked("", tm.ws.ID, rec.ID) }, err
			}},
			{"CreateApp", admins, func(p access.Principal) (func() bool, error) {
				name := uniq("New")
				_, err := sys.Tenants.CreateApp(ctx, p, tm.ws.ID, tenant.AppSettings{Name: &name, Origin: ptr("https://new.example")})
				return func() bool {
					list, err := sys.Tenants.ListApps(ctx, operator, tm.ws.ID)
					return err == nil && slices.ContainsFunc(list, func(a tenant.App) bool { return a.Name == name })
				}, err
			}},
			{"UpdateApp", admins, func(p access.Principal) (func() bool, error) {
				a := sys.App(t, tm.ws.ID, uniq("Updated"), nil)
				_, err := sys.Tenants.UpdateApp(ctx, p, tm.ws.ID, a.ID, tenant.AppSettings{PublicSignup: ptr(false)})
				return func() bool {
					got, err := sys.Tenants.GetApp(ctx, a.ID)
					return err == nil && !got.PublicSignup
				}, err
			}},
			{"DeleteApp", admins, func(p access.Principal) (func() bool, error) {
				a := sys.App(t, tm.ws.ID, uniq("Doomed"), nil)
				err := sys.Tenants.DeleteApp(ctx, p, tm.ws.ID, a.ID)
				return func() bool { return !appExists(a.ID) }, err
			}},
			{"WorkspaceApp", members, func(p access.Principal) (func() bool, error) {
				a, err := sys.Tenants.WorkspaceApp(ctx, p, tm.ws.ID, app.ID)
				if err == nil && a.ID != app.ID {
					t.Errorf("WorkspaceApp returned %s; want %s", a.ID, app.ID)
				}
				return nil, err
			}},
			{"ListApps", members, func(p access.Principal) (func() bool, error) {
				_, err := sys.Tenants.ListApps(ctx, p, tm.ws.ID)
				return nil, err
			}},
			{"ListApps(every workspace)", []string{asOperator}, func(p access.Principal) (func() bool, error) {
				_, err := sys.Tenants.ListApps(ctx, p, "")
				return nil, err
			}},
			{"CreateAPIKey", managers, func(p access.Principal) (func() bool, error) {
				name := uniq("matrix")
				key, _, err := sys.Tenants.CreateAPIKey(ctx, p, app.ID, name)
				return func() bool {
					keys, lerr := sys.Tenants.ListAPIKeys(ctx, operator, app.ID)
					if lerr != nil || !slices.ContainsFunc(keys, func(k tenant.APIKey) bool { return k.Nickname == name }) {
						return false
					}
					got, aerr := sys.Tenants.Authenticate(ctx, key)
					return aerr == nil && got.AppID == app.ID
				}, err
			}},
			{"ListAPIKeys", managers, func(p access.Principal) (func() bool, error) {
				_, err := sys.Tenants.ListAPIKeys(ctx, p, app.ID)
				return nil, err
			}},
			{"RevokeAPIKey", managers, func(p access.Principal) (func() bool, error) {
				key := apiKey(t, sys, app.ID)
				target := sys.Principal(t, key)
				_, err := sys.Tenants.RevokeAPIKey(ctx, p, app.ID, target.CredentialID)
				return func() bool {
					_, aerr := sys.Tenants.Authenticate(ctx, key)
					return errors.Is(aerr, tenant.ErrUnauthorized)
				}, err
			}},
			{"CreateAppSecret", managers, func(p access.Principal) (func() bool, error) {
				name := uniq("matrix")
				tok, _, err := sys.Tenants.CreateAppSecret(ctx, p, app.ID, name)
				return func() bool {
					if !secretNamed(app.ID, "", name) {
						return false
					}
					got, aerr := sys.Tenants.Authenticate(ctx, tok)
					return aerr == nil && got.AppID == app.ID
				}, err
			}},
			{"ListSecrets(app)", managers, func(p access.Principal) (func() bool, error) {
				_, err := sys.Tenants.ListSecrets(ctx, p, app.ID, "")
				return nil, err
			}},
			{"RevokeSecret(app secret)", managers, func(p access.Principal) (func() bool, error) {
				_, rec, err := sys.Tenants.CreateAppSecret(ctx, operator, app.ID, "target")
				if err != nil {
					t.Fatalf("CreateAppSecret: %v", err)
				}
				err = sys.Tenants.RevokeSecret(ctx, p, rec.ID)
				return func() bool { return secretRevoked(app.ID, "", rec.ID) }, err
			}},
			{"ReissueSecret", []string{asOperator}, func(p access.Principal) (func() bool, error) {
				_, rec, err := sys.Tenants.CreateAppSecret(ctx, operator, app.ID, "target")
				if err != nil {
					t.Fatalf("CreateAppSecret: %v", err)
				}
				tok, _, err := sys.Tenants.ReissueSecret(ctx, p, rec.ID)
				return func() bool { return tok != "" }, err
			}},
			{"RotateSigningKey", []string{asOperator}, func(p access.Principal) (func() bool, error) {
				before := countSigningKeys()
				_, err := rotateES256(ctx, sys.Tenants, p)
				return func() bool { return countSigningKeys() == before+1 }, err
			}},
			{"ListSigningKeys", []string{asOperator}, func(p access.Principal) (func() bool, error) {
				_, err := sys.Tenants.ListSigningKeys(ctx, p)
				return nil, err
			}},
			{"CreateWorkspace", anyAdmin, func(p access.Principal) (func() bool, error) {
				nw, err := sys.Tenants.CreateWorkspace(ctx, p, tenant.WorkspaceInput{Name: uniq("Created"), OwnerEmail: "boss@created.example"})
				return func() bool {
					if err != nil {
						return false
					}
					_, gerr := sys.Tenants.GetWorkspace(ctx, operator, nw.Workspace.ID)
					return gerr == nil
				}, err
			}},
			{"ListWorkspaces", anyMember, func(p access.Principal) (func() bool, error) {
				_, err := sys.Tenants.ListWorkspaces(ctx, p)
				return nil, err
			}},
		}
		for _, tc := range cases {
			for _, who := range everyCaller {
				allowed := slices.Contains(tc.allow, who)
				wsBefore := countWorkspaces()
				changed, err := tc.run(callers[who])
				switch {
				case allowed && err != nil:
					t.Errorf("%s as %s = %v; want nil", tc.name, who, err)
				case allowed && changed != nil && !changed():
					t.Errorf("%s as %s succeeded but did not take effect", tc.name, who)
				case !allowed && !errors.Is(err, access.ErrForbidden):
					t.Errorf("%s as %s = %v; want access.ErrForbidden", tc.name, who, err)
				case !allowed && changed != nil && changed():
					t.Errorf("%s as %s was refused but took effect", tc.name, who)
				}
				// A refused call creates no workspace either.
				if wsAfter := countWorkspaces(); !allowed && wsAfter != wsBefore {
					t.Errorf("%s as %s was refused but the workspaces went from %d to %d", tc.name, who, wsBefore, wsAfter)
				}
			}
		}
		// The team the callers belong to is as it was.
		want := map[string]string{tm.owner.ID: access.RoleOwner, tm.admin.ID: access.RoleAdmin, tm.member.ID: access.RoleMember}
		got := roles(t, sys, tm.ws.ID)
		for id, role := range want {
			if got[id] != role {
				t.Errorf("member %s is %q after the matrix; want %q", id, got[id], role)
			}
		}
	})
}

// TestRoleReadAtChange: a principal carries no role; each change reads the
// caller's role in its own transaction. An admin's principal, authenticated
// before its member was demoted or removed, can change nothing after it,
// and works again once the member is promoted back.
func TestRoleReadAtChange(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		tm := newTeam(t, sys, "Stale role")
		app := sys.App(t, tm.ws.ID, "Shop", nil)
		stale := sys.Principal(t, sys.WorkspaceSecret(t, tm.ws.ID, tm.admin.ID))
		var n int
		uniq := func(s string) string { n++; return fmt.Sprintf("%s %d", s, n) }
		uniqEmail := func() string { n++; return fmt.Sprintf("new%d@x.example", n) }

		// Each change as the admin, with what must hold after it was refused.
		changes := []struct {
			name      string
			do        func(p access.Principal) error
			unchanged func() error
		}{
			{"UpdateApp", func(p access.Principal) error {
				_, err := sys.Tenants.UpdateApp(ctx, p, tm.ws.ID, app.ID, tenant.AppSettings{Name: ptr(uniq("Renamed")), PublicSignup: ptr(false)})
				return err
			}, func() error {
				if got, err := sys.Tenants.GetApp(ctx, app.ID); err != nil || !reflect.DeepEqual(got, app) {
					return fmt.Errorf("app = %+v, %v; want %+v", got, err, app)
				}
				return nil
			}},
			{"DeleteApp", func(p access.Principal) error {
				return sys.Tenants.DeleteApp(ctx, p, tm.ws.ID, app.ID)
			}, func() error {
				if _, err := sys.Tenants.GetApp(ctx, app.ID); err != nil {
					return fmt.Errorf("GetApp = %v; want the app kept", err)
				}
				return nil
			}},
			{"CreateApp", func(p access.Principal) error {
				_, err := sys.Tenants.CreateApp(ctx, p, tm.ws.ID, tenant.AppSettings{Name: ptr(uniq("New")), Origin: ptr("https://new.example")})
				return err
			}, func() error {
				if list, err := sys.Tenants.ListApps(ctx, operator, tm.ws.ID); err != nil || len(list) != 1 {
					return fmt.Errorf("ListApps = %d apps, %v; want just the one", len(list), err)
				}
				return nil
			}},
			{"AddMember", func(p access.Principal) error {
				_, err := sys.Tenants.AddMember(ctx, p, tm.ws.ID, uniqEmail(), "", access.RoleMember)
				return err
			}, func() error {
				if got := roles(t, sys, tm.ws.ID); len(got) != 3 {
					return fmt.Errorf("members = %v; want the team's 3", got)
				}
				return nil
			}},
			{"UpdateWorkspace", func(p access.Principal) error {
				_, err := sys.Tenants.UpdateWorkspace(ctx, p, tm.ws.ID, tenant.WorkspacePatch{Name: ptr(uniq("Renamed"))})
				return err
			}, func() error {
				if v, err := sys.Tenants.GetWorkspace(ctx, operator, tm.ws.ID); err != nil || v.Name != tm.ws.Name {
					return fmt.Errorf("workspace name = %q, %v; want %q", v.Name, err, tm.ws.Name)
				}
				return nil
			}},
			{"CreateAPIKey", func(p access.Principal) error {
				_, _, err := sys.Tenants.CreateAPIKey(ctx, p, app.ID, "stale")
				return err
			}, func() error {
				if keys, err := sys.Tenants.ListAPIKeys(ctx, operator, app.ID); err != nil || len(keys) != 0 {
					return fmt.Errorf("ListAPIKeys = %d keys, %v; want none", len(keys), err)
				}
				return nil
			}},
			{"CreateAppSecret", func(p access.Principal) error {
				_, _, err := sys.Tenants.CreateAppSecret(ctx, p, app.ID, "stale")
				return err
			}, func() error {
				if list, err := sys.Tenants.ListSecrets(ctx, operator, app.ID, ""); err != nil || len(list) != 0 {
					return fmt.Errorf("ListSecrets = %d secrets, %v; want none", len(list), err)
				}
				return nil
			}},
		}
		refused := func(state string) {
			t.Helper()
			for _, c := range changes {
				if err := c.do(stale); !errors.Is(err, access.ErrForbidden) {
					t.Errorf("%s with the admin's principal after %s = %v; want access.ErrForbidden", c.name, state, err)
				}
				if err := c.unchanged(); err != nil {
					t.Errorf("%s after %s was refused but: %v", c.name, state, err)
				}
			}
		}

		if _, err := sys.Tenants.ChangeMemberRole(ctx, tm.pOwner, tm.ws.ID, tm.admin.ID, access.RoleMember); err != nil {
			t.Fatalf("demote the admin: %v", err)
		}
		refused("its demotion")
		// Demoted to member, it may still read.
		if _, err := sys.Tenants.WorkspaceApp(ctx, stale, tm.ws.ID, app.ID); err != nil {
			t.Errorf("WorkspaceApp as the demoted admin = %v; want nil (members read)", err)
		}

		// Promoted back, the same principal works again: the calls that did
		// not create anything first, then the delete last.
		if _, err := sys.Tenants.ChangeMemberRole(ctx, tm.pOwner, tm.ws.ID, tm.admin.ID, access.RoleAdmin); err != nil {
			t.Fatalf("promote the admin back: %v", err)
		}
		for _, c := range changes {
			if c.name == "DeleteApp" {
				continue
			}
			if err := c.do(stale); err != nil {
				t.Errorf("%s with the admin's principal after its promotion = %v; want nil", c.name, err)
			}
		}
		if got, err := sys.Tenants.GetApp(ctx, app.ID); err != nil || got.PublicSignup {
			t.Errorf("app after the promoted admin's update = %+v, %v; want public_signup off", got, err)
		}
		victim := sys.App(t, tm.ws.ID, "Victim", nil)
		if err := sys.Tenants.DeleteApp(ctx, stale, tm.ws.ID, victim.ID); err != nil {
			t.Errorf("DeleteApp with the admin's principal after its promotion = %v; want nil", err)
		}

		// Removed, it can do nothing at all, not even read.
		appBefore, err := sys.Tenants.GetApp(ctx, app.ID)
		if err != nil {
			t.Fatalf("GetApp: %v", err)
		}
		wsBefore, err := sys.Tenants.GetWorkspace(ctx, operator, tm.ws.ID)
		if err != nil {
			t.Fatalf("GetWorkspace: %v", err)
		}
		counts := func() (apps, keys, secrets int) {
			a, err1 := sys.Tenants.ListApps(ctx, operator, tm.ws.ID)
			k, err2 := sys.Tenants.ListAPIKeys(ctx, operator, app.ID)
			s, err3 := sys.Tenants.ListSecrets(ctx, operator, app.ID, "")
			if err := errors.Join(err1, err2, err3); err != nil {
				t.Fatalf("list: %v", err)
			}
			return len(a), len(k), len(s)
		}
		appsBefore, keysBefore, secretsBefore := counts()
		membersBefore := roles(t, sys, tm.ws.ID)
		if err := sys.Tenants.RemoveMember(ctx, tm.pOwner, tm.ws.ID, tm.admin.ID); err != nil {
			t.Fatalf("remove the admin: %v", err)
		}
		for _, c := range changes {
			if err := c.do(stale); !errors.Is(err, access.ErrForbidden) {
				t.Errorf("%s with the admin's principal after its removal = %v; want access.ErrForbidden", c.name, err)
			}
		}
		if got, err := sys.Tenants.GetApp(ctx, app.ID); err != nil || !reflect.DeepEqual(got, appBefore) {
			t.Errorf("app after the removed admin's calls = %+v, %v; want %+v", got, err, appBefore)
		}
		if v, err := sys.Tenants.GetWorkspace(ctx, operator, tm.ws.ID); err != nil || v.Name != wsBefore.Name {
			t.Errorf("workspace name = %q, %v; want %q", v.Name, err, wsBefore.Name)
		}
		appsAfter, keysAfter, secretsAfter := counts()
		delete(membersBefore, tm.admin.ID)
		if membersAfter := roles(t, sys, tm.ws.ID); appsAfter != appsBefore || keysAfter != keysBefore ||
			secretsAfter != secretsBefore || !reflect.DeepEqual(membersAfter, membersBefore) {
			t.Errorf("after the removed admin's calls: %d apps, %d keys, %d secrets, members %v; want %d, %d, %d, %v",
				appsAfter, keysAfter, secretsAfter, membersAfter, appsBefore, keysBefore, secretsBefore, membersBefore)
		}
		for name, read := range map[string]func() error{
			"WorkspaceApp": func() error { _, err := sys.Tenants.WorkspaceApp(ctx, stale, tm.ws.ID, app.ID); return err },
			"ListApps":     func() error { _, err := sys.Tenants.ListApps(ctx, stale, tm.ws.ID); return err },
			"GetWorkspace": func() error { _, err := sys.Tenants.GetWorkspace(ctx, stale, tm.ws.ID); return err },
			"ListMembers":  func() error { _, err := sys.Tenants.ListMembers(ctx, stale, tm.ws.ID); return err },
		} {
			if err := read(); !errors.Is(err, access.ErrForbidden) {
				t.Errorf("%s with the removed admin's principal = %v; want access.ErrForbidden", name, err)
			}
		}
	})
}

// TestDemotionInFlight: an admin's change that reaches the database while
// the admin's demotion is being written (not yet committed) waits for it and
// is refused; it does not go through on the role it read before. On
// PostgreSQL the change's read of the role (FOR SHARE) waits on the
// demotion's row lock, which the test sees in pg_stat_activity before it
// commits the demotion; on SQLite the single writer orders the two
// transactions, so the change reads the role after the demotion.
func TestDemotionInFlight(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		tm := newTeam(t, sys, "In flight")
		app := sys.App(t, tm.ws.ID, "Shop", nil)
		var waiting func() bool
		if sys.DB.Kind() == store.Postgres {
			conn, err := pgx.Connect(ctx, sys.Config.Database.URL)
			if err != nil {
				t.Fatalf("connect to watch locks: %v", err)
			}
			t.Cleanup(func() { _ = conn.Close(context.Background()) })
			waiting = func() bool {
				var n int
				err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
					AND wait_event_type = 'Lock' AND query LIKE '%workspace_members%'`).Scan(&n)
				if err != nil {
					t.Fatalf("pg_stat_activity: %v", err)
				}
				return n > 0
			}
		}

		changes := []struct {
			name      string
			do        func() error
			unchanged func() bool
		}{
			{"UpdateApp", func() error {
				_, err := sys.Tenants.UpdateApp(ctx, tm.pAdmin, tm.ws.ID, app.ID, tenant.AppSettings{Name: ptr("Hijacked")})
				return err
			}, func() bool {
				got, err := sys.Tenants.GetApp(ctx, app.ID)
				return err == nil && reflect.DeepEqual(got, app)
			}},
			{"DeleteApp", func() error { return sys.Tenants.DeleteApp(ctx, tm.pAdmin, tm.ws.ID, app.ID) }, func() bool {
				_, err := sys.Tenants.GetApp(ctx, app.ID)
				return err == nil
			}},
			{"CreateAPIKey", func() error {
				_, _, err := sys.Tenants.CreateAPIKey(ctx, tm.pAdmin, app.ID, "in flight")
				return err
			}, func() bool {
				keys, err := sys.Tenants.ListAPIKeys(ctx, operator, app.ID)
				return err == nil && len(keys) == 0
			}},
			{"AddMember", func() error {
				_, err := sys.Tenants.AddMember(ctx, tm.pAdmin, tm.ws.ID, "late@team.example", "", "")
				return err
			}, func() bool { return len(roles(t, sys, tm.ws.ID)) == 3 }},
		}
		for _, c := range changes {
			result := make(chan error, 1)
			err := sys.DB.Tx(ctx, func(tx *store.Tx) error {
				m, err := tx.GetMember(ctx, tm.ws.ID, tm.admin.ID)
				if err != nil {
					return err
				}
				m.Role, m.UpdatedAt = access.RoleMember, sys.Clock.Now()
				if err := tx.UpdateMember(ctx, m); err != nil {
					return err
				}
				go func() { result <- c.do() }()
				if waiting == nil {
					return nil
				}
				for deadline := time.Now().Add(10 * time.Second); !waiting(); time.Sleep(5 * time.Millisecond) {
					select {
					case err := <-result:
						result <- err
						t.Errorf("%s finished (%v) without waiting for the uncommitted demotion", c.name, err)
						return nil
					default:
					}
					if time.Now().After(deadline) {
						t.Errorf("%s never waited for the demotion's lock", c.name)
						return nil
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("demote in a transaction: %v", err)
			}
			select {
			case err := <-result:
				if !errors.Is(err, access.ErrForbidden) {
					t.Errorf("%s by an admin demoted while it was in flight = %v; want access.ErrForbidden", c.name, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not finish after the demotion committed", c.name)
			}
			if !c.unchanged() {
				t.Errorf("%s by an admin demoted while it was in flight took effect", c.name)
			}
			if _, err := sys.Tenants.ChangeMemberRole(ctx, tm.pOwner, tm.ws.ID, tm.admin.ID, access.RoleAdmin); err != nil {
				t.Fatalf("promote the admin back: %v", err)
			}
		}
	})
}

// TestAccessBeforeInput: a caller that may not act learns nothing from how
// its input would have been judged: it gets access.ErrForbidden, while the
// operator, sending the same input, gets the *errs.Invalid that proves the
// input is bad.
func TestAccessBeforeInput(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		tm := newTeam(t, sys, "Judged")
		app := sys.App(t, tm.ws.ID, "Judged App", nil)
		other := sys.App(t, tm.ws.ID, "Other App", nil)
		otherSecret := sys.Principal(t, sys.AppSecret(t, other.ID))
		long := strings.Repeat("n", 101)
		cases := []struct {
			name    string
			refused access.Principal
			call    func(p access.Principal) error
		}{
			{"CreateApp without a name", tm.pUser, func(p access.Principal) error {
				_, err := sys.Tenants.CreateApp(ctx, p, tm.ws.ID, tenant.AppSettings{Origin: ptr("https://x.example")})
				return err
			}},
			{"CreateApp with a bad origin", tm.pUser, func(p access.Principal) error {
				_, err := sys.Tenants.CreateApp(ctx, p, tm.ws.ID, tenant.AppSettings{Name: ptr("X"), Origin: ptr("ftp://x")})
				return err
			}},
			{"AddMember with a bad e-mail", tm.pUser, func(p access.Principal) error {
				_, err := sys.Tenants.AddMember(ctx, p, tm.ws.ID, "not-an-address", "", "")
				return err
			}},
			{"AddMember with an unknown role", tm.pUser, func(p access.Principal) error {
				_, err := sys.Tenants.AddMember(ctx, p, tm.ws.ID, "new@team.example", "", "boss")
				return err
			}},
			{"ChangeMemberRole to an unknown role", tm.pUser, func(p access.Principal) error {
				_, err := sys.Tenants.ChangeMemberRole(ctx, p, tm.ws.ID, tm.admin.ID, "boss")
				return err
			}},
			{"CreateAPIKey with a long nickname", otherSecret, func(p access.Principal) error {
				_, _, err := sys.Tenants.CreateAPIKey(ctx, p, app.ID, long)
				return err
			}},
			{"UpdateWorkspace with a bad slug", tm.pUser, func(p access.Principal) error {
				_, err := sys.Tenants.UpdateWorkspace(ctx, p, tm.ws.ID, tenant.WorkspacePatch{Slug: ptr("Bad Slug")})
				return err
			}},
			{"UpdateApp with a bad origin", tm.pUser, func(p access.Principal) error {
				_, err := sys.Tenants.UpdateApp(ctx, p, tm.ws.ID, app.ID, tenant.AppSettings{Origin: ptr("ftp://x")})
				return err
			}},
		}
		for _, tc := range cases {
			var inv *errs.Invalid
			if err := tc.call(operator); !errors.As(err, &inv) {
				t.Errorf("%s as the operator = %v; want an *errs.Invalid (the input must be bad)", tc.name, err)
			}
			if err := tc.call(tc.refused); !errors.Is(err, access.ErrForbidden) {
				t.Errorf("%s by a caller who may not = %v; want access.ErrForbidden", tc.name, err)
			}
		}
	})
}

// TestListSecretsOneScope: secrets are listed for one app or one workspace,
// never both at once (an app's credential must not reach a workspace's list).
func TestListSecretsOneScope(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "Scoped")
		rival, _ := sys.Workspace(t, "Rival")
		app := sys.App(t, ws.ID, "Scoped App", nil)
		own := sys.Principal(t, sys.AppSecret(t, app.ID))
		sys.WorkspaceSecret(t, rival.ID, "")
		for _, tc := range []struct {
			name        string
			p           access.Principal
			appID, wsID string
		}{
			{"both scopes, by the app's own secret", own, app.ID, rival.ID},
			{"both scopes, by the operator", operator, app.ID, rival.ID},
			{"no scope", operator, "", ""},
		} {
			got, err := sys.Tenants.ListSecrets(ctx, tc.p, tc.appID, tc.wsID)
			var inv *errs.Invalid
			if !errors.As(err, &inv) || len(got) != 0 {
				t.Errorf("ListSecrets(%s) = %d secrets, %v; want none and an *errs.Invalid", tc.name, len(got), err)
			}
		}
		if got, err := sys.Tenants.ListSecrets(ctx, own, "", rival.ID); !errors.Is(err, access.ErrForbidden) || len(got) != 0 {
			t.Errorf("ListSecrets(another workspace, by an app secret) = %d secrets, %v; want access.ErrForbidden", len(got), err)
		}
	})
}
