package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"net/mail"
	"regexp"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Workspace is a workspace as stored.
type Workspace = store.Workspace

// Member is a workspace member.
type Member = store.Member

// WorkspaceView is a workspace with the caller's membership: nil for the
// operator, who is no member.
type WorkspaceView struct {
	Workspace
	Membership *Member
}

// NewWorkspace is what CreateWorkspace made: the workspace, its first owner
// and, for a member who created it, a workspace secret acting for them in it
// (a secret is scoped to one workspace).
type NewWorkspace struct {
	Workspace Workspace
	Owner     Member
	Secret    string
}

// WorkspaceInput creates a workspace.
type WorkspaceInput struct {
	Name string
	Slug string // derived from Name when empty
	// OwnerEmail and OwnerName name the first owner when the operator creates
	// the workspace; a member creating one becomes its owner.
	OwnerEmail string
	OwnerName  string
}

// WorkspacePatch updates a workspace; nil fields are left alone.
type WorkspacePatch struct {
	Name                *string
	Slug                *string
	Settings            map[string]any
	PublicSignup        *bool
	UserInfoRequirement *string
	LogoURL             *string
}

var slugRe = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$`)

const slugRule = "must be lower-case letters, digits and dashes"

// Slugify derives a URL-friendly slug from a name.
func Slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 64 {
		s = strings.Trim(s[:64], "-")
	}
	if s == "" {
		s = "workspace"
	}
	return s
}

func checkName(field, v string) error {
	v = strings.TrimSpace(v)
	if v == "" {
		return errs.Invalidf(field, "is required")
	}
	if len(v) > 100 {
		return errs.Invalidf(field, "must be at most 100 characters")
	}
	return nil
}

func checkEmail(field, v string) (string, error) {
	a, err := mail.ParseAddress(v)
	if err != nil || a.Address != strings.TrimSpace(v) || !strings.Contains(a.Address, "@") {
		return "", errs.Invalidf(field, "must be an e-mail address")
	}
	return strings.ToLower(a.Address), nil
}

// CreateWorkspace creates a workspace and its first owner. The operator names
// the owner; an owner or admin of a workspace (by its workspace secret)
// creates a workspace it owns and gets a secret for it. A member-role secret,
// read-only, may not, nor may apps' secrets and keys.
func (s *Service) CreateWorkspace(ctx context.Context, p access.Principal, in WorkspaceInput) (_ NewWorkspace, err error) {
	defer errs.Wrap(&err, "create workspace")
	if p.Kind != access.KindOperator && p.Kind != access.KindWorkspaceSecret {
		return NewWorkspace{}, access.ErrForbidden
	}
	var out NewWorkspace
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		now := s.clock()
		out.Owner = Member{ID: newID(), Role: access.RoleOwner, CreatedAt: now, UpdatedAt: now}
		if p.Kind == access.KindWorkspaceSecret {
			if _, err := access.Workspace(ctx, tx.Queries, p, p.WorkspaceID, access.RoleAdmin); err != nil {
				return err
			}
			me, err := tx.GetMember(ctx, p.WorkspaceID, p.MemberID)
			if err != nil {
				return notFound(err, access.ErrForbidden)
			}
			out.Owner.Email, out.Owner.Name = me.Email, me.Name
		} else {
			email, err := checkEmail("owner_email", in.OwnerEmail)
			if err != nil {
				return err
			}
			out.Owner.Email, out.Owner.Name = email, strings.TrimSpace(in.OwnerName)
		}
		if err := checkName("name", in.Name); err != nil {
			return err
		}
		slug := in.Slug
		if slug == "" {
			slug = Slugify(in.Name)
		} else if !slugRe.MatchString(slug) {
			return errs.Invalidf("slug", slugRule)
		}
		out.Workspace = Workspace{ID: newID(), Name: strings.TrimSpace(in.Name), Slug: slug,
			Settings: []byte(`{"onboarding":{"fullName":false,"companyName":false}}`), PublicSignup: true,
			UserInfoRequirement: "none", CreatedAt: now, UpdatedAt: now}
		out.Owner.WorkspaceID = out.Workspace.ID
		if err := tx.CreateWorkspace(ctx, out.Workspace); err != nil {
			return conflict(err, ErrSlugTaken)
		}
		if err := tx.CreateMember(ctx, out.Owner); err != nil {
			return err
		}
		if p.Kind != access.KindWorkspaceSecret {
			return nil
		}
		out.Secret, _, err = s.newWorkspaceSecret(ctx, tx, out.Owner, "created by API")
		return err
	})
	if err != nil {
		return NewWorkspace{}, err
	}
	return out, nil
}

// view adds the caller's membership to a workspace, read in q.
func view(ctx context.Context, q store.Queries, p access.Principal, ws Workspace) (WorkspaceView, error) {
	v := WorkspaceView{Workspace: ws}
	if !p.ForMember() {
		return v, nil
	}
	m, err := q.GetMember(ctx, ws.ID, p.MemberID)
	if err != nil {
		return v, notFound(err, access.ErrForbidden)
	}
	v.Membership = &m
	return v, nil
}

// GetWorkspace returns a workspace to one of its members (or the operator).
func (s *Service) GetWorkspace(ctx context.Context, p access.Principal, id string) (_ WorkspaceView, err error) {
	defer errs.Wrap(&err, "get workspace")
	if _, err := access.Workspace(ctx, s.db.Queries, p, id, access.RoleMember); err != nil {
		return WorkspaceView{}, err
	}
	ws, err := s.db.GetWorkspace(ctx, id)
	if err != nil {
		return WorkspaceView{}, notFound(err, ErrWorkspaceNotFound)
	}
	return view(ctx, s.db.Queries, p, ws)
}

// ListWorkspaces lists what the caller may see: a member its own workspace
// (a workspace secret is scoped to one), the operator every workspace.
func (s *Service) ListWorkspaces(ctx context.Context, p access.Principal) (_ []WorkspaceView, err error) {
	defer errs.Wrap(&err, "list workspaces")
	switch p.Kind {
	case access.KindOperator:
		wss, err := s.db.ListWorkspaces(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]WorkspaceView, 0, len(wss))
		for _, ws := range wss {
			out = append(out, WorkspaceView{Workspace: ws})
		}
		return out, nil
	case access.KindWorkspaceSecret, access.KindConsole:
		v, err := s.GetWorkspace(ctx, p, p.WorkspaceID)
		if err != nil {
			return nil, err
		}
		return []WorkspaceView{v}, nil
	}
	return nil, access.ErrForbidden
}

// UpdateWorkspace applies a patch; owners and admins may.
func (s *Service) UpdateWorkspace(ctx context.Context, p access.Principal, id string, patch WorkspacePatch) (_ WorkspaceView, err error) {
	defer errs.Wrap(&err, "update workspace")
	var out WorkspaceView
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		// The workspace row first, then the caller's member row: the order
		// member changes take too, so the two cannot deadlock.
		ws, err := lockWorkspace(ctx, tx, p, id)
		if err != nil {
			return err
		}
		if _, err := access.Workspace(ctx, tx.Queries, p, id, access.RoleAdmin); err != nil {
			return err
		}
		before := auditWorkspace(ws)
		if err := applyWorkspace(&ws, patch); err != nil {
			return err
		}
		ws.UpdatedAt = s.clock()
		if err := tx.UpdateWorkspace(ctx, ws); err != nil {
			return notFound(conflict(err, ErrSlugTaken), ErrWorkspaceNotFound)
		}
		if err := s.record(ctx, tx, p, audit.Change{WorkspaceID: id, Action: "workspace.updated", TargetType: "workspace",
			TargetID: id, Before: before, After: auditWorkspace(ws)}); err != nil {
			return err
		}
		out, err = view(ctx, tx.Queries, p, ws)
		return err
	})
	return out, err
}

// applyWorkspace validates and copies every set field of patch onto ws.
func applyWorkspace(ws *Workspace, patch WorkspacePatch) error {
	if patch.Name != nil {
		if err := checkName("name", *patch.Name); err != nil {
			return err
		}
		ws.Name = strings.TrimSpace(*patch.Name)
	}
	if patch.Slug != nil {
		if !slugRe.MatchString(*patch.Slug) {
			return errs.Invalidf("slug", slugRule)
		}
		ws.Slug = *patch.Slug
	}
	if patch.Settings != nil {
		cur := map[string]any{}
		_ = json.Unmarshal(ws.Settings, &cur)
		for k, v := range patch.Settings {
			if v == nil {
				delete(cur, k)
			} else {
				cur[k] = v
			}
		}
		b, err := json.Marshal(cur)
		if err != nil || len(b) > 16<<10 {
			return errs.Invalidf("settings", "must be a JSON object of at most 16 KiB")
		}
		ws.Settings = b
	}
	if patch.PublicSignup != nil {
		ws.PublicSignup = *patch.PublicSignup
	}
	if patch.UserInfoRequirement != nil {
		switch *patch.UserInfoRequirement {
		case "none", "email", "full":
			ws.UserInfoRequirement = *patch.UserInfoRequirement
		default:
			return errs.Invalidf("user_info_requirement", "must be none, email or full")
		}
	}
	if patch.LogoURL != nil {
		if *patch.LogoURL != "" {
			if _, err := checkURL("logo_url", *patch.LogoURL); err != nil {
				return err
			}
		}
		ws.LogoURL = *patch.LogoURL
	}
	return nil
}

// ListMembers lists a workspace's members; any member may.
func (s *Service) ListMembers(ctx context.Context, p access.Principal, workspaceID string) (_ []Member, err error) {
	defer errs.Wrap(&err, "list members")
	if _, err := access.Workspace(ctx, s.db.Queries, p, workspaceID, access.RoleMember); err != nil {
		return nil, err
	}
	if err := s.exists(ctx, p, "", workspaceID); err != nil {
		return nil, err
	}
	return s.db.ListMembers(ctx, workspaceID)
}

// exists refuses, for the operator, a list of an app or workspace that does
// not exist: an empty list would read as "none yet". Any other caller was
// let through by access, which never admits an unknown id.
func (s *Service) exists(ctx context.Context, p access.Principal, appID, workspaceID string) error {
	if p.Kind != access.KindOperator {
		return nil
	}
	if appID != "" {
		_, err := s.db.GetApp(ctx, appID)
		return notFound(err, ErrAppNotFound)
	}
	_, err := s.db.GetWorkspace(ctx, workspaceID)
	return notFound(err, ErrWorkspaceNotFound)
}

// AddMember adds a member. Admins may add admins and members; only owners may add owners.
func (s *Service) AddMember(ctx context.Context, p access.Principal, workspaceID, email, name, role string) (_ Member, err error) {
	defer errs.Wrap(&err, "add member")
	var m Member
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		actor, err := s.lockForMembers(ctx, tx, p, workspaceID)
		if err != nil {
			return err
		}
		addr, err := checkEmail("email", email)
		if err != nil {
			return err
		}
		if role == "" {
			role = access.RoleMember
		}
		if !access.ValidRole(role) {
			return errs.Invalidf("role", "must be owner, admin or member")
		}
		if role == access.RoleOwner && actor != access.RoleOwner {
			return access.ErrForbidden
		}
		now := s.clock()
		m = Member{ID: newID(), WorkspaceID: workspaceID, Email: addr, Name: strings.TrimSpace(name), Role: role, CreatedAt: now, UpdatedAt: now}
		if err := conflict(tx.CreateMember(ctx, m), ErrMemberExists); err != nil {
			return err
		}
		return s.record(ctx, tx, p, audit.Change{WorkspaceID: workspaceID, Action: "member.added", TargetType: "member",
			TargetID: m.ID, After: auditMember(m)})
	})
	if err != nil {
		return Member{}, err
	}
	return m, nil
}

// lockForMembers locks the workspace, so checks such as "one owner remains"
// cannot race, and returns the caller's role, read after the lock: a caller
// demoted or removed meanwhile acts on its new role, not its old one.
// Members are changed by owners and admins.
func (s *Service) lockForMembers(ctx context.Context, tx *store.Tx, p access.Principal, workspaceID string) (string, error) {
	if _, err := lockWorkspace(ctx, tx, p, workspaceID); err != nil {
		return "", err
	}
	return access.Workspace(ctx, tx.Queries, p, workspaceID, access.RoleAdmin)
}

// lockWorkspace reads a workspace and locks its row until the transaction
// ends, for the operator or a member of that workspace; anyone else is
// refused before anything is locked. An unknown id is ErrWorkspaceNotFound to
// the operator and ErrForbidden to anyone else, so ids cannot be probed.
func lockWorkspace(ctx context.Context, tx *store.Tx, p access.Principal, id string) (Workspace, error) {
	if p.Kind != access.KindOperator && (!p.ForMember() || p.WorkspaceID != id) {
		return Workspace{}, access.ErrForbidden // never lock another tenant's row
	}
	ws, err := tx.LockWorkspace(ctx, id)
	if errors.Is(err, store.ErrNotFound) && p.Kind != access.KindOperator {
		return ws, access.ErrForbidden
	}
	return ws, notFound(err, ErrWorkspaceNotFound)
}

// ChangeMemberRole changes a member's role. Only owners may grant or take away
// the owner role, and the last owner cannot be demoted.
func (s *Service) ChangeMemberRole(ctx context.Context, p access.Principal, workspaceID, id, role string) (_ Member, err error) {
	defer errs.Wrap(&err, "change member role")
	var out Member
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		actor, err := s.lockForMembers(ctx, tx, p, workspaceID)
		if err != nil {
			return err
		}
		if !access.ValidRole(role) {
			return errs.Invalidf("role", "must be owner, admin or member")
		}
		m, err := tx.GetMember(ctx, workspaceID, id)
		if err != nil {
			return notFound(err, ErrMemberNotFound)
		}
		if (m.Role == access.RoleOwner || role == access.RoleOwner) && actor != access.RoleOwner {
			return access.ErrForbidden
		}
		if m.Role == access.RoleOwner && role != access.RoleOwner {
			if err := lastOwner(ctx, tx, workspaceID); err != nil {
				return err
			}
		}
		before := auditMember(m)
		m.Role, m.UpdatedAt = role, s.clock()
		out = m
		if err := tx.UpdateMember(ctx, m); err != nil {
			return err
		}
		return s.record(ctx, tx, p, audit.Change{WorkspaceID: workspaceID, Action: "member.role_changed", TargetType: "member",
			TargetID: m.ID, Before: before, After: auditMember(m)})
	})
	return out, err
}

// RemoveMember removes a member (revoking the API secrets issued to them).
// Only owners may remove an owner, and never the last one.
func (s *Service) RemoveMember(ctx context.Context, p access.Principal, workspaceID, id string) (err error) {
	defer errs.Wrap(&err, "remove member")
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		actor, err := s.lockForMembers(ctx, tx, p, workspaceID)
		if err != nil {
			return err
		}
		m, err := tx.GetMember(ctx, workspaceID, id)
		if err != nil {
			return notFound(err, ErrMemberNotFound)
		}
		if m.Role == access.RoleOwner {
			if actor != access.RoleOwner {
				return access.ErrForbidden
			}
			if err := lastOwner(ctx, tx, workspaceID); err != nil {
				return err
			}
		}
		if err := notFound(tx.DeleteMember(ctx, workspaceID, id), ErrMemberNotFound); err != nil {
			return err
		}
		return s.record(ctx, tx, p, audit.Change{WorkspaceID: workspaceID, Action: "member.removed", TargetType: "member",
			TargetID: m.ID, Before: auditMember(m)})
	})
}

// lastOwner refuses to take away the workspace's only owner.
func lastOwner(ctx context.Context, tx *store.Tx, workspaceID string) error {
	n, err := tx.CountOwners(ctx, workspaceID)
	if err != nil {
		return err
	}
	if n <= 1 {
		return ErrLastOwner
	}
	return nil
}
