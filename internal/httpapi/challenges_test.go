package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
	"github.com/gatehouse-auth/gatehouse/internal/webhook/eventschema"
)

// The challenge resource over HTTP (interface §2.6, §4.11; client-compat
// C9–C13; briefing of issue 10): which purpose takes which method and
// credential, switching the second factor, push approval, contact and
// identifier changes, unknown identifiers and the app's own purposes, on
// both engines. Every scenario names the webhook events it emits.

func TestChallenges(t *testing.T) {
	runGroups(t, challengeOptions(), []group{
		{"methods", testMethodTable},
		{"not_set_up", testMethodsNotSetUp},
		{"switch_method", testSwitchMethod},
		{"replaced_push_denied", testReplacedPushDenied},
		{"push", testPush},
		{"verify_contact", testVerifyContact},
		{"change_identifier", testChangeIdentifier},
		{"unknown_identifier", testUnknownIdentifier},
		{"app_purposes", testAppPurposes},
		{"codes", testChallengeCodes},
	})
}

// challengeOptions serve a system behind a trusted proxy, so a test can
// speak from other IPs with X-Forwarded-For, whose per-IP and per-user
// challenge budgets do not trip tests that do not count them. The budget
// of unknown identifiers stays the default: 20 per IP and hour.
func challengeOptions() servertest.Options {
	l := servertest.LooseLimits()
	l.ChallengePerIP = ratelimit.Rule{Limit: 10000, Period: 10 * time.Minute}
	l.ChallengePerUser = ratelimit.Rule{Limit: 1000, Period: 10 * time.Minute}
	return servertest.Options{Serve: true, Limits: &l,
		Settings: map[string]string{"GATEHOUSE_HTTP_TRUSTED_PROXIES": "127.0.0.1/32"}}
}

// group is a part of a suite with an app (and events) of its own.
type group struct {
	name string
	fn   func(t *testing.T, e *env)
}

// runGroups runs each group on every engine, each on a fresh app of one
// system, so one group's settings, limits and events do not reach another's.
func runGroups(t *testing.T, opts servertest.Options, groups []group) {
	t.Helper()
	forEach(t, opts, func(t *testing.T, sys *servertest.System) {
		for _, g := range groups {
			t.Run(g.name, func(t *testing.T) {
				e := envOf(t, sys, g.name)
				e.recordEvents(t)
				g.fn(t, e)
			})
		}
	})
}

// browserAt is a browser at ip, as the trusted proxy names it.
func browserAt(ip string) map[string]string {
	return map[string]string{"X-Forwarded-For": ip, "User-Agent": browserUA}
}

// browser is a signed-out browser on the loopback address.
var browser = map[string]string{"User-Agent": browserUA}

// Events of the common steps.
var (
	// emailSent and smsSent: a code (or an e-mailed link) goes out.
	emailSent = []string{"verification.email.requested", "challenge.created"}
	smsSent   = []string{"verification.sms.requested", "challenge.created"}
	// emailVerified: an e-mailed code was right.
	emailVerified = []string{"verification.email.verified", "challenge.completed"}
	// mfaDue: a first factor by e-mail passed and a second one was asked for.
	mfaDue = []string{"verification.email.verified", "challenge.completed", "challenge.created"}
)

// setApp changes the app's settings with its own secret (server-sdk-compat §4).
func (e *env) setApp(t *testing.T, settings map[string]any) response {
	t.Helper()
	return scenario{method: "PATCH", path: "/v1/apps/" + e.app.ID, headers: bearer(e.appSecret),
		body: map[string]any{"app": settings}, wantStatus: 200}.run(t, e)
}

// newMember creates a user by the API with an e-mail address and, when
// phone is set, a phone number, and returns its id.
func (e *env) newMember(t *testing.T, email, phone string) string {
	t.Helper()
	body := map[string]any{"email": email}
	if phone != "" {
		body["phone"] = phone
	}
	r := scenario{method: "POST", path: "/v1/" + e.app.ID + "/users", headers: bearer(e.appSecret), body: body,
		wantStatus: 200, events: []string{"user.created"}}.run(t, e)
	return userOf(t, r)["id"].(string)
}

// firstFactor signs a known address in by e-mail code from a browser with
// headers and returns /otps/verify's answer: a token set, or mfa_required.
// events are what the verify must emit.
func (e *env) firstFactor(t *testing.T, email string, headers map[string]string, events ...string) response {
	t.Helper()
	r := scenario{method: "POST", path: e.authPath("/otps/login"), headers: headers, body: map[string]any{"identifier": email},
		wantStatus: 200, events: emailSent}.run(t, e)
	return scenario{method: "POST", path: e.authPath("/otps/verify"), headers: headers,
		body: map[string]any{"otp": e.code(t, email), "user_id": r.str("user_id")}, wantStatus: 200, events: events}.run(t, e)
}

// mfaRequired checks an MFA-required answer (client-compat §3.2): no
// tokens, the user, a pending challenge; it returns the challenge.
func (e *env) mfaRequired(t *testing.T, r response, userID string) map[string]any {
	t.Helper()
	if r.body["mfa_required"] != true || r.str("app_user_id") != userID || r.str("access") != "" || r.str("refresh") != "" {
		t.Fatalf("first factor answer = %s; want mfa_required for %s and no tokens", r.raw, userID)
	}
	ch := r.obj("mfa_challenge")
	if ch["purpose"] != "mfa" || ch["status"] != "pending" || ch["token"] == "" {
		t.Fatalf("mfa_challenge = %v; want a pending mfa challenge", ch)
	}
	e.remember(ch["token"].(string))
	return ch
}

// challengeOf reads the challenge of an answer and remembers its token.
func (e *env) challengeOf(t *testing.T, r response) (tok string, ch map[string]any) {
	t.Helper()
	ch = r.obj("challenge")
	tok, _ = ch["token"].(string)
	if ch == nil || tok == "" {
		t.Fatalf("body = %s; want a challenge with its token", r.raw)
	}
	e.remember(tok)
	return tok, ch
}

// statusIs checks the status of an answer's challenge.
func statusIs(want string) func(*testing.T, response) {
	return func(t *testing.T, r response) {
		t.Helper()
		if c := r.obj("challenge"); c["status"] != want {
			t.Errorf("challenge = %s; want status %s", r.raw, want)
		}
	}
}

// startChallenge creates a challenge that must be accepted, pending, and
// returns its token and body.
func (e *env) startChallenge(t *testing.T, headers map[string]string, body map[string]any, events ...string) (string, map[string]any) {
	t.Helper()
	r := scenario{method: "POST", path: e.authPath("/challenges"), headers: headers, body: body, wantStatus: 200,
		events: events}.run(t, e)
	tok, ch := e.challengeOf(t, r)
	if ch["status"] != "pending" || ch["purpose"] != body["purpose"] || ch["method"] != body["method"] {
		t.Fatalf("challenge = %v; want a pending %v challenge by %v", ch, body["purpose"], body["method"])
	}
	return tok, ch
}

