// Package config loads Gatehouse's settings from defaults, an optional YAML
// file, GATEHOUSE_* environment variables and command-line flags, in that
// order, and validates them.
//
// One table (see Settings) drives defaults, environment variable names, flag
// names, validation and the generated documentation, so they cannot drift
// apart. The package reads nothing from the process environment itself: the
// caller passes the environment in.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// Config holds every setting of a Gatehouse server.
type Config struct {
	// Dev turns on development mode: SQLite in the data directory, a generated
	// master key, outbox mail and the /dev/outbox route.
	Dev bool
	// DevEmailAuthType is how development mode's Demo app signs in by
	// e-mail (magic or otp); "" leaves the app as it is.
	DevEmailAuthType string
	// DataDir is the directory for local state.
	DataDir string
	HTTP    HTTP
	Metrics Metrics
	// BaseURL is the public URL of this server without a trailing slash, used
	// in links and as the default token issuer.
	BaseURL string
	// BaseURLFrom says where BaseURL came from: "base_url" when it was set,
	// "http.addr" when Load derived it from the listen address.
	BaseURLFrom string
	Database    Database
	// MasterKey is the base64-encoded 32-byte master key. It is secret.
	MasterKey string
	// MasterKeyFile is the path of a file holding the master key.
	MasterKeyFile string
	Log           Log
	Runtime       Runtime
	Mail          Mail
	SMTP          SMTP
	Tokens        Tokens
	RateLimit     RateLimit
	SMS           SMS
	Postmark      Postmark
	Twilio        Twilio
	// SMSGuard holds the SMS fraud guards (sms.allowed_countries and the
	// other sms.* limits).
	SMSGuard SMSGuard
	Webhooks Webhooks
	Messages Messages
	// TestIdentities says which identifiers are test identities on the apps
	// that accept them, and their code.
	TestIdentities TestIdentities
	M2M            M2M
}

// TestIdentities holds the patterns of test identities and their fixed
// code. "off" in a pattern means no identifier of that kind is one.
type TestIdentities struct {
	// EmailSuffix ends the local part of a test e-mail address (compared
	// without regard to case).
	EmailSuffix string
	// PhonePattern is a regular expression that a whole E.164 number must
	// match.
	PhonePattern string
	// Code is the one-time code every code to a test identity is.
	Code string
}

// Off disables one pattern of test identities.
const Off = "off"

