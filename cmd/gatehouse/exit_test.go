package main

import (
	"strings"
	"testing"
)

// TestUsageExitStatus checks that every kind of wrong command line and every
// bad setting ends with status 2 and one line on stderr that says what is
// wrong, before anything is opened: no database is set up here.
func TestUsageExitStatus(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		environ []string
		want    []string // each must be in the message
		notWant []string // none may be
	}{
		// Commands.
		{"unknown command", []string{"bogus"}, nil, []string{`unknown command "bogus" for "gatehouse"`}, nil},
		{"unknown subcommand", []string{"migrate", "bogus"}, nil, []string{`unknown command "bogus" for "gatehouse migrate"`}, nil},
		{"misspelt subcommand", []string{"workspaces", "creat"}, nil, []string{`unknown command "creat"`, `did you mean "create"`}, nil},
		{"stray argument to a leaf", []string{"version", "extra"}, nil, []string{`"extra"`}, nil},
		{"stray argument to serve", []string{"serve", "extra"}, nil, []string{`"extra"`}, nil},
		{"stray argument to migrate up", []string{"migrate", "up", "extra"}, nil, []string{`"extra"`}, nil},
		{"missing argument", []string{"secrets", "revoke"}, nil, []string{"accepts 1 arg(s), received 0"}, nil},
		{"extra argument", []string{"secrets", "revoke", "a", "b"}, nil, []string{"accepts 1 arg(s), received 2"}, nil},
		// Flags.
		{"unknown flag", []string{"serve", "--nope"}, nil, []string{"unknown flag: --nope"}, nil},
		{"unknown flag before the command", []string{"--nope", "serve"}, nil, []string{"unknown flag: --nope"}, nil},
		{"unknown flag of an operator command", []string{"keys", "list", "--app", "x"}, nil, []string{"unknown flag: --app"}, nil},
		{"flag missing its value", []string{"workspaces", "create", "--name"}, nil, []string{"flag needs an argument: --name"}, nil},
		{"flag value that does not parse", []string{"serve", "--dev=maybe"}, nil, []string{`invalid argument "maybe" for "--dev"`}, nil},
		{"missing required flags", []string{"workspaces", "create"}, nil, []string{"workspaces create needs --name, --owner-email"}, nil},
		{"one required flag missing", []string{"workspaces", "create", "--name", "Acme"}, nil,
			[]string{"workspaces create needs --owner-email"}, []string{"--name"}},
		{"required flags of apps create", []string{"apps", "create", "--workspace", "w"}, nil,
			[]string{"apps create needs --name, --origin"}, []string{"--workspace"}},
		{"secret with no scope", []string{"secrets", "create"}, nil, []string{"exactly one of --app ID or --workspace ID"}, nil},
		{"secret with two scopes", []string{"secrets", "create", "--app", "a", "--workspace", "w"}, nil, []string{"exactly one of --app ID or --workspace ID"}, nil},
		{"secrets list with no scope", []string{"secrets", "list"}, nil, []string{"exactly one of --app ID or --workspace ID"}, nil},
		// Settings.
		{"bad database url flag", []string{"serve", "--database-url", "mysql://x"}, nil, []string{"database.url"}, nil},
		{"bad database url setting, migrate", []string{"migrate", "status"}, []string{"GATEHOUSE_DATABASE_URL=mysql://x"},
			[]string{"invalid setting database.url (GATEHOUSE_DATABASE_URL)"}, nil},
		{"bad database url setting, operator command", []string{"workspaces", "list"}, []string{"GATEHOUSE_DATABASE_URL=mysql://x"},
			[]string{"invalid setting database.url (GATEHOUSE_DATABASE_URL)"}, nil},
		{"bad env setting", []string{"serve"}, []string{"GATEHOUSE_LOG_LEVEL=loud"}, []string{"log.level"}, nil},
		{"bad address", []string{"serve", "--addr", "nonsense"}, nil, []string{"http.addr"}, nil},
		{"bad master key", []string{"keys", "list"}, []string{"GATEHOUSE_MASTER_KEY=hunter2"}, []string{"master_key"}, []string{"hunter2"}},
		{"missing config file", []string{"migrate", "status", "--config", "DIR/nope.yaml"}, nil, []string{"nope.yaml"}, nil},
		{"no master key outside dev", []string{"serve", "--data-dir", "DIR", "--addr", "127.0.0.1:0"}, nil, []string{"master_key", "GATEHOUSE_MASTER_KEY"}, nil},
		{"no master key for an operator command", []string{"workspaces", "list"}, nil, []string{"master_key"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.ReplaceAll(a, "DIR", dir)
			}
			// An empty data directory: no master key, no database.
			environ := append([]string{"GATEHOUSE_DATA_DIR=" + dir}, tt.environ...)
			code, stdout, stderr := gatehouse(t, environ, args...)
			if code != 2 {
				t.Errorf("exit = %d; want 2 (stderr %q)", code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout = %q; want nothing", stdout)
			}
			if !strings.HasPrefix(stderr, "gatehouse: ") || strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") != 0 {
				t.Errorf("stderr = %q; want one line starting gatehouse:", stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr = %q; want it to say %q", stderr, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr = %q; must not say %q", stderr, w)
				}
			}
		})
	}
}