// chPath is a path under a challenge's token.
func (e *env) chPath(tok, rest string) string { return e.authPath("/challenges/" + tok + rest) }

// wrongCodeFor is a six-digit code that is not right.
func wrongCodeFor(right ...string) string {
	for _, c := range []string{"000000", "111111", "222222", "333333"} {
		ok := true
		for _, r := range right {
			ok = ok && c != r
		}
		if ok {
			return c
		}
	}
	return "444444"
}

// testMethodTable is the purpose × method table of the briefing, one
// subtest per cell, for a user who has every factor: e-mail and phone, a
// verified authenticator app, backup codes, a passkey, a second live
// session (to approve a push) and a sign-in waiting for its second factor.
func testMethodTable(t *testing.T, e *env) {
	const email, phone = "every@example.com", "+14155550101"
	userID := e.newMember(t, email, phone)
	_, access, _ := e.signIn(t, email, emailSent...)
	e.signIn(t, email, emailSent...) // the device that would approve a push
	e.enrollTOTP(t, access, "Phone")
	e.newBackupCodes(t, access)
	e.addPasskey(t, newAuthenticator(), access)
	all := []string{"totp", "backup_code", "webauthn", "push", "sms_otp", "email_otp"}
	e.setApp(t, map[string]any{"mfa_policy": "optional", "mfa_methods_allowed": all})
	waiting := e.mfaRequired(t, e.firstFactor(t, email, browser, mfaDue...), userID)

	methods := []string{"email_otp", "sms_otp", "magic_link", "totp", "backup_code", "webauthn", "push"}
	rows := []struct {
		purpose string
		headers map[string]string
		body    map[string]any
		// accepted: one letter per method, in methods' order. mfa's
		// email_otp is refused: the first factor was an e-mailed code, and
		// a second factor is never of the first one's kind (the * rule).
		accepted string
	}{
		{"authenticate", browser, map[string]any{}, "yyynnyy"},
		{"mfa", browser, map[string]any{"app_user_id": userID}, "nynyyyy"},
		{"step_up", user(access), map[string]any{}, "yynyyyy"},
		{"verify_contact", user(access), map[string]any{}, "yynnnnn"},
		{"change_identifier", user(access), map[string]any{}, "yynnnnn"},
		{"verify_identity", bearer(e.appSecret), map[string]any{"app_user_id": userID}, "yynyyyy"},
		{"custom", bearer(e.appSecret), map[string]any{"app_user_id": userID}, "yynyyyy"},
	}
	for _, row := range rows {
		for i, method := range methods {
			t.Run(row.purpose+"/"+method, func(t *testing.T) {
				body := map[string]any{"purpose": row.purpose, "method": method}
				for k, v := range row.body {
					body[k] = v
				}
				to := email // where a code or link goes
				switch {
				case row.purpose == "authenticate" && method == "sms_otp":
					body["identifier"], to = phone, phone
				case row.purpose == "authenticate":
					body["identifier"] = email
				case row.purpose == "change_identifier" && method == "sms_otp":
					body["identifier"], to = "+14155550199", "+14155550199"
				case row.purpose == "change_identifier":
					body["identifier"], to = "changed@example.com", "changed@example.com"
				case method == "sms_otp":
					to = phone
				}
				s := scenario{method: "POST", path: e.authPath("/challenges"), headers: row.headers, body: body}
				if row.accepted[i] == 'n' {
					s.wantStatus, s.wantCode = 400, "invalid_request"
					r := s.run(t, e)
					if want := fmt.Sprintf("%s cannot be used for purpose %s", method, row.purpose); row.purpose != "mfa" || method != "email_otp" {
						if !strings.Contains(r.str("error"), want) {
							t.Errorf("error = %q; want it to say %q", r.str("error"), want)
						}
					}
					return
				}
				before := len(e.Mail.Messages())
				s.wantStatus = 200
				switch method {
				case "email_otp", "magic_link":
					s.events = emailSent
				case "sms_otp":
					s.events = smsSent
				default:
					s.events = []string{"challenge.created"}
				}
				_, ch := e.challengeOf(t, s.run(t, e))
				attempts := 5.0
				switch method {
				case "push":
					attempts = 3
				case "magic_link":
					attempts = 1 // a link is opened once
				}
				if ch["status"] != "pending" || ch["purpose"] != row.purpose || ch["method"] != method ||
					ch["remaining_attempts"] != attempts || ch["delivery_required"] != false || ch["time_remaining"].(float64) <= 0 {
					t.Errorf("challenge = %v; want a pending %s challenge by %s, %v attempts, sent", ch, row.purpose, method, attempts)
				}
				switch method {
				case "push", "magic_link":
					if n, _ := ch["match_number"].(float64); n < 10 || n > 99 {
						t.Errorf("match_number = %v; want two digits", ch["match_number"])
					}
				case "webauthn":
					if ch["webauthn_options"] == nil {
						t.Errorf("challenge = %v; want webauthn_options", ch)
					}
				}
				if row.purpose == "mfa" && ch["expires_at"] != waiting["expires_at"] {
					t.Errorf("mfa expires_at = %v; want the waiting sign-in's %v", ch["expires_at"], waiting["expires_at"])
				}
				sent := e.Mail.Messages()[before:]
				switch method {
				case "email_otp", "sms_otp", "magic_link":
					if len(sent) != 1 || sent[0].To != to || (sent[0].Code == "" && sent[0].Link == "") {
						t.Errorf("messages = %+v; want one code or link to %s", sent, to)
					}
				default:
					if len(sent) != 0 {
						t.Errorf("messages = %+v; want none for %s", sent, method)
					}
				}
			})
		}
	}
}

