package courier

import (
	"embed"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"
)

// templateFiles holds the built-in templates, one directory per locale: for
// every message name, name.subject, name.txt (text/template) and name.html
// (html/template) for e-mail, and name.sms (text/template) for SMS.
//
//go:embed templates
var templateFiles embed.FS

// The messages Gatehouse sends.
const (
	TemplateLoginCode      = "login_code"
	TemplateMagicLink      = "magic_link"
	TemplateInvitation     = "invitation"
	TemplateCodeLocked     = "code_locked"
	TemplateSecurityNotice = "security_notice"
)

// DefaultLocale is the locale every message exists in, and the last fallback.
const DefaultLocale = "en"

// Variable is one value a template may show.
type Variable struct {
	Name        string // as written in a template: {{.Name}}
	Description string
	Secret      bool   // a code or link: whoever reads the message can sign in with it
	Optional    bool   // may be empty; test it with {{with .Name}}...{{end}}
	Example     string // the value previews use
}

// TemplateInfo documents one message: what it is for, how it may travel and
// the variables its templates may use.
type TemplateInfo struct {
	Name        string
	Description string
	Channels    []Channel
	Variables   []Variable
}

var (
	varAppName = Variable{Name: "AppName", Description: "The app's name, as set in its settings.", Example: "Acme"}
	varCode    = Variable{Name: "Code", Description: "The one-time code.", Secret: true, Example: "123456"}
	varLink    = Variable{Name: "Link", Description: "The sign-in or invitation link (by SMS a short link).", Secret: true,
		Example: "https://auth.example.com/m/Xy7Qp2Lm9Kd4Vw8B"}
	varExpiresIn = Variable{Name: "ExpiresIn", Description: "How long the code or link works, in words of the message's language (\"10 minutes\", \"10 Minuten\").",
		Optional: true, Example: "10 minutes"}
	varExpiresInMinutes = Variable{Name: "ExpiresInMinutes", Description: "The same as a number of minutes, for languages Gatehouse does not translate.",
		Optional: true, Example: "10"}
)

// templateCatalog is every message, sorted by name.
var templateCatalog = []TemplateInfo{
	{Name: TemplateCodeLocked, Description: "Sign-in by code was locked after many wrong codes; sent once to the address the codes went to. Holds no secret.",
		Channels: []Channel{ChannelEmail, ChannelSMS}, Variables: []Variable{varAppName}},
	{Name: TemplateInvitation, Description: "An invitation to an app (POST /v1/{app_id}/users/invite and the server SDK's invite).",
		Channels: []Channel{ChannelEmail, ChannelSMS}, Variables: []Variable{varAppName, varLink, varExpiresIn, varExpiresInMinutes,
			{Name: "To", Description: "The invited address, so a forwarded e-mail is recognisable.", Optional: true, Example: "ada@example.com"}}},
	{Name: TemplateLoginCode, Description: "A one-time code: sign-in by e-mail or SMS code, a second factor, a step-up or a contact check.",
		Channels: []Channel{ChannelEmail, ChannelSMS}, Variables: []Variable{varAppName, varCode, varExpiresIn, varExpiresInMinutes}},
	{Name: TemplateMagicLink, Description: "A magic sign-in link. By SMS the link is a short link to this server (/m/{code}).",
		Channels: []Channel{ChannelEmail, ChannelSMS}, Variables: []Variable{varAppName, varLink, varExpiresIn, varExpiresInMinutes,
			{Name: "RequestedFrom", Description: "The device that asked: browser, system, address and place.", Optional: true,
				Example: "Firefox on Linux, 203.0.113.7"}}},
	{Name: TemplateSecurityNotice, Description: "A change to how the user signs in (a passkey or authenticator app added or removed, backup codes, a changed e-mail or phone). Holds no secret.",
		Channels: []Channel{ChannelEmail, ChannelSMS}, Variables: []Variable{varAppName,
			{Name: "Notice", Description: "What changed, one sentence in the message's language, written by Gatehouse.",
				Example: "A passkey (MacBook) was added to your account."}}},
}

// TemplateCatalog returns every message with its channels and variables.
func TemplateCatalog() []TemplateInfo { return slices.Clone(templateCatalog) }

