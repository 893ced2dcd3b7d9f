package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// visitor is a browser on the hosted pages: it keeps its cookies itself
// (they are __Host-, Secure; the test server is http on loopback, which
// browsers treat as secure but Go's cookie jar does not).
type visitor struct {
	t       *testing.T
	sys     *servertest.System
	cookies map[string]string
}

func newVisitor(t *testing.T, sys *servertest.System) *visitor {
	return &visitor{t: t, sys: sys, cookies: map[string]string{}}
}

// do makes one request as a same-origin browser would, unless header says
// otherwise ("" deletes a header).
func (v *visitor) do(method, path string, form url.Values, header map[string]string) answer {
	v.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, v.sys.URL+path, body)
	if err != nil {
		v.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36")
	for name, value := range v.cookies {
		req.AddCookie(&http.Cookie{Name: name, Value: value})
	}
	for k, val := range header {
		if val == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, val)
		}
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		if !strings.HasPrefix(c.Name, "__Host-") || !c.Secure || !c.HttpOnly || c.Path != "/" || c.Domain != "" || c.SameSite != http.SameSiteLaxMode {
			v.t.Errorf("%s %s: cookie %s is not a __Host- Secure HttpOnly Lax cookie: %+v", method, path, c.Name, c)
		}
		if c.MaxAge < 0 || c.Value == "" {
			delete(v.cookies, c.Name)
		} else {
			v.cookies[c.Name] = c.Value
		}
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func (v *visitor) expect(method, path string, form url.Values, want int) answer {
	v.t.Helper()
	a := v.do(method, path, form, nil)
	if a.status != want {
		v.t.Fatalf("%s %s: %d, want %d\n%s", method, path, a.status, want, a.body)
	}
	return a
}

var hostedCSRF = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func csrfOf(t *testing.T, a answer) string {
	t.Helper()
	m := hostedCSRF.FindStringSubmatch(a.body)
	if m == nil {
		t.Fatalf("no CSRF field:\n%s", a.body)
	}
	return m[1]
}

// checkHostedHeaders checks a hosted page's headers: a nonce CSP whose
// frame-ancestors is frame, and that every script and style has the nonce.
func checkHostedHeaders(t *testing.T, what string, a answer, frame string) {
	t.Helper()
	csp := a.header.Get("Content-Security-Policy")
	m := nonceRe.FindStringSubmatch(csp)
	if m == nil || !strings.Contains(csp, "frame-ancestors "+frame+";") || !strings.Contains(csp, "default-src 'none'") ||
		!strings.Contains(csp, "style-src 'nonce-"+m[1]+"'") || strings.Contains(csp, "unsafe-") {
		t.Fatalf("%s: CSP %q, want frame-ancestors %s", what, csp, frame)
	}
	want := map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "Cache-Control": "no-store", "X-Frame-Options": ""}
	if frame == "'none'" {
		want["X-Frame-Options"] = "DENY"
	}
	for k, v := range want {
		if got := a.header.Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got, v)
		}
	}
	for _, tag := range regexp.MustCompile(`<(script|link|style)\b[^>]*>`).FindAllString(a.body, -1) {
		if !strings.Contains(tag, `nonce="`+m[1]+`"`) {
			t.Errorf("%s: %s lacks the nonce", what, tag)
		}
	}
	if regexp.MustCompile(`\s(style|on[a-z]+)=`).MatchString(a.body) {
		t.Errorf("%s: inline style or event handler attribute", what)
	}
}

