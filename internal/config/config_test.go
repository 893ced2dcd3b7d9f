package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// writeFile writes a config file into a fresh temporary directory.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gatehouse.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// yamlFor renders dotted keys as nested YAML, one nesting level per dot.
func yamlFor(values map[string]string) string {
	groups := map[string][]string{}
	var b strings.Builder
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parent, child, ok := strings.Cut(k, ".")
		if !ok {
			fmt.Fprintf(&b, "%s: %s\n", k, values[k])
			continue
		}
		groups[parent] = append(groups[parent], fmt.Sprintf("  %s: %s\n", child, values[k]))
	}
	parents := make([]string, 0, len(groups))
	for p := range groups {
		parents = append(parents, p)
	}
	sort.Strings(parents)
	for _, p := range parents {
		b.WriteString(p + ":\n")
		for _, line := range groups[p] {
			b.WriteString(line)
		}
	}
	return b.String()
}

// parsedFlags returns a flag set from AddFlags after parsing args.
func parsedFlags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse(%q) = %v", args, err)
	}
	return fs
}

func defaultConfig() Config {
	c := Config{
		Dev:     false,
		DataDir: "./gatehouse-data",
		HTTP: HTTP{
			Addr:              "127.0.0.1:8080",
			ShutdownTimeout:   15 * time.Second,
			ReadHeaderTimeout: 10 * time.Second,
			RequestTimeout:    15 * time.Second,
		},
		BaseURL: "http://127.0.0.1:8080",
		Database: Database{MaxConns: 16, StatementTimeout: 10 * time.Second, LockTimeout: 5 * time.Second,
			IdleInTransactionTimeout: 30 * time.Second},
		Log:      Log{Level: "info", Format: "json"},
		Runtime:  Runtime{GCHeadroomMB: 64},
		Mail:     Mail{From: "Gatehouse <no-reply@localhost>"},
		SMTP:     SMTP{Port: 587, TLS: "starttls-required", Timeout: 10 * time.Second},
		Postmark: Postmark{MessageStream: "outbound"},
		Tokens:   Tokens{Issuer: "http://127.0.0.1:8080", SessionLifetime: 720 * time.Hour, RefreshGrace: 10 * time.Second, AccessTokenAlg: "ES256"},
		Webhooks: Webhooks{RetryBase: 5 * time.Second, Workers: 32, RescueAfter: 30 * time.Second, MaxEndpointsPerApp: 20},
		Messages: Messages{MaxAttempts: 10, RetryBase: 2 * time.Second, RetryMax: time.Minute, Workers: 16, PollInterval: 2 * time.Second},
		RateLimit: RateLimit{Backend: "auto", SendPerIdentifier: "5/10m", SendPerIP: "30/10m", VerifyPerIP: "60/10m", LookupPerIP: "120/10m", ChallengePerIP: "60/10m", ChallengePerUser: "10/10m", UnknownPerIP: "20/1h",
			ShortLinkPerIP: "30/10m", M2MFailuresPerClient: "10/10m", M2MFailuresPerIP: "30/10m",
			CodeFailuresPerHour: 10, CodeLockAfter: 100, PollInterval: 2 * time.Second, SendMinTime: 10 * time.Millisecond},
		SMSGuard: SMSGuard{AllowedCountries: []string{"US", "CA", "GB", "IE", "DE", "FR", "ES", "IT", "NL", "BE", "AT", "PT", "SE", "DK", "FI", "NO", "PL", "AU", "NZ"},
			PerNumberBurst: 3, PerNumberWindow: 10 * time.Minute, PerNumberMaxWait: 32 * time.Minute, PerNumberQuiet: time.Hour,
			DailyCap: 1000, PrefixHourlyCap: 30},
		TestIdentities: TestIdentities{EmailSuffix: "+scute_test", PhonePattern: `^\+1\d{3}55501\d{2}$`, Code: "424242"},
		M2M:            M2M{TokenTTL: 10 * time.Minute},
	}
	c.BaseURLFrom = "http.addr"
	return c
}

func TestLoadDefaults(t *testing.T) {
	got, err := Load(nil, "", nil)
	if err != nil {
		t.Fatalf("Load(nil, \"\", nil) error = %v", err)
	}
	if want := defaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("Load(nil, \"\", nil) = %+v; want %+v", got, want)
	}
}

func TestLoadPrecedence(t *testing.T) {
	type layers struct{ def, file, env, flag string }
	keys := []struct {
		key  string
		vals layers
		get  func(Config) string
	}{
		{"http.addr", layers{"127.0.0.1:8080", "0.0.0.0:1001", "0.0.0.0:1002", "0.0.0.0:1003"},
			func(c Config) string { return c.HTTP.Addr }},
		{"log.level", layers{"info", "debug", "warn", "error"},
			func(c Config) string { return c.Log.Level }},
		{"database.url", layers{"", "postgres://file/db", "postgres://env/db", "sqlite:flag.db"},
			func(c Config) string { return c.Database.URL }},
		{"data_dir", layers{"./gatehouse-data", "/file", "/env", "/flag"},
			func(c Config) string { return c.DataDir }},
		{"dev", layers{"false", "true", "false", "true"},
			func(c Config) string { return fmt.Sprint(c.Dev) }},
		// Settings without a flag: the flag layer is skipped.
		{"database.max_conns", layers{"16", "20", "30", ""},
			func(c Config) string { return fmt.Sprint(c.Database.MaxConns) }},
		{"http.shutdown_timeout", layers{"15s", "1m0s", "2m0s", ""},
			func(c Config) string { return c.HTTP.ShutdownTimeout.String() }},
	}
	settings := map[string]Setting{}
	for _, s := range Settings() {
		settings[s.Key] = s
	}
	for _, k := range keys {
		s, ok := settings[k.key]
		if !ok {
			t.Fatalf("no setting %q", k.key)
		}
		for mask := range 8 {
			useFile, useEnv, useFlag := mask&1 != 0, mask&2 != 0, mask&4 != 0
			if useFlag && s.Flag == "" {
				continue
			}
			name := fmt.Sprintf("%s/file=%v,env=%v,flag=%v", k.key, useFile, useEnv, useFlag)
			t.Run(name, func(t *testing.T) {
				want := k.vals.def
				var file string
				var environ, args []string
				if useFile {
					file = writeFile(t, yamlFor(map[string]string{k.key: fmt.Sprintf("%q", k.vals.file)}))
					want = k.vals.file
				}
				if useEnv {
					environ = []string{s.Env + "=" + k.vals.env}
					want = k.vals.env
				}
				if useFlag {
					args = []string{"--" + s.Flag + "=" + k.vals.flag}
					want = k.vals.flag
				}
				c, err := Load(parsedFlags(t, args...), file, environ)
				if err != nil {
					t.Fatalf("Load error = %v", err)
				}
				if got := k.get(c); got != want {
					t.Errorf("%s = %q; want %q", k.key, got, want)
				}
			})
		}
	}
}

