package tenant_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

var operator = servertest.Operator

func ptr[T any](v T) *T { return &v }

// principal authenticates a fresh workspace secret acting for member (an id or an e-mail).
func principal(t *testing.T, sys *servertest.System, workspaceID, member string) access.Principal {
	t.Helper()
	return sys.Principal(t, sys.WorkspaceSecret(t, workspaceID, member))
}

// team is a workspace with one member of each role, and their principals.
type team struct {
	ws                    tenant.Workspace
	owner, admin, member  tenant.Member
	pOwner, pAdmin, pUser access.Principal
}

func newTeam(t *testing.T, sys *servertest.System, name string) team {
	t.Helper()
	ctx := context.Background()
	var tm team
	tm.ws, tm.owner = sys.Workspace(t, name)
	tm.pOwner = principal(t, sys, tm.ws.ID, tm.owner.ID)
	var err error
	if tm.admin, err = sys.Tenants.AddMember(ctx, tm.pOwner, tm.ws.ID, "admin@team.example", "Ada", access.RoleAdmin); err != nil {
		t.Fatalf("AddMember(admin): %v", err)
	}
	if tm.member, err = sys.Tenants.AddMember(ctx, tm.pOwner, tm.ws.ID, "member@team.example", "Mel", ""); err != nil {
		t.Fatalf("AddMember(member): %v", err)
	}
	tm.pAdmin = principal(t, sys, tm.ws.ID, tm.admin.ID)
	tm.pUser = principal(t, sys, tm.ws.ID, tm.member.ID)
	return tm
}

// roles returns every member's role by member id, read by the operator.
func roles(t *testing.T, sys *servertest.System, workspaceID string) map[string]string {
	t.Helper()
	ms, err := sys.Tenants.ListMembers(context.Background(), operator, workspaceID)
	if err != nil {
		t.Fatalf("ListMembers: %v", err)
	}
	out := map[string]string{}
	for _, m := range ms {
		out[m.ID] = m.Role
	}
	return out
}

func owners(t *testing.T, sys *servertest.System, p access.Principal, workspaceID string) []string {
	t.Helper()
	ms, err := sys.Tenants.ListMembers(context.Background(), p, workspaceID)
	if err != nil {
		t.Fatalf("ListMembers: %v", err)
	}
	var out []string
	for _, m := range ms {
		if m.Role == access.RoleOwner {
			out = append(out, m.ID)
		}
	}
	return out
}

// checkInvalid checks that err is nil when field is "", and otherwise an
// *errs.Invalid on field whose reason does not repeat the field.
func checkInvalid(t *testing.T, what string, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Errorf("%s = %v; want nil", what, err)
		}
		return
	}
	var ie *errs.Invalid
	if !errors.As(err, &ie) || ie.Field != field {
		t.Errorf("%s = %v; want *errs.Invalid on %s", what, err, field)
		return
	}
	base, _, _ := strings.Cut(field, "[")
	if ie.Reason == "" || strings.HasPrefix(ie.Reason, base) {
		t.Errorf("%s reason = %q; want a reason that does not start with the field %s", what, ie.Reason, base)
	}
}

