package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

type workspaceOutput struct {
	Body struct {
		Workspace Workspace `json:"workspace" doc:"The workspace, with the caller's membership."`
	}
}

type workspacesOutput struct {
	Body struct {
		Workspaces []Workspace `json:"workspaces" doc:"The workspaces the caller is a member of."`
	}
}

var listWorkspacesOp = operation{id: "listWorkspaces", method: "GET", path: "/v1/workspaces", summary: "List the caller's workspaces", tag: "Workspaces",
	auth: authWorkspace,
	desc: "The workspaces the caller belongs to, each with the caller's membership. With a workspace API secret (it acts for one member).",
	resp: body(func(o *workspacesOutput) { o.Body.Workspaces = []Workspace{exWorkspace} })}

func (s *Server) listWorkspaces(ctx context.Context, _ *struct{}) (*workspacesOutput, error) {
	views, err := s.Tenants.ListWorkspaces(ctx, principalFrom(ctx))
	if err != nil {
		return nil, err
	}
	out := &workspacesOutput{}
	out.Body.Workspaces = make([]Workspace, 0, len(views))
	for _, v := range views {
		out.Body.Workspaces = append(out.Body.Workspaces, workspaceOut(v))
	}
	return out, nil
}

type createWorkspaceInput struct {
	Body struct {
		Name string `json:"name" minLength:"1" maxLength:"100" doc:"The workspace's name."`
		Slug string `json:"slug,omitempty" maxLength:"64" doc:"A short name, unique; derived from name when omitted."`
	}
}

type createWorkspaceOutput struct {
	Body struct {
		Workspace Workspace `json:"workspace" doc:"The new workspace, with the caller as its owner."`
		APISecret string    `json:"api_secret" doc:"A workspace API secret for the new workspace, acting for the caller as its owner. Shown only here."`
	}
}

var createWorkspaceOp = operation{id: "createWorkspace", method: "POST", path: "/v1/workspaces", summary: "Create a workspace", tag: "Workspaces",
	auth: authWorkspace, errors: []string{"slug_taken"},
	desc: "Creates a workspace owned by the calling member (matched by e-mail address) and returns it with a workspace API secret for it, shown this once: a secret is scoped to one workspace. With a workspace API secret; 409 slug_taken when the slug is in use.",
	req:  `{"name":"Acme","slug":"acme"}`,
	resp: body(func(o *createWorkspaceOutput) {
		o.Body.Workspace, o.Body.APISecret = exWorkspace, "eyJhbGciOiJFUzI1NiIsImtpZCI6ImV4YW1wbGUifQ.eyJ0eXAiOiJ3b3Jrc3BhY2Vfc2VjcmV0In0.ZmFrZS1zaWduYXR1cmU"
	})}

// createWorkspace makes a new workspace owned by the calling member's e-mail
// address, and hands back a secret for it (a secret is scoped to one workspace).
func (s *Server) createWorkspace(ctx context.Context, in *createWorkspaceInput) (*createWorkspaceOutput, error) {
	nw, err := s.Tenants.CreateWorkspace(ctx, principalFrom(ctx), tenant.WorkspaceInput{Name: in.Body.Name, Slug: in.Body.Slug})
	if err != nil {
		return nil, err
	}
	out := &createWorkspaceOutput{}
	out.Body.Workspace = workspaceOut(tenant.WorkspaceView{Workspace: nw.Workspace, Membership: &nw.Owner})
	out.Body.APISecret = nw.Secret
	return out, nil
}

type workspaceIDInput struct {
	WorkspaceID string `path:"workspace_id" doc:"The workspace id."`
}

var getWorkspaceOp = operation{id: "getWorkspace", method: "GET", path: "/v1/workspaces/{workspace_id}", summary: "Get a workspace", tag: "Workspaces",
	auth: authWorkspace, errors: []string{"workspace_not_found"},
	desc: "A workspace with the caller's membership. Any member may read it; others get 403 or 404.",
	resp: body(func(o *workspaceOutput) { o.Body.Workspace = exWorkspace })}

func (s *Server) getWorkspace(ctx context.Context, in *workspaceIDInput) (*workspaceOutput, error) {
	v, err := s.Tenants.GetWorkspace(ctx, principalFrom(ctx), in.WorkspaceID)
	if err != nil {
		return nil, err
	}
	out := &workspaceOutput{}
	out.Body.Workspace = workspaceOut(v)
	return out, nil
}

