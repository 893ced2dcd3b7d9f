package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
)

// Message templates: the built-in messages and an app's overrides
// (docs/templates.md).

const templatesDoc = "Needs Manage on the app: its API secret, or a workspace secret of an owner or admin (API keys may not). " +
	"See docs/templates.md for every message, its variables, escaping, locales and fallback."

// TemplateVariable documents one variable of a message.
type TemplateVariable struct {
	Name        string `json:"name" example:"Code" doc:"The variable, as {{.name}} in a template."`
	Description string `json:"description" doc:"What it holds."`
	Secret      bool   `json:"secret" doc:"A code or link: whoever reads the message can sign in with it."`
	Optional    bool   `json:"optional" doc:"May be empty: test it with {{with .Name}}...{{end}}."`
	Example     string `json:"example" example:"123456" doc:"The sample value previews use."`
}

// TemplateParts are the templates of one message for one channel.
type TemplateParts struct {
	Subject string `json:"subject,omitempty" doc:"E-mail only: text/template, folded onto one line." example:"Your {{.AppName}} code"`
	Text    string `json:"text" doc:"The plain-text e-mail body, or the SMS (text/template)." example:"{{.Code}} is your {{.AppName}} code."`
	HTML    string `json:"html,omitempty" doc:"E-mail only: html/template, values auto-escaped. Empty: a text-only e-mail." example:"<p>Your code: <b>{{.Code}}</b></p>"`
}

// MessageTemplateInfo is one message with its built-in templates.
type MessageTemplateInfo struct {
	Name        string                              `json:"name" example:"login_code" doc:"The message: code_locked, invitation, login_code, magic_link or security_notice."`
	Description string                              `json:"description" doc:"When Gatehouse sends it."`
	Channels    []string                            `json:"channels" example:"[\"email\",\"sms\"]" doc:"The channels it goes out on: email, sms."`
	Variables   []TemplateVariable                  `json:"variables" doc:"The variables its templates may use."`
	Builtin     map[string]map[string]TemplateParts `json:"built_in" doc:"The built-in templates by channel, then locale."`
}

// MessageTemplate is an app's override of one message for one channel and locale.
type MessageTemplate struct {
	Name      string    `json:"name" example:"login_code" doc:"The message it overrides."`
	Channel   string    `json:"channel" example:"sms" enum:"email,sms" doc:"email or sms."`
	Locale    string    `json:"locale" example:"de" doc:"A BCP 47 language tag (en, de, pt-BR)."`
	Subject   string    `json:"subject,omitempty" doc:"E-mail subject template; empty for SMS."`
	Text      string    `json:"text" example:"{{.Code}} ist Ihr Code für {{.AppName}}." doc:"Plain-text body template (the SMS itself for sms)."`
	HTML      string    `json:"html,omitempty" doc:"E-mail HTML body template; empty: the e-mail is text only."`
	CreatedAt time.Time `json:"created_at" doc:"When it was created (RFC 3339)."`
	UpdatedAt time.Time `json:"updated_at" doc:"When it last changed (RFC 3339)."`
}