// hostedApp is an app with a callback URL and a user, alice@shop.example.
func hostedApp(t *testing.T, sys *servertest.System, mod func(*tenant.AppSettings)) (tenant.App, string) {
	t.Helper()
	ws, _ := sys.Workspace(t, "Acme")
	app := sys.App(t, ws.ID, "Shop", func(s *tenant.AppSettings) {
		cb, others, logo, ids, closed := "https://shop.example/auth/callback", []string{"https://www.shop.example"}, "https://shop.example/logo.png", []string{"email"}, false
		s.CallbackURL, s.AllowedOrigins, s.Logo, s.AllowedIdentifiers, s.RequiredIdentifiers, s.PublicSignup = &cb, &others, &logo, &ids, &ids, &closed
		otp := "otp" // codes; magic links: hosted_magic_test.go
		s.EmailAuthType = &otp
		if mod != nil {
			mod(s)
		}
	})
	email := "alice@shop.example"
	if _, _, err := sys.Users.Create(context.Background(), access.Operator(), app, appuser.CreateInput{Identifier: email}); err != nil {
		t.Fatal(err)
	}
	return app, email
}

// lastCode is the newest code sent to to.
func lastCode(t *testing.T, sys *servertest.System, to string) string {
	t.Helper()
	code, ok := sys.Mail.LastCode(to) // a notice may have come after it
	if !ok {
		t.Fatalf("no code to %s", to)
	}
	return code
}

// sendCode opens the login page (with query) and asks for a code for id.
func (v *visitor) sendCode(appID, query, id string) answer {
	v.t.Helper()
	page := v.expect("GET", "/login/"+appID+query, nil, http.StatusOK)
	q, _ := url.ParseQuery(strings.TrimPrefix(query, "?"))
	return v.do("POST", "/login/"+appID, url.Values{"csrf": {csrfOf(v.t, page)}, "identifier": {id},
		"return": {q.Get("return")}, "callback_url": {q.Get("callback_url")}}, nil)
}

// signIn signs in through the forms and returns the last answer (the
// redirect at the end).
func (v *visitor) signIn(appID, query, email string) answer {
	v.t.Helper()
	if a := v.sendCode(appID, query, email); a.status != http.StatusSeeOther || a.header.Get("Location") != "/login/"+appID+"/code" {
		v.t.Fatalf("send: %d %s\n%s", a.status, a.header.Get("Location"), a.body)
	}
	page := v.expect("GET", "/login/"+appID+"/code", nil, http.StatusOK)
	return v.expect("POST", "/login/"+appID+"/code", url.Values{"csrf": {csrfOf(v.t, page)}, "code": {lastCode(v.t, v.sys, email)}}, http.StatusSeeOther)
}

// api calls the JSON API with a body and headers.
func api(t *testing.T, sys *servertest.System, method, path string, body any, header map[string]string) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, sys.URL+path, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestHostedLoginPageHeaders(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, _ := hostedApp(t, sys, nil)
		v := newVisitor(t, sys)
		a := v.expect("GET", "/login/"+app.ID, nil, http.StatusOK)
		checkHostedHeaders(t, "login", a, "https://shop.example https://www.shop.example")
		if !strings.Contains(a.body, `autocomplete="username webauthn"`) || !strings.Contains(a.body, `type="email"`) ||
			!strings.Contains(a.body, "Shop") || !strings.Contains(a.body, `src="https://shop.example/logo.png"`) {
			t.Fatalf("login page:\n%s", a.body)
		}
		if v.cookies["__Host-gatehouse_pre"] == "" {
			t.Fatal("no pre-session cookie")
		}

		// An app that signs in by phone asks for a phone number; its
		// one origin may frame it.
		ws, _ := sys.Workspace(t, "Other")
		bare := sys.App(t, ws.ID, "Bare", func(s *tenant.AppSettings) {
			ids := []string{"phone"}
			s.AllowedIdentifiers, s.RequiredIdentifiers = &ids, &ids
		})
		a = v.expect("GET", "/login/"+bare.ID, nil, http.StatusOK)
		checkHostedHeaders(t, "login by phone", a, "https://bare.example")
		if !strings.Contains(a.body, `type="tel"`) {
			t.Fatalf("phone login page:\n%s", a.body)
		}

		// An unknown app, or page, is a 404 page with the same headers and
		// no framing at all (every app has an origin: 'none' is for pages
		// of no app).
		a = v.expect("GET", "/login/0190aaaa-0000-7000-8000-000000000000", nil, http.StatusNotFound)
		checkHostedHeaders(t, "unknown app", a, "'none'")
		v.expect("GET", "/login/"+app.ID+"/nothing", nil, http.StatusNotFound)
		v.expect("GET", "/account/0190aaaa-0000-7000-8000-000000000000", nil, http.StatusNotFound)
		// A callback_url that is not the app's is refused (no open redirect).
		v.expect("GET", "/login/"+app.ID+"?callback_url=https%3A%2F%2Fevil.example%2F", nil, http.StatusBadRequest)
		v.expect("GET", "/login/"+app.ID+"?return=https%3A%2F%2Fevil.example%2F", nil, http.StatusBadRequest)
	})
}

