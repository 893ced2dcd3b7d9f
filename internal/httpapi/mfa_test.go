package httpapi_test

import (
	"encoding/base32"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
)

// Second factors over HTTP (server-sdk-compat §4–§5; security checks
// 19–22, 29–31, 58): MFA at sign-in, the TOTP window and replay, backup
// codes, step-up and the recent-sign-in rule, on both engines. TOTP codes
// are computed with pquerna/otp at the fake clock's time.

func TestMFA(t *testing.T) {
	runGroups(t, challengeOptions(), []group{
		{"signin", testMFASignIn},
		{"totp_window", testTOTPWindow},
		{"backup_codes", testBackupCodes},
		{"step_up", testStepUp},
		{"webauthn", testPasskeyFactor},
		{"admin_reset", testAdminMFAReset},
		{"default_method", testDefaultMFAMethod},
		{"enrolment_code_again", testEnrolmentCodeAgain},
	})
}

// testEnrolmentCodeAgain is server-sdk-compat §5: both of Scute's server
// SDKs' suites confirm an enrolment with a code and send the same code,
// in the same 30 s step, as the answer of the next sign-in's MFA
// challenge. It works that once; a third use is a replay.
func testEnrolmentCodeAgain(t *testing.T, e *env) {
	const email = "same-code@example.com"
	userID := e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email, emailSent...)
	e.setApp(t, map[string]any{"mfa_policy": "optional", "mfa_methods_allowed": []string{"totp"}})
	r := scenario{method: "POST", path: e.authPath("/mfa/enroll"), headers: user(access),
		body: map[string]any{"method": "totp", "name": "Phone"}, wantStatus: 200}.run(t, e)
	id, secret := r.obj("enrollment")["id"].(string), r.str("secret")
	e.remember(secret)
	code := totpAt(t, secret, e.Clock.Now())
	scenario{method: "POST", path: e.authPath("/mfa/enroll/verify"), headers: user(access),
		body: map[string]any{"enrollment_id": id, "code": code}, wantStatus: 200, events: []string{"user.updated"}}.run(t, e)
	tok := e.mfaRequired(t, e.firstFactor(t, email, browser, mfaDue...), userID)["token"].(string)
	scenario{method: "POST", path: e.chPath(tok, "/verify"), headers: browser, body: map[string]any{"code": code},
		wantStatus: 200, events: []string{"challenge.completed"},
		check: func(t *testing.T, r response) { e.tokenSet(t, r, userID) }}.run(t, e)
	tok = e.mfaRequired(t, e.firstFactor(t, email, browser, mfaDue...), userID)["token"].(string)
	scenario{method: "POST", path: e.chPath(tok, "/verify"), body: map[string]any{"code": code},
		wantStatus: 422, wantCode: "code_used", events: []string{"auth.login.failed"}}.run(t, e)
}

