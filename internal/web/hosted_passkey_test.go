package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/passkey/passkeytest"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/social"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// Passkeys and social buttons on the hosted sign-in page, over HTTP on
// both engines. A software authenticator (passkeytest, descope's
// virtualwebauthn) answers for the page as a browser at the app's origin
// would (hosted.js's part: it only carries the options and answers).

// shopAuthenticator answers for hostedApp's app (origin https://shop.example).
func shopAuthenticator() *passkeytest.Authenticator {
	return passkeytest.New("shop.example", "https://shop.example")
}

// postJSON makes one of hosted.js's requests: JSON, with the login page's
// CSRF token in X-CSRF-Token (none when csrf is ""), and the visitor's cookies.
func (v *visitor) postJSON(path, csrf string, body any, header map[string]string) (int, map[string]any) {
	v.t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", v.sys.URL+path, strings.NewReader(string(b)))
	if err != nil {
		v.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36")
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	for name, value := range v.cookies {
		req.AddCookie(&http.Cookie{Name: name, Value: value})
	}
	for k, val := range header {
		req.Header.Set(k, val)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, out
}

// optionsOf re-encodes a begin answer's options for the authenticator.
func optionsOf(t *testing.T, body map[string]any) string {
	t.Helper()
	if body["options"] == nil {
		t.Fatalf("no options: %v", body)
	}
	b, _ := json.Marshal(body["options"])
	return string(b)
}

// codeSignIn signs in by code on a page where hosted.js found passkeys
// usable (webauthn=1), returning the code form's answer.
func (v *visitor) codeSignIn(appID, email string, webauthn bool) answer {
	v.t.Helper()
	page := v.expect("GET", "/login/"+appID, nil, http.StatusOK)
	flag := ""
	if webauthn {
		flag = "1"
	}
	v.expect("POST", "/login/"+appID, url.Values{"csrf": {csrfOf(v.t, page)}, "identifier": {email}, "webauthn": {flag}}, http.StatusSeeOther)
	page = v.expect("GET", "/login/"+appID+"/code", nil, http.StatusOK)
	return v.expect("POST", "/login/"+appID+"/code", url.Values{"csrf": {csrfOf(v.t, page)}, "code": {lastCode(v.t, v.sys, email)}}, http.StatusSeeOther)
}

// toCallback checks a is the redirect to the app's callback and that C5
// turns its token into a token set, whose access token's claims it returns.
func toCallback(t *testing.T, sys *servertest.System, app tenant.App, a answer) string {
	t.Helper()
	loc, err := url.Parse(a.header.Get("Location"))
	if err != nil || a.status != http.StatusSeeOther || loc.Scheme+"://"+loc.Host+loc.Path != "https://shop.example/auth/callback" || loc.Query().Get("sct_magic") == "" {
		t.Fatalf("not the callback: %d %q\n%s", a.status, a.header.Get("Location"), a.body)
	}
	status, set := api(t, sys, "PATCH", "/v1/auth/"+app.ID+"/magic_links/authenticate", map[string]string{"token": loc.Query().Get("sct_magic")}, nil)
	if status != http.StatusOK || set["access"] == nil || set["mfa_required"] == true {
		t.Fatalf("C5: %d %v", status, set)
	}
	claims, _ := base64.RawURLEncoding.DecodeString(strings.Split(set["access"].(string), ".")[1])
	return string(claims)
}

// addPasskey signs in by code and accepts the offer to add a passkey.
func addPasskey(t *testing.T, sys *servertest.System, app tenant.App, email string, auth *passkeytest.Authenticator) {
	t.Helper()
	v := newVisitor(t, sys)
	if a := v.codeSignIn(app.ID, email, true); a.header.Get("Location") != "/login/"+app.ID+"/passkey/add" {
		t.Fatalf("after the code: %q", a.header.Get("Location"))
	}
	page := v.expect("GET", "/login/"+app.ID+"/passkey/add", nil, http.StatusOK)
	csrf := csrfOf(t, page)
	status, got := v.postJSON("/login/"+app.ID+"/passkey/add/begin", csrf, map[string]any{}, nil)
	if status != http.StatusOK {
		t.Fatalf("add begin: %d %v", status, got)
	}
	body, _, err := auth.Create(optionsOf(t, got))
	if err != nil {
		t.Fatal(err)
	}
	toCallback(t, sys, app, v.expect("POST", "/login/"+app.ID+"/passkey/add", url.Values{"csrf": {csrf}, "credential": {body}}, http.StatusSeeOther))
}

// passkeyBegin opens the login page and starts a passkey sign-in: the
// page's CSRF token, the options and the tag.
func (v *visitor) passkeyBegin(appID string) (string, string, string) {
	v.t.Helper()
	csrf := csrfOf(v.t, v.expect("GET", "/login/"+appID, nil, http.StatusOK))
	status, got := v.postJSON("/login/"+appID+"/passkey/begin", csrf, map[string]any{}, nil)
	if status != http.StatusOK || got["tag"] == nil {
		v.t.Fatalf("passkey begin: %d %v", status, got)
	}
	return csrf, optionsOf(v.t, got), got["tag"].(string)
}

func TestHostedPasskeySignIn(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := hostedApp(t, sys, nil)
		auth := shopAuthenticator()

		// The login page: the passkey form (hidden until hosted.js shows
		// it), the flag the code form carries, the script by nonce, and
		// fetch allowed to here only.
		v := newVisitor(t, sys)
		page := v.expect("GET", "/login/"+app.ID, nil, http.StatusOK)
		checkHostedHeaders(t, "login", page, "https://shop.example https://www.shop.example")
		for _, want := range []string{`data-passkey="signin"`, `data-begin="/login/` + app.ID + `/passkey/begin"`,
			`data-origins="https://shop.example https://www.shop.example"`, `name="webauthn"`, "Sign in with a passkey",
			`autocomplete="username webauthn"`} {
			if !strings.Contains(page.body, want) {
				t.Fatalf("login page lacks %s:\n%s", want, page.body)
			}
		}
		src := regexp.MustCompile(`<script src="(/console/static/hosted\.js\?v=[0-9a-f]+)"`).FindStringSubmatch(page.body)
		if src == nil || !strings.Contains(page.header.Get("Content-Security-Policy"), "connect-src 'self';") {
			t.Fatalf("script or connect-src: %q\n%s", page.header.Get("Content-Security-Policy"), page.body)
		}
		if js := v.expect("GET", src[1], nil, http.StatusOK); !strings.Contains(js.body, `mediation = "conditional"`) {
			t.Fatalf("hosted.js:\n%s", js.body)
		}

		// A code sign-in in a browser that can use passkeys here offers to
		// add one, signed in already; accepting registers it and goes on.
		addPasskey(t, sys, app, email, auth)

		// The passkey signs in: to the callback, with a token C5 takes.
		w := newVisitor(t, sys)
		csrf, opts, tag := w.passkeyBegin(app.ID)
		assertion, err := auth.Get(opts)
		if err != nil {
			t.Fatal(err)
		}
		form := url.Values{"csrf": {csrf}, "credential": {assertion}, "tag": {tag}}
		claims := toCallback(t, sys, app, w.expect("POST", "/login/"+app.ID+"/passkey", form, http.StatusSeeOther))
		if !strings.Contains(claims, `"webauthn"`) {
			t.Fatalf("access token claims after a passkey: %s", claims)
		}
		if w.cookies["__Host-gatehouse_app_"+app.ID] == "" {
			t.Fatal("no hosted session after a passkey sign-in")
		}
		// The same answer again: refused (its ceremony is spent).
		a := w.expect("POST", "/login/"+app.ID+"/passkey", form, http.StatusBadRequest)
		if !strings.Contains(a.body, `role="alert"`) || a.header.Get("Location") != "" {
			t.Fatalf("replayed assertion:\n%s", a.body)
		}

		// An answer to the identifier's options (the button with the
		// field filled) signs in too.
		csrf = csrfOf(t, w.expect("GET", "/login/"+app.ID, nil, http.StatusOK))
		status, got := w.postJSON("/login/"+app.ID+"/passkey/begin", csrf, map[string]string{"identifier": email}, nil)
		if status != http.StatusOK {
			t.Fatalf("begin with an identifier: %d %v", status, got)
		}
		if assertion, err = auth.Get(optionsOf(t, got)); err != nil {
			t.Fatal(err)
		}
		toCallback(t, sys, app, w.expect("POST", "/login/"+app.ID+"/passkey", url.Values{"csrf": {csrf}, "credential": {assertion}, "tag": {got["tag"].(string)}}, http.StatusSeeOther))

		// "Not now" goes on to the app without a passkey.
		x := newVisitor(t, sys)
		if a := x.codeSignIn(app.ID, email, true); a.header.Get("Location") != "/login/"+app.ID+"/passkey/add" {
			t.Fatalf("after the code: %q", a.header.Get("Location"))
		}
		offer := x.expect("GET", "/login/"+app.ID+"/passkey/add", nil, http.StatusOK)
		checkHostedHeaders(t, "offer", offer, "https://shop.example https://www.shop.example")
		if !strings.Contains(offer.body, `data-passkey="add"`) || !strings.Contains(offer.body, "Not now") {
			t.Fatalf("offer page:\n%s", offer.body)
		}
		toCallback(t, sys, app, x.expect("POST", "/login/"+app.ID+"/passkey/add/skip", url.Values{"csrf": {csrfOf(t, offer)}}, http.StatusSeeOther))
		// The offer is gone with it.
		x.expect("GET", "/login/"+app.ID+"/passkey/add", nil, http.StatusBadRequest)
		// And remembered for this user in this browser: the next sign-in goes
		// straight on; another user of the browser is still asked.
		toCallback(t, sys, app, x.codeSignIn(app.ID, email, true))
		if _, _, err := sys.Users.Create(context.Background(), access.Operator(), app, appuser.CreateInput{Identifier: "bob@shop.example"}); err != nil {
			t.Fatal(err)
		}
		if a := x.codeSignIn(app.ID, "bob@shop.example", true); a.header.Get("Location") != "/login/"+app.ID+"/passkey/add" {
			t.Fatalf("another user after a Not now: %q", a.header.Get("Location"))
		}
		sys.Clock.Advance(31 * 24 * time.Hour) // and it wears off
		if a := x.codeSignIn(app.ID, email, true); a.header.Get("Location") != "/login/"+app.ID+"/passkey/add" {
			t.Fatalf("a month after the Not now: %q", a.header.Get("Location"))
		}

		// Without JavaScript (no flag), a code sign-in goes straight on.
		toCallback(t, sys, app, newVisitor(t, sys).codeSignIn(app.ID, email, false))

		// With return to the account page, accepting the offer comes back there.
		y := newVisitor(t, sys)
		page = y.expect("GET", "/login/"+app.ID+"?return=%2Faccount%2F"+app.ID, nil, http.StatusOK)
		y.expect("POST", "/login/"+app.ID, url.Values{"csrf": {csrfOf(t, page)}, "identifier": {email}, "webauthn": {"1"}, "return": {"/account/" + app.ID}}, http.StatusSeeOther)
		page = y.expect("GET", "/login/"+app.ID+"/code", nil, http.StatusOK)
		y.expect("POST", "/login/"+app.ID+"/code", url.Values{"csrf": {csrfOf(t, page)}, "code": {lastCode(t, sys, email)}}, http.StatusSeeOther)
		offer = y.expect("GET", "/login/"+app.ID+"/passkey/add", nil, http.StatusOK)
		if a := y.expect("POST", "/login/"+app.ID+"/passkey/add/skip", url.Values{"csrf": {csrfOf(t, offer)}}, http.StatusSeeOther); a.header.Get("Location") != "/account/"+app.ID {
			t.Fatalf("skip with return: %q", a.header.Get("Location"))
		}
	})
}

