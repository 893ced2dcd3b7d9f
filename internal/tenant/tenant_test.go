package tenant_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/fakeclock"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

const issuer = "https://auth.example.test"

// t0 is the fake clock's starting time; it has sub-second digits on purpose.
var t0 = time.Date(2031, 3, 14, 15, 9, 26, 535897000, time.UTC)

// env is a tenant service on a real store with its own master key and clock.
type env struct {
	db     *store.DB
	svc    *tenant.Service
	keys   *token.Keyring
	hasher *token.Hasher
	clock  *fakeclock.Clock
	ctx    context.Context
}

// newEnv builds the service as cmd/gatehouse wires it and loads a first signing key.
func newEnv(t *testing.T, db *store.DB) *env {
	t.Helper()
	raw, err := token.GenerateMasterKey()
	if err != nil {
		t.Fatalf("GenerateMasterKey: %v", err)
	}
	master, err := token.ParseMasterKey(raw)
	if err != nil {
		t.Fatalf("ParseMasterKey: %v", err)
	}
	e := &env{db: db, keys: token.NewKeyring(), clock: fakeclock.New(t0), ctx: context.Background()}
	e.svc, e.hasher = newService(t, db, master, e.keys, e.clock)
	if err := e.svc.EnsureSigningKey(e.ctx); err != nil {
		t.Fatalf("EnsureSigningKey: %v", err)
	}
	return e
}

func newService(t *testing.T, db *store.DB, master []byte, keys *token.Keyring, clock *fakeclock.Clock) (*tenant.Service, *token.Hasher) {
	t.Helper()
	sealKey, err := token.DeriveKey(master, "seal")
	if err != nil {
		t.Fatalf("DeriveKey(seal): %v", err)
	}
	hashKey, err := token.DeriveKey(master, "hash")
	if err != nil {
		t.Fatalf("DeriveKey(hash): %v", err)
	}
	sealer, err := token.NewSealer(sealKey)
	if err != nil {
		t.Fatalf("NewSealer: %v", err)
	}
	hasher := token.NewHasher(hashKey)
	return tenant.New(tenant.Deps{DB: db, Keyring: keys, Sealer: sealer, Hasher: hasher, Issuer: issuer, Now: clock.Now}), hasher
}

// workspace creates a workspace whose owner is owner@<slug>.example.
func (e *env) workspace(t *testing.T, name string) (tenant.Workspace, tenant.Member) {
	t.Helper()
	ws, owner, err := e.svc.CreateWorkspace(e.ctx, tenant.WorkspaceInput{Name: name, OwnerEmail: "owner@" + tenant.Slugify(name) + ".example"})
	if err != nil {
		t.Fatalf("CreateWorkspace(%q): %v", name, err)
	}
	return ws, owner
}

// principal authenticates a fresh workspace secret acting for member.
func (e *env) principal(t *testing.T, workspaceID, memberID string) tenant.Principal {
	t.Helper()
	tok := e.wsSecret(t, workspaceID, memberID)
	p, err := e.svc.Authenticate(e.ctx, tok)
	if err != nil {
		t.Fatalf("Authenticate(workspace secret of %s): %v", memberID, err)
	}
	return p
}

// wsSecret issues a workspace secret acting for member and returns the token.
func (e *env) wsSecret(t *testing.T, workspaceID, memberID string) string {
	t.Helper()
	tok, _, err := e.svc.CreateWorkspaceSecret(e.ctx, workspaceID, memberID, "test")
	if err != nil {
		t.Fatalf("CreateWorkspaceSecret(%s): %v", memberID, err)
	}
	return tok
}

// team is a workspace with one member of each role, and their principals.
type team struct {
	ws                    tenant.Workspace
	owner, admin, member  tenant.Member
	pOwner, pAdmin, pUser tenant.Principal
}

func (e *env) team(t *testing.T, name string) team {
	t.Helper()
	var tm team
	tm.ws, tm.owner = e.workspace(t, name)
	tm.pOwner = e.principal(t, tm.ws.ID, tm.owner.ID)
	var err error
	if tm.admin, err = e.svc.AddMember(e.ctx, tm.pOwner, tm.ws.ID, "admin@team.example", "Ada", tenant.RoleAdmin); err != nil {
		t.Fatalf("AddMember(admin): %v", err)
	}
	if tm.member, err = e.svc.AddMember(e.ctx, tm.pOwner, tm.ws.ID, "member@team.example", "Mel", ""); err != nil {
		t.Fatalf("AddMember(member): %v", err)
	}
	tm.pAdmin = e.principal(t, tm.ws.ID, tm.admin.ID)
	tm.pUser = e.principal(t, tm.ws.ID, tm.member.ID)
	return tm
}