type updateWorkspaceInput struct {
	WorkspaceID string `path:"workspace_id" doc:"The workspace id."`
	Body        struct {
		Name                *string        `json:"name,omitempty" maxLength:"100" doc:"The workspace's name."`
		Slug                *string        `json:"slug,omitempty" maxLength:"64" doc:"A short unique name."`
		Settings            map[string]any `json:"settings,omitempty" doc:"Merged into the stored settings; a key set to null is removed."`
		PublicSignup        *bool          `json:"public_signup,omitempty" doc:"Whether the workspace's apps allow sign-up by default."`
		UserInfoRequirement *string        `json:"user_info_requirement,omitempty" enum:"none,email,full" doc:"What user details the workspace asks for: none, email or full."`
		LogoURL             *string        `json:"logo_url,omitempty" doc:"URL of the workspace's logo."`
	}
}

var updateWorkspaceOp = operation{id: "updateWorkspace", method: "PATCH", path: "/v1/workspaces/{workspace_id}", summary: "Update a workspace", tag: "Workspaces",
	auth: authWorkspace, errors: []string{"workspace_not_found", "slug_taken"},
	desc: "Changes a workspace's name, slug, settings and defaults; omitted fields keep their value and `settings` is merged. Owners and admins only; 409 slug_taken when the slug is in use.",
	req:  `{"name":"Acme Inc.","settings":{"support_email":"help@example.com"}}`,
	resp: body(func(o *workspaceOutput) { o.Body.Workspace = exWorkspace })}

func (s *Server) updateWorkspace(ctx context.Context, in *updateWorkspaceInput) (*workspaceOutput, error) {
	b := in.Body
	v, err := s.Tenants.UpdateWorkspace(ctx, principalFrom(ctx), in.WorkspaceID, tenant.WorkspacePatch{Name: b.Name, Slug: b.Slug,
		Settings: b.Settings, PublicSignup: b.PublicSignup, UserInfoRequirement: b.UserInfoRequirement, LogoURL: b.LogoURL})
	if err != nil {
		return nil, err
	}
	out := &workspaceOutput{}
	out.Body.Workspace = workspaceOut(v)
	return out, nil
}

type membersOutput struct {
	Body struct {
		Members []Member `json:"members" doc:"The workspace's members."`
	}
}

var listMembersOp = operation{id: "listMembers", method: "GET", path: "/v1/workspaces/{workspace_id}/members", summary: "List members", tag: "Workspaces",
	auth: authWorkspace, errors: []string{"workspace_not_found"},
	desc: "The workspace's members with their roles. Any member may list them.",
	resp: body(func(o *membersOutput) { o.Body.Members = []Member{exMember} })}

func (s *Server) listMembers(ctx context.Context, in *workspaceIDInput) (*membersOutput, error) {
	ms, err := s.Tenants.ListMembers(ctx, principalFrom(ctx), in.WorkspaceID)
	if err != nil {
		return nil, err
	}
	out := &membersOutput{}
	out.Body.Members = make([]Member, 0, len(ms))
	for _, m := range ms {
		out.Body.Members = append(out.Body.Members, memberOut(m))
	}
	return out, nil
}

type memberOutput struct {
	Body struct {
		Member Member `json:"member" doc:"The member."`
	}
}

type addMemberInput struct {
	WorkspaceID string `path:"workspace_id" doc:"The workspace id."`
	Body        struct {
		Email string `json:"email" maxLength:"254" doc:"The new member's e-mail address."`
		Name  string `json:"name,omitempty" maxLength:"100" doc:"The new member's name."`
		Role  string `json:"role,omitempty" enum:"owner,admin,member" doc:"Default member. Only owners may add owners."`
	}
}

var addMemberOp = operation{id: "addMember", method: "POST", path: "/v1/workspaces/{workspace_id}/members", summary: "Add a member", tag: "Workspaces",
	auth: authWorkspace, errors: []string{"workspace_not_found", "member_exists"},
	desc: "Adds a member by e-mail address with a role (default member). Owners and admins may add admins and members; only owners may add owners. 409 member_exists when the address is already a member.",
	req:  `{"email":"grace@example.com","name":"Grace","role":"admin"}`,
	resp: body(func(o *memberOutput) { o.Body.Member = exMember })}

func (s *Server) addMember(ctx context.Context, in *addMemberInput) (*memberOutput, error) {
	m, err := s.Tenants.AddMember(ctx, principalFrom(ctx), in.WorkspaceID, in.Body.Email, in.Body.Name, in.Body.Role)
	if err != nil {
		return nil, err
	}
	out := &memberOutput{}
	out.Body.Member = memberOut(m)
	return out, nil
}