// testDefaultMFAMethod is server-sdk-compat §5's is_default: the first
// verified second factor is the default, a user chooses another with
// PATCH /mfa/methods/{id}, the sign-in's MFA challenge asks for the
// default's kind and available_methods lists the others after it; the
// default goes back to the first verified one when the chosen one is gone.
func testDefaultMFAMethod(t *testing.T, e *env) {
	const email = "default-factor@example.com"
	userID := e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email, emailSent...)
	e.setApp(t, map[string]any{"mfa_policy": "optional", "mfa_methods_allowed": []string{"totp", "backup_codes", "webauthn"}})
	r := scenario{method: "POST", path: e.authPath("/mfa/enroll"), headers: user(access),
		body: map[string]any{"method": "totp", "name": "Phone"}, wantStatus: 200}.run(t, e)
	phone, secret := r.obj("enrollment")["id"].(string), r.str("secret")
	e.remember(secret)
	if r.obj("enrollment")["is_default"] != false {
		t.Errorf("an unverified enrolment is the default: %s", r.raw)
	}
	scenario{method: "POST", path: e.authPath("/mfa/enroll/verify"), headers: user(access),
		body: map[string]any{"enrollment_id": phone, "code": totpAt(t, secret, e.Clock.Now())}, wantStatus: 200,
		events: []string{"user.updated"}, check: func(t *testing.T, r response) {
			if en := r.obj("enrollment"); en["verified"] != true || en["is_default"] != true {
				t.Errorf("the first verified enrolment: %s; want is_default true", r.raw)
			}
		}}.run(t, e)
	e.Clock.Advance(totpPeriod)
	tablet, _ := e.enrollTOTP(t, access, "Tablet")
	a := newAuthenticator()
	e.addPasskey(t, a, access)
	r = scenario{method: "POST", path: e.authPath("/mfa/enroll"), headers: user(access),
		body: map[string]any{"method": "totp", "name": "Unfinished"}, wantStatus: 200}.run(t, e)
	unfinished := r.obj("enrollment")["id"].(string)
	e.remember(r.str("secret"))

	defaults := func(want string) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			var got []string
			for _, m := range r.body["methods"].([]any) {
				if m := m.(map[string]any); m["is_default"] == true {
					got = append(got, m["id"].(string))
				}
			}
			if len(got) != 1 || got[0] != want {
				t.Errorf("defaults %v; want only %s\n%s", got, want, r.raw)
			}
		}
	}
	var passkey string
	runScenarios(t, e, []scenario{
		{name: "the first verified is the default", method: "GET", path: e.authPath("/mfa/methods"), headers: user(access), wantStatus: 200,
			check: func(t *testing.T, r response) {
				defaults(phone)(t, r)
				for _, m := range r.body["methods"].([]any) {
					if m := m.(map[string]any); m["method"] == "webauthn" {
						passkey = m["id"].(string)
					}
				}
			}},
		{name: "false is refused", method: "PATCH", path: e.authPath("/mfa/methods/" + tablet), headers: user(access),
			body: map[string]any{"is_default": false}, wantStatus: 400},
		{name: "not an unverified enrolment", method: "PATCH", path: e.authPath("/mfa/methods/" + unfinished), headers: user(access),
			body: map[string]any{"is_default": true}, wantStatus: 404, wantCode: "mfa_method_not_found"},
		{name: "not another id", method: "PATCH", path: e.authPath("/mfa/methods/nope"), headers: user(access),
			body: map[string]any{"is_default": true}, wantStatus: 404, wantCode: "mfa_method_not_found"},
		{name: "not without the user's token", method: "PATCH", path: e.authPath("/mfa/methods/" + tablet),
			body: map[string]any{"is_default": true}, wantStatus: 401},
		{name: "the user chooses the tablet", method: "PATCH", path: e.authPath("/mfa/methods/" + tablet), headers: user(access),
			body: map[string]any{"is_default": true}, wantStatus: 200, check: func(t *testing.T, r response) {
				if m := r.obj("method"); m["id"] != tablet || m["is_default"] != true || m["method"] != "totp" {
					t.Errorf("method = %s", r.raw)
				}
			}},
		{name: "listed so", method: "GET", path: e.authPath("/mfa/methods"), headers: user(access), wantStatus: 200, check: defaults(tablet)},
	})
	challenge := func(t *testing.T, want string, rest ...string) {
		t.Helper()
		r := e.firstFactor(t, email, browser, mfaDue...)
		ch := e.mfaRequired(t, r, userID)
		if ch["method"] != want {
			t.Errorf("mfa_challenge.method = %v; want %s", ch["method"], want)
		}
		if got, _ := json.Marshal(r.body["available_methods"]); !jsonEqual(r.body["available_methods"], append([]string{want}, rest...)) {
			t.Errorf("available_methods = %s; want %s first, then %v", got, want, rest)
		}
	}
	t.Run("a TOTP default: the challenge asks for totp", func(t *testing.T) {
		challenge(t, "totp", "webauthn")
	})
	scenario{method: "PATCH", path: e.authPath("/mfa/methods/" + passkey), headers: user(access),
		body: map[string]any{"is_default": true}, wantStatus: 200}.run(t, e)
	t.Run("a passkey default: the challenge asks for webauthn", func(t *testing.T) {
		challenge(t, "webauthn", "totp")
	})
	// The chosen one gone, the first verified is the default again.
	scenario{method: "DELETE", path: e.authPath("/mfa/methods/" + passkey), headers: user(access), wantStatus: 204,
		events: []string{"user.updated"}}.run(t, e)
	scenario{method: "GET", path: e.authPath("/mfa/methods"), headers: user(access), wantStatus: 200, check: defaults(phone)}.run(t, e)
}