func owners(t *testing.T, e *env, p tenant.Principal, workspaceID string) []string {
	t.Helper()
	ms, err := e.svc.ListMembers(e.ctx, p, workspaceID)
	if err != nil {
		t.Fatalf("ListMembers: %v", err)
	}
	var out []string
	for _, m := range ms {
		if m.Role == tenant.RoleOwner {
			out = append(out, m.ID)
		}
	}
	return out
}

func TestCreateWorkspace(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ws, owner, err := e.svc.CreateWorkspace(e.ctx, tenant.WorkspaceInput{Name: "  Acme Rockets, Inc. ", OwnerEmail: "Boss@Acme.Example", OwnerName: " Wile "})
		if err != nil {
			t.Fatalf("CreateWorkspace: %v", err)
		}
		if ws.Slug != "acme-rockets-inc" {
			t.Errorf("slug = %q; want %q", ws.Slug, "acme-rockets-inc")
		}
		if ws.Name != "Acme Rockets, Inc." {
			t.Errorf("name = %q; want it trimmed", ws.Name)
		}
		if owner.Role != tenant.RoleOwner || owner.Email != "boss@acme.example" || owner.Name != "Wile" || owner.WorkspaceID != ws.ID {
			t.Errorf("owner = %+v; want owner boss@acme.example named Wile in %s", owner, ws.ID)
		}
		if want := e.clock.Now().Truncate(time.Microsecond); !ws.CreatedAt.Equal(want) {
			t.Errorf("created_at = %v; want the injected clock %v", ws.CreatedAt, want)
		}
		got, err := e.svc.GetWorkspace(e.ctx, ws.ID)
		if err != nil || got.Slug != ws.Slug || !got.CreatedAt.Equal(ws.CreatedAt) {
			t.Errorf("GetWorkspace = %+v, %v; want %+v", got, err, ws)
		}

		_, _, err = e.svc.CreateWorkspace(e.ctx, tenant.WorkspaceInput{Name: "Acme rockets inc", OwnerEmail: "x@acme.example"})
		if !errors.Is(err, tenant.ErrSlugTaken) {
			t.Errorf("CreateWorkspace(same derived slug) = %v; want ErrSlugTaken", err)
		}
		_, _, err = e.svc.CreateWorkspace(e.ctx, tenant.WorkspaceInput{Name: "Other", Slug: "acme-rockets-inc", OwnerEmail: "x@acme.example"})
		if !errors.Is(err, tenant.ErrSlugTaken) {
			t.Errorf("CreateWorkspace(explicit taken slug) = %v; want ErrSlugTaken", err)
		}
		if _, err := e.svc.GetWorkspace(e.ctx, "nope"); !errors.Is(err, tenant.ErrWorkspaceNotFound) {
			t.Errorf("GetWorkspace(unknown) = %v; want ErrWorkspaceNotFound", err)
		}

		for _, in := range []tenant.WorkspaceInput{
			{Name: "Bad mail", OwnerEmail: "not-an-email"},
			{Name: "Bad mail", OwnerEmail: "Boss <boss@acme.example>"},
			{Name: "Bad mail", OwnerEmail: ""},
			{Name: "   ", OwnerEmail: "ok@acme.example"},
			{Name: "Bad slug", Slug: "Bad Slug", OwnerEmail: "ok@acme.example"},
		} {
			_, _, err := e.svc.CreateWorkspace(e.ctx, in)
			var ie *tenant.InvalidError
			if !errors.As(err, &ie) {
				t.Errorf("CreateWorkspace(%+v) = %v; want *InvalidError", in, err)
			}
		}
		all, err := e.svc.ListWorkspaces(e.ctx)
		if err != nil || len(all) != 1 {
			t.Errorf("ListWorkspaces = %d workspaces, %v; want 1 (failed creates leave nothing)", len(all), err)
		}
	})
}