func TestHostedCodeSignIn(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := hostedApp(t, sys, nil)
		v := newVisitor(t, sys)
		if a := v.sendCode(app.ID, "", email); a.status != http.StatusSeeOther {
			t.Fatalf("send: %d\n%s", a.status, a.body)
		}
		page := v.expect("GET", "/login/"+app.ID+"/code", nil, http.StatusOK)
		checkHostedHeaders(t, "code", page, "https://shop.example https://www.shop.example")
		if !strings.Contains(page.body, email) {
			t.Fatalf("code page:\n%s", page.body)
		}
		csrf := csrfOf(t, page)

		// A wrong code: a clear error, on the code page, counted.
		code := lastCode(t, sys, email)
		wrong := "000000"
		if code == wrong {
			wrong = "111111"
		}
		a := v.expect("POST", "/login/"+app.ID+"/code", url.Values{"csrf": {csrf}, "code": {wrong}}, http.StatusUnprocessableEntity)
		if !strings.Contains(a.body, "That code is not right") || !strings.Contains(a.body, `role="alert"`) {
			t.Fatalf("wrong code page:\n%s", a.body)
		}

		// The right one: the app's callback with a single-use token.
		a = v.expect("POST", "/login/"+app.ID+"/code", url.Values{"csrf": {csrf}, "code": {code}}, http.StatusSeeOther)
		loc, err := url.Parse(a.header.Get("Location"))
		if err != nil || loc.Scheme+"://"+loc.Host+loc.Path != "https://shop.example/auth/callback" || loc.Query().Get("sct_sk") != "true" || loc.Query().Get("sct_magic") == "" || loc.Query().Get("sct_oauth") != loc.Query().Get("sct_magic") {
			t.Fatalf("redirect: %q", a.header.Get("Location"))
		}
		if a.header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("redirect Referrer-Policy %q", a.header.Get("Referrer-Policy"))
		}
		if v.cookies["__Host-gatehouse_app_"+app.ID] == "" || v.cookies["__Host-gatehouse_signin"] != "" {
			t.Fatalf("cookies after sign-in: %v", v.cookies)
		}
		// The code form does not work twice: the pending sign-in is gone.
		v.expect("POST", "/login/"+app.ID+"/code", url.Values{"csrf": {csrf}, "code": {code}}, http.StatusBadRequest)

		// C5 turns the token into a token set, once.
		tok := loc.Query().Get("sct_magic")
		status, set := api(t, sys, "PATCH", "/v1/auth/"+app.ID+"/magic_links/authenticate", map[string]string{"token": tok}, nil)
		if status != http.StatusOK || set["access"] == nil || set["refresh"] == nil {
			t.Fatalf("C5: %d %v", status, set)
		}
		status, body := api(t, sys, "PATCH", "/v1/auth/"+app.ID+"/magic_links/authenticate", map[string]string{"token": tok}, nil)
		if status != http.StatusNotFound || body["error"] != "Magic link not found or expired" {
			t.Fatalf("C5 again: %d %v", status, body)
		}

		// Signed in here, the login page offers to continue: a new token,
		// without a code.
		page = v.expect("GET", "/login/"+app.ID, nil, http.StatusOK)
		if !strings.Contains(page.body, "Continue as "+email) {
			t.Fatalf("login page when signed in:\n%s", page.body)
		}
		a = v.expect("POST", "/login/"+app.ID+"/continue", url.Values{"csrf": {csrfOf(t, page)}}, http.StatusSeeOther)
		loc, _ = url.Parse(a.header.Get("Location"))
		if status, set := api(t, sys, "PATCH", "/v1/auth/"+app.ID+"/magic_links/authenticate", map[string]string{"token": loc.Query().Get("sct_magic")}, nil); status != http.StatusOK || set["access"] == nil {
			t.Fatalf("C5 after continue: %d %v", status, set)
		}
	})
}

