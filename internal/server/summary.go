package server

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// startup is what the "gatehouse started" line says about the settings in
// effect, and the warnings about risky ones, so that an operator reads in
// one place what the server actually runs on. It never holds a secret: the
// database is named by host and database (or file), never by its URL.
type startup struct {
	attrs    []any
	warnings []string
}

// startupSummary describes cfg as New resolved it: rateLimits is the
// rate-limit backend chosen ("memory" or "database") and algs the algorithms
// the keyring signs with.
func startupSummary(cfg config.Config, rateLimits string, algs []string) startup {
	var out startup
	add := func(kv ...any) { out.attrs = append(out.attrs, kv...) }
	warn := func(msg string) { out.warnings = append(out.warnings, msg) }

	kind, target := cfg.DatabaseKind()
	add("database", kind)
	if kind == store.Postgres {
		host, name := postgresTarget(target)
		add("database_host", host, "database_name", name)
	} else {
		// Exactly where the data goes, whatever the working directory.
		if abs, err := filepath.Abs(target); err == nil {
			target = abs
		}
		add("database_path", target)
	}
	mail, sms := provider(cfg.Mail.Provider, cfg.Dev), provider(cfg.SMS.Provider, cfg.Dev)
	add("mail_provider", mail, "sms_provider", sms, "rate_limits", rateLimits,
		"base_url", cfg.BaseURL, "base_url_from", cfg.BaseURLFrom, "issuer", cfg.Tokens.Issuer,
		"access_token_alg", cfg.Tokens.AccessTokenAlg, "signing_algs", algs, "dev", cfg.Dev)

	add("metrics", metricsWhere(cfg))

	// Private webhook targets warn in development mode too: the setting
	// decides where requests go, whatever the mode.
	if cfg.PrivateTargetsAllowed() {
		warn("webhooks may target http:// and private or loopback addresses (webhooks.allow_private_targets); never in production")
	}
	if cfg.Dev {
		return out
	}
	if cfg.Database.URL == "" {
		warn("database.url is not set: SQLite at " + target + ", for one process only; set database.url " +
			"(postgres://… for replicas, or sqlite:PATH to keep SQLite)")
	}
	for _, p := range []struct{ channel, key, set, resolved, real string }{
		{"e-mail", "mail.provider", cfg.Mail.Provider, mail, "smtp or postmark"},
		{"SMS", "sms.provider", cfg.SMS.Provider, sms, "twilio or http"},
	} {
		is := p.key + " is " + p.resolved
		if p.set == "" {
			is = p.key + " is not set (" + p.resolved + ")"
		}
		switch p.resolved {
		case "log":
			warn(is + ": " + p.channel + " codes and links are not sent (a log line says so) unless an app " +
				"has a provider of its own; set " + p.key + " to " + p.real)
		case "outbox":
			warn(is + ": " + p.channel + " is kept in the database and shown only by --dev's /dev/outbox, " +
				"never delivered; set " + p.key + " to " + p.real)
		}
	}
	if cfg.BaseURLFrom == "http.addr" {
		warn("base_url is not set: links and the token issuer use " + cfg.BaseURL + ", derived from http.addr; " +
			"set base_url to the public URL clients use")
	}
	if cfg.Metrics.Addr == "" && cfg.Metrics.Token == "" {
		warn("metrics.addr is not set: /metrics is not served (outside --dev the API listener never serves it " +
			"without metrics.token); set metrics.addr to an internal address such as 127.0.0.1:9090 to scrape it")
	}
	if rateLimits == "memory" && kind == store.Postgres {
		warn("ratelimit.backend is memory on PostgreSQL: each replica keeps its own rate limits, so N replicas allow " +
			"N times each limit; set ratelimit.backend to database or auto")
	}
	return out
}

// postgresTarget returns the host (with port) and database of a PostgreSQL
// URL, without its user or password. A socket directory given as the host
// parameter stands for the host.
func postgresTarget(dsn string) (host, name string) {
	u, err := url.Parse(dsn)
	if err != nil {
		// url.Parse quotes the URL in its error; only say it did not parse.
		return "(unparsed)", ""
	}
	host = u.Host
	if host == "" {
		host = u.Query().Get("host")
	}
	return host, strings.TrimPrefix(u.Path, "/")
}

// metricsWhere says where /metrics is served: on its own listener, on the
// API listener (development mode, or behind metrics.token), or nowhere.
func metricsWhere(cfg config.Config) string {
	switch {
	case cfg.Metrics.Addr != "" && cfg.Metrics.Token != "":
		return "metrics.addr with metrics.token"
	case cfg.Metrics.Addr != "":
		return "metrics.addr"
	case cfg.MetricsOnAPI() && cfg.Metrics.Token != "":
		return "api with metrics.token"
	case cfg.MetricsOnAPI():
		return "api"
	}
	return "off"
}