// testAdminMFAReset: support resets a locked-out user's second factors
// (DELETE /v1/{app}/users/{id}/mfa): every authenticator app and backup
// code goes, one user.updated per factor, and the next sign-in needs no
// second factor; a user's own token may not do it; a second reset changes
// nothing and emits nothing.
func testAdminMFAReset(t *testing.T, e *env) {
	const email = "lost-phone@example.com"
	userID := e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email, emailSent...)
	e.setApp(t, map[string]any{"mfa_policy": "optional", "mfa_methods_allowed": []string{"totp", "backup_codes"}})
	e.enrollTOTP(t, access, "Old phone")
	e.enrollTOTP(t, access, "Tablet")
	e.newBackupCodes(t, access)
	r := scenario{method: "POST", path: e.authPath("/mfa/enroll"), headers: user(access),
		body: map[string]any{"method": "totp", "name": "Unfinished"}, wantStatus: 200}.run(t, e)
	e.remember(r.str("secret"))
	pending := e.mfaRequired(t, e.firstFactor(t, email, browser, mfaDue...), userID)["token"].(string)
	reset := "/v1/" + e.app.ID + "/users/" + userID + "/mfa"
	runScenarios(t, e, []scenario{
		{name: "not with the user's own token", method: "DELETE", path: reset, headers: user(access), wantStatus: 401},
		{name: "an unknown user", method: "DELETE", path: "/v1/" + e.app.ID + "/users/00000000-0000-7000-8000-000000000000/mfa",
			headers: bearer(e.appSecret), wantStatus: 404, wantCode: "user_not_found"},
		{name: "the administrator resets: an event per verified app and one for the backup codes", method: "DELETE", path: reset,
			headers: bearer(e.appSecret), wantStatus: 200, events: []string{"user.updated", "user.updated", "user.updated"}},
		{name: "the sign-in waiting for its second factor ended", method: "POST", path: e.chPath(pending, "/verify"),
			body: map[string]any{"code": "123456"}, wantStatus: 409, wantCode: "challenge_closed"},
		{name: "nothing is left", method: "GET", path: e.authPath("/mfa/methods"), headers: user(access), wantStatus: 200,
			wantBody: map[string]any{"mfa_enabled": false, "backup_codes_available": 0, "methods": []string{}}},
		{name: "a second reset changes nothing", method: "DELETE", path: reset, headers: bearer(e.appSecret), wantStatus: 200},
	})
	t.Run("the next sign-in needs no second factor", func(t *testing.T) {
		e.tokenSet(t, e.firstFactor(t, email, browser, emailVerified...), userID)
	})
}

// totpPeriod is the TOTP time step (RFC 6238's default, which Gatehouse uses).
const totpPeriod = 30 * time.Second

// totpAt is an authenticator app's code for secret at a time.
func totpAt(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	code, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatalf("totp code: %v", err)
	}
	return code
}

// accessOf is the access token of a token-set answer.
func accessOf(t *testing.T, e *env, r response, userID string) string {
	t.Helper()
	access, _ := e.tokenSet(t, r, userID)
	return access
}

// tokenClaims are an access token's claims.
func tokenClaims(t *testing.T, access string) map[string]any {
	t.Helper()
	return tokentest.Payload(t, access)
}

// enrollTOTP adds a verified authenticator app for the signed-in user (whose
// session must be recent) and returns its id and secret. Verifying spent
// the current time step, so the clock then moves on to the next one.
func (e *env) enrollTOTP(t *testing.T, access, name string) (id, secret string) {
	t.Helper()
	r := scenario{method: "POST", path: e.authPath("/mfa/enroll"), headers: user(access),
		body: map[string]any{"method": "totp", "name": name}, wantStatus: 200}.run(t, e)
	id, _ = r.obj("enrollment")["id"].(string)
	secret = r.str("secret")
	e.remember(secret)
	scenario{method: "POST", path: e.authPath("/mfa/enroll/verify"), headers: user(access),
		body: map[string]any{"enrollment_id": id, "code": totpAt(t, secret, e.Clock.Now())}, wantStatus: 200,
		events: []string{"user.updated"}}.run(t, e)
	e.Clock.Advance(totpPeriod)
	return id, secret
}

// newBackupCodes makes the signed-in user's backup codes (the session must
// be recent) and returns them.
func (e *env) newBackupCodes(t *testing.T, access string) []string {
	t.Helper()
	r := scenario{method: "POST", path: e.authPath("/mfa/backup-codes"), headers: user(access), body: map[string]any{},
		wantStatus: 200, events: []string{"user.updated"}}.run(t, e)
	var codes []string
	for _, c := range r.body["backup_codes"].([]any) {
		codes = append(codes, c.(string))
		e.remember(c.(string))
	}
	return codes
}

