package httpapi

import (
	"context"

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
	Body        AppSettingsBody
}

func (s *Server) updateWorkspaceApp(ctx context.Context, in *updateWorkspaceAppInput) (*appFullOutput, error) {
	a, err := s.Tenants.UpdateApp(ctx, principalFrom(ctx), in.WorkspaceID, in.AppID, in.Body.settings())
	if err != nil {
		return nil, err
	}
	out := &appFullOutput{}
	out.Body.App = s.appFull(ctx, a)
	return out, nil
}

func (s *Server) deleteWorkspaceApp(ctx context.Context, in *workspaceAppInput) (*okOutput, error) {
	if err := s.Tenants.DeleteApp(ctx, principalFrom(ctx), in.WorkspaceID, in.AppID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}