// TemplateInfoOf returns the documentation of the message name.
func TemplateInfoOf(name string) (TemplateInfo, bool) {
	i := slices.IndexFunc(templateCatalog, func(t TemplateInfo) bool { return t.Name == name })
	if i < 0 {
		return TemplateInfo{}, false
	}
	return templateCatalog[i], true
}

// Vars are the values of one message. Each template sees only the variables
// its message documents; ExpiresIn and Notice are put into words in the
// language of the template that renders them.
type Vars struct {
	AppName       string
	Code          string        // secret
	Link          string        // secret
	ExpiresIn     time.Duration // 0: not said
	RequestedFrom string
	To            string
	Notice        Notice
}

// SampleVars are the example values of every variable, for previews.
func SampleVars() Vars {
	return Vars{AppName: varAppName.Example, Code: varCode.Example, Link: varLink.Example, ExpiresIn: 10 * time.Minute,
		RequestedFrom: "Firefox on Linux, 203.0.113.7", To: "ada@example.com", Notice: Notice{Kind: NoticePasskeyAdded, Detail: "MacBook"}}
}

// data is what a template of info executes with: its documented variables
// only, so even {{.}} shows nothing else.
func (v Vars) data(info TemplateInfo, locale string) map[string]string {
	all := map[string]string{"AppName": v.AppName, "Code": v.Code, "Link": v.Link, "RequestedFrom": v.RequestedFrom, "To": v.To}
	if v.ExpiresIn > 0 {
		all["ExpiresIn"] = Duration(locale, v.ExpiresIn)
		all["ExpiresInMinutes"] = strconv.Itoa(max(1, int(v.ExpiresIn/time.Minute)))
	}
	if v.Notice.Kind != "" {
		all["Notice"] = NoticeText(locale, v.Notice)
	}
	d := make(map[string]string, len(info.Variables))
	for _, x := range info.Variables {
		d[x.Name] = all[x.Name]
	}
	return d
}

// Rendered is a message ready to send. SMS messages have only Text.
type Rendered struct {
	Subject, Text, HTML string
	Locale              string // the locale of the template used
	Override            bool   // the app's own template was used
}

// compiled is one message's templates for one channel and locale. For SMS
// only text is set; an e-mail override may have no html (a text-only e-mail).
type compiled struct {
	info          TemplateInfo
	subject, text *texttemplate.Template
	html          *htmltemplate.Template
}

type templateKey struct {
	name    string
	channel Channel
	locale  string
}

// Templates is the parsed set of built-in templates. It is safe for concurrent use.
type Templates struct {
	builtin map[templateKey]*compiled
	locales []string
}

// LoadTemplates parses every built-in template once. It fails if a template
// is malformed or uses a variable its message does not document, a locale
// lacks a part of a message, or an unexpected file is present.
func LoadTemplates() (*Templates, error) {
	return loadTemplates(templateFiles, "templates")
}

// loadTemplates parses the locale directories in dir of fsys; it is separate
// from LoadTemplates so tests can feed broken sets.
func loadTemplates(fsys fs.FS, dir string) (*Templates, error) {
	dirs, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("courier: read templates: %w", err)
	}
	t := &Templates{builtin: map[templateKey]*compiled{}}
	for _, d := range dirs {
		if !d.IsDir() || NormalizeLocale(d.Name()) != d.Name() {
			return nil, fmt.Errorf("courier: unexpected %q in templates: want one directory per locale", d.Name())
		}
		if err := t.loadLocale(fsys, path.Join(dir, d.Name()), d.Name()); err != nil {
			return nil, err
		}
		t.locales = append(t.locales, d.Name())
	}
	for _, info := range templateCatalog {
		for _, ch := range info.Channels {
			if t.builtin[templateKey{info.Name, ch, DefaultLocale}] == nil {
				return nil, fmt.Errorf("courier: template %s has no %s version in %s", info.Name, ch, DefaultLocale)
			}
		}
	}
	return t, nil
}

