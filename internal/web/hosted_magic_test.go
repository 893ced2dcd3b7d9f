package web_test

import (
	"context"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// magicApp is hostedApp signing in by magic link.
func magicApp(t *testing.T, sys *servertest.System, mod func(*tenant.AppSettings)) (tenant.App, string) {
	t.Helper()
	return hostedApp(t, sys, func(s *tenant.AppSettings) {
		magic := "magic"
		s.EmailAuthType = &magic
		if mod != nil {
			mod(s)
		}
	})
}

// otherDevice is the user agent of a device that did not ask for the link.
const otherDevice = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"

var matchRe = regexp.MustCompile(`id="match">(\d+)<`)

// askLink asks for a link for email on the login page (with query) and
// returns the waiting page, the match number it shows and the e-mailed
// link (a path of the test server).
func (v *visitor) askLink(app tenant.App, query, email string) (answer, string, string) {
	v.t.Helper()
	a := v.sendCode(app.ID, query, email)
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/login/"+app.ID+"/magic" {
		v.t.Fatalf("send: %d %q\n%s", a.status, a.header.Get("Location"), a.body)
	}
	page := v.expect("GET", "/login/"+app.ID+"/magic", nil, http.StatusOK)
	checkHostedHeaders(v.t, "waiting page", page, "https://shop.example https://www.shop.example")
	m := matchRe.FindStringSubmatch(page.body)
	if m == nil || !strings.Contains(page.body, email) || !strings.Contains(page.body, `data-wait=`) {
		v.t.Fatalf("waiting page:\n%s", page.body)
	}
	msg, ok := v.sys.Mail.Last(email)
	if !ok || !strings.HasPrefix(msg.Link, v.sys.URL+"/v1/auth/"+app.ID+"/magic_links/open?sct_magic=") {
		v.t.Fatalf("e-mailed link: %q", msg.Link)
	}
	return page, m[1], strings.TrimPrefix(msg.Link, v.sys.URL)
}

// status asks the waiting page's status route, as hosted.js does.
func (v *visitor) magicState(app tenant.App, csrf string) string {
	v.t.Helper()
	status, body := v.postJSON("/login/"+app.ID+"/magic/status", csrf, map[string]any{}, nil)
	if status != http.StatusOK {
		v.t.Fatalf("status: %d %v", status, body)
	}
	s, _ := body["state"].(string)
	return s
}

func TestHostedMagicLinkSameDevice(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := magicApp(t, sys, nil)
		v := newVisitor(t, sys)
		page, _, link := v.askLink(app, "", email)
		csrf := csrfOf(t, page)
		if s := v.magicState(app, csrf); s != "pending" {
			t.Fatalf("state before the link is opened: %q", s)
		}
		// Pressing "I've opened the link" too early says so.
		a := v.expect("POST", "/login/"+app.ID+"/magic", url.Values{"csrf": {csrf}}, http.StatusConflict)
		if !strings.Contains(a.body, "not been opened yet") {
			t.Fatalf("check before opening:\n%s", a.body)
		}

		// The same browser opens the link: back to the hosted page, not the app.
		a = v.expect("GET", link, nil, http.StatusSeeOther)
		loc, err := url.Parse(a.header.Get("Location"))
		if err != nil || loc.Path != "/login/"+app.ID+"/magic/open" || loc.Query().Get("sct_magic") == "" {
			t.Fatalf("same device: %q", a.header.Get("Location"))
		}
		landing := v.expect("GET", loc.RequestURI(), nil, http.StatusOK)
		if !strings.Contains(landing.body, `data-magic="open"`) || landing.header.Get("Referrer-Policy") != "no-referrer" {
			t.Fatalf("landing page:\n%s", landing.body)
		}
		// Opening changes nothing: the link still works.
		tok := loc.Query().Get("sct_magic")
		form := url.Values{"csrf": {csrfOf(t, landing)}, "sct_magic": {tok}, "return": {""}, "callback_url": {""}}
		v.refusedLanding(app, form)
		a = v.expect("POST", "/login/"+app.ID+"/magic/open", form, http.StatusSeeOther)
		claims := toCallback(t, sys, app, a)
		if !strings.Contains(claims, `"magic_link"`) {
			t.Fatalf("access token claims: %s", claims)
		}
		if v.cookies["__Host-gatehouse_app_"+app.ID] == "" {
			t.Fatal("no hosted session after the link")
		}
		// Used: the link is spent, and the waiting tab finds this browser
		// signed in (no second session from its poll).
		v.expect("POST", "/login/"+app.ID+"/magic/open", form, http.StatusNotFound)
		if s := v.magicState(app, csrf); s != "gone" {
			t.Fatalf("state after the link signed in: %q", s)
		}
		a = v.expect("GET", "/login/"+app.ID+"/magic", nil, http.StatusOK)
		if !strings.Contains(a.body, "/login/"+app.ID+"/continue") {
			t.Fatalf("waiting page after sign-in elsewhere:\n%s", a.body)
		}
	})
}

