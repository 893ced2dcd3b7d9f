package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gatehouse-auth/gatehouse/internal/config"
)

// version is this build's version; release builds add the VCS revision.
const version = "0.1.0"

func buildVersion() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
	}
	return v
}

// exitError carries an exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError makes start-up stop with status 2 and a one-line message.
func usageError(err error) error { return &exitError{code: 2, err: err} }

// run is the whole program: it parses args, runs one command and returns the
// exit status. Tests call it directly.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	root := newRootCommand(ctx, environ, stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	} else if strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") ||
		strings.Contains(err.Error(), "flag needs an argument") || strings.Contains(err.Error(), "invalid argument") ||
		strings.Contains(err.Error(), "accepts ") || strings.Contains(err.Error(), "required flag") {
		code = 2
	}
	fmt.Fprintf(stderr, "gatehouse: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	return code
}

// env holds what every command needs from the outside world.
type env struct {
	ctx        context.Context
	environ    []string
	stdout     io.Writer
	stderr     io.Writer
	configFile string
}

func newRootCommand(ctx context.Context, environ []string, stdout, stderr io.Writer) *cobra.Command {
	e := &env{ctx: ctx, environ: environ, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:           "gatehouse",
		Short:         "Self-hosted passwordless authentication and user management",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&e.configFile, "config", "", "path of a YAML configuration file")
	config.AddFlags(root.PersistentFlags())
	root.AddCommand(
		serveCommand(e),
		migrateCommand(e),
		versionCommand(e),
		workspacesCommand(e),
		appsCommand(e),
		secretsCommand(e),
		keysCommand(e),
	)
	return root
}

// load reads the configuration for a command; a bad setting is status 2.
func (e *env) load(cmd *cobra.Command) (config.Config, error) {
	cfg, err := config.Load(cmd.Flags(), e.configFile, e.environ)
	if err != nil {
		return cfg, usageError(err)
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
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(e.stdout, "gatehouse", buildVersion())
			return err
		},
	}
}

// masterKey finds the master key: the setting, the file setting, the data
// directory's master.key, or (dev mode only) a newly generated one.
func masterKey(cfg config.Config) ([]byte, error) {
	if cfg.MasterKey != "" {
		return config.DecodeMasterKey(cfg.MasterKey)
	}
	path := cfg.MasterKeyFile
	if path == "" {
		path = filepath.Join(cfg.DataDir, "master.key")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if !cfg.Dev {
				return nil, usageError(errors.New("invalid setting master_key (GATEHOUSE_MASTER_KEY): no master key; set master_key or master_key_file, or use --dev"))
			}
			return generateMasterKey(path)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageError(fmt.Errorf("invalid setting master_key_file (GATEHOUSE_MASTER_KEY_FILE): %w", err))
	}
	k, err := config.DecodeMasterKey(string(b))
	if err != nil {
		return nil, usageError(fmt.Errorf("invalid setting master_key_file (GATEHOUSE_MASTER_KEY_FILE): %s does not hold a base64 32-byte key", path))
	}
	return k, nil
}
