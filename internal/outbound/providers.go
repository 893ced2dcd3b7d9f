package outbound

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/metrics"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/secretset"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/ttlcache"
)

// An app's own message service providers (interface §2.4, §4.5, §4.6).
//
// Every provider type of courier.Kinds is a slot of every app, named by its
// slug, which is the type: GET lists them all, configured or not, and PATCH
// updates one by slug (docs/decisions/0007-message-providers.md). The
// settings of a slot are kept in message_providers: the ones that are not
// secret as JSON, the secret ones (courier.Field.Secret) sealed with the
// master key, bound to the app and the slug. A secret is never shown again:
// reads carry a redacted hint.
//
// Per channel an app uses one enabled provider: enabling one disables the
// app's others that send a channel it sends. A channel with no enabled
// provider of the app goes through the server-wide provider.

// Errors of the message providers.
var (
	// ErrProviderKeyMissing: a change named no provider (interface §4.6
	// answers it with {errors}).
	ErrProviderKeyMissing = errors.New("the provider's slug is required")
	// ErrProviderNotFound: no provider type has that slug (here).
	ErrProviderNotFound = errors.New("message service provider not found")
)

// RateLimitedError refuses a test message over the app's limit.
type RateLimitedError struct{ RetryAfter time.Duration }

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("rate limited; retry after %s", e.RetryAfter)
}

// ErrAppNotFound: the app is gone (deleted meanwhile).
var ErrAppNotFound = errors.New("app not found")

// Providers keep the apps' own message providers and route every message
// to the one it goes through. It is a service of its own, with its own
// store access, sealer and cache: the apps' settings (tenant) know nothing
// of it.
type Providers struct {
	db     *store.DB
	sealer *token.Sealer
	d      ProvidersDeps
	now    store.Clock
	log    *slog.Logger
	cache  *ttlcache.Cache[*providerSet]
}

// ProvidersDeps are the Providers' collaborators.
type ProvidersDeps struct {
	DB *store.DB
	// Sealer seals the secret settings, bound to the app and the slug.
	Sealer *token.Sealer
	// Outbox, when set (development mode), offers the outbox type.
	Outbox *courier.Outbox
	// Client dials the providers' HTTP APIs. Apps choose the URLs, so the
	// assembly passes one that refuses private addresses.
	Client *http.Client
	// DialControl vets the addresses SMTP providers dial, for the same reason.
	DialControl func(network, address string, c syscall.RawConn) error
	// CheckHost, when set, vets the host of a provider's url, endpoint or
	// (SMTP) host when it is saved, so an address the dial-time checks
	// would refuse is refused at once (webhook.Policy.CheckHost).
	CheckHost func(host string) error
	// Limiter and TestRule bound the test messages of an app.
	Limiter  ratelimit.Limiter
	TestRule ratelimit.Rule
	// Recipient normalises the address of a test message (an e-mail
	// address or an international phone number, appuser.ParseIdentifier).
	Recipient func(raw string) (string, error)
	Now       func() time.Time
	Log       *slog.Logger
	// Metrics counts the sends of the apps' own providers (as provider
	// app_<type>); nil counts nothing.
	Metrics *metrics.Metrics
}

// NewProviders returns the Providers.
func NewProviders(d ProvidersDeps) *Providers {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	now := store.Clock(d.Now)
	return &Providers{db: d.DB, sealer: d.Sealer, d: d, now: now, log: d.Log, cache: ttlcache.New[*providerSet](ProviderCacheTTL, now.Read)}
}

// clock is the time now as the store keeps it (store.Clock.Now).
func (s *Providers) clock() time.Time { return s.now.Now() }

// notFound maps store.ErrNotFound to the domain error e.
func notFound(err, e error) error {
	if errors.Is(err, store.ErrNotFound) {
		return e
	}
	return err
}

// DefaultProviderTestRule bounds the test messages an app may send.
var DefaultProviderTestRule = ratelimit.Rule{Limit: 10, Period: time.Hour}

// Limits on provider settings.
const (
	maxProviderSettings   = 30
	maxProviderSettingLen = 4096
)

// ProviderTestTimeout bounds a test message: the provider's answer is
// awaited within the request (whose deadline allows for it, httpapi).
const ProviderTestTimeout = 20 * time.Second

// MessageProvider is one provider slot of an app as shown: its secret
// settings redacted.
type MessageProvider struct {
	Slug       string
	Type       string
	Name       string
	Enabled    bool
	Configured bool              // it has a stored row
	Config     map[string]string // secret settings as a hint
	Channels   []courier.Channel
	UpdatedAt  *time.Time
}

