package courier

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

func loadT(t *testing.T) *Templates {
	t.Helper()
	tpl, err := LoadTemplates()
	if err != nil {
		t.Fatalf("LoadTemplates() error = %v", err)
	}
	return tpl
}

func TestLoadTemplatesHasEveryMessageInEveryLocale(t *testing.T) {
	tpl := loadT(t)
	if got, want := strings.Join(tpl.Locales(), ","), "de,en,es,fr"; got != want {
		t.Errorf("Locales() = %s; want %s", got, want)
	}
	for _, loc := range tpl.Locales() {
		for _, info := range TemplateCatalog() {
			for _, ch := range info.Channels {
				src, ok := tpl.Builtin(info.Name, ch, loc)
				if !ok || src.Text == "" || (ch == ChannelEmail && (src.Subject == "" || src.HTML == "")) {
					t.Errorf("Builtin(%s, %s, %s) = %+v, %v; want every part", info.Name, ch, loc, src, ok)
				}
			}
		}
	}
}

func TestLoadTemplatesRejectsBrokenSets(t *testing.T) {
	ok := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	full := func(extra map[string]*fstest.MapFile, drop ...string) fstest.MapFS {
		m := fstest.MapFS{}
		for _, info := range TemplateCatalog() {
			for _, ext := range []string{".subject", ".txt", ".html", ".sms"} {
				m["t/en/"+info.Name+ext] = ok("{{.AppName}}")
			}
		}
		for _, d := range drop {
			delete(m, d)
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name  string
		files fstest.MapFS
	}{
		{"no dir", fstest.MapFS{}},
		{"empty", fstest.MapFS{"t": &fstest.MapFile{Mode: fs.ModeDir}}},
		{"missing html", full(nil, "t/en/login_code.html")},
		{"missing sms", full(nil, "t/en/magic_link.sms")},
		{"stray file", full(map[string]*fstest.MapFile{"t/en/login_code.md": ok("x")})},
		{"unknown message", full(map[string]*fstest.MapFile{"t/en/welcome.txt": ok("x")})},
		{"file beside locales", full(map[string]*fstest.MapFile{"t/readme.txt": ok("x")})},
		{"bad subject", full(map[string]*fstest.MapFile{"t/en/login_code.subject": ok("{{.X")})},
		{"unknown variable", full(map[string]*fstest.MapFile{"t/en/code_locked.txt": ok("{{.Code}}")})},
		{"bad html", full(map[string]*fstest.MapFile{"t/en/login_code.html": ok(`<a href="{{.Code}}">{{end}}`)})},
		{"no english", fstest.MapFS{"t/de/login_code.txt": ok("x")}},
	}
	for _, tt := range tests {
		if _, err := loadTemplates(tt.files, "t"); err == nil {
			t.Errorf("loadTemplates(%s) error = nil; want an error", tt.name)
		}
	}
	if _, err := loadTemplates(full(nil), "t"); err != nil {
		t.Errorf("loadTemplates(good) error = %v; want nil", err)
	}
}

func TestRenderEveryBuiltinEscapesHTML(t *testing.T) {
	tpl := loadT(t)
	const (
		evilApp     = `Acme <script>alert(1)</script>`
		escapedApp  = `Acme &lt;script&gt;alert(1)&lt;/script&gt;`
		link        = "https://id.acme.test/accept?token=tok_abc&app=app_1"
		escapedLink = "https://id.acme.test/accept?token=tok_abc&amp;app=app_1"
	)
	v := Vars{AppName: evilApp, Code: "482913", Link: link, ExpiresIn: 15 * time.Minute, To: "ada@example.com",
		RequestedFrom: "Firefox <b>x</b>", Notice: Notice{Kind: NoticePasskeyAdded, Detail: "<img src=x>"}}
	for _, loc := range tpl.Locales() {
		for _, info := range TemplateCatalog() {
			r, err := tpl.Render(nil, info.Name, ChannelEmail, []string{loc}, v)
			if err != nil {
				t.Fatalf("Render(%s, %s) error = %v", info.Name, loc, err)
			}
			if r.Locale != loc || r.Override {
				t.Errorf("Render(%s, %s) locale = %s, override = %v", info.Name, loc, r.Locale, r.Override)
			}
			if !strings.Contains(r.HTML, escapedApp) || strings.Contains(r.HTML, "<script>") || strings.Contains(r.HTML, "<img") ||
				strings.Contains(r.HTML, "<b>x") {
				t.Errorf("Render(%s, %s) html does not escape the values:\n%s", info.Name, loc, r.HTML)
			}
			if !strings.Contains(r.Subject, evilApp) || !strings.Contains(r.Text, evilApp) {
				t.Errorf("Render(%s, %s) subject/text = %q / %q; want the app name as is", info.Name, loc, r.Subject, r.Text)
			}
			if strings.Contains(info.Name, "link") || info.Name == TemplateInvitation {
				if !strings.Contains(r.HTML, `href="`+escapedLink+`"`) || !strings.Contains(r.Text, link) {
					t.Errorf("Render(%s, %s) lacks the link", info.Name, loc)
				}
			}
			if !strings.Contains(r.HTML, `lang="`+loc+`"`) {
				t.Errorf("Render(%s, %s) html is not marked lang=%s", info.Name, loc, loc)
			}
			sms, err := tpl.Render(nil, info.Name, ChannelSMS, []string{loc}, v)
			if err != nil || sms.Text == "" || sms.Subject != "" || sms.HTML != "" || strings.HasSuffix(sms.Text, "\n") {
				t.Errorf("Render(%s, sms, %s) = %+v, %v; want a trimmed text only", info.Name, loc, sms, err)
			}
		}
	}
}

func TestRenderLocalises(t *testing.T) {
	tpl := loadT(t)
	v := Vars{AppName: "Acme", Code: "123456", ExpiresIn: 10 * time.Minute}
	tests := []struct {
		prefs      []string
		wantLocale string
		wantText   string
	}{
		{nil, "en", "123456 is your Acme code. It expires in 10 minutes."},
		{[]string{"de"}, "de", "123456 ist Ihr Code für Acme. Er läuft in 10 Minuten ab."},
		{[]string{"fr-CA"}, "fr", "123456 est votre code Acme. Il expire dans 10 minutes."},
		{[]string{"es-419"}, "es", "123456 es tu código de Acme. Caduca en 10 minutos."},
		{[]string{"it", "de-AT"}, "de", "123456 ist Ihr Code für Acme. Er läuft in 10 Minuten ab."},
		{[]string{"ja"}, "en", "123456 is your Acme code. It expires in 10 minutes."},
		{[]string{"not a tag!"}, "en", "123456 is your Acme code. It expires in 10 minutes."},
	}
	for _, tt := range tests {
		r, err := tpl.Render(nil, TemplateLoginCode, ChannelSMS, tt.prefs, v)
		if err != nil || r.Locale != tt.wantLocale || r.Text != tt.wantText {
			t.Errorf("Render(login_code, sms, %v) = %q (%s), %v; want %q (%s)", tt.prefs, r.Text, r.Locale, err, tt.wantText, tt.wantLocale)
		}
	}
	r, err := tpl.Render(nil, TemplateSecurityNotice, ChannelEmail, []string{"fr"},
		Vars{AppName: "Acme", Notice: Notice{Kind: NoticePasskeyRemoved, Detail: "YubiKey"}})
	if err != nil || !strings.Contains(r.Text, "Une clé d'accès (YubiKey) a été supprimée de votre compte.") ||
		r.Subject != "Modification de votre connexion à Acme" {
		t.Errorf("Render(security_notice, fr) = %+v, %v; want the French notice", r, err)
	}
}

func TestOverridePrecedence(t *testing.T) {
	tpl := loadT(t)
	o, err := CompileOverrides([]Override{
		{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "fr-CA", Text: "CA {{.Code}}"},
		{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "en", Text: "EN {{.Code}}"},
		{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "it", Text: "IT {{.Code}} {{.ExpiresIn}}"},
		{Name: TemplateLoginCode, Channel: ChannelEmail, Locale: "de", Subject: "Betreff", Text: "DE {{.Code}}"},
	})
	if err != nil {
		t.Fatalf("CompileOverrides() error = %v", err)
	}
	v := Vars{AppName: "Acme", Code: "123456", ExpiresIn: 5 * time.Minute}
	tests := []struct {
		ch           Channel
		prefs        []string
		want         string
		wantOverride bool
	}{
		{ChannelSMS, []string{"fr-CA"}, "CA 123456", true},         // the app's, in the user's locale
		{ChannelSMS, []string{"fr-FR"}, "123456 est votre", false}, // built-in fr before the app's English
		{ChannelSMS, []string{"ja"}, "EN 123456", true},            // the app's English before built-in English
		{ChannelSMS, nil, "EN 123456", true},
		{ChannelSMS, []string{"it"}, "IT 123456 5 minutes", true}, // words of durations: English for untranslated languages
		{ChannelEmail, []string{"de"}, "DE 123456", true},
		{ChannelEmail, []string{"en"}, "Your Acme sign-in code is:", false}, // an SMS override leaves e-mail alone
	}
	for _, tt := range tests {
		r, err := tpl.Render(o, TemplateLoginCode, tt.ch, tt.prefs, v)
		if err != nil || !strings.HasPrefix(r.Text, tt.want) || r.Override != tt.wantOverride {
			t.Errorf("Render(%s, %v) = %q override=%v, %v; want %q override=%v", tt.ch, tt.prefs, r.Text, r.Override, err, tt.want, tt.wantOverride)
		}
	}
	if r, _ := tpl.Render(o, TemplateLoginCode, ChannelEmail, []string{"de"}, v); r.HTML != "" || r.Subject != "Betreff" {
		t.Errorf("override without html = %+v; want a text-only e-mail", r)
	}
}

func TestValidateOverride(t *testing.T) {
	tests := []struct {
		name      string
		ov        Override
		wantField string
		wantIn    string
	}{
		{"unknown message", Override{Name: "welcome", Channel: ChannelSMS, Locale: "en", Text: "x"}, "name", "login_code"},
		{"bad channel", Override{Name: TemplateLoginCode, Channel: "fax", Locale: "en", Text: "x"}, "channel", "email or sms"},
		{"bad locale", Override{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "english!", Text: "x"}, "locale", "language tag"},
		{"no text", Override{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "en", Text: "  "}, "text", "required"},
		{"subject in sms", Override{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "en", Subject: "s", Text: "x"}, "subject", "e-mail only"},
		{"html in sms", Override{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "en", HTML: "<p>", Text: "x"}, "html", "e-mail only"},
		{"no subject", Override{Name: TemplateLoginCode, Channel: ChannelEmail, Locale: "en", Text: "x"}, "subject", "required"},
		{"unknown variable", Override{Name: TemplateCodeLocked, Channel: ChannelSMS, Locale: "en", Text: "{{.AppName}} {{.Code}}"}, "text", ".Code"},
		{"unknown variable in html", Override{Name: TemplateLoginCode, Channel: ChannelEmail, Locale: "en", Subject: "s", Text: "{{.Code}}",
			HTML: "<p>{{if .Link}}x{{end}}</p>"}, "html", ".Link"},
		{"unknown variable by $", Override{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "en", Text: "{{with .Code}}{{$.Nope}}{{end}}"}, "text", ".Nope"},
		{"field of a string", Override{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "en", Text: "{{with .Code}}{{.AppName}}{{end}}"}, "text", "does not render"},
		{"syntax", Override{Name: TemplateLoginCode, Channel: ChannelEmail, Locale: "en", Subject: "{{.Code", Text: "x"}, "subject", "does not parse"},
		{"define", Override{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "en", Text: `{{define "x"}}y{{end}}{{.Code}}`}, "text", "define"},
		{"template call", Override{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "en", Text: `{{template "x"}}`}, "text", ""},
		{"too long", Override{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "en", Text: strings.Repeat("x", MaxSMSSize+1)}, "text", "longer than"},
		{"html breaks", Override{Name: TemplateLoginCode, Channel: ChannelEmail, Locale: "en", Subject: "s", Text: "x", HTML: "<a href=\"{{.Code}}>"}, "html", ""},
		// Output that grows without bound: loops, padding, many copies.
		{"range over a number", Override{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "en", Text: "{{.Code}}{{range 20}}x{{end}}"}, "text", "loop"},
		{"printf padding", Override{Name: TemplateLoginCode, Channel: ChannelSMS, Locale: "en", Text: `{{.Code}}{{printf "%0999999d" 0}}`}, "text", "printf"},
		{"print", Override{Name: TemplateLoginCode, Channel: ChannelEmail, Locale: "en", Subject: "s", Text: "x", HTML: `{{print .Code .Code}}`}, "html", "print"},
		{"many copies", Override{Name: TemplateMagicLink, Channel: ChannelSMS, Locale: "en", Text: strings.Repeat("{{.Link}}", 60)}, "text", "segments"},
	}
	for _, tt := range tests {
		err := ValidateOverride(tt.ov, "")
		var te *TemplateError
		if !errors.As(err, &te) || te.Field != tt.wantField || !strings.Contains(te.Reason, tt.wantIn) {
			t.Errorf("%s: ValidateOverride() = %v; want a TemplateError on %s mentioning %q", tt.name, err, tt.wantField, tt.wantIn)
		}
	}
	good := Override{Name: TemplateMagicLink, Channel: ChannelEmail, Locale: "pt-BR", Subject: "Entrar no {{.AppName}}",
		Text: "{{.Link}}{{with .ExpiresIn}} ({{.}}){{end}}", HTML: `<a href="{{.Link}}">{{.AppName}}</a> {{$.RequestedFrom}}`}
	if err := ValidateOverride(good, ""); err != nil {
		t.Errorf("ValidateOverride(good) = %v; want nil", err)
	}
}

func TestTemplateSeesOnlyItsVariables(t *testing.T) {
	r, err := RenderSource(TemplateCodeLocked, ChannelSMS, "en", TemplateSource{Text: "{{.}}"}, SampleVars())
	if err != nil {
		t.Fatalf("RenderSource() error = %v", err)
	}
	if strings.Contains(r.Text, "123456") || strings.Contains(r.Text, "https://") {
		t.Errorf("{{.}} in code_locked = %q; want no code or link", r.Text)
	}
}

func TestRenderSubjectIsOneLine(t *testing.T) {
	r, err := loadT(t).Render(nil, TemplateMagicLink, ChannelEmail, nil, Vars{AppName: "Acme\r\nBcc: evil@example.com", Link: "https://a.test"})
	if err != nil {
		t.Fatalf("Render(magic_link) error = %v", err)
	}
	if strings.ContainsAny(r.Subject, "\r\n") {
		t.Errorf("Render(magic_link) subject = %q; want a single line", r.Subject)
	}
}

func TestRenderOptionalFieldsAndUnsafeLink(t *testing.T) {
	r, err := loadT(t).Render(nil, TemplateInvitation, ChannelEmail, nil, Vars{AppName: "Acme", Link: "javascript:alert(1)"})
	if err != nil {
		t.Fatalf("Render(invitation) error = %v", err)
	}
	if strings.Contains(r.HTML, `href="javascript:`) {
		t.Errorf("Render(invitation) html keeps a javascript: href:\n%s", r.HTML)
	}
	for _, part := range []string{r.Text, r.HTML} {
		if strings.Contains(part, "expires in") || strings.Contains(part, "sent to") {
			t.Errorf("Render(invitation) without ExpiresIn/To mentions them:\n%s", part)
		}
	}
}

// A code and a short magic link fit one SMS segment in every built-in
// language, with a typical app name and base URL.
func TestBuiltinSMSFitOneSegment(t *testing.T) {
	tpl := loadT(t)
	v := Vars{AppName: "Northwind Traders", Code: "123456", ExpiresIn: 10 * time.Minute,
		Link: "https://auth.northwind-traders.example.com/m/AbCdEfGhIjKlMnOp"}
	for _, loc := range tpl.Locales() {
		for _, name := range []string{TemplateLoginCode, TemplateMagicLink} {
			r, err := tpl.Render(nil, name, ChannelSMS, []string{loc}, v)
			if err != nil {
				t.Fatal(err)
			}
			info := MeasureSMS(r.Text)
			if info.Segments != 1 {
				t.Errorf("%s SMS in %s = %q: %+v; want one segment", name, loc, r.Text, info)
			}
			if loc == "en" && (info.Encoding != EncodingGSM7 || info.Length > 160) {
				t.Errorf("%s SMS in en: %+v; want GSM-7 within 160", name, info)
			}
		}
	}
}

func TestMeasureSMS(t *testing.T) {
	tests := []struct {
		text string
		want SMSInfo
	}{
		{"", SMSInfo{0, EncodingGSM7, 0}},
		{"Hello", SMSInfo{5, EncodingGSM7, 1}},
		{strings.Repeat("a", 160), SMSInfo{160, EncodingGSM7, 1}},
		{strings.Repeat("a", 161), SMSInfo{161, EncodingGSM7, 2}},
		{strings.Repeat("a", 306), SMSInfo{306, EncodingGSM7, 2}},
		{strings.Repeat("a", 307), SMSInfo{307, EncodingGSM7, 3}},
		{"ä€[]", SMSInfo{7, EncodingGSM7, 1}}, // € [ ] take an escape
		{"Grüße", SMSInfo{5, EncodingGSM7, 1}},
		{"código", SMSInfo{6, EncodingUCS2, 1}},
		{strings.Repeat("ó", 70), SMSInfo{70, EncodingUCS2, 1}},
		{strings.Repeat("ó", 71), SMSInfo{71, EncodingUCS2, 2}},
		{"😀", SMSInfo{2, EncodingUCS2, 1}}, // a surrogate pair
	}
	for _, tt := range tests {
		if got := MeasureSMS(tt.text); got != tt.want {
			t.Errorf("MeasureSMS(%q) = %+v; want %+v", tt.text, got, tt.want)
		}
	}
}

func TestParseAcceptLanguage(t *testing.T) {
	tests := []struct {
		h    string
		want string
	}{
		{"", ""},
		{"fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5", "fr-CH,fr,en,de"},
		{"en;q=0.5, de", "de,en"},
		{"de;q=0, fr", "fr"},
		{"pt_br;q=0.9 , EN-us", "en-US,pt-BR"},
		{"zh-hant-tw", "zh-Hant-TW"},
		{"x;q=abc, !!, es;q=2, it;q=0.1", "it"},
	}
	for _, tt := range tests {
		if got := strings.Join(ParseAcceptLanguage(tt.h), ","); got != tt.want {
			t.Errorf("ParseAcceptLanguage(%q) = %s; want %s", tt.h, got, tt.want)
		}
	}
	if got := ParseAcceptLanguage(strings.Repeat("en,", 100)); len(got) > 10 {
		t.Errorf("ParseAcceptLanguage(100 entries) kept %d", len(got))
	}
}

func TestCandidates(t *testing.T) {
	if got, want := strings.Join(Candidates([]string{"fr-CA", "de", "fr"}), ","), "fr-CA,fr,de,en"; got != want {
		t.Errorf("Candidates() = %s; want %s", got, want)
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		loc  string
		d    time.Duration
		want string
	}{
		{"en", 10 * time.Minute, "10 minutes"},
		{"en", time.Minute, "1 minute"},
		{"en", 30 * time.Second, "1 minute"},
		{"de", 7 * 24 * time.Hour, "7 Tagen"},
		{"fr-CA", 2 * time.Hour, "2 heures"},
		{"es", 24 * time.Hour, "1 día"},
		{"es", 90 * time.Minute, "90 minutos"},
		{"ja", 15 * time.Minute, "15 minutes"},
	}
	for _, tt := range tests {
		if got := Duration(tt.loc, tt.d); got != tt.want {
			t.Errorf("Duration(%s, %v) = %q; want %q", tt.loc, tt.d, got, tt.want)
		}
	}
}

func TestNoticeTextInEveryLanguage(t *testing.T) {
	for lang, texts := range noticeTexts {
		for _, k := range noticeKinds() {
			if texts[k] == "" {
				t.Errorf("notice %s has no %s sentence", k, lang)
			}
		}
	}
}
