package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/queue"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// system is everything built from the configuration, wired by hand.
type system struct {
	cfg     config.Config
	log     *slog.Logger
	db      *store.DB
	keyring *token.Keyring
	tenants *tenant.Service
	users   *appuser.Service
	signin  *signin.Service
	hooks   *webhook.Service
	queue   *queue.Queue
	courier courier.Provider
	// pruneRates deletes expired shared rate-limit buckets; nil for the memory limiter.
	pruneRates func(context.Context) error
}

// openStore connects to the configured database.
func openStore(ctx context.Context, cfg config.Config) (*store.DB, error) {
	kind, target := cfg.DatabaseKind()
	if kind == store.SQLite && strings.HasPrefix(target, "file:") {
		target, _, _ = strings.Cut(strings.TrimPrefix(target, "file:"), "?")
	}
	return store.Open(ctx, kind, target, store.Options{MaxConns: cfg.Database.MaxConns})
}

// build opens the store and wires the services. The caller closes sys.db.
func build(ctx context.Context, cfg config.Config, log *slog.Logger) (*system, error) {
	master, err := masterKey(cfg)
	if err != nil {
		return nil, err
	}
	sealKey, err := token.DeriveKey(master, "seal")
	if err != nil {
		return nil, err
	}
	hashKey, err := token.DeriveKey(master, "hash")
	if err != nil {
		return nil, err
	}
	sealer, err := token.NewSealer(sealKey)
	if err != nil {
		return nil, err
	}
	db, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	sys := &system{cfg: cfg, log: log, db: db, keyring: token.NewKeyring()}
	hasher := token.NewHasher(hashKey)
	sys.courier, err = newCourier(cfg, log, db)
	if err != nil {
		_ = db.Close()
		return nil, usageError(err)
	}
	templates, err := courier.LoadTemplates()
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	// Jobs: webhook deliveries and the challenge-expiry sweep. Workers are
	// registered before the queue exists; the expiry worker gets its service below.
	policy := webhook.Policy{AllowPrivate: cfg.PrivateTargetsAllowed()}
	expiry := &signin.ExpiryWorker{}
	workers := river.NewWorkers()
	river.AddWorker(workers, webhook.NewWorker(webhook.WorkerDeps{DB: db, Sealer: sealer, Policy: policy,
		RetryBase: cfg.Webhooks.RetryBase, Log: log}))
	river.AddWorker(workers, expiry)
	sys.queue, err = queue.New(db, queue.Config{Workers: workers, Log: quietRiver(log), RescueAfter: cfg.Webhooks.RescueAfter,
		Periodic: []*river.PeriodicJob{signin.ExpiryJob(15*time.Second, queueMaintenance)},
		Queues:   map[string]int{webhook.QueueName: cfg.Webhooks.Workers, queueMaintenance: 2}})
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	events := webhook.NewEmitter(sys.queue, nil)
	sys.hooks = webhook.NewService(db, sealer, policy, events, nil)
	sys.tenants = tenant.New(tenant.Deps{DB: db, Keyring: sys.keyring, Sealer: sealer, Hasher: hasher, Issuer: cfg.Tokens.Issuer, Log: log})
	sys.users = appuser.New(appuser.Deps{DB: db, Courier: sys.courier, Templates: templates, Keyring: sys.keyring,
		Hasher: hasher, Issuer: cfg.Tokens.Issuer, Events: events, Log: log})
	limits, err := signinLimits(cfg)
	if err != nil {
		_ = db.Close()
		return nil, usageError(err)
	}
	var limiter signin.Limiter = ratelimit.NewMemory(time.Now)
	if cfg.RateLimit.Backend == "database" || (cfg.RateLimit.Backend == "auto" && db.Kind() == store.Postgres) {
		shared := ratelimit.NewSQL(db, time.Now)
		limiter, sys.pruneRates = shared, shared.Prune
	}
	sys.signin = signin.New(signin.Deps{DB: db, Keyring: sys.keyring, Sealer: sealer, Hasher: hasher, Courier: sys.courier,
		Templates: templates, Users: sys.users, Limiter: limiter, Limits: limits, Events: events, Log: log,
		Settings: signin.Settings{Issuer: cfg.Tokens.Issuer, SessionLifetime: cfg.Tokens.SessionLifetime,
			RefreshGrace: cfg.Tokens.RefreshGrace}})
	expiry.S = sys.signin
	return sys, nil
}

// queueMaintenance runs periodic housekeeping jobs.
const queueMaintenance = "maintenance"

// quietRiver keeps River's own informational chatter out of the log.
func quietRiver(log *slog.Logger) *slog.Logger {
	return slog.New(levelFloor{log.Handler(), slog.LevelWarn})
}

// levelFloor drops records below min.
type levelFloor struct {
	slog.Handler
	min slog.Level
}

