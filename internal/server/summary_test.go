package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/config"
)

// TestStartupSummary: the start-up line names what the server runs on,
// without credentials, and each risky setting outside development mode adds
// one warning; development mode's own defaults add none (but private
// webhook targets, whatever the mode).
func TestStartupSummary(t *testing.T) {
	const secret = "pg-s3cret-pw"
	base := func() config.Config {
		return config.Config{DataDir: "/srv/gh", BaseURL: "https://auth.example.com", BaseURLFrom: "base_url",
			Database: config.Database{URL: "postgres://gh:" + secret + "@db.internal:5433/gatehouse?sslmode=require&password=" + secret},
			Mail:     config.Mail{Provider: "smtp"}, SMS: config.SMS{Provider: "twilio"}, Metrics: config.Metrics{Addr: "127.0.0.1:9090"},
			Tokens: config.Tokens{Issuer: "https://auth.example.com", AccessTokenAlg: "ES256"}}
	}
	tests := []struct {
		name   string
		change func(c *config.Config)
		limits string
		attrs  map[string]any
		warn   []string // one substring per expected warning, in order
	}{
		{"production, everything set", func(*config.Config) {}, "database",
			map[string]any{"database": "postgres", "database_host": "db.internal:5433", "database_name": "gatehouse",
				"mail_provider": "smtp", "sms_provider": "twilio", "rate_limits": "database", "base_url": "https://auth.example.com",
				"base_url_from": "base_url", "dev": false, "metrics": "metrics.addr"}, nil},
		{"production defaults", func(c *config.Config) {
			c.Database.URL, c.Mail.Provider, c.SMS.Provider, c.Metrics.Addr = "", "", "", ""
			c.BaseURL, c.BaseURLFrom = "http://127.0.0.1:8080", "http.addr"
		}, "memory",
			map[string]any{"database": "sqlite", "database_path": "/srv/gh/gatehouse.db", "mail_provider": "log", "sms_provider": "log",
				"rate_limits": "memory", "base_url_from": "http.addr", "metrics": "off"},
			[]string{"database.url is not set: SQLite at /srv/gh/gatehouse.db", "mail.provider is not set (log)",
				"sms.provider is not set (log)", "base_url is not set: links and the token issuer use http://127.0.0.1:8080",
				"metrics.addr is not set: /metrics is not served"}},
		{"metrics behind a token on the API listener", func(c *config.Config) { c.Metrics = config.Metrics{Token: strings.Repeat("t", 32)} }, "database",
			map[string]any{"metrics": "api with metrics.token"}, nil},
		{"metrics on their listener behind a token", func(c *config.Config) { c.Metrics.Token = strings.Repeat("t", 32) }, "database",
			map[string]any{"metrics": "metrics.addr with metrics.token"}, nil},
		{"outbox and log chosen outside dev", func(c *config.Config) { c.Mail.Provider, c.SMS.Provider = "outbox", "log" }, "database",
			nil, []string{"mail.provider is outbox", "sms.provider is log"}},
		{"sqlite chosen", func(c *config.Config) { c.Database.URL = "sqlite:/data/gh.db" }, "memory",
			map[string]any{"database": "sqlite", "database_path": "/data/gh.db"}, nil},
		{"memory limits on PostgreSQL", func(c *config.Config) { c.RateLimit.Backend = "memory" }, "memory",
			nil, []string{"ratelimit.backend is memory on PostgreSQL"}},
		{"private webhook targets", func(c *config.Config) { c.Webhooks.AllowPrivateTargets = "true" }, "database",
			nil, []string{"webhooks.allow_private_targets"}},
		{"dev defaults", func(c *config.Config) {
			c.Dev, c.Database.URL, c.Mail.Provider, c.SMS.Provider, c.Metrics.Addr = true, "", "", "", ""
			c.BaseURL, c.BaseURLFrom = "http://127.0.0.1:8080", "http.addr"
		}, "memory",
			map[string]any{"mail_provider": "outbox", "sms_provider": "outbox", "dev": true, "metrics": "api"},
			[]string{"webhooks.allow_private_targets"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.change(&c)
			s := startupSummary(c, tt.limits, []string{"ES256", "RS256"})
			attrs := map[string]any{}
			for i := 0; i+1 < len(s.attrs); i += 2 {
				attrs[s.attrs[i].(string)] = s.attrs[i+1]
			}
			for k, want := range tt.attrs {
				if got := attrs[k]; got != want {
					t.Errorf("%s = %v; want %v", k, got, want)
				}
			}
			if algs, _ := attrs["signing_algs"].([]string); !slices.Equal(algs, []string{"ES256", "RS256"}) {
				t.Errorf("signing_algs = %v", attrs["signing_algs"])
			}
			if len(s.warnings) != len(tt.warn) {
				t.Errorf("warnings = %q; want %d", s.warnings, len(tt.warn))
			}
			for i, w := range tt.warn {
				if i < len(s.warnings) && !strings.Contains(s.warnings[i], w) {
					t.Errorf("warning %d = %q; want it to say %q", i, s.warnings[i], w)
				}
			}
			all := fmt.Sprint(s.attrs, s.warnings)
			if strings.Contains(all, secret) || strings.Contains(all, "gh:") || strings.Contains(all, "postgres://gh") {
				t.Errorf("summary shows the database URL or its credentials: %s", all)
			}
		})
	}
}