func TestHostedPasskeyRefusals(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := hostedApp(t, sys, nil)
		auth := shopAuthenticator()
		addPasskey(t, sys, app, email, auth)

		v := newVisitor(t, sys)
		csrf := csrfOf(t, v.expect("GET", "/login/"+app.ID, nil, http.StatusOK))
		other := newVisitor(t, sys)
		otherCSRF, otherOpts, otherTag := other.passkeyBegin(app.ID)

		// Options need the page's CSRF token, from this browser, same-origin.
		for name, c := range map[string]struct {
			csrf   string
			header map[string]string
		}{
			"no token":                {},
			"wrong token":             {csrf: strings.Repeat("0", 64)},
			"another browser's token": {csrf: otherCSRF},
			"cross-site":              {csrf: csrf, header: map[string]string{"Sec-Fetch-Site": "cross-site"}},
		} {
			if status, body := v.postJSON("/login/"+app.ID+"/passkey/begin", c.csrf, map[string]any{}, c.header); status != http.StatusForbidden {
				t.Errorf("begin, %s: %d %v", name, status, body)
			}
			if status, body := v.postJSON("/login/"+app.ID+"/passkey/add/begin", c.csrf, map[string]any{}, c.header); status != http.StatusForbidden {
				t.Errorf("add begin, %s: %d %v", name, status, body)
			}
		}
		// Not JSON: refused.
		if a := v.do("POST", "/login/"+app.ID+"/passkey/begin", url.Values{"csrf": {csrf}}, map[string]string{"X-CSRF-Token": csrf}); a.status != http.StatusBadRequest {
			t.Errorf("begin with a form: %d", a.status)
		}

		// The answer's form needs the token too.
		assertion, err := auth.Get(otherOpts)
		if err != nil {
			t.Fatal(err)
		}
		for name, f := range map[string]url.Values{
			"no token":                {"credential": {assertion}, "tag": {otherTag}},
			"another browser's token": {"csrf": {csrf}, "credential": {assertion}, "tag": {otherTag}},
		} {
			if a := other.do("POST", "/login/"+app.ID+"/passkey", f, nil); a.status != http.StatusForbidden {
				t.Errorf("finish, %s: %d", name, a.status)
			}
		}
		// A ceremony begun in another browser (its tag is bound to that
		// browser's pre-session) is refused here, and stays for its own.
		a := v.expect("POST", "/login/"+app.ID+"/passkey", url.Values{"csrf": {csrf}, "credential": {assertion}, "tag": {otherTag}}, http.StatusBadRequest)
		if !strings.Contains(a.body, "not started on this page") || v.cookies["__Host-gatehouse_app_"+app.ID] != "" {
			t.Fatalf("another browser's ceremony:\n%s", a.body)
		}
		toCallback(t, sys, app, other.expect("POST", "/login/"+app.ID+"/passkey", url.Values{"csrf": {otherCSRF}, "credential": {assertion}, "tag": {otherTag}}, http.StatusSeeOther))

		// An answer from another origin is refused by signin.
		evil := passkeytest.New("shop.example", "https://evil.example")
		evil.Auth = auth.Auth
		csrf, opts, tag := v.passkeyBegin(app.ID)
		bad, err := evil.Get(opts)
		if err != nil {
			t.Fatal(err)
		}
		if a := v.expect("POST", "/login/"+app.ID+"/passkey", url.Values{"csrf": {csrf}, "credential": {bad}, "tag": {tag}}, http.StatusBadRequest); !strings.Contains(a.body, "did not sign you in") {
			t.Fatalf("another origin's answer:\n%s", a.body)
		}

		// The offer and its actions need a pending offer and the hosted session.
		v.expect("GET", "/login/"+app.ID+"/passkey/add", nil, http.StatusBadRequest)
		v.expect("POST", "/login/"+app.ID+"/passkey/add/skip", url.Values{"csrf": {csrf}}, http.StatusBadRequest)
		if status, body := v.postJSON("/login/"+app.ID+"/passkey/add/begin", csrf, map[string]any{}, nil); status != http.StatusUnauthorized {
			t.Errorf("add begin without an offer: %d %v", status, body)
		}
		// No GET signs in or registers.
		for _, p := range []string{"/login/" + app.ID + "/passkey", "/login/" + app.ID + "/passkey/begin", "/login/" + app.ID + "/passkey/add/skip"} {
			if a := v.do("GET", p, nil, nil); a.status == http.StatusSeeOther || a.status == http.StatusOK {
				t.Errorf("GET %s: %d", p, a.status)
			}
		}

		// An app whose origin is no domain name has no passkeys: no form,
		// no offer, and begin says why.
		ws, _ := sys.Workspace(t, "Local")
		local := sys.App(t, ws.ID, "Local", func(s *tenant.AppSettings) {
			origin, cb, ids, otp := "http://127.0.0.1:3000", "http://127.0.0.1:3000/cb", []string{"email"}, "otp"
			s.Origin, s.CallbackURL, s.AllowedIdentifiers, s.RequiredIdentifiers, s.EmailAuthType = &origin, &cb, &ids, &ids, &otp
		})
		if _, _, err := sys.Users.Create(context.Background(), access.Operator(), local, appuser.CreateInput{Identifier: "bob@local.example"}); err != nil {
			t.Fatal(err)
		}
		page := v.expect("GET", "/login/"+local.ID, nil, http.StatusOK)
		if strings.Contains(page.body, "data-passkey") || strings.Contains(page.body, `name="webauthn"`) {
			t.Fatalf("passkeys offered by an app without them:\n%s", page.body)
		}
		if status, body := v.postJSON("/login/"+local.ID+"/passkey/begin", csrfOf(t, page), map[string]any{}, nil); status != http.StatusConflict || body["code"] != "webauthn_unavailable" {
			t.Fatalf("begin without passkeys: %d %v", status, body)
		}
		if a := newVisitor(t, sys).codeSignIn(local.ID, "bob@local.example", true); !strings.HasPrefix(a.header.Get("Location"), "http://127.0.0.1:3000/cb?") {
			t.Fatalf("code sign-in without passkeys: %q", a.header.Get("Location"))
		}
	})
}