func TestCreateWorkspace(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		nw, err := sys.Tenants.CreateWorkspace(ctx, operator, tenant.WorkspaceInput{Name: "  Acme Rockets, Inc. ", OwnerEmail: "Boss@Acme.Example", OwnerName: " Wile "})
		if err != nil {
			t.Fatalf("CreateWorkspace: %v", err)
		}
		ws, owner := nw.Workspace, nw.Owner
		if ws.Slug != "acme-rockets-inc" {
			t.Errorf("slug = %q; want %q", ws.Slug, "acme-rockets-inc")
		}
		if ws.Name != "Acme Rockets, Inc." {
			t.Errorf("name = %q; want it trimmed", ws.Name)
		}
		if owner.Role != access.RoleOwner || owner.Email != "boss@acme.example" || owner.Name != "Wile" || owner.WorkspaceID != ws.ID {
			t.Errorf("owner = %+v; want owner boss@acme.example named Wile in %s", owner, ws.ID)
		}
		if nw.Secret != "" {
			t.Errorf("CreateWorkspace(operator) secret = %q; want none (the operator is no member)", nw.Secret)
		}
		if want := sys.Clock.Now().Truncate(time.Microsecond); !ws.CreatedAt.Equal(want) {
			t.Errorf("created_at = %v; want the injected clock %v", ws.CreatedAt, want)
		}
		got, err := sys.Tenants.GetWorkspace(ctx, operator, ws.ID)
		if err != nil || got.Slug != ws.Slug || !got.CreatedAt.Equal(ws.CreatedAt) || got.Membership != nil {
			t.Errorf("GetWorkspace = %+v, %v; want %+v and no membership for the operator", got, err, ws)
		}

		_, err = sys.Tenants.CreateWorkspace(ctx, operator, tenant.WorkspaceInput{Name: "Acme rockets inc", OwnerEmail: "x@acme.example"})
		if !errors.Is(err, tenant.ErrSlugTaken) {
			t.Errorf("CreateWorkspace(same derived slug) = %v; want ErrSlugTaken", err)
		}
		_, err = sys.Tenants.CreateWorkspace(ctx, operator, tenant.WorkspaceInput{Name: "Other", Slug: "acme-rockets-inc", OwnerEmail: "x@acme.example"})
		if !errors.Is(err, tenant.ErrSlugTaken) {
			t.Errorf("CreateWorkspace(explicit taken slug) = %v; want ErrSlugTaken", err)
		}
		if _, err := sys.Tenants.GetWorkspace(ctx, operator, "nope"); !errors.Is(err, tenant.ErrWorkspaceNotFound) {
			t.Errorf("GetWorkspace(unknown) = %v; want ErrWorkspaceNotFound", err)
		}

		for _, tc := range []struct {
			in    tenant.WorkspaceInput
			field string
		}{
			{tenant.WorkspaceInput{Name: "Bad mail", OwnerEmail: "not-an-email"}, "owner_email"},
			{tenant.WorkspaceInput{Name: "Bad mail", OwnerEmail: "Boss <boss@acme.example>"}, "owner_email"},
			{tenant.WorkspaceInput{Name: "Bad mail", OwnerEmail: ""}, "owner_email"},
			{tenant.WorkspaceInput{Name: "   ", OwnerEmail: "ok@acme.example"}, "name"},
			{tenant.WorkspaceInput{Name: strings.Repeat("n", 101), OwnerEmail: "ok@acme.example"}, "name"},
			{tenant.WorkspaceInput{Name: "Bad slug", Slug: "Bad Slug", OwnerEmail: "ok@acme.example"}, "slug"},
			{tenant.WorkspaceInput{Name: "Bad slug", Slug: "-dash", OwnerEmail: "ok@acme.example"}, "slug"},
		} {
			_, err := sys.Tenants.CreateWorkspace(ctx, operator, tc.in)
			checkInvalid(t, fmt.Sprintf("CreateWorkspace(%+v)", tc.in), err, tc.field)
		}
		all, err := sys.Tenants.ListWorkspaces(ctx, operator)
		if err != nil || len(all) != 1 {
			t.Errorf("ListWorkspaces = %d workspaces, %v; want 1 (failed creates leave nothing)", len(all), err)
		}
	})
}