func (t *Templates) loadLocale(fsys fs.FS, dir, locale string) error {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return fmt.Errorf("courier: read templates: %w", err)
	}
	parts := map[string]map[string]string{}
	for _, e := range entries {
		ext := path.Ext(e.Name())
		name := strings.TrimSuffix(e.Name(), ext)
		if _, ok := TemplateInfoOf(name); !ok || e.IsDir() || !slices.Contains([]string{".subject", ".txt", ".html", ".sms"}, ext) {
			return fmt.Errorf("courier: unexpected template file %s/%s", locale, e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("courier: read template %q: %w", e.Name(), err)
		}
		if parts[name] == nil {
			parts[name] = map[string]string{}
		}
		parts[name][ext] = string(b)
	}
	for _, info := range templateCatalog {
		p := parts[info.Name]
		for _, ext := range []string{".subject", ".txt", ".html", ".sms"} {
			if _, ok := p[ext]; !ok {
				return fmt.Errorf("courier: template %s/%s has no %s part", locale, info.Name, ext)
			}
		}
		email, err := compile(info, ChannelEmail, p[".subject"], p[".txt"], p[".html"])
		if err != nil {
			return fmt.Errorf("courier: template %s/%s: %w", locale, info.Name, err)
		}
		sms, err := compile(info, ChannelSMS, "", p[".sms"], "")
		if err != nil {
			return fmt.Errorf("courier: template %s/%s: %w", locale, info.Name, err)
		}
		t.builtin[templateKey{info.Name, ChannelEmail, locale}] = email
		t.builtin[templateKey{info.Name, ChannelSMS, locale}] = sms
	}
	return nil
}

// Locales lists the locales of the built-in templates, sorted.
func (t *Templates) Locales() []string {
	out := slices.Clone(t.locales)
	sort.Strings(out)
	return out
}

// Builtin returns the source of a built-in template: subject, text and html
// for e-mail, text for SMS; ok is false when there is none in locale.
func (t *Templates) Builtin(name string, ch Channel, locale string) (src TemplateSource, ok bool) {
	c := t.builtin[templateKey{name, ch, locale}]
	if c == nil {
		return TemplateSource{}, false
	}
	src.Text = c.text.Root.String()
	if c.subject != nil {
		src.Subject = c.subject.Root.String()
	}
	if c.html != nil {
		src.HTML = c.html.Tree.Root.String()
	}
	return src, true
}

// TemplateSource is the text of one message's templates for one channel.
type TemplateSource struct {
	Subject, Text, HTML string
}

// Render builds a message for the first locale of prefs that has a template:
// for each candidate (each preferred locale, then its base language, then
// DefaultLocale), the app's override in o wins over the built-in. The HTML
// part is auto-escaped by html/template; the subject is folded onto one line
// because it becomes a header; an SMS text is trimmed.
func (t *Templates) Render(o *Overrides, name string, ch Channel, prefs []string, v Vars) (Rendered, error) {
	for _, loc := range Candidates(prefs) {
		k := templateKey{name, ch, loc}
		if c := o.get(k); c != nil {
			r, err := c.render(name, loc, v)
			r.Override = true
			return r, err
		}
		if c := t.builtin[k]; c != nil {
			return c.render(name, loc, v)
		}
	}
	return Rendered{}, fmt.Errorf("courier: unknown template %q for %s", name, ch)
}

// RenderSource renders templates that are not saved (a preview of a draft),
// after the checks of ValidateTemplate.
func RenderSource(name string, ch Channel, locale string, src TemplateSource, v Vars) (Rendered, error) {
	info, ok := TemplateInfoOf(name)
	if !ok {
		return Rendered{}, &TemplateError{Field: "name", Reason: "is not a message: " + strings.Join(templateNames(), ", ")}
	}
	c, err := compile(info, ch, src.Subject, src.Text, src.HTML)
	if err != nil {
		return Rendered{}, err
	}
	return c.render(name, locale, v)
}

// Bounds on what one rendered part may be; checked templates stay far below
// them, so reaching one means a template that should have been refused.
const (
	maxRenderedSMS   = 1600 // ten GSM-7 segments
	maxRenderedEmail = 256 << 10
	maxSavedSMS      = 640 // four GSM-7 segments; saved SMS templates must render within it
)

// errTooLong stops a render that passed its bound.
var errTooLong = errors.New("the rendered message is too long")

// boundedBuilder is a strings.Builder that refuses to grow past max.
type boundedBuilder struct {
	strings.Builder
	max int
}

func (b *boundedBuilder) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, errTooLong
	}
	return b.Builder.Write(p)
}