// testMethodsNotSetUp: a method the user has not set up is refused with
// 400 invalid_request even where the table allows it; an authenticator app
// counts only once verified (security check 21).
func testMethodsNotSetUp(t *testing.T, e *env) {
	const email = "bare@example.com"
	e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email, emailSent...)
	for _, method := range []string{"sms_otp", "totp", "backup_code", "webauthn", "push"} {
		t.Run(method, func(t *testing.T) {
			r := scenario{method: "POST", path: e.authPath("/challenges"), headers: user(access),
				body: map[string]any{"purpose": "step_up", "method": method}, wantStatus: 400, wantCode: "invalid_request"}.run(t, e)
			if strings.Contains(r.str("error"), "cannot be used for purpose") {
				t.Errorf("error = %q; want the method not set up, not the table's refusal", r.str("error"))
			}
		})
	}
	// Enrolled but not verified: still no authenticator app.
	scenario{method: "POST", path: e.authPath("/mfa/enroll"), headers: user(access),
		body: map[string]any{"method": "totp", "name": "Unconfirmed"}, wantStatus: 200}.run(t, e)
	runScenarios(t, e, []scenario{
		{name: "an unverified enrolment is no totp", method: "POST", path: e.authPath("/challenges"), headers: user(access),
			body: map[string]any{"purpose": "step_up", "method": "totp"}, wantStatus: 400, wantCode: "invalid_request"},
		{name: "an unknown user", method: "POST", path: e.authPath("/challenges"), headers: bearer(e.appSecret),
			body:       map[string]any{"purpose": "step_up", "method": "email_otp", "app_user_id": "00000000-0000-7000-8000-000000000000"},
			wantStatus: 404, wantCode: "user_not_found"},
		{name: "an unknown purpose", method: "POST", path: e.authPath("/challenges"), headers: user(access),
			body: map[string]any{"purpose": "teleport", "method": "email_otp"}, wantStatus: 400, wantCode: "invalid_request"},
	})
}

// testSwitchMethod is the client SDK's switchMfaMethod (C12, C13): cancel the
// second factor, then ask for another one without a credential, from the
// same browser only, never of the first factor's kind (security check 29).
// An SMS second factor picked at sign-in sends nothing until resent.
func testSwitchMethod(t *testing.T, e *env) {
	const email, phone = "switch@example.com", "+14155550102"
	userID := e.newMember(t, email, phone)
	_, access, _ := e.signIn(t, email, emailSent...)
	e.enrollTOTP(t, access, "Phone")
	codes := e.newBackupCodes(t, access)
	e.setApp(t, map[string]any{"mfa_policy": "optional", "mfa_methods_allowed": []string{"totp", "backup_code", "sms_otp", "email_otp"}})

	first := e.mfaRequired(t, e.firstFactor(t, email, browserAt("198.51.100.20"), mfaDue...), userID)
	if first["method"] != "totp" {
		t.Errorf("mfa_challenge method = %v; want totp, the preferred one", first["method"])
	}
	tok := first["token"].(string)
	create := e.authPath("/challenges")
	switchTo := func(method string) map[string]any {
		return map[string]any{"purpose": "mfa", "method": method, "app_user_id": userID}
	}
	otherUA := map[string]string{"X-Forwarded-For": "198.51.100.20", "User-Agent": "curl/8.0"}
	runScenarios(t, e, []scenario{
		{name: "cancel the offered factor", method: "DELETE", path: e.chPath(tok, ""), wantStatus: 200,
			events: []string{"challenge.failed"}, check: func(t *testing.T, r response) {
				if r.obj("challenge")["status"] != "cancelled" {
					t.Errorf("challenge = %s; want cancelled", r.raw)
				}
			}},
		{name: "cancelling again answers the same", method: "DELETE", path: e.chPath(tok, ""), wantStatus: 200},
		{name: "from another IP", method: "POST", path: create, headers: browserAt("203.0.113.21"), body: switchTo("backup_code"),
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "from another user agent", method: "POST", path: create, headers: otherUA, body: switchTo("backup_code"),
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "an e-mail code after an e-mail first factor", method: "POST", path: create, headers: browserAt("198.51.100.20"),
			body: switchTo("email_otp"), wantStatus: 400, wantCode: "invalid_request"},
		{name: "a method the app does not allow for mfa", method: "POST", path: create, headers: browserAt("198.51.100.20"),
			body: switchTo("webauthn"), wantStatus: 400, wantCode: "invalid_request"},
		{name: "an unknown user", method: "POST", path: create, headers: browserAt("198.51.100.20"),
			body:       map[string]any{"purpose": "mfa", "method": "backup_code", "app_user_id": "00000000-0000-7000-8000-000000000000"},
			wantStatus: 404, wantCode: "user_not_found"},
	})
	tok, ch := e.startChallenge(t, browserAt("198.51.100.20"), switchTo("backup_code"), "challenge.created")
	if ch["expires_at"] != first["expires_at"] {
		t.Errorf("switched expires_at = %v; want the sign-in's deadline %v", ch["expires_at"], first["expires_at"])
	}
	runScenarios(t, e, []scenario{
		{name: "the backup code completes the sign-in", method: "POST", path: e.chPath(tok, "/verify"), headers: browserAt("198.51.100.20"),
			body: map[string]any{"code": codes[0]}, wantStatus: 200, events: []string{"challenge.completed"},
			wantBody: map[string]any{"remaining_backup_codes": 9},
			check: func(t *testing.T, r response) {
				access, _ := e.tokenSet(t, r, userID)
				if amr := tokenClaims(t, access)["amr"]; !jsonEqual(amr, []string{"email_otp", "backup_code"}) {
					t.Errorf("amr = %v; want [email_otp backup_code]", amr)
				}
			}},
		{name: "the cancelled handle gives nothing", method: "POST", path: e.chPath(first["token"].(string), "/verify"),
			body: map[string]any{"code": codes[1]}, wantStatus: 409, wantCode: "challenge_closed"},
		// The sign-in is over: its first factor starts no other second factor.
		{name: "no new second factor once the sign-in completed", method: "POST", path: create, headers: browserAt("198.51.100.20"),
			body: switchTo("totp"), wantStatus: 400, wantCode: "invalid_request"},
	})

	// A second factor that failed ends its sign-in: switching gives no fresh
	// attempts, even though an earlier challenge of it was cancelled.
	e.mfaRequired(t, e.firstFactor(t, email, browserAt("198.51.100.20"), mfaDue...), userID)
	tok, _ = e.startChallenge(t, browserAt("198.51.100.20"), switchTo("backup_code"), "challenge.created")
	for i := range 5 {
		s := scenario{name: fmt.Sprintf("wrong backup code %d", i+1), method: "POST", path: e.chPath(tok, "/verify"),
			body: map[string]any{"code": "AAAAA-AAAAA"}, wantStatus: 422, wantCode: "invalid_code", events: []string{"auth.login.failed"}}
		if i == 4 { // compared, and the last attempt: it fails the challenge
			s.events = []string{"auth.login.failed", "challenge.failed"}
		}
		runScenarios(t, e, []scenario{s})
	}
	runScenarios(t, e, []scenario{
		{name: "a sixth answer is refused uncompared", method: "POST", path: e.chPath(tok, "/verify"),
			body: map[string]any{"code": "AAAAA-AAAAA"}, wantStatus: 429, wantCode: "too_many_attempts"},
		{name: "no switch after the second factor failed", method: "POST", path: create, headers: browserAt("198.51.100.20"),
			body: switchTo("totp"), wantStatus: 400, wantCode: "invalid_request"},
	})

	// An SMS second factor picked at sign-in (required policy, no app or
	// passkey allowed) waits for the user to ask for the code.
	const other = "sms2fa@example.com"
	otherID := e.newMember(t, other, "+14155550103")
	e.setApp(t, map[string]any{"mfa_policy": "required", "mfa_methods_allowed": []string{"sms_otp", "email_otp"}})
	before := len(e.Mail.Messages())
	sms := e.mfaRequired(t, e.firstFactor(t, other, browser, mfaDue...), otherID)
	if sms["method"] != "sms_otp" || sms["delivery_required"] != true || len(e.Mail.Messages()) != before+1 {
		t.Fatalf("mfa_challenge = %v; want sms_otp with delivery_required and nothing sent", sms)
	}
	tok = sms["token"].(string)
	runScenarios(t, e, []scenario{
		{name: "verify before the code was sent", method: "POST", path: e.chPath(tok, "/verify"), body: map[string]any{"code": "123456"},
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "resend sends the first code", method: "POST", path: e.chPath(tok, "/resend"), body: map[string]any{},
			wantStatus: 200, events: []string{"verification.sms.requested"},
			check: func(t *testing.T, r response) {
				if _, ch := e.challengeOf(t, r); ch["delivery_required"] != false || ch["expires_at"] != sms["expires_at"] {
					t.Errorf("challenge = %v; want delivered, with the sign-in's deadline", ch)
				}
			}},
	})
	runScenarios(t, e, []scenario{
		{name: "the SMS code completes the sign-in", method: "POST", path: e.chPath(tok, "/verify"), headers: browser,
			body: map[string]any{"code": e.code(t, "+14155550103")}, wantStatus: 200,
			events: []string{"verification.sms.verified", "challenge.completed"},
			check: func(t *testing.T, r response) {
				access, _ := e.tokenSet(t, r, otherID)
				if amr := tokenClaims(t, access)["amr"]; !jsonEqual(amr, []string{"email_otp", "sms_otp"}) {
					t.Errorf("amr = %v; want [email_otp sms_otp]", amr)
				}
			}},
	})
}