var dataOptions = regexp.MustCompile(`data-options="([^"]*)"`)

// mfaOptions are the MFA page's passkey options.
func mfaOptions(t *testing.T, a answer) string {
	t.Helper()
	m := dataOptions.FindStringSubmatch(a.body)
	if m == nil || !strings.Contains(a.body, `data-passkey="mfa"`) {
		t.Fatalf("no passkey form on the MFA page:\n%s", a.body)
	}
	return html.UnescapeString(m[1])
}

func TestHostedPasskeySecondFactor(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := hostedApp(t, sys, func(s *tenant.AppSettings) {
			policy, methods := "optional", []string{"totp", "backup_code", "webauthn"}
			s.MFAPolicy, s.MFAMethodsAllowed = &policy, &methods
		})
		auth := shopAuthenticator()
		// With nothing enrolled the code alone signs in; the passkey added
		// then is the user's second factor.
		addPasskey(t, sys, app, email, auth)
		sys.Clock.Advance(time.Minute)

		v := newVisitor(t, sys)
		if a := v.codeSignIn(app.ID, email, true); a.header.Get("Location") != "/login/"+app.ID+"/mfa" {
			t.Fatalf("after the code: %q", a.header.Get("Location"))
		}
		page := v.expect("GET", "/login/"+app.ID+"/mfa", nil, http.StatusOK)
		checkHostedHeaders(t, "mfa", page, "https://shop.example https://www.shop.example")
		if !strings.Contains(page.body, "Use your passkey") || strings.Contains(page.body, `name="code"`) {
			t.Fatalf("MFA page:\n%s", page.body)
		}
		first := mfaOptions(t, page)
		csrf := csrfOf(t, page)

		// A wrong answer: refused, and the page offers new options.
		a := v.expect("POST", "/login/"+app.ID+"/mfa", url.Values{"csrf": {csrf}, "credential": {"{}"}}, http.StatusBadRequest)
		retry := mfaOptions(t, a)
		if !strings.Contains(a.body, `role="alert"`) || retry == first {
			t.Fatalf("wrong answer (same options: %v):\n%s", retry == first, a.body)
		}
		if v.cookies["__Host-gatehouse_app_"+app.ID] != "" {
			t.Fatal("a hosted session before the second factor")
		}
		// An answer to the first options, now replaced: refused.
		stale, err := auth.Get(first)
		if err != nil {
			t.Fatal(err)
		}
		v.expect("POST", "/login/"+app.ID+"/mfa", url.Values{"csrf": {csrf}, "credential": {stale}}, http.StatusBadRequest)

		// The passkey's answer to the page's options: signed in with both
		// factors, and no offer (a passkey was just used).
		page = v.expect("GET", "/login/"+app.ID+"/mfa", nil, http.StatusOK)
		answer, err := auth.Get(mfaOptions(t, page))
		if err != nil {
			t.Fatal(err)
		}
		claims := toCallback(t, sys, app, v.expect("POST", "/login/"+app.ID+"/mfa", url.Values{"csrf": {csrf}, "credential": {answer}}, http.StatusSeeOther))
		if !strings.Contains(claims, `"email_otp"`) || !strings.Contains(claims, `"webauthn"`) {
			t.Fatalf("access token claims after code and passkey: %s", claims)
		}

		// A browser without JavaScript cannot use it: the page says so.
		x := newVisitor(t, sys)
		page = x.expect("GET", "/login/"+app.ID, nil, http.StatusOK)
		x.expect("POST", "/login/"+app.ID, url.Values{"csrf": {csrfOf(t, page)}, "identifier": {email}}, http.StatusSeeOther)
		page = x.expect("GET", "/login/"+app.ID+"/code", nil, http.StatusOK)
		a = x.expect("POST", "/login/"+app.ID+"/code", url.Values{"csrf": {csrfOf(t, page)}, "code": {lastCode(t, sys, email)}}, http.StatusForbidden)
		if !strings.Contains(a.body, "needs JavaScript") || x.cookies["__Host-gatehouse_app_"+app.ID] != "" {
			t.Fatalf("passkey second factor without JavaScript:\n%s", a.body)
		}

		// A passkey that verified the user is both factors: signed in at once.
		w := newVisitor(t, sys)
		csrf, opts, tag := w.passkeyBegin(app.ID)
		assertion, err := auth.Get(opts)
		if err != nil {
			t.Fatal(err)
		}
		toCallback(t, sys, app, w.expect("POST", "/login/"+app.ID+"/passkey", url.Values{"csrf": {csrf}, "credential": {assertion}, "tag": {tag}}, http.StatusSeeOther))
	})
}