// TestRuntimeExitStatus checks that a command that was used correctly but
// failed ends with status 1 and one line, however its message reads: the
// status comes from the error's type. Messages naming an unknown thing or an
// invalid value are still failures, not usage errors.
func TestRuntimeExitStatus(t *testing.T) {
	forEachEngine(t, func(t *testing.T, kind string, dbEnv []string) {
		env := append([]string{"GATEHOUSE_MASTER_KEY=" + newMasterKey(t)}, dbEnv...)
		runJSON(t, env, "migrate", "up")
		runJSON(t, env, "keys", "list") // the first start makes (and logs) the signing key
		ws := runJSON(t, env, "workspaces", "create", "--name", "Acme", "--owner-email", "owner@acme.test")
		wsID := ws["workspace"].(map[string]any)["id"].(string)
		for _, tt := range []struct {
			name string
			args []string
			want string
		}{
			{"revoke an unknown secret", []string{"secrets", "revoke", "unknown-command-invalid-flag"}, "revoke secret: api secret not found"},
			{"app in an unknown workspace", []string{"apps", "create", "--workspace", "unknown", "--name", "Shop", "--origin", "https://shop.test"}, "workspace not found"},
			{"secret for an unknown app", []string{"secrets", "create", "--app", "unknown"}, "app not found"},
			{"secret for an unknown member", []string{"secrets", "create", "--workspace", wsID, "--member", "nobody@acme.test"}, "create workspace secret"},
			{"invalid owner e-mail", []string{"workspaces", "create", "--name", "X", "--owner-email", "not-an-address"}, "owner_email must be an e-mail address"},
			{"invalid origin", []string{"apps", "create", "--workspace", wsID, "--name", "Shop", "--origin", "ftp://shop.test"}, "origin"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				code, stdout, stderr := gatehouse(t, env, tt.args...)
				if code != 1 {
					t.Errorf("exit = %d; want 1 (stderr %q)", code, stderr)
				}
				if stdout != "" {
					t.Errorf("stdout = %q; want nothing", stdout)
				}
				if !strings.HasPrefix(stderr, "gatehouse: ") || strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") != 0 || !strings.Contains(stderr, tt.want) {
					t.Errorf("stderr = %q; want one line saying %q", stderr, tt.want)
				}
			})
		}
	})
}

// TestVersion: `gatehouse --version` and `gatehouse version` print the same
// line (version, what is known of the build, the Go version), and help
// without a subcommand is not an error.
func TestVersion(t *testing.T) {
	b := readBuildInfo()
	want := "gatehouse " + b.String() + "\n"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if code, stdout, stderr := gatehouse(t, nil, args...); code != 0 || stdout != want || stderr != "" {
			t.Errorf("gatehouse %s = %d, %q, %q; want 0, %q", args[0], code, stdout, stderr, want)
		}
	}
	// A test binary records no module version: the constant is reported.
	if buildVersion() != version || !strings.HasSuffix(want, b.GoVersion+")\n") {
		t.Errorf("buildVersion() = %q, line %q; want %q and the Go version %s", buildVersion(), want, version, b.GoVersion)
	}
	for _, args := range [][]string{nil, {"keys"}, {"migrate"}} {
		if code, stdout, _ := gatehouse(t, nil, args...); code != 0 || !strings.Contains(stdout, "Usage:") {
			t.Errorf("gatehouse %v = %d, %q; want 0 and the help", args, code, stdout)
		}
	}
}