func TestRoles(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		tm := e.team(t, "Roles")
		other := e.team(t, "Elsewhere")
		name := "Renamed"

		if tm.pOwner.Role != tenant.RoleOwner || tm.pAdmin.Role != tenant.RoleAdmin || tm.pUser.Role != tenant.RoleMember {
			t.Fatalf("principal roles = %q, %q, %q; want owner, admin, member", tm.pOwner.Role, tm.pAdmin.Role, tm.pUser.Role)
		}
		if tm.pAdmin.Kind != tenant.KindWorkspaceSecret || tm.pAdmin.WorkspaceID != tm.ws.ID || tm.pAdmin.MemberID != tm.admin.ID {
			t.Fatalf("admin principal = %+v; want a workspace secret of %s for %s", tm.pAdmin, tm.ws.ID, tm.admin.ID)
		}

		forbidden := []struct {
			name string
			do   func() error
		}{
			{"member AddMember", func() error {
				_, err := e.svc.AddMember(e.ctx, tm.pUser, tm.ws.ID, "x@team.example", "", tenant.RoleMember)
				return err
			}},
			{"member UpdateWorkspace", func() error {
				_, err := e.svc.UpdateWorkspace(e.ctx, tm.pUser, tm.ws.ID, tenant.WorkspacePatch{Name: &name})
				return err
			}},
			{"member ChangeMemberRole", func() error {
				_, err := e.svc.ChangeMemberRole(e.ctx, tm.pUser, tm.ws.ID, tm.member.ID, tenant.RoleAdmin)
				return err
			}},
			{"member RemoveMember", func() error { return e.svc.RemoveMember(e.ctx, tm.pUser, tm.ws.ID, tm.admin.ID) }},
			{"admin adds an owner", func() error {
				_, err := e.svc.AddMember(e.ctx, tm.pAdmin, tm.ws.ID, "x@team.example", "", tenant.RoleOwner)
				return err
			}},
			{"admin demotes the owner", func() error {
				_, err := e.svc.ChangeMemberRole(e.ctx, tm.pAdmin, tm.ws.ID, tm.owner.ID, tenant.RoleAdmin)
				return err
			}},
			{"admin promotes to owner", func() error {
				_, err := e.svc.ChangeMemberRole(e.ctx, tm.pAdmin, tm.ws.ID, tm.member.ID, tenant.RoleOwner)
				return err
			}},
			{"admin removes the owner", func() error { return e.svc.RemoveMember(e.ctx, tm.pAdmin, tm.ws.ID, tm.owner.ID) }},
			{"owner of another workspace", func() error {
				_, err := e.svc.UpdateWorkspace(e.ctx, other.pOwner, tm.ws.ID, tenant.WorkspacePatch{Name: &name})
				return err
			}},
			{"owner of another workspace lists", func() error {
				_, err := e.svc.ListMembers(e.ctx, other.pOwner, tm.ws.ID)
				return err
			}},
			{"zero principal", func() error {
				_, err := e.svc.GetMember(e.ctx, tenant.Principal{}, tm.ws.ID, tm.owner.ID)
				return err
			}},
		}
		for _, tc := range forbidden {
			if err := tc.do(); !errors.Is(err, tenant.ErrForbidden) {
				t.Errorf("%s = %v; want ErrForbidden", tc.name, err)
			}
		}
		ms, err := e.svc.ListMembers(e.ctx, tm.pOwner, tm.ws.ID)
		if err != nil || len(ms) != 3 {
			t.Fatalf("ListMembers = %d members, %v; want 3 (refused calls change nothing)", len(ms), err)
		}
		for _, m := range ms {
			want := map[string]string{tm.owner.ID: tenant.RoleOwner, tm.admin.ID: tenant.RoleAdmin, tm.member.ID: tenant.RoleMember}[m.ID]
			if m.Role != want {
				t.Errorf("member %s role = %q; want %q", m.Email, m.Role, want)
			}
		}

		// What each role may do.
		if _, err := e.svc.GetMember(e.ctx, tm.pUser, tm.ws.ID, tm.owner.ID); err != nil {
			t.Errorf("member GetMember = %v; want nil", err)
		}
		ws, err := e.svc.UpdateWorkspace(e.ctx, tm.pAdmin, tm.ws.ID, tenant.WorkspacePatch{Name: &name})
		if err != nil || ws.Name != name {
			t.Errorf("admin UpdateWorkspace = %q, %v; want %q", ws.Name, err, name)
		}
		added, err := e.svc.AddMember(e.ctx, tm.pAdmin, tm.ws.ID, "New@Team.example", " Nia ", tenant.RoleAdmin)
		if err != nil || added.Role != tenant.RoleAdmin || added.Email != "new@team.example" {
			t.Errorf("admin AddMember(admin) = %+v, %v; want admin new@team.example", added, err)
		}
		if _, err := e.svc.AddMember(e.ctx, tm.pAdmin, tm.ws.ID, "NEW@team.example", "", tenant.RoleMember); !errors.Is(err, tenant.ErrMemberExists) {
			t.Errorf("AddMember(same e-mail) = %v; want ErrMemberExists", err)
		}
		var ie *tenant.InvalidError
		if _, err := e.svc.AddMember(e.ctx, tm.pAdmin, tm.ws.ID, "z@team.example", "", "root"); !errors.As(err, &ie) {
			t.Errorf("AddMember(role root) = %v; want *InvalidError", err)
		}
		if _, err := e.svc.ChangeMemberRole(e.ctx, tm.pAdmin, tm.ws.ID, added.ID, tenant.RoleMember); err != nil {
			t.Errorf("admin demotes an admin = %v; want nil", err)
		}
		if err := e.svc.RemoveMember(e.ctx, tm.pAdmin, tm.ws.ID, added.ID); err != nil {
			t.Errorf("admin removes a member = %v; want nil", err)
		}
		if _, err := e.svc.GetMember(e.ctx, tm.pAdmin, tm.ws.ID, added.ID); !errors.Is(err, tenant.ErrMemberNotFound) {
			t.Errorf("GetMember(removed) = %v; want ErrMemberNotFound", err)
		}
		if err := e.svc.RemoveMember(e.ctx, tm.pAdmin, tm.ws.ID, added.ID); !errors.Is(err, tenant.ErrMemberNotFound) {
			t.Errorf("RemoveMember(removed) = %v; want ErrMemberNotFound", err)
		}
		if _, err := e.svc.ChangeMemberRole(e.ctx, tm.pOwner, tm.ws.ID, other.member.ID, tenant.RoleAdmin); !errors.Is(err, tenant.ErrMemberNotFound) {
			t.Errorf("ChangeMemberRole(member of another workspace) = %v; want ErrMemberNotFound", err)
		}
	})
}