func TestHostedSocialButtons(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, _ := hostedApp(t, sys, nil)
		v := newVisitor(t, sys)
		if page := v.expect("GET", "/login/"+app.ID, nil, http.StatusOK); strings.Contains(page.body, "Continue with") {
			t.Fatalf("social buttons without providers:\n%s", page.body)
		}

		ctx := context.Background()
		for _, c := range []social.Change{
			{Slug: "github", Type: "github", Enabled: true, ClientID: "gh-client", Settings: map[string]string{"client_secret": "gh-secret-0123456789"}},
			{Slug: "corp", Type: "github", Enabled: true, Name: "Corp GitHub", ClientID: "corp-client", Settings: map[string]string{"client_secret": "corp-secret-0123456789"}, Color: "#1A2B3C"},
			{Slug: "off", Type: "github", Enabled: false, ClientID: "off-client", Settings: map[string]string{"client_secret": "off-secret-0123456789"}},
		} {
			if _, _, err := sys.Social.Put(ctx, access.Operator(), app.ID, c); err != nil {
				t.Fatal(err)
			}
		}
		buttons := regexp.MustCompile(`<a class="social p\d" href="([^"]+)" data-provider="([^"]+)"><img src="([^"]+)" alt=""> Continue with ([^<]+)</a>`)
		check := func(query, callback string) {
			t.Helper()
			page := v.expect("GET", "/login/"+app.ID+query, nil, http.StatusOK)
			checkHostedHeaders(t, "login with social buttons", page, "https://shop.example https://www.shop.example")
			got := map[string]string{}
			for _, m := range buttons.FindAllStringSubmatch(page.body, -1) {
				q := url.Values{"provider": {m[2]}}
				if callback != "" {
					q.Set("callback_url", callback)
				}
				if href := html.UnescapeString(m[1]); href != "/v1/auth/"+app.ID+"/oauth/authorize?"+q.Encode() || m[3] != "/v1/assets/oauth/github.svg" {
					t.Errorf("button %s: href %q icon %q", m[2], href, m[3])
				}
				got[m[2]] = m[4]
			}
			if len(got) != 2 || got["github"] != "GitHub" || got["corp"] != "Corp GitHub" {
				t.Fatalf("buttons %v, want github and corp:\n%s", got, page.body)
			}
			// The provider's colour, as the button's edge, in the page's nonce'd style.
			if !regexp.MustCompile(`a\.social\.p\d\{border-left:4px solid #1a2b3c\}`).MatchString(page.body) {
				t.Errorf("no colour for corp's button:\n%s", page.body)
			}
		}
		check("", "")
		cb := "https://www.shop.example/after"
		check("?callback_url="+url.QueryEscape(cb), cb)

		// The link starts the provider's flow, which will come back to that callback.
		page := v.expect("GET", "/login/"+app.ID+"?callback_url="+url.QueryEscape(cb), nil, http.StatusOK)
		href := sys.URL + html.UnescapeString(buttons.FindStringSubmatch(page.body)[1])
		for range 2 { // at most once by base_url's host first
			resp, err := noRedirect.Get(href)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if href = resp.Header.Get("Location"); !strings.Contains(href, "gh_host=1") {
				break
			}
		}
		dest, _ := url.Parse(href)
		if !strings.HasSuffix(dest.Path, "/login/oauth/authorize") || dest.Query().Get("state") == "" ||
			dest.Query().Get("redirect_uri") != sys.Social.RedirectURI(app.ID) || dest.Query().Get("client_id") != "gh-client" && dest.Query().Get("client_id") != "corp-client" {
			t.Fatalf("authorize: %q", href)
		}

		// A sign-in for the account page has no social buttons (they end
		// at the app, with no hosted session).
		if page := v.expect("GET", "/login/"+app.ID+"?return=%2Faccount%2F"+app.ID, nil, http.StatusOK); strings.Contains(page.body, "Continue with") {
			t.Fatalf("social buttons on a sign-in for the account page:\n%s", page.body)
		}
	})
}
