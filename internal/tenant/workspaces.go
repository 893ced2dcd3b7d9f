package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"net/mail"
	"regexp"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Workspace is a workspace as the API shows it.
type Workspace = store.Workspace

// Member is a workspace member.
type Member = store.Member

// WorkspaceInput creates a workspace.
type WorkspaceInput struct {
	Name       string
	Slug       string // derived from Name when empty
	OwnerEmail string // the first owner; required
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
		return invalid(field, "is required")
	}
	if len(v) > 100 {
		return invalid(field, "must be at most 100 characters")
	}
	return nil
}

func checkEmail(field, v string) (string, error) {
	a, err := mail.ParseAddress(v)
	if err != nil || a.Address != strings.TrimSpace(v) || !strings.Contains(a.Address, "@") {
		return "", invalid(field, "must be an e-mail address")
	}
	return strings.ToLower(a.Address), nil
}

// CreateWorkspace creates a workspace and its first owner.
func (s *Service) CreateWorkspace(ctx context.Context, in WorkspaceInput) (Workspace, Member, error) {
	if err := checkName("name", in.Name); err != nil {
		return Workspace{}, Member{}, err
	}
	email, err := checkEmail("owner_email", in.OwnerEmail)
	if err != nil {
		return Workspace{}, Member{}, err
	}
	slug := in.Slug
	if slug == "" {
		slug = Slugify(in.Name)
	} else if !slugRe.MatchString(slug) {
		return Workspace{}, Member{}, invalid("slug", "must be lower-case letters, digits and dashes")
	}
	now := s.clock()
	ws := Workspace{ID: newID(), Name: strings.TrimSpace(in.Name), Slug: slug, Settings: []byte(`{"onboarding":{"fullName":false,"companyName":false}}`),
		PublicSignup: true, UserInfoRequirement: "none", CreatedAt: now, UpdatedAt: now}
	owner := Member{ID: newID(), WorkspaceID: ws.ID, Email: email, Name: strings.TrimSpace(in.OwnerName), Role: RoleOwner, CreatedAt: now, UpdatedAt: now}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateWorkspace(ctx, ws); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return ErrSlugTaken
			}
			return err
		}
		return tx.CreateMember(ctx, owner)
	})
	if err != nil {
		return Workspace{}, Member{}, err
	}
	return ws, owner, nil
}

// GetWorkspace returns a workspace.
func (s *Service) GetWorkspace(ctx context.Context, id string) (Workspace, error) {
	ws, err := s.db.GetWorkspace(ctx, id)
	return ws, notFound(err, ErrWorkspaceNotFound)
}

// ListWorkspaces returns every workspace (operator use).
func (s *Service) ListWorkspaces(ctx context.Context) ([]Workspace, error) {
	return s.db.ListWorkspaces(ctx)
}

// UpdateWorkspace applies p; only owners and admins may.
func (s *Service) UpdateWorkspace(ctx context.Context, p Principal, id string, patch WorkspacePatch) (Workspace, error) {
	if err := p.Require(id, RoleAdmin); err != nil {
		return Workspace{}, err
	}
	ws, err := s.db.GetWorkspace(ctx, id)
	if err != nil {
		return ws, notFound(err, ErrWorkspaceNotFound)
	}
	if patch.Name != nil {
		if err := checkName("name", *patch.Name); err != nil {
			return ws, err
		}
		ws.Name = strings.TrimSpace(*patch.Name)
	}
	if patch.Slug != nil {
		if !slugRe.MatchString(*patch.Slug) {
			return ws, invalid("slug", "must be lower-case letters, digits and dashes")
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
			return ws, invalid("settings", "must be a JSON object of at most 16 KiB")
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
			return ws, invalid("user_info_requirement", "must be none, email or full")
		}
	}
	if patch.LogoURL != nil {
		if *patch.LogoURL != "" {
			if _, err := checkURL("logo_url", *patch.LogoURL); err != nil {
				return ws, err
			}
		}
		ws.LogoURL = *patch.LogoURL
	}
	ws.UpdatedAt = s.clock()
	if err := s.db.UpdateWorkspace(ctx, ws); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return ws, ErrSlugTaken
		}
		return ws, notFound(err, ErrWorkspaceNotFound)
	}
	return ws, nil
}

// ListMembers lists a workspace's members; any member may.
func (s *Service) ListMembers(ctx context.Context, p Principal, workspaceID string) ([]Member, error) {
	if err := p.Require(workspaceID, RoleMember); err != nil {
		return nil, err
	}
	return s.db.ListMembers(ctx, workspaceID)
}