// TestCreateWorkspaceAsMember: an admin (or owner) creating a workspace
// becomes its owner, under its own e-mail and name whatever the input says,
// and gets a secret scoped to the new workspace; its old secret stays scoped
// to the old one. A member-role secret, read-only, creates nothing.
func TestCreateWorkspaceAsMember(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		tm := newTeam(t, sys, "Home")
		if _, err := sys.Tenants.CreateWorkspace(ctx, tm.pUser, tenant.WorkspaceInput{Name: "Side project"}); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("CreateWorkspace(member-role secret) = %v; want ErrForbidden", err)
		}
		nw, err := sys.Tenants.CreateWorkspace(ctx, tm.pAdmin, tenant.WorkspaceInput{Name: "Side project",
			OwnerEmail: "someone-else@elsewhere.example", OwnerName: "Someone"})
		if err != nil {
			t.Fatalf("CreateWorkspace(admin): %v", err)
		}
		if nw.Owner.Email != tm.admin.Email || nw.Owner.Name != tm.admin.Name || nw.Owner.Role != access.RoleOwner ||
			nw.Owner.WorkspaceID != nw.Workspace.ID || nw.Owner.ID == tm.admin.ID {
			t.Errorf("owner = %+v; want a new owner %s named %s in %s", nw.Owner, tm.admin.Email, tm.admin.Name, nw.Workspace.ID)
		}
		if nw.Workspace.Slug != "side-project" {
			t.Errorf("slug = %q; want side-project", nw.Workspace.Slug)
		}
		if nw.Secret == "" {
			t.Fatal("CreateWorkspace(admin) returned no secret")
		}
		p := sys.Principal(t, nw.Secret)
		if p.Kind != access.KindWorkspaceSecret || p.WorkspaceID != nw.Workspace.ID || p.MemberID != nw.Owner.ID {
			t.Errorf("the new secret authenticates as %+v; want the owner %s of %s", p, nw.Owner.ID, nw.Workspace.ID)
		}
		views, err := sys.Tenants.ListWorkspaces(ctx, p)
		if err != nil || len(views) != 1 || views[0].ID != nw.Workspace.ID || views[0].Membership == nil ||
			views[0].Membership.ID != nw.Owner.ID || views[0].Membership.Role != access.RoleOwner {
			t.Errorf("ListWorkspaces(new secret) = %+v, %v; want just %s with the owner's membership", views, err, nw.Workspace.ID)
		}
		if _, err := sys.Tenants.UpdateWorkspace(ctx, p, nw.Workspace.ID, tenant.WorkspacePatch{Name: ptr("Renamed")}); err != nil {
			t.Errorf("the new owner updates its workspace = %v; want nil", err)
		}
		if _, err := sys.Tenants.GetWorkspace(ctx, tm.pAdmin, nw.Workspace.ID); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("GetWorkspace(new workspace, old secret) = %v; want ErrForbidden (a secret is scoped to one workspace)", err)
		}
		if _, err := sys.Tenants.GetWorkspace(ctx, p, tm.ws.ID); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("GetWorkspace(old workspace, new secret) = %v; want ErrForbidden", err)
		}
		views, err = sys.Tenants.ListWorkspaces(ctx, tm.pAdmin)
		if err != nil || len(views) != 1 || views[0].ID != tm.ws.ID || views[0].Membership == nil || views[0].Membership.Role != access.RoleAdmin {
			t.Errorf("ListWorkspaces(old secret) = %+v, %v; want just %s as an admin", views, err, tm.ws.ID)
		}
		if _, err := sys.Tenants.CreateWorkspace(ctx, tm.pAdmin, tenant.WorkspaceInput{Name: "Side project"}); !errors.Is(err, tenant.ErrSlugTaken) {
			t.Errorf("CreateWorkspace(admin, taken slug) = %v; want ErrSlugTaken", err)
		}

		// A removed admin's principal creates nothing.
		if err := sys.Tenants.RemoveMember(ctx, tm.pOwner, tm.ws.ID, tm.admin.ID); err != nil {
			t.Fatalf("RemoveMember: %v", err)
		}
		if _, err := sys.Tenants.CreateWorkspace(ctx, tm.pAdmin, tenant.WorkspaceInput{Name: "Ghost"}); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("CreateWorkspace(removed admin) = %v; want ErrForbidden", err)
		}
		all, err := sys.Tenants.ListWorkspaces(ctx, operator)
		if err != nil || len(all) != 2 {
			t.Errorf("ListWorkspaces(operator) = %d workspaces, %v; want 2", len(all), err)
		}
	})
}