// refusedLanding checks the landing form refuses a post without its CSRF token.
func (v *visitor) refusedLanding(app tenant.App, form url.Values) {
	v.t.Helper()
	bad := url.Values{}
	for k, vs := range form {
		bad[k] = vs
	}
	bad.Set("csrf", "nope")
	v.expect("POST", "/login/"+app.ID+"/magic/open", bad, http.StatusForbidden)
}

func TestHostedMagicLinkCrossDevice(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := magicApp(t, sys, nil)
		v := newVisitor(t, sys)
		page, match, link := v.askLink(app, "?callback_url="+url.QueryEscape("https://www.shop.example/done"), email)
		csrf := csrfOf(t, page)

		// Another device opens the link: the consent page, with three numbers.
		phone := newVisitor(t, sys)
		consent := phone.do("GET", link, nil, map[string]string{"User-Agent": otherDevice})
		if consent.status != http.StatusOK || !strings.Contains(consent.body, `value="`+match+`"`) {
			t.Fatalf("consent page: %d\n%s", consent.status, consent.body)
		}
		if s := v.magicState(app, csrf); s != "pending" {
			t.Fatalf("state before approval: %q", s)
		}
		tok := strings.TrimPrefix(link[strings.Index(link, "sct_magic="):], "sct_magic=")
		tok, _ = url.QueryUnescape(tok)
		a := phone.do("POST", "/v1/auth/"+app.ID+"/magic_links/open", url.Values{"sct_magic": {tok}, "decision": {"approve"}, "number": {match}},
			map[string]string{"User-Agent": otherDevice})
		if a.status != http.StatusOK || !strings.Contains(a.body, "Approved") {
			t.Fatalf("approve: %d\n%s", a.status, a.body)
		}

		// The waiting page moves on: to the callback it was asked with.
		if s := v.magicState(app, csrf); s != "done" {
			t.Fatalf("state after approval: %q", s)
		}
		sys.Clock.Advance(3 * time.Second) // past the poll interval
		a = v.expect("POST", "/login/"+app.ID+"/magic", url.Values{"csrf": {csrf}}, http.StatusSeeOther)
		loc, _ := url.Parse(a.header.Get("Location"))
		if loc.Host != "www.shop.example" || loc.Path != "/done" || loc.Query().Get("sct_magic") == "" {
			t.Fatalf("after approval: %q", a.header.Get("Location"))
		}
		if status, set := api(t, sys, "PATCH", "/v1/auth/"+app.ID+"/magic_links/authenticate", map[string]string{"token": loc.Query().Get("sct_magic")}, nil); status != http.StatusOK || set["access"] == nil {
			t.Fatalf("C5: %d %v", status, set)
		}
		if v.cookies["__Host-gatehouse_app_"+app.ID] == "" {
			t.Fatal("no hosted session after approval")
		}

		// A denied link: the waiting page says so, and asks for a new one.
		w := newVisitor(t, sys)
		page, _, link = w.askLink(app, "", email)
		tok, _ = url.QueryUnescape(link[strings.Index(link, "sct_magic=")+len("sct_magic="):])
		phone.do("POST", "/v1/auth/"+app.ID+"/magic_links/open", url.Values{"sct_magic": {tok}, "decision": {"deny"}},
			map[string]string{"User-Agent": otherDevice})
		sys.Clock.Advance(3 * time.Second)
		a = w.expect("POST", "/login/"+app.ID+"/magic", url.Values{"csrf": {csrfOf(t, page)}}, http.StatusForbidden)
		if !strings.Contains(a.body, "denied") || w.cookies["__Host-gatehouse_app_"+app.ID] != "" {
			t.Fatalf("denied:\n%s", a.body)
		}

		// "Sign in here" on the other device: that device goes to the
		// hosted page and signs in; the waiting page gets nothing.
		x := newVisitor(t, sys)
		page, _, link = x.askLink(app, "", email)
		consent = phone.do("GET", link, nil, map[string]string{"User-Agent": otherDevice})
		here := regexp.MustCompile(`href="([^"]*/login/[^"]*)"`).FindStringSubmatch(consent.body)
		if here == nil {
			t.Fatalf("no hosted sign-in here link on the consent page:\n%s", consent.body)
		}
		hereURL, _ := url.Parse(strings.ReplaceAll(here[1], "&amp;", "&"))
		landing := phone.do("GET", hereURL.RequestURI(), nil, map[string]string{"User-Agent": otherDevice})
		if landing.status != http.StatusOK {
			t.Fatalf("landing on the other device: %d\n%s", landing.status, landing.body)
		}
		a = phone.do("POST", "/login/"+app.ID+"/magic/open", url.Values{"csrf": {csrfOf(t, landing)}, "sct_magic": {hereURL.Query().Get("sct_magic")}},
			map[string]string{"User-Agent": otherDevice})
		toCallback(t, sys, app, a)
		sys.Clock.Advance(3 * time.Second)
		a = x.expect("POST", "/login/"+app.ID+"/magic", url.Values{"csrf": {csrfOf(t, page)}}, http.StatusNotFound)
		if x.cookies["__Host-gatehouse_app_"+app.ID] != "" || !strings.Contains(a.body, "used on another device") {
			t.Fatalf("waiting page after sign-in on the other device:\n%s", a.body)
		}
	})
}