func (c *compiled) render(name, locale string, v Vars) (Rendered, error) {
	d := v.data(c.info, locale)
	out := Rendered{Locale: locale}
	b := boundedBuilder{max: maxRenderedEmail}
	if c.subject == nil {
		b.max = maxRenderedSMS
	}
	if c.subject != nil {
		if err := c.subject.Execute(&b, d); err != nil {
			return Rendered{}, fmt.Errorf("courier: render %s subject: %w", name, err)
		}
		out.Subject = strings.Join(strings.Fields(b.String()), " ")
		b.Reset()
	}
	if err := c.text.Execute(&b, d); err != nil {
		return Rendered{}, fmt.Errorf("courier: render %s text: %w", name, err)
	}
	out.Text = b.String()
	if c.subject == nil { // SMS
		out.Text = strings.TrimSpace(out.Text)
	}
	if c.html != nil {
		b.Reset()
		if err := c.html.Execute(&b, d); err != nil {
			return Rendered{}, fmt.Errorf("courier: render %s html: %w", name, err)
		}
		out.HTML = b.String()
	}
	return out, nil
}

func templateNames() []string {
	out := make([]string, len(templateCatalog))
	for i, t := range templateCatalog {
		out[i] = t.Name
	}
	return out
}

// Overrides are an app's own templates, parsed. A nil *Overrides has none.
type Overrides struct {
	m map[templateKey]*compiled
}

// Override is an app's own version of one message for one channel and
// locale. An e-mail override has a subject and a text, and optionally HTML
// (without it the e-mail is text only); an SMS override has only a text.
type Override struct {
	Name    string
	Channel Channel
	Locale  string
	Subject string
	Text    string
	HTML    string
}

// CompileOverrides parses an app's overrides for Render. One that no longer
// compiles (a message or variable since removed) is left out and reported
// in the error; the others are kept.
func CompileOverrides(list []Override) (*Overrides, error) {
	o := &Overrides{m: make(map[templateKey]*compiled, len(list))}
	var bad []error
	for _, ov := range list {
		info, ok := TemplateInfoOf(ov.Name)
		if !ok {
			bad = append(bad, fmt.Errorf("courier: override of unknown message %q", ov.Name))
			continue
		}
		c, err := compile(info, ov.Channel, ov.Subject, ov.Text, ov.HTML)
		if err != nil {
			bad = append(bad, fmt.Errorf("courier: override %s/%s/%s: %w", ov.Name, ov.Channel, ov.Locale, err))
			continue
		}
		o.m[templateKey{ov.Name, ov.Channel, NormalizeLocale(ov.Locale)}] = c
	}
	return o, errors.Join(bad...)
}

func (o *Overrides) get(k templateKey) *compiled {
	if o == nil {
		return nil
	}
	return o.m[k]
}

// Size limits of a template's parts, in bytes.
const (
	MaxSubjectSize = 500
	MaxTextSize    = 20_000
	MaxHTMLSize    = 100_000
	MaxSMSSize     = 1_000
)

// TemplateError is a template that cannot be saved: Field is "subject",
// "text", "html" or "locale"; Reason says why, naming the variable at fault.
type TemplateError struct {
	Field  string
	Reason string
}

func (e *TemplateError) Error() string { return e.Field + ": " + e.Reason }

// ValidateOverride checks an override before it is saved: a known message,
// channel and locale, the parts its channel takes within their size limits,
// templates that parse, use only the variables of their message, and render
// with the sample values and with every optional variable empty; and an
// HTML part that neither runs, embeds nor loads anything (checkHTMLSafety;
// assetOrigin, this server's scheme://host, is where it may load images
// from besides inline data:image/ URLs, "" nowhere).
func ValidateOverride(ov Override, assetOrigin string) error {
	info, ok := TemplateInfoOf(ov.Name)
	if !ok {
		return &TemplateError{Field: "name", Reason: "is not a message: " + strings.Join(templateNames(), ", ")}
	}
	if !slices.Contains(info.Channels, ov.Channel) {
		return &TemplateError{Field: "channel", Reason: "must be email or sms"}
	}
	if ov.Locale == "" || NormalizeLocale(ov.Locale) == "" {
		return &TemplateError{Field: "locale", Reason: "must be a language tag such as en, de or fr-CA"}
	}
	if _, err := compile(info, ov.Channel, ov.Subject, ov.Text, ov.HTML); err != nil {
		return err
	}
	if ov.Channel == ChannelEmail && ov.HTML != "" {
		return checkHTMLSafety(ov.HTML, assetOrigin)
	}
	return nil
}