// testReplacedPushDenied: whoever holds a first factor asks for a push
// second factor again and again from their device, each request replacing
// the last; the user denies the one they see, already replaced. The
// sign-in's current request is denied in its place and the sign-in is over:
// no new request, nothing to collect.
func testReplacedPushDenied(t *testing.T, e *env) {
	const email = "replaced@example.com"
	userID := e.newMember(t, email, "")
	_, phone, _ := e.signIn(t, email, emailSent...) // the user's approving device
	e.enrollTOTP(t, phone, "Phone")
	e.setApp(t, map[string]any{"mfa_policy": "optional", "mfa_methods_allowed": []string{"totp", "push"}})
	at := browserAt("198.51.100.40")
	e.mfaRequired(t, e.firstFactor(t, email, at, mfaDue...), userID)
	ask := map[string]any{"purpose": "mfa", "method": "push", "app_user_id": userID}
	_, seen := e.startChallenge(t, at, ask, "challenge.created") // the request the user looks at
	tok, current := e.startChallenge(t, at, ask, "challenge.created")
	runScenarios(t, e, []scenario{
		{name: "the phone lists only the newest", method: "GET", path: e.authPath("/push/pending"), headers: user(phone),
			wantStatus: 200, check: func(t *testing.T, r response) {
				list, _ := r.body["challenges"].([]any)
				if len(list) != 1 || list[0].(map[string]any)["id"] != current["id"] {
					t.Fatalf("pending = %s; want only %v", r.raw, current["id"])
				}
			}},
		{name: "denying the replaced request", method: "POST", path: e.authPath("/push/" + seen["id"].(string) + "/deny"),
			headers: user(phone), wantStatus: 200, events: []string{"challenge.failed"},
			check: func(t *testing.T, r response) {
				if c := r.obj("challenge"); c["status"] != "denied" || c["id"] != current["id"] {
					t.Errorf("deny = %s; want %v, the current one, denied", r.raw, current["id"])
				}
			}},
		{name: "denies the current one", method: "GET", path: e.chPath(tok, ""), wantStatus: 200, check: statusIs("denied")},
		{name: "which gives nothing", method: "POST", path: e.chPath(tok, "/verify"), headers: at, wantStatus: 409, wantCode: "challenge_closed"},
		{name: "and the sign-in asks for no other", method: "POST", path: e.authPath("/challenges"), headers: at, body: ask,
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "nor for another factor", method: "POST", path: e.authPath("/challenges"), headers: at,
			body: map[string]any{"purpose": "mfa", "method": "totp", "app_user_id": userID}, wantStatus: 400, wantCode: "invalid_request"},
		{name: "denying it again", method: "POST", path: e.authPath("/push/" + seen["id"].(string) + "/deny"),
			headers: user(phone), wantStatus: 409, wantCode: "challenge_closed"},
	})
}