// testMFASignIn is server-sdk-compat §5's sign-in: the app turns MFA on
// with its own secret; a user enrols an authenticator app; then an e-mailed
// code gives no tokens but an mfa challenge, whose right TOTP gives tokens
// with both factors in amr. A TOTP code works once (security check 19).
func testMFASignIn(t *testing.T, e *env) {
	const email = "mfa@example.com"
	userID := e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email, emailSent...)
	e.setApp(t, map[string]any{"mfa_policy": "optional", "mfa_methods_allowed": []string{"totp", "backup_codes"}})
	runScenarios(t, e, []scenario{
		{name: "the app shows its policy", method: "GET", path: "/v1/apps/" + e.app.ID, wantStatus: 200,
			wantBody: map[string]any{"mfa_policy": "optional", "mfa_methods_allowed": []string{"totp", "backup_code"}}},
		{name: "an API key may not change it", method: "PATCH", path: "/v1/apps/" + e.app.ID, headers: bearer(e.appSecretFor(t, e.createApp(t, e.ws.ID, "Other", nil).ID)),
			body: map[string]any{"app": map[string]any{"mfa_policy": "off"}}, wantStatus: 403},
	})
	t.Run("optional asks nothing of a user without a factor", func(t *testing.T) {
		e.tokenSet(t, e.firstFactor(t, email, browser, emailVerified...), userID)
	})

	var enrollment, secret string
	runScenarios(t, e, []scenario{
		{name: "enrol an authenticator app", method: "POST", path: e.authPath("/mfa/enroll"), headers: user(access),
			body: map[string]any{"method": "totp", "name": "My phone"}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				en := r.obj("enrollment")
				enrollment, _ = en["id"].(string)
				secret = r.str("secret")
				e.remember(secret)
				raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret)
				if err != nil || len(raw) < 20 {
					t.Errorf("secret %q decodes to %d bytes (%v); want at least 20", secret, len(raw), err)
				}
				if en["method"] != "totp" || en["name"] != "My phone" || en["verified"] != false ||
					!strings.HasPrefix(r.str("provisioning_uri"), "otpauth://totp/") || !strings.Contains(r.str("provisioning_uri"), "issuer=Demo") {
					t.Errorf("enrolment = %s; want an unverified totp enrolment and its otpauth URI", r.raw)
				}
			}},
		{name: "not a factor until verified", method: "GET", path: e.authPath("/mfa/status"), headers: user(access), wantStatus: 200,
			wantBody: map[string]any{"mfa_enabled": false, "mfa_policy": "optional", "methods": []string{}}},
	})
	now := e.Clock.Now()
	runScenarios(t, e, []scenario{
		{name: "a wrong code", method: "POST", path: e.authPath("/mfa/enroll/verify"), headers: user(access),
			body: map[string]any{"enrollment_id": enrollment, "code": wrongCodeFor(totpAt(t, secret, now.Add(-totpPeriod)),
				totpAt(t, secret, now), totpAt(t, secret, now.Add(totpPeriod)))}, wantStatus: 422, wantCode: "invalid_code"},
		{name: "the app's code verifies it", method: "POST", path: e.authPath("/mfa/enroll/verify"), headers: user(access),
			body: map[string]any{"enrollment_id": enrollment, "code": totpAt(t, secret, now)}, wantStatus: 200,
			events: []string{"user.updated"}, check: func(t *testing.T, r response) {
				if en := r.obj("enrollment"); en["id"] != enrollment || en["verified"] != true {
					t.Errorf("enrolment = %s; want %s verified", r.raw, enrollment)
				}
			}},
		{name: "listed", method: "GET", path: e.authPath("/mfa/methods"), headers: user(access), wantStatus: 200,
			wantBody: map[string]any{"mfa_enabled": true, "backup_codes_available": 0},
			check: func(t *testing.T, r response) {
				list, _ := r.body["methods"].([]any)
				if len(list) != 1 || list[0].(map[string]any)["id"] != enrollment || list[0].(map[string]any)["verified"] != true {
					t.Errorf("methods = %s; want the verified enrolment", r.raw)
				}
			}},
	})
	e.Clock.Advance(totpPeriod) // verifying spent this step

	ch := e.mfaRequired(t, e.firstFactor(t, email, browser, mfaDue...), userID)
	if ch["method"] != "totp" || ch["delivery_required"] != false {
		t.Errorf("mfa_challenge = %v; want totp", ch)
	}
	tok := ch["token"].(string)
	code := totpAt(t, secret, e.Clock.Now())
	verify := e.chPath(tok, "/verify")
	runScenarios(t, e, []scenario{
		{name: "a wrong TOTP code", method: "POST", path: verify, body: map[string]any{"code": wrongCodeFor(code,
			totpAt(t, secret, e.Clock.Now().Add(-totpPeriod)), totpAt(t, secret, e.Clock.Now().Add(totpPeriod)))},
			wantStatus: 422, wantCode: "invalid_code", events: []string{"auth.login.failed"}},
		{name: "it cost an attempt", method: "GET", path: e.chPath(tok, ""), wantStatus: 200,
			check: func(t *testing.T, r response) {
				if c := r.obj("challenge"); c["remaining_attempts"] != 4.0 || c["status"] != "pending" {
					t.Errorf("challenge = %v; want pending with 4 attempts", c)
				}
			}},
		{name: "the right TOTP code signs in", method: "POST", path: verify, headers: browser, body: map[string]any{"code": code},
			wantStatus: 200, events: []string{"challenge.completed"},
			check: func(t *testing.T, r response) {
				access, _ := e.tokenSet(t, r, userID)
				c := tokenClaims(t, access)
				if !jsonEqual(c["amr"], []string{"email_otp", "totp"}) || c["auth_time"] != float64(e.Clock.Now().Unix()) {
					t.Errorf("claims = %v; want amr [email_otp totp] and auth_time now", c)
				}
			}},
		{name: "the challenge is spent", method: "POST", path: verify, body: map[string]any{"code": code},
			wantStatus: 409, wantCode: "challenge_closed"},
	})
	tok = e.mfaRequired(t, e.firstFactor(t, email, browser, mfaDue...), userID)["token"].(string)
	runScenarios(t, e, []scenario{
		{name: "the same code on a new sign-in is a replay", method: "POST", path: e.chPath(tok, "/verify"),
			body: map[string]any{"code": code}, wantStatus: 422, wantCode: "code_used", events: []string{"auth.login.failed"}},
	})
	e.Clock.Advance(totpPeriod)
	runScenarios(t, e, []scenario{
		{name: "the next step's code works", method: "POST", path: e.chPath(tok, "/verify"),
			body: map[string]any{"code": totpAt(t, secret, e.Clock.Now())}, wantStatus: 200, events: []string{"challenge.completed"},
			check: func(t *testing.T, r response) { e.tokenSet(t, r, userID) }},
	})
}