func TestFlagOverridesOnlyWhenSet(t *testing.T) {
	file := writeFile(t, "http:\n  addr: 0.0.0.0:7001\nlog:\n  level: debug\n")
	environ := []string{"GATEHOUSE_DATA_DIR=/from-env"}

	// Registered but unset flags must not reset file and env values to the
	// flag defaults.
	c, err := Load(parsedFlags(t), file, environ)
	if err != nil {
		t.Fatalf("Load error = %v", err)
	}
	if c.HTTP.Addr != "0.0.0.0:7001" || c.Log.Level != "debug" || c.DataDir != "/from-env" {
		t.Errorf("Load with unset flags = addr %q, level %q, data_dir %q; want 0.0.0.0:7001, debug, /from-env",
			c.HTTP.Addr, c.Log.Level, c.DataDir)
	}

	// A flag set explicitly to its default value still wins.
	c, err = Load(parsedFlags(t, "--addr=127.0.0.1:8080", "--data-dir=./gatehouse-data"), file, environ)
	if err != nil {
		t.Fatalf("Load error = %v", err)
	}
	if c.HTTP.Addr != "127.0.0.1:8080" || c.DataDir != "./gatehouse-data" || c.Log.Level != "debug" {
		t.Errorf("Load with default-valued flags = addr %q, data_dir %q, level %q; want 127.0.0.1:8080, ./gatehouse-data, debug",
			c.HTTP.Addr, c.DataDir, c.Log.Level)
	}

	// Flags that name no setting (such as the caller's --config) are ignored.
	fs := parsedFlags(t)
	fs.String("config", "", "")
	if err := fs.Parse([]string{"--config=x.yaml"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(fs, "", nil); err != nil {
		t.Errorf("Load with a foreign flag error = %v; want nil", err)
	}
}

func TestEnvNames(t *testing.T) {
	tests := []struct {
		env  string
		get  func(Config) any
		want any
	}{
		{"GATEHOUSE_HTTP_SHUTDOWN_TIMEOUT=42s", func(c Config) any { return c.HTTP.ShutdownTimeout }, 42 * time.Second},
		{"GATEHOUSE_HTTP_READ_HEADER_TIMEOUT=3s", func(c Config) any { return c.HTTP.ReadHeaderTimeout }, 3 * time.Second},
		{"GATEHOUSE_DATABASE_MAX_CONNS=7", func(c Config) any { return c.Database.MaxConns }, 7},
		{"GATEHOUSE_HTTP_REQUEST_TIMEOUT=20s", func(c Config) any { return c.HTTP.RequestTimeout }, 20 * time.Second},
		{"GATEHOUSE_DATABASE_STATEMENT_TIMEOUT=2s", func(c Config) any { return c.Database.StatementTimeout }, 2 * time.Second},
		{"GATEHOUSE_DATABASE_LOCK_TIMEOUT=250ms", func(c Config) any { return c.Database.LockTimeout }, 250 * time.Millisecond},
		{"GATEHOUSE_DATABASE_IDLE_IN_TRANSACTION_SESSION_TIMEOUT=1m", func(c Config) any { return c.Database.IdleInTransactionTimeout }, time.Minute},
		{"GATEHOUSE_DATA_DIR=/var/lib/gh", func(c Config) any { return c.DataDir }, "/var/lib/gh"},
		{"GATEHOUSE_MASTER_KEY_FILE=/run/key", func(c Config) any { return c.MasterKeyFile }, "/run/key"},
		{"GATEHOUSE_BASE_URL=https://auth.example", func(c Config) any { return c.BaseURL }, "https://auth.example"},
		{"GATEHOUSE_SMTP_AUTH_METHOD=login", func(c Config) any { return c.SMTP.AuthMethod }, "login"},
		{"GATEHOUSE_DEV=1", func(c Config) any { return c.Dev }, true},
		{"GATEHOUSE_LOG_LEVEL=WARN", func(c Config) any { return c.Log.Level }, "warn"},
		{"GATEHOUSE_TOKENS_ISSUER=https://issuer.example", func(c Config) any { return c.Tokens.Issuer }, "https://issuer.example"},
		// Empty, unknown, prefix-only and wrongly cased variables are ignored.
		{"GATEHOUSE_HTTP_ADDR=", func(c Config) any { return c.HTTP.Addr }, "127.0.0.1:8080"},
		{"GATEHOUSE_HTTP_ADDR_X=:1", func(c Config) any { return c.HTTP.Addr }, "127.0.0.1:8080"},
		{"GATEHOUSE_TEST_POSTGRES_URL=postgres://x/y", func(c Config) any { return c.Database.URL }, ""},
		{"GATEHOUSE_DATABASE=postgres://x/y", func(c Config) any { return c.Database.URL }, ""},
		{"gatehouse_database_url=postgres://x/y", func(c Config) any { return c.Database.URL }, ""},
		{"DATABASE_URL=postgres://x/y", func(c Config) any { return c.Database.URL }, ""},
		{"GATEHOUSE_NOEQUALS", func(c Config) any { return c.Database.URL }, ""},
	}
	for _, tt := range tests {
		c, err := Load(nil, "", []string{tt.env})
		if err != nil {
			t.Errorf("Load(env %q) error = %v", tt.env, err)
			continue
		}
		if got := tt.get(c); got != tt.want {
			t.Errorf("Load(env %q) field = %v; want %v", tt.env, got, tt.want)
		}
	}
}

func TestSettingEnvNames(t *testing.T) {
	want := map[string]string{
		"dev":                      "GATEHOUSE_DEV",
		"data_dir":                 "GATEHOUSE_DATA_DIR",
		"http.shutdown_timeout":    "GATEHOUSE_HTTP_SHUTDOWN_TIMEOUT",
		"http.read_header_timeout": "GATEHOUSE_HTTP_READ_HEADER_TIMEOUT",
		"database.url":             "GATEHOUSE_DATABASE_URL",
		"database.max_conns":       "GATEHOUSE_DATABASE_MAX_CONNS",
		"master_key_file":          "GATEHOUSE_MASTER_KEY_FILE",
		"smtp.auth_method":         "GATEHOUSE_SMTP_AUTH_METHOD",
	}
	found := 0
	for _, s := range Settings() {
		if w, ok := want[s.Key]; ok {
			found++
			if s.Env != w {
				t.Errorf("Settings() %s.Env = %q; want %q", s.Key, s.Env, w)
			}
		}
	}
	if found != len(want) {
		t.Errorf("Settings() has %d of the %d expected keys", found, len(want))
	}
}

func TestSettingsTable(t *testing.T) {
	keys, envs, flags := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range Settings() {
		if keys[s.Key] {
			t.Errorf("duplicate key %q", s.Key)
		}
		keys[s.Key] = true
		if envs[s.Env] {
			t.Errorf("duplicate env %q", s.Env)
		}
		envs[s.Env] = true
		if s.Flag != "" {
			if flags[s.Flag] {
				t.Errorf("duplicate flag %q", s.Flag)
			}
			flags[s.Flag] = true
			if s.Flag == "config" || s.Flag == "help" {
				t.Errorf("setting %s uses reserved flag --%s", s.Key, s.Flag)
			}
		}
		if wantEnv := "GATEHOUSE_" + strings.ToUpper(strings.ReplaceAll(s.Key, ".", "_")); s.Env != wantEnv {
			t.Errorf("%s.Env = %q; want %q", s.Key, s.Env, wantEnv)
		}
		if s.Help == "" || strings.ContainsAny(s.Help, "\n`") {
			// pflag treats a backquoted word in the usage as the value name.
			t.Errorf("%s.Help = %q; want one non-empty line without backquotes", s.Key, s.Help)
		}
		if s.Secret && s.Default != "" {
			t.Errorf("secret %s has default %q; want none", s.Key, s.Default)
		}
		if strings.Count(s.Key, ".") > 1 {
			t.Errorf("key %q nests deeper than one level", s.Key)
		}
	}
}

func TestAddFlags(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlags(fs)
	n := 0
	for _, s := range Settings() {
		if s.Flag == "" {
			continue
		}
		n++
		f := fs.Lookup(s.Flag)
		if f == nil {
			t.Errorf("AddFlags did not register --%s", s.Flag)
			continue
		}
		if !strings.Contains(f.Usage, s.Help) || !strings.Contains(f.Usage, s.Env) {
			t.Errorf("--%s usage = %q; want help and %s", s.Flag, f.Usage, s.Env)
		}
	}
	count := 0
	fs.VisitAll(func(*pflag.Flag) { count++ })
	if count != n {
		t.Errorf("AddFlags registered %d flags; want %d", count, n)
	}
	typed := []struct{ flag, typ, def string }{
		{"dev", "bool", "false"},
		{"addr", "string", "127.0.0.1:8080"},
		{"data-dir", "string", "./gatehouse-data"},
		{"log-level", "string", "info"},
	}
	for _, tt := range typed {
		f := fs.Lookup(tt.flag)
		if f == nil {
			t.Errorf("no flag --%s", tt.flag)
			continue
		}
		if f.Value.Type() != tt.typ || f.DefValue != tt.def {
			t.Errorf("--%s = type %s default %q; want %s %q", tt.flag, f.Value.Type(), f.DefValue, tt.typ, tt.def)
		}
	}
}

func TestLoadYAMLNesting(t *testing.T) {
	file := writeFile(t, `
dev: true
data_dir: /srv/gh
http:
  addr: "[::1]:9443"
  trusted_proxies:
    - 10.0.0.0/8
    - fd00::/8
  shutdown_timeout: 1m
base_url: https://auth.example.com/
database:
  url: postgres://gh@db/gh
  max_conns: 40
log: {level: debug, format: text}
mail:
  provider: smtp
  from:
smtp:
  host: smtp.example.com
  port: 465
  tls: tls
`)
	got, err := Load(nil, file, nil)
	if err != nil {
		t.Fatalf("Load error = %v", err)
	}
	want := defaultConfig()
	want.Dev = true
	want.DataDir = "/srv/gh"
	want.HTTP.Addr = "[::1]:9443"
	want.HTTP.TrustedProxies = []string{"10.0.0.0/8", "fd00::/8"}
	want.HTTP.ShutdownTimeout = time.Minute
	want.BaseURL, want.BaseURLFrom = "https://auth.example.com", "base_url"
	want.Tokens.Issuer = "https://auth.example.com"
	want.Database.URL, want.Database.MaxConns = "postgres://gh@db/gh", 40
	want.Log = Log{Level: "debug", Format: "text"}
	want.Mail.Provider = "smtp" // mail.from is empty in the file: default kept
	want.SMTP.Host = "smtp.example.com"
	want.SMTP.Port = 465
	want.SMTP.TLS = "tls"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load(nested YAML) = %+v; want %+v", got, want)
	}
}

func TestTrustedProxies(t *testing.T) {
	want := []string{"10.0.0.0/8", "192.168.0.0/16", "fd00::/8"}
	sliceFlags := pflag.NewFlagSet("test", pflag.ContinueOnError)
	sliceFlags.StringSlice("trusted-proxies", nil, "")
	if err := sliceFlags.Parse([]string{"--trusted-proxies=10.0.0.0/8,192.168.0.0/16", "--trusted-proxies=fd00::/8"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		flags   *pflag.FlagSet
		file    string
		environ []string
	}{
		{"env", nil, "", []string{"GATEHOUSE_HTTP_TRUSTED_PROXIES=10.0.0.0/8, 192.168.0.0/16,,fd00::/8 "}},
		{"flag", parsedFlags(t, "--trusted-proxies=10.0.0.0/8,192.168.0.0/16,fd00::/8"), "", nil},
		{"slice flag", sliceFlags, "", nil},
		{"yaml string", nil, "http:\n  trusted_proxies: 10.0.0.0/8,192.168.0.0/16,fd00::/8\n", nil},
		{"yaml list", nil, "http:\n  trusted_proxies: [10.0.0.0/8, 192.168.0.0/16, fd00::/8]\n", nil},
	}
	for _, tt := range tests {
		file := ""
		if tt.file != "" {
			file = writeFile(t, tt.file)
		}
		c, err := Load(tt.flags, file, tt.environ)
		if err != nil {
			t.Errorf("%s: Load error = %v", tt.name, err)
			continue
		}
		if !slices.Equal(c.HTTP.TrustedProxies, want) {
			t.Errorf("%s: TrustedProxies = %q; want %q", tt.name, c.HTTP.TrustedProxies, want)
		}
	}
}

// checkSettingError fails unless err is (or wraps) a *SettingError for key
// whose message is one line naming the key and its env variable.
func checkSettingError(t *testing.T, what string, err error, key string) {
	t.Helper()
	var se *SettingError
	if !errors.As(err, &se) {
		t.Errorf("%s error = %v; want *SettingError for %s", what, err, key)
		return
	}
	if se.Key != key || se.Env != envName(key) {
		t.Errorf("%s SettingError = {Key %q, Env %q}; want {%q, %q} (%v)", what, se.Key, se.Env, key, envName(key), err)
	}
	msg := se.Error()
	if prefix := "invalid setting " + key + " (" + envName(key) + "): "; !strings.HasPrefix(msg, prefix) || strings.Contains(msg, "\n") {
		t.Errorf("%s error = %q; want one line starting %q", what, msg, prefix)
	}
}

func TestLoadUnparsable(t *testing.T) {
	tests := []struct {
		env, file string
		key       string
	}{
		{env: "GATEHOUSE_HTTP_SHUTDOWN_TIMEOUT=abc", key: "http.shutdown_timeout"},
		{env: "GATEHOUSE_SMTP_TIMEOUT=10", key: "smtp.timeout"},
		{env: "GATEHOUSE_DATABASE_MAX_CONNS=many", key: "database.max_conns"},
		{env: "GATEHOUSE_HTTP_REQUEST_TIMEOUT=15", key: "http.request_timeout"},
		{env: "GATEHOUSE_DATABASE_STATEMENT_TIMEOUT=ten seconds", key: "database.statement_timeout"},
		{env: "GATEHOUSE_DATABASE_LOCK_TIMEOUT=5000", key: "database.lock_timeout"},
		{env: "GATEHOUSE_DATABASE_IDLE_IN_TRANSACTION_SESSION_TIMEOUT=30S", key: "database.idle_in_transaction_session_timeout"},
		{file: "database:\n  statement_timeout: 10\n", key: "database.statement_timeout"},
		{env: "GATEHOUSE_SMTP_PORT=25.5", key: "smtp.port"},
		{env: "GATEHOUSE_DEV=maybe", key: "dev"},
		{env: "GATEHOUSE_HTTP_TRUSTED_PROXIES=10.0.0.0/8,10.0.0.0/33", key: "http.trusted_proxies"},
		{env: "GATEHOUSE_LOG_LEVEL=loud", key: "log.level"},
		{env: "GATEHOUSE_DATABASE_URL=mysql://root@db/gh", key: "database.url"},
		{file: "database:\n  max_conns: 1.5\n", key: "database.max_conns"},
		{file: "http:\n  addr: [a, b]\n", key: "http.addr"},
		{file: "dev: yes\n", key: "dev"},
		{file: "http:\n  read_header_timeout: 10\n", key: "http.read_header_timeout"},
	}
	for _, tt := range tests {
		var environ []string
		file := ""
		if tt.env != "" {
			environ = []string{tt.env}
		}
		if tt.file != "" {
			file = writeFile(t, tt.file)
		}
		_, err := Load(nil, file, environ)
		checkSettingError(t, fmt.Sprintf("Load(env %q, file %q)", tt.env, tt.file), err, tt.key)
	}
}

func TestValidate(t *testing.T) {
	key16 := base64.StdEncoding.EncodeToString(make([]byte, 16))
	tests := []struct {
		name   string
		mutate func(*Config)
		key    string // "" means valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"data_dir empty", func(c *Config) { c.DataDir = "" }, "data_dir"},
		{"addr no port", func(c *Config) { c.HTTP.Addr = "localhost" }, "http.addr"},
		{"addr named port", func(c *Config) { c.HTTP.Addr = "localhost:http" }, "http.addr"},
		{"addr port too big", func(c *Config) { c.HTTP.Addr = ":70000" }, "http.addr"},
		{"addr empty host", func(c *Config) { c.HTTP.Addr = ":8080" }, ""},
		{"addr ipv6", func(c *Config) { c.HTTP.Addr = "[::1]:8080" }, ""},
		{"metrics addr", func(c *Config) { c.Metrics.Addr = "127.0.0.1:9090" }, ""},
		{"metrics addr no port", func(c *Config) { c.Metrics.Addr = "localhost" }, "metrics.addr"},
		{"access alg RS256", func(c *Config) { c.Tokens.AccessTokenAlg = "RS256" }, ""},
		{"access alg lower case", func(c *Config) { c.Tokens.AccessTokenAlg = "rs256" }, "tokens.access_token_alg"},
		{"access alg HS256", func(c *Config) { c.Tokens.AccessTokenAlg = "HS256" }, "tokens.access_token_alg"},
		{"metrics addr same as http", func(c *Config) { c.Metrics.Addr = c.HTTP.Addr }, "metrics.addr"},
		{"metrics addr and http both :0", func(c *Config) { c.HTTP.Addr, c.Metrics.Addr = "127.0.0.1:0", "127.0.0.1:0" }, ""},
		{"proxy bare ip", func(c *Config) { c.HTTP.TrustedProxies = []string{"10.0.0.1"} }, "http.trusted_proxies"},
		{"proxy garbage", func(c *Config) { c.HTTP.TrustedProxies = []string{"10.0.0.0/8", "garbage"} }, "http.trusted_proxies"},
		{"proxies ok", func(c *Config) { c.HTTP.TrustedProxies = []string{"10.0.0.0/8", "::1/128"} }, ""},
		{"shutdown zero", func(c *Config) { c.HTTP.ShutdownTimeout = 0 }, "http.shutdown_timeout"},
		{"read header negative", func(c *Config) { c.HTTP.ReadHeaderTimeout = -time.Second }, "http.read_header_timeout"},
		{"base_url empty", func(c *Config) { c.BaseURL = "" }, "base_url"},
		{"base_url ftp", func(c *Config) { c.BaseURL = "ftp://x.example" }, "base_url"},
		{"base_url relative", func(c *Config) { c.BaseURL = "/auth" }, "base_url"},
		{"base_url no host", func(c *Config) { c.BaseURL = "https://" }, "base_url"},
		{"base_url query", func(c *Config) { c.BaseURL = "https://x.example/?a=1" }, "base_url"},
		{"base_url fragment", func(c *Config) { c.BaseURL = "https://x.example#top" }, "base_url"},
		{"base_url userinfo", func(c *Config) { c.BaseURL = "https://u:p@x.example" }, "base_url"},
		{"base_url trailing slash", func(c *Config) { c.BaseURL = "https://x.example/" }, "base_url"},
		{"base_url with path", func(c *Config) { c.BaseURL = "https://x.example/auth" }, ""},
		{"db mysql", func(c *Config) { c.Database.URL = "mysql://root@db/gh" }, "database.url"},
		{"db no scheme", func(c *Config) { c.Database.URL = "gatehouse.db" }, "database.url"},
		{"db postgres no slashes", func(c *Config) { c.Database.URL = "postgres:db" }, "database.url"},
		{"db sqlite no path", func(c *Config) { c.Database.URL = "sqlite:" }, "database.url"},
		{"db sqlite slashes no path", func(c *Config) { c.Database.URL = "sqlite://" }, "database.url"},
		{"db postgres", func(c *Config) { c.Database.URL = "postgres://u@db:5432/gh?sslmode=disable" }, ""},
		{"db postgresql", func(c *Config) { c.Database.URL = "postgresql://u@db/gh" }, ""},
		{"db sqlite", func(c *Config) { c.Database.URL = "sqlite:./x.db" }, ""},
		{"db sqlite slashes", func(c *Config) { c.Database.URL = "sqlite:///var/x.db" }, ""},
		{"db file", func(c *Config) { c.Database.URL = "file:x.db?_pragma=foreign_keys(1)" }, ""},
		{"max_conns zero", func(c *Config) { c.Database.MaxConns = 0 }, "database.max_conns"},
		{"request timeout zero", func(c *Config) { c.HTTP.RequestTimeout = 0 }, "http.request_timeout"},
		{"request timeout 10ms", func(c *Config) { c.HTTP.RequestTimeout = 10 * time.Millisecond }, ""},
		{"request timeout 1h", func(c *Config) { c.HTTP.RequestTimeout = time.Hour }, "http.request_timeout"},
		{"statement timeout zero", func(c *Config) { c.Database.StatementTimeout = 0 }, "database.statement_timeout"},
		{"statement timeout 1h", func(c *Config) { c.Database.StatementTimeout = time.Hour }, ""},
		{"statement timeout 2h", func(c *Config) { c.Database.StatementTimeout = 2 * time.Hour }, "database.statement_timeout"},
		{"lock timeout negative", func(c *Config) { c.Database.LockTimeout = -time.Second }, "database.lock_timeout"},
		{"lock timeout 1ms", func(c *Config) { c.Database.LockTimeout = time.Millisecond }, ""},
		{"idle in transaction zero", func(c *Config) { c.Database.IdleInTransactionTimeout = 0 }, "database.idle_in_transaction_session_timeout"},
		{"idle in transaction 2h", func(c *Config) { c.Database.IdleInTransactionTimeout = 2 * time.Hour }, "database.idle_in_transaction_session_timeout"},
		{"max_conns too many", func(c *Config) { c.Database.MaxConns = 1001 }, "database.max_conns"},
		{"max_conns max", func(c *Config) { c.Database.MaxConns = 1000 }, ""},
		{"master_key not base64", func(c *Config) { c.MasterKey = "not base64!!" }, "master_key"},
		{"master_key 16 bytes", func(c *Config) { c.MasterKey = key16 }, "master_key"},
		{"both master keys", func(c *Config) {
			c.MasterKey = base64.StdEncoding.EncodeToString(make([]byte, 32))
			c.MasterKeyFile = "/k"
		}, "master_key_file"},
		{"log level", func(c *Config) { c.Log.Level = "verbose" }, "log.level"},
		{"log format", func(c *Config) { c.Log.Format = "xml" }, "log.format"},
		{"mail provider", func(c *Config) { c.Mail.Provider = "sendgrid" }, "mail.provider"},
		{"mail provider outbox", func(c *Config) { c.Mail.Provider = "outbox" }, ""},
		{"mail from", func(c *Config) { c.Mail.From = "not an address" }, "mail.from"},
		{"smtp without host", func(c *Config) { c.Mail.Provider = "smtp" }, "smtp.host"},
		{"smtp with host", func(c *Config) { c.Mail.Provider = "smtp"; c.SMTP.Host = "mx" }, ""},
		{"smtp port zero", func(c *Config) { c.SMTP.Port = 0 }, "smtp.port"},
		{"smtp port too big", func(c *Config) { c.SMTP.Port = 70000 }, "smtp.port"},
		{"smtp tls", func(c *Config) { c.SMTP.TLS = "ssl" }, "smtp.tls"},
		{"smtp auth", func(c *Config) { c.SMTP.AuthMethod = "xoauth2" }, "smtp.auth_method"},
		{"smtp auth cram", func(c *Config) { c.SMTP.AuthMethod = "cram-md5" }, ""},
		{"smtp timeout", func(c *Config) { c.SMTP.Timeout = 0 }, "smtp.timeout"},
		{"issuer not url", func(c *Config) { c.Tokens.Issuer = "gatehouse" }, "tokens.issuer"},
		{"issuer empty", func(c *Config) { c.Tokens.Issuer = "" }, "tokens.issuer"},
		{"session lifetime short", func(c *Config) { c.Tokens.SessionLifetime = time.Minute }, "tokens.session_lifetime"},
		{"grace too long", func(c *Config) { c.Tokens.RefreshGrace = time.Hour }, "tokens.refresh_grace"},
		{"grace over 10s", func(c *Config) { c.Tokens.RefreshGrace = 11 * time.Second }, "tokens.refresh_grace"},
		{"grace 10s", func(c *Config) { c.Tokens.RefreshGrace = 10 * time.Second }, ""},
		{"grace off", func(c *Config) { c.Tokens.RefreshGrace = 0 }, ""},
		{"rate backend", func(c *Config) { c.RateLimit.Backend = "redis" }, "ratelimit.backend"},
		{"sms provider", func(c *Config) { c.SMS.Provider = "pigeon" }, "sms.provider"},
		{"private targets", func(c *Config) { c.Webhooks.AllowPrivateTargets = "maybe" }, "webhooks.allow_private_targets"},
		{"retry base zero", func(c *Config) { c.Webhooks.RetryBase = 0 }, "webhooks.retry_base"},
		{"workers zero", func(c *Config) { c.Webhooks.Workers = 0 }, "webhooks.workers"},
		{"rescue too soon", func(c *Config) { c.Webhooks.RescueAfter = time.Second }, "webhooks.rescue_after"},
		{"negative app share", func(c *Config) { c.Webhooks.WorkersPerApp = -1 }, "webhooks.workers_per_app"},
		{"no endpoints", func(c *Config) { c.Webhooks.MaxEndpointsPerApp = 0 }, "webhooks.max_endpoints_per_app"},
		{"no message attempts", func(c *Config) { c.Messages.MaxAttempts = 0 }, "messages.max_attempts"},
		{"message retry cap below base", func(c *Config) { c.Messages.RetryMax = time.Second }, "messages.retry_max"},
		{"message poll too fast", func(c *Config) { c.Messages.PollInterval = time.Millisecond }, "messages.poll_interval"},
		{"sms http without url", func(c *Config) { c.SMS.Provider = "http" }, "sms.http_url"},
		{"sms url not url", func(c *Config) { c.SMS.HTTPURL = "sms-gateway" }, "sms.http_url"},
		{"rate rule garbage", func(c *Config) { c.RateLimit.SendPerIP = "lots" }, "ratelimit.send_per_ip"},
		{"rate rule zero count", func(c *Config) { c.RateLimit.SendPerIdentifier = "0/10m" }, "ratelimit.send_per_identifier"},
		{"rate rule bad period", func(c *Config) { c.RateLimit.VerifyPerIP = "5/soon" }, "ratelimit.verify_per_ip"},
		{"lookup rule", func(c *Config) { c.RateLimit.LookupPerIP = "many" }, "ratelimit.lookup_per_ip"},
		{"failures over 100", func(c *Config) { c.RateLimit.CodeFailuresPerHour = 101 }, "ratelimit.code_failures_per_hour"},
		{"lock over 100", func(c *Config) { c.RateLimit.CodeLockAfter = 101 }, "ratelimit.code_lock_after"},
		{"poll interval long", func(c *Config) { c.RateLimit.PollInterval = time.Hour }, "ratelimit.poll_interval"},
		{"send min time long", func(c *Config) { c.RateLimit.SendMinTime = 2 * time.Second }, "ratelimit.send_min_time"},
		{"test suffix without +", func(c *Config) { c.TestIdentities.EmailSuffix = "_test" }, "test_identities.email_suffix"},
		{"test suffix too short", func(c *Config) { c.TestIdentities.EmailSuffix = "+t" }, "test_identities.email_suffix"},
		{"test suffix with @", func(c *Config) { c.TestIdentities.EmailSuffix = "+t@example.com" }, "test_identities.email_suffix"},
		{"test suffix empty", func(c *Config) { c.TestIdentities.EmailSuffix = "" }, "test_identities.email_suffix"},
		{"test suffix own", func(c *Config) { c.TestIdentities.EmailSuffix = "+qa-review" }, ""},
		{"test suffix off", func(c *Config) { c.TestIdentities.EmailSuffix = "off" }, ""},
		{"test pattern broken", func(c *Config) { c.TestIdentities.PhonePattern = `^\+1(555` }, "test_identities.phone_pattern"},
		{"test pattern off", func(c *Config) { c.TestIdentities.PhonePattern = "off" }, ""},
		{"test code short", func(c *Config) { c.TestIdentities.Code = "42424" }, "test_identities.code"},
		{"test code long", func(c *Config) { c.TestIdentities.Code = "4242424" }, "test_identities.code"},
		{"test code letters", func(c *Config) { c.TestIdentities.Code = "42424a" }, "test_identities.code"},
		{"test code signed", func(c *Config) { c.TestIdentities.Code = "+42424" }, "test_identities.code"},
		{"test code own", func(c *Config) { c.TestIdentities.Code = "090807" }, ""},
		{"sms country unknown", func(c *Config) { c.SMSGuard.AllowedCountries = []string{"US", "XX"} }, "sms.allowed_countries"},
		{"sms country long", func(c *Config) { c.SMSGuard.AllowedCountries = []string{"USA"} }, "sms.allowed_countries"},
		{"sms every country", func(c *Config) { c.SMSGuard.AllowedCountries = []string{"*"} }, ""},
		{"sms every country and one", func(c *Config) { c.SMSGuard.AllowedCountries = []string{"*", "US"} }, "sms.allowed_countries"},
		{"sms no country", func(c *Config) { c.SMSGuard.AllowedCountries = nil }, ""},
		{"sms burst over 100", func(c *Config) { c.SMSGuard.PerNumberBurst = 101 }, "sms.per_number_burst"},
		{"sms quiet under max wait", func(c *Config) { c.SMSGuard.PerNumberQuiet = 10 * time.Minute }, "sms.per_number_quiet"},
		{"sms daily cap negative", func(c *Config) { c.SMSGuard.DailyCap = -1 }, "sms.daily_cap"},
		{"sms prefix cap off", func(c *Config) { c.SMSGuard.PrefixHourlyCap = 0 }, ""},
		{"m2m ttl over 15m", func(c *Config) { c.M2M.TokenTTL = 16 * time.Minute }, "m2m.token_ttl"},
		{"m2m ttl 15m", func(c *Config) { c.M2M.TokenTTL = 15 * time.Minute }, ""},
		{"m2m ttl under 1m", func(c *Config) { c.M2M.TokenTTL = 30 * time.Second }, "m2m.token_ttl"},
		{"metrics token", func(c *Config) { c.Metrics.Token = "abcdefghijklmnopqrstuvwxyz0123456789-._~+/=" }, ""},
		{"metrics token short", func(c *Config) { c.Metrics.Token = "abcdefghijklmnopqrstuvwxyz01234" }, "metrics.token"},
		{"metrics token with a space", func(c *Config) { c.Metrics.Token = "abcdefghijklmnop qrstuvwxyz0123456789" }, "metrics.token"},
		{"short link rule", func(c *Config) { c.RateLimit.ShortLinkPerIP = "10" }, "ratelimit.short_link_per_ip"},
		{"m2m client rule off", func(c *Config) { c.RateLimit.M2MFailuresPerClient = "off" }, ""},
		{"m2m ip rule", func(c *Config) { c.RateLimit.M2MFailuresPerIP = "0/1m" }, "ratelimit.m2m_failures_per_ip"},
	}
	for _, tt := range tests {
		c := defaultConfig()
		tt.mutate(&c)
		err := c.Validate()
		if tt.key == "" {
			if err != nil {
				t.Errorf("%s: Validate() = %v; want nil", tt.name, err)
			}
			continue
		}
		checkSettingError(t, tt.name+": Validate()", err, tt.key)
	}
}

func TestValidateMessages(t *testing.T) {
	tests := []struct {
		mutate func(*Config)
		want   string
		secret string // must not appear in the message
	}{
		{func(c *Config) { c.Database.URL = "mysql://root:hunter2@db/gh" },
			`invalid setting database.url (GATEHOUSE_DATABASE_URL): unsupported scheme "mysql"`, "hunter2"},
		{func(c *Config) { c.Database.URL = "postgres://u:hunter2@db:badport/gh" },
			`invalid setting database.url (GATEHOUSE_DATABASE_URL): malformed PostgreSQL URL`, "hunter2"},
		{func(c *Config) { c.Database.URL = "hunter2@db/gh" },
			`invalid setting database.url (GATEHOUSE_DATABASE_URL): missing scheme`, "hunter2"},
		{func(c *Config) { c.MasterKey = "hunter2hunter2" },
			`invalid setting master_key (GATEHOUSE_MASTER_KEY): master key is`, "hunter2"},
		{func(c *Config) { c.TestIdentities.Code = "98765x" },
			`invalid setting test_identities.code (GATEHOUSE_TEST_IDENTITIES_CODE): must be 6 digits`, "98765x"},
	}
	for _, tt := range tests {
		c := defaultConfig()
		tt.mutate(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("Validate() = nil; want %q", tt.want)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, tt.want) || strings.Contains(msg, tt.secret) {
			t.Errorf("Validate() = %q; want prefix %q without %q", msg, tt.want, tt.secret)
		}
	}
}

func TestDecodeMasterKey(t *testing.T) {
	raw := make([]byte, 32)
	for i := range raw {
		raw[i] = byte(250 + i) // bytes that need '+' '/' or '-' '_'
	}
	encodings := map[string]*base64.Encoding{
		"std": base64.StdEncoding, "raw std": base64.RawStdEncoding,
		"url": base64.URLEncoding, "raw url": base64.RawURLEncoding,
	}
	for name, enc := range encodings {
		s := enc.EncodeToString(raw) + "\n"
		got, err := DecodeMasterKey(s)
		if err != nil || !slices.Equal(got, raw) {
			t.Errorf("DecodeMasterKey(%s) = %x, %v; want %x", name, got, err, raw)
		}
		c := defaultConfig()
		c.MasterKey = s
		if err := c.Validate(); err != nil {
			t.Errorf("Validate with %s master key = %v; want nil", name, err)
		}
	}
	for _, bad := range []string{"", "!!!!", base64.StdEncoding.EncodeToString(make([]byte, 31)), base64.StdEncoding.EncodeToString(make([]byte, 33))} {
		if _, err := DecodeMasterKey(bad); err == nil {
			t.Errorf("DecodeMasterKey(%q) error = nil; want error", bad)
		}
	}
}

func TestDerivedDefaults(t *testing.T) {
	tests := []struct {
		environ              []string
		wantBase, wantIssuer string
	}{
		{nil, "http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{[]string{"GATEHOUSE_HTTP_ADDR=:9000"}, "http://localhost:9000", "http://localhost:9000"},
		{[]string{"GATEHOUSE_HTTP_ADDR=0.0.0.0:80"}, "http://localhost:80", "http://localhost:80"},
		{[]string{"GATEHOUSE_HTTP_ADDR=[::]:8080"}, "http://localhost:8080", "http://localhost:8080"},
		{[]string{"GATEHOUSE_HTTP_ADDR=[::1]:8080"}, "http://[::1]:8080", "http://[::1]:8080"},
		{[]string{"GATEHOUSE_BASE_URL=https://a.example/auth//"}, "https://a.example/auth", "https://a.example/auth"},
		{[]string{"GATEHOUSE_BASE_URL=https://a.example", "GATEHOUSE_TOKENS_ISSUER=https://iss.example/"},
			"https://a.example", "https://iss.example/"},
	}
	for _, tt := range tests {
		c, err := Load(nil, "", tt.environ)
		if err != nil {
			t.Errorf("Load(env %q) error = %v", tt.environ, err)
			continue
		}
		if c.BaseURL != tt.wantBase || c.Tokens.Issuer != tt.wantIssuer {
			t.Errorf("Load(env %q) = base %q issuer %q; want %q %q", tt.environ, c.BaseURL, c.Tokens.Issuer, tt.wantBase, tt.wantIssuer)
		}
		// The start-up summary says where the base URL came from.
		wantFrom := "http.addr"
		if slices.ContainsFunc(tt.environ, func(kv string) bool { return strings.HasPrefix(kv, "GATEHOUSE_BASE_URL=") }) {
			wantFrom = "base_url"
		}
		if c.BaseURLFrom != wantFrom {
			t.Errorf("Load(env %q).BaseURLFrom = %q; want %q", tt.environ, c.BaseURLFrom, wantFrom)
		}
	}
}

func TestDatabaseKind(t *testing.T) {
	tests := []struct {
		url, dataDir string
		kind, target string
	}{
		{"", "/srv/gh", "sqlite", filepath.Join("/srv/gh", "gatehouse.db")},
		{"", "./gatehouse-data", "sqlite", filepath.Join("gatehouse-data", "gatehouse.db")},
		{"postgres://u@db/gh?sslmode=disable", "/d", "postgres", "postgres://u@db/gh?sslmode=disable"},
		{"postgresql://u@db/gh", "/d", "postgres", "postgresql://u@db/gh"},
		{"sqlite:./x.db", "/d", "sqlite", "./x.db"},
		{"sqlite:///var/lib/x.db", "/d", "sqlite", "/var/lib/x.db"},
		{"sqlite://x.db", "/d", "sqlite", "x.db"},
		{"file:x.db?mode=rwc", "/d", "sqlite", "file:x.db?mode=rwc"},
		{"mysql://db", "/d", "", ""},
	}
	for _, tt := range tests {
		c := Config{DataDir: tt.dataDir, Database: Database{URL: tt.url}}
		kind, target := c.DatabaseKind()
		if kind != tt.kind || target != tt.target {
			t.Errorf("DatabaseKind(%q) = %q, %q; want %q, %q", tt.url, kind, target, tt.kind, tt.target)
		}
	}
}

func TestLoadFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	tests := []struct {
		name, path string
		want       []string
	}{
		{"missing", missing, []string{missing}},
		{"malformed", writeFile(t, "http: [\n"), []string{"gatehouse.yaml"}},
		{"unknown key", writeFile(t, "http:\n  adr: :80\n"), []string{"gatehouse.yaml", `"http.adr"`}},
		{"unknown section", writeFile(t, "redis:\n  url: x\n"), []string{"gatehouse.yaml", `"redis.url"`}},
		{"scalar section", writeFile(t, "http: 5\n"), []string{"gatehouse.yaml", `"http"`}},
	}
	for _, tt := range tests {
		_, err := Load(nil, tt.path, nil)
		if err == nil {
			t.Errorf("%s: Load error = nil; want error", tt.name)
			continue
		}
		var se *SettingError
		if errors.As(err, &se) {
			t.Errorf("%s: Load error = %v is a *SettingError; want a file error", tt.name, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Load error = %q; want it to contain %q", tt.name, err, w)
			}
		}
	}
	if _, err := Load(nil, missing, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing file) error = %v; want fs.ErrNotExist", err)
	}
	// An empty file and empty sections change nothing.
	c, err := Load(nil, writeFile(t, "http: {}\nlog:\n"), nil)
	if err != nil || !reflect.DeepEqual(c, defaultConfig()) {
		t.Errorf("Load(empty sections) = %+v, %v; want defaults", c, err)
	}
}

// TestEveryFieldCovered loads a file that sets every setting to a
// non-default value. A Config field that no setting fills stays zero, and a
// setting without a test value fails the key check.
func TestEveryFieldCovered(t *testing.T) {
	masterKey := base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	values := map[string]string{
		"dev":                        "true",
		"dev_email_auth_type":        "otp",
		"data_dir":                   "/srv/gh",
		"http.addr":                  `"0.0.0.0:9000"`,
		"http.trusted_proxies":       "[10.0.0.0/8]",
		"http.shutdown_timeout":      "30s",
		"http.read_header_timeout":   "5s",
		"http.request_timeout":       "20s",
		"database.statement_timeout": "3s",
		"database.lock_timeout":      "2s",
		"database.idle_in_transaction_session_timeout": "45s",
		"metrics.addr":                        `"127.0.0.1:9090"`,
		"base_url":                            "https://auth.example.com",
		"database.url":                        "postgres://gh@db/gh",
		"database.max_conns":                  "32",
		"master_key":                          masterKey,
		"master_key_file":                     `""`,
		"log.level":                           "debug",
		"log.format":                          "text",
		"log.requests":                        "true",
		"runtime.gc_headroom_mb":              "128",
		"mail.provider":                       "smtp",
		"mail.from":                           `"Example <no-reply@example.com>"`,
		"smtp.host":                           "smtp.example.com",
		"smtp.port":                           "2525",
		"smtp.username":                       "mailer",
		"smtp.password":                       "s3cret",
		"smtp.tls":                            "starttls",
		"smtp.auth_method":                    "plain",
		"smtp.timeout":                        "20s",
		"postmark.server_token":               "pm-token",
		"postmark.message_stream":             "signin",
		"twilio.account_sid":                  "AC0123",
		"twilio.auth_token":                   "tw-token",
		"twilio.messaging_service_sid":        "MG0123",
		"tokens.issuer":                       "https://issuer.example.com",
		"tokens.session_lifetime":             "48h",
		"tokens.refresh_grace":                "5s",
		"ratelimit.backend":                   "database",
		"ratelimit.send_per_identifier":       "3/10m",
		"ratelimit.send_per_ip":               "100/1h",
		"ratelimit.verify_per_ip":             "off",
		"ratelimit.lookup_per_ip":             "10/1m",
		"ratelimit.challenge_per_ip":          "30/1m",
		"ratelimit.challenge_per_user":        "off",
		"ratelimit.unknown_identifier_per_ip": "5/1h",
		"ratelimit.code_failures_per_hour":    "20",
		"ratelimit.code_lock_after":           "50",
		"ratelimit.poll_interval":             "2s",
		"ratelimit.send_min_time":             "20ms",
		"sms.provider":                        "http",
		"sms.http_url":                        "https://sms.example.com/send",
		"sms.token":                           "smstok",
		"sms.from":                            "Acme",
		"sms.allowed_countries":               "[us, GB, jm]",
		"sms.allow_voip":                      "true",
		"sms.per_number_burst":                "5",
		"sms.per_number_window":               "15m",
		"sms.per_number_max_wait":             "16m",
		"sms.per_number_quiet":                "2h",
		"sms.daily_cap":                       "500",
		"sms.prefix_hourly_cap":               "10",
		"webhooks.allow_private_targets":      "true",
		"webhooks.retry_base":                 "50ms",
		"webhooks.workers":                    "8",
		"webhooks.rescue_after":               "20s",
		"webhooks.workers_per_app":            "3",
		"webhooks.max_endpoints_per_app":      "5",
		"messages.max_attempts":               "4",
		"messages.retry_base":                 "20ms",
		"messages.retry_max":                  "80ms",
		"messages.workers":                    "3",
		"messages.poll_interval":              "15ms",
		"tokens.access_token_alg":             "RS256",
		"test_identities.email_suffix":        `"+QA_Review"`,
		"test_identities.phone_pattern":       `'\+4420794600\d\d'`,
		"test_identities.code":                `"000111"`,
		"m2m.token_ttl":                       "5m",
		"metrics.token":                       "mtok-0123456789abcdefghijklmnopqrstuv",
		"ratelimit.short_link_per_ip":         "5/1m",
		"ratelimit.m2m_failures_per_client":   "3/1h",
		"ratelimit.m2m_failures_per_ip":       "off",
	}
	var keys []string
	for _, s := range Settings() {
		keys = append(keys, s.Key)
		if _, ok := values[s.Key]; !ok {
			t.Errorf("setting %s has no test value", s.Key)
		}
	}
	for k := range values {
		if !slices.Contains(keys, k) {
			t.Errorf("test value for unknown setting %s", k)
		}
	}

	got, err := Load(nil, writeFile(t, yamlFor(values)), nil)
	if err != nil {
		t.Fatalf("Load error = %v", err)
	}
	want := Config{
		Dev:              true,
		DevEmailAuthType: "otp",
		DataDir:          "/srv/gh",
		HTTP: HTTP{
			Addr:              "0.0.0.0:9000",
			TrustedProxies:    []string{"10.0.0.0/8"},
			ShutdownTimeout:   30 * time.Second,
			ReadHeaderTimeout: 5 * time.Second,
			RequestTimeout:    20 * time.Second,
		},
		Metrics: Metrics{Addr: "127.0.0.1:9090", Token: "mtok-0123456789abcdefghijklmnopqrstuv"},
		BaseURL: "https://auth.example.com",
		Database: Database{URL: "postgres://gh@db/gh", MaxConns: 32, StatementTimeout: 3 * time.Second, LockTimeout: 2 * time.Second,
			IdleInTransactionTimeout: 45 * time.Second},
		MasterKey: masterKey,
		Runtime:   Runtime{GCHeadroomMB: 128},
		Log:       Log{Level: "debug", Format: "text", Requests: true},
		Mail:      Mail{Provider: "smtp", From: "Example <no-reply@example.com>"},
		SMTP: SMTP{Host: "smtp.example.com", Port: 2525, Username: "mailer", Password: "s3cret",
			TLS: "starttls", AuthMethod: "plain", Timeout: 20 * time.Second},
		Tokens: Tokens{Issuer: "https://issuer.example.com", SessionLifetime: 48 * time.Hour, RefreshGrace: 5 * time.Second, AccessTokenAlg: "RS256"},
		Webhooks: Webhooks{AllowPrivateTargets: "true", RetryBase: 50 * time.Millisecond, Workers: 8, RescueAfter: 20 * time.Second,
			WorkersPerApp: 3, MaxEndpointsPerApp: 5},
		Messages: Messages{MaxAttempts: 4, RetryBase: 20 * time.Millisecond, RetryMax: 80 * time.Millisecond, Workers: 3, PollInterval: 15 * time.Millisecond},
		SMS:      SMS{Provider: "http", HTTPURL: "https://sms.example.com/send", Token: "smstok", From: "Acme"},
		Postmark: Postmark{ServerToken: "pm-token", MessageStream: "signin"},
		Twilio:   Twilio{AccountSID: "AC0123", AuthToken: "tw-token", MessagingServiceSID: "MG0123"},
		SMSGuard: SMSGuard{AllowedCountries: []string{"us", "GB", "jm"}, AllowVoIP: true, PerNumberBurst: 5, PerNumberWindow: 15 * time.Minute,
			PerNumberMaxWait: 16 * time.Minute, PerNumberQuiet: 2 * time.Hour, DailyCap: 500, PrefixHourlyCap: 10},
		RateLimit: RateLimit{Backend: "database", SendPerIdentifier: "3/10m", SendPerIP: "100/1h", VerifyPerIP: "off", LookupPerIP: "10/1m",
			ChallengePerIP: "30/1m", ChallengePerUser: "off", UnknownPerIP: "5/1h",
			ShortLinkPerIP: "5/1m", M2MFailuresPerClient: "3/1h", M2MFailuresPerIP: "off", CodeFailuresPerHour: 20, CodeLockAfter: 50, PollInterval: 2 * time.Second, SendMinTime: 20 * time.Millisecond},
		TestIdentities: TestIdentities{EmailSuffix: "+qa_review", PhonePattern: `\+4420794600\d\d`, Code: "000111"},
		M2M:            M2M{TokenTTL: 5 * time.Minute},
	}
	want.BaseURLFrom = "base_url"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load(every key) = %+v; want %+v", got, want)
	}

	// master_key and master_key_file are exclusive, so check the file path
	// separately; every other field must be non-zero now.
	c, err := Load(nil, "", []string{"GATEHOUSE_MASTER_KEY_FILE=/run/key"})
	if err != nil || c.MasterKeyFile != "/run/key" {
		t.Errorf("Load(master_key_file) = %q, %v; want /run/key", c.MasterKeyFile, err)
	}
	got.MasterKeyFile = c.MasterKeyFile
	for _, name := range zeroFields(reflect.ValueOf(got), "Config") {
		t.Errorf("field %s is not filled by any setting", name)
	}
}