func TestHostedRefusals(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := hostedApp(t, sys, nil)
		v := newVisitor(t, sys)
		page := v.expect("GET", "/login/"+app.ID, nil, http.StatusOK)
		csrf := csrfOf(t, page)
		sent := len(sys.Mail.Messages())
		other := newVisitor(t, sys)
		otherCSRF := csrfOf(t, other.expect("GET", "/login/"+app.ID, nil, http.StatusOK))
		for name, c := range map[string]struct {
			form   url.Values
			header map[string]string
		}{
			"no token":                {form: url.Values{"identifier": {email}}},
			"wrong token":             {form: url.Values{"identifier": {email}, "csrf": {strings.Repeat("0", 64)}}},
			"another browser's token": {form: url.Values{"identifier": {email}, "csrf": {otherCSRF}}},
			"cross-site":              {form: url.Values{"identifier": {email}, "csrf": {csrf}}, header: map[string]string{"Sec-Fetch-Site": "cross-site"}},
			"another origin":          {form: url.Values{"identifier": {email}, "csrf": {csrf}}, header: map[string]string{"Sec-Fetch-Site": "", "Origin": "https://evil.example"}},
		} {
			if a := v.do("POST", "/login/"+app.ID, c.form, c.header); a.status != http.StatusForbidden {
				t.Errorf("%s: %d, want 403", name, a.status)
			}
		}
		// Without the pre-session cookie the token is worth nothing.
		pre := v.cookies["__Host-gatehouse_pre"]
		delete(v.cookies, "__Host-gatehouse_pre")
		if a := v.do("POST", "/login/"+app.ID, url.Values{"identifier": {email}, "csrf": {csrf}}, nil); a.status != http.StatusForbidden {
			t.Errorf("no pre-session cookie: %d", a.status)
		}
		v.cookies["__Host-gatehouse_pre"] = pre
		if n := len(sys.Mail.Messages()); n != sent {
			t.Fatalf("a refused form sent %d messages", n-sent)
		}

		// Nobody by that address: the same answer as for someone, and nothing sent.
		if a := v.sendCode(app.ID, "", "nobody@shop.example"); a.status != http.StatusSeeOther || a.header.Get("Location") != "/login/"+app.ID+"/code" {
			t.Fatalf("unknown address: %d %s", a.status, a.header.Get("Location"))
		}
		if _, ok := sys.Mail.Last("nobody@shop.example"); ok {
			t.Fatal("a code went to an unknown address of an app without sign-up")
		}
		a := v.expect("POST", "/login/"+app.ID+"/code", url.Values{"csrf": {csrf}, "code": {"123456"}}, http.StatusUnprocessableEntity)
		if !strings.Contains(a.body, "That code is not right") {
			t.Fatalf("code of nobody:\n%s", a.body)
		}
		// A pending sign-in is sealed: a changed cookie is no sign-in.
		sealed := []byte(v.cookies["__Host-gatehouse_signin"])
		if i := len(sealed) / 2; sealed[i] == 'A' {
			sealed[i] = 'B'
		} else {
			sealed[i] = 'A'
		}
		v.cookies["__Host-gatehouse_signin"] = string(sealed)
		v.expect("POST", "/login/"+app.ID+"/code", url.Values{"csrf": {csrf}, "code": {"123456"}}, http.StatusBadRequest)

		// An address that is not one: the reason, on the login page.
		if a := v.sendCode(app.ID, "", "not an address"); a.status != http.StatusBadRequest || !strings.Contains(a.body, `role="alert"`) {
			t.Fatalf("bad address: %d\n%s", a.status, a.body)
		}

		// Too many sends for one address: the API's limit, said plainly.
		var last answer
		for range 60 {
			if last = v.sendCode(app.ID, "", email); last.status == http.StatusTooManyRequests {
				break
			}
		}
		if last.status != http.StatusTooManyRequests || last.header.Get("Retry-After") == "" || !strings.Contains(last.body, "Too many attempts") {
			t.Fatalf("rate limit: %d %q\n%s", last.status, last.header.Get("Retry-After"), last.body)
		}

		// No GET signs in, sends or signs out.
		sent = len(sys.Mail.Messages())
		for _, p := range []string{"/login/" + app.ID + "/continue", "/login/" + app.ID + "/mfa/method", "/account/" + app.ID + "/signout"} {
			if a := v.do("GET", p, nil, nil); a.status == http.StatusSeeOther || a.status == http.StatusOK {
				t.Errorf("GET %s: %d", p, a.status)
			}
		}
		if n := len(sys.Mail.Messages()); n != sent {
			t.Fatal("a GET sent a message")
		}
	})
}