func messageTemplateOut(m outbound.Template) MessageTemplate {
	return MessageTemplate{Name: m.Name, Channel: string(m.Channel), Locale: m.Locale, Subject: m.Subject, Text: m.Text, HTML: m.HTML,
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

type messageTemplatesOutput struct {
	Body struct {
		Locales   []string              `json:"locales" doc:"The locales of the built-in templates." example:"[\"de\",\"en\",\"es\",\"fr\"]"`
		Messages  []MessageTemplateInfo `json:"messages" doc:"Every message Gatehouse sends, with its built-in templates and the app's overrides."`
		Overrides []MessageTemplate     `json:"overrides" doc:"The app's own templates."`
	}
}

var listMessageTemplatesOp = operation{id: "listMessageTemplates", method: "GET", path: "/v1/apps/{app_id}/message_templates", summary: "List messages, their variables and the app's templates", tag: "Messages",
	auth: authApp,
	desc: "Every message Gatehouse sends (code_locked, invitation, login_code, magic_link, security_notice), its channels, its variables (which are secret), its built-in templates per locale, and the app's overrides. " + templatesDoc,
	resp: body(func(o *messageTemplatesOutput) {
		o.Body.Locales = []string{"de", "en", "es", "fr"}
		o.Body.Messages = []MessageTemplateInfo{{Name: "login_code", Description: "A one-time sign-in code.", Channels: []string{"email", "sms"},
			Variables: []TemplateVariable{{Name: "Code", Description: "The code.", Secret: true, Example: "123456"}},
			Builtin:   map[string]map[string]TemplateParts{"email": {"en": {Subject: "Your {{.AppName}} code", Text: "{{.Code}} is your {{.AppName}} code."}}}}}
		o.Body.Overrides = []MessageTemplate{{Name: "login_code", Channel: "sms", Locale: "de", Text: "{{.Code}} ist Ihr Code für {{.AppName}}.", CreatedAt: exT0, UpdatedAt: exT1}}
	})}

func (s *Server) listMessageTemplates(ctx context.Context, _ *appIDInput) (*messageTemplatesOutput, error) {
	c, err := s.Outbound.Templates.List(ctx, principalFrom(ctx), appFrom(ctx).ID)
	if err != nil {
		return nil, err
	}
	out := &messageTemplatesOutput{}
	out.Body.Locales = c.Locales
	out.Body.Messages = make([]MessageTemplateInfo, 0, len(c.Messages))
	for _, m := range c.Messages {
		info := MessageTemplateInfo{Name: m.Name, Description: m.Description, Builtin: map[string]map[string]TemplateParts{}}
		for _, ch := range m.Channels {
			info.Channels = append(info.Channels, string(ch))
		}
		for _, v := range m.Variables {
			info.Variables = append(info.Variables, TemplateVariable{Name: v.Name, Description: v.Description, Secret: v.Secret,
				Optional: v.Optional, Example: v.Example})
		}
		for ch, byLocale := range m.Builtin {
			info.Builtin[string(ch)] = map[string]TemplateParts{}
			for loc, src := range byLocale {
				info.Builtin[string(ch)][loc] = TemplateParts{Subject: src.Subject, Text: src.Text, HTML: src.HTML}
			}
		}
		out.Body.Messages = append(out.Body.Messages, info)
	}
	out.Body.Overrides = make([]MessageTemplate, 0, len(c.Overrides))
	for _, o := range c.Overrides {
		out.Body.Overrides = append(out.Body.Overrides, messageTemplateOut(o))
	}
	return out, nil
}

type messageTemplatePath struct {
	AppID   string `path:"app_id" doc:"The app id."`
	Name    string `path:"name" example:"login_code" doc:"The message: code_locked, invitation, login_code, magic_link or security_notice."`
	Channel string `path:"channel" enum:"email,sms" doc:"email or sms."`
	Locale  string `path:"locale" example:"de" doc:"A language tag: de, fr, fr-CA, pt-BR..."`
}

type putMessageTemplateInput struct {
	AppID   string `path:"app_id" doc:"The app id."`
	Name    string `path:"name" example:"login_code" doc:"The message: code_locked, invitation, login_code, magic_link or security_notice."`
	Channel string `path:"channel" enum:"email,sms" doc:"email or sms."`
	Locale  string `path:"locale" example:"de" doc:"A language tag: de, fr, fr-CA, pt-BR..."`
	Body    struct {
		Template TemplateParts `json:"template" doc:"The template to save."`
	}
}

type messageTemplateOutput struct {
	Body struct {
		Template MessageTemplate `json:"template" doc:"The saved template."`
	}
}

var putMessageTemplateOp = operation{id: "putMessageTemplate", method: "PUT", path: "/v1/apps/{app_id}/message_templates/{name}/{channel}/{locale}", summary: "Save the app's template of a message", tag: "Messages",
	auth: authApp,
	desc: "Creates or replaces the app's own template of one message for one channel and locale. E-mail: subject and text required, html optional (without it the e-mail is text only). SMS: text only. Templates must parse and may use only the message's variables: a 400 names the field and the variable. The html part may not run, embed or load anything: no script, event attributes (on...), javascript: URLs, iframe, object, embed, form or its controls, and no images, stylesheets, CSS url() or @import from other hosts (inline data:image/ URLs and this server's own origin only); links may be https, mailto: or tel:, and a template value may stand in a URL only as href=\"{{.Link}}\" (400 invalid_request naming html and what was refused). Limits: subject 500, text 20,000 (SMS 1,000), html 100,000 bytes. Takes effect within 2 seconds on every replica. " + templatesDoc,
	req:  `{"template":{"text":"{{.Code}} ist Ihr Code für {{.AppName}}."}}`,
	resp: body(func(o *messageTemplateOutput) {
		o.Body.Template = MessageTemplate{Name: "login_code", Channel: "sms", Locale: "de", Text: "{{.Code}} ist Ihr Code für {{.AppName}}.", CreatedAt: exT0, UpdatedAt: exT1}
	})}

func (s *Server) putMessageTemplate(ctx context.Context, in *putMessageTemplateInput) (*messageTemplateOutput, error) {
	t := in.Body.Template
	m, err := s.Outbound.Templates.Put(ctx, principalFrom(ctx), appFrom(ctx).ID, courier.Override{Name: in.Name, Channel: courier.Channel(in.Channel),
		Locale: in.Locale, Subject: t.Subject, Text: t.Text, HTML: t.HTML})
	if err != nil {
		return nil, err
	}
	out := &messageTemplateOutput{}
	out.Body.Template = messageTemplateOut(m)
	return out, nil
}

var deleteMessageTemplateOp = operation{id: "deleteMessageTemplate", method: "DELETE", path: "/v1/apps/{app_id}/message_templates/{name}/{channel}/{locale}", summary: "Delete the app's template of a message", tag: "Messages",
	auth: authApp, errors: []string{"template_not_found"},
	desc: "The built-in template is sent again. 404 template_not_found when the app has no such template. " + templatesDoc,
	resp: okBody}

func (s *Server) deleteMessageTemplate(ctx context.Context, in *messageTemplatePath) (*okOutput, error) {
	if err := s.Outbound.Templates.Delete(ctx, principalFrom(ctx), appFrom(ctx).ID, in.Name, courier.Channel(in.Channel), in.Locale); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

type previewMessageTemplateInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Body  struct {
		Name     string         `json:"name" example:"login_code" doc:"The message to render."`
		Channel  string         `json:"channel" enum:"email,sms" example:"sms" doc:"email or sms."`
		Locale   string         `json:"locale,omitempty" example:"de" doc:"Default en."`
		Template *TemplateParts `json:"template,omitempty" doc:"A draft to render (checked as when saved). Without it: what the app sends now in this locale (its override or the built-in template, with fallback)."`
	}
}

type previewMessageTemplateOutput struct {
	Body struct {
		Name     string           `json:"name" example:"login_code" doc:"The message rendered."`
		Channel  string           `json:"channel" example:"sms" doc:"email or sms."`
		Locale   string           `json:"locale" doc:"The locale of the template used." example:"de"`
		Override bool             `json:"override" doc:"The app's own template (or the draft) was used."`
		Subject  string           `json:"subject,omitempty" doc:"The rendered subject (e-mail)."`
		Text     string           `json:"text" example:"123456 ist Ihr Code für Acme. Er läuft in 10 Minuten ab." doc:"The rendered text body, or the SMS."`
		HTML     string           `json:"html,omitempty" doc:"The rendered HTML body; empty when the e-mail is text only."`
		SMS      *courier.SMSInfo `json:"sms,omitempty" doc:"SMS only: length in characters of its encoding, GSM-7 or UCS-2, and segments billed."`
	}
}

var previewMessageTemplateOp = operation{id: "previewMessageTemplate", method: "POST", path: "/v1/apps/{app_id}/message_templates/preview", summary: "Render a message with sample values", tag: "Messages",
	auth: authApp,
	desc: "Renders a draft (`template`) or what the app sends now for `locale` (its override or the built-in template, with fallback to the base language and English), with sample values and the app's name. Answers subject, text and html; for SMS also its length, encoding (GSM-7 or UCS-2) and segments. A draft is checked as when saved (400 naming the field and variable). " + templatesDoc,
	req:  `{"name":"login_code","channel":"sms","locale":"de"}`,
	resp: body(func(o *previewMessageTemplateOutput) {
		b := &o.Body
		b.Name, b.Channel, b.Locale, b.Override, b.Text = "login_code", "sms", "de", true, "123456 ist Ihr Code für Demo."
		b.SMS = ptr(courier.MeasureSMS(b.Text))
	})}

func (s *Server) previewMessageTemplate(ctx context.Context, in *previewMessageTemplateInput) (*previewMessageTemplateOutput, error) {
	req := outbound.PreviewRequest{Name: in.Body.Name, Channel: courier.Channel(in.Body.Channel), Locale: in.Body.Locale}
	if t := in.Body.Template; t != nil {
		req.Draft = &courier.TemplateSource{Subject: t.Subject, Text: t.Text, HTML: t.HTML}
	}
	p, err := s.Outbound.Templates.Preview(ctx, principalFrom(ctx), appFrom(ctx).ID, req)
	if err != nil {
		return nil, err
	}
	out := &previewMessageTemplateOutput{}
	b := &out.Body
	b.Name, b.Channel, b.Locale, b.Override = req.Name, string(req.Channel), p.Locale, p.Override
	b.Subject, b.Text, b.HTML, b.SMS = p.Subject, p.Text, p.HTML, p.SMS
	return out, nil
}

var openShortLinkOp = operation{id: "openShortLink", method: "GET", path: "/m/{code}", summary: "Open a magic link or invitation sent by SMS", tag: "Sign-in",
	contentType: "text/html", errors: []string{"503"},
	pages: map[int]string{http.StatusSeeOther: "On to the consent link or the invitation link", http.StatusNotFound: "Unknown code, or a used, replaced or expired link",
		http.StatusTooManyRequests: "Too many short links opened from this address (ratelimit.short_link_per_ip)"},
	desc: "A magic link or an invitation sent by SMS is this short link. A magic link's redirects (303) to the consent link the e-mail would carry (GET /v1/auth/{app_id}/magic_links/open), which works as usual (single use); an invitation's to the invitation link on the app's login page (?sct_magic=...). 404 page: unknown code, or a link that was used, replaced or has expired. 429 page with Retry-After: more short links opened from the client's address than ratelimit.short_link_per_ip allows (found or not; the code is not looked up)."}

// openShortLink resolves a magic link or invitation sent by SMS
// ({base_url}/m/{code}) to its consent or invitation link. Unknown, used
// or expired: a 404 page; too many opened from one address: a 429 page.
func (s *Server) openShortLink(w http.ResponseWriter, r *http.Request) {
	appID, link, err := s.SignIn.ResolveShortLink(r.Context(), r.PathValue("code"), client(r.Context(), r.UserAgent()))
	if err == nil {
		noStore(w)
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.Redirect(w, r, link, http.StatusSeeOther)
		return
	}
	if limited, ok := errors.AsType[*signin.RateLimitedError](err); ok {
		s.renderNotice(w, r, http.StatusTooManyRequests, noticeView{Title: "Too many links opened",
			Message: "Too many sign-in links were opened from your network. Wait a few minutes, then open the link again."},
			ratelimit.RetryAfterSeconds(limited.RetryAfter))
		return
	}
	if !errors.Is(err, signin.ErrShortLinkNotFound) {
		s.Log.ErrorContext(r.Context(), "short link", "request_id", requestID(r.Context()), "err", err)
		http.Error(w, "Service temporarily unavailable", http.StatusServiceUnavailable)
		return
	}
	if app, aerr := s.Tenants.App(r.Context(), appID); appID != "" && aerr == nil {
		s.renderMagicLink(w, r, http.StatusNotFound, magicLinkView{Page: "expired", Title: "Link expired", App: app, LoginURL: loginURL(app)})
		return
	}
	s.renderNotice(w, r, http.StatusNotFound, noticeView{Title: "Link expired",
		Message: "This sign-in link is unknown or has expired. Ask the app for a new one."}, 0)
}