// testPush: a signed-out browser asks to sign in by push; another signed-in
// device of the user lists it, and approves it with the number the browser
// shows; the browser collects its session once. A wrong number spends an
// attempt; a denial closes the challenge.
func testPush(t *testing.T, e *env) {
	const email = "push@example.com"
	userID := e.newMember(t, email, "")
	_, phoneAccess, _ := e.signIn(t, email, emailSent...) // the approving device
	ask := map[string]any{"purpose": "authenticate", "method": "push", "identifier": email}
	tok, ch := e.startChallenge(t, browserAt("203.0.113.30"), ask, "challenge.created")
	number := int(ch["match_number"].(float64))
	var id string
	runScenarios(t, e, []scenario{
		{name: "the other device lists it, without the number", method: "GET", path: e.authPath("/push/pending"), headers: user(phoneAccess),
			wantStatus: 200, check: func(t *testing.T, r response) {
				list, _ := r.body["challenges"].([]any)
				if len(list) != 1 {
					t.Fatalf("pending = %s; want one", r.raw)
				}
				p := list[0].(map[string]any)
				id, _ = p["id"].(string)
				if id != ch["id"] || p["ip_address"] != "203.0.113.30" || p["purpose"] != "authenticate" ||
					strings.Contains(string(r.raw), "match_number") || strings.Contains(string(r.raw), tok) {
					t.Errorf("pending = %s; want %v from 203.0.113.30, with no number or token", r.raw, ch["id"])
				}
			}},
		{name: "collecting before approval", method: "POST", path: e.chPath(tok, "/verify"), wantStatus: 409, wantCode: "challenge_pending"},
	})
	approve := e.authPath("/push/" + id + "/approve")
	runScenarios(t, e, []scenario{
		{name: "a wrong number", method: "POST", path: approve, headers: user(phoneAccess),
			body: map[string]any{"match_number": (number-10+1)%90 + 10}, wantStatus: 400, wantCode: "invalid_request",
			events: []string{"auth.login.failed"}},
		{name: "it cost an attempt", method: "GET", path: e.chPath(tok, ""), wantStatus: 200,
			check: func(t *testing.T, r response) {
				if c := r.obj("challenge"); c["status"] != "pending" || c["remaining_attempts"] != 2.0 {
					t.Errorf("challenge = %v; want pending with 2 attempts", c)
				}
			}},
		{name: "the right number approves", method: "POST", path: approve, headers: user(phoneAccess),
			body: map[string]any{"match_number": number}, wantStatus: 200, events: []string{"challenge.completed"},
			check: func(t *testing.T, r response) {
				if c := r.obj("challenge"); c["status"] != "completed" || c["token"] != "" {
					t.Errorf("approval = %s; want completed and no token", r.raw)
				}
			}},
		{name: "the requester sees it completed", method: "GET", path: e.chPath(tok, ""), wantStatus: 200,
			check: func(t *testing.T, r response) {
				if c := r.obj("challenge"); c["status"] != "completed" {
					t.Errorf("challenge = %v; want completed", c)
				}
			}},
		{name: "the requester collects its session", method: "POST", path: e.chPath(tok, "/verify"), headers: browserAt("203.0.113.30"),
			wantStatus: 200, check: func(t *testing.T, r response) {
				access, _ := e.tokenSet(t, r, userID)
				if amr := tokenClaims(t, access)["amr"]; !jsonEqual(amr, []string{"push"}) {
					t.Errorf("amr = %v; want [push]", amr)
				}
			}},
		{name: "only once", method: "POST", path: e.chPath(tok, "/verify"), wantStatus: 409, wantCode: "challenge_closed"},
		{name: "approving again", method: "POST", path: approve, headers: user(phoneAccess),
			body: map[string]any{"match_number": number}, wantStatus: 409, wantCode: "challenge_closed"},
	})

	// A step-up by push, asked by one session: only another one may approve
	// it, and the asking session gets fresh tokens.
	_, laptop, _ := e.signIn(t, email, emailSent...)
	tok, ch = e.startChallenge(t, user(laptop), map[string]any{"purpose": "step_up", "method": "push"}, "challenge.created")
	approve = e.authPath("/push/" + ch["id"].(string) + "/approve")
	runScenarios(t, e, []scenario{
		{name: "the asking session does not list it", method: "GET", path: e.authPath("/push/pending"), headers: user(laptop),
			wantStatus: 200, wantBody: map[string]any{"challenges": []any{}}},
		{name: "nor may it approve it", method: "POST", path: approve, headers: user(laptop),
			body: map[string]any{"match_number": ch["match_number"]}, wantStatus: 404, wantCode: "challenge_not_found"},
		{name: "the other device approves", method: "POST", path: approve, headers: user(phoneAccess),
			body: map[string]any{"match_number": ch["match_number"]}, wantStatus: 200, events: []string{"challenge.completed"}},
		{name: "the step-up refreshes the asking session", method: "POST", path: e.chPath(tok, "/verify"), wantStatus: 200,
			wantBody: map[string]any{"status": "completed"},
			check: func(t *testing.T, r response) {
				access, _ := e.tokenSet(t, r, userID)
				c := tokenClaims(t, access)
				if !jsonEqual(c["amr"], []string{"push"}) || c["auth_time"] != float64(e.Clock.Now().Unix()) {
					t.Errorf("claims = %v; want amr [push] and auth_time now", c)
				}
			}},
	})

	tok, ch = e.startChallenge(t, browserAt("203.0.113.32"), ask, "challenge.created")
	runScenarios(t, e, []scenario{
		{name: "deny", method: "POST", path: e.authPath("/push/" + ch["id"].(string) + "/deny"), headers: user(phoneAccess),
			wantStatus: 200, events: []string{"challenge.failed"}, check: statusIs("denied")},
		{name: "the requester sees it denied", method: "GET", path: e.chPath(tok, ""), wantStatus: 200, check: statusIs("denied")},
		{name: "and gets nothing", method: "POST", path: e.chPath(tok, "/verify"), wantStatus: 409, wantCode: "challenge_closed"},
	})

	// Three wrong numbers fail the push; the last is 429.
	_, ch = e.startChallenge(t, browserAt("203.0.113.33"), ask, "challenge.created")
	number = int(ch["match_number"].(float64))
	wrong := map[string]any{"match_number": (number-10+1)%90 + 10}
	approve = e.authPath("/push/" + ch["id"].(string) + "/approve")
	runScenarios(t, e, []scenario{
		{name: "wrong 1", method: "POST", path: approve, headers: user(phoneAccess), body: wrong, wantStatus: 400,
			wantCode: "invalid_request", events: []string{"auth.login.failed"}},
		{name: "wrong 2", method: "POST", path: approve, headers: user(phoneAccess), body: wrong, wantStatus: 400,
			wantCode: "invalid_request", events: []string{"auth.login.failed"}},
		{name: "wrong 3 fails it", method: "POST", path: approve, headers: user(phoneAccess), body: wrong, wantStatus: 400,
			wantCode: "invalid_request", events: []string{"auth.login.failed", "challenge.failed"}},
		{name: "then the right number is too late", method: "POST", path: approve, headers: user(phoneAccess),
			body: map[string]any{"match_number": number}, wantStatus: 429, wantCode: "too_many_attempts"},
	})
}