// ProviderChange changes one provider slot. Config is merged into the
// stored settings: a key left out keeps its value, nil or "" clears it, and
// a secret sent back as the hint shown for it keeps it.
type ProviderChange struct {
	Slug    string
	Name    *string
	Enabled *bool
	Config  map[string]*string
}

// ProviderTest is what a test message did.
type ProviderTest struct {
	Slug      string
	Channel   courier.Channel
	To        string // masked
	Delivered bool
	// MessageID is the provider's id for the message, when it gave one.
	MessageID string
	// Error, when not delivered: the provider's answer, classified.
	Error *ProviderTestError
}

// ProviderTestError is a failed test message, without secrets.
type ProviderTestError struct {
	Message    string
	Temporary  bool
	RetryAfter time.Duration
	Status     int
	Code       string
}

// kinds are the provider types apps may use on this server: outbox only in
// development mode.
func (s *Providers) kinds() []courier.Kind {
	return slices.DeleteFunc(courier.Kinds(), func(k courier.Kind) bool { return k.Type == "outbox" && s.d.Outbox == nil })
}

func (s *Providers) kindOf(slug string) (courier.Kind, bool) {
	i := slices.IndexFunc(s.kinds(), func(k courier.Kind) bool { return k.Type == slug })
	if i < 0 {
		return courier.Kind{}, false
	}
	return s.kinds()[i], true
}

func (s *Providers) env() courier.Env {
	return courier.Env{Outbox: s.d.Outbox, Log: s.log, Client: s.d.Client, DialControl: s.d.DialControl}
}

func secretsAD(appID, slug string) []byte { return []byte("message-provider:" + appID + ":" + slug) }

// settings returns a stored provider's settings in clear.
func (s *Providers) settings(r store.MessageProvider) (map[string]string, error) {
	out, err := secretset.Open(s.sealer, r.Config, r.SecretsSealed, secretsAD(r.AppID, r.Slug))
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", r.Slug, err)
	}
	return out, nil
}

// SecretHint is how a secret setting is shown (secretset.Hint).
func SecretHint(secret string) string { return secretset.Hint(secret) }

func isSecret(k courier.Kind, name string) bool {
	return slices.ContainsFunc(k.Fields, func(f courier.Field) bool { return f.Name == name && f.Secret })
}

// shown is a provider slot as the API shows it.
func shown(k courier.Kind, r *store.MessageProvider, settings map[string]string) MessageProvider {
	p := MessageProvider{Slug: k.Type, Type: k.Type, Name: k.Type, Config: map[string]string{}, Channels: k.ChannelsWith(settings)}
	if r == nil {
		return p
	}
	p.Configured, p.Enabled = true, r.Enabled
	if r.Name != "" {
		p.Name = r.Name
	}
	at := r.UpdatedAt
	p.UpdatedAt = &at
	for name, v := range settings {
		if isSecret(k, name) {
			v = SecretHint(v)
		}
		p.Config[name] = v
	}
	return p
}