func TestRoles(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		tm := newTeam(t, sys, "Roles")
		other := newTeam(t, sys, "Elsewhere")
		name := "Renamed"

		if tm.pAdmin.Kind != access.KindWorkspaceSecret || tm.pAdmin.WorkspaceID != tm.ws.ID || tm.pAdmin.MemberID != tm.admin.ID {
			t.Fatalf("admin principal = %+v; want a workspace secret of %s for %s", tm.pAdmin, tm.ws.ID, tm.admin.ID)
		}

		forbidden := []struct {
			name string
			do   func() error
		}{
			{"member AddMember", func() error {
				_, err := sys.Tenants.AddMember(ctx, tm.pUser, tm.ws.ID, "x@team.example", "", access.RoleMember)
				return err
			}},
			{"member UpdateWorkspace", func() error {
				_, err := sys.Tenants.UpdateWorkspace(ctx, tm.pUser, tm.ws.ID, tenant.WorkspacePatch{Name: &name})
				return err
			}},
			{"member ChangeMemberRole", func() error {
				_, err := sys.Tenants.ChangeMemberRole(ctx, tm.pUser, tm.ws.ID, tm.member.ID, access.RoleAdmin)
				return err
			}},
			{"member RemoveMember", func() error { return sys.Tenants.RemoveMember(ctx, tm.pUser, tm.ws.ID, tm.admin.ID) }},
			{"admin adds an owner", func() error {
				_, err := sys.Tenants.AddMember(ctx, tm.pAdmin, tm.ws.ID, "x@team.example", "", access.RoleOwner)
				return err
			}},
			{"admin demotes the owner", func() error {
				_, err := sys.Tenants.ChangeMemberRole(ctx, tm.pAdmin, tm.ws.ID, tm.owner.ID, access.RoleAdmin)
				return err
			}},
			{"admin promotes to owner", func() error {
				_, err := sys.Tenants.ChangeMemberRole(ctx, tm.pAdmin, tm.ws.ID, tm.member.ID, access.RoleOwner)
				return err
			}},
			{"admin removes the owner", func() error { return sys.Tenants.RemoveMember(ctx, tm.pAdmin, tm.ws.ID, tm.owner.ID) }},
			{"owner of another workspace", func() error {
				_, err := sys.Tenants.UpdateWorkspace(ctx, other.pOwner, tm.ws.ID, tenant.WorkspacePatch{Name: &name})
				return err
			}},
			{"owner of another workspace lists", func() error {
				_, err := sys.Tenants.ListMembers(ctx, other.pOwner, tm.ws.ID)
				return err
			}},
			{"owner of another workspace on an unknown workspace", func() error {
				_, err := sys.Tenants.UpdateWorkspace(ctx, other.pOwner, "no-such-workspace", tenant.WorkspacePatch{Name: &name})
				return err
			}},
			{"zero principal", func() error {
				_, err := sys.Tenants.ListMembers(ctx, access.Principal{}, tm.ws.ID)
				return err
			}},
		}
		for _, tc := range forbidden {
			if err := tc.do(); !errors.Is(err, access.ErrForbidden) {
				t.Errorf("%s = %v; want ErrForbidden", tc.name, err)
			}
		}
		want := map[string]string{tm.owner.ID: access.RoleOwner, tm.admin.ID: access.RoleAdmin, tm.member.ID: access.RoleMember}
		if got := roles(t, sys, tm.ws.ID); !reflect.DeepEqual(got, want) {
			t.Fatalf("members = %v; want %v (refused calls change nothing)", got, want)
		}
		if ws, err := sys.Tenants.GetWorkspace(ctx, operator, tm.ws.ID); err != nil || ws.Name != tm.ws.Name {
			t.Errorf("workspace name = %q, %v; want %q unchanged", ws.Name, err, tm.ws.Name)
		}

		// What each role may do.
		if ms, err := sys.Tenants.ListMembers(ctx, tm.pUser, tm.ws.ID); err != nil || len(ms) != 3 {
			t.Errorf("member ListMembers = %d members, %v; want 3", len(ms), err)
		}
		ws, err := sys.Tenants.UpdateWorkspace(ctx, tm.pAdmin, tm.ws.ID, tenant.WorkspacePatch{Name: &name})
		if err != nil || ws.Name != name || ws.Membership == nil || ws.Membership.ID != tm.admin.ID || ws.Membership.Role != access.RoleAdmin {
			t.Errorf("admin UpdateWorkspace = %+v, %v; want name %q and the admin's membership", ws, err, name)
		}
		added, err := sys.Tenants.AddMember(ctx, tm.pAdmin, tm.ws.ID, "New@Team.example", " Nia ", access.RoleAdmin)
		if err != nil || added.Role != access.RoleAdmin || added.Email != "new@team.example" || added.Name != "Nia" {
			t.Errorf("admin AddMember(admin) = %+v, %v; want admin new@team.example named Nia", added, err)
		}
		if _, err := sys.Tenants.AddMember(ctx, tm.pAdmin, tm.ws.ID, "NEW@team.example", "", access.RoleMember); !errors.Is(err, tenant.ErrMemberExists) {
			t.Errorf("AddMember(same e-mail) = %v; want ErrMemberExists", err)
		}
		_, err = sys.Tenants.AddMember(ctx, tm.pAdmin, tm.ws.ID, "z@team.example", "", "root")
		checkInvalid(t, "AddMember(role root)", err, "role")
		_, err = sys.Tenants.AddMember(ctx, tm.pAdmin, tm.ws.ID, "z at team", "", "")
		checkInvalid(t, "AddMember(bad e-mail)", err, "email")
		_, err = sys.Tenants.ChangeMemberRole(ctx, tm.pAdmin, tm.ws.ID, added.ID, "root")
		checkInvalid(t, "ChangeMemberRole(root)", err, "role")
		if _, err := sys.Tenants.ChangeMemberRole(ctx, tm.pAdmin, tm.ws.ID, added.ID, access.RoleMember); err != nil {
			t.Errorf("admin demotes an admin = %v; want nil", err)
		}
		if err := sys.Tenants.RemoveMember(ctx, tm.pAdmin, tm.ws.ID, added.ID); err != nil {
			t.Errorf("admin removes a member = %v; want nil", err)
		}
		if got := roles(t, sys, tm.ws.ID); !reflect.DeepEqual(got, want) {
			t.Errorf("members after the removal = %v; want %v", got, want)
		}
		if err := sys.Tenants.RemoveMember(ctx, tm.pAdmin, tm.ws.ID, added.ID); !errors.Is(err, tenant.ErrMemberNotFound) {
			t.Errorf("RemoveMember(removed) = %v; want ErrMemberNotFound", err)
		}
		if _, err := sys.Tenants.ChangeMemberRole(ctx, tm.pOwner, tm.ws.ID, other.member.ID, access.RoleAdmin); !errors.Is(err, tenant.ErrMemberNotFound) {
			t.Errorf("ChangeMemberRole(member of another workspace) = %v; want ErrMemberNotFound", err)
		}
		if err := sys.Tenants.RemoveMember(ctx, tm.pOwner, tm.ws.ID, other.member.ID); !errors.Is(err, tenant.ErrMemberNotFound) {
			t.Errorf("RemoveMember(member of another workspace) = %v; want ErrMemberNotFound", err)
		}
		if got := roles(t, sys, other.ws.ID); len(got) != 3 || got[other.member.ID] != access.RoleMember {
			t.Errorf("other workspace's members = %v; want its 3 untouched", got)
		}
		if _, err := sys.Tenants.AddMember(ctx, operator, "no-such-workspace", "x@team.example", "", ""); !errors.Is(err, tenant.ErrWorkspaceNotFound) {
			t.Errorf("operator AddMember(unknown workspace) = %v; want ErrWorkspaceNotFound", err)
		}
	})
}

