package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/httpapi"
	"github.com/gatehouse-auth/gatehouse/internal/server"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// The operator commands build the system as serve does (server.New), on a
// schema that must be current, and act as the operator: the one principal
// with every right, since whoever runs them holds the server's settings and
// master key. They print JSON.

// withSystem runs fn with the assembled system and prints what it returns
// as JSON: the one shape of every operator command.
func (e *env) withSystem(cmd *cobra.Command, fn func(ctx context.Context, sys *server.Server) (any, error)) error {
	cfg, err := e.load(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	sys, err := server.New(ctx, cfg, server.Options{Log: newLogger(cfg, e.stderr), Schema: server.RequireSchema, Version: buildVersion()})
	if err != nil {
		return err
	}
	defer sys.Close()
	out, err := fn(ctx, sys)
	if err != nil {
		return err
	}
	return printJSON(e.stdout, out)
}

func migrateCommand(e *env) *cobra.Command {
	schema := func(cmd *cobra.Command, apply bool) error {
		cfg, err := e.load(cmd)
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		sys, err := server.New(ctx, cfg, server.Options{Log: newLogger(cfg, e.stderr), Schema: server.SchemaOnly})
		if err != nil {
			return err
		}
		defer sys.Close()
		if apply {
			if err := sys.Migrate(ctx); err != nil {
				return err
			}
		}
		st, err := sys.MigrationStatus(ctx)
		if err != nil {
			return err
		}
		return printJSON(e.stdout, map[string]any{"migrations": migrationsJSON(st)})
	}
	return group(&cobra.Command{Use: "migrate", Short: "Apply or inspect database migrations (Gatehouse's and the job queue's)"},
		&cobra.Command{Use: "up", Short: "Apply every pending migration", Args: args(cobra.NoArgs),
			RunE: func(cmd *cobra.Command, _ []string) error { return schema(cmd, true) }},
		&cobra.Command{Use: "status", Short: "List migrations and whether each is applied", Args: args(cobra.NoArgs),
			RunE: func(cmd *cobra.Command, _ []string) error { return schema(cmd, false) }})
}

func workspacesCommand(e *env) *cobra.Command {
	var in tenant.WorkspaceInput
	create := &cobra.Command{
		Use: "create", Short: "Create a workspace and its first owner", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "name", "owner-email"); err != nil {
				return err
			}
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
				nw, err := sys.Tenants.CreateWorkspace(ctx, access.Operator(), in)
				if err != nil {
					return nil, err
				}
				return map[string]any{"workspace": httpapi.WorkspaceJSON(tenant.WorkspaceView{Workspace: nw.Workspace}), "owner": httpapi.MemberJSON(nw.Owner)}, nil
			})
		},
	}
	create.Flags().StringVar(&in.Name, "name", "", "workspace name (required)")
	create.Flags().StringVar(&in.Slug, "slug", "", "URL-friendly id (default: from the name)")
	create.Flags().StringVar(&in.OwnerEmail, "owner-email", "", "e-mail address of the first owner (required)")
	create.Flags().StringVar(&in.OwnerName, "owner-name", "", "name of the first owner")
	list := &cobra.Command{
		Use: "list", Short: "List workspaces", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
				views, err := sys.Tenants.ListWorkspaces(ctx, access.Operator())
				if err != nil {
					return nil, err
				}
				out := make([]httpapi.Workspace, 0, len(views))
				for _, v := range views {
					out = append(out, httpapi.WorkspaceJSON(v))
				}
				return map[string]any{"workspaces": out}, nil
			})
		},
	}
	return group(&cobra.Command{Use: "workspaces", Short: "Manage workspaces"}, create, list)
}