func TestHostedMagicLinkExpired(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := magicApp(t, sys, nil)
		v := newVisitor(t, sys)
		page, _, link := v.askLink(app, "", email)
		csrf := csrfOf(t, page)
		sys.Clock.Advance(time.Duration(app.MagicLinkExpiration)*time.Second + time.Second)
		if s := v.magicState(app, csrf); s != "done" {
			t.Fatalf("state of an expired link: %q", s)
		}
		a := v.expect("POST", "/login/"+app.ID+"/magic", url.Values{"csrf": {csrf}}, http.StatusNotFound)
		if !strings.Contains(a.body, "expired") {
			t.Fatalf("expired link:\n%s", a.body)
		}
		// Opening it: the consent route's expired page.
		if a := v.do("GET", link, nil, nil); a.status != http.StatusNotFound {
			t.Fatalf("expired link opened: %d", a.status)
		}

		// An address nobody has gets the same waiting page, pending until
		// a link would have expired, then the same answer.
		w := newVisitor(t, sys)
		a = w.sendCode(app.ID, "", "nobody@shop.example")
		if a.header.Get("Location") != "/login/"+app.ID+"/magic" {
			t.Fatalf("nobody: %q", a.header.Get("Location"))
		}
		page = w.expect("GET", "/login/"+app.ID+"/magic", nil, http.StatusOK)
		if s := w.magicState(app, csrfOf(t, page)); s != "pending" {
			t.Fatalf("nobody's state: %q", s)
		}
		sys.Clock.Advance(time.Duration(app.MagicLinkExpiration)*time.Second + time.Second)
		if s := w.magicState(app, csrfOf(t, page)); s != "done" {
			t.Fatalf("nobody's state after expiry: %q", s)
		}
		w.expect("POST", "/login/"+app.ID+"/magic", url.Values{"csrf": {csrfOf(t, page)}}, http.StatusNotFound)
	})
}