type updateMemberInput struct {
	WorkspaceID string `path:"workspace_id" doc:"The workspace id."`
	MemberID    string `path:"member_id" doc:"The member id."`
	Body        struct {
		Role string `json:"role" enum:"owner,admin,member" doc:"Only owners may grant or remove the owner role; the last owner cannot be demoted."`
	}
}

var updateMemberOp = operation{id: "updateMember", method: "PATCH", path: "/v1/workspaces/{workspace_id}/members/{member_id}", summary: "Change a member's role", tag: "Workspaces",
	auth: authWorkspace, errors: []string{"member_not_found", "last_owner"},
	desc: "Changes a member's role. Owners and admins may; only owners may grant or take away the owner role, and the last owner cannot be demoted (409 last_owner).",
	req:  `{"role":"member"}`,
	resp: body(func(o *memberOutput) { m := exMember; m.Role = "member"; o.Body.Member = m })}

func (s *Server) updateMember(ctx context.Context, in *updateMemberInput) (*memberOutput, error) {
	m, err := s.Tenants.ChangeMemberRole(ctx, principalFrom(ctx), in.WorkspaceID, in.MemberID, in.Body.Role)
	if err != nil {
		return nil, err
	}
	out := &memberOutput{}
	out.Body.Member = memberOut(m)
	return out, nil
}

type memberIDInput struct {
	WorkspaceID string `path:"workspace_id" doc:"The workspace id."`
	MemberID    string `path:"member_id" doc:"The member id."`
}

var removeMemberOp = operation{id: "removeMember", method: "DELETE", path: "/v1/workspaces/{workspace_id}/members/{member_id}", summary: "Remove a member", tag: "Workspaces",
	auth: authWorkspace, errors: []string{"member_not_found", "last_owner"},
	desc: "Removes a member from the workspace; the member's workspace secrets stop working with it. Owners and admins may; only owners may remove an owner, and never the last one (409 last_owner).",
	resp: okBody}

