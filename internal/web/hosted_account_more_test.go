package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/pquerna/otp/totp"

	"github.com/gatehouse-auth/gatehouse/internal/passkey/passkeytest"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// The account page's default second factor, its count sentences in each
// language, and the status route that tells its script how many push
// requests wait.

var makeDefaultRe = regexp.MustCompile(`action="/account/[^/]+/mfa/([^/"]+)/default"`)

// makeDefaults are the factors the page offers to make the default.
func makeDefaults(a answer) []string {
	var ids []string
	for _, m := range makeDefaultRe.FindAllStringSubmatch(a.body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// factorsTable is the page's list of second factors ("" without one).
func factorsTable(a answer) string {
	i := strings.Index(a.body, `<table id="factors">`)
	if i < 0 {
		return ""
	}
	j := strings.Index(a.body[i:], "</table>")
	return a.body[i : i+j]
}

// addTOTP sets up an authenticator app named name through the page and
// returns its id and secret.
func (v *visitor) addTOTP(app tenant.App, csrf, name string) (id, secret string) {
	v.t.Helper()
	a := v.post(app, "/totp", csrf, url.Values{"name": {name}}, http.StatusOK)
	s := regexp.MustCompile(`<code id="totp-secret">([A-Z2-7]+)</code>`).FindStringSubmatch(a.body)
	enrol := regexp.MustCompile(`name="enrollment_id" value="([^"]+)"`).FindStringSubmatch(a.body)
	if s == nil || enrol == nil {
		v.t.Fatalf("TOTP setup page:\n%s", a.body)
	}
	code, _ := totp.GenerateCode(s[1], v.sys.Clock.Now())
	v.post(app, "/totp/confirm", csrf, url.Values{"enrollment_id": {enrol[1]}, "code": {code}}, http.StatusSeeOther)
	return enrol[1], s[1]
}

// TestHostedAccountDefaultFactor: with two second factors (a passkey, which
// the app takes as one, and an authenticator app) the two-step section
// marks the default and offers to make the other one the default, through
// signin.SetDefaultMFAMethod as PATCH /mfa/methods/{id} does: with the
// account page's CSRF token, for the user's own verified factors only
// (404 otherwise), and, as in the API, without a recent sign-in.
func TestHostedAccountDefaultFactor(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := accountApp(t, sys, nil)
		v, page := onAccount(t, sys, app, email)
		csrf := csrfOf(t, page)
		b, bobPage := onAccount(t, sys, app, "bob@shop.example")
		bobCSRF := csrfOf(t, bobPage)
		if factorsTable(page) != "" || len(makeDefaults(page)) != 0 {
			t.Fatalf("a default to choose without second factors:\n%s", page.body)
		}

		// One second factor: nothing to choose.
		pk := v.addPasskey(app, csrf, passkeytest.New("shop.example", "https://shop.example"))
		page = v.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		if factorsTable(page) != "" || len(makeDefaults(page)) != 0 {
			t.Fatalf("a default to choose with one second factor:\n%s", page.body)
		}

		// Two: the passkey (the first) is the default, the app can be made it.
		sys.Clock.Advance(time.Second)
		totpID, _ := v.addTOTP(app, csrf, "Phone")
		page = v.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		checkHostedHeaders(t, "account with factors", page, "https://shop.example https://www.shop.example")
		table := factorsTable(page)
		if ids := makeDefaults(page); len(ids) != 1 || ids[0] != totpID || strings.Count(table, `<span class="tag">default</span>`) != 1 ||
			!strings.Contains(table, "Phone") || !strings.Contains(table, "Authenticator app") || !strings.Contains(table, "Passkey") ||
			!strings.Contains(table, `aria-label="Make default: Phone"`) {
			t.Fatalf("factors (the passkey default, the app not):\n%s", page.body)
		}
		// The authenticator app's own list no longer tags the default.
		if strings.Count(page.body, `<span class="tag">default</span>`) != 1 {
			t.Fatalf("the default tagged twice:\n%s", page.body)
		}

		v.refusedWithoutCSRF(app, "/mfa/"+totpID+"/default", nil, bobCSRF)
		// Not Bob's, and not an authenticator app waiting to be confirmed.
		if a := b.post(app, "/mfa/"+totpID+"/default", bobCSRF, nil, http.StatusNotFound); !strings.Contains(a.body, "You have no such second factor.") {
			t.Fatalf("Bob making Alice's factor his default:\n%s", a.body)
		}
		b.post(app, "/mfa/"+pk+"/default", bobCSRF, nil, http.StatusNotFound)
		a := v.post(app, "/totp", csrf, url.Values{"name": {"Unconfirmed"}}, http.StatusOK)
		pending := regexp.MustCompile(`name="enrollment_id" value="([^"]+)"`).FindStringSubmatch(a.body)
		v.post(app, "/mfa/"+pending[1]+"/default", csrf, nil, http.StatusNotFound)
		v.post(app, "/mfa/nope/default", csrf, nil, http.StatusNotFound)

		// Long after the sign-in: no step-up (the API asks for none).
		sys.Clock.Advance(10 * time.Minute)
		isStepUpPage(t, "backup codes (not recent)", v.post(app, "/backup-codes", csrf, nil, http.StatusForbidden), app)
		if a := v.post(app, "/mfa/"+totpID+"/default", csrf, nil, http.StatusSeeOther); a.header.Get("Location") != "/account/"+app.ID+"?notice=mfa-default" {
			t.Fatalf("make default: %q", a.header.Get("Location"))
		}
		page = v.expect("GET", "/account/"+app.ID+"?notice=mfa-default", nil, http.StatusOK)
		if ids := makeDefaults(page); len(ids) != 1 || ids[0] != pk || !strings.Contains(page.body, "Default second factor changed") {
			t.Fatalf("after making the app the default:\n%s", page.body)
		}
		// The API says the same: the authenticator app is the default.
		if m := mfaDefault(t, sys, app, email); m != totpID {
			t.Fatalf("the API's default: %q, want %q", m, totpID)
		}
		// And back; Bob's page has no factors at all.
		v.post(app, "/mfa/"+pk+"/default", csrf, nil, http.StatusSeeOther)
		if ids := makeDefaults(v.expect("GET", "/account/"+app.ID, nil, http.StatusOK)); len(ids) != 1 || ids[0] != totpID {
			t.Fatalf("after making the passkey the default again: %v", ids)
		}
		if factorsTable(b.expect("GET", "/account/"+app.ID, nil, http.StatusOK)) != "" {
			t.Fatal("Bob's page lists factors")
		}
		// No GET changes it.
		if a := v.do("GET", "/account/"+app.ID+"/mfa/"+totpID+"/default", nil, nil); a.status == http.StatusOK || a.status == http.StatusSeeOther {
			t.Fatalf("GET make default: %d", a.status)
		}
		if m := mfaDefault(t, sys, app, email); m != pk {
			t.Fatalf("the default after a GET: %q, want %q", m, pk)
		}
	})
}