func TestLastOwner(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		tm := e.team(t, "Solo")

		if _, err := e.svc.ChangeMemberRole(e.ctx, tm.pOwner, tm.ws.ID, tm.owner.ID, tenant.RoleAdmin); !errors.Is(err, tenant.ErrLastOwner) {
			t.Errorf("demote the last owner = %v; want ErrLastOwner", err)
		}
		if err := e.svc.RemoveMember(e.ctx, tm.pOwner, tm.ws.ID, tm.owner.ID); !errors.Is(err, tenant.ErrLastOwner) {
			t.Errorf("remove the last owner = %v; want ErrLastOwner", err)
		}
		if got := owners(t, e, tm.pOwner, tm.ws.ID); len(got) != 1 {
			t.Fatalf("owners = %v; want exactly the one", got)
		}

		// With a second owner, either can go.
		second, err := e.svc.ChangeMemberRole(e.ctx, tm.pOwner, tm.ws.ID, tm.admin.ID, tenant.RoleOwner)
		if err != nil || second.Role != tenant.RoleOwner {
			t.Fatalf("promote admin to owner = %+v, %v; want owner", second, err)
		}
		if _, err := e.svc.ChangeMemberRole(e.ctx, tm.pOwner, tm.ws.ID, tm.owner.ID, tenant.RoleMember); err != nil {
			t.Fatalf("demote one of two owners = %v; want nil", err)
		}
		p2 := e.principal(t, tm.ws.ID, tm.admin.ID)
		if err := e.svc.RemoveMember(e.ctx, p2, tm.ws.ID, tm.admin.ID); !errors.Is(err, tenant.ErrLastOwner) {
			t.Errorf("the remaining owner removes itself = %v; want ErrLastOwner", err)
		}
		if err := e.svc.RemoveMember(e.ctx, p2, tm.ws.ID, tm.owner.ID); err != nil {
			t.Errorf("owner removes the demoted first owner = %v; want nil", err)
		}
		if got := owners(t, e, p2, tm.ws.ID); len(got) != 1 || got[0] != tm.admin.ID {
			t.Errorf("owners = %v; want [%s]", got, tm.admin.ID)
		}
	})
}

