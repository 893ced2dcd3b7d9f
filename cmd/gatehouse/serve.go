package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/gctune"
	"github.com/gatehouse-auth/gatehouse/internal/server"
)

func serveCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP server (migrating the database first)",
		Long: "Run the HTTP server. The database schema is migrated first; replicas starting together on\n" +
			"PostgreSQL take turns. With --dev, everything lives in --data-dir (SQLite, master key) and a\n" +
			"Demo app with an API secret is created and printed on first start.\n\n" + settingsHelp(),
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := e.load(cmd)
			if err != nil {
				return err
			}
			return serve(cmd.Context(), cfg, e)
		},
	}
}

// settingsHelp lists every setting, including those without a flag.
func settingsHelp() string {
	var b strings.Builder
	b.WriteString("Settings (defaults, then --config YAML file, then environment, then flags):\n")
	for _, s := range config.Settings() {
		flag := ""
		if s.Flag != "" {
			flag = " --" + s.Flag
		}
		def := ""
		if s.Default != "" && !s.Secret {
			def = " [default " + s.Default + "]"
		}
		fmt.Fprintf(&b, "  %-28s %s%s%s\n      %s\n", s.Key, s.Env, flag, def, s.Help)
	}
	return b.String()
}

func serve(ctx context.Context, cfg config.Config, e *env) error {
	log := newLogger(cfg, e.stderr)
	defer gctune.Start(uint64(cfg.Runtime.GCHeadroomMB) << 20).Stop()
	// Bind first: with --addr :0 the real port decides the base URL.
	ls, cfg, err := server.Listen(cfg)
	if err != nil {
		return err
	}
	defer ls.Close()
	bi := readBuildInfo()
	sys, err := server.New(ctx, cfg, server.Options{Log: log, Version: bi.Version, Commit: bi.Commit, BuildDate: bi.Date})
	if err != nil {
		return err
	}
	defer sys.Close()
	if cfg.Dev {
		b, err := sys.DevBootstrap(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "\nGatehouse is running in development mode.\n\n"+
			"  Base URL:    %s\n  App id:      %s\n  API secret:  %s\n  Workspace:   %s\n\n"+
			"  Saved to %s. Codes and links: %s/dev/outbox?to=ADDRESS\n  API docs:    %s/v1/docs/\n"+
			"  Console:     %s/console/ (sign in: gatehouse console link --dev --email %s)\n\n"+
			"  Access tokens are signed with %s.%s\n\n",
			b.BaseURL, b.AppID, b.APISecret, b.WorkspaceID, server.BootstrapPath(cfg.DataDir), b.BaseURL, b.BaseURL,
			b.BaseURL, server.DevOwnerEmail, b.AccessTokenAlg, algAdvice(b))
	}
	return sys.Serve(ctx, ls)
}

// algAdvice tells a developer on the default algorithm how to switch when
// their backend verifies tokens with Scute's server SDKs, which accept only RS256.
func algAdvice(b server.Bootstrap) string {
	if b.AccessTokenAlg == "RS256" {
		return " Scute's Python and Ruby server SDKs verify them as they are."
	}
	return " It is the fastest. If your backend verifies tokens with Scute's Python or Ruby\n" +
		"  server SDK (they accept only RS256), switch the app to RS256:\n" +
		"    curl -X PATCH " + b.BaseURL + "/v1/apps/" + b.AppID + " -H 'Authorization: Bearer <API secret>' \\\n" +
		"      -H 'Content-Type: application/json' -d '{\"app\":{\"access_token_alg\":\"RS256\"}}'"
}