func (h levelFloor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h levelFloor) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFloor{h.Handler.WithAttrs(a), h.min}
}
func (h levelFloor) WithGroup(n string) slog.Handler {
	return levelFloor{h.Handler.WithGroup(n), h.min}
}

// signinLimits turns the rate-limit settings into rules.
func signinLimits(cfg config.Config) (signin.Limits, error) {
	l := signin.Limits{CodeFailuresPerHour: cfg.RateLimit.CodeFailuresPerHour, PollInterval: cfg.RateLimit.PollInterval}
	for _, r := range []struct {
		key, value string
		dst        *ratelimit.Rule
	}{
		{"ratelimit.send_per_identifier", cfg.RateLimit.SendPerIdentifier, &l.SendPerIdentifier},
		{"ratelimit.send_per_ip", cfg.RateLimit.SendPerIP, &l.SendPerIP},
		{"ratelimit.verify_per_ip", cfg.RateLimit.VerifyPerIP, &l.VerifyPerIP},
		{"ratelimit.lookup_per_ip", cfg.RateLimit.LookupPerIP, &l.LookupPerIP},
	} {
		rule, err := ratelimit.ParseRule(r.value)
		if err != nil {
			return l, fmt.Errorf("invalid setting %s: %w", r.key, err)
		}
		*r.dst = rule
	}
	return l, nil
}

// ready checks the schema and loads the signing keys, for commands that
// sign or verify tokens.
func (sys *system) ready(ctx context.Context) error {
	pending, err := sys.db.Pending(ctx)
	if err != nil {
		return err
	}
	if pending {
		return errors.New("the database schema is not up to date: run `gatehouse migrate up` (serve does it by itself)")
	}
	if err := sys.tenants.EnsureSigningKey(ctx); err != nil {
		return err
	}
	return sys.tenants.LoadKeys(ctx)
}

// newCourier picks the mail provider: outbox in dev mode (unless set),
// SMTP when configured, else a log line saying nothing was sent. SMS goes to
// the outbox in dev mode and is logged otherwise until an SMS provider is set.
func newCourier(cfg config.Config, log *slog.Logger, db *store.DB) (courier.Provider, error) {
	outbox := courier.NewOutbox(func(ctx context.Context, m courier.Message) (string, error) {
		id := uuid.Must(uuid.NewV7()).String()
		return id, db.InsertOutboxMessage(ctx, store.OutboxMessage{ID: id, AppID: m.AppID, Channel: string(m.Channel),
			Recipient: m.To, Subject: m.Subject, Text: m.Text, HTML: m.HTML, Code: m.Code, Link: m.Link, CreatedAt: time.Now()})
	})
	provider := cfg.Mail.Provider
	if provider == "" {
		provider = "log"
		if cfg.Dev {
			provider = "outbox"
		}
	}
	sms, err := newSMS(cfg, log, outbox)
	if err != nil {
		return nil, err
	}
	switch provider {
	case "outbox":
		return courier.Router{Email: outbox, SMS: sms}, nil
	case "smtp":
		smtp, err := courier.NewSMTP(courier.SMTPConfig{Host: cfg.SMTP.Host, Port: cfg.SMTP.Port, Username: cfg.SMTP.Username,
			Password: cfg.SMTP.Password, AuthMethod: cfg.SMTP.AuthMethod, TLS: courier.TLSPolicy(cfg.SMTP.TLS),
			From: cfg.Mail.From, Timeout: cfg.SMTP.Timeout})
		if err != nil {
			return nil, fmt.Errorf("invalid setting smtp.host (GATEHOUSE_SMTP_HOST): %w", err)
		}
		return courier.Router{Email: smtp, SMS: sms}, nil
	}
	return courier.Router{Email: courier.NewLog(log), SMS: sms}, nil
}

// newSMS picks the SMS provider: the outbox in dev mode (unless set), a
// plain HTTP endpoint, or a log line saying nothing was sent.
func newSMS(cfg config.Config, log *slog.Logger, outbox courier.Provider) (courier.Provider, error) {
	provider := cfg.SMS.Provider
	if provider == "" {
		provider = "log"
		if cfg.Dev {
			provider = "outbox"
		}
	}
	switch provider {
	case "outbox":
		return outbox, nil
	case "http":
		p, err := courier.NewHTTPSMS(courier.HTTPSMSConfig{URL: cfg.SMS.HTTPURL, Token: cfg.SMS.Token, From: cfg.SMS.From})
		if err != nil {
			return nil, fmt.Errorf("invalid setting sms.http_url (GATEHOUSE_SMS_HTTP_URL): %w", err)
		}
		return p, nil
	}
	return courier.NewLog(log), nil
}

func generateMasterKey(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		// Another process made it first; use theirs.
		b, rerr := os.ReadFile(path)
		if rerr != nil {
			return nil, rerr
		}
		return config.DecodeMasterKey(string(b))
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
		_ = f.Close()
		return nil, err
	}
	return key, f.Close()
}
