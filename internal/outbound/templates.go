// Templates render the e-mails and SMS Gatehouse sends, in the
// recipient's language, from the built-in templates or the app's own
// (overrides), and manages those overrides. Senders call Render, which
// reads an app's overrides from a short-lived cache, so a send costs no
// database read; the admin API calls List, Put, Delete and Preview.

package outbound

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/ttlcache"
)

// TemplateCacheTTL is how long Render may use an app's overrides without reading
// them again: a change made on another replica shows within it (a change
// through these Templates, at once). It matches the app cache of tenant.
const TemplateCacheTTL = 2 * time.Second

// ErrTemplateNotFound answers a delete of an override the app does not have.
var ErrTemplateNotFound = errors.New("message template not found")

// Templates render messages and keep apps' overrides.
type Templates struct {
	db        *store.DB
	templates *courier.Templates
	baseURL   string
	now       store.Clock
	log       *slog.Logger
	cache     *ttlcache.Cache[*courier.Overrides]
}

// TemplatesDeps are the Templates' collaborators.
type TemplatesDeps struct {
	DB        *store.DB
	Templates *courier.Templates
	// BaseURL is this server's public URL, for the sample links of previews.
	BaseURL string
	Now     func() time.Time
	Log     *slog.Logger
}

// NewTemplates returns the Templates.
func NewTemplates(d TemplatesDeps) *Templates {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	now := store.Clock(d.Now)
	return &Templates{db: d.DB, templates: d.Templates, baseURL: d.BaseURL, now: now, log: d.Log,
		cache: ttlcache.New[*courier.Overrides](TemplateCacheTTL, now.Read)}
}

// Render builds message name for channel ch of app appID in the first of
// langs (most preferred first) that has a template, falling back to each
// one's base language and then English; the app's override wins over the
// built-in template of the same locale (courier.Templates.Render). A cold
// cache is filled through q: the caller's transaction when it holds one,
// never a second connection.
func (s *Templates) Render(ctx context.Context, q store.Queries, appID, name string, ch courier.Channel, langs []string, v courier.Vars) (courier.Rendered, error) {
	o, err := s.overrides(ctx, q, appID)
	if err != nil {
		return courier.Rendered{}, err
	}
	return s.templates.Render(o, name, ch, langs, v)
}

// Languages is the order in which a recipient's languages are tried: the
// user's stored locale (the "locale" key of their metadata) when it is a
// language tag, then the request's Accept-Language entries.
func Languages(meta map[string]any, acceptLanguage []string) []string {
	out := make([]string, 0, len(acceptLanguage)+1)
	if l, ok := meta[MetaLocaleKey].(string); ok && courier.NormalizeLocale(l) != "" {
		out = append(out, courier.NormalizeLocale(l))
	}
	return append(out, acceptLanguage...)
}

// MetaLocaleKey is the key of user metadata that holds the user's language.
const MetaLocaleKey = "locale"

// overrides returns app's compiled overrides, from the cache when fresh.
func (s *Templates) overrides(ctx context.Context, q store.Queries, appID string) (*courier.Overrides, error) {
	o, _, fresh, gen := s.cache.Get(appID)
	if fresh {
		return o, nil
	}
	rows, err := q.ListMessageTemplates(ctx, appID)
	if err != nil {
		return nil, err
	}
	o, err = courier.CompileOverrides(toOverrides(rows))
	if err != nil {
		// A stored template that no longer compiles is left out: the
		// built-in one is sent instead.
		s.log.WarnContext(ctx, "message template override skipped", "app_id", appID, "err", err)
	}
	s.cache.Put(appID, o, gen)
	return o, nil
}

func toOverrides(rows []store.MessageTemplate) []courier.Override {
	out := make([]courier.Override, len(rows))
	for i, r := range rows {
		out[i] = courier.Override{Name: r.Name, Channel: courier.Channel(r.Channel), Locale: r.Locale, Subject: r.Subject, Text: r.Text, HTML: r.HTML}
	}
	return out
}

// Template is an app's override as stored.
type Template struct {
	courier.Override
	CreatedAt, UpdatedAt time.Time
}