// testChallengeCodes: e-mailed codes of challenges work once, only on their
// own challenge, and five wrong ones fail it (security checks 4–6).
func testChallengeCodes(t *testing.T, e *env) {
	const ann, bob = "ann@example.com", "bob@example.com"
	annID, bobID := e.newMember(t, ann, ""), e.newMember(t, bob, "")
	stepUp := func(id string) map[string]any {
		return map[string]any{"purpose": "step_up", "method": "email_otp", "app_user_id": id}
	}
	annTok, _ := e.startChallenge(t, bearer(e.appSecret), stepUp(annID), emailSent...)
	annCode := e.code(t, ann)
	bobTok, _ := e.startChallenge(t, bearer(e.appSecret), stepUp(bobID), emailSent...)
	bobCode := e.code(t, bob)
	wrong := wrongCodeFor(bobCode)
	verifyBob := func(name, code string, status int, errCode string, events ...string) scenario {
		return scenario{name: name, method: "POST", path: e.chPath(bobTok, "/verify"), body: map[string]any{"code": code},
			wantStatus: status, wantCode: errCode, events: events}
	}
	runScenarios(t, e, []scenario{
		verifyBob("Ann's code on Bob's challenge", annCode, 422, "invalid_code"),
		{name: "it cost Bob an attempt", method: "GET", path: e.chPath(bobTok, ""), wantStatus: 200,
			check: func(t *testing.T, r response) {
				if c := r.obj("challenge"); c["remaining_attempts"] != 4.0 || c["status"] != "pending" {
					t.Errorf("challenge = %v; want pending with 4 attempts", c)
				}
			}},
		{name: "Ann's code on hers", method: "POST", path: e.chPath(annTok, "/verify"), body: map[string]any{"code": annCode},
			wantStatus: 200, events: emailVerified, wantBody: map[string]any{"status": "completed"},
			check: func(t *testing.T, r response) {
				if r.str("access") != "" {
					t.Errorf("a backend step-up gave tokens: %s", r.raw)
				}
			}},
		{name: "works once", method: "POST", path: e.chPath(annTok, "/verify"), body: map[string]any{"code": annCode},
			wantStatus: 409, wantCode: "challenge_closed"},
		verifyBob("wrong 2", wrong, 422, "invalid_code"),
		verifyBob("wrong 3", wrong, 422, "invalid_code"),
		verifyBob("wrong 4", wrong, 422, "invalid_code"),
		verifyBob("the fifth wrong code fails it", wrong, 422, "invalid_code", "verification.email.failed", "challenge.failed"),
		verifyBob("then the right code is refused too", bobCode, 429, "too_many_attempts"),
		{name: "failed, no attempts left", method: "GET", path: e.chPath(bobTok, ""), wantStatus: 200,
			check: func(t *testing.T, r response) {
				if c := r.obj("challenge"); c["remaining_attempts"] != 0.0 || c["status"] != "failed" || c["time_remaining"] != 0.0 {
					t.Errorf("challenge = %v; want failed with 0 attempts", c)
				}
			}},
		{name: "an unknown token", method: "GET", path: e.chPath("nope", ""), wantStatus: 404, wantCode: "challenge_not_found"},
		{name: "verify an unknown token", method: "POST", path: e.chPath("nope", "/verify"), body: map[string]any{"code": "123456"},
			wantStatus: 404, wantCode: "challenge_not_found"},
	})
	// A verify_contact code does not sign in.
	e.startChallenge(t, bearer(e.appSecret), map[string]any{"purpose": "verify_contact", "method": "email_otp", "app_user_id": annID}, emailSent...)
	contactCode := e.code(t, ann)
	tok, _ := e.startChallenge(t, browser, map[string]any{"purpose": "authenticate", "method": "email_otp", "identifier": ann}, emailSent...)
	runScenarios(t, e, []scenario{
		{name: "a verify_contact code on a sign-in", method: "POST", path: e.chPath(tok, "/verify"),
			body: map[string]any{"code": contactCode}, wantStatus: 422, wantCode: "invalid_code",
			events: []string{"auth.login.failed"}},
	})
}

// testVerifyContact: a backend verifies a user's phone number by SMS code.
func testVerifyContact(t *testing.T, e *env) {
	const email, phone = "contact@example.com", "+14155550104"
	userID := e.newMember(t, email, phone)
	_, access, _ := e.signIn(t, email, emailSent...)
	admin := "/v1/" + e.app.ID + "/users/" + userID
	runScenarios(t, e, []scenario{
		{name: "the phone starts unverified", method: "GET", path: admin, headers: bearer(e.appSecret), wantStatus: 200,
			check: func(t *testing.T, r response) {
				if u := userOf(t, r); u["phone_verified"] != false || u["phone"] != phone {
					t.Fatalf("user = %v; want %s unverified", u, phone)
				}
			}},
		{name: "a user may only verify their own contact", method: "POST", path: e.authPath("/challenges"), headers: user(access),
			body:       map[string]any{"purpose": "verify_contact", "method": "sms_otp", "identifier": "+14155550999"},
			wantStatus: 400, wantCode: "invalid_request"},
	})
	tok, _ := e.startChallenge(t, bearer(e.appSecret),
		map[string]any{"purpose": "verify_contact", "method": "sms_otp", "app_user_id": userID}, smsSent...)
	runScenarios(t, e, []scenario{
		{name: "the SMS code verifies it", method: "POST", path: e.chPath(tok, "/verify"), body: map[string]any{"code": e.code(t, phone)},
			wantStatus: 200, events: []string{"verification.sms.verified", "challenge.completed"},
			wantBody: map[string]any{"status": "completed"}},
		{name: "now verified", method: "GET", path: admin, headers: bearer(e.appSecret), wantStatus: 200,
			check: func(t *testing.T, r response) {
				if u := userOf(t, r); u["phone_verified"] != true {
					t.Errorf("user = %v; want the phone verified", u)
				}
			}},
	})
}

// testChangeIdentifier: a fresh session changes the user's e-mail address;
// the change waits for the new address's code, then tells the old address
// (security check 30). A taken address and a stale session are refused.
func testChangeIdentifier(t *testing.T, e *env) {
	const old, newer, taken = "old@example.com", "new@example.com", "taken@example.com"
	userID := e.newMember(t, old, "")
	e.newMember(t, taken, "")
	_, access, _ := e.signIn(t, old, emailSent...)
	change := func(to string) map[string]any {
		return map[string]any{"purpose": "change_identifier", "method": "email_otp", "identifier": to}
	}
	runScenarios(t, e, []scenario{
		{name: "an address another user has", method: "POST", path: e.authPath("/challenges"), headers: user(access),
			body: change(taken), wantStatus: 409, wantCode: "identifier_taken"},
	})
	tok, _ := e.startChallenge(t, user(access), change(newer), emailSent...)
	code := e.code(t, newer)
	runScenarios(t, e, []scenario{
		{name: "nothing changes before the new address answers", method: "GET", path: e.authPath("/current_user"), headers: user(access),
			wantStatus: 200, check: func(t *testing.T, r response) {
				if u := userOf(t, r); u["email"] != old {
					t.Errorf("email = %v; want still %s", u["email"], old)
				}
			}},
		{name: "the new address's code changes it", method: "POST", path: e.chPath(tok, "/verify"), body: map[string]any{"code": code},
			wantStatus: 200, wantBody: map[string]any{"status": "completed"},
			events: []string{"verification.email.verified", "challenge.completed", "user.updated", "user.identifier_changed"},
			check: func(t *testing.T, r response) {
				if u := userOf(t, r); u["id"] != userID || u["email"] != newer || u["email_verified"] != true {
					t.Errorf("user = %v; want %s verified", u, newer)
				}
			}},
		{name: "the user has it", method: "GET", path: e.authPath("/current_user"), headers: user(access), wantStatus: 200,
			check: func(t *testing.T, r response) {
				if u := userOf(t, r); u["email"] != newer || u["email_verified"] != true {
					t.Errorf("user = %v; want %s verified", u, newer)
				}
			}},
	})
	m, ok := e.Mail.Last(old)
	if !ok || !strings.Contains(m.Text, "changed") || m.Code != "" || m.Link != "" || strings.Contains(m.Text, newer) {
		t.Errorf("last message to %s = %+v, %v; want a notice of the change, with the new address masked and no code or link", old, m, ok)
	}
	e.Clock.Advance(11 * time.Minute) // past mfa_reverify_minutes (10)
	runScenarios(t, e, []scenario{
		{name: "a stale session may not", method: "POST", path: e.authPath("/challenges"), headers: user(access),
			body: change("newest@example.com"), wantStatus: 403, wantCode: "verification_required",
			wantBody: map[string]any{"details": map[string]any{"recent_sign_in_minutes": 10}}},
	})
}