// TestLastOwnerRace demotes two owners at once, each acting on the other. The
// workspace row lock (PostgreSQL) or the single writer (SQLite) must let only
// one through, so the workspace keeps an owner.
func TestLastOwnerRace(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		for round := range 8 {
			ws, first := e.workspace(t, fmt.Sprintf("Race %d", round))
			p1 := e.principal(t, ws.ID, first.ID)
			second, err := e.svc.AddMember(e.ctx, p1, ws.ID, "second@race.example", "", tenant.RoleOwner)
			if err != nil {
				t.Fatalf("AddMember(owner): %v", err)
			}
			p2 := e.principal(t, ws.ID, second.ID)

			start := make(chan struct{})
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i, job := range []struct {
				p      tenant.Principal
				target string
			}{{p1, second.ID}, {p2, first.ID}} {
				wg.Go(func() {
					<-start
					_, errs[i] = e.svc.ChangeMemberRole(e.ctx, job.p, ws.ID, job.target, tenant.RoleAdmin)
				})
			}
			close(start)
			wg.Wait()

			// The loser is refused either because it is no longer an owner
			// (its role is re-read under the lock) or as the last owner.
			ok, refused := 0, 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case errors.Is(err, tenant.ErrForbidden), errors.Is(err, tenant.ErrLastOwner):
					refused++
				default:
					t.Errorf("round %d: ChangeMemberRole = %v; want nil, ErrForbidden or ErrLastOwner", round, err)
				}
			}
			if ok != 1 || refused != 1 {
				t.Errorf("round %d: %d succeeded and %d were refused; want 1 and 1", round, ok, refused)
			}
			ms, err := db.ListMembers(e.ctx, ws.ID)
			if err != nil {
				t.Fatalf("ListMembers: %v", err)
			}
			n := 0
			for _, m := range ms {
				if m.Role == tenant.RoleOwner {
					n++
				}
			}
			if n != 1 {
				t.Errorf("round %d: %d owners remain; want 1", round, n)
			}
		}
	})
}

// TestDemotionTakesEffect checks that a workspace secret's role is read from
// the database on every Authenticate, not from the token.
func TestDemotionTakesEffect(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		tm := e.team(t, "Demote")
		tok := e.wsSecret(t, tm.ws.ID, tm.admin.ID)
		p, err := e.svc.Authenticate(e.ctx, tok)
		if err != nil || p.Role != tenant.RoleAdmin {
			t.Fatalf("Authenticate = %+v, %v; want role admin", p, err)
		}
		if _, err := e.svc.AddMember(e.ctx, p, tm.ws.ID, "before@team.example", "", ""); err != nil {
			t.Fatalf("admin AddMember before demotion = %v; want nil", err)
		}
		if _, err := e.svc.ChangeMemberRole(e.ctx, tm.pOwner, tm.ws.ID, tm.admin.ID, tenant.RoleMember); err != nil {
			t.Fatalf("ChangeMemberRole: %v", err)
		}
		p, err = e.svc.Authenticate(e.ctx, tok)
		if err != nil || p.Role != tenant.RoleMember {
			t.Fatalf("Authenticate after demotion = %+v, %v; want role member", p, err)
		}
		if _, err := e.svc.AddMember(e.ctx, p, tm.ws.ID, "after@team.example", "", ""); !errors.Is(err, tenant.ErrForbidden) {
			t.Errorf("AddMember after demotion = %v; want ErrForbidden", err)
		}

		// Removing the member revokes the secrets issued to it.
		if err := e.svc.RemoveMember(e.ctx, tm.pOwner, tm.ws.ID, tm.admin.ID); err != nil {
			t.Fatalf("RemoveMember: %v", err)
		}
		if p, err := e.svc.Authenticate(e.ctx, tok); !errors.Is(err, tenant.ErrUnauthorized) {
			t.Errorf("Authenticate(secret of a removed member) = %+v, %v; want ErrUnauthorized", p, err)
		}
	})
}