func TestLastOwner(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		tm := newTeam(t, sys, "Solo")

		if _, err := sys.Tenants.ChangeMemberRole(ctx, tm.pOwner, tm.ws.ID, tm.owner.ID, access.RoleAdmin); !errors.Is(err, tenant.ErrLastOwner) {
			t.Errorf("demote the last owner = %v; want ErrLastOwner", err)
		}
		if err := sys.Tenants.RemoveMember(ctx, tm.pOwner, tm.ws.ID, tm.owner.ID); !errors.Is(err, tenant.ErrLastOwner) {
			t.Errorf("remove the last owner = %v; want ErrLastOwner", err)
		}
		if _, err := sys.Tenants.ChangeMemberRole(ctx, operator, tm.ws.ID, tm.owner.ID, access.RoleMember); !errors.Is(err, tenant.ErrLastOwner) {
			t.Errorf("operator demotes the last owner = %v; want ErrLastOwner", err)
		}
		if got := owners(t, sys, tm.pOwner, tm.ws.ID); len(got) != 1 {
			t.Fatalf("owners = %v; want exactly the one", got)
		}

		// With a second owner, either can go.
		second, err := sys.Tenants.ChangeMemberRole(ctx, tm.pOwner, tm.ws.ID, tm.admin.ID, access.RoleOwner)
		if err != nil || second.Role != access.RoleOwner {
			t.Fatalf("promote admin to owner = %+v, %v; want owner", second, err)
		}
		if _, err := sys.Tenants.ChangeMemberRole(ctx, tm.pOwner, tm.ws.ID, tm.owner.ID, access.RoleMember); err != nil {
			t.Fatalf("demote one of two owners = %v; want nil", err)
		}
		// The admin's principal, made before its promotion, acts as an owner now.
		if err := sys.Tenants.RemoveMember(ctx, tm.pAdmin, tm.ws.ID, tm.admin.ID); !errors.Is(err, tenant.ErrLastOwner) {
			t.Errorf("the remaining owner removes itself = %v; want ErrLastOwner", err)
		}
		if err := sys.Tenants.RemoveMember(ctx, tm.pAdmin, tm.ws.ID, tm.owner.ID); err != nil {
			t.Errorf("owner removes the demoted first owner = %v; want nil", err)
		}
		if got := owners(t, sys, tm.pAdmin, tm.ws.ID); len(got) != 1 || got[0] != tm.admin.ID {
			t.Errorf("owners = %v; want [%s]", got, tm.admin.ID)
		}
	})
}