// testUnknownIdentifier: an unknown identifier is 404 user_not_found, and
// only 20 an hour per IP (security check 57); with the app's
// enumeration_protection it gets a pending decoy that sends nothing.
func testUnknownIdentifier(t *testing.T, e *env) {
	const ip = "198.51.100.40"
	create := e.authPath("/challenges")
	for i := range 25 {
		s := scenario{name: fmt.Sprintf("unknown %d", i+1), method: "POST", path: create, headers: browserAt(ip),
			body: map[string]any{"purpose": "authenticate", "method": "email_otp", "identifier": fmt.Sprintf("nobody%d@example.com", i)}}
		if i < 20 {
			s.wantStatus, s.wantCode = 404, "user_not_found"
		} else {
			s.wantStatus, s.wantCode = 429, "rate_limited"
			s.check = func(t *testing.T, r response) {
				if r.header.Get("Retry-After") == "" {
					t.Errorf("429 without Retry-After")
				}
			}
		}
		runScenarios(t, e, []scenario{s})
	}
	const known = "known@example.com"
	e.newMember(t, known, "")
	t.Run("a known address from that IP still gets a code", func(t *testing.T) {
		e.startChallenge(t, browserAt(ip), map[string]any{"purpose": "authenticate", "method": "email_otp", "identifier": known}, emailSent...)
	})

	e.setApp(t, map[string]any{"enumeration_protection": true})
	before := len(e.Mail.Messages())
	tok, ch := e.startChallenge(t, browserAt("198.51.100.41"),
		map[string]any{"purpose": "authenticate", "method": "email_otp", "identifier": "ghost@example.com"})
	if len(e.Mail.Messages()) != before || ch["remaining_attempts"] != 5.0 || ch["time_remaining"].(float64) <= 0 {
		t.Errorf("decoy = %v (messages %d → %d); want a pending challenge and nothing sent", ch, before, len(e.Mail.Messages()))
	}
	runScenarios(t, e, []scenario{
		{name: "the decoy reads pending", method: "GET", path: e.chPath(tok, ""), wantStatus: 200,
			check: func(t *testing.T, r response) {
				if c := r.obj("challenge"); c["status"] != "pending" || c["method"] != "email_otp" {
					t.Errorf("decoy = %v; want pending email_otp", c)
				}
			}},
		{name: "every code is wrong", method: "POST", path: e.chPath(tok, "/verify"), body: map[string]any{"code": "123456"},
			wantStatus: 422, wantCode: "invalid_code"},
	})
}

// testAppPurposes: custom and verify_identity are the backend's (API
// secret only); completing one tells the app by a challenge.completed
// webhook that carries the challenge's intent and data.
func testAppPurposes(t *testing.T, e *env) {
	const email = "kyc@example.com"
	userID := e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email, emailSent...)
	codes := e.newBackupCodes(t, access)
	completed := e.receiveEvents(t, "challenge.completed")
	custom := map[string]any{"purpose": "custom", "method": "email_otp", "app_user_id": userID,
		"intent": "approve_payout", "data": map[string]any{"payout_id": "po_42", "amount": 250}}
	identity := map[string]any{"purpose": "verify_identity", "method": "backup_code", "app_user_id": userID,
		"intent": "kyc_check", "data": map[string]any{"case": "c-7"}}
	create := e.authPath("/challenges")
	runScenarios(t, e, []scenario{
		{name: "custom without a credential", method: "POST", path: create, body: custom, wantStatus: 401},
		{name: "custom with the user's token", method: "POST", path: create, headers: user(access), body: custom, wantStatus: 401},
		{name: "verify_identity without a credential", method: "POST", path: create, body: identity, wantStatus: 401},
		{name: "verify_identity with the user's token", method: "POST", path: create, headers: user(access), body: identity, wantStatus: 401},
	})
	tok, ch := e.startChallenge(t, bearer(e.appSecret), custom, emailSent...)
	if ch["intent"] != "approve_payout" {
		t.Errorf("intent = %v; want approve_payout", ch["intent"])
	}
	runScenarios(t, e, []scenario{
		{name: "custom completes", method: "POST", path: e.chPath(tok, "/verify"), body: map[string]any{"code": e.code(t, email)},
			wantStatus: 200, events: emailVerified, wantBody: map[string]any{"status": "completed"}},
	})
	got := completed(t)
	if got["challenge_id"] != ch["id"] || got["purpose"] != "custom" || got["intent"] != "approve_payout" ||
		!jsonEqual(got["data"], custom["data"]) || got["user_id"] != userID {
		t.Errorf("challenge.completed data = %v; want the custom challenge with its intent and data", got)
	}
	tok, ch = e.startChallenge(t, bearer(e.appSecret), identity, "challenge.created")
	runScenarios(t, e, []scenario{
		{name: "verify_identity completes", method: "POST", path: e.chPath(tok, "/verify"), body: map[string]any{"code": codes[0]},
			wantStatus: 200, events: []string{"challenge.completed"}, wantBody: map[string]any{"status": "completed", "remaining_backup_codes": 9}},
	})
	got = completed(t)
	if got["challenge_id"] != ch["id"] || got["purpose"] != "verify_identity" || got["intent"] != "kyc_check" ||
		!jsonEqual(got["data"], identity["data"]) {
		t.Errorf("challenge.completed data = %v; want the verify_identity challenge with its intent and data", got)
	}
	for _, v := range got {
		if s, ok := v.(string); ok && s == codes[0] {
			t.Errorf("challenge.completed carries the backup code")
		}
	}
}