// PhoneRegexp compiles test_identities.phone_pattern to match whole numbers
// only: a pattern written without anchors cannot match part of a real
// number. It returns nil for "off".
func (t TestIdentities) PhoneRegexp() (*regexp.Regexp, error) {
	if strings.EqualFold(strings.TrimSpace(t.PhonePattern), Off) {
		return nil, nil
	}
	// Compiled alone first, so that an error quotes what the operator wrote.
	if _, err := regexp.Compile(t.PhonePattern); err != nil {
		return nil, fmt.Errorf("invalid regular expression: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	return regexp.Compile(`^(?:` + t.PhonePattern + `)$`)
}

// M2M holds the machine-to-machine token settings.
type M2M struct {
	// TokenTTL is the lifetime of an M2M access token (and its session).
	TokenTTL time.Duration
}

// Webhooks holds the delivery settings.
type Webhooks struct {
	// AllowPrivateTargets is "", "true" or "false"; empty means true in
	// development mode and false otherwise.
	AllowPrivateTargets string
	RetryBase           time.Duration
	Workers             int
	RescueAfter         time.Duration
	// WorkersPerApp is webhooks.workers_per_app; 0 means a quarter of
	// Workers (AppShare resolves it).
	WorkersPerApp      int
	MaxEndpointsPerApp int
}

// AppShare resolves webhooks.workers_per_app: the most deliveries of one app
// in flight per server, never more than webhooks.workers.
func (w Webhooks) AppShare() int {
	if w.WorkersPerApp > 0 {
		return min(w.WorkersPerApp, max(w.Workers, 1))
	}
	return max(1, w.Workers/4)
}

// PrivateTargetsAllowed resolves webhooks.allow_private_targets.
func (c Config) PrivateTargetsAllowed() bool {
	if c.Webhooks.AllowPrivateTargets == "" {
		return c.Dev
	}
	return c.Webhooks.AllowPrivateTargets == "true"
}

// Messages holds the send queue's settings: how codes, links, invitations
// and notices are retried while a provider is failing.
type Messages struct {
	// MaxAttempts is how many times one message is tried in all.
	MaxAttempts int
	// RetryBase is the wait before the first retry; retry n waits
	// RetryBase x 2^(n-1), at most RetryMax.
	RetryBase time.Duration
	RetryMax  time.Duration
	// Workers is how many messages one server sends at once.
	Workers int
	// PollInterval bounds the send queue sweep's sleep (messages.poll_interval).
	PollInterval time.Duration
}

// SMS holds the SMS provider settings.
type SMS struct {
	Provider string
	HTTPURL  string
	Token    string
	From     string
}

// Postmark holds the settings of the Postmark mail provider.
type Postmark struct {
	ServerToken   string
	MessageStream string
}

// Twilio holds the settings of the Twilio SMS provider.
type Twilio struct {
	AccountSID          string
	AuthToken           string
	MessagingServiceSID string
}

// SMSGuard holds the SMS fraud guards (security R-RL-3).
type SMSGuard struct {
	// AllowedCountries are the ISO 3166-1 alpha-2 codes SMS may go to on
	// apps that set none; ["*"] is every country.
	AllowedCountries []string
	AllowVoIP        bool
	// PerNumberBurst SMS to one number within PerNumberWindow, then waits
	// from one minute doubling up to PerNumberMaxWait; they start over after
	// PerNumberQuiet without an SMS. A burst of 0 turns the waits off.
	PerNumberBurst   int
	PerNumberWindow  time.Duration
	PerNumberMaxWait time.Duration
	PerNumberQuiet   time.Duration
	// DailyCap caps an app's SMS per UTC day (apps may set their own);
	// PrefixHourlyCap an app's SMS to one number prefix per hour. 0: no cap.
	DailyCap        int
	PrefixHourlyCap int
}

// HTTP holds the settings of the HTTP server.
type HTTP struct {
	Addr              string
	TrustedProxies    []string
	ShutdownTimeout   time.Duration
	ReadHeaderTimeout time.Duration
	// RequestTimeout is the deadline of one request (http.request_timeout).
	RequestTimeout time.Duration
}

// Metrics holds the settings of the metrics listener.
type Metrics struct {
	// Addr is where /metrics is served on its own; empty serves it with the
	// API in development mode or with Token, else nowhere.
	Addr string
	// Token, when set, is the bearer token /metrics requires. It is secret.
	Token string
}

// MetricsOnAPI reports whether the API listener serves /metrics: only
// without a listener of its own, and outside development mode only
// behind metrics.token, so a production server never shows its metrics
// to the internet by default.
func (c Config) MetricsOnAPI() bool {
	return c.Metrics.Addr == "" && (c.Dev || c.Metrics.Token != "")
}

// Database holds the database settings.
type Database struct {
	// URL selects the database; empty means SQLite in the data directory.
	URL      string
	MaxConns int
	// The PostgreSQL session bounds (database.statement_timeout,
	// database.lock_timeout, which is also SQLite's busy timeout, and
	// database.idle_in_transaction_session_timeout).
	StatementTimeout         time.Duration
	LockTimeout              time.Duration
	IdleInTransactionTimeout time.Duration
}

// Log holds the logging settings.
type Log struct {
	Level  string
	Format string
	// Requests logs one line per HTTP request.
	Requests bool
}

// Runtime holds the settings of the Go runtime.
type Runtime struct {
	// GCHeadroomMB is the heap growth (MiB) allowed between collections
	// while the live heap is smaller (gctune); 0 leaves GOGC alone.
	GCHeadroomMB int
}

// Mail holds the settings for outgoing e-mail.
type Mail struct {
	// Provider is "smtp", "outbox", "log" or "" (outbox in development mode,
	// log otherwise).
	Provider string
	From     string
}

// SMTP holds the settings of the SMTP mail provider.
type SMTP struct {
	Host       string
	Port       int
	Username   string
	Password   string
	TLS        string
	AuthMethod string
	Timeout    time.Duration
}

// Tokens holds the settings for issued tokens.
type Tokens struct {
	Issuer string
	// SessionLifetime is a session's absolute lifetime.
	SessionLifetime time.Duration
	// RefreshGrace is how long a rotated refresh token still returns its successor.
	RefreshGrace time.Duration
	// AccessTokenAlg signs the access tokens of apps that do not choose.
	AccessTokenAlg string
}

// RateLimit holds the sign-in rate limits. Rules are "N/PERIOD" (5/10m) or "off".
type RateLimit struct {
	Backend           string
	SendPerIdentifier string
	SendPerIP         string
	VerifyPerIP       string
	LookupPerIP       string
	ChallengePerIP    string
	ChallengePerUser  string
	UnknownPerIP      string
	// ShortLinkPerIP bounds short links opened per client IP; the M2M
	// rules bound failed client authentications per client id and per IP.
	ShortLinkPerIP       string
	M2MFailuresPerClient string
	M2MFailuresPerIP     string
	CodeFailuresPerHour  int
	CodeLockAfter        int
	PollInterval         time.Duration
	// SendMinTime is the shortest time a request that sends a code or a
	// magic link takes to answer (ratelimit.send_min_time).
	SendMinTime time.Duration
}

// SettingError reports an invalid value of one setting.
type SettingError struct {
	Key    string // koanf key, e.g. "database.url"
	Env    string // environment variable, e.g. "GATEHOUSE_DATABASE_URL"
	Reason string // what is wrong; never contains a secret value
}

// Error returns a one-line description naming the setting and its
// environment variable.
func (e *SettingError) Error() string {
	if e.Env == "" {
		return fmt.Sprintf("invalid setting %s: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("invalid setting %s (%s): %s", e.Key, e.Env, e.Reason)
}

// envPrefix starts the name of every environment variable the package reads.
const envPrefix = "GATEHOUSE_"

// envName derives a setting's environment variable from its key.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Load builds the Config from the defaults, then the YAML file configFile
// ("" for none), then the GATEHOUSE_* variables in environ (os.Environ
// shape), then the flags in flags that the user actually set (flags may be
// nil). It fills derived defaults (base_url, tokens.issuer) and returns the
// result of Validate.
//
// Environment variables with an empty value are ignored, as are GATEHOUSE_*
// variables that name no setting (UnknownVariables lists those, for the
// caller to warn about; an unknown key in the file is an error). An invalid value yields a *SettingError; a
// missing or malformed file yields an error naming the file.
func Load(flags *pflag.FlagSet, configFile string, environ []string) (Config, error) {
	t := table()
	byKey := make(map[string]setting, len(t))
	byEnv := make(map[string]setting, len(t))
	byFlag := make(map[string]setting, len(t))
	values := make(map[string]string, len(t))
	for _, s := range t {
		byKey[s.Key] = s
		byEnv[s.Env] = s
		if s.Flag != "" {
			byFlag[s.Flag] = s
		}
		values[s.Key] = s.Default
	}

	if configFile != "" {
		if err := loadFile(configFile, byKey, values); err != nil {
			return Config{}, err
		}
	}

	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || val == "" {
			continue
		}
		if s, ok := byEnv[name]; ok {
			values[s.Key] = val
		}
	}

	if flags != nil {
		// Visit sees only the flags set on the command line, so a flag's
		// default never hides a value from the file or the environment.
		flags.Visit(func(f *pflag.Flag) {
			if s, ok := byFlag[f.Name]; ok {
				values[s.Key] = flagText(f)
			}
		})
	}

	var c Config
	for _, s := range t {
		if err := s.bind.parse(&c, values[s.Key]); err != nil {
			return Config{}, s.invalid(err.Error())
		}
	}

	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	c.BaseURLFrom = "base_url"
	if c.BaseURL == "" {
		c.BaseURL, c.BaseURLFrom = defaultBaseURL(c.HTTP.Addr), "http.addr"
	}
	if c.Tokens.Issuer == "" {
		c.Tokens.Issuer = c.BaseURL
	}

	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// loadFile reads the YAML file at path into values. Unknown keys are an
// error so that a typo does not silently fall back to a default.
func loadFile(path string, byKey map[string]setting, values map[string]string) error {
	k := koanf.New(".")
	if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("config file %q: %w", path, fs.ErrNotExist)
		}
		return fmt.Errorf("config file %q: %w", path, err)
	}
	all := k.All()
	keys := make([]string, 0, len(all))
	for key := range all {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		v := all[key]
		if v == nil {
			// An empty YAML value ("url:") leaves the default in place.
			continue
		}
		if m, ok := v.(map[string]any); ok && len(m) == 0 {
			continue
		}
		s, ok := byKey[key]
		if !ok {
			return fmt.Errorf("config file %q: unknown setting %q", path, key)
		}
		text, err := yamlText(v, s.bind.kind == kindList)
		if err != nil {
			return fmt.Errorf("config file %q: %w", path, s.invalid(err.Error()))
		}
		values[key] = text
	}
	return nil
}

// yamlText turns a decoded YAML value into the text form that env and flags
// use, so that every source goes through the same parser.
func yamlText(v any, list bool) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case []any:
		if !list {
			return "", errors.New("expected a single value, got a list")
		}
		parts := make([]string, 0, len(v))
		for _, e := range v {
			text, err := yamlText(e, false)
			if err != nil {
				return "", err
			}
			parts = append(parts, text)
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		return "", errors.New("expected a value, got a mapping")
	default:
		return fmt.Sprint(v), nil
	}
}

// flagText returns a flag's value as text, joining list flags with commas.
func flagText(f *pflag.Flag) string {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return strings.Join(sv.GetSlice(), ",")
	}
	return f.Value.String()
}

