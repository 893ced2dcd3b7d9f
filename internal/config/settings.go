package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// Setting describes one configuration setting.
type Setting struct {
	Key     string // koanf key, dotted: "database.url"
	Env     string // environment variable: "GATEHOUSE_" + upper(key with "." -> "_")
	Flag    string // flag name without dashes, "" if the setting has no flag
	Default string // default as text, "" if none
	Help    string // one line
	Secret  bool   // never printed with its value
}

// tokenChars are the characters of a bearer token (RFC 6750 b64token).
const tokenChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/="

// Settings returns every setting in documentation order.
func Settings() []Setting {
	t := table()
	out := make([]Setting, len(t))
	for i, s := range t {
		out[i] = s.Setting
	}
	return out
}

// kind is the type of a setting's value, used to pick a typed flag.
type kind int

const (
	kindString kind = iota
	kindBool
	kindInt
	kindDuration
	kindList
)

// binder parses a setting's text into its Config field.
type binder struct {
	kind  kind
	parse func(c *Config, text string) error
}

// setting is one row of the table: the public description plus how to parse
// and check the value.
type setting struct {
	Setting
	bind binder
	// check returns why the loaded value is invalid, or nil. A nil check
	// means every parsed value is acceptable.
	check func(c Config) error
}

// invalid builds the SettingError for s.
func (s setting) invalid(reason string) *SettingError {
	return &SettingError{Key: s.Key, Env: s.Env, Reason: reason}
}