// testTOTPWindow: codes of steps n−1, n and n+1 are accepted, n−2 and n+2
// are not (security check 20); a code at or below the last accepted step
// is a replay (check 19). Each code goes to a backend step-up.
func testTOTPWindow(t *testing.T, e *env) {
	const email = "window@example.com"
	userID := e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email, emailSent...)
	_, secret := e.enrollTOTP(t, access, "Phone")
	e.Clock.Advance(10 * totpPeriod) // well past the step the enrolment spent
	now := e.Clock.Now()
	step := func(n int) string { return totpAt(t, secret, now.Add(time.Duration(n)*totpPeriod)) }
	stepUp := map[string]any{"purpose": "step_up", "method": "totp", "app_user_id": userID}
	verify := func(name, tok, code string, status int, errCode string) scenario {
		s := scenario{name: name, method: "POST", path: e.chPath(tok, "/verify"), body: map[string]any{"code": code},
			wantStatus: status, wantCode: errCode}
		if status == 200 {
			s.events, s.wantBody = []string{"challenge.completed"}, map[string]any{"status": "completed"}
		}
		return s
	}
	tok, _ := e.startChallenge(t, bearer(e.appSecret), stepUp, "challenge.created")
	runScenarios(t, e, []scenario{
		verify("n-2 is too old", tok, step(-2), 422, "invalid_code"),
		verify("n+2 is too new", tok, step(2), 422, "invalid_code"),
		verify("n-1", tok, step(-1), 200, ""),
	})
	tok, _ = e.startChallenge(t, bearer(e.appSecret), stepUp, "challenge.created")
	runScenarios(t, e, []scenario{verify("n", tok, step(0), 200, "")})
	tok, _ = e.startChallenge(t, bearer(e.appSecret), stepUp, "challenge.created")
	runScenarios(t, e, []scenario{verify("n+1", tok, step(1), 200, "")})
	tok, _ = e.startChallenge(t, bearer(e.appSecret), stepUp, "challenge.created")
	runScenarios(t, e, []scenario{
		verify("n+1 again is a replay", tok, step(1), 422, "code_used"),
		verify("n after n+1 is a replay", tok, step(0), 422, "code_used"),
	})
}