func appsCommand(e *env) *cobra.Command {
	var workspaceID, name, origin, loginURL string
	create := &cobra.Command{
		Use: "create", Short: "Create an app in a workspace", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "workspace", "name", "origin"); err != nil {
				return err
			}
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
				s := tenant.AppSettings{Name: &name, Origin: &origin}
				if loginURL != "" {
					s.LoginURL = &loginURL
				}
				app, err := sys.Tenants.CreateApp(ctx, access.Operator(), workspaceID, s)
				if err != nil {
					return nil, err
				}
				return map[string]any{"app": sys.API().AppJSON(ctx, app)}, nil
			})
		},
	}
	create.Flags().StringVar(&workspaceID, "workspace", "", "workspace id (required)")
	create.Flags().StringVar(&name, "name", "", "app name (required)")
	create.Flags().StringVar(&origin, "origin", "", "the app's web origin, e.g. https://app.example.com (required)")
	create.Flags().StringVar(&loginURL, "login-url", "", "where magic and invitation links land (empty: the origin)")
	var listWorkspace string
	list := &cobra.Command{
		Use: "list", Short: "List apps", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
				apps, err := sys.Tenants.ListApps(ctx, access.Operator(), listWorkspace)
				if err != nil {
					return nil, err
				}
				out := make([]httpapi.AppFull, 0, len(apps))
				for _, a := range apps {
					out = append(out, sys.API().AppJSON(ctx, a))
				}
				return map[string]any{"apps": out}, nil
			})
		},
	}
	list.Flags().StringVar(&listWorkspace, "workspace", "", "only this workspace's apps")
	return group(&cobra.Command{Use: "apps", Short: "Manage apps"}, create, list, appsUpdateCommand(e), appsDeleteCommand(e))
}

// appsUpdateCommand changes the settings its flags name; the others keep
// their value. The checks are the API's (tenant.UpdateApp).
func appsUpdateCommand(e *env) *cobra.Command {
	var name, slug, origin, loginURL, callbackURL, emailAuthType, alg string
	var publicSignup bool
	update := &cobra.Command{
		Use: "update ID", Short: "Change an app's settings (only those given)", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			var s tenant.AppSettings
			for flag, field := range map[string]**string{"name": &s.Name, "slug": &s.Slug, "origin": &s.Origin,
				"login-url": &s.LoginURL, "callback-url": &s.CallbackURL, "email-auth-type": &s.EmailAuthType, "access-token-alg": &s.AccessTokenAlg} {
				if cmd.Flags().Changed(flag) {
					v, _ := cmd.Flags().GetString(flag)
					*field = &v
				}
			}
			if cmd.Flags().Changed("public-signup") {
				s.PublicSignup = &publicSignup
			}
			if s == (tenant.AppSettings{}) {
				return usageError(errors.New("apps update needs at least one setting to change (see --help)"))
			}
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
				app, err := sys.Tenants.GetApp(ctx, a[0])
				if err != nil {
					return nil, err
				}
				app, err = sys.Tenants.UpdateApp(ctx, access.Operator(), app.WorkspaceID, app.ID, s)
				if err != nil {
					return nil, err
				}
				return map[string]any{"app": sys.API().AppJSON(ctx, app)}, nil
			})
		},
	}
	f := update.Flags()
	f.StringVar(&name, "name", "", "app name")
	f.StringVar(&slug, "slug", "", "URL-friendly id")
	f.StringVar(&origin, "origin", "", "the app's web origin")
	f.StringVar(&loginURL, "login-url", "", "where magic and invitation links land (empty: the origin)")
	f.StringVar(&callbackURL, "callback-url", "", "where the hosted sign-in returns")
	f.StringVar(&emailAuthType, "email-auth-type", "", "how e-mail sign-in works: magic (a link) or otp (a code)")
	f.StringVar(&alg, "access-token-alg", "", "ES256, RS256, EdDSA, or default (the server's)")
	f.BoolVar(&publicSignup, "public-signup", true, "whether anyone may sign up")
	return update
}

func appsDeleteCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use: "delete ID", Short: "Delete an app with all its users, credentials and webhooks", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
				app, err := sys.Tenants.GetApp(ctx, a[0])
				if err != nil {
					return nil, err
				}
				if err := sys.Tenants.DeleteApp(ctx, access.Operator(), app.WorkspaceID, app.ID); err != nil {
					return nil, err
				}
				return map[string]any{"id": app.ID, "deleted": true}, nil
			})
		},
	}
}