// TestLastOwnerRace demotes two owners at once, each acting on the other. The
// workspace row lock (PostgreSQL) or the single writer (SQLite) must let only
// one through, so the workspace keeps an owner.
func TestLastOwnerRace(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		for round := range 8 {
			ws, first := sys.Workspace(t, fmt.Sprintf("Race %d", round))
			p1 := principal(t, sys, ws.ID, first.ID)
			second, err := sys.Tenants.AddMember(ctx, p1, ws.ID, "second@race.example", "", access.RoleOwner)
			if err != nil {
				t.Fatalf("AddMember(owner): %v", err)
			}
			p2 := principal(t, sys, ws.ID, second.ID)

			start := make(chan struct{})
			results := make([]error, 2)
			var wg sync.WaitGroup
			for i, job := range []struct {
				p      access.Principal
				target string
			}{{p1, second.ID}, {p2, first.ID}} {
				wg.Go(func() {
					<-start
					_, results[i] = sys.Tenants.ChangeMemberRole(ctx, job.p, ws.ID, job.target, access.RoleAdmin)
				})
			}
			close(start)
			wg.Wait()

			// The loser is refused either because it is no longer an owner
			// (its role is re-read under the lock) or as the last owner.
			ok, refused := 0, 0
			for _, err := range results {
				switch {
				case err == nil:
					ok++
				case errors.Is(err, access.ErrForbidden), errors.Is(err, tenant.ErrLastOwner):
					refused++
				default:
					t.Errorf("round %d: ChangeMemberRole = %v; want nil, ErrForbidden or ErrLastOwner", round, err)
				}
			}
			if ok != 1 || refused != 1 {
				t.Errorf("round %d: %d succeeded and %d were refused; want 1 and 1", round, ok, refused)
			}
			ms, err := sys.DB.ListMembers(ctx, ws.ID)
			if err != nil {
				t.Fatalf("ListMembers: %v", err)
			}
			n := 0
			for _, m := range ms {
				if m.Role == access.RoleOwner {
					n++
				}
			}
			if n != 1 {
				t.Errorf("round %d: %d owners remain; want 1", round, n)
			}
		}
	})
}