// TestStalePrincipal uses a Principal authenticated before its member was
// demoted, as a request in flight during the demotion would: role changes
// and removals re-read the caller's role under the workspace lock.
func TestStalePrincipal(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		tm := e.team(t, "Stale")
		second, err := e.svc.AddMember(e.ctx, tm.pOwner, tm.ws.ID, "second@team.example", "", tenant.RoleOwner)
		if err != nil {
			t.Fatalf("AddMember(owner): %v", err)
		}
		stale := e.principal(t, tm.ws.ID, second.ID)
		staleAdmin := tm.pAdmin
		if _, err := e.svc.ChangeMemberRole(e.ctx, tm.pOwner, tm.ws.ID, second.ID, tenant.RoleAdmin); err != nil {
			t.Fatalf("demote second owner: %v", err)
		}
		if _, err := e.svc.ChangeMemberRole(e.ctx, tm.pOwner, tm.ws.ID, tm.admin.ID, tenant.RoleMember); err != nil {
			t.Fatalf("demote admin: %v", err)
		}
		if _, err := e.svc.ChangeMemberRole(e.ctx, stale, tm.ws.ID, tm.member.ID, tenant.RoleOwner); !errors.Is(err, tenant.ErrForbidden) {
			t.Errorf("demoted owner grants owner = %v; want ErrForbidden", err)
		}
		if err := e.svc.RemoveMember(e.ctx, stale, tm.ws.ID, tm.owner.ID); !errors.Is(err, tenant.ErrForbidden) {
			t.Errorf("demoted owner removes an owner = %v; want ErrForbidden", err)
		}
		if _, err := e.svc.ChangeMemberRole(e.ctx, staleAdmin, tm.ws.ID, tm.member.ID, tenant.RoleAdmin); !errors.Is(err, tenant.ErrForbidden) {
			t.Errorf("demoted admin promotes a member = %v; want ErrForbidden", err)
		}
		if err := e.svc.RemoveMember(e.ctx, tm.pOwner, tm.ws.ID, second.ID); err != nil {
			t.Fatalf("RemoveMember: %v", err)
		}
		if err := e.svc.RemoveMember(e.ctx, stale, tm.ws.ID, tm.member.ID); !errors.Is(err, tenant.ErrForbidden) {
			t.Errorf("removed member removes a member = %v; want ErrForbidden", err)
		}
		if got := owners(t, e, tm.pOwner, tm.ws.ID); len(got) != 1 || got[0] != tm.owner.ID {
			t.Errorf("owners = %v; want [%s]", got, tm.owner.ID)
		}
		ms, _ := e.svc.ListMembers(e.ctx, tm.pOwner, tm.ws.ID)
		if len(ms) != 3 {
			t.Errorf("members = %d; want 3 (owner, demoted admin, member)", len(ms))
		}
	})
}

func TestUpdateWorkspace(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		tm := e.team(t, "Patch")
		e.workspace(t, "Taken")
		e.clock.Advance(time.Hour)

		slug, req, logo, signup := "patched", "email", "https://cdn.example/logo.png", false
		ws, err := e.svc.UpdateWorkspace(e.ctx, tm.pOwner, tm.ws.ID, tenant.WorkspacePatch{Slug: &slug, UserInfoRequirement: &req,
			LogoURL: &logo, PublicSignup: &signup, Settings: map[string]any{"onboarding": nil, "theme": "dark"}})
		if err != nil {
			t.Fatalf("UpdateWorkspace: %v", err)
		}
		got, err := e.svc.GetWorkspace(e.ctx, tm.ws.ID)
		if err != nil {
			t.Fatalf("GetWorkspace: %v", err)
		}
		if got.Name != tm.ws.Name || got.Slug != slug || got.UserInfoRequirement != req || got.LogoURL != logo || got.PublicSignup {
			t.Errorf("stored workspace = %+v; want name kept and the patched fields set", got)
		}
		var settings map[string]any
		if err := json.Unmarshal(got.Settings, &settings); err != nil || !reflect.DeepEqual(settings, map[string]any{"theme": "dark"}) {
			t.Errorf("settings = %s (%v); want onboarding removed and theme set", got.Settings, err)
		}
		if !ws.UpdatedAt.Equal(t0.Add(time.Hour).Truncate(time.Microsecond)) {
			t.Errorf("updated_at = %v; want the clock", ws.UpdatedAt)
		}
		taken := "taken"
		if _, err := e.svc.UpdateWorkspace(e.ctx, tm.pOwner, tm.ws.ID, tenant.WorkspacePatch{Slug: &taken}); !errors.Is(err, tenant.ErrSlugTaken) {
			t.Errorf("UpdateWorkspace(taken slug) = %v; want ErrSlugTaken", err)
		}
		bad := "all"
		var ie *tenant.InvalidError
		if _, err := e.svc.UpdateWorkspace(e.ctx, tm.pOwner, tm.ws.ID, tenant.WorkspacePatch{UserInfoRequirement: &bad}); !errors.As(err, &ie) {
			t.Errorf("UpdateWorkspace(user_info_requirement all) = %v; want *InvalidError", err)
		}
		rel := "/logo.png"
		if _, err := e.svc.UpdateWorkspace(e.ctx, tm.pOwner, tm.ws.ID, tenant.WorkspacePatch{LogoURL: &rel}); !errors.As(err, &ie) {
			t.Errorf("UpdateWorkspace(relative logo) = %v; want *InvalidError", err)
		}
	})
}