func TestHostedAccount(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := hostedApp(t, sys, nil)
		v := newVisitor(t, sys)
		a := v.expect("GET", "/account/"+app.ID, nil, http.StatusSeeOther)
		login := "/login/" + app.ID + "?return=%2Faccount%2F" + app.ID
		if a.header.Get("Location") != login {
			t.Fatalf("account without a session: %q", a.header.Get("Location"))
		}

		// Signed in through the app's callback first: the app's session.
		a = v.signIn(app.ID, "", email)
		loc, _ := url.Parse(a.header.Get("Location"))
		status, set := api(t, sys, "PATCH", "/v1/auth/"+app.ID+"/magic_links/authenticate", map[string]string{"token": loc.Query().Get("sct_magic")},
			map[string]string{"User-Agent": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"})
		if status != http.StatusOK {
			t.Fatalf("C5: %d %v", status, set)
		}
		refresh := set["refresh"].(string)

		// Then a second browser signs in to come back to the account page.
		w := newVisitor(t, sys)
		if a := w.signIn(app.ID, "?return=%2Faccount%2F"+app.ID, email); a.header.Get("Location") != "/account/"+app.ID {
			t.Fatalf("sign-in with return: %q", a.header.Get("Location"))
		}
		page := w.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		checkHostedHeaders(t, "account", page, "https://shop.example https://www.shop.example")
		ids := regexp.MustCompile(`/account/`+app.ID+`/sessions/([0-9a-f-]+)/revoke`).FindAllStringSubmatch(page.body, -1)
		if len(ids) != 3 || strings.Count(page.body, "this device") != 1 || !strings.Contains(page.body, "Safari on iOS") || !strings.Contains(page.body, "Chrome on Linux") {
			t.Fatalf("account page (want 3 sessions: two hosted, the app's):\n%s", page.body)
		}
		// GET changes nothing: the page twice, the same sessions.
		again := w.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		if n := len(regexp.MustCompile(`/sessions/[0-9a-f-]+/revoke`).FindAllString(again.body, -1)); n != 3 {
			t.Fatalf("sessions after a second GET: %d", n)
		}

		// Revoking needs the account page's token.
		csrf := csrfOf(t, page)
		var appSession string // the app's session: the one on the iPhone
		for _, row := range regexp.MustCompile(`(?s)<tr>.*?</tr>`).FindAllString(page.body, -1) {
			if m := regexp.MustCompile(`/sessions/([0-9a-f-]+)/revoke`).FindStringSubmatch(row); m != nil && strings.Contains(row, "Safari on iOS") {
				appSession = m[1]
			}
		}
		if appSession == "" {
			t.Fatal("the app's session is not found on the page")
		}
		w.expect("POST", "/account/"+app.ID+"/sessions/"+appSession+"/revoke", url.Values{"csrf": {"nope"}}, http.StatusForbidden)
		if a := w.do("POST", "/account/"+app.ID+"/sessions/"+appSession+"/revoke", url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}); a.status != http.StatusForbidden {
			t.Fatalf("cross-site revoke: %d", a.status)
		}
		status, set = api(t, sys, "POST", "/v1/auth/"+app.ID+"/tokens/refresh", nil, map[string]string{"X-Refresh-Token": refresh})
		if status != http.StatusOK {
			t.Fatalf("refresh before revoking: %d %v", status, set)
		}
		refresh = set["refresh"].(string)
		a = w.expect("POST", "/account/"+app.ID+"/sessions/"+appSession+"/revoke", url.Values{"csrf": {csrf}}, http.StatusSeeOther)
		if a.header.Get("Location") != "/account/"+app.ID+"?notice=revoked" {
			t.Fatalf("revoke: %q", a.header.Get("Location"))
		}
		if status, body := api(t, sys, "POST", "/v1/auth/"+app.ID+"/tokens/refresh", nil, map[string]string{"X-Refresh-Token": refresh}); status != http.StatusUnauthorized {
			t.Fatalf("refresh of the revoked session: %d %v", status, body)
		}
		if !strings.Contains(w.expect("GET", "/account/"+app.ID+"?notice=revoked", nil, http.StatusOK).body, "Session revoked") {
			t.Fatal("no notice")
		}
		// Another's session id: not found.
		w.expect("POST", "/account/"+app.ID+"/sessions/0190aaaa-0000-7000-8000-000000000000/revoke", url.Values{"csrf": {csrf}}, http.StatusNotFound)

		// Signing out ends the hosted session: the cookie no longer works,
		// even put back.
		cookie := w.cookies["__Host-gatehouse_app_"+app.ID]
		w.expect("POST", "/account/"+app.ID+"/signout", url.Values{"csrf": {csrf}}, http.StatusSeeOther)
		w.cookies["__Host-gatehouse_app_"+app.ID] = cookie
		if a := w.do("GET", "/account/"+app.ID, nil, nil); a.status != http.StatusSeeOther || a.header.Get("Location") != login {
			t.Fatalf("account after sign-out: %d %q", a.status, a.header.Get("Location"))
		}
		// The first browser is still signed in.
		v.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
	})
}