// GetMember returns one member; any member may.
func (s *Service) GetMember(ctx context.Context, p Principal, workspaceID, id string) (Member, error) {
	if err := p.Require(workspaceID, RoleMember); err != nil {
		return Member{}, err
	}
	m, err := s.db.GetMember(ctx, workspaceID, id)
	return m, notFound(err, ErrMemberNotFound)
}

// AddMember adds a member. Admins may add admins and members; only owners may add owners.
func (s *Service) AddMember(ctx context.Context, p Principal, workspaceID, email, name, role string) (Member, error) {
	if err := p.Require(workspaceID, RoleAdmin); err != nil {
		return Member{}, err
	}
	addr, err := checkEmail("email", email)
	if err != nil {
		return Member{}, err
	}
	if role == "" {
		role = RoleMember
	}
	if !ValidRole(role) {
		return Member{}, invalid("role", "must be owner, admin or member")
	}
	if role == RoleOwner && p.Role != RoleOwner {
		return Member{}, ErrForbidden
	}
	now := s.clock()
	m := Member{ID: newID(), WorkspaceID: workspaceID, Email: addr, Name: strings.TrimSpace(name), Role: role, CreatedAt: now, UpdatedAt: now}
	if err := s.db.CreateMember(ctx, m); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return Member{}, ErrMemberExists
		}
		return Member{}, err
	}
	return m, nil
}

// ChangeMemberRole changes a member's role. Only owners may grant or take away
// the owner role, and the last owner cannot be demoted.
func (s *Service) ChangeMemberRole(ctx context.Context, p Principal, workspaceID, id, role string) (Member, error) {
	if err := p.Require(workspaceID, RoleAdmin); err != nil {
		return Member{}, err
	}
	if !ValidRole(role) {
		return Member{}, invalid("role", "must be owner, admin or member")
	}
	var out Member
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := tx.LockWorkspace(ctx, workspaceID); err != nil {
			return notFound(err, ErrWorkspaceNotFound)
		}
		actor, err := actingRole(ctx, tx, p, workspaceID)
		if err != nil {
			return err
		}
		m, err := tx.GetMember(ctx, workspaceID, id)
		if err != nil {
			return notFound(err, ErrMemberNotFound)
		}
		if (m.Role == RoleOwner || role == RoleOwner) && actor != RoleOwner {
			return ErrForbidden
		}
		if m.Role == RoleOwner && role != RoleOwner {
			n, err := tx.CountOwners(ctx, workspaceID)
			if err != nil {
				return err
			}
			if n <= 1 {
				return ErrLastOwner
			}
		}
		m.Role, m.UpdatedAt = role, s.clock()
		out = m
		return tx.UpdateMember(ctx, m)
	})
	return out, err
}

// RemoveMember removes a member (revoking the API secrets issued to them).
// Only owners may remove an owner, and never the last one.
func (s *Service) RemoveMember(ctx context.Context, p Principal, workspaceID, id string) error {
	if err := p.Require(workspaceID, RoleAdmin); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := tx.LockWorkspace(ctx, workspaceID); err != nil {
			return notFound(err, ErrWorkspaceNotFound)
		}
		actor, err := actingRole(ctx, tx, p, workspaceID)
		if err != nil {
			return err
		}
		m, err := tx.GetMember(ctx, workspaceID, id)
		if err != nil {
			return notFound(err, ErrMemberNotFound)
		}
		if m.Role == RoleOwner {
			if actor != RoleOwner {
				return ErrForbidden
			}
			n, err := tx.CountOwners(ctx, workspaceID)
			if err != nil {
				return err
			}
			if n <= 1 {
				return ErrLastOwner
			}
		}
		return notFound(tx.DeleteMember(ctx, workspaceID, id), ErrMemberNotFound)
	})
}

// actingRole re-reads the caller's role once the workspace is locked. The
// Principal was authenticated before the lock was taken, so a concurrent
// demotion or removal of the caller must not let it act on its old role.
func actingRole(ctx context.Context, tx *store.Tx, p Principal, workspaceID string) (string, error) {
	if p.MemberID == "" {
		return p.Role, nil
	}
	m, err := tx.GetMember(ctx, workspaceID, p.MemberID)
	if errors.Is(err, store.ErrNotFound) {
		return "", ErrForbidden
	}
	if err != nil {
		return "", err
	}
	if roleRank[m.Role] < roleRank[RoleAdmin] {
		return "", ErrForbidden
	}
	return m.Role, nil
}