// testBackupCodes: ten codes, each works once, a new set kills the old one,
// and five wrong codes fail a challenge (security check 22).
func testBackupCodes(t *testing.T, e *env) {
	const email = "backup@example.com"
	userID := e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email, emailSent...)
	codes := e.newBackupCodes(t, access)
	shape := regexp.MustCompile(`^[A-Z2-9]{5}-[A-Z2-9]{5}$`)
	seen := map[string]bool{}
	for _, c := range codes {
		if !shape.MatchString(c) || seen[c] {
			t.Errorf("backup code %q: want ten distinct codes like 7KQ2M-XH4PD", c)
		}
		seen[c] = true
	}
	if len(codes) != 10 {
		t.Fatalf("%d backup codes; want 10", len(codes))
	}
	runScenarios(t, e, []scenario{
		{name: "ten available", method: "GET", path: e.authPath("/mfa/methods"), headers: user(access), wantStatus: 200,
			wantBody: map[string]any{"backup_codes_available": 10, "mfa_enabled": false}},
	})
	stepUp := map[string]any{"purpose": "step_up", "method": "backup_code", "app_user_id": userID}
	verify := func(name, tok, code string, status int, errCode string, events ...string) scenario {
		return scenario{name: name, method: "POST", path: e.chPath(tok, "/verify"), body: map[string]any{"code": code},
			wantStatus: status, wantCode: errCode, events: events}
	}
	tok, _ := e.startChallenge(t, bearer(e.appSecret), stepUp, "challenge.created")
	runScenarios(t, e, []scenario{
		{name: "a backup code completes a backend step-up", method: "POST", path: e.chPath(tok, "/verify"),
			body: map[string]any{"code": codes[0]}, wantStatus: 200, events: []string{"challenge.completed"},
			wantBody: map[string]any{"status": "completed", "remaining_backup_codes": 9},
			check: func(t *testing.T, r response) {
				if r.str("access") != "" || r.obj("challenge")["status"] != "completed" {
					t.Errorf("answer = %s; want the completed challenge and no tokens", r.raw)
				}
			}},
	})
	tok, _ = e.startChallenge(t, bearer(e.appSecret), stepUp, "challenge.created")
	runScenarios(t, e, []scenario{
		verify("the same code again", tok, codes[0], 422, "invalid_code"),
		{name: "case, spaces and dashes do not matter", method: "POST", path: e.chPath(tok, "/verify"),
			body: map[string]any{"code": strings.ToLower(strings.ReplaceAll(codes[1], "-", " "))}, wantStatus: 200,
			events: []string{"challenge.completed"}, wantBody: map[string]any{"remaining_backup_codes": 8}},
	})
	fresh := e.newBackupCodes(t, access)
	tok, _ = e.startChallenge(t, bearer(e.appSecret), stepUp, "challenge.created")
	runScenarios(t, e, []scenario{
		verify("an old code after a new set", tok, codes[2], 422, "invalid_code"),
		{name: "a code of the new set", method: "POST", path: e.chPath(tok, "/verify"), body: map[string]any{"code": fresh[0]},
			wantStatus: 200, events: []string{"challenge.completed"}, wantBody: map[string]any{"remaining_backup_codes": 9}},
	})
	tok, _ = e.startChallenge(t, bearer(e.appSecret), stepUp, "challenge.created")
	runScenarios(t, e, []scenario{
		verify("wrong 1", tok, codes[3], 422, "invalid_code"),
		verify("wrong 2", tok, codes[4], 422, "invalid_code"),
		verify("wrong 3", tok, codes[5], 422, "invalid_code"),
		verify("wrong 4", tok, codes[6], 422, "invalid_code"),
		verify("the fifth wrong code fails it", tok, codes[7], 422, "invalid_code", "challenge.failed"),
		verify("then a right one is refused", tok, fresh[1], 429, "too_many_attempts"),
		{name: "failed", method: "GET", path: e.chPath(tok, ""), wantStatus: 200,
			check: func(t *testing.T, r response) {
				if c := r.obj("challenge"); c["status"] != "failed" || c["remaining_attempts"] != 0.0 {
					t.Errorf("challenge = %v; want failed, 0 attempts", c)
				}
			}},
		{name: "the refused code was not spent", method: "GET", path: e.authPath("/mfa/status"), headers: user(access), wantStatus: 200,
			wantBody: map[string]any{"backup_codes_available": 9}},
	})
}

