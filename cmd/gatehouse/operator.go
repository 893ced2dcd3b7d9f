package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// withSystem runs fn with a wired system whose schema is current.
func (e *env) withSystem(cmd *cobra.Command, fn func(ctx context.Context, sys *system) error) error {
	cfg, err := e.load(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	sys, err := build(ctx, cfg, newLogger(cfg, e.stderr))
	if err != nil {
		return err
	}
	defer sys.db.Close()
	if err := sys.ready(ctx); err != nil {
		return err
	}
	return fn(ctx, sys)
}

func migrateCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "migrate", Short: "Apply or inspect database migrations"}
	up := &cobra.Command{
		Use: "up", Short: "Apply every pending migration", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := e.load(cmd)
			if err != nil {
				return err
			}
			db, err := openStore(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer db.Close()
			if err := db.Migrate(cmd.Context()); err != nil {
				return err
			}
			st, err := db.MigrationStatus(cmd.Context())
			if err != nil {
				return err
			}
			return printJSON(e.stdout, map[string]any{"migrations": st})
		},
	}
	status := &cobra.Command{
		Use: "status", Short: "List migrations and whether each is applied", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := e.load(cmd)
			if err != nil {
				return err
			}
			db, err := openStore(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer db.Close()
			st, err := db.MigrationStatus(cmd.Context())
			if err != nil {
				return err
			}
			return printJSON(e.stdout, map[string]any{"migrations": st})
		},
	}
	cmd.AddCommand(up, status)
	return cmd
}

func workspacesCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "workspaces", Short: "Manage workspaces"}
	var in tenant.WorkspaceInput
	create := &cobra.Command{
		Use: "create", Short: "Create a workspace and its first owner", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *system) error {
				ws, owner, err := sys.tenants.CreateWorkspace(ctx, in)
				if err != nil {
					return err
				}
				return printJSON(e.stdout, map[string]any{"workspace": workspaceJSON(ws), "owner": memberJSON(owner)})
			})
		},
	}
	create.Flags().StringVar(&in.Name, "name", "", "workspace name (required)")
	create.Flags().StringVar(&in.Slug, "slug", "", "URL-friendly id (default: from the name)")
	create.Flags().StringVar(&in.OwnerEmail, "owner-email", "", "e-mail address of the first owner (required)")
	create.Flags().StringVar(&in.OwnerName, "owner-name", "", "name of the first owner")
	_ = create.MarkFlagRequired("name")
	_ = create.MarkFlagRequired("owner-email")
	list := &cobra.Command{
		Use: "list", Short: "List workspaces", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *system) error {
				wss, err := sys.tenants.ListWorkspaces(ctx)
				if err != nil {
					return err
				}
				out := make([]map[string]any, 0, len(wss))
				for _, w := range wss {
					out = append(out, workspaceJSON(w))
				}
				return printJSON(e.stdout, map[string]any{"workspaces": out})
			})
		},
	}
	cmd.AddCommand(create, list)
	return cmd
}

func appsCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "apps", Short: "Manage apps"}
	var workspaceID, name, origin, loginURL string
	create := &cobra.Command{
		Use: "create", Short: "Create an app in a workspace", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *system) error {
				s := tenant.AppSettings{Name: &name, Origin: &origin}
				if loginURL != "" {
					s.LoginURL = &loginURL
				}
				app, err := sys.tenants.CreateApp(ctx, workspaceID, s)
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
	create.Flags().StringVar(&loginURL, "login-url", "", "where magic and invitation links land (default: the origin)")
	for _, f := range []string{"workspace", "name", "origin"} {
		_ = create.MarkFlagRequired(f)
	}
	var listWorkspace string
	list := &cobra.Command{
		Use: "list", Short: "List apps", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *system) error {
				apps, err := sys.tenants.ListApps(ctx, listWorkspace)
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
	cmd.AddCommand(create, list)
	return cmd
}

func secretsCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "secrets", Short: "Manage API secrets"}
	var appID, workspaceID, member, name string
	create := &cobra.Command{
		Use: "create", Short: "Issue an API secret for an app (--app) or a workspace (--workspace)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (appID == "") == (workspaceID == "") {
				return usageError(errors.New("secrets create needs exactly one of --app ID or --workspace ID"))
			}
			return e.withSystem(cmd, func(ctx context.Context, sys *system) error {
				var tok string
				var rec tenant.APISecret
				var err error
				if appID != "" {
					tok, rec, err = sys.tenants.CreateAppSecret(ctx, appID, name)
				} else {
					tok, rec, err = sys.tenants.CreateWorkspaceSecret(ctx, workspaceID, member, name)
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
		Use: "list", Short: "List the secrets of an app or workspace (never the secrets themselves)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (listApp == "") == (listWorkspace == "") {
				return usageError(errors.New("secrets list needs exactly one of --app ID or --workspace ID"))
			}
			return e.withSystem(cmd, func(ctx context.Context, sys *system) error {
				recs, err := sys.tenants.ListSecrets(ctx, listApp, listWorkspace)
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
		Use: "revoke ID", Short: "Revoke an API secret; it fails on its next use", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *system) error {
				if err := sys.tenants.RevokeSecret(ctx, args[0]); err != nil {
					return err
				}
				return printJSON(e.stdout, map[string]any{"id": args[0], "revoked": true})
			})
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func keysCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "Manage token signing keys"}
	rotate := &cobra.Command{
		Use: "rotate", Short: "Start signing with a new key; the old one stays published until its tokens expire", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *system) error {
				k, err := sys.tenants.RotateSigningKey(ctx)
				if err != nil {
					return err
				}
				return printJSON(e.stdout, map[string]any{"key": k})
			})
		},
	}
	list := &cobra.Command{
		Use: "list", Short: "List signing keys (public information only)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withSystem(cmd, func(ctx context.Context, sys *system) error {
				keys, err := sys.tenants.ListSigningKeys(ctx)
				if err != nil {
					return err
				}
				return printJSON(e.stdout, map[string]any{"keys": keys})
			})
		},
	}
	cmd.AddCommand(rotate, list)
	return cmd
}

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