// receiveEvents subscribes a receiver of the app's webhooks to types and
// returns a function that waits for the next delivery's data. The job
// queue delivers in real time, so it waits on a channel (at most 20 s).
func (e *env) receiveEvents(t *testing.T, types ...string) func(t *testing.T) map[string]any {
	t.Helper()
	bodies := make(chan []byte, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/in"
	ep, err := e.Webhooks.Create(t.Context(), servertest.Operator, e.app.ID, webhook.Input{URL: &url, EventTypes: &types})
	if err != nil {
		t.Fatalf("create the receiving endpoint: %v", err)
	}
	e.remember(ep.Secret)
	return func(t *testing.T) map[string]any {
		t.Helper()
		select {
		case b := <-bodies:
			if err := eventschema.Validate(b); err != nil {
				t.Errorf("the delivery does not match the published schema: %v", err)
			}
			var env webhook.Envelope
			if err := json.Unmarshal(b, &env); err != nil {
				t.Fatalf("delivery %s: %v", b, err)
			}
			data, _ := env.Data.(map[string]any)
			return data
		case <-time.After(20 * time.Second):
			t.Fatalf("no %v delivery within 20 s", types)
			return nil
		}
	}
}

// TestDenyPushEndsItsSignIn: a user's denial of a sign-in's push ends that
// sign-in however its device tries to keep it going (cancelling the
// replacement, or replacing the push while the denial is on its way), and
// never reaches another sign-in of the same browser hours later.
func TestDenyPushEndsItsSignIn(t *testing.T) {
	forEach(t, challengeOptions(), func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "deny")
		const email = "deny@example.com"
		userID := e.newMember(t, email, "")
		_, phone, refresh := e.signIn(t, email) // the approving device
		_, secret := e.enrollTOTP(t, phone, "Phone")
		e.setApp(t, map[string]any{"mfa_policy": "optional", "mfa_methods_allowed": []string{"totp", "push"}})
		at := browserAt("198.51.100.41")
		push := map[string]any{"purpose": "mfa", "method": "push", "app_user_id": userID}
		totp := map[string]any{"purpose": "mfa", "method": "totp", "app_user_id": userID}
		deny := func(id string) response {
			return e.do(t, "POST", e.authPath("/push/"+id+"/deny"), user(phone), nil)
		}
		over := func(t *testing.T, what string) {
			t.Helper()
			if r := e.do(t, "POST", e.authPath("/challenges"), at, push); r.status != 400 {
				t.Fatalf("%s: a new second factor = %d %s; want 400, the sign-in over", what, r.status, r.raw)
			}
		}

		// The replacement cancelled: the denial still ends the sign-in.
		e.firstFactor(t, email, at)
		_, seen := e.startChallenge(t, at, push)
		tok, _ := e.startChallenge(t, at, push)
		if r := e.do(t, "DELETE", e.chPath(tok, ""), at, nil); r.status != 200 {
			t.Fatalf("cancel = %d %s", r.status, r.raw)
		}
		if r := deny(seen["id"].(string)); r.status != 200 || r.obj("challenge")["status"] != "denied" {
			t.Fatalf("deny after the replacement was cancelled = %d %s; want 200 denied", r.status, r.raw)
		}
		over(t, "cancelled replacement")

		// A stale denial of a finished sign-in's push touches no later one.
		e.Clock.Advance(time.Hour)
		e.firstFactor(t, email, at)
		_, old := e.startChallenge(t, at, push)
		ttok, _ := e.startChallenge(t, at, totp)
		if r := e.do(t, "POST", e.chPath(ttok, "/verify"), at, map[string]any{"code": totpAt(t, secret, e.Clock.Now())}); r.status != 200 {
			t.Fatalf("totp = %d %s", r.status, r.raw)
		}
		e.Clock.Advance(time.Hour)
		r := e.do(t, "POST", e.authPath("/tokens/refresh"), map[string]string{"X-Refresh-Token": refresh}, nil)
		if r.status != 200 {
			t.Fatalf("refresh = %d %s", r.status, r.raw)
		}
		phone = r.str("access") // the phone's session stays live
		next := e.firstFactor(t, email, at).obj("mfa_challenge")["token"].(string)
		if r := deny(old["id"].(string)); r.status != 409 {
			t.Errorf("a finished sign-in's push denied = %d %s; want 409", r.status, r.raw)
		}
		if st := e.do(t, "GET", e.chPath(next, ""), nil, nil).obj("challenge")["status"]; st != "pending" {
			t.Errorf("the later sign-in's second factor = %v; want pending", st)
		}

		// A replacement racing the denial: whichever runs first, the
		// denial ends the sign-in.
		for i := range 20 {
			e.Clock.Advance(20 * time.Second)
			e.firstFactor(t, email, at)
			_, seen := e.startChallenge(t, at, push)
			e.startChallenge(t, at, push)
			var wg sync.WaitGroup
			var rr, dr response
			wg.Go(func() { rr = e.do(t, "POST", e.authPath("/challenges"), at, push) })
			wg.Go(func() { dr = deny(seen["id"].(string)) })
			wg.Wait()
			if dr.status != 200 {
				t.Fatalf("round %d: deny = %d %s; want 200", i, dr.status, dr.raw)
			}
			if rr.status == 200 {
				if st := e.do(t, "GET", e.chPath(rr.obj("challenge")["token"].(string), ""), nil, nil).obj("challenge")["status"]; st != "denied" {
					t.Fatalf("round %d: the racing replacement = %v; want denied", i, st)
				}
			} else if rr.status != 400 {
				t.Fatalf("round %d: replacement = %d %s; want 200 or 400", i, rr.status, rr.raw)
			}
			over(t, fmt.Sprintf("round %d", i))
		}

		// Replacements crossing each other leave one pending push, the
		// sign-in's newest: denying the one the phone lists ends it.
		for i := range 10 {
			e.Clock.Advance(20 * time.Second)
			e.firstFactor(t, email, at)
			var wg sync.WaitGroup
			for range 6 {
				wg.Go(func() { e.do(t, "POST", e.authPath("/challenges"), at, push) })
			}
			wg.Wait()
			r := e.do(t, "GET", e.authPath("/push/pending"), user(phone), nil)
			list, _ := r.body["challenges"].([]any)
			if len(list) != 1 {
				t.Fatalf("round %d: pending = %s; want one push", i, r.raw)
			}
			if r := deny(list[0].(map[string]any)["id"].(string)); r.status != 200 {
				t.Fatalf("round %d: deny = %d %s; want 200", i, r.status, r.raw)
			}
			if r := e.do(t, "GET", e.authPath("/push/pending"), user(phone), nil); len(r.body["challenges"].([]any)) != 0 {
				t.Fatalf("round %d: pending after the denial = %s; want none", i, r.raw)
			}
			over(t, fmt.Sprintf("crossing round %d", i))
		}
	})
}