// mfaDefault is the id of the user's default second factor, as GET
// /mfa/methods (signin.MFAMethods) says.
func mfaDefault(t *testing.T, sys *servertest.System, app tenant.App, email string) string {
	t.Helper()
	u := userOf(t, sys, app, email)
	o, err := sys.SignIn.MFAMethods(context.Background(), app, signin.Caller{User: u.AppUser})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range o.Methods {
		if m.IsDefault {
			return m.ID
		}
	}
	return ""
}

// TestHostedAccountPlurals: a count of one reads in the singular, in each
// language: the backup codes on the account page, and the wait after too
// many attempts on the login page.
func TestHostedAccountPlurals(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := accountApp(t, sys, nil)
		v, _ := onAccount(t, sys, app, email)
		u := userOf(t, sys, app, email)
		codes := func(n int) {
			var ids, hashes []string
			for range n {
				ids, hashes = append(ids, uuid.Must(uuid.NewV7()).String()), append(hashes, uuid.NewString())
			}
			if err := sys.DB.ReplaceBackupCodes(context.Background(), app.ID, u.ID, ids, hashes, sys.Clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			n          int
			lang, want string
		}{
			{1, "en", "You have 1 unused backup code."},
			{1, "de", "Sie haben 1 unbenutzten Backup-Code."},
			{1, "fr", "Il vous reste 1 code de secours inutilisé."},
			{1, "es", "Tienes 1 código de respaldo sin usar."},
			{2, "en", "You have 2 unused backup codes."},
			{2, "de", "Sie haben 2 unbenutzte Backup-Codes."},
			{2, "fr", "Il vous reste 2 codes de secours inutilisés."},
			{2, "es", "Tienes 2 códigos de respaldo sin usar."},
		} {
			codes(c.n)
			page := v.do("GET", "/account/"+app.ID, nil, map[string]string{"Accept-Language": c.lang})
			if page.status != http.StatusOK || !strings.Contains(page.body, c.want) {
				t.Errorf("%d code(s) in %s: want %q\n%s", c.n, c.lang, c.want, page.body)
			}
		}

		// Sending codes until the limit refuses, then waiting until one
		// second is left.
		w := newVisitor(t, sys)
		send := func(lang string) answer {
			h := map[string]string{"Accept-Language": lang}
			page := w.do("GET", "/login/"+app.ID, nil, h)
			return w.do("POST", "/login/"+app.ID, url.Values{"csrf": {csrfOf(t, page)}, "identifier": {"bob@shop.example"}}, h)
		}
		var last answer
		for range 60 {
			if last = send("en"); last.status == http.StatusTooManyRequests {
				break
			}
		}
		wait, _ := strconv.Atoi(last.header.Get("Retry-After"))
		if last.status != http.StatusTooManyRequests || wait < 3 {
			t.Fatalf("rate limit: %d %q", last.status, last.header.Get("Retry-After"))
		}
		if !strings.Contains(last.body, "Wait "+strconv.Itoa(wait)+" seconds, then try again.") {
			t.Fatalf("the wait in seconds:\n%s", last.body)
		}
		sys.Clock.Advance(time.Duration(wait-1) * time.Second)
		for lang, want := range map[string]string{
			"en": "Too many attempts. Wait 1 second, then try again.",
			"de": "Zu viele Versuche. Warten Sie 1 Sekunde und versuchen Sie es dann erneut.",
			"fr": "Trop de tentatives. Patientez 1 seconde, puis réessayez.",
			"es": "Demasiados intentos. Espera 1 segundo y vuelve a intentarlo.",
		} {
			if a := send(lang); a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") != "1" || !strings.Contains(a.body, want) {
				t.Errorf("one second left in %s: %d %q, want %q\n%s", lang, a.status, a.header.Get("Retry-After"), want, a.body)
			}
		}
	})
}