// testStepUp: a step-up in a session renews its auth_time and amr; once
// the session's proof is older than mfa_reverify_minutes, changing second
// factors needs a completed step-up, which is spent (security checks 21, 30, 31).
func testStepUp(t *testing.T, e *env) {
	const email = "stepup@example.com"
	userID := e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email, emailSent...)
	first, secret := e.enrollTOTP(t, access, "Phone")
	second, _ := e.enrollTOTP(t, access, "Tablet")
	signedIn := tokenClaims(t, access)

	e.Clock.Advance(2 * time.Minute)
	tok, _ := e.startChallenge(t, user(access), map[string]any{"purpose": "step_up", "method": "totp", "intent": "export"}, "challenge.created")
	runScenarios(t, e, []scenario{
		{name: "a step-up in a session gives it fresh tokens", method: "POST", path: e.chPath(tok, "/verify"),
			body: map[string]any{"code": totpAt(t, secret, e.Clock.Now())}, wantStatus: 200, events: []string{"challenge.completed"},
			wantBody: map[string]any{"status": "completed"},
			check: func(t *testing.T, r response) {
				stepped, _ := e.tokenSet(t, r, userID)
				c := tokenClaims(t, stepped)
				if c["auth_time"] != float64(e.Clock.Now().Unix()) || c["auth_time"] == signedIn["auth_time"] ||
					!jsonEqual(c["amr"], []string{"totp"}) || c["sid"] != signedIn["sid"] {
					t.Errorf("claims = %v (signed in with %v); want a new auth_time, amr [totp], the same session", c, signedIn)
				}
				access = stepped
			}},
	})

	e.Clock.Advance(11 * time.Minute) // past mfa_reverify_minutes (10)
	refused := func(name, method, path string, body any) scenario {
		return scenario{name: name, method: method, path: path, headers: user(access), body: body, wantStatus: 403,
			wantCode: "verification_required", wantBody: map[string]any{"details": map[string]any{"recent_sign_in_minutes": 10}}}
	}
	runScenarios(t, e, []scenario{
		refused("removing a factor in a stale session", "DELETE", e.authPath("/mfa/methods/"+first), nil),
		refused("enrolling in a stale session", "POST", e.authPath("/mfa/enroll"), map[string]any{"method": "totp"}),
		refused("new backup codes in a stale session", "POST", e.authPath("/mfa/backup-codes"), map[string]any{}),
	})
	// A backend step-up (no session) proves the user again.
	tok, _ = e.startChallenge(t, bearer(e.appSecret), map[string]any{"purpose": "step_up", "method": "totp", "app_user_id": userID},
		"challenge.created")
	runScenarios(t, e, []scenario{
		{name: "pending step-up is no proof", method: "DELETE", path: e.authPath("/mfa/methods/" + first + "?challenge=" + tok),
			headers: user(access), wantStatus: 403, wantCode: "verification_required"},
		{name: "the step-up completes", method: "POST", path: e.chPath(tok, "/verify"), body: map[string]any{"code": totpAt(t, secret, e.Clock.Now())},
			wantStatus: 200, events: []string{"challenge.completed"}},
		{name: "the app that answered cannot vouch for its own removal", method: "DELETE",
			path: e.authPath("/mfa/methods/" + first + "?challenge=" + tok), headers: user(access), wantStatus: 403,
			wantCode: "verification_required"},
		{name: "with it, the other app goes", method: "DELETE", path: e.authPath("/mfa/methods/" + second + "?challenge=" + tok),
			headers: user(access), wantStatus: 204, events: []string{"user.updated"}},
		{name: "a step-up works once", method: "DELETE", path: e.authPath("/mfa/methods/" + first + "?challenge=" + tok),
			headers: user(access), wantStatus: 403, wantCode: "verification_required"},
		{name: "an unknown factor", method: "DELETE", path: e.authPath("/mfa/methods/" + second), headers: user(access),
			wantStatus: 404, wantCode: "mfa_method_not_found"},
		{name: "one factor left", method: "GET", path: e.authPath("/mfa/methods"), headers: user(access), wantStatus: 200,
			check: func(t *testing.T, r response) {
				list, _ := r.body["methods"].([]any)
				if len(list) != 1 || list[0].(map[string]any)["id"] != first {
					t.Errorf("methods = %s; want only %s", r.raw, first)
				}
			}},
	})
}

// TestFactorAfterCodeLock replays security check 58: a user whose code
// entry is locked (code_entry_locked, here after 5 consecutive wrong codes)
// still completes a step-up, and a sign-in's second factor, by backup code,
// and the account stays active.
func TestFactorAfterCodeLock(t *testing.T) {
	l := servertest.LooseLimits()
	l.CodeLockAfter, l.CodeFailuresPerHour = 5, 0
	opts := servertest.Options{Serve: true, Limits: &l}
	forEach(t, opts, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		e.recordEvents(t)
		const email = "locked@example.com"
		userID := e.newMember(t, email, "")
		_, access, _ := e.signIn(t, email, emailSent...)
		codes := e.newBackupCodes(t, access)
		e.setApp(t, map[string]any{"mfa_policy": "required", "mfa_methods_allowed": []string{"backup_code"}})

		// Five wrong e-mailed codes lock code entry.
		login := scenario{method: "POST", path: e.authPath("/otps/login"), body: map[string]any{"identifier": email}, wantStatus: 200,
			events: emailSent}
		login.run(t, e)
		wrong := wrongCodeFor(e.code(t, email))
		for i := range 5 {
			s := scenario{method: "POST", path: e.authPath("/otps/verify"), body: map[string]any{"otp": wrong, "user_id": userID},
				wantStatus: 422, wantCode: "invalid_code", events: []string{"auth.login.failed"}}
			if i == 4 { // compared: it fails the challenge and locks code entry
				s.events = []string{"auth.login.failed", "verification.email.failed", "challenge.failed"}
			}
			s.run(t, e)
		}
		scenario{name: "the next code is refused: locked", method: "POST", path: e.authPath("/otps/verify"),
			body: map[string]any{"otp": wrong, "user_id": userID}, wantStatus: 429, wantCode: "code_entry_locked"}.run(t, e)
		login.run(t, e)
		runScenarios(t, e, []scenario{
			{name: "locked: the right e-mailed code is refused", method: "POST", path: e.authPath("/otps/verify"),
				body: map[string]any{"otp": e.code(t, email), "user_id": userID}, wantStatus: 429, wantCode: "code_entry_locked"},
		})
		tok, _ := e.startChallenge(t, user(access), map[string]any{"purpose": "step_up", "method": "backup_code"}, "challenge.created")
		runScenarios(t, e, []scenario{
			{name: "a backup code step-up still works", method: "POST", path: e.chPath(tok, "/verify"),
				body: map[string]any{"code": codes[0]}, wantStatus: 200, events: []string{"challenge.completed"},
				wantBody: map[string]any{"status": "completed", "remaining_backup_codes": 9},
				check:    func(t *testing.T, r response) { e.tokenSet(t, r, userID) }},
		})
		// A sign-in by magic link (code entry is locked) gets its second
		// factor by backup code.
		scenario{method: "POST", path: e.authPath("/magic_links/login"), body: map[string]any{"identifier": email}, wantStatus: 200,
			events: emailSent}.run(t, e)
		r := scenario{method: "PATCH", path: e.authPath("/magic_links/authenticate"), body: map[string]any{"token": e.magicToken(t, email)},
			wantStatus: 200, events: mfaDue}.run(t, e)
		ch := e.mfaRequired(t, r, userID)
		if ch["method"] != "backup_code" {
			t.Errorf("mfa_challenge = %v; want backup_code, the only one allowed", ch)
		}
		runScenarios(t, e, []scenario{
			{name: "a backup code completes the sign-in", method: "POST", path: e.chPath(ch["token"].(string), "/verify"),
				body: map[string]any{"code": codes[1]}, wantStatus: 200, events: []string{"challenge.completed"},
				wantBody: map[string]any{"remaining_backup_codes": 8},
				check: func(t *testing.T, r response) {
					amr, _ := tokenClaims(t, accessOf(t, e, r, userID))["amr"].([]any)
					if len(amr) != 2 || amr[1] != "backup_code" {
						t.Errorf("amr = %v; want the link and backup_code", amr)
					}
				}},
			{name: "the account is still active", method: "GET", path: "/v1/" + e.app.ID + "/users/" + userID,
				headers: bearer(e.appSecret), wantStatus: 200,
				check: func(t *testing.T, r response) {
					if u := userOf(t, r); u["status"] != "active" {
						t.Errorf("status = %v; want active", u["status"])
					}
				}},
		})
	})
}