func templateOf(m store.MessageTemplate) Template {
	return Template{Override: courier.Override{Name: m.Name, Channel: courier.Channel(m.Channel), Locale: m.Locale, Subject: m.Subject,
		Text: m.Text, HTML: m.HTML}, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

// Catalog is what GET message_templates answers: every message with its
// variables and built-in templates, and the app's overrides.
type Catalog struct {
	Locales   []string
	Messages  []Message
	Overrides []Template
}

// Message is one message's documentation and built-in templates.
type Message struct {
	courier.TemplateInfo
	// Builtin holds the built-in templates by channel, then locale.
	Builtin map[courier.Channel]map[string]courier.TemplateSource
}

// List returns the catalogue of messages and the app's overrides; it needs
// Manage on the app.
func (s *Templates) List(ctx context.Context, p access.Principal, appID string) (_ Catalog, err error) {
	defer errs.Wrap(&err, "list message templates")
	if err := access.App(ctx, s.db.Queries, p, appID, access.Manage); err != nil {
		return Catalog{}, err
	}
	rows, err := s.db.ListMessageTemplates(ctx, appID)
	if err != nil {
		return Catalog{}, err
	}
	c := Catalog{Locales: s.templates.Locales()}
	for _, r := range rows {
		c.Overrides = append(c.Overrides, templateOf(r))
	}
	for _, info := range courier.TemplateCatalog() {
		m := Message{TemplateInfo: info, Builtin: map[courier.Channel]map[string]courier.TemplateSource{}}
		for _, ch := range info.Channels {
			m.Builtin[ch] = map[string]courier.TemplateSource{}
			for _, loc := range c.Locales {
				if src, ok := s.templates.Builtin(info.Name, ch, loc); ok {
					m.Builtin[ch][loc] = src
				}
			}
		}
		c.Messages = append(c.Messages, m)
	}
	return c, nil
}

// Put saves the app's override of one message for one channel and locale,
// replacing an earlier one; it needs Manage on the app. The templates must
// parse and use only their message's variables (errs.Invalid naming the
// field and the variable).
func (s *Templates) Put(ctx context.Context, p access.Principal, appID string, ov courier.Override) (_ Template, err error) {
	defer errs.Wrap(&err, "put message template")
	if err := s.validate(ov); err != nil {
		return Template{}, err
	}
	ov.Locale = courier.NormalizeLocale(ov.Locale)
	var saved store.MessageTemplate
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, appID, access.Manage); err != nil {
			return err
		}
		saved, err = tx.PutMessageTemplate(ctx, store.MessageTemplate{AppID: appID, Name: ov.Name, Channel: string(ov.Channel),
			Locale: ov.Locale, Subject: ov.Subject, Text: ov.Text, HTML: ov.HTML, UpdatedAt: s.now.Read()})
		if err != nil {
			return err
		}
		return s.record(ctx, tx, p, appID, "message_template.saved", ov.Name, string(ov.Channel), ov.Locale, nil,
			templateRecord{Subject: ov.Subject, TextBytes: len(ov.Text), HTMLBytes: len(ov.HTML)})
	})
	if err != nil {
		return Template{}, err
	}
	s.cache.Forget(appID)
	s.log.InfoContext(ctx, "message template saved", "app_id", appID, "name", ov.Name, "channel", ov.Channel, "locale", ov.Locale,
		"principal", string(p.Kind), "credential_id", p.CredentialID)
	return templateOf(saved), nil
}

// Delete removes the app's override of one message for one channel and
// locale, so the built-in template is sent again; it needs Manage on the app.
func (s *Templates) Delete(ctx context.Context, p access.Principal, appID, name string, ch courier.Channel, locale string) (err error) {
	defer errs.Wrap(&err, "delete message template")
	locale = courier.NormalizeLocale(locale)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, appID, access.Manage); err != nil {
			return err
		}
		if err := tx.DeleteMessageTemplate(ctx, appID, name, string(ch), locale); errors.Is(err, store.ErrNotFound) {
			return ErrTemplateNotFound
		} else if err != nil {
			return err
		}
		return s.record(ctx, tx, p, appID, "message_template.deleted", name, string(ch), locale, map[string]bool{"overridden": true}, nil)
	})
	if err != nil {
		return err
	}
	s.cache.Forget(appID)
	s.log.InfoContext(ctx, "message template deleted", "app_id", appID, "name", name, "channel", ch, "locale", locale,
		"principal", string(p.Kind), "credential_id", p.CredentialID)
	return nil
}