func TestHostedSignUpFields(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, _ := hostedApp(t, sys, func(s *tenant.AppSettings) {
			open := true
			schema := appuser.Schema{
				{ID: "1", Name: "First name", FieldName: "first_name", FieldType: appuser.FieldString, VisibleRegistration: true, Required: true},
				{ID: "2", Name: "Age", FieldName: "age", FieldType: appuser.FieldInteger, VisibleRegistration: true},
				{ID: "3", Name: "Plan", FieldName: "plan", FieldType: appuser.FieldString},
			}
			s.PublicSignup, s.MetaSchema = &open, &schema
		})
		// A known user without the required field is asked for it (with the
		// other blank fields beside it); with it, straight through.
		k := newVisitor(t, sys)
		if a := k.signIn(app.ID, "", "alice@shop.example"); a.header.Get("Location") != "/login/"+app.ID+"/register" {
			t.Fatalf("known user without the required field: %q", a.header.Get("Location"))
		}
		if page := k.expect("GET", "/login/"+app.ID+"/register", nil, http.StatusOK); !strings.Contains(page.body, `name="meta.first_name"`) {
			t.Fatalf("a known user's form does not ask for the required field:\n%s", page.body)
		}
		alice := lookupUser(t, sys, app, "alice@shop.example")
		if _, err := sys.Users.Update(context.Background(), access.Operator(), app, alice, appuser.UpdateInput{Meta: map[string]any{"first_name": "Alice"}}); err != nil {
			t.Fatal(err)
		}
		if a := newVisitor(t, sys).signIn(app.ID, "", "alice@shop.example"); !strings.HasPrefix(a.header.Get("Location"), "https://shop.example/") {
			t.Fatalf("known user: %q", a.header.Get("Location"))
		}

		// A new address signs up by its code, then gets the form.
		v := newVisitor(t, sys)
		a := v.signIn(app.ID, "", "new@shop.example")
		if a.header.Get("Location") != "/login/"+app.ID+"/register" {
			t.Fatalf("after the new user's code: %q", a.header.Get("Location"))
		}
		page := v.expect("GET", "/login/"+app.ID+"/register", nil, http.StatusOK)
		checkHostedHeaders(t, "register", page, "https://shop.example https://www.shop.example")
		if !strings.Contains(page.body, `name="meta.first_name"`) || !strings.Contains(page.body, `name="meta.age"`) || strings.Contains(page.body, "meta.plan") {
			t.Fatalf("registration form:\n%s", page.body)
		}
		// The required field cannot be skipped: "Continue as" from the login
		// page comes back here, with no hand-off.
		login := v.expect("GET", "/login/"+app.ID, nil, http.StatusOK)
		if a := v.expect("POST", "/login/"+app.ID+"/continue", url.Values{"csrf": {csrfOf(t, login)}}, http.StatusSeeOther); a.header.Get("Location") != "/login/"+app.ID+"/register" {
			t.Fatalf("continue before the required field: %q", a.header.Get("Location"))
		}
		page = v.expect("GET", "/login/"+app.ID+"/register", nil, http.StatusOK)
		csrf := csrfOf(t, page)
		stale := maps.Clone(v.cookies) // this browser as it is now, for a replay below
		// Required, and checked by the schema.
		a = v.expect("POST", "/login/"+app.ID+"/register", url.Values{"csrf": {csrf}, "meta.age": {"12"}}, http.StatusUnprocessableEntity)
		if !strings.Contains(a.body, "First name is required") {
			t.Fatalf("missing field:\n%s", a.body)
		}
		a = v.expect("POST", "/login/"+app.ID+"/register", url.Values{"csrf": {csrf}, "meta.first_name": {"Nina"}, "meta.age": {"old"}}, http.StatusUnprocessableEntity)
		if !strings.Contains(a.body, `id="err-age"`) || !strings.Contains(a.body, `value="Nina"`) {
			t.Fatalf("invalid field:\n%s", a.body)
		}
		// A field the user may not set is not taken.
		a = v.expect("POST", "/login/"+app.ID+"/register", url.Values{"csrf": {csrf}, "meta.first_name": {"Nina"}, "meta.age": {"41"}, "meta.plan": {"gold"}}, http.StatusSeeOther)
		loc, _ := url.Parse(a.header.Get("Location"))
		status, set := api(t, sys, "PATCH", "/v1/auth/"+app.ID+"/magic_links/authenticate", map[string]string{"token": loc.Query().Get("sct_magic")}, nil)
		if status != http.StatusOK {
			t.Fatalf("C5: %d %v", status, set)
		}
		status, me := api(t, sys, "GET", "/v1/auth/"+app.ID+"/current_user", nil, map[string]string{"X-Authorization": set["access"].(string)})
		if status != http.StatusOK {
			t.Fatalf("current user: %d %v", status, me)
		}
		u, _ := me["user"].(map[string]any)
		if u == nil {
			u = me
		}
		meta, _ := u["user_meta"].(map[string]any)
		if meta == nil {
			meta, _ = u["meta"].(map[string]any)
		}
		if meta["first_name"] != "Nina" || meta["age"] != float64(41) || meta["plan"] != nil {
			t.Fatalf("saved metadata: %v", me)
		}
		// The form is done: it is not asked again.
		v.expect("GET", "/login/"+app.ID+"/register", nil, http.StatusBadRequest)
		// The same form sent again (a browser that kept its old cookies)
		// fills blanks only: it never rewrites a value.
		replay := newVisitor(t, sys)
		replay.cookies = stale
		replay.do("POST", "/login/"+app.ID+"/register", url.Values{"csrf": {csrf}, "meta.first_name": {"Mallory"}, "meta.age": {"99"}}, nil)
		if u, err := sys.Users.Get(context.Background(), access.Operator(), app, u["id"].(string)); err != nil ||
			u.Meta["first_name"] != "Nina" || u.Meta["age"] != float64(41) {
			t.Fatalf("after a replayed form: %v %v", u.Meta, err)
		}
		// A new address that asks twice (the second send finds the user the
		// first made) is still asked for the required field.
		twice := newVisitor(t, sys)
		twice.sendCode(app.ID, "", "twice@shop.example")
		if a := twice.signIn(app.ID, "", "twice@shop.example"); a.header.Get("Location") != "/login/"+app.ID+"/register" {
			t.Fatalf("a new address that asked twice: %q", a.header.Get("Location"))
		}
	})
}