// table is the single list of settings. It is a function, not a variable,
// so that the package has no global state.
func table() []setting {
	t := []setting{
		{
			Setting: Setting{Key: "dev", Flag: "dev", Default: "false",
				Help: "Development mode: SQLite in the data directory, a generated master key, outbox mail and the /dev/outbox page. Never use it in production."},
			bind: boolField(func(c *Config) *bool { return &c.Dev }),
		},
		{
			Setting: Setting{Key: "dev_email_auth_type", Flag: "dev-email-auth-type",
				Help: "Development mode only: how the Demo app signs in by e-mail, magic (a link) or otp (a 6-digit code), set on every start. Empty leaves the app as it is (magic when first made)."},
			bind:  enumField(func(c *Config) *string { return &c.DevEmailAuthType }),
			check: func(c Config) error { return oneOf(c.DevEmailAuthType, "", "magic", "otp") },
		},
		{
			Setting: Setting{Key: "data_dir", Flag: "data-dir", Default: "./gatehouse-data",
				Help: "Directory for local state: the default SQLite database and, in development mode, the generated master key."},
			bind:  stringField(func(c *Config) *string { return &c.DataDir }),
			check: func(c Config) error { return notEmpty(c.DataDir) },
		},
		{
			Setting: Setting{Key: "http.addr", Flag: "addr", Default: "127.0.0.1:8080",
				Help: "Address (host:port) the HTTP server listens on."},
			bind:  stringField(func(c *Config) *string { return &c.HTTP.Addr }),
			check: func(c Config) error { return checkHostPort(c.HTTP.Addr) },
		},
		{
			Setting: Setting{Key: "http.trusted_proxies", Flag: "trusted-proxies",
				Help: "Comma-separated CIDRs of reverse proxies whose X-Forwarded-For header is trusted for the client IP. Empty trusts no proxy."},
			bind:  listField(func(c *Config) *[]string { return &c.HTTP.TrustedProxies }),
			check: func(c Config) error { return checkCIDRs(c.HTTP.TrustedProxies) },
		},
		{
			Setting: Setting{Key: "http.shutdown_timeout", Default: "15s",
				Help: "How long a graceful shutdown waits for requests in flight."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.HTTP.ShutdownTimeout }),
			check: func(c Config) error { return positive(c.HTTP.ShutdownTimeout) },
		},
		{
			Setting: Setting{Key: "http.read_header_timeout", Default: "10s",
				Help: "Longest time allowed to read a request's headers."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.HTTP.ReadHeaderTimeout }),
			check: func(c Config) error { return positive(c.HTTP.ReadHeaderTimeout) },
		},
		{
			Setting: Setting{Key: "http.request_timeout", Default: "15s",
				Help: "Longest time one request is worked on; then what it waits for is cancelled and it answers 503 timeout with Retry-After (nothing half-written). The development outbox's wait_ms and a provider test message get their own wait on top. 10ms to 10m."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.HTTP.RequestTimeout }),
			check: func(c Config) error { return durationRange(c.HTTP.RequestTimeout, 10*time.Millisecond, 10*time.Minute) },
		},
		{
			Setting: Setting{Key: "metrics.addr", Flag: "metrics-addr",
				Help: "Address (host:port) of a separate listener serving /metrics alone; keep it off the public network. Empty: /metrics is served on the API listener only in development mode or with metrics.token, else nowhere."},
			bind: stringField(func(c *Config) *string { return &c.Metrics.Addr }),
			check: func(c Config) error {
				if c.Metrics.Addr == "" {
					return nil
				}
				if err := checkHostPort(c.Metrics.Addr); err != nil {
					return err
				}
				if c.Metrics.Addr == c.HTTP.Addr && !strings.HasSuffix(c.HTTP.Addr, ":0") {
					return errors.New("must differ from http.addr")
				}
				return nil
			},
		},
		{
			Setting: Setting{Key: "metrics.token", Secret: true,
				Help: "Bearer token that /metrics then requires (Authorization: Bearer TOKEN, else 401) wherever it is served; with metrics.addr empty it also serves /metrics on the API listener outside development mode. At least 32 characters of A-Z, a-z, 0-9 and -._~+/=."},
			bind: stringField(func(c *Config) *string { return &c.Metrics.Token }),
			check: func(c Config) error {
				if c.Metrics.Token == "" {
					return nil
				}
				if len(c.Metrics.Token) < 32 {
					return errors.New("must be at least 32 characters")
				}
				for _, r := range c.Metrics.Token {
					if !strings.ContainsRune(tokenChars, r) {
						return errors.New("may hold only A-Z, a-z, 0-9 and -._~+/=")
					}
				}
				return nil
			},
		},
		{
			Setting: Setting{Key: "base_url", Flag: "base-url",
				Help: "Public URL of this server, used in links and as the token issuer. Default: http:// and http.addr, with localhost for an empty or unspecified host."},
			bind:  stringField(func(c *Config) *string { return &c.BaseURL }),
			check: func(c Config) error { return checkBaseURL(c.BaseURL, true) },
		},
		{
			Setting: Setting{Key: "database.url", Flag: "database-url",
				Help: "Database: postgres://... or postgresql://... for PostgreSQL; sqlite:PATH, sqlite://PATH or file:PATH for SQLite. Empty: SQLite at DATA_DIR/gatehouse.db (outside --dev, serve warns and names the file by its absolute path)."},
			bind:  stringField(func(c *Config) *string { return &c.Database.URL }),
			check: func(c Config) error { return checkDatabaseURL(c.Database.URL) },
		},
		{
			Setting: Setting{Key: "database.max_conns", Default: "16",
				Help: "Maximum database connections: the PostgreSQL pool size, or the number of SQLite readers. 1 to 1000."},
			bind:  intField(func(c *Config) *int { return &c.Database.MaxConns }),
			check: func(c Config) error { return inRange(c.Database.MaxConns, 1, 1000) },
		},
		{
			Setting: Setting{Key: "database.statement_timeout", Default: "10s",
				Help: "PostgreSQL: longest one statement runs (statement_timeout of every session); then it is cancelled and the request answers 503 timeout. Migrations are exempt. 1ms to 1h."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.Database.StatementTimeout }),
			check: func(c Config) error { return durationRange(c.Database.StatementTimeout, time.Millisecond, time.Hour) },
		},
		{
			Setting: Setting{Key: "database.lock_timeout", Default: "5s",
				Help: "Longest a statement waits for a lock another transaction holds, then the request answers 503 timeout: PostgreSQL's lock_timeout (migrations are exempt), SQLite's busy_timeout (a lock held by another process, such as a command). 1ms to 1h."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.Database.LockTimeout }),
			check: func(c Config) error { return durationRange(c.Database.LockTimeout, time.Millisecond, time.Hour) },
		},
		{
			Setting: Setting{Key: "database.idle_in_transaction_session_timeout", Default: "30s",
				Help: "PostgreSQL: a session that keeps a transaction open this long without running a statement is ended and its locks released (idle_in_transaction_session_timeout). 1ms to 1h."},
			bind: durationField(func(c *Config) *time.Duration { return &c.Database.IdleInTransactionTimeout }),
			check: func(c Config) error {
				return durationRange(c.Database.IdleInTransactionTimeout, time.Millisecond, time.Hour)
			},
		},
		{
			Setting: Setting{Key: "master_key", Secret: true,
				Help: "Master key that encrypts stored secrets: 32 random bytes in base64 (standard or URL alphabet, padding optional). Prefer master_key_file."},
			bind: stringField(func(c *Config) *string { return &c.MasterKey }),
			check: func(c Config) error {
				if c.MasterKey == "" {
					return nil
				}
				_, err := DecodeMasterKey(c.MasterKey)
				return err
			},
		},
		{
			Setting: Setting{Key: "master_key_file", Flag: "master-key-file",
				Help: "Path of a file holding the master key. Without a key, development mode uses (or generates) DATA_DIR/master.key; outside development mode a key there is refused unless named here."},
			bind: stringField(func(c *Config) *string { return &c.MasterKeyFile }),
			check: func(c Config) error {
				if c.MasterKey != "" && c.MasterKeyFile != "" {
					return errors.New("set only one of master_key and master_key_file")
				}
				return nil
			},
		},
		{
			Setting: Setting{Key: "log.level", Flag: "log-level", Default: "info",
				Help: "Log level: debug, info, warn or error."},
			bind:  enumField(func(c *Config) *string { return &c.Log.Level }),
			check: func(c Config) error { return oneOf(c.Log.Level, "debug", "info", "warn", "error") },
		},
		{
			Setting: Setting{Key: "log.format", Flag: "log-format", Default: "json",
				Help: "Log format: json or text."},
			bind:  enumField(func(c *Config) *string { return &c.Log.Format }),
			check: func(c Config) error { return oneOf(c.Log.Format, "json", "text") },
		},
		{
			Setting: Setting{Key: "log.requests", Default: "false",
				Help: "Log one line per HTTP request (INFO): method, route pattern (never the path, which may hold a token), status, duration, bytes, client IP and request id; never a query string, header or body. Off: no line per request; a request that fails with a 5xx is logged either way, with its request id. /healthz and /metrics are never logged; /metrics counts every request either way."},
			bind: boolField(func(c *Config) *bool { return &c.Log.Requests }),
		},
		{
			Setting: Setting{Key: "runtime.gc_headroom_mb", Default: "64",
				Help: "Heap growth, in MiB, allowed between garbage collections while what the collector scans (live heap, goroutine stacks, globals) is smaller than this (then Go's default, GOGC=100, applies): fewer collections under load for at most this much more memory. 0 leaves the collector as Go sets it; so does setting the GOGC environment variable. GOMEMLIMIT still caps the heap. 0 to 65536."},
			bind:  intField(func(c *Config) *int { return &c.Runtime.GCHeadroomMB }),
			check: func(c Config) error { return inRange(c.Runtime.GCHeadroomMB, 0, 65536) },
		},
		{
			Setting: Setting{Key: "mail.provider",
				Help: "How e-mail is sent when an app has no provider of its own: smtp, postmark, outbox (kept for the /dev/outbox page) or log. Empty: outbox in development mode, log otherwise."},
			bind:  enumField(func(c *Config) *string { return &c.Mail.Provider }),
			check: func(c Config) error { return oneOf(c.Mail.Provider, "", "smtp", "postmark", "outbox", "log") },
		},
		{
			Setting: Setting{Key: "postmark.server_token", Secret: true,
				Help: "Server API token of the Postmark mail provider (X-Postmark-Server-Token). Required when mail.provider is postmark; mail.from must be a sender Postmark has confirmed."},
			bind: stringField(func(c *Config) *string { return &c.Postmark.ServerToken }),
			check: func(c Config) error {
				if c.Mail.Provider == "postmark" && c.Postmark.ServerToken == "" {
					return errors.New("is required when mail.provider is postmark")
				}
				return nil
			},
		},
		{
			Setting: Setting{Key: "postmark.message_stream", Default: "outbound",
				Help: "Postmark message stream for sign-in mail (a transactional stream)."},
			bind: stringField(func(c *Config) *string { return &c.Postmark.MessageStream }),
		},
		{
			Setting: Setting{Key: "mail.from", Default: "Gatehouse <no-reply@localhost>",
				Help: "Sender address of outgoing e-mail."},
			bind:  stringField(func(c *Config) *string { return &c.Mail.From }),
			check: func(c Config) error { return checkMailAddress(c.Mail.From) },
		},
		{
			Setting: Setting{Key: "smtp.host",
				Help: "SMTP server host name. Required when mail.provider is smtp."},
			bind: stringField(func(c *Config) *string { return &c.SMTP.Host }),
			check: func(c Config) error {
				if c.Mail.Provider == "smtp" && c.SMTP.Host == "" {
					return errors.New("required when mail.provider is smtp")
				}
				return nil
			},
		},
		{
			Setting: Setting{Key: "smtp.port", Default: "587",
				Help: "SMTP server port."},
			bind:  intField(func(c *Config) *int { return &c.SMTP.Port }),
			check: func(c Config) error { return inRange(c.SMTP.Port, 1, 65535) },
		},
		{
			Setting: Setting{Key: "smtp.username",
				Help: "SMTP user name."},
			bind: stringField(func(c *Config) *string { return &c.SMTP.Username }),
		},
		{
			Setting: Setting{Key: "smtp.password", Secret: true,
				Help: "SMTP password."},
			bind: stringField(func(c *Config) *string { return &c.SMTP.Password }),
		},
		{
			Setting: Setting{Key: "smtp.tls", Default: "starttls-required",
				Help: "SMTP transport security: none, starttls (when offered), starttls-required or tls (implicit TLS, usually port 465)."},
			bind:  enumField(func(c *Config) *string { return &c.SMTP.TLS }),
			check: func(c Config) error { return oneOf(c.SMTP.TLS, "none", "starttls", "starttls-required", "tls") },
		},
		{
			Setting: Setting{Key: "smtp.auth_method",
				Help: "SMTP authentication: plain, login or cram-md5. Empty lets the mail client choose."},
			bind:  enumField(func(c *Config) *string { return &c.SMTP.AuthMethod }),
			check: func(c Config) error { return oneOf(c.SMTP.AuthMethod, "", "plain", "login", "cram-md5") },
		},
		{
			Setting: Setting{Key: "smtp.timeout", Default: "10s",
				Help: "Timeout for connecting to and talking with the SMTP server."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.SMTP.Timeout }),
			check: func(c Config) error { return positive(c.SMTP.Timeout) },
		},
		{
			Setting: Setting{Key: "tokens.issuer",
				Help: "Issuer (iss claim) of tokens. Default: base_url."},
			bind:  stringField(func(c *Config) *string { return &c.Tokens.Issuer }),
			check: func(c Config) error { return checkBaseURL(c.Tokens.Issuer, false) },
		},
		{
			Setting: Setting{Key: "sms.provider",
				Help: "How SMS are sent when an app has no provider of its own: twilio, http (a JSON POST per message to sms.http_url), outbox (kept for /dev/outbox) or log (not sent; a log line says so). Empty: outbox in development mode, log otherwise."},
			bind:  enumField(func(c *Config) *string { return &c.SMS.Provider }),
			check: func(c Config) error { return oneOf(c.SMS.Provider, "", "outbox", "http", "twilio", "log") },
		},
		{
			Setting: Setting{Key: "twilio.account_sid",
				Help: "Twilio account SID (AC…). Required when sms.provider is twilio."},
			bind: stringField(func(c *Config) *string { return &c.Twilio.AccountSID }),
			check: func(c Config) error {
				if c.SMS.Provider == "twilio" && (c.Twilio.AccountSID == "" || c.Twilio.AuthToken == "") {
					return errors.New("twilio.account_sid and twilio.auth_token are required when sms.provider is twilio")
				}
				return nil
			},
		},
		{
			Setting: Setting{Key: "twilio.auth_token", Secret: true,
				Help: "Twilio auth token of the account."},
			bind: stringField(func(c *Config) *string { return &c.Twilio.AuthToken }),
		},
		{
			Setting: Setting{Key: "twilio.messaging_service_sid",
				Help: "Twilio Messaging Service SID (MG…) to send from; else sms.from must be a Twilio number or sender id."},
			bind: stringField(func(c *Config) *string { return &c.Twilio.MessagingServiceSID }),
			check: func(c Config) error {
				if c.SMS.Provider == "twilio" && c.Twilio.MessagingServiceSID == "" && c.SMS.From == "" {
					return errors.New("twilio needs sms.from or twilio.messaging_service_sid")
				}
				return nil
			},
		},
		{
			Setting: Setting{Key: "sms.http_url",
				Help: `Endpoint of the HTTP SMS provider: each message is POSTed as {"to","text","from"} JSON; any 2xx is success. Required when sms.provider is http.`},
			bind: stringField(func(c *Config) *string { return &c.SMS.HTTPURL }),
			check: func(c Config) error {
				if c.SMS.Provider == "http" && c.SMS.HTTPURL == "" {
					return errors.New("is required when sms.provider is http")
				}
				if c.SMS.HTTPURL != "" {
					return checkBaseURL(c.SMS.HTTPURL, false)
				}
				return nil
			},
		},
		{
			Setting: Setting{Key: "sms.token", Secret: true,
				Help: "Bearer token sent to the HTTP SMS provider."},
			bind: stringField(func(c *Config) *string { return &c.SMS.Token }),
		},
		{
			Setting: Setting{Key: "sms.from",
				Help: "Sender id passed to the HTTP SMS provider as from."},
			bind: stringField(func(c *Config) *string { return &c.SMS.From }),
		},
		{
			Setting: Setting{Key: "sms.allowed_countries", Default: "US,CA,GB,IE,DE,FR,ES,IT,NL,BE,AT,PT,SE,DK,FI,NO,PL,AU,NZ",
				Help: "Countries SMS may be sent to (ISO 3166-1 alpha-2 codes, comma-separated, by the number's region in the phone-number metadata: +1 876 is JM, not US) on apps that do not set sms_allowed_countries; * for every country. Other numbers are refused with 400 phone_country_not_allowed before anything is stored or sent."},
			bind:  listField(func(c *Config) *[]string { return &c.SMSGuard.AllowedCountries }),
			check: func(c Config) error { return checkCountries(c.SMSGuard.AllowedCountries) },
		},
		{
			Setting: Setting{Key: "sms.allow_voip", Default: "false",
				Help: "Send SMS to numbers the phone-number metadata calls VoIP. Mobile numbers (and North American numbers, which do not tell fixed from mobile) are always allowed; fixed lines, premium-rate, toll-free, shared-cost, personal, pager, UAN and voicemail numbers never (400 phone_type_not_allowed)."},
			bind: boolField(func(c *Config) *bool { return &c.SMSGuard.AllowVoIP }),
		},
		{
			Setting: Setting{Key: "sms.per_number_burst", Default: "3",
				Help: "SMS one number gets from one app within sms.per_number_window before it must wait (429 rate_limited with Retry-After): until the window ends, then 1 minute, doubling with each SMS up to sms.per_number_max_wait. 0 turns the waits off. 0 to 100."},
			bind:  intField(func(c *Config) *int { return &c.SMSGuard.PerNumberBurst }),
			check: func(c Config) error { return inRange(c.SMSGuard.PerNumberBurst, 0, 100) },
		},
		{
			Setting: Setting{Key: "sms.per_number_window", Default: "10m",
				Help: "The window of sms.per_number_burst. 1m to 24h."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.SMSGuard.PerNumberWindow }),
			check: func(c Config) error { return durationRange(c.SMSGuard.PerNumberWindow, time.Minute, 24*time.Hour) },
		},
		{
			Setting: Setting{Key: "sms.per_number_max_wait", Default: "32m",
				Help: "The longest wait between two SMS to one number once the burst is spent (each wait is shortened by up to a tenth at random). 1m to 24h."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.SMSGuard.PerNumberMaxWait }),
			check: func(c Config) error { return durationRange(c.SMSGuard.PerNumberMaxWait, time.Minute, 24*time.Hour) },
		},
		{
			Setting: Setting{Key: "sms.per_number_quiet", Default: "1h",
				Help: "Time without an SMS after which a number's waits start over with a fresh burst. At least sms.per_number_max_wait, at most 7 days."},
			bind: durationField(func(c *Config) *time.Duration { return &c.SMSGuard.PerNumberQuiet }),
			check: func(c Config) error {
				if c.SMSGuard.PerNumberQuiet < c.SMSGuard.PerNumberMaxWait {
					return errors.New("must be at least sms.per_number_max_wait")
				}
				return durationRange(c.SMSGuard.PerNumberQuiet, time.Minute, 7*24*time.Hour)
			},
		},
		{
			Setting: Setting{Key: "sms.daily_cap", Default: "1000",
				Help: "SMS one app may send per UTC day, on apps that do not set sms_daily_cap; more are refused with 429 sms_daily_cap_reached, and the first refusal of the day logs a warning and emits verification.sms.delivery_failed. 0: no cap. 0 to 10000000."},
			bind:  intField(func(c *Config) *int { return &c.SMSGuard.DailyCap }),
			check: func(c Config) error { return inRange(c.SMSGuard.DailyCap, 0, 10_000_000) },
		},
		{
			Setting: Setting{Key: "sms.prefix_hourly_cap", Default: "30",
				Help: "SMS one app may send per clock hour to one number prefix (the country code and the national number without its last four digits: a block of 10,000 numbers); more are refused with 429 sms_prefix_cap_reached, and the first refusal of the hour logs a warning and emits verification.sms.delivery_failed. 0: no cap. 0 to 1000000."},
			bind:  intField(func(c *Config) *int { return &c.SMSGuard.PrefixHourlyCap }),
			check: func(c Config) error { return inRange(c.SMSGuard.PrefixHourlyCap, 0, 1_000_000) },
		},
		{
			Setting: Setting{Key: "webhooks.allow_private_targets",
				Help: "Allow webhook URLs with http:// and private or loopback addresses: true or false. Empty: true in development mode, false otherwise. For local development only."},
			bind:  enumField(func(c *Config) *string { return &c.Webhooks.AllowPrivateTargets }),
			check: func(c Config) error { return oneOf(c.Webhooks.AllowPrivateTargets, "", "true", "false") },
		},
		{
			Setting: Setting{Key: "webhooks.retry_base", Default: "5s",
				Help: "First retry delay of a failed webhook delivery; retry n waits retry_base x 4^(n-1) (at most 24h), +-20% jitter. 1ms to 1h."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.Webhooks.RetryBase }),
			check: func(c Config) error { return durationRange(c.Webhooks.RetryBase, time.Millisecond, time.Hour) },
		},
		{
			Setting: Setting{Key: "webhooks.workers", Default: "32",
				Help: "Concurrent webhook deliveries per server (each endpoint gets at most 4, each app at most webhooks.workers_per_app). 1 to 1000."},
			bind:  intField(func(c *Config) *int { return &c.Webhooks.Workers }),
			check: func(c Config) error { return inRange(c.Webhooks.Workers, 1, 1000) },
		},
		{
			Setting: Setting{Key: "webhooks.rescue_after", Default: "30s",
				Help: "How long after a server that stopped (crashed, was killed) began an attempt at a webhook delivery or message the work is tried again, by the restarted server or another replica (checked every 2s). Longer than any attempt (15s). 16s to 1h."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.Webhooks.RescueAfter }),
			check: func(c Config) error { return durationRange(c.Webhooks.RescueAfter, 16*time.Second, time.Hour) },
		},
		{
			Setting: Setting{Key: "webhooks.workers_per_app", Default: "0",
				Help: "Most webhook deliveries of one app in flight per server, so one slow tenant cannot hold every worker; more wait without spending a retry. 0: a quarter of webhooks.workers (at least 1). 0 to 1000."},
			bind:  intField(func(c *Config) *int { return &c.Webhooks.WorkersPerApp }),
			check: func(c Config) error { return inRange(c.Webhooks.WorkersPerApp, 0, 1000) },
		},
		{
			Setting: Setting{Key: "webhooks.max_endpoints_per_app", Default: "20",
				Help: "Most webhook endpoints one app may have; creating one more is refused (409). 1 to 1000."},
			bind:  intField(func(c *Config) *int { return &c.Webhooks.MaxEndpointsPerApp }),
			check: func(c Config) error { return inRange(c.Webhooks.MaxEndpointsPerApp, 1, 1000) },
		},
		{
			Setting: Setting{Key: "messages.max_attempts", Default: "10",
				Help: "How many times the send queue tries one message (code, link, invitation, notice) while its provider fails temporarily (timeouts, 429, 5xx); a permanent refusal is not retried. After the last, verification.{channel}.delivery_failed fires. 1 to 50."},
			bind:  intField(func(c *Config) *int { return &c.Messages.MaxAttempts }),
			check: func(c Config) error { return inRange(c.Messages.MaxAttempts, 1, 50) },
		},
		{
			Setting: Setting{Key: "messages.retry_base", Default: "2s",
				Help: "Wait before the first retry of a message; retry n waits retry_base x 2^(n-1), at most messages.retry_max, +-20% jitter, or longer when the provider asked (Retry-After). 1ms to 1h."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.Messages.RetryBase }),
			check: func(c Config) error { return durationRange(c.Messages.RetryBase, time.Millisecond, time.Hour) },
		},
		{
			Setting: Setting{Key: "messages.retry_max", Default: "1m",
				Help: "Longest wait between two tries of a message. At least messages.retry_base, at most 1h."},
			bind: durationField(func(c *Config) *time.Duration { return &c.Messages.RetryMax }),
			check: func(c Config) error {
				if c.Messages.RetryMax < c.Messages.RetryBase {
					return errors.New("must be at least messages.retry_base")
				}
				return durationRange(c.Messages.RetryMax, time.Millisecond, time.Hour)
			},
		},
		{
			Setting: Setting{Key: "messages.workers", Default: "16",
				Help: "Messages one server hands to providers at once; a message committed while all are busy waits for one (up to 10s, then its row's sweep sends it). 1 to 1000."},
			bind:  intField(func(c *Config) *int { return &c.Messages.Workers }),
			check: func(c Config) error { return inRange(c.Messages.Workers, 1, 1000) },
		},
		{
			Setting: Setting{Key: "messages.poll_interval", Default: "2s",
				Help: "The longest a server's sweep of the send queue sleeps: how late, at most, it notices a message that is due and that no process of its own is trying (a retry another replica scheduled, a message a stopped replica left). A new message never waits for it: the process that commits a message sends it right away. 10ms to 10s."},
			bind: durationField(func(c *Config) *time.Duration { return &c.Messages.PollInterval }),
			check: func(c Config) error {
				return durationRange(c.Messages.PollInterval, 10*time.Millisecond, 10*time.Second)
			},
		},
		{
			Setting: Setting{Key: "tokens.session_lifetime", Default: "720h",
				Help: "Absolute lifetime of a session, however often its refresh token is rotated. 1h to 8760h."},
			bind: durationField(func(c *Config) *time.Duration { return &c.Tokens.SessionLifetime }),
			check: func(c Config) error {
				return durationRange(c.Tokens.SessionLifetime, time.Hour, 8760*time.Hour)
			},
		},
		{
			Setting: Setting{Key: "tokens.refresh_grace", Default: "10s",
				Help: "How long a rotated refresh token still returns the same successor (client retries, racing tabs); reuse after it revokes the session. 0s to 10s: a thief replaying a stolen token inside it gets the successor too."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.Tokens.RefreshGrace }),
			check: func(c Config) error { return durationRange(c.Tokens.RefreshGrace, 0, 10*time.Second) },
		},
		{
			Setting: Setting{Key: "tokens.access_token_alg", Default: "ES256",
				Help: "Signs the access tokens of apps that keep the default (an app can choose its own): ES256 (fast to sign), RS256 (RSA-2048: what Scute's Python and Ruby server SDKs verify), or EdDSA (as cheap as ES256). API secrets are always ES256 (refresh tokens carry an HS256 MAC only the server reads). Keep ES256 or EdDSA unless a backend needs RS256: RS256 for Scute server SDK compatibility costs about 1 ms of CPU more per token issued (each sign-in, refresh and M2M grant makes one RSA signature, some 20 times an ES256 one; a refresh then costs about 3.5 times the server CPU) and nothing more on reads (current_user, the JWKS); see the performance page."},
			bind: stringField(func(c *Config) *string { return &c.Tokens.AccessTokenAlg }),
			check: func(c Config) error {
				if !token.ValidAlgorithm(c.Tokens.AccessTokenAlg) {
					return fmt.Errorf("must be one of %s", strings.Join(token.Algorithms, ", "))
				}
				return nil
			},
		},
		{
			Setting: Setting{Key: "ratelimit.backend", Default: "auto",
				Help: "Where rate-limit buckets live: memory (one process), database (shared by replicas) or auto (memory on SQLite, database on PostgreSQL)."},
			bind:  enumField(func(c *Config) *string { return &c.RateLimit.Backend }),
			check: func(c Config) error { return oneOf(c.RateLimit.Backend, "auto", "memory", "database") },
		},
		{
			Setting: Setting{Key: "ratelimit.send_per_identifier", Default: "5/10m",
				Help: "Codes and magic links sent to one e-mail address or phone number (N/PERIOD, or off)."},
			bind:  stringField(func(c *Config) *string { return &c.RateLimit.SendPerIdentifier }),
			check: func(c Config) error { return checkRule(c.RateLimit.SendPerIdentifier) },
		},
		{
			Setting: Setting{Key: "ratelimit.send_per_ip", Default: "30/10m",
				Help: "Codes and magic links requested from one client IP (N/PERIOD, or off)."},
			bind:  stringField(func(c *Config) *string { return &c.RateLimit.SendPerIP }),
			check: func(c Config) error { return checkRule(c.RateLimit.SendPerIP) },
		},
		{
			Setting: Setting{Key: "ratelimit.verify_per_ip", Default: "60/10m",
				Help: "Code verifications from one client IP (N/PERIOD, or off)."},
			bind:  stringField(func(c *Config) *string { return &c.RateLimit.VerifyPerIP }),
			check: func(c Config) error { return checkRule(c.RateLimit.VerifyPerIP) },
		},
		{
			Setting: Setting{Key: "ratelimit.lookup_per_ip", Default: "120/10m",
				Help: "Anonymous user lookups (by identifier or user id, and the metadata state: the client SDK's existence checks) from one client IP, one budget for all (N/PERIOD, or off)."},
			bind:  stringField(func(c *Config) *string { return &c.RateLimit.LookupPerIP }),
			check: func(c Config) error { return checkRule(c.RateLimit.LookupPerIP) },
		},
		{
			Setting: Setting{Key: "ratelimit.challenge_per_ip", Default: "60/10m",
				Help: "Challenges created (POST /v1/auth/{app_id}/challenges) from one client IP (N/PERIOD, or off)."},
			bind:  stringField(func(c *Config) *string { return &c.RateLimit.ChallengePerIP }),
			check: func(c Config) error { return checkRule(c.RateLimit.ChallengePerIP) },
		},
		{
			Setting: Setting{Key: "ratelimit.challenge_per_user", Default: "10/10m",
				Help: "Challenges created for one user, whoever asks (N/PERIOD, or off)."},
			bind:  stringField(func(c *Config) *string { return &c.RateLimit.ChallengePerUser }),
			check: func(c Config) error { return checkRule(c.RateLimit.ChallengePerUser) },
		},
		{
			Setting: Setting{Key: "ratelimit.unknown_identifier_per_ip", Default: "20/1h",
				Help: "Sign-in challenges for unknown identifiers from one client IP (answered user_not_found, an existence oracle the interface keeps); more get 429 (N/PERIOD, or off)."},
			bind:  stringField(func(c *Config) *string { return &c.RateLimit.UnknownPerIP }),
			check: func(c Config) error { return checkRule(c.RateLimit.UnknownPerIP) },
		},
		{
			Setting: Setting{Key: "ratelimit.short_link_per_ip", Default: "30/10m",
				Help: "Short links ({base_url}/m/{code}, magic links and invitations sent by SMS) opened from one client IP, found or not; more get a 429 page without the code being looked up (N/PERIOD, or off)."},
			bind:  stringField(func(c *Config) *string { return &c.RateLimit.ShortLinkPerIP }),
			check: func(c Config) error { return checkRule(c.RateLimit.ShortLinkPerIP) },
		},
		{
			Setting: Setting{Key: "ratelimit.m2m_failures_per_client", Default: "10/10m",
				Help: "Failed M2M client authentications (wrong secret, revoked client) per client id at the token endpoint, from any IP. Each attempt takes one before the secret is compared and a right secret gives it back; once spent, attempts get 429 without being compared, the right secret too (N/PERIOD, or off)."},
			bind:  stringField(func(c *Config) *string { return &c.RateLimit.M2MFailuresPerClient }),
			check: func(c Config) error { return checkRule(c.RateLimit.M2MFailuresPerClient) },
		},
		{
			Setting: Setting{Key: "ratelimit.m2m_failures_per_ip", Default: "30/10m",
				Help: "Failed M2M client authentications (unknown client, wrong secret, revoked client) from one client IP, across clients; counted and refused as ratelimit.m2m_failures_per_client (N/PERIOD, or off)."},
			bind:  stringField(func(c *Config) *string { return &c.RateLimit.M2MFailuresPerIP }),
			check: func(c Config) error { return checkRule(c.RateLimit.M2MFailuresPerIP) },
		},
		{
			Setting: Setting{Key: "ratelimit.code_failures_per_hour", Default: "10",
				Help: "Wrong codes one user may get from one client IP per rolling hour, across all codes sent (resends do not reset it); more from that IP get 429, even the right code, while other IPs are unaffected. 0 turns the budget off. 0 to 100."},
			bind:  intField(func(c *Config) *int { return &c.RateLimit.CodeFailuresPerHour }),
			check: func(c Config) error { return inRange(c.RateLimit.CodeFailuresPerHour, 0, 100) },
		},
		{
			Setting: Setting{Key: "ratelimit.code_lock_after", Default: "100",
				Help: "Consecutive wrong codes of one user, from any IP, that lock sign-in by code for that user (429 code_entry_locked) until they sign in another way, such as a magic link; the user is told by a notice. Any successful sign-in starts the count again. The account is never disabled. 0 never locks. 0 to 100."},
			bind:  intField(func(c *Config) *int { return &c.RateLimit.CodeLockAfter }),
			check: func(c Config) error { return inRange(c.RateLimit.CodeLockAfter, 0, 100) },
		},
		{
			Setting: Setting{Key: "ratelimit.poll_interval", Default: "2s",
				Help: "Shortest time between two magic-link status polls of one link; faster polls get 429 slow_down. 0s to 60s."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.RateLimit.PollInterval }),
			check: func(c Config) error { return durationRange(c.RateLimit.PollInterval, 0, time.Minute) },
		},
		{
			Setting: Setting{Key: "ratelimit.send_min_time", Default: "10ms",
				Help: "Shortest time a request that sends a code or a magic link takes to answer, so that its timing does not tell whether the address has an account (signing a new address up does more work). Keep it above the time such a request usually takes. 0s (off) to 1s."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.RateLimit.SendMinTime }),
			check: func(c Config) error { return durationRange(c.RateLimit.SendMinTime, 0, time.Second) },
		},
		{
			Setting: Setting{Key: "test_identities.email_suffix", Default: "+scute_test",
				Help: "Test identities (apps opt in with test_identities): e-mail addresses whose local part ends with this suffix, in any case. It starts with + (a sub-address tag), so that no ordinary address is one. off: no e-mail address is a test identity."},
			bind:  enumField(func(c *Config) *string { return &c.TestIdentities.EmailSuffix }),
			check: func(c Config) error { return checkEmailSuffix(c.TestIdentities.EmailSuffix) },
		},
		{
			Setting: Setting{Key: "test_identities.phone_pattern", Default: `^\+1\d{3}55501\d{2}$`,
				Help: "Test identities: phone numbers (E.164, such as +14155550123) that this regular expression (Go syntax) matches whole. Default: the fictional North American numbers 555-0100 to 555-0199 of any area code. off: no number is a test identity."},
			bind:  stringField(func(c *Config) *string { return &c.TestIdentities.PhonePattern }),
			check: func(c Config) error { _, err := c.TestIdentities.PhoneRegexp(); return err },
		},
		{
			Setting: Setting{Key: "test_identities.code", Default: "424242",
				Help: "The one-time code of every test identity: 6 digits, as every one-time code. Anyone who knows it can sign in as any test identity of an app that accepts them."},
			bind:  stringField(func(c *Config) *string { return &c.TestIdentities.Code }),
			check: func(c Config) error { return checkTestCode(c.TestIdentities.Code) },
		},
		{
			Setting: Setting{Key: "m2m.token_ttl", Default: "10m",
				Help: "Lifetime of a machine-to-machine (client_credentials) access token and of the M2M session it opens. 1m to 15m: M2M tokens stay short-lived (no refresh token; the machine asks again)."},
			bind:  durationField(func(c *Config) *time.Duration { return &c.M2M.TokenTTL }),
			check: func(c Config) error { return durationRange(c.M2M.TokenTTL, time.Minute, 15*time.Minute) },
		},
	}
	for i := range t {
		t[i].Env = envName(t[i].Key)
	}
	return t
}