func TestHostedSecondFactor(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := hostedApp(t, sys, func(s *tenant.AppSettings) {
			policy, methods := "optional", []string{"totp", "backup_code"}
			s.MFAPolicy, s.MFAMethodsAllowed = &policy, &methods
		})
		// The user adds an authenticator app through the API.
		a := newVisitor(t, sys).signIn(app.ID, "", email)
		loc, _ := url.Parse(a.header.Get("Location"))
		status, set := api(t, sys, "PATCH", "/v1/auth/"+app.ID+"/magic_links/authenticate", map[string]string{"token": loc.Query().Get("sct_magic")}, nil)
		if status != http.StatusOK {
			t.Fatalf("C5: %d %v", status, set)
		}
		user := map[string]string{"X-Authorization": set["access"].(string)}
		status, en := api(t, sys, "POST", "/v1/auth/"+app.ID+"/mfa/enroll", map[string]string{"method": "totp", "name": "phone"}, user)
		if status != http.StatusOK {
			t.Fatalf("enrol: %d %v", status, en)
		}
		secret := en["secret"].(string)
		code, _ := totp.GenerateCode(secret, sys.Clock.Now())
		if status, body := api(t, sys, "POST", "/v1/auth/"+app.ID+"/mfa/enroll/verify",
			map[string]string{"enrollment_id": en["enrollment"].(map[string]any)["id"].(string), "code": code}, user); status != http.StatusOK {
			t.Fatalf("verify enrolment: %d %v", status, body)
		}
		sys.Clock.Advance(time.Minute)

		// The next sign-in asks for it after the code.
		v := newVisitor(t, sys)
		if a := v.signIn(app.ID, "", email); a.header.Get("Location") != "/login/"+app.ID+"/mfa" {
			t.Fatalf("after the code: %q", a.header.Get("Location"))
		}
		if v.cookies["__Host-gatehouse_app_"+app.ID] != "" {
			t.Fatal("a hosted session before the second factor")
		}
		page := v.expect("GET", "/login/"+app.ID+"/mfa", nil, http.StatusOK)
		if !strings.Contains(page.body, "authenticator app") || strings.Contains(page.body, "backup code instead") { // no backup codes made
			t.Fatalf("MFA page:\n%s", page.body)
		}
		csrf := csrfOf(t, page)
		// The code form is no way around it.
		v.expect("POST", "/login/"+app.ID+"/code", url.Values{"csrf": {csrf}, "code": {"123456"}}, http.StatusBadRequest)
		a = v.expect("POST", "/login/"+app.ID+"/mfa", url.Values{"csrf": {csrf}, "code": {"000000"}}, http.StatusUnprocessableEntity)
		if !strings.Contains(a.body, `role="alert"`) {
			t.Fatalf("wrong TOTP:\n%s", a.body)
		}
		code, _ = totp.GenerateCode(secret, sys.Clock.Now())
		a = v.expect("POST", "/login/"+app.ID+"/mfa", url.Values{"csrf": {csrf}, "code": {code}}, http.StatusSeeOther)
		loc, _ = url.Parse(a.header.Get("Location"))
		if loc.Host != "shop.example" || loc.Query().Get("sct_magic") == "" {
			t.Fatalf("after the second factor: %q", a.header.Get("Location"))
		}
		status, set = api(t, sys, "PATCH", "/v1/auth/"+app.ID+"/magic_links/authenticate", map[string]string{"token": loc.Query().Get("sct_magic")}, nil)
		if status != http.StatusOK || set["access"] == nil || set["mfa_required"] == true {
			t.Fatalf("C5 after MFA: %d %v", status, set)
		}
		// The app's session proves what the hosted one did: both factors.
		claims, _ := base64.RawURLEncoding.DecodeString(strings.Split(set["access"].(string), ".")[1])
		if !strings.Contains(string(claims), `"totp"`) {
			t.Fatalf("access token claims: %s", claims)
		}
	})
}