// defaultBaseURL derives base_url from the listen address. An empty or
// unspecified host becomes localhost, because "http://:8080" is no usable
// link.
func defaultBaseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if host == "" {
		host = "localhost"
	} else if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// AddFlags registers on fs every setting that has a flag, with its default
// and help text. It does not register --config; the caller owns that flag
// and passes its value to Load.
func AddFlags(fs *pflag.FlagSet) {
	for _, s := range table() {
		if s.Flag == "" {
			continue
		}
		usage := fmt.Sprintf("%s (env %s)", s.Help, s.Env)
		// The tests check that every default parses, so an error here could
		// only come from a broken table; the zero value is then used.
		switch s.bind.kind {
		case kindBool:
			v, _ := parseBool(s.Default)
			fs.Bool(s.Flag, v, usage)
		case kindInt:
			v, _ := parseInt(s.Default)
			fs.Int(s.Flag, v, usage)
		case kindDuration:
			v, _ := parseDuration(s.Default)
			fs.Duration(s.Flag, v, usage)
		default:
			fs.String(s.Flag, s.Default, usage)
		}
	}
}

// DatabaseKind returns "sqlite" or "postgres" and the DSN or file path to
// open. An empty database.url means SQLite at DATA_DIR/gatehouse.db;
// "sqlite:PATH" and "sqlite://PATH" give PATH; a "file:" URI is returned
// whole because SQLite understands it. It returns "" for both when the URL
// has an unsupported scheme, which Validate rejects.
func (c Config) DatabaseKind() (kind, target string) {
	u := c.Database.URL
	if u == "" {
		return "sqlite", filepath.Join(c.DataDir, "gatehouse.db")
	}
	scheme, rest, _ := strings.Cut(u, ":")
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		return "postgres", u
	case "sqlite":
		if p, ok := strings.CutPrefix(rest, "//"); ok {
			return "sqlite", p
		}
		return "sqlite", rest
	case "file":
		return "sqlite", u
	}
	return "", ""
}