func secretsCommand(e *env) *cobra.Command {
	var appID, workspaceID, member, name string
	create := &cobra.Command{
		Use: "create", Short: "Issue an API secret for an app (--app) or a workspace (--workspace)", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (appID == "") == (workspaceID == "") {
				return usageError(errors.New("secrets create needs exactly one of --app ID or --workspace ID"))
			}
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
				var tok string
				var rec tenant.APISecret
				var err error
				if appID != "" {
					tok, rec, err = sys.Tenants.CreateAppSecret(ctx, access.Operator(), appID, name)
				} else {
					tok, rec, err = sys.Tenants.CreateWorkspaceSecret(ctx, access.Operator(), workspaceID, member, name)
				}
				if err != nil {
					return nil, err
				}
				out := secretJSON(rec)
				out["api_secret"] = tok
				return out, nil
			})
		},
	}
	create.Flags().StringVar(&appID, "app", "", "app id")
	create.Flags().StringVar(&workspaceID, "workspace", "", "workspace id")
	create.Flags().StringVar(&member, "member", "", "member id or e-mail the workspace secret acts for (default: the first owner)")
	create.Flags().StringVar(&name, "name", "", "a label for the secret")
	var listApp, listWorkspace string
	list := &cobra.Command{
		Use: "list", Short: "List the secrets of an app or workspace (never the secrets themselves)", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (listApp == "") == (listWorkspace == "") {
				return usageError(errors.New("secrets list needs exactly one of --app ID or --workspace ID"))
			}
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
				recs, err := sys.Tenants.ListSecrets(ctx, access.Operator(), listApp, listWorkspace)
				if err != nil {
					return nil, err
				}
				out := make([]map[string]any, 0, len(recs))
				for _, r := range recs {
					out = append(out, secretJSON(r))
				}
				return map[string]any{"secrets": out}, nil
			})
		},
	}
	list.Flags().StringVar(&listApp, "app", "", "app id")
	list.Flags().StringVar(&listWorkspace, "workspace", "", "workspace id")
	revoke := &cobra.Command{
		Use: "revoke ID", Short: "Revoke an API secret; it fails on its next use", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
				if err := sys.Tenants.RevokeSecret(ctx, access.Operator(), a[0]); err != nil {
					return nil, err
				}
				return map[string]any{"id": a[0], "revoked": true}, nil
			})
		},
	}
	return group(&cobra.Command{Use: "secrets", Short: "Manage API secrets"}, create, list, revoke)
}

// usersCommand manages the users of one app, as the API's user routes do
// (appuser.Service: same checks, same events).
func usersCommand(e *env) *cobra.Command {
	var appID string
	// withApp runs fn with the app --app names; an unknown one is an error.
	withApp := func(cmd *cobra.Command, fn func(ctx context.Context, sys *server.Server, app tenant.App) (any, error)) error {
		if err := required(cmd, "app"); err != nil {
			return err
		}
		return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
			app, err := sys.Tenants.GetApp(ctx, appID)
			if err != nil {
				return nil, err
			}
			return fn(ctx, sys, app)
		})
	}
	var q, status string
	var page, perPage int
	list := &cobra.Command{
		Use: "list", Short: "List an app's users, newest first, one page at a time", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withApp(cmd, func(ctx context.Context, sys *server.Server, app tenant.App) (any, error) {
				p, err := sys.Users.List(ctx, access.Operator(), app, appuser.Search(appuser.Filter{Status: status}, q), page, perPage)
				if err != nil {
					return nil, err
				}
				out := make([]httpapi.User, 0, len(p.Users))
				for _, u := range p.Users {
					out = append(out, httpapi.UserJSON(app, u))
				}
				return map[string]any{"users": out, "total_count": p.Total, "total_pages": p.TotalPages,
					"current_page": p.Page, "per_page": p.PerPage}, nil
			})
		},
	}
	list.Flags().StringVar(&q, "q", "", "only users whose e-mail address or phone number starts with this text")
	list.Flags().StringVar(&status, "status", "", "only users of this status: active, pending, inactive or imported")
	list.Flags().IntVar(&page, "page", 1, "page number, from 1")
	list.Flags().IntVar(&perPage, "per-page", appuser.DefaultPerPage, fmt.Sprintf("users per page, at most %d", appuser.MaxPerPage))

	var identifier, meta string
	create := &cobra.Command{
		Use: "create", Short: "Create an active user", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "identifier"); err != nil {
				return err
			}
			m, err := metaFlag(meta)
			if err != nil {
				return err
			}
			return withApp(cmd, func(ctx context.Context, sys *server.Server, app tenant.App) (any, error) {
				u, metaErrs, err := sys.Users.Create(ctx, access.Operator(), app, appuser.CreateInput{Identifier: identifier, Meta: m})
				if err != nil {
					return nil, err
				}
				return map[string]any{"user": httpapi.UserJSON(app, u), "user_meta_errors": metaErrs}, nil
			})
		},
	}
	create.Flags().StringVar(&identifier, "identifier", "", "e-mail address or international phone number (required)")
	create.Flags().StringVar(&meta, "meta", "", `metadata as a JSON object, checked against the app's schema, e.g. '{"first_name":"Ann"}'`)

	get := &cobra.Command{
		Use: "get USER", Short: "Show a user, by id, e-mail address or phone number", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return withApp(cmd, func(ctx context.Context, sys *server.Server, app tenant.App) (any, error) {
				u, err := findUser(ctx, sys, app, a[0])
				if err != nil {
					return nil, err
				}
				return map[string]any{"user": httpapi.UserJSON(app, u)}, nil
			})
		},
	}

	var newStatus string
	update := &cobra.Command{
		Use: "update USER", Short: "Change a user's metadata or status", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if !cmd.Flags().Changed("meta") && !cmd.Flags().Changed("status") {
				return usageError(errors.New("users update needs --meta or --status"))
			}
			var m map[string]any
			if cmd.Flags().Changed("meta") {
				var err error
				if m, err = metaFlag(meta); err != nil {
					return err
				}
				if m == nil {
					m = map[string]any{}
				}
			}
			return withApp(cmd, func(ctx context.Context, sys *server.Server, app tenant.App) (any, error) {
				u, err := findUser(ctx, sys, app, a[0])
				if err != nil {
					return nil, err
				}
				if m != nil {
					if u, err = sys.Users.Update(ctx, access.Operator(), app, u.ID, appuser.UpdateInput{Meta: m}); err != nil {
						return nil, err
					}
				}
				if cmd.Flags().Changed("status") {
					if u, err = sys.Users.SetStatus(ctx, access.Operator(), app, u.ID, newStatus); err != nil {
						return nil, err
					}
				}
				return map[string]any{"user": httpapi.UserJSON(app, u)}, nil
			})
		},
	}
	update.Flags().StringVar(&meta, "meta", "", "metadata to merge, as a JSON object; a key set to null is removed")
	update.Flags().StringVar(&newStatus, "status", "", "active, inactive (ends the user's sessions), pending or imported")

	del := &cobra.Command{
		Use: "delete USER", Short: "Delete a user", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return withApp(cmd, func(ctx context.Context, sys *server.Server, app tenant.App) (any, error) {
				u, err := findUser(ctx, sys, app, a[0])
				if err != nil {
					return nil, err
				}
				if err := sys.Users.Delete(ctx, access.Operator(), app, u.ID); err != nil {
					return nil, err
				}
				return map[string]any{"id": u.ID, "deleted": true}, nil
			})
		},
	}
	cmd := group(&cobra.Command{Use: "users", Short: "Manage the users of an app"}, list, create, get, update, del)
	cmd.PersistentFlags().StringVar(&appID, "app", "", "app id (required)")
	return cmd
}