// List lists the app's provider slots (interface §4.5), secrets
// redacted. Who may read the app may: its secret, its API keys, any member
// of its workspace.
func (s *Providers) List(ctx context.Context, p access.Principal, appID string) (_ []MessageProvider, err error) {
	defer errs.Wrap(&err, "list message providers")
	if err := access.App(ctx, s.db.Queries, p, appID, access.Read); err != nil {
		return nil, err
	}
	if _, err := s.db.GetApp(ctx, appID); err != nil {
		return nil, notFound(err, ErrAppNotFound)
	}
	rows, err := s.db.ListMessageProviders(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := []MessageProvider{}
	for _, k := range s.kinds() {
		i := slices.IndexFunc(rows, func(r store.MessageProvider) bool { return r.Slug == k.Type })
		if i < 0 {
			out = append(out, shown(k, nil, nil))
			continue
		}
		settings, err := s.settings(rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, shown(k, &rows[i], settings))
	}
	return out, nil
}

// Update changes one provider slot of the app (interface
// §4.6). Who may manage the app may (not its API keys). The merged settings
// must make a working provider (courier.FromSpec) when the change touches
// them or the provider ends up enabled; a refusal names the setting
// (config.<name>). Enabling a provider disables the app's others that send
// one of its channels. Every change is logged, without any value of a
// secret setting.
func (s *Providers) Update(ctx context.Context, p access.Principal, appID string, in ProviderChange) (_ MessageProvider, err error) {
	defer errs.Wrap(&err, "update message provider")
	slug := strings.TrimSpace(in.Slug)
	var out MessageProvider
	changed, disabled := []string{}, []string{}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		// Who may not change providers learns nothing more, and the denial
		// is logged like any other.
		if err := access.App(ctx, tx.Queries, p, appID, access.Manage); err != nil {
			return err
		}
		if slug == "" {
			return ErrProviderKeyMissing
		}
		// Locked, so that two changes enabling providers of one channel
		// run one after the other.
		app, err := tx.LockApp(ctx, appID)
		if err != nil {
			return notFound(err, ErrAppNotFound)
		}
		k, ok := s.kindOf(slug)
		if !ok {
			return ErrProviderNotFound
		}
		rows, err := tx.ListMessageProviders(ctx, appID)
		if err != nil {
			return err
		}
		now := s.clock()
		row := store.MessageProvider{AppID: appID, Slug: slug, Type: k.Type, CreatedAt: now}
		settings := map[string]string{}
		var before any
		if i := slices.IndexFunc(rows, func(r store.MessageProvider) bool { return r.Slug == slug }); i >= 0 {
			row = rows[i]
			if settings, err = s.settings(row); err != nil {
				return err
			}
			old := row
			before = auditProvider(shown(k, &old, settings))
		}
		merged, keys, err := mergeSettings(k, settings, in.Config)
		if err != nil {
			return err
		}
		changed = append(changed[:0], keys...)
		if in.Name != nil {
			name := strings.TrimSpace(*in.Name)
			if len(name) > 100 {
				return errs.Invalidf("name", "must be at most 100 characters")
			}
			if name != row.Name {
				row.Name = name
				changed = append(changed, "name")
			}
		}
		if in.Enabled != nil && *in.Enabled != row.Enabled {
			row.Enabled = *in.Enabled
			changed = append(changed, "enabled")
		}
		if row.Enabled || len(keys) > 0 {
			if _, err := courier.FromSpec(courier.Spec{Type: k.Type, Config: merged}, s.env()); err != nil {
				return specError(err)
			}
		}
		if err := secretsFollowDestination(k, settings, in.Config, merged); err != nil {
			return err
		}
		if err := s.checkDestination(in.Config, merged); err != nil {
			return err
		}
		if err := s.seal(&row, k, merged); err != nil {
			return err
		}
		row.UpdatedAt = now
		if err := tx.PutMessageProvider(ctx, row); err != nil {
			return err
		}
		disabled = disabled[:0] // the transaction may run again
		if row.Enabled {
			mine := k.ChannelsWith(merged)
			for _, other := range rows {
				ok, err := s.disableOther(ctx, tx, slug, mine, other, now)
				if err != nil {
					return err
				}
				if ok {
					disabled = append(disabled, other.Slug)
				}
			}
		}
		out = shown(k, &row, merged)
		return audit.Record(ctx, tx.Queries, now, p, audit.Change{WorkspaceID: app.WorkspaceID, AppID: appID,
			Action: "message_provider.updated", TargetType: "message_provider", TargetID: slug, Before: before, After: auditProvider(out)})
	})
	if err != nil {
		return MessageProvider{}, err
	}
	s.cache.Forget(appID)
	s.log.InfoContext(ctx, "message provider changed", "app_id", appID, "slug", slug, "provider_type", out.Type,
		"enabled", out.Enabled, "changed", changed, "disabled", disabled, "by", string(p.Kind), "credential_id", p.CredentialID)
	return out, nil
}

// disableOther disables other, an enabled provider of the app that sends
// one of the channels mine (those of slug, the provider just enabled), in tx.
func (s *Providers) disableOther(ctx context.Context, tx *store.Tx, slug string, mine []courier.Channel, other store.MessageProvider, now time.Time) (bool, error) {
	if other.Slug == slug || !other.Enabled {
		return false, nil
	}
	ok, _ := courier.KindOf(other.Type)
	var plain map[string]string
	_ = json.Unmarshal(other.Config, &plain) // "channels" is a plain setting; a bad row sends its Kind's channels
	theirs := ok.ChannelsWith(plain)
	if !slices.ContainsFunc(mine, func(ch courier.Channel) bool { return slices.Contains(theirs, ch) }) {
		return false, nil
	}
	other.Enabled, other.UpdatedAt = false, now
	return true, tx.PutMessageProvider(ctx, other)
}