// zeroFields lists the leaf fields of v that hold their zero value.
func zeroFields(v reflect.Value, path string) []string {
	if v.Kind() != reflect.Struct {
		if v.IsZero() {
			return []string{path}
		}
		return nil
	}
	var out []string
	for i := range v.NumField() {
		out = append(out, zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
	}
	return out
}

func TestAppShare(t *testing.T) {
	for _, tc := range []struct{ workers, perApp, want int }{
		{32, 0, 8}, {3, 0, 1}, {1, 0, 1}, {32, 5, 5}, {4, 10, 4},
	} {
		if got := (Webhooks{Workers: tc.workers, WorkersPerApp: tc.perApp}).AppShare(); got != tc.want {
			t.Errorf("AppShare(workers %d, per app %d) = %d; want %d", tc.workers, tc.perApp, got, tc.want)
		}
	}
}

func TestTestIdentityPhoneRegexp(t *testing.T) {
	def, err := defaultConfig().TestIdentities.PhoneRegexp()
	if err != nil {
		t.Fatalf("default pattern: %v", err)
	}
	for number, want := range map[string]bool{
		"+14155550123": true, "+13125550142": true, "+12125550100": true, "+12125550199": true,
		"+14155550200": false, "+14155550099": false, "+441415550123": false, "+141555501234": false,
		"x+14155550123": false, "+14155550123\n": false, "": false,
	} {
		if got := def.MatchString(number); got != want {
			t.Errorf("default pattern matches %q = %v; want %v", number, got, want)
		}
	}
	// A pattern without anchors still matches whole numbers only.
	re, err := TestIdentities{PhonePattern: `555`}.PhoneRegexp()
	if err != nil || re.MatchString("+14155550123") || !re.MatchString("555") {
		t.Errorf("unanchored pattern: %v, %v; want a whole-number match", re, err)
	}
	// An alternation is anchored as a whole, not its first and last branch.
	re, err = TestIdentities{PhonePattern: `\+1555|\+1666`}.PhoneRegexp()
	if err != nil || re.MatchString("+15550000") || !re.MatchString("+1666") {
		t.Errorf("alternation: %v, %v; want each branch matched whole", re, err)
	}
	for _, off := range []string{"off", "OFF", " off "} {
		if re, err := (TestIdentities{PhonePattern: off}).PhoneRegexp(); re != nil || err != nil {
			t.Errorf("PhoneRegexp(%q) = %v, %v; want nil, nil", off, re, err)
		}
	}
}
