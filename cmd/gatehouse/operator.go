package main

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/server"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// The operator commands build the system as serve does (server.New), on a
// schema that must be current, and act as the operator: the one principal
// with every right, since whoever runs them holds the server's settings and
// master key. They print JSON.

// withSystem runs fn with the assembled system.
func (e *env) withSystem(cmd *cobra.Command, fn func(ctx context.Context, sys *server.Server) error) error {
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
	return fn(ctx, sys)
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
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) error {
				nw, err := sys.Tenants.CreateWorkspace(ctx, access.Operator(), in)
				if err != nil {
					return err
				}
				return printJSON(e.stdout, map[string]any{"workspace": workspaceJSON(nw.Workspace), "owner": memberJSON(nw.Owner)})
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
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) error {
				views, err := sys.Tenants.ListWorkspaces(ctx, access.Operator())
				if err != nil {
					return err
				}
				out := make([]map[string]any, 0, len(views))
				for _, v := range views {
					out = append(out, workspaceJSON(v.Workspace))
				}
				return printJSON(e.stdout, map[string]any{"workspaces": out})
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
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) error {
				s := tenant.AppSettings{Name: &name, Origin: &origin}
				if loginURL != "" {
					s.LoginURL = &loginURL
				}
				app, err := sys.Tenants.CreateApp(ctx, access.Operator(), workspaceID, s)
				if err != nil {
					return err
				}
				return printJSON(e.stdout, map[string]any{"app": appJSON(app)})
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
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) error {
				apps, err := sys.Tenants.ListApps(ctx, access.Operator(), listWorkspace)
				if err != nil {
					return err
				}
				out := make([]map[string]any, 0, len(apps))
				for _, a := range apps {
					out = append(out, appJSON(a))
				}
				return printJSON(e.stdout, map[string]any{"apps": out})
			})
		},
	}
	list.Flags().StringVar(&listWorkspace, "workspace", "", "only this workspace's apps")
	return group(&cobra.Command{Use: "apps", Short: "Manage apps"}, create, list)
}

func secretsCommand(e *env) *cobra.Command {
	var appID, workspaceID, member, name string
	create := &cobra.Command{
		Use: "create", Short: "Issue an API secret for an app (--app) or a workspace (--workspace)", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (appID == "") == (workspaceID == "") {
				return usageError(errors.New("secrets create needs exactly one of --app ID or --workspace ID"))
			}
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) error {
				var tok string
				var rec tenant.APISecret
				var err error
				if appID != "" {
					tok, rec, err = sys.Tenants.CreateAppSecret(ctx, access.Operator(), appID, name)
				} else {
					tok, rec, err = sys.Tenants.CreateWorkspaceSecret(ctx, access.Operator(), workspaceID, member, name)
				}
				if err != nil {
					return err
				}
				out := secretJSON(rec)
				out["api_secret"] = tok
				return printJSON(e.stdout, out)
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
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) error {
				recs, err := sys.Tenants.ListSecrets(ctx, access.Operator(), listApp, listWorkspace)
				if err != nil {
					return err
				}
				out := make([]map[string]any, 0, len(recs))
				for _, r := range recs {
					out = append(out, secretJSON(r))
				}
				return printJSON(e.stdout, map[string]any{"secrets": out})
			})
		},
	}
	list.Flags().StringVar(&listApp, "app", "", "app id")
	list.Flags().StringVar(&listWorkspace, "workspace", "", "workspace id")
	revoke := &cobra.Command{
		Use: "revoke ID", Short: "Revoke an API secret; it fails on its next use", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) error {
				if err := sys.Tenants.RevokeSecret(ctx, access.Operator(), a[0]); err != nil {
					return err
				}
				return printJSON(e.stdout, map[string]any{"id": a[0], "revoked": true})
			})
		},
	}
	return group(&cobra.Command{Use: "secrets", Short: "Manage API secrets"}, create, list, revoke)
}

func keysCommand(e *env) *cobra.Command {
	var alg string
	rotate := &cobra.Command{
		Use: "rotate", Short: "Start signing with new keys; the old ones stay published until their tokens expire", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) error {
				keys, err := sys.Tenants.RotateSigningKeys(ctx, access.Operator(), alg)
				if err != nil {
					return err
				}
				out := make([]map[string]any, 0, len(keys))
				for _, k := range keys {
					out = append(out, keyJSON(k))
				}
				return printJSON(e.stdout, map[string]any{"keys": out})
			})
		},
	}
	rotate.Flags().StringVar(&alg, "alg", "", "rotate only this algorithm's key (ES256, RS256, EdDSA); default: every algorithm in use")
	list := &cobra.Command{
		Use: "list", Short: "List signing keys (public information only)", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) error {
				keys, err := sys.Tenants.ListSigningKeys(ctx, access.Operator())
				if err != nil {
					return err
				}
				out := make([]map[string]any, 0, len(keys))
				for _, k := range keys {
					out = append(out, keyJSON(k))
				}
				return printJSON(e.stdout, map[string]any{"keys": out})
			})
		},
	}
	return group(&cobra.Command{Use: "keys", Short: "Manage token signing keys"}, rotate, list)
}

// The JSON the commands print; the field names are documented in docs/cli.md.

func workspaceJSON(w tenant.Workspace) map[string]any {
	return map[string]any{"id": w.ID, "name": w.Name, "slug": w.Slug, "created_at": w.CreatedAt}
}

func memberJSON(m tenant.Member) map[string]any {
	return map[string]any{"id": m.ID, "email": m.Email, "role": m.Role, "created_at": m.CreatedAt}
}

func appJSON(a tenant.App) map[string]any {
	return map[string]any{"id": a.ID, "workspace_id": a.WorkspaceID, "name": a.Name, "slug": a.Slug, "origin": a.Origin,
		"login_url": a.LoginURL, "created_at": a.CreatedAt}
}

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