// mergeSettings applies a change to stored settings and returns the result
// and the names of the settings it changed, sorted.
func mergeSettings(k courier.Kind, stored map[string]string, in map[string]*string) (map[string]string, []string, error) {
	out := make(map[string]string, len(stored))
	for name, v := range stored {
		out[name] = v
	}
	var changed []string
	for name, v := range in {
		if name == "" || len(name) > 64 {
			return nil, nil, errs.Invalidf("config", "has a setting with no name or a name over 64 characters")
		}
		old, had := stored[name]
		switch {
		case v == nil || *v == "":
			delete(out, name)
		case isSecret(k, name) && had && *v == SecretHint(old):
			// The hint sent back, as read: the secret stays.
		case len(*v) > maxProviderSettingLen:
			return nil, nil, errs.Invalidf("config."+name, "must be at most %d characters", maxProviderSettingLen)
		default:
			out[name] = *v
		}
		if now, has := out[name]; has != had || now != old {
			changed = append(changed, "config."+name)
		}
	}
	if len(out) > maxProviderSettings {
		return nil, nil, errs.Invalidf("config", "has more than %d settings", maxProviderSettings)
	}
	slices.Sort(changed)
	return out, changed, nil
}

// destinationFields say where a provider sends, and so where its secrets go.
var destinationFields = []string{"url", "endpoint", "host", "port", "tls"}

// secretsFollowDestination refuses a change of destination that would carry a
// stored secret along: whoever may change the settings could otherwise point
// the provider at a host of theirs and read the secret from the next send.
// A new destination needs its secrets sent again in the same change.
func secretsFollowDestination(k courier.Kind, stored map[string]string, in map[string]*string, out map[string]string) error {
	moved := ""
	for _, f := range destinationFields {
		if out[f] != stored[f] {
			moved = f
			break
		}
	}
	if moved == "" {
		return nil
	}
	for _, f := range k.Fields {
		old, had := stored[f.Name]
		if !f.Secret || !had || out[f.Name] == "" {
			continue
		}
		if v, sent := in[f.Name]; !sent || v == nil || *v == SecretHint(old) {
			return errs.Invalidf("config."+f.Name, "must be sent again when config.%s changes: a stored secret never follows a provider to a new destination", moved)
		}
	}
	return nil
}

// checkDestination refuses, when it is saved, a url, endpoint or host
// setting that points to a host the dial-time checks would refuse.
func (s *Providers) checkDestination(in map[string]*string, merged map[string]string) error {
	if s.d.CheckHost == nil {
		return nil
	}
	for _, key := range []string{"url", "endpoint", "host"} {
		if v, ok := in[key]; !ok || v == nil || merged[key] == "" {
			continue
		}
		host := merged[key]
		if key != "host" {
			u, err := url.Parse(merged[key])
			if err != nil {
				continue // FromSpec refused it already when it matters
			}
			host = u.Host
		}
		if err := s.d.CheckHost(host); err != nil {
			var inv *errs.Invalid
			if errors.As(err, &inv) {
				return errs.Invalidf("config."+key, "%s", inv.Reason)
			}
			return errs.Invalidf("config."+key, "is not allowed")
		}
	}
	return nil
}

// specError turns a courier.FromSpec refusal into the field it names.
func specError(err error) error {
	var fe *courier.FieldError
	if errors.As(err, &fe) {
		return &errs.Invalid{Field: "config." + fe.Field, Reason: fe.Reason}
	}
	if errors.Is(err, courier.ErrUnknownType) {
		return ErrProviderNotFound
	}
	return err
}

// seal stores settings into row: the plain ones as JSON, the secret ones sealed.
func (s *Providers) seal(row *store.MessageProvider, k courier.Kind, settings map[string]string) (err error) {
	row.Config, row.SecretsSealed, err = secretset.Seal(s.sealer, settings, func(name string) bool { return isSecret(k, name) },
		secretsAD(row.AppID, row.Slug))
	return err
}