func TestHostedEmailCodeSecondFactor(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, _ := hostedApp(t, sys, func(s *tenant.AppSettings) {
			ids, required, policy, methods := []string{"email", "phone"}, []string{"email"}, "required", []string{"email_otp", "sms_otp"}
			s.AllowedIdentifiers, s.RequiredIdentifiers, s.MFAPolicy, s.MFAMethodsAllowed = &ids, &required, &policy, &methods
		})
		email, phone := "pat@shop.example", "+14155552671"
		if _, _, err := sys.Users.Create(context.Background(), access.Operator(), app, appuser.CreateInput{Email: email, Phone: phone}); err != nil {
			t.Fatal(err)
		}
		// By a texted code first, then a code by e-mail.
		v := newVisitor(t, sys)
		if a := v.signIn(app.ID, "", phone); a.header.Get("Location") != "/login/"+app.ID+"/mfa" {
			t.Fatalf("after the texted code: %q\n%s", a.header.Get("Location"), a.body)
		}
		page := v.expect("GET", "/login/"+app.ID+"/mfa", nil, http.StatusOK)
		if !strings.Contains(page.body, "e-mail") {
			t.Fatalf("MFA page:\n%s", page.body)
		}
		msg, ok := sys.Mail.Last(email)
		if !ok {
			t.Fatal("no code e-mailed as the second factor")
		}
		code := msg.Code
		if code == "" {
			code = regexp.MustCompile(`\d{6}`).FindString(msg.Text)
		}
		csrf := csrfOf(t, page)
		wrong := "000000"
		if code == wrong {
			wrong = "111111"
		}
		v.expect("POST", "/login/"+app.ID+"/mfa", url.Values{"csrf": {csrf}, "code": {wrong}}, http.StatusUnprocessableEntity)
		// A new code: the old one dies.
		sys.Clock.Advance(time.Minute)
		a := v.expect("POST", "/login/"+app.ID+"/mfa/resend", url.Values{"csrf": {csrf}}, http.StatusSeeOther)
		if a.header.Get("Location") != "/login/"+app.ID+"/mfa?sent=1" {
			t.Fatalf("resend: %q", a.header.Get("Location"))
		}
		if page := v.expect("GET", a.header.Get("Location"), nil, http.StatusOK); !strings.Contains(page.body, `role="status"`) {
			t.Fatalf("after resend:\n%s", page.body)
		}
		msg, _ = sys.Mail.Last(email)
		fresh := msg.Code
		if fresh == "" {
			fresh = regexp.MustCompile(`\d{6}`).FindString(msg.Text)
		}
		if fresh != code {
			v.expect("POST", "/login/"+app.ID+"/mfa", url.Values{"csrf": {csrf}, "code": {code}}, http.StatusUnprocessableEntity)
		}
		a = v.expect("POST", "/login/"+app.ID+"/mfa", url.Values{"csrf": {csrf}, "code": {fresh}}, http.StatusSeeOther)
		claims := toCallback(t, sys, app, a)
		if !strings.Contains(claims, `"email_otp"`) || !strings.Contains(claims, `"sms_otp"`) {
			t.Fatalf("access token claims: %s", claims)
		}
	})
}

