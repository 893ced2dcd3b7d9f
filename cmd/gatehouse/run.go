package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gatehouse-auth/gatehouse/internal/config"
)

// version is the release this source tree is (CHANGELOG.md's newest
// release); a build reports it when Go recorded no module version.
const version = "0.1.0"

// buildVersion is the version alone (the API description, the start-up log).
func buildVersion() string { return readBuildInfo().Version }

// exitError carries an exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError makes the command stop with status 2 and a one-line message:
// the command line or a setting is wrong, not the system.
func usageError(err error) error { return &exitError{code: 2, err: err} }

// run is the whole program: it parses args, runs one command and returns the
// exit status. Tests call it directly.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	root := newRootCommand(environ, stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	code := 1
	var ee *exitError
	var bad *config.SettingError
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case errors.As(err, &bad):
		code = 2
	}
	fmt.Fprintf(stderr, "gatehouse: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	return code
}

// env holds what every command needs from the outside world.
type env struct {
	environ    []string
	stdout     io.Writer
	stderr     io.Writer
	configFile string
}

func newRootCommand(environ []string, stdout, stderr io.Writer) *cobra.Command {
	e := &env{environ: environ, stdout: stdout, stderr: stderr}
	root := group(&cobra.Command{Use: "gatehouse", Short: "Self-hosted passwordless authentication and user management",
		Version: readBuildInfo().String(), SilenceUsage: true, SilenceErrors: true},
		serveCommand(e), migrateCommand(e), versionCommand(e), workspacesCommand(e), appsCommand(e),
		secretsCommand(e), keysCommand(e), usersCommand(e), membersCommand(e), consoleCommand(e))
	root.AddCommand(healthcheckCommand(e))
	root.SetVersionTemplate("gatehouse {{.Version}}\n")
	// Every wrong flag (unknown, missing its value, not parsing) is a usage error.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	root.PersistentFlags().StringVar(&e.configFile, "config", "", "path of a YAML configuration file")
	config.AddFlags(root.PersistentFlags())
	return root
}

// group makes cmd a command of subcommands: run without one it shows its
// help; run with an unknown one it is a usage error.
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf(" (did you mean %q?)", s[0])
		}
		return usageError(errors.New(msg))
	}
	cmd.AddCommand(subs...)
	return cmd
}

// args wraps a positional-argument rule so that breaking it is a usage error.
func args(rule cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := rule(cmd, a); err != nil {
			return usageError(err)
		}
		return nil
	}
}

// required checks that each named flag was given; a missing one is a usage error.
func required(cmd *cobra.Command, names ...string) error {
	var missing []string
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return usageError(fmt.Errorf("%s needs %s", cmd.CommandPath(), strings.Join(missing, ", ")))
	}
	return nil
}

// load reads the configuration for a command; a bad setting is status 2.
// First of all it reports each GATEHOUSE_* variable that names no setting,
// even when the settings are then refused: a misspelt variable may be why.
// In development mode that is a warning; otherwise the command stops (status
// 2), because a misspelt GATEHOUSE_DATABASE_URL would put a production
// server's data somewhere else without a word. Variables shaped like the
// ones Kubernetes makes for a Service named gatehouse…
// (GATEHOUSE_SERVICE_HOST, GATEHOUSE_PORT_8080_TCP, …) only warn.
func (e *env) load(cmd *cobra.Command) (config.Config, error) { return e.loadConfig(cmd, true) }

// loadConfig is load; strict false only warns about unknown variables, for
// the container's health check, which reads nothing but http.addr and must
// not call a running server unhealthy over a variable serve accepted.
func (e *env) loadConfig(cmd *cobra.Command, strict bool) (config.Config, error) {
	cfg, err := config.Load(cmd.Flags(), e.configFile, e.environ)
	unknown := config.UnknownVariables(e.environ)
	strict = strict && err == nil && !cfg.Dev
	var refused []string
	if len(unknown) > 0 {
		// Without valid settings (err != nil) cfg is zero: JSON at info.
		log := newLogger(cfg, e.stderr)
		for _, u := range unknown {
			attrs := []any{"variable", u.Name}
			if u.Suggestion != "" {
				attrs = append(attrs, "did_you_mean", u.Suggestion)
			}
			if strict && !u.ServiceLink() {
				log.Error(u.Refusal(), attrs...)
				refused = append(refused, u.Name)
			} else {
				log.Warn(u.Message(), attrs...)
			}
		}
	}
	if err != nil {
		return cfg, usageError(err)
	}
	if len(refused) > 0 {
		return cfg, usageError(fmt.Errorf("not settings: %s (outside --dev an unknown GATEHOUSE_ variable stops the command; rename or unset it)",
			strings.Join(refused, ", ")))
	}
	return cfg, nil
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func versionCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, commit date and Go version",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(e.stdout, "gatehouse", readBuildInfo())
			return err
		},
	}
}