// pushStatus asks the account page's status route as hosted_account.js
// does: a form with the page's CSRF token; it answers JSON.
func (v *visitor) pushStatus(app tenant.App, csrf string) int {
	v.t.Helper()
	a := v.post(app, "/push/status", csrf, nil, http.StatusOK)
	var out map[string]int
	if !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") || json.Unmarshal([]byte(a.body), &out) != nil {
		v.t.Fatalf("push status: %q %s", a.header.Get("Content-Type"), a.body)
	}
	n, ok := out["pending"]
	if !ok || len(out) != 1 {
		v.t.Fatalf("push status: %s", a.body)
	}
	return n
}

// TestHostedAccountPushStatus: the account page carries the number of
// requests it lists and loads its script, which asks the status route how
// many wait: one more once another browser's sign-in asks for a push, none
// once it is answered; only with this session's CSRF token, never another
// user's requests.
func TestHostedAccountPushStatus(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := accountApp(t, sys, func(s *tenant.AppSettings) {
			policy, methods := "required", []string{"push"}
			s.MFAPolicy, s.MFAMethodsAllowed = &policy, &methods
		})
		a, acct := onAccount(t, sys, app, email)
		checkHostedHeaders(t, "account page", acct, "https://shop.example https://www.shop.example")
		if !strings.Contains(acct.body, `src="/console/static/hosted_account.js?v=`) || !strings.Contains(acct.body, `data-pending="0"`) ||
			!strings.Contains(acct.body, `data-status="/account/`+app.ID+`/push/status"`) ||
			!strings.Contains(acct.body, `data-text="A sign-in request is waiting for your approval."`) || !strings.Contains(acct.body, `data-link="Show it"`) ||
			!strings.Contains(acct.body, `data-href="/account/`+app.ID+`#requests"`) {
			t.Fatalf("account page without its push status line or script:\n%s", acct.body)
		}
		csrf := csrfOf(t, acct)
		b, bobPage := onAccount(t, sys, app, "bob@shop.example")
		bobCSRF := csrfOf(t, bobPage)
		if n := a.pushStatus(app, csrf); n != 0 {
			t.Fatalf("pending before any request: %d", n)
		}
		a.refusedWithoutCSRF(app, "/push/status", nil, bobCSRF)

		// Browser C signs in as the same user: its second factor is a push.
		c := newVisitor(t, sys)
		if r := c.signIn(app.ID, "", email); r.header.Get("Location") != "/login/"+app.ID+"/mfa" {
			t.Fatalf("after the code: %q", r.header.Get("Location"))
		}
		n := matchOf(t, c.expect("GET", "/login/"+app.ID+"/mfa", nil, http.StatusOK))
		if got := a.pushStatus(app, csrf); got != 1 {
			t.Fatalf("pending after C asked: %d", got)
		}
		if got := b.pushStatus(app, bobCSRF); got != 0 {
			t.Fatalf("Bob sees Alice's request: %d", got)
		}
		// The status route changes nothing: the request still waits, listed.
		acct = a.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		ids := requests(acct)
		if len(ids) != 1 || !strings.Contains(acct.body, `data-pending="1"`) {
			t.Fatalf("the page after C asked: %v\n%s", ids, acct.body)
		}
		a.post(app, "/push/"+ids[0]+"/approve", csrf, url.Values{"match_number": {strconv.Itoa(n)}}, http.StatusSeeOther)
		if got := a.pushStatus(app, csrf); got != 0 {
			t.Fatalf("pending after approval: %d", got)
		}

		// The language of the page's line.
		de := a.do("GET", "/account/"+app.ID, nil, map[string]string{"Accept-Language": "de"})
		if !strings.Contains(de.body, `data-text="Eine Anmeldeanfrage wartet auf Ihre Bestätigung."`) || !strings.Contains(de.body, `data-link="Anzeigen"`) {
			t.Fatalf("German account page:\n%s", de.body)
		}

		// No GET, and nothing without a hosted session.
		if r := a.do("GET", "/account/"+app.ID+"/push/status", nil, nil); r.status == http.StatusOK {
			t.Fatalf("GET push status: %d", r.status)
		}
		if r := newVisitor(t, sys).do("POST", "/account/"+app.ID+"/push/status", url.Values{"csrf": {csrf}}, nil); r.status != http.StatusUnauthorized {
			t.Fatalf("signed-out push status: %d", r.status)
		}
	})
}

// TestHostedAccountPushStatusIdle: the account page's background poll does
// not count as use of the hosted session, so a page left open still idles
// out at the app's refresh lifetime.
func TestHostedAccountPushStatusIdle(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := accountApp(t, sys, func(s *tenant.AppSettings) {
			idle, access := int64(300), int64(300)
			s.RefreshExpiration, s.AccessExpiration = &idle, &access
		})
		a, acct := onAccount(t, sys, app, email)
		csrf := csrfOf(t, acct)
		for range 4 {
			sys.Clock.Advance(70 * time.Second)
			if n := a.pushStatus(app, csrf); n != 0 {
				t.Fatalf("pending: %d", n)
			}
		}
		sys.Clock.Advance(30 * time.Second) // 310 s after the last use
		if r := a.expect("GET", "/account/"+app.ID, nil, http.StatusSeeOther); !strings.HasPrefix(r.header.Get("Location"), "/login/"+app.ID) {
			t.Fatalf("the polled page kept its session: %q", r.header.Get("Location"))
		}
	})
}