// Test sends one short message through one of the app's
// providers, enabled or not, with its stored settings, and says what
// happened. Who may manage the app may, a few times an hour. The channel is
// the recipient's: an e-mail address or an international phone number.
func (s *Providers) Test(ctx context.Context, p access.Principal, appID, slug, to string) (_ ProviderTest, err error) {
	defer errs.Wrap(&err, "test message provider")
	if err := access.App(ctx, s.db.Queries, p, appID, access.Manage); err != nil {
		return ProviderTest{}, err
	}
	slug = strings.TrimSpace(slug)
	if slug == "" {
		return ProviderTest{}, errs.Invalidf("slug", "is required")
	}
	app, err := s.db.GetApp(ctx, appID)
	if err != nil {
		return ProviderTest{}, notFound(err, ErrAppNotFound)
	}
	k, ok := s.kindOf(slug)
	if !ok {
		return ProviderTest{}, ErrProviderNotFound
	}
	addr, err := s.d.Recipient(to)
	if err != nil {
		return ProviderTest{}, errs.Invalidf("to", "must be an e-mail address or an international phone number")
	}
	ch := channelOf(addr)
	if !k.Sends(ch) {
		return ProviderTest{}, wrongChannel(k, ch)
	}
	rows, err := s.db.ListMessageProviders(ctx, appID)
	if err != nil {
		return ProviderTest{}, err
	}
	settings := map[string]string{}
	if i := slices.IndexFunc(rows, func(r store.MessageProvider) bool { return r.Slug == slug }); i >= 0 {
		if settings, err = s.settings(rows[i]); err != nil {
			return ProviderTest{}, err
		}
	}
	if !slices.Contains(k.ChannelsWith(settings), ch) {
		return ProviderTest{}, wrongChannel(k, ch) // an http provider set up for the other channel
	}
	rule := s.d.TestRule
	if rule == (ratelimit.Rule{}) {
		rule = DefaultProviderTestRule
	}
	if s.d.Limiter != nil {
		res, err := s.d.Limiter.Allow(ctx, "provider-test:app:"+appID, rule)
		if err != nil {
			return ProviderTest{}, err
		}
		if !res.Allowed {
			return ProviderTest{}, &RateLimitedError{RetryAfter: res.RetryAfter}
		}
	}
	prov, err := courier.FromSpec(courier.Spec{Type: k.Type, Config: settings}, s.env())
	if err != nil {
		return ProviderTest{}, specError(err)
	}
	m := courier.Message{Channel: ch, To: addr, AppID: appID,
		Text: "Test message from " + app.Name + ", sent by Gatehouse through the " + k.Type + " provider. Nothing to do."}
	if ch == courier.ChannelEmail {
		m.Subject = "Test message from " + app.Name
		m.Text += "\n\nIt was sent because someone who manages the app asked for a test of its e-mail settings."
	}
	sendCtx, cancel := context.WithTimeout(ctx, ProviderTestTimeout)
	defer cancel()
	msgID, sendErr := prov.Send(sendCtx, m)
	out := ProviderTest{Slug: slug, Channel: ch, To: courier.MaskAddress(addr), Delivered: sendErr == nil, MessageID: msgID}
	if sendErr != nil {
		out.MessageID = ""
		out.Error = testError(sendErr, settings, k)
	}
	s.log.InfoContext(ctx, "message provider test", "app_id", appID, "slug", slug, "channel", string(ch),
		"delivered", out.Delivered, "by", string(p.Kind), "credential_id", p.CredentialID)
	return out, nil
}

// wrongChannel refuses a test to an address k's provider cannot send to.
func wrongChannel(k courier.Kind, ch courier.Channel) error {
	return errs.Invalidf("to", "must be %s: this %s provider sends %s only", map[courier.Channel]string{
		courier.ChannelEmail: "a phone number", courier.ChannelSMS: "an e-mail address"}[ch], k.Type, other(ch))
}

func other(ch courier.Channel) string {
	if ch == courier.ChannelEmail {
		return "SMS"
	}
	return "e-mail"
}

// testError describes a failed test message. The text is the provider's,
// as courier classified it, with every secret setting scrubbed from it.
func testError(err error, settings map[string]string, k courier.Kind) *ProviderTestError {
	e := &ProviderTestError{Message: err.Error()}
	e.Temporary, e.RetryAfter = courier.Temporary(err)
	var se *courier.SendError
	if errors.As(err, &se) {
		e.Status, e.Code = se.Status, se.Code
	}
	for name, v := range settings {
		if isSecret(k, name) && v != "" {
			e.Message = strings.ReplaceAll(e.Message, v, "[redacted]")
			e.Code = strings.ReplaceAll(e.Code, v, "[redacted]")
		}
	}
	return e
}

// providerRecord is a message provider as the audit log keeps it: its
// secret settings as the hints the API shows.
type providerRecord struct {
	Type    string            `json:"type"`
	Name    string            `json:"name"`
	Enabled bool              `json:"enabled"`
	Config  map[string]string `json:"config"`
}

func auditProvider(p MessageProvider) providerRecord {
	return providerRecord{Type: p.Type, Name: p.Name, Enabled: p.Enabled, Config: p.Config}
}