// findUser reads a user of app by id, or else by e-mail address or phone
// number (written as sign-in reads them).
func findUser(ctx context.Context, sys *server.Server, app tenant.App, ref string) (appuser.User, error) {
	if _, err := uuid.Parse(ref); err == nil {
		return sys.Users.Get(ctx, access.Operator(), app, ref)
	}
	if _, err := appuser.ParseIdentifier(ref); err != nil {
		return appuser.User{}, usageError(fmt.Errorf("%q is neither a user id nor an e-mail address or phone number", ref))
	}
	u, err := sys.Users.Lookup(ctx, app, ref)
	if err != nil {
		return appuser.User{}, err
	}
	if u == nil {
		return appuser.User{}, appuser.ErrUserNotFound
	}
	return *u, nil
}

// metaFlag parses --meta: a JSON object, or nothing.
func metaFlag(raw string) (map[string]any, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return nil, usageError(errors.New(`--meta must be a JSON object, e.g. '{"first_name":"Ann"}'`))
	}
	return m, nil
}

// membersCommand manages the members of a workspace, as the API does
// (tenant: the same checks, and never the last owner removed).
func membersCommand(e *env) *cobra.Command {
	var workspaceID string
	// withWorkspace runs fn once --workspace names a workspace that exists.
	withWorkspace := func(cmd *cobra.Command, fn func(ctx context.Context, sys *server.Server, ws tenant.Workspace) (any, error)) error {
		if err := required(cmd, "workspace"); err != nil {
			return err
		}
		return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
			v, err := sys.Tenants.GetWorkspace(ctx, access.Operator(), workspaceID)
			if err != nil {
				return nil, err
			}
			return fn(ctx, sys, v.Workspace)
		})
	}
	list := &cobra.Command{
		Use: "list", Short: "List a workspace's members", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withWorkspace(cmd, func(ctx context.Context, sys *server.Server, ws tenant.Workspace) (any, error) {
				ms, err := sys.Tenants.ListMembers(ctx, access.Operator(), ws.ID)
				if err != nil {
					return nil, err
				}
				out := make([]httpapi.Member, 0, len(ms))
				for _, m := range ms {
					out = append(out, httpapi.MemberJSON(m))
				}
				return map[string]any{"members": out}, nil
			})
		},
	}
	var email, name, role string
	add := &cobra.Command{
		Use: "add", Short: "Add a member", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "email"); err != nil {
				return err
			}
			return withWorkspace(cmd, func(ctx context.Context, sys *server.Server, ws tenant.Workspace) (any, error) {
				m, err := sys.Tenants.AddMember(ctx, access.Operator(), ws.ID, email, name, role)
				if err != nil {
					return nil, err
				}
				return map[string]any{"member": httpapi.MemberJSON(m)}, nil
			})
		},
	}
	add.Flags().StringVar(&email, "email", "", "the member's e-mail address (required)")
	add.Flags().StringVar(&name, "name", "", "the member's name")
	add.Flags().StringVar(&role, "role", access.RoleMember, "owner, admin or member")
	remove := &cobra.Command{
		Use: "remove MEMBER", Short: "Remove a member (by id or e-mail address), revoking their workspace secrets", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return withWorkspace(cmd, func(ctx context.Context, sys *server.Server, ws tenant.Workspace) (any, error) {
				ms, err := sys.Tenants.ListMembers(ctx, access.Operator(), ws.ID)
				if err != nil {
					return nil, err
				}
				id := a[0]
				for _, m := range ms {
					if strings.EqualFold(m.Email, a[0]) {
						id = m.ID
					}
				}
				if err := sys.Tenants.RemoveMember(ctx, access.Operator(), ws.ID, id); err != nil {
					return nil, err
				}
				return map[string]any{"id": id, "removed": true}, nil
			})
		},
	}
	cmd := group(&cobra.Command{Use: "members", Short: "Manage the members of a workspace"}, list, add, remove)
	cmd.PersistentFlags().StringVar(&workspaceID, "workspace", "", "workspace id (required)")
	return cmd
}