// TestHostedHandOffLimit: each hand-off stores a token, so "Continue as" in
// a loop meets the per-session budget (the user's challenge budget, 10 in
// 10 minutes here), answered with a sentence and Retry-After.
func TestHostedHandOffLimit(t *testing.T) {
	limits := servertest.LooseLimits()
	limits.ChallengePerUser = ratelimit.Rule{Limit: 10, Period: 10 * time.Minute}
	servertest.ForEach(t, servertest.Options{Serve: true, Limits: &limits}, func(t *testing.T, sys *servertest.System) {
		app, email := hostedApp(t, sys, nil)
		v := newVisitor(t, sys)
		v.signIn(app.ID, "", email) // the first hand-off
		page := v.expect("GET", "/login/"+app.ID, nil, http.StatusOK)
		csrf, limited := csrfOf(t, page), 0
		for i := 2; i < 20 && limited == 0; i++ {
			switch a := v.do("POST", "/login/"+app.ID+"/continue", url.Values{"csrf": {csrf}}, nil); a.status {
			case http.StatusSeeOther:
			case http.StatusTooManyRequests:
				if a.header.Get("Retry-After") == "" || !strings.Contains(a.body, "Too many attempts") {
					t.Fatalf("limited hand-off: %v\n%s", a.header, a.body)
				}
				limited = i
			default:
				t.Fatalf("continue %d: %d\n%s", i, a.status, a.body)
			}
		}
		if limited != 11 {
			t.Fatalf("hand-offs limited at the %dth, want the 11th", limited)
		}
	})
}