// testPasskeyFactor: a passkey answers an mfa and a step-up challenge with
// the webauthn_options the challenge carries (passkeytest authenticator);
// an answer works once.
func testPasskeyFactor(t *testing.T, e *env) {
	const email = "passkey2fa@example.com"
	userID := e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email, emailSent...)
	a := newAuthenticator()
	e.addPasskey(t, a, access)
	e.setApp(t, map[string]any{"mfa_policy": "optional", "mfa_methods_allowed": []string{"webauthn"}})
	answer := func(t *testing.T, ch map[string]any) map[string]any {
		t.Helper()
		opts, err := json.Marshal(ch["webauthn_options"])
		if err != nil || ch["webauthn_options"] == nil {
			t.Fatalf("challenge = %v; want webauthn_options", ch)
		}
		body, err := a.Get(string(opts))
		if err != nil {
			t.Fatal(err)
		}
		var cred map[string]any
		if err := json.Unmarshal([]byte(body), &cred); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"credential": cred}
	}
	ch := e.mfaRequired(t, e.firstFactor(t, email, browser, mfaDue...), userID)
	if ch["method"] != "webauthn" {
		t.Fatalf("mfa_challenge = %v; want webauthn", ch)
	}
	mfaAnswer := answer(t, ch)
	runScenarios(t, e, []scenario{
		{name: "a passkey completes the sign-in", method: "POST", path: e.chPath(ch["token"].(string), "/verify"), headers: browser,
			body: mfaAnswer, wantStatus: 200, events: []string{"challenge.completed"},
			check: func(t *testing.T, r response) {
				if amr := tokenClaims(t, accessOf(t, e, r, userID))["amr"]; !jsonEqual(amr, []string{"email_otp", "webauthn"}) {
					t.Errorf("amr = %v; want [email_otp webauthn]", amr)
				}
			}},
	})
	tok, step := e.startChallenge(t, user(access), map[string]any{"purpose": "step_up", "method": "webauthn"}, "challenge.created")
	runScenarios(t, e, []scenario{
		{name: "an answer to another challenge", method: "POST", path: e.chPath(tok, "/verify"), body: mfaAnswer,
			wantStatus: 400, wantCode: "webauthn_verification_error"},
		{name: "a passkey step-up", method: "POST", path: e.chPath(tok, "/verify"), body: answer(t, step),
			wantStatus: 200, events: []string{"challenge.completed"},
			check: func(t *testing.T, r response) {
				if amr := tokenClaims(t, accessOf(t, e, r, userID))["amr"]; !jsonEqual(amr, []string{"webauthn"}) {
					t.Errorf("amr = %v; want [webauthn]", amr)
				}
			}},
	})
}