func keysCommand(e *env) *cobra.Command {
	var alg string
	rotate := &cobra.Command{
		Use: "rotate", Short: "Start signing with new keys; the old ones stay published until their tokens expire", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
				keys, err := sys.Tenants.RotateSigningKeys(ctx, access.Operator(), alg)
				if err != nil {
					return nil, err
				}
				out := make([]map[string]any, 0, len(keys))
				for _, k := range keys {
					out = append(out, keyJSON(k))
				}
				return map[string]any{"keys": out}, nil
			})
		},
	}
	rotate.Flags().StringVar(&alg, "alg", "", "rotate only this algorithm's key (ES256, RS256, EdDSA); default: every algorithm in use")
	list := &cobra.Command{
		Use: "list", Short: "List signing keys (public information only)", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
				keys, err := sys.Tenants.ListSigningKeys(ctx, access.Operator())
				if err != nil {
					return nil, err
				}
				out := make([]map[string]any, 0, len(keys))
				for _, k := range keys {
					out = append(out, keyJSON(k))
				}
				return map[string]any{"keys": out}, nil
			})
		},
	}
	return group(&cobra.Command{Use: "keys", Short: "Manage token signing keys"}, rotate, list)
}

// The JSON the commands print where the API has no shape of its own (secrets,
// signing keys, migrations); the field names are documented in docs/cli.md.

func secretJSON(s tenant.APISecret) map[string]any {
	out := map[string]any{"id": s.ID, "name": s.Name, "created_at": s.CreatedAt, "revoked_at": s.RevokedAt}
	if s.AppID != "" {
		out["app_id"] = s.AppID
	} else {
		out["workspace_id"], out["member_id"] = s.WorkspaceID, s.MemberID
	}
	return out
}

func keyJSON(k tenant.SigningKey) map[string]any {
	out := map[string]any{"kid": k.ID, "alg": k.Alg, "status": k.Status, "published": k.Published, "created_at": k.CreatedAt}
	if k.RetiredAt != nil {
		out["retired_at"] = k.RetiredAt
	}
	if k.PublishUntil != nil {
		out["publish_until"] = k.PublishUntil
	}
	return out
}

func migrationsJSON(st []server.MigrationState) []map[string]any {
	out := make([]map[string]any, 0, len(st))
	for _, m := range st {
		row := map[string]any{"set": m.Set, "version": m.Version, "name": m.Name, "applied": m.Applied}
		if !m.AppliedAt.IsZero() {
			row["applied_at"] = m.AppliedAt.Format(time.RFC3339Nano)
		}
		out = append(out, row)
	}
	return out
}