// TestHostedFramedCookies: a page loaded in a frame (the app's: only its
// origins may frame the pages) sets its cookies SameSite=None and
// Partitioned, which a third-party frame keeps; at the top level they stay
// Lax and unpartitioned.
func TestHostedFramedCookies(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, _ := hostedApp(t, sys, nil)
		framedPre := "~" + strings.Repeat("A", 43)
		for _, c := range []struct {
			dest, site, pre string
			want            []string
			not             []string
		}{
			// A frame of another site: its first page, then (the pre-session
			// tagged) its own requests, which say same-origin.
			{"iframe", "cross-site", "", []string{"SameSite=None", "Partitioned", "Secure", "HttpOnly", "=~"}, []string{"SameSite=Lax"}},
			{"iframe", "same-origin", framedPre, []string{"SameSite=None", "Partitioned", "Secure", "HttpOnly"}, []string{"SameSite=Lax"}},
			// A frame of the same site gets the Lax cookies browsers send it.
			{"iframe", "same-site", "", []string{"SameSite=Lax", "Secure", "HttpOnly"}, []string{"Partitioned", "SameSite=None"}},
			{"iframe", "same-origin", strings.Repeat("B", 42) + "x", []string{"SameSite=Lax"}, []string{"Partitioned"}},
			{"document", "cross-site", "", []string{"SameSite=Lax", "Secure", "HttpOnly"}, []string{"Partitioned", "SameSite=None"}},
		} {
			req, _ := http.NewRequest("GET", sys.URL+"/login/"+app.ID, nil)
			req.Header.Set("Sec-Fetch-Dest", c.dest)
			req.Header.Set("Sec-Fetch-Site", c.site)
			if c.pre != "" {
				req.AddCookie(&http.Cookie{Name: "__Host-gatehouse_pre", Value: c.pre})
				req.Header.Set("Sec-Fetch-Site", c.site)
			}
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			set := resp.Header.Values("Set-Cookie")
			if c.pre != "" {
				// A valid pre-session is kept: the page sets no cookie; its
				// sign-in form sets the flow's, with the same attributes.
				page, _ := io.ReadAll(resp.Body)
				form := url.Values{"csrf": {regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(string(page))[1]}, "identifier": {"alice@shop.example"}}
				post, _ := http.NewRequest("POST", sys.URL+"/login/"+app.ID, strings.NewReader(form.Encode()))
				post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				post.Header.Set("Sec-Fetch-Dest", c.dest)
				post.Header.Set("Sec-Fetch-Site", "same-origin")
				post.AddCookie(&http.Cookie{Name: "__Host-gatehouse_pre", Value: c.pre})
				presp, err := noRedirect.Do(post)
				if err != nil {
					t.Fatal(err)
				}
				presp.Body.Close()
				if presp.StatusCode != http.StatusSeeOther {
					t.Fatalf("%s %s: sign-in form %d", c.dest, c.site, presp.StatusCode)
				}
				set = presp.Header.Values("Set-Cookie")
			}
			if resp.StatusCode != http.StatusOK || len(set) == 0 {
				t.Fatalf("%s %s: %d, cookies %v", c.dest, c.site, resp.StatusCode, set)
			}
			for _, line := range set {
				for _, w := range c.want {
					if !strings.Contains(line, w) {
						t.Errorf("%s %s: %q lacks %s", c.dest, c.site, line, w)
					}
				}
				for _, n := range c.not {
					if strings.Contains(line, n) {
						t.Errorf("%s %s: %q has %s", c.dest, c.site, line, n)
					}
				}
			}
		}
	})
}
