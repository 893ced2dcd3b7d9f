package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// logRecord is one JSON log line, as far as these tests read it.
type logRecord struct {
	Level      string `json:"level"`
	Msg        string `json:"msg"`
	Variable   string `json:"variable"`
	DidYouMean string `json:"did_you_mean"`
}

func firstRecord(t *testing.T, stderr string) logRecord {
	t.Helper()
	line, _, _ := strings.Cut(stderr, "\n")
	var rec logRecord
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatalf("first stderr line %q is not a JSON log record: %v", line, err)
	}
	return rec
}

// TestMisspeltVariableStops is the case, through the real command
// path: outside --dev, GATEHOUSE_DATABSE_URL (misspelt) stops every command
// that loads the settings with status 2, before anything else, naming it and
// the setting it means (a typo must not move production data to SQLite);
// its value never appears. In development mode it is a warning, and the
// server runs on SQLite in the data directory, saying so.
func TestMisspeltVariableStops(t *testing.T) {
	const value = "postgres://gh:hunter2@db.invalid/gh"
	dir := t.TempDir()
	environ := []string{"GATEHOUSE_DATA_DIR=" + dir, "GATEHOUSE_DATABSE_URL=" + value, "GATEHOUSE_MASTER_KEY=" + newMasterKey(t)}
	check := func(t *testing.T, stderr, level string) {
		t.Helper()
		rec := firstRecord(t, stderr)
		if rec.Level != level || rec.Variable != "GATEHOUSE_DATABSE_URL" || rec.DidYouMean != "GATEHOUSE_DATABASE_URL" ||
			!strings.Contains(rec.Msg, "GATEHOUSE_DATABSE_URL") || !strings.Contains(rec.Msg, "did you mean GATEHOUSE_DATABASE_URL?") {
			t.Errorf("first log record = %+v; want the %s naming GATEHOUSE_DATABSE_URL", rec, level)
		}
		if n := strings.Count(stderr, "GATEHOUSE_DATABSE_URL is not a setting"); n != 1 {
			t.Errorf("the record appears %d times; want once:\n%s", n, stderr)
		}
		if strings.Contains(stderr, "hunter2") || strings.Contains(stderr, "db.invalid") {
			t.Errorf("stderr quotes the variable's value:\n%s", stderr)
		}
	}
	for _, args := range [][]string{{"serve", "--addr", "127.0.0.1:0"}, {"migrate", "status"}, {"keys", "list"}} {
		t.Run(args[0], func(t *testing.T) {
			code, stdout, stderr := gatehouse(t, environ, args...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, "gatehouse: not settings: GATEHOUSE_DATABSE_URL (outside --dev") {
				t.Errorf("%s = %d, %q, %q; want 2 naming the variable", args[0], code, stdout, stderr)
			}
			check(t, stderr, "ERROR")
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "gatehouse.db")); !os.IsNotExist(err) {
		t.Errorf("a refused command made the SQLite database (%v)", err)
	}
	t.Run("dev", func(t *testing.T) {
		s := serveInProcess(t, environ, "serve", "--dev", "--addr", "127.0.0.1:0")
		if code := s.stop(); code != 0 {
			t.Errorf("exit = %d; want 0", code)
		}
		check(t, s.logs.String(), "WARN")
		started := s.logs.Lines(`"msg":"gatehouse started"`)
		if len(started) != 1 || !strings.Contains(started[0], `"database":"sqlite"`) {
			t.Errorf("start-up lines %q; want one saying sqlite", started)
		}
	})
}

// TestServiceLinksOnlyWarn: Kubernetes gives a pod behind a Service named
// gatehouse GATEHOUSE_SERVICE_HOST, GATEHOUSE_PORT_8080_TCP and the like;
// outside --dev they warn and serve starts. The health check, which reads
// only http.addr, never refuses over an unknown variable.
func TestServiceLinksOnlyWarn(t *testing.T) {
	dir := t.TempDir()
	environ := []string{"GATEHOUSE_DATA_DIR=" + dir, "GATEHOUSE_MASTER_KEY=" + newMasterKey(t),
		"GATEHOUSE_SERVICE_HOST=10.0.0.7", "GATEHOUSE_PORT=tcp://10.0.0.7:8080", "GATEHOUSE_PORT_8080_TCP_ADDR=10.0.0.7"}
	s := serveInProcess(t, environ, "serve", "--addr", "127.0.0.1:0")
	if code := s.stop(); code != 0 {
		t.Errorf("exit = %d; want 0", code)
	}
	for _, name := range []string{"GATEHOUSE_SERVICE_HOST", "GATEHOUSE_PORT", "GATEHOUSE_PORT_8080_TCP_ADDR"} {
		if len(s.logs.Lines(`"level":"WARN"`, `"variable":"`+name+`"`)) != 1 {
			t.Errorf("no warning naming %s:\n%s", name, s.logs.String())
		}
	}
	// A misspelt setting stops serve, not the health check (nothing listens: 1).
	typo := append([]string{"GATEHOUSE_DATABSE_URL=postgres://x", "GATEHOUSE_HTTP_ADDR=127.0.0.1:1"}, environ...)
	if code, _, stderr := gatehouse(t, typo, "healthcheck"); code != 1 || !strings.Contains(stderr, `"level":"WARN"`) {
		t.Errorf("healthcheck with a misspelt variable = %d, %q; want 1 (not 2) and a warning", code, stderr)
	}
}

// TestDefaultDatabaseSaysWhere: outside --dev without database.url, serve
// warns that it runs on SQLite and names the file by its absolute path, in
// the warning and in the start-up line.
func TestDefaultDatabaseSaysWhere(t *testing.T) {
	dir := t.TempDir()
	environ := []string{"GATEHOUSE_DATA_DIR=" + dir, "GATEHOUSE_MASTER_KEY=" + newMasterKey(t)}
	s := serveInProcess(t, environ, "serve", "--addr", "127.0.0.1:0")
	if code := s.stop(); code != 0 {
		t.Errorf("exit = %d; want 0", code)
	}
	path := filepath.Join(dir, "gatehouse.db")
	if !filepath.IsAbs(path) {
		t.Fatalf("t.TempDir() %q is not absolute", dir)
	}
	if len(s.logs.Lines(`"level":"WARN"`, "database.url is not set: SQLite at "+path+",")) != 1 {
		t.Errorf("no warning naming %s:\n%s", path, s.logs.String())
	}
	if started := s.logs.Lines(`"msg":"gatehouse started"`, `"database_path":"`+path+`"`); len(started) != 1 {
		t.Errorf("the start-up line does not name %s:\n%s", path, s.logs.String())
	}
}

// TestDataDirMasterKey: outside --dev, a master.key left in the data
// directory is refused, by serve and by the operator commands, with one line
// naming the file and the settings; naming it in master_key_file (or
// passing --dev) keeps using it.
func TestDataDirMasterKey(t *testing.T) {
	dir := t.TempDir()
	key := newMasterKey(t)
	path := filepath.Join(dir, "master.key")
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := []string{"GATEHOUSE_DATA_DIR=" + dir}
	for _, args := range [][]string{{"serve", "--addr", "127.0.0.1:0"}, {"keys", "list"}} {
		code, stdout, stderr := gatehouse(t, environ, args...)
		if code != 2 || stdout != "" || strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") != 0 {
			t.Errorf("%s = %d, %q, %q; want 2 and one line", args[0], code, stdout, stderr)
		}
		for _, want := range []string{"found " + path, "set master_key_file to " + path, "GATEHOUSE_MASTER_KEY_FILE", "--dev"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: stderr %q does not say %q", args[0], stderr, want)
			}
		}
		if strings.Contains(stderr, key) {
			t.Errorf("%s: stderr quotes the key", args[0])
		}
	}

	runJSON(t, environ, "migrate", "up")
	explicit := runJSON(t, environ, "keys", "list", "--master-key-file", path)
	dev := runJSON(t, environ, "keys", "list", "--dev")
	viaEnv := runJSON(t, append([]string{"GATEHOUSE_MASTER_KEY_FILE=" + path}, environ...), "keys", "list")
	if len(explicit["keys"].([]any)) == 0 || !jsonEqual(explicit, dev) || !jsonEqual(explicit, viaEnv) {
		t.Errorf("keys with master_key_file %v, with --dev %v, with the variable %v; want the same keys", explicit, dev, viaEnv)
	}
	s := serveInProcess(t, environ, "serve", "--addr", "127.0.0.1:0", "--master-key-file", path)
	if code := s.stop(); code != 0 {
		t.Errorf("serve --master-key-file exit = %d; want 0; log:\n%s", code, s.logs.String())
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestStartupSummaryLine: `serve` outside --dev logs one "gatehouse
// started" line saying what it runs on, after one warning per risky
// default, and never the database URL or its password.
func TestStartupSummaryLine(t *testing.T) {
	forEachEngine(t, func(t *testing.T, kind string, dbEnv []string) {
		const password = "summary-pw-7f3a"
		env := []string{"GATEHOUSE_MASTER_KEY=" + newMasterKey(t)}
		var dbURL string
		for _, kv := range dbEnv {
			if v, ok := strings.CutPrefix(kv, "GATEHOUSE_DATABASE_URL="); ok && kind == store.Postgres {
				// A password the server (trust authentication) ignores but the log must not show.
				u, err := url.Parse(v)
				if err != nil {
					t.Fatal(err)
				}
				u.User = url.UserPassword(u.User.Username(), password)
				dbURL = u.String()
				kv = "GATEHOUSE_DATABASE_URL=" + dbURL
			}
			env = append(env, kv)
		}
		s := serveInProcess(t, env, "serve", "--addr", "127.0.0.1:0")
		if code := s.stop(); code != 0 {
			t.Errorf("exit = %d; want 0", code)
		}
		logs := s.logs.String()
		lines := s.logs.Lines(`"msg":"gatehouse started"`)
		if len(lines) != 1 {
			t.Fatalf("start-up lines = %q; want one", lines)
		}
		var got struct {
			Version        string   `json:"version"`
			Addr           string   `json:"addr"`
			Database       string   `json:"database"`
			DatabaseHost   string   `json:"database_host"`
			DatabaseName   string   `json:"database_name"`
			DatabasePath   string   `json:"database_path"`
			MailProvider   string   `json:"mail_provider"`
			SMSProvider    string   `json:"sms_provider"`
			RateLimits     string   `json:"rate_limits"`
			BaseURL        string   `json:"base_url"`
			BaseURLFrom    string   `json:"base_url_from"`
			Issuer         string   `json:"issuer"`
			AccessTokenAlg string   `json:"access_token_alg"`
			SigningAlgs    []string `json:"signing_algs"`
			Dev            *bool    `json:"dev"`
			Metrics        string   `json:"metrics"`
		}
		if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
			t.Fatal(err)
		}

		if got.Version == "" || got.Addr == "" || got.Database != kind || got.MailProvider != "log" || got.SMSProvider != "log" ||
			got.BaseURL != "http://"+got.Addr || got.BaseURLFrom != "http.addr" || got.Issuer != got.BaseURL ||
			got.AccessTokenAlg != "ES256" || !slices.Contains(got.SigningAlgs, "ES256") || got.Dev == nil || *got.Dev || got.Metrics != "off" {
			t.Errorf("start-up line = %s", lines[0])
		}
		switch kind {
		case store.Postgres:
			u, _ := url.Parse(dbURL)
			if got.RateLimits != "database" || got.DatabaseHost != u.Host || got.DatabaseName != strings.TrimPrefix(u.Path, "/") || got.DatabasePath != "" {
				t.Errorf("PostgreSQL start-up line = %s", lines[0])
			}
		default:
			if got.RateLimits != "memory" || !strings.HasSuffix(got.DatabasePath, "gatehouse.db") || got.DatabaseHost != "" {
				t.Errorf("SQLite start-up line = %s", lines[0])
			}
		}
		for _, want := range []string{"mail.provider is not set (log)", "sms.provider is not set (log)", "base_url is not set",
			"metrics.addr is not set: /metrics is not served"} {
			if len(s.logs.Lines(`"level":"WARN"`, want)) != 1 {
				t.Errorf("no warning saying %q:\n%s", want, logs)
			}
		}
		// database.url is set (to SQLite or PostgreSQL), the rate limits
		// fit the engine and private targets are off: no other warning.
		if n := len(s.logs.Lines(`"level":"WARN"`)); n != 4 {
			t.Errorf("%d warnings; want 4:\n%s", n, logs)
		}
		if strings.Contains(logs, password) || (dbURL != "" && strings.Contains(logs, dbURL)) {
			t.Errorf("the log shows the database URL or its password:\n%s", logs)
		}
	})
}
