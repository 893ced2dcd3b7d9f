package store

import (
	"context"
	"time"
)

// Workspace is the top-level unit that holds apps and members.
type Workspace struct {
	ID                  string
	Name                string
	Slug                string
	Personal            bool
	Settings            []byte // JSON object
	IsPro               bool
	PublicSignup        bool
	UserInfoRequirement string
	LogoURL             string
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

const workspaceColumns = `id, name, slug, personal, settings, is_pro, public_signup, user_info_requirement, logo_url, created_at, updated_at`

func scanWorkspace(r row) (Workspace, error) {
	var w Workspace
	err := r.Scan(&w.ID, &w.Name, &w.Slug, &w.Personal, &w.Settings, &w.IsPro, &w.PublicSignup,
		&w.UserInfoRequirement, &w.LogoURL, &w.CreatedAt, &w.UpdatedAt)
	w.CreatedAt, w.UpdatedAt = w.CreatedAt.UTC(), w.UpdatedAt.UTC()
	return w, err
}

// CreateWorkspace inserts w. A duplicate slug is ErrConflict.
func (q Queries) CreateWorkspace(ctx context.Context, w Workspace) error {
	_, err := q.w.exec(ctx, `INSERT INTO workspaces (`+workspaceColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		w.ID, w.Name, w.Slug, w.Personal, string(jsonOr(w.Settings, "{}")), w.IsPro, w.PublicSignup,
		w.UserInfoRequirement, w.LogoURL, ts(w.CreatedAt), ts(w.UpdatedAt))
	return err
}

// GetWorkspace returns one workspace or ErrNotFound.
func (q Queries) GetWorkspace(ctx context.Context, id string) (Workspace, error) {
	return scanWorkspace(q.r.queryRow(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE id = $1`, id))
}

// LockWorkspace reads a workspace and, on PostgreSQL, locks its row until the
// transaction ends, so checks such as "at least one owner remains" cannot
// race. SQLite transactions already hold the single write lock.
func (q Queries) LockWorkspace(ctx context.Context, id string) (Workspace, error) {
	return scanWorkspace(q.w.queryRow(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE id = $1`+q.d.forUpdate, id))
}

// ConsoleWorkspaceSlug names the server's own workspace, which holds the
// console's built-in app (its users are the operators). The API's slugs
// never start with '_', so no tenant can take it, and ListWorkspaces
// leaves it out.
const ConsoleWorkspaceSlug = "_console"

// GetWorkspaceBySlug returns the workspace with this slug, or ErrNotFound.
func (q Queries) GetWorkspaceBySlug(ctx context.Context, slug string) (Workspace, error) {
	w, err := scanWorkspace(q.r.queryRow(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE slug = $1`, slug))
	return w, mapErr(err)
}

// ListWorkspaces returns every tenant's workspace, oldest first (not the
// server's own, ConsoleWorkspaceSlug).
func (q Queries) ListWorkspaces(ctx context.Context) ([]Workspace, error) {
	rs, err := q.r.query(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE slug <> '`+ConsoleWorkspaceSlug+`' ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanWorkspace)
}

// UpdateWorkspace writes every mutable field of w.
func (q Queries) UpdateWorkspace(ctx context.Context, w Workspace) error {
	n, err := q.w.exec(ctx, `UPDATE workspaces SET name = $2, slug = $3, settings = $4, is_pro = $5,
		public_signup = $6, user_info_requirement = $7, logo_url = $8, updated_at = $9 WHERE id = $1`,
		w.ID, w.Name, w.Slug, string(jsonOr(w.Settings, "{}")), w.IsPro, w.PublicSignup,
		w.UserInfoRequirement, w.LogoURL, ts(w.UpdatedAt))
	return affected(n, err)
}

// Member is a person's membership of a workspace.
type Member struct {
	ID          string
	WorkspaceID string
	Email       string
	Name        string
	Role        string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

const memberColumns = `id, workspace_id, email, name, role, created_at, updated_at`

func scanMember(r row) (Member, error) {
	var m Member
	err := r.Scan(&m.ID, &m.WorkspaceID, &m.Email, &m.Name, &m.Role, &m.CreatedAt, &m.UpdatedAt)
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return m, err
}

// CreateMember inserts m. The same e-mail twice in a workspace is ErrConflict.
func (q Queries) CreateMember(ctx context.Context, m Member) error {
	_, err := q.w.exec(ctx, `INSERT INTO workspace_members (`+memberColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		m.ID, m.WorkspaceID, m.Email, m.Name, m.Role, ts(m.CreatedAt), ts(m.UpdatedAt))
	return err
}

// GetMember returns a member of a workspace or ErrNotFound.
func (q Queries) GetMember(ctx context.Context, workspaceID, id string) (Member, error) {
	return scanMember(q.r.queryRow(ctx, `SELECT `+memberColumns+` FROM workspace_members WHERE workspace_id = $1 AND id = $2`, workspaceID, id))
}

// ListMembers returns a workspace's members, oldest first.
func (q Queries) ListMembers(ctx context.Context, workspaceID string) ([]Member, error) {
	rs, err := q.r.query(ctx, `SELECT `+memberColumns+` FROM workspace_members WHERE workspace_id = $1 ORDER BY created_at, id`, workspaceID)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanMember)
}

// CountOwners counts the owners of a workspace.
func (q Queries) CountOwners(ctx context.Context, workspaceID string) (int, error) {
	var n int
	err := q.w.queryRow(ctx, `SELECT COUNT(*) FROM workspace_members WHERE workspace_id = $1 AND role = 'owner'`, workspaceID).Scan(&n)
	return n, err
}

// UpdateMember writes a member's name and role.
func (q Queries) UpdateMember(ctx context.Context, m Member) error {
	n, err := q.w.exec(ctx, `UPDATE workspace_members SET name = $3, role = $4, updated_at = $5 WHERE workspace_id = $1 AND id = $2`,
		m.WorkspaceID, m.ID, m.Name, m.Role, ts(m.UpdatedAt))
	return affected(n, err)
}

// DeleteMember removes a member (and, by cascade, the API secrets issued to it).
func (q Queries) DeleteMember(ctx context.Context, workspaceID, id string) error {
	n, err := q.w.exec(ctx, `DELETE FROM workspace_members WHERE workspace_id = $1 AND id = $2`, workspaceID, id)
	return affected(n, err)
}

// MemberRole reads a member's role in a workspace. Inside a transaction on
// PostgreSQL it also holds a share lock on the member's row until commit, so
// a concurrent change of that role (or the member's removal) waits for the
// change this role permits, or this read waits for it and sees the new role.
// Outside a transaction it is a plain read.
func (q Queries) MemberRole(ctx context.Context, workspaceID, memberID string) (string, error) {
	var role string
	err := q.r.queryRow(ctx, `SELECT role FROM workspace_members WHERE workspace_id = $1 AND id = $2`+q.locking(q.d.forShare),
		workspaceID, memberID).Scan(&role)
	return role, err
}

// MemberRoleInApp reads a member's role in the workspace that holds an app,
// locked as MemberRole does. ErrNotFound: no such app, or the member is not
// of its workspace.
func (q Queries) MemberRoleInApp(ctx context.Context, appID, memberID string) (string, error) {
	var role string
	err := q.r.queryRow(ctx, `SELECT m.role FROM workspace_members m JOIN apps a ON a.workspace_id = m.workspace_id
		WHERE a.id = $1 AND m.id = $2`+q.locking(q.d.forShareOf("m")), appID, memberID).Scan(&role)
	return role, err
}