// lookupUser is the id of app's user with email.
func lookupUser(t *testing.T, sys *servertest.System, app tenant.App, email string) string {
	t.Helper()
	u, err := sys.Users.Lookup(context.Background(), app, email)
	if err != nil || u == nil {
		t.Fatalf("lookup %s: %v", email, err)
	}
	return u.ID
}

// TestHostedLandingTakesOnlyItsLinks: the landing signs in only with a link
// the hosted page asked for. A link an app asked for through the API, or a
// hand-off token meant for the app's callback, sent to someone's browser as
// /login/{app}/magic/open?sct_magic=…, signs nobody in there (it would sign
// the victim in as the sender); and the page never submits itself.
func TestHostedLandingTakesOnlyItsLinks(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := magicApp(t, sys, nil)
		land := func(tok string) answer {
			t.Helper()
			victim := newVisitor(t, sys)
			page := victim.expect("GET", "/login/"+app.ID+"/magic/open?sct_magic="+url.QueryEscape(tok), nil, http.StatusOK)
			if !strings.Contains(page.body, "Press Continue") {
				t.Fatalf("the landing page does not wait for the person:\n%s", page.body)
			}
			a := victim.do("POST", "/login/"+app.ID+"/magic/open", url.Values{"csrf": {csrfOf(t, page)}, "sct_magic": {tok}}, nil)
			if _, ok := victim.cookies["__Host-gatehouse_app_"+app.ID]; ok {
				t.Errorf("a foreign token set a hosted session")
			}
			return a
		}

		// A link the app asked for through the API.
		if status, body := api(t, sys, "POST", "/v1/auth/"+app.ID+"/magic_links/login", map[string]string{"identifier": email}, nil); status != http.StatusOK {
			t.Fatalf("API link: %d %v", status, body)
		}
		msg, _ := sys.Mail.Last(email)
		tok, _ := url.QueryUnescape(msg.Link[strings.Index(msg.Link, "sct_magic=")+len("sct_magic="):])
		if a := land(tok); a.status != http.StatusNotFound {
			t.Fatalf("an API link at the landing: %d %s", a.status, a.header.Get("Location"))
		}
		// The link still works where it was meant to (it was not spent).
		if status, body := api(t, sys, "PATCH", "/v1/auth/"+app.ID+"/magic_links/authenticate", map[string]string{"token": tok}, nil); status != http.StatusOK {
			t.Fatalf("the API link after the refusal: %d %v", status, body)
		}

		// A hand-off token (what the app's callback gets), from a code
		// sign-in once the app sends codes.
		code := "otp"
		otp, err := sys.Tenants.UpdateApp(context.Background(), access.Operator(), app.WorkspaceID, app.ID, tenant.AppSettings{EmailAuthType: &code})
		if err != nil {
			t.Fatal(err)
		}
		v := newVisitor(t, sys)
		a := v.signIn(otp.ID, "", email)
		loc, _ := url.Parse(a.header.Get("Location"))
		handOff := loc.Query().Get("sct_magic")
		victim := newVisitor(t, sys)
		page := victim.expect("GET", "/login/"+otp.ID+"/magic/open?sct_magic="+url.QueryEscape(handOff), nil, http.StatusOK)
		if a := victim.do("POST", "/login/"+otp.ID+"/magic/open", url.Values{"csrf": {csrfOf(t, page)}, "sct_magic": {handOff}}, nil); a.status != http.StatusNotFound {
			t.Fatalf("a hand-off token at the landing: %d %s", a.status, a.header.Get("Location"))
		}
	})
}