// compile parses and checks one message's parts for ch.
func compile(info TemplateInfo, ch Channel, subject, text, html string) (*compiled, error) {
	allowed := map[string]bool{}
	for _, v := range info.Variables {
		allowed[v.Name] = true
	}
	c := &compiled{info: info}
	var err error
	switch ch {
	case ChannelSMS:
		if subject != "" {
			return nil, &TemplateError{Field: "subject", Reason: "is for e-mail only: an SMS has only a text"}
		}
		if html != "" {
			return nil, &TemplateError{Field: "html", Reason: "is for e-mail only: an SMS has only a text"}
		}
		if c.text, err = parseText("text", text, MaxSMSSize, allowed); err != nil {
			return nil, err
		}
	case ChannelEmail:
		if c.subject, err = parseText("subject", subject, MaxSubjectSize, allowed); err != nil {
			return nil, err
		}
		if c.text, err = parseText("text", text, MaxTextSize, allowed); err != nil {
			return nil, err
		}
		if html != "" {
			if len(html) > MaxHTMLSize {
				return nil, &TemplateError{Field: "html", Reason: fmt.Sprintf("is longer than %d bytes", MaxHTMLSize)}
			}
			if err := checkTemplate("html", html, allowed); err != nil {
				return nil, err
			}
			if c.html, err = htmltemplate.New("html").Option("missingkey=error").Parse(html); err != nil {
				return nil, &TemplateError{Field: "html", Reason: "does not parse: " + parseReason(err)}
			}
		}
	default:
		return nil, &TemplateError{Field: "channel", Reason: "must be email or sms"}
	}
	// Execute once with every value and once with the optional ones empty:
	// html/template escapes on first use, and a template that fails (a
	// field of a string inside {{with}}) is refused now, not when sending.
	full := SampleVars()
	empty := full
	empty.ExpiresIn, empty.RequestedFrom, empty.To = 0, "", ""
	for _, v := range []Vars{full, empty} {
		d := v.data(info, DefaultLocale)
		steps := []struct {
			field string
			run   func() error
		}{
			{"subject", func() error { return execText(c.subject, d) }},
			{"text", func() error { return execText(c.text, d) }},
			{"html", func() error {
				if c.html == nil {
					return nil
				}
				return c.html.Execute(discard{}, d)
			}},
		}
		for _, s := range steps {
			if err := s.run(); err != nil {
				return nil, &TemplateError{Field: s.field, Reason: "does not render: " + parseReason(err)}
			}
		}
		if c.subject == nil { // SMS: each segment is paid for
			b := boundedBuilder{max: maxSavedSMS}
			if err := c.text.Execute(&b, d); errors.Is(err, errTooLong) {
				return nil, &TemplateError{Field: "text", Reason: fmt.Sprintf(
					"renders longer than %d bytes with sample values: an SMS must stay within a few segments", maxSavedSMS)}
			}
		}
	}
	return c, nil
}

func execText(t *texttemplate.Template, d map[string]string) error {
	if t == nil {
		return nil
	}
	return t.Execute(discard{}, d)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func parseText(field, src string, limit int, allowed map[string]bool) (*texttemplate.Template, error) {
	if strings.TrimSpace(src) == "" {
		return nil, &TemplateError{Field: field, Reason: "is required"}
	}
	if len(src) > limit {
		return nil, &TemplateError{Field: field, Reason: fmt.Sprintf("is longer than %d bytes", limit)}
	}
	if err := checkTemplate(field, src, allowed); err != nil {
		return nil, err
	}
	t, err := texttemplate.New(field).Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, &TemplateError{Field: field, Reason: "does not parse: " + parseReason(err)}
	}
	return t, nil
}

// parseReason is a parse or execution error without the template's internal name.
func parseReason(err error) string {
	s := err.Error()
	for _, p := range []string{"template: ", "html/template:"} {
		s = strings.TrimPrefix(s, p)
	}
	return strings.TrimSpace(s)
}