// TestDemotionTakesEffect checks that a workspace secret carries no role: the
// same secret, and even the same authenticated principal, acts with the
// member's role of the moment; removing the member ends the secret.
func TestDemotionTakesEffect(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		tm := newTeam(t, sys, "Demote")
		tok := sys.WorkspaceSecret(t, tm.ws.ID, tm.admin.ID)
		p := sys.Principal(t, tok)
		if _, err := sys.Tenants.AddMember(ctx, p, tm.ws.ID, "before@team.example", "", ""); err != nil {
			t.Fatalf("admin AddMember before demotion = %v; want nil", err)
		}
		if _, err := sys.Tenants.ChangeMemberRole(ctx, tm.pOwner, tm.ws.ID, tm.admin.ID, access.RoleMember); err != nil {
			t.Fatalf("ChangeMemberRole: %v", err)
		}
		again := sys.Principal(t, tok)
		if again != p {
			t.Errorf("Authenticate after demotion = %+v; want the same principal %+v (it holds no role)", again, p)
		}
		for name, pp := range map[string]access.Principal{"old principal": p, "new principal": again} {
			if _, err := sys.Tenants.AddMember(ctx, pp, tm.ws.ID, "after@team.example", "", ""); !errors.Is(err, access.ErrForbidden) {
				t.Errorf("AddMember after demotion (%s) = %v; want ErrForbidden", name, err)
			}
		}
		if _, err := sys.Tenants.ListMembers(ctx, p, tm.ws.ID); err != nil {
			t.Errorf("ListMembers after demotion = %v; want nil (members may read)", err)
		}

		// Removing the member revokes the secrets issued to it.
		if err := sys.Tenants.RemoveMember(ctx, tm.pOwner, tm.ws.ID, tm.admin.ID); err != nil {
			t.Fatalf("RemoveMember: %v", err)
		}
		if p, err := sys.Tenants.Authenticate(ctx, tok); !errors.Is(err, tenant.ErrUnauthorized) {
			t.Errorf("Authenticate(secret of a removed member) = %+v, %v; want ErrUnauthorized", p, err)
		}
		if _, err := sys.Tenants.ListMembers(ctx, p, tm.ws.ID); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("ListMembers(principal of a removed member) = %v; want ErrForbidden", err)
		}
	})
}

// TestStalePrincipal uses a Principal authenticated before its member was
// demoted, as a request in flight during the demotion would: role changes
// and removals re-read the caller's role under the workspace lock.
func TestStalePrincipal(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		tm := newTeam(t, sys, "Stale")
		second, err := sys.Tenants.AddMember(ctx, tm.pOwner, tm.ws.ID, "second@team.example", "", access.RoleOwner)
		if err != nil {
			t.Fatalf("AddMember(owner): %v", err)
		}
		stale := principal(t, sys, tm.ws.ID, second.ID)
		staleAdmin := tm.pAdmin
		if _, err := sys.Tenants.ChangeMemberRole(ctx, tm.pOwner, tm.ws.ID, second.ID, access.RoleAdmin); err != nil {
			t.Fatalf("demote second owner: %v", err)
		}
		if _, err := sys.Tenants.ChangeMemberRole(ctx, tm.pOwner, tm.ws.ID, tm.admin.ID, access.RoleMember); err != nil {
			t.Fatalf("demote admin: %v", err)
		}
		if _, err := sys.Tenants.ChangeMemberRole(ctx, stale, tm.ws.ID, tm.member.ID, access.RoleOwner); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("demoted owner grants owner = %v; want ErrForbidden", err)
		}
		if err := sys.Tenants.RemoveMember(ctx, stale, tm.ws.ID, tm.owner.ID); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("demoted owner removes an owner = %v; want ErrForbidden", err)
		}
		if _, err := sys.Tenants.ChangeMemberRole(ctx, staleAdmin, tm.ws.ID, tm.member.ID, access.RoleAdmin); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("demoted admin promotes a member = %v; want ErrForbidden", err)
		}
		if err := sys.Tenants.RemoveMember(ctx, tm.pOwner, tm.ws.ID, second.ID); err != nil {
			t.Fatalf("RemoveMember: %v", err)
		}
		if err := sys.Tenants.RemoveMember(ctx, stale, tm.ws.ID, tm.member.ID); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("removed member removes a member = %v; want ErrForbidden", err)
		}
		if got := owners(t, sys, tm.pOwner, tm.ws.ID); len(got) != 1 || got[0] != tm.owner.ID {
			t.Errorf("owners = %v; want [%s]", got, tm.owner.ID)
		}
		want := map[string]string{tm.owner.ID: access.RoleOwner, tm.admin.ID: access.RoleMember, tm.member.ID: access.RoleMember}
		if got := roles(t, sys, tm.ws.ID); !reflect.DeepEqual(got, want) {
			t.Errorf("members = %v; want %v (owner, demoted admin, member)", got, want)
		}
	})
}