// TestHostedFormsNeedTheirToken: every form of the sign-in page is refused
// without the page's CSRF token, or with another browser's, before it does
// anything; the waiting page's status read too.
func TestHostedFormsNeedTheirToken(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, _ := magicApp(t, sys, nil)
		v, other := newVisitor(t, sys), newVisitor(t, sys)
		v.expect("GET", "/login/"+app.ID, nil, http.StatusOK)
		theirs := csrfOf(t, other.expect("GET", "/login/"+app.ID, nil, http.StatusOK))
		for _, path := range []string{"", "/code", "/mfa", "/mfa/method", "/mfa/resend", "/continue", "/magic", "/magic/open",
			"/register", "/passkey", "/passkey/add", "/passkey/add/skip"} {
			for name, csrf := range map[string]string{"none": "", "another browser's": theirs} {
				form := url.Values{"identifier": {"eve@shop.example"}, "code": {"123456"}, "sct_magic": {"x"}, "meta.first_name": {"Eve"}}
				if csrf != "" {
					form.Set("csrf", csrf)
				}
				if a := v.do("POST", "/login/"+app.ID+path, form, nil); a.status != http.StatusForbidden {
					t.Errorf("POST /login/{app}%s with %s token: %d, want 403", path, name, a.status)
				}
			}
		}
		if _, ok := sys.Mail.Last("eve@shop.example"); ok {
			t.Error("a refused form sent a message")
		}
		for _, path := range []string{"/magic/status", "/passkey/begin", "/passkey/add/begin"} {
			if status, _ := v.postJSON("/login/"+app.ID+path, "", map[string]any{}, nil); status != http.StatusForbidden {
				t.Errorf("POST /login/{app}%s without its token: %d, want 403", path, status)
			}
			if status, _ := v.postJSON("/login/"+app.ID+path, theirs, map[string]any{}, nil); status != http.StatusForbidden {
				t.Errorf("POST /login/{app}%s with another browser's token: %d, want 403", path, status)
			}
		}
	})
}

// TestHostedSecondFactorSendLimited: when the second factor's code cannot
// be sent yet (the address's send limit), the second step says how long to
// wait (429, Retry-After) and keeps the sign-in: "Send a new code" sends it
// once the wait is over, and the code signs in.
func TestHostedSecondFactorSendLimited(t *testing.T) {
	limits := servertest.LooseLimits()
	limits.SendPerIdentifier = ratelimit.Rule{Limit: 2, Period: 10 * time.Minute}
	servertest.ForEach(t, servertest.Options{Serve: true, Limits: &limits}, func(t *testing.T, sys *servertest.System) {
		app, _ := hostedApp(t, sys, func(s *tenant.AppSettings) {
			ids, required, policy, methods := []string{"email", "phone"}, []string{"email"}, "required", []string{"email_otp"}
			s.AllowedIdentifiers, s.RequiredIdentifiers, s.MFAPolicy, s.MFAMethodsAllowed = &ids, &required, &policy, &methods
		})
		email, phone := "pat@shop.example", "+14155552671"
		if _, _, err := sys.Users.Create(context.Background(), access.Operator(), app, appuser.CreateInput{Email: email, Phone: phone}); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the address's budget, spent through the API
			if status, body := api(t, sys, "POST", "/v1/auth/"+app.ID+"/otps/login", map[string]string{"identifier": email}, nil); status >= 300 {
				t.Fatalf("send: %d %v", status, body)
			}
		}
		v := newVisitor(t, sys)
		if a := v.sendCode(app.ID, "", phone); a.status != http.StatusSeeOther {
			t.Fatalf("send to the phone: %d\n%s", a.status, a.body)
		}
		page := v.expect("GET", "/login/"+app.ID+"/code", nil, http.StatusOK)
		a := v.expect("POST", "/login/"+app.ID+"/code", url.Values{"csrf": {csrfOf(t, page)}, "code": {lastCode(t, sys, phone)}}, http.StatusTooManyRequests)
		if a.header.Get("Retry-After") == "" || !strings.Contains(a.body, "Too many attempts") || !strings.Contains(a.body, "/mfa/resend") ||
			!strings.Contains(a.body, "has not been sent yet") || strings.Contains(a.body, `name="code"`) {
			t.Fatalf("limited second factor: %v\n%s", a.header, a.body)
		}
		sent := len(sys.Mail.Messages())
		wait, _ := strconv.Atoi(a.header.Get("Retry-After"))
		sys.Clock.Advance(time.Duration(wait+1) * time.Second)
		csrf := csrfOf(t, a)
		if r := v.expect("POST", "/login/"+app.ID+"/mfa/resend", url.Values{"csrf": {csrf}}, http.StatusSeeOther); r.header.Get("Location") != "/login/"+app.ID+"/mfa?sent=1" {
			t.Fatalf("resend: %q", r.header.Get("Location"))
		}
		code := codeTo(t, sys, email, sent)
		toCallback(t, sys, app, v.expect("POST", "/login/"+app.ID+"/mfa", url.Values{"csrf": {csrf}, "code": {code}}, http.StatusSeeOther))
	})
}
