package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/metrics"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// newCourier picks the mail provider: the outbox in development mode (unless
// set), SMTP when configured, else a log line saying nothing was sent. SMS
// goes to the outbox in development mode and is logged otherwise until an SMS
// provider is set.
func newCourier(cfg config.Config, log *slog.Logger, outbox *courier.Outbox, m *metrics.Metrics) (courier.Provider, error) {
	sms, err := newSMS(cfg, log, outbox, m)
	if err != nil {
		return nil, err
	}
	switch provider(cfg.Mail.Provider, cfg.Dev) {
	case "outbox":
		return courier.Router{Email: m.Provider(outbox, "outbox"), SMS: sms}, nil
	case "smtp":
		smtp, err := courier.NewSMTP(courier.SMTPConfig{Host: cfg.SMTP.Host, Port: cfg.SMTP.Port, Username: cfg.SMTP.Username,
			Password: cfg.SMTP.Password, AuthMethod: cfg.SMTP.AuthMethod, TLS: courier.TLSPolicy(cfg.SMTP.TLS),
			From: cfg.Mail.From, Timeout: cfg.SMTP.Timeout})
		if err != nil {
			return nil, &config.SettingError{Key: "smtp.host", Env: "GATEHOUSE_SMTP_HOST", Reason: err.Error()}
		}
		return courier.Router{Email: m.Provider(smtp, "smtp"), SMS: sms}, nil
	case "postmark":
		p, err := courier.FromSpec(courier.Spec{Type: "postmark", Config: map[string]string{
			"server_token": cfg.Postmark.ServerToken, "from": cfg.Mail.From, "message_stream": cfg.Postmark.MessageStream}},
			courier.Env{Log: log})
		if err != nil {
			return nil, &config.SettingError{Key: "postmark.server_token", Env: "GATEHOUSE_POSTMARK_SERVER_TOKEN", Reason: err.Error()}
		}
		return courier.Router{Email: m.Provider(p, "postmark"), SMS: sms}, nil
	}
	return courier.Router{Email: m.Provider(courier.NewLog(log), "log"), SMS: sms}, nil
}

// newSMS picks the SMS provider: the outbox in development mode (unless
// set), a plain HTTP endpoint, or a log line saying nothing was sent.
func newSMS(cfg config.Config, log *slog.Logger, outbox *courier.Outbox, m *metrics.Metrics) (courier.Provider, error) {
	switch provider(cfg.SMS.Provider, cfg.Dev) {
	case "outbox":
		return m.Provider(outbox, "outbox"), nil
	case "http":
		p, err := courier.NewHTTPSMS(courier.HTTPSMSConfig{URL: cfg.SMS.HTTPURL, Token: cfg.SMS.Token, From: cfg.SMS.From})
		if err != nil {
			return nil, &config.SettingError{Key: "sms.http_url", Env: "GATEHOUSE_SMS_HTTP_URL", Reason: err.Error()}
		}
		return m.Provider(p, "http"), nil
	case "twilio":
		c := map[string]string{"account_sid": cfg.Twilio.AccountSID, "auth_token": cfg.Twilio.AuthToken}
		if cfg.Twilio.MessagingServiceSID != "" {
			c["messaging_service_sid"] = cfg.Twilio.MessagingServiceSID
		}
		if cfg.SMS.From != "" {
			c["from"] = cfg.SMS.From
		}
		p, err := courier.FromSpec(courier.Spec{Type: "twilio", Config: c}, courier.Env{Log: log})
		if err != nil {
			return nil, &config.SettingError{Key: "twilio.account_sid", Env: "GATEHOUSE_TWILIO_ACCOUNT_SID", Reason: err.Error()}
		}
		return m.Provider(p, "twilio"), nil
	}
	return m.Provider(courier.NewLog(log), "log"), nil
}

// provider resolves an unset provider setting: the outbox in development
// mode, a log line otherwise.
func provider(set string, dev bool) string {
	switch {
	case set != "":
		return set
	case dev:
		return "outbox"
	}
	return "log"
}

// appProviders is what the apps' own providers need: the outbox type in
// development mode only, and an HTTP client that refuses the addresses
// webhooks may not reach (apps choose their providers' URLs), under the same
// setting (webhooks.allow_private_targets).
func appProviders(cfg config.Config, db *store.DB, sealer *token.Sealer, outbox *courier.Outbox, policy webhook.Policy, limiter ratelimit.Limiter,
	now func() time.Time, log *slog.Logger, m *metrics.Metrics) outbound.ProvidersDeps {
	d := outbound.ProvidersDeps{DB: db, Sealer: sealer, Client: policy.Client(providerTimeout), DialControl: policy.DialControl(),
		CheckHost: policy.CheckHost, Limiter: limiter, TestRule: outbound.DefaultProviderTestRule, Now: now, Log: log, Metrics: m,
		Recipient: func(raw string) (string, error) {
			id, err := appuser.ParseIdentifier(raw)
			return id.Value, err
		}}
	if cfg.Dev {
		d.Outbox = outbox
	}
	return d
}

// providerTimeout bounds one call to a provider's HTTP API.
const providerTimeout = 15 * time.Second

// outboxStore keeps the development outbox's messages in the database.
type outboxStore struct {
	db  *store.DB
	now func() time.Time
}

func (o outboxStore) Save(ctx context.Context, m courier.Message) (string, error) {
	id := uuid.Must(uuid.NewV7()).String()
	return id, o.db.InsertOutboxMessage(ctx, store.OutboxMessage{ID: id, AppID: m.AppID, Channel: string(m.Channel),
		Recipient: m.To, Subject: m.Subject, Text: m.Text, HTML: m.HTML, Code: m.Code, Link: m.Link, CreatedAt: o.now()})
}

func (o outboxStore) List(ctx context.Context, to string, limit int) ([]courier.Kept, error) {
	rows, err := o.db.ListOutboxMessages(ctx, to, limit)
	if err != nil {
		return nil, fmt.Errorf("list outbox: %w", err)
	}
	out := make([]courier.Kept, 0, len(rows))
	for _, r := range rows {
		out = append(out, courier.Kept{ID: r.ID, CreatedAt: r.CreatedAt, Message: courier.Message{
			Channel: courier.Channel(r.Channel), To: r.Recipient, Subject: r.Subject, Text: r.Text, HTML: r.HTML,
			Code: r.Code, Link: r.Link, AppID: r.AppID}})
	}
	return out, nil
}