func stringField(field func(*Config) *string) binder {
	return binder{kindString, func(c *Config, text string) error {
		*field(c) = text
		return nil
	}}
}

// enumField lower-cases the value so that GATEHOUSE_LOG_LEVEL=INFO works.
func enumField(field func(*Config) *string) binder {
	return binder{kindString, func(c *Config, text string) error {
		*field(c) = strings.ToLower(strings.TrimSpace(text))
		return nil
	}}
}

func boolField(field func(*Config) *bool) binder {
	return binder{kindBool, func(c *Config, text string) error {
		v, err := parseBool(text)
		*field(c) = v
		return err
	}}
}

func intField(field func(*Config) *int) binder {
	return binder{kindInt, func(c *Config, text string) error {
		v, err := parseInt(text)
		*field(c) = v
		return err
	}}
}

func durationField(field func(*Config) *time.Duration) binder {
	return binder{kindDuration, func(c *Config, text string) error {
		v, err := parseDuration(text)
		*field(c) = v
		return err
	}}
}

// listField splits comma-separated text, dropping blanks, so "a, b," is
// [a b] and "" is nil.
func listField(field func(*Config) *[]string) binder {
	return binder{kindList, func(c *Config, text string) error {
		var out []string
		for part := range strings.SplitSeq(text, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
		*field(c) = out
		return nil
	}}
}

// The parsers below quote the offending value: none of the typed settings
// is secret.

func parseBool(text string) (bool, error) {
	v, err := strconv.ParseBool(strings.TrimSpace(text))
	if err != nil {
		return false, fmt.Errorf("invalid boolean %q (want true or false)", text)
	}
	return v, nil
}

func parseInt(text string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil {
		return 0, fmt.Errorf("invalid integer %q", text)
	}
	return v, nil
}

func parseDuration(text string) (time.Duration, error) {
	v, err := time.ParseDuration(strings.TrimSpace(text))
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (want a Go duration such as \"10s\" or \"1m30s\")", text)
	}
	return v, nil
}