func (s *Server) removeMember(ctx context.Context, in *memberIDInput) (*okOutput, error) {
	if err := s.Tenants.RemoveMember(ctx, principalFrom(ctx), in.WorkspaceID, in.MemberID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

type appsOutput struct {
	Body struct {
		Apps []AppFull `json:"apps" doc:"The workspace's apps."`
	}
}

var listWorkspaceAppsOp = operation{id: "listWorkspaceApps", method: "GET", path: "/v1/workspaces/{workspace_id}/apps", summary: "List a workspace's apps", tag: "Workspaces",
	auth: authWorkspace, errors: []string{"workspace_not_found"},
	desc: "The workspace's apps with their private settings. Any member may list them.",
	resp: body(func(o *appsOutput) { o.Body.Apps = []AppFull{exApp} })}

func (s *Server) listWorkspaceApps(ctx context.Context, in *workspaceIDInput) (*appsOutput, error) {
	apps, err := s.Tenants.ListApps(ctx, principalFrom(ctx), in.WorkspaceID)
	if err != nil {
		return nil, err
	}
	out := &appsOutput{}
	out.Body.Apps = make([]AppFull, 0, len(apps))
	for _, a := range apps {
		out.Body.Apps = append(out.Body.Apps, s.appFull(ctx, a))
	}
	return out, nil
}

type appFullOutput struct {
	Body struct {
		App AppFull `json:"app" doc:"The app."`
	}
}

type createWorkspaceAppInput struct {
	WorkspaceID string `path:"workspace_id" doc:"The workspace id."`
	Body        AppSettingsBody
}

var createWorkspaceAppOp = operation{id: "createWorkspaceApp", method: "POST", path: "/v1/workspaces/{workspace_id}/apps", summary: "Create an app", tag: "Workspaces",
	auth: authWorkspace, errors: []string{"workspace_not_found", "slug_taken"},
	desc: "Creates an app in the workspace; `name` and `origin` are required, every other setting has a default. The app's first signing key is made with it. Owners and admins only; 409 slug_taken when the slug is in use in the workspace. Make its credentials next: an API secret (CLI) or API keys.",
	req:  `{"name":"Demo","origin":"https://app.example.com","allowed_identifiers":["email","phone"],"email_auth_type":"otp","public_signup":true}`,
	resp: body(func(o *appFullOutput) { o.Body.App = exApp })}

func (s *Server) createWorkspaceApp(ctx context.Context, in *createWorkspaceAppInput) (*appFullOutput, error) {
	a, err := s.Tenants.CreateApp(ctx, principalFrom(ctx), in.WorkspaceID, in.Body.settings())
	if err != nil {
		return nil, err
	}
	out := &appFullOutput{}
	out.Body.App = s.appFull(ctx, a)
	return out, nil
}

type workspaceAppInput struct {
	WorkspaceID string `path:"workspace_id" doc:"The workspace id."`
	AppID       string `path:"app_id" doc:"The app id."`
}

var getWorkspaceAppOp = operation{id: "getWorkspaceApp", method: "GET", path: "/v1/workspaces/{workspace_id}/apps/{app_id}", summary: "Get an app with its private settings", tag: "Workspaces",
	auth: authWorkspace, errors: []string{"app_not_found"},
	desc: "An app with its private settings (allowed origins, WebAuthn, MFA, token algorithm, SMS guards). Any member may read it.",
	resp: body(func(o *appFullOutput) { o.Body.App = exApp })}

func (s *Server) getWorkspaceApp(ctx context.Context, in *workspaceAppInput) (*appFullOutput, error) {
	a, err := s.Tenants.WorkspaceApp(ctx, principalFrom(ctx), in.WorkspaceID, in.AppID)
	if err != nil {
		return nil, err
	}
	out := &appFullOutput{}
	out.Body.App = s.appFull(ctx, a)
	return out, nil
}

type updateWorkspaceAppInput struct {
	WorkspaceID string `path:"workspace_id" doc:"The workspace id."`
	AppID       string `path:"app_id" doc:"The app id."`
	Body        AppSettingsPatch
}

var updateWorkspaceAppOp = operation{id: "updateWorkspaceApp", method: "PATCH", path: "/v1/workspaces/{workspace_id}/apps/{app_id}", summary: "Update an app", tag: "Workspaces",
	auth: authWorkspace, errors: []string{"app_not_found", "slug_taken"},
	desc: "Changes an app's settings; omitted fields keep their value, and user_meta_data_schema replaces the whole list. The settings come bare or wrapped in `app` (as on PATCH /v1/apps/{app_id}), not both. Owners and admins only. Changes take effect on every replica within seconds; choosing a new access_token_alg publishes its first key in the JWKS at once.",
	req:  `{"mfa_policy":"optional","mfa_methods_allowed":["totp","backup_code","webauthn"],"access_expiration":900}`,
	resp: body(func(o *appFullOutput) { o.Body.App = exApp })}

func (s *Server) updateWorkspaceApp(ctx context.Context, in *updateWorkspaceAppInput) (*appFullOutput, error) {
	change, err := in.Body.change()
	if err != nil {
		return nil, err
	}
	a, err := s.Tenants.UpdateApp(ctx, principalFrom(ctx), in.WorkspaceID, in.AppID, change)
	if err != nil {
		return nil, err
	}
	out := &appFullOutput{}
	out.Body.App = s.appFull(ctx, a)
	return out, nil
}

var deleteWorkspaceAppOp = operation{id: "deleteWorkspaceApp", method: "DELETE", path: "/v1/workspaces/{workspace_id}/apps/{app_id}", summary: "Delete an app", tag: "Workspaces",
	auth: authWorkspace, errors: []string{"app_not_found"},
	desc: "Deletes an app with its users, sessions, credentials, webhooks and templates; its tokens stop working. Owners and admins only. Cannot be undone.",
	resp: okBody}

func (s *Server) deleteWorkspaceApp(ctx context.Context, in *workspaceAppInput) (*okOutput, error) {
	if err := s.Tenants.DeleteApp(ctx, principalFrom(ctx), in.WorkspaceID, in.AppID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

// AuditEntry is one administrative action as the audit log shows it.
type AuditEntry struct {
	ID     string `json:"id" doc:"The entry's id; entries are listed newest first, and the last one's id is the next page's cursor."`
	AppID  string `json:"app_id,omitempty" doc:"The app the action was on, when it was on one."`
	Action string `json:"action" example:"app.updated" doc:"What was done (docs/audit-log.md lists the actions)."`
	Target struct {
		Type string `json:"type" example:"app" doc:"app, api_secret, api_key, member, workspace or oauth_provider."`
		ID   string `json:"id" doc:"Its id (a provider's slug)."`
	} `json:"target" doc:"What it was done to."`
	Actor struct {
		Kind         string `json:"kind" enum:"app_secret,api_key,workspace_secret,operator" doc:"The credential: an app's API secret or API key, a workspace secret (acting for member_id), or the operator at the command line."`
		CredentialID string `json:"credential_id,omitempty" doc:"The secret's or key's id."`
		MemberID     string `json:"member_id,omitempty" doc:"The member a workspace secret acts for."`
		IP           string `json:"ip,omitempty" doc:"The client's address (empty from the command line)."`
		UserAgent    string `json:"user_agent,omitempty" doc:"The client's User-Agent."`
	} `json:"actor" doc:"Who did it, from where."`
	Before    map[string]any `json:"before" doc:"The fields the action changed, as they were (null for a creation). Never a secret: secrets show as their hint, if at all."`
	After     map[string]any `json:"after" doc:"The same fields as they became (null for a deletion)."`
	CreatedAt time.Time      `json:"created_at" doc:"When (RFC 3339)."`
}

type auditLogInput struct {
	WorkspaceID string `path:"workspace_id" doc:"The workspace id."`
	AppID       string `query:"app_id" maxLength:"64" doc:"Only actions on this app."`
	Action      string `query:"action" maxLength:"64" doc:"Only this action, or, ending in a dot, this family (app. for every app action)."`
	Actor       string `query:"actor" maxLength:"64" doc:"Only actions of this credential id or member id."`
	TargetID    string `query:"target_id" maxLength:"128" doc:"Only actions on this target id."`
	Cursor      string `query:"cursor" maxLength:"64" doc:"The next_cursor of the previous page."`
	Limit       int    `query:"limit" minimum:"1" maximum:"200" doc:"Entries per page; default 50."`
}

type auditLogOutput struct {
	Body struct {
		Entries    []AuditEntry `json:"entries" doc:"Newest first."`
		NextCursor string       `json:"next_cursor,omitempty" doc:"Pass as cursor for the next (older) page; absent on the last page."`
	}
}

var exAuditEntry = func() AuditEntry {
	e := AuditEntry{ID: "01936f0e-5a1c-7a3b-9c2d-1e2f3a4b5c6d", AppID: "app_123", Action: "app.updated", CreatedAt: exT1,
		Before: map[string]any{"mfa_policy": "off"}, After: map[string]any{"mfa_policy": "optional"}}
	e.Target.Type, e.Target.ID = "app", "app_123"
	e.Actor.Kind, e.Actor.CredentialID, e.Actor.MemberID, e.Actor.IP, e.Actor.UserAgent = "workspace_secret", "sec_123", "mem_123", "203.0.113.7", "curl/8.5.0"
	return e
}()

var auditLogOp = operation{id: "auditLog", method: "GET", path: "/v1/workspaces/{workspace_id}/audit_log", summary: "Read the audit log", tag: "Workspaces",
	auth: authWorkspace, errors: []string{"workspace_not_found", errorsShape},
	desc: "The workspace's administrative actions, newest first: who (credential, member, address, user agent), what (action and target), the fields it changed before and after (never a secret) and when. " +
		"Written in the transaction of each change, by the API and the command line alike; append-only (the database refuses to change or delete an entry). " +
		"Filters: `app_id`, `action` (exact, or a family ending in a dot), `actor` (a credential or member id), `target_id`; pages of `limit` (default 50, at most 200) with `cursor`. " +
		"Owners and admins may read it.",
	resp: body(func(o *auditLogOutput) { o.Body.Entries = []AuditEntry{exAuditEntry} })}

func (s *Server) auditLog(ctx context.Context, in *auditLogInput) (*auditLogOutput, error) {
	limit := in.Limit
	es, err := s.Tenants.AuditLog(ctx, principalFrom(ctx), in.WorkspaceID, tenant.AuditFilter{AppID: in.AppID, Action: in.Action,
		ActorID: in.Actor, TargetID: in.TargetID, Before: in.Cursor, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := &auditLogOutput{}
	out.Body.Entries = make([]AuditEntry, 0, len(es))
	for _, e := range es {
		a := AuditEntry{ID: e.ID, AppID: e.AppID, Action: e.Action, CreatedAt: e.CreatedAt}
		a.Target.Type, a.Target.ID = e.TargetType, e.TargetID
		a.Actor.Kind, a.Actor.CredentialID, a.Actor.MemberID, a.Actor.IP, a.Actor.UserAgent = e.ActorKind, e.ActorID, e.MemberID, e.IP, e.UserAgent
		_ = json.Unmarshal(e.Before, &a.Before)
		_ = json.Unmarshal(e.After, &a.After)
		out.Body.Entries = append(out.Body.Entries, a)
	}
	page := cmp.Or(limit, tenant.DefaultAuditPage)
	if n := len(es); n > 0 && n == page {
		out.Body.NextCursor = es[n-1].ID
	}
	return out, nil
}