func TestUpdateWorkspace(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		tm := newTeam(t, sys, "Patch")
		sys.Workspace(t, "Taken")
		sys.Clock.Advance(time.Hour)

		slug, req, logo, signup := "patched", "email", "https://cdn.example/logo.png", false
		ws, err := sys.Tenants.UpdateWorkspace(ctx, tm.pOwner, tm.ws.ID, tenant.WorkspacePatch{Slug: &slug, UserInfoRequirement: &req,
			LogoURL: &logo, PublicSignup: &signup, Settings: map[string]any{"onboarding": nil, "theme": "dark"}})
		if err != nil {
			t.Fatalf("UpdateWorkspace: %v", err)
		}
		if ws.Membership == nil || ws.Membership.ID != tm.owner.ID || ws.Membership.Role != access.RoleOwner {
			t.Errorf("UpdateWorkspace membership = %+v; want the owner's", ws.Membership)
		}
		got, err := sys.Tenants.GetWorkspace(ctx, tm.pUser, tm.ws.ID)
		if err != nil {
			t.Fatalf("GetWorkspace: %v", err)
		}
		if got.Name != tm.ws.Name || got.Slug != slug || got.UserInfoRequirement != req || got.LogoURL != logo || got.PublicSignup {
			t.Errorf("stored workspace = %+v; want name kept and the patched fields set", got)
		}
		if got.Membership == nil || got.Membership.ID != tm.member.ID || got.Membership.Role != access.RoleMember {
			t.Errorf("GetWorkspace(member) membership = %+v; want the member's", got.Membership)
		}
		var settings map[string]any
		if err := json.Unmarshal(got.Settings, &settings); err != nil || !reflect.DeepEqual(settings, map[string]any{"theme": "dark"}) {
			t.Errorf("settings = %s (%v); want onboarding removed and theme set", got.Settings, err)
		}
		if want := servertest.Start().Add(time.Hour).Truncate(time.Microsecond); !ws.UpdatedAt.Equal(want) || !got.UpdatedAt.Equal(want) {
			t.Errorf("updated_at = %v (stored %v); want the clock %v", ws.UpdatedAt, got.UpdatedAt, want)
		}
		taken := "taken"
		if _, err := sys.Tenants.UpdateWorkspace(ctx, tm.pOwner, tm.ws.ID, tenant.WorkspacePatch{Slug: &taken}); !errors.Is(err, tenant.ErrSlugTaken) {
			t.Errorf("UpdateWorkspace(taken slug) = %v; want ErrSlugTaken", err)
		}
		for _, tc := range []struct {
			name  string
			patch tenant.WorkspacePatch
			field string
		}{
			{"user_info_requirement all", tenant.WorkspacePatch{UserInfoRequirement: ptr("all")}, "user_info_requirement"},
			{"relative logo", tenant.WorkspacePatch{LogoURL: ptr("/logo.png")}, "logo_url"},
			{"blank name", tenant.WorkspacePatch{Name: ptr(" ")}, "name"},
			{"upper-case slug", tenant.WorkspacePatch{Slug: ptr("Patched")}, "slug"},
			{"huge settings", tenant.WorkspacePatch{Settings: map[string]any{"blob": strings.Repeat("x", 17<<10)}}, "settings"},
		} {
			_, err := sys.Tenants.UpdateWorkspace(ctx, tm.pOwner, tm.ws.ID, tc.patch)
			checkInvalid(t, "UpdateWorkspace("+tc.name+")", err, tc.field)
		}
		after, err := sys.Tenants.GetWorkspace(ctx, operator, tm.ws.ID)
		if err != nil || after.Slug != slug || after.Name != tm.ws.Name || !after.UpdatedAt.Equal(got.UpdatedAt) {
			t.Errorf("after refused patches workspace = %+v, %v; want it unchanged", after, err)
		}
		if _, err := sys.Tenants.UpdateWorkspace(ctx, operator, "no-such-workspace", tenant.WorkspacePatch{Name: ptr("X")}); !errors.Is(err, tenant.ErrWorkspaceNotFound) {
			t.Errorf("operator UpdateWorkspace(unknown) = %v; want ErrWorkspaceNotFound", err)
		}
	})
}
