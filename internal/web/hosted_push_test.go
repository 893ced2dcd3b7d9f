package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// waitState asks a waiting page's status route as hosted.js does: the
// form's fields, the CSRF token also in X-CSRF-Token.
func (v *visitor) waitState(path string, form url.Values) string {
	v.t.Helper()
	a := v.do("POST", path, form, map[string]string{"X-CSRF-Token": form.Get("csrf")})
	var out map[string]string
	if a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &out) != nil {
		v.t.Fatalf("status %s: %d %s", path, a.status, a.body)
	}
	return out["state"]
}

var pushMatchRe = regexp.MustCompile(`<p class="match" id="match">(\d+)</p>`)

func matchOf(t *testing.T, a answer) int {
	t.Helper()
	m := pushMatchRe.FindStringSubmatch(a.body)
	if m == nil {
		t.Fatalf("no match number:\n%s", a.body)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

var requestRe = regexp.MustCompile(`action="/account/[^/]+/push/([^/"]+)/approve"`)

// requests are the push requests the account page lists.
func requests(a answer) []string {
	var ids []string
	for _, m := range requestRe.FindAllStringSubmatch(a.body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// TestHostedPushSecondFactor: with push as the app's second factor, a
// sign-in in browser B waits (the number shown, the status route pending,
// "I've approved it" refused with 409) until the account page in browser A,
// signed in as the same user, approves it with that number (a wrong number
// is refused and spends an attempt); then B ends on the app's callback. A
// denied request gives nothing and "Ask my devices again" starts a new one,
// which kills the old. The account page's step-up can be a push too,
// approved from the other browser.
func TestHostedPushSecondFactor(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := accountApp(t, sys, func(s *tenant.AppSettings) {
			policy, methods := "required", []string{"push"}
			s.MFAPolicy, s.MFAMethodsAllowed = &policy, &methods
		})
		// A: the first device, signed in with no other device to approve
		// (no second factor the user has), on the account page.
		a, acct := onAccount(t, sys, app, email)
		if len(requests(acct)) != 0 || strings.Contains(acct.body, `id="requests"`) {
			t.Fatalf("requests listed before any:\n%s", acct.body)
		}

		// B signs in by code: its second factor is a push.
		b := newVisitor(t, sys)
		if r := b.signIn(app.ID, "", email); r.header.Get("Location") != "/login/"+app.ID+"/mfa" {
			t.Fatalf("after the code: %q\n%s", r.header.Get("Location"), r.body)
		}
		page := b.expect("GET", "/login/"+app.ID+"/mfa", nil, http.StatusOK)
		checkHostedHeaders(t, "push page", page, "https://shop.example https://www.shop.example")
		n, csrf := matchOf(t, page), csrfOf(t, page)
		if !strings.Contains(page.body, `data-status="/login/`+app.ID+`/mfa/status"`) {
			t.Fatalf("push page without its waiting form:\n%s", page.body)
		}
		status := "/login/" + app.ID + "/mfa/status"
		if s := b.waitState(status, url.Values{"csrf": {csrf}}); s != "pending" {
			t.Fatalf("state before approval: %s", s)
		}
		if s := b.do("POST", status, url.Values{}, nil); s.status != http.StatusForbidden {
			t.Fatalf("status without the token: %d", s.status)
		}
		if r := b.expect("POST", "/login/"+app.ID+"/mfa", url.Values{"csrf": {csrf}}, http.StatusConflict); !strings.Contains(r.body, "Not approved yet") {
			t.Fatalf("early collect:\n%s", r.body)
		}

		// A sees it, refuses a wrong number, approves with the right one.
		acct = a.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		ids := requests(acct)
		if len(ids) != 1 || !strings.Contains(acct.body, "Chrome") {
			t.Fatalf("requests on A: %v\n%s", ids, acct.body)
		}
		acsrf := csrfOf(t, acct)
		a.refusedWithoutCSRF(app, "/push/"+ids[0]+"/approve", url.Values{"match_number": {strconv.Itoa(n)}}, "")
		wrong := strconv.Itoa((n + 1) % 100)
		if r := a.post(app, "/push/"+ids[0]+"/approve", acsrf, url.Values{"match_number": {wrong}}, http.StatusUnprocessableEntity); !strings.Contains(r.body, "not the number") {
			t.Fatalf("wrong number:\n%s", r.body)
		}
		a.post(app, "/push/"+ids[0]+"/approve", acsrf, url.Values{"match_number": {"twelve"}}, http.StatusBadRequest)
		a.post(app, "/push/nope/approve", acsrf, url.Values{"match_number": {"1"}}, http.StatusNotFound)
		if r := a.post(app, "/push/"+ids[0]+"/approve", acsrf, url.Values{"match_number": {strconv.Itoa(n)}}, http.StatusSeeOther); r.header.Get("Location") != "/account/"+app.ID+"?notice=push-approved" {
			t.Fatalf("approve: %q", r.header.Get("Location"))
		}
		// Answered: no longer listed, and not again.
		if acct = a.expect("GET", "/account/"+app.ID+"?notice=push-approved", nil, http.StatusOK); len(requests(acct)) != 0 || !strings.Contains(acct.body, "Approved") {
			t.Fatalf("after approval:\n%s", acct.body)
		}
		a.post(app, "/push/"+ids[0]+"/approve", acsrf, url.Values{"match_number": {strconv.Itoa(n)}}, http.StatusNotFound)

		if s := b.waitState(status, url.Values{"csrf": {csrf}}); s != "done" {
			t.Fatalf("state after approval: %s", s)
		}
		claims := toCallback(t, sys, app, b.expect("POST", "/login/"+app.ID+"/mfa", url.Values{"csrf": {csrf}}, http.StatusSeeOther))
		if !strings.Contains(claims, `"push"`) {
			t.Fatalf("access token claims: %s", claims)
		}

		// C's request, denied by A: C's sign-in is over (no asking again: a
		// stranger with the code could replace the request the user is about
		// to deny, again and again).
		c := newVisitor(t, sys)
		c.signIn(app.ID, "", email)
		page = c.expect("GET", "/login/"+app.ID+"/mfa", nil, http.StatusOK)
		ccsrf := csrfOf(t, page)
		if strings.Contains(page.body, "/mfa/resend") {
			t.Fatalf("the push page offers to ask again:\n%s", page.body)
		}
		c.expect("POST", "/login/"+app.ID+"/mfa/resend", url.Values{"csrf": {ccsrf}}, http.StatusBadRequest)
		acct = a.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		ids = requests(acct)
		if len(ids) != 1 {
			t.Fatalf("requests for C: %v", ids)
		}
		// Each form needs this session's token: not none, not B's.
		bcsrf := csrfOf(t, b.expect("GET", "/account/"+app.ID, nil, http.StatusOK))
		a.refusedWithoutCSRF(app, "/push/"+ids[0]+"/deny", nil, bcsrf)
		a.refusedWithoutCSRF(app, "/push/"+ids[0]+"/approve", url.Values{"match_number": {"1"}}, bcsrf)
		if r := a.post(app, "/push/"+ids[0]+"/deny", csrfOf(t, acct), nil, http.StatusSeeOther); r.header.Get("Location") != "/account/"+app.ID+"?notice=push-denied" {
			t.Fatalf("deny: %q", r.header.Get("Location"))
		}
		if s := c.waitState(status, url.Values{"csrf": {ccsrf}}); s != "done" {
			t.Fatalf("state after denial: %s", s)
		}
		r := c.expect("POST", "/login/"+app.ID+"/mfa", url.Values{"csrf": {ccsrf}}, http.StatusForbidden)
		if !strings.Contains(r.body, "denied on your other device") || !strings.Contains(r.body, `name="identifier"`) {
			t.Fatalf("denied:\n%s", r.body)
		}
		if c.waitState(status, url.Values{"csrf": {ccsrf}}) != "gone" {
			t.Fatal("the denied sign-in's status is not gone")
		}

		// A's step-up by push, approved in B (which has a hosted session too).
		sp := a.post(app, "/stepup", csrfOf(t, acct), url.Values{"method": {"push"}}, http.StatusOK)
		sealed := regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(sp.body)
		if sealed == nil || !strings.Contains(sp.body, `data-status="/account/`+app.ID+`/stepup/status"`) {
			t.Fatalf("step-up by push:\n%s", sp.body)
		}
		sn, sform := matchOf(t, sp), url.Values{"csrf": {csrfOf(t, sp)}, "challenge": {sealed[1]}}
		if s := a.waitState("/account/"+app.ID+"/stepup/status", sform); s != "pending" {
			t.Fatalf("step-up state: %s", s)
		}
		a.refusedWithoutCSRF(app, "/stepup/status", url.Values{"challenge": {sealed[1]}}, bcsrf)
		if s := b.waitState("/account/"+app.ID+"/stepup/status", url.Values{"csrf": {bcsrf}, "challenge": {sealed[1]}}); s != "gone" {
			t.Fatalf("another session reads the step-up's state: %s", s)
		}
		if r := a.post(app, "/stepup/verify", sform.Get("csrf"), url.Values{"challenge": {sealed[1]}}, http.StatusConflict); !strings.Contains(r.body, "Not approved yet") {
			t.Fatalf("early step-up:\n%s", r.body)
		}
		bacct := b.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		steps := requests(bacct)
		if len(steps) != 1 {
			t.Fatalf("requests on B: %v", steps)
		}
		b.post(app, "/push/"+steps[0]+"/approve", csrfOf(t, bacct), url.Values{"match_number": {strconv.Itoa(sn)}}, http.StatusSeeOther)
		if s := a.waitState("/account/"+app.ID+"/stepup/status", sform); s != "done" {
			t.Fatalf("step-up state after approval: %s", s)
		}
		if r := a.post(app, "/stepup/verify", sform.Get("csrf"), url.Values{"challenge": {sealed[1]}}, http.StatusSeeOther); r.header.Get("Location") != "/account/"+app.ID+"?notice=confirmed" {
			t.Fatalf("step-up verify: %q", r.header.Get("Location"))
		}

		// An approval counts no fresher than the approving device's own
		// sign-in: asked while B's is recent, approved once it is not, it
		// confirms nothing; then push is not offered at all.
		sys.Clock.Advance(4 * time.Minute)
		acct = a.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		sp = a.post(app, "/stepup", csrfOf(t, acct), url.Values{"method": {"push"}}, http.StatusOK)
		sealed = regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(sp.body)
		sn = matchOf(t, sp)
		sys.Clock.Advance(2 * time.Minute)
		bacct = b.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		steps = requests(bacct)
		if len(steps) != 1 {
			t.Fatalf("requests on B: %v", steps)
		}
		b.post(app, "/push/"+steps[0]+"/approve", csrfOf(t, bacct), url.Values{"match_number": {strconv.Itoa(sn)}}, http.StatusSeeOther)
		if r := a.post(app, "/stepup/verify", sform.Get("csrf"), url.Values{"challenge": {sealed[1]}}, http.StatusForbidden); !strings.Contains(r.body, "signed in too long ago") ||
			strings.Contains(r.body, `name="method" value="push"`) || !strings.Contains(r.body, `name="method" value="email_otp"`) {
			t.Fatalf("stale approval:\n%s", r.body)
		}
		a.post(app, "/backup-codes", sform.Get("csrf"), nil, http.StatusForbidden) // still not recent
	})
}

// TestHostedPushStepUpDenied: "Deny, it wasn't me" to a step-up asked from
// another of the user's sessions ends that session: its holder is not the
// user (and would otherwise ask again and again).
func TestHostedPushStepUpDenied(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := accountApp(t, sys, nil)
		a, acct := onAccount(t, sys, app, email)
		b, _ := onAccount(t, sys, app, email)
		sys.Clock.Advance(time.Minute)
		sp := a.post(app, "/stepup", csrfOf(t, acct), url.Values{"method": {"push"}}, http.StatusOK)
		sealed := regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(sp.body)
		if sealed == nil {
			t.Fatalf("step-up by push:\n%s", sp.body)
		}
		bacct := b.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		ids := requests(bacct)
		if len(ids) != 1 || !strings.Contains(bacct.body, "Confirm it's you:") {
			t.Fatalf("requests on B: %v\n%s", ids, bacct.body)
		}
		b.post(app, "/push/"+ids[0]+"/deny", csrfOf(t, bacct), nil, http.StatusSeeOther)
		// A is signed out: its answer and its pages say so.
		if r := a.post(app, "/stepup/verify", csrfOf(t, sp), url.Values{"challenge": {sealed[1]}}, http.StatusUnauthorized); !strings.Contains(r.body, "signed out") {
			t.Fatalf("after the denial:\n%s", r.body)
		}
		if r := a.expect("GET", "/account/"+app.ID, nil, http.StatusSeeOther); !strings.HasPrefix(r.header.Get("Location"), "/login/"+app.ID) {
			t.Fatalf("A's account page: %q", r.header.Get("Location"))
		}
		// B, which denied, is still signed in.
		b.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
	})
}