// PreviewRequest asks for one message rendered with sample values: the
// templates in Draft when any part is set (checked as Put checks them),
// else what the app would send now for Locale.
type PreviewRequest struct {
	Name    string
	Channel courier.Channel
	Locale  string
	Draft   *courier.TemplateSource
}

// Preview is a rendered message. SMS is set for SMS: its length, encoding
// and segments.
type Preview struct {
	courier.Rendered
	SMS *courier.SMSInfo
}

// Preview renders a message with sample values (the app's own name); it
// needs Manage on the app.
func (s *Templates) Preview(ctx context.Context, p access.Principal, appID string, req PreviewRequest) (_ Preview, err error) {
	defer errs.Wrap(&err, "preview message template")
	if err := access.App(ctx, s.db.Queries, p, appID, access.Manage); err != nil {
		return Preview{}, err
	}
	locale := courier.DefaultLocale
	if req.Locale != "" {
		if locale = courier.NormalizeLocale(req.Locale); locale == "" {
			return Preview{}, errs.Invalidf("locale", "must be a language tag such as en, de or fr-CA")
		}
	}
	info, ok := courier.TemplateInfoOf(req.Name)
	if !ok {
		return Preview{}, errs.Invalidf("name", "is not a message")
	}
	if req.Channel != courier.ChannelEmail && req.Channel != courier.ChannelSMS {
		return Preview{}, errs.Invalidf("channel", "must be email or sms")
	}
	app, err := s.db.GetApp(ctx, appID)
	if err != nil {
		return Preview{}, err
	}
	v := s.sample(app.Name, req.Channel)
	var out Preview
	if req.Draft != nil {
		if err := s.validate(courier.Override{Name: info.Name, Channel: req.Channel, Locale: locale, Subject: req.Draft.Subject,
			Text: req.Draft.Text, HTML: req.Draft.HTML}); err != nil {
			return Preview{}, err
		}
		out.Rendered, err = courier.RenderSource(info.Name, req.Channel, locale, *req.Draft, v)
		out.Override = true
	} else {
		out.Rendered, err = s.Render(ctx, s.db.Queries, appID, info.Name, req.Channel, []string{locale}, v)
	}
	if err != nil {
		return Preview{}, err
	}
	if req.Channel == courier.ChannelSMS {
		m := courier.MeasureSMS(out.Text)
		out.SMS = &m
	}
	return out, nil
}

// sample is the example values of a preview: a short link by SMS, as sent.
func (s *Templates) sample(appName string, ch courier.Channel) courier.Vars {
	v := courier.SampleVars()
	v.AppName = appName
	v.Link = s.baseURL + "/m/Xy7Qp2Lm9Kd4Vw8B"
	if ch == courier.ChannelEmail {
		v.Link = s.baseURL + "/v1/auth/app/magic_links/open?sct_magic=eyJhbGciOiJFUzI1NiJ9.sample.signature"
	}
	return v
}

// validate checks an override, as errs.Invalid. An HTML part may load
// images from this server's own origin (base_url), nowhere else.
func (s *Templates) validate(ov courier.Override) error {
	err := courier.ValidateOverride(ov, origin(s.baseURL))
	var te *courier.TemplateError
	if errors.As(err, &te) {
		return errs.Invalidf(te.Field, "%s", te.Reason)
	}
	return err
}

// origin is the scheme://host of a URL ("" when it has none).
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return ""
	}
	return strings.ToLower(p.Scheme) + "://" + strings.ToLower(p.Host)
}

// templateRecord is a saved override as the audit log keeps it: its
// subject and the size of its parts, not the parts themselves.
type templateRecord struct {
	Subject   string `json:"subject"`
	TextBytes int    `json:"text_bytes"`
	HTMLBytes int    `json:"html_bytes"`
}

// record appends p's audit entry for a change of the app's override of
// name for channel and locale (target id name/channel/locale), inside tx.
func (s *Templates) record(ctx context.Context, tx *store.Tx, p access.Principal, appID, action, name, channel, locale string, before, after any) error {
	app, err := tx.GetApp(ctx, appID)
	if err != nil {
		return err
	}
	return audit.Record(ctx, tx.Queries, s.now.Read(), p, audit.Change{WorkspaceID: app.WorkspaceID, AppID: appID, Action: action,
		TargetType: "message_template", TargetID: name + "/" + channel + "/" + locale, Before: before, After: after})
}
