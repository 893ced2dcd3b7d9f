package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

// The concurrency suite (issue 22): every answer an attacker could guess or
// replay is sent by 50 (or, as in the reports, 39 or 20) parallel requests,
// on both engines, and the test counts exactly how many were compared and
// how many succeeded. A compared wrong answer is 422 invalid_code (or
// code_used, or 400 for a push's number); a guess refused before comparing
// is 429. The server runs with a pool of 4 connections, fewer than the
// requests in flight: a transaction that waited for a second connection
// would hang the burst (and answer 503 at the request deadline), which
// every check below refuses.

// concurrencyOptions serve with loose send limits, a trusted proxy (so each
// request may come from an address of its own) and a small pool.
func concurrencyOptions() servertest.Options {
	o := challengeOptions()
	o.Settings["GATEHOUSE_DATABASE_MAX_CONNS"] = "4"
	return o
}

func TestConcurrentGuesses(t *testing.T) {
	forEach(t, concurrencyOptions(), func(t *testing.T, sys *servertest.System) {
		for _, g := range []group{
			{"email_code", testBurstEmailCode},
			{"code_lock", testBurstCodeLock},
			{"sms_code", testBurstSMSCode},
			{"totp", testBurstTOTP},
			{"backup_code", testBurstBackupCode},
			{"match_number", testBurstMatchNumber},
			{"magic_link", testBurstMagicLink},
			{"refresh_token", testBurstRefresh},
			{"step_up_token", testBurstStepUpToken},
			{"passkey", testBurstPasskey},
		} {
			t.Run(g.name, func(t *testing.T) { g.fn(t, envOf(t, sys, g.name)) })
		}
	})
}

// shot is one request of a burst, and answer its answer.
type shot struct {
	method, path string
	headers      map[string]string
	body         any
}

type answer struct {
	status int
	code   string
	body   map[string]any
}

func (a answer) String() string { return strconv.Itoa(a.status) + " " + a.code }

// burst sends the shots at once (each from its own goroutine, released
// together) and returns their answers in order. It fails the test on a
// transport error.
func (e *env) burst(t *testing.T, shots []shot) []answer {
	t.Helper()
	out := make([]answer, len(shots))
	errs := make([]error, len(shots))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range shots {
		wg.Go(func() {
			<-start
			out[i], errs[i] = e.send(s)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s %s (shot %d): %v", shots[i].method, shots[i].path, i, err)
		}
	}
	return out
}

// send is e.do for a goroutine: it reports instead of failing the test.
func (e *env) send(s shot) (answer, error) {
	var rd io.Reader
	if s.body != nil {
		raw, err := json.Marshal(s.body)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(s.method, e.URL+s.path, rd)
	if err != nil {
		return answer{}, err
	}
	if s.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	res, err := e.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: res.StatusCode}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &a.body) // some answers (204) have no body
	}
	a.code, _ = a.body["error_code"].(string)
	return a, nil
}

// tally counts answers by status and code ("422 invalid_code", "200 ").
func tally(as []answer) map[string]int {
	m := map[string]int{}
	for _, a := range as {
		m[a.String()]++
	}
	return m
}

// wantTally fails unless the answers are exactly want.
func wantTally(t *testing.T, what string, as []answer, want map[string]int) {
	t.Helper()
	got := tally(as)
	if len(got) != len(want) {
		t.Errorf("%s: answers %v; want exactly %v", what, got, want)
		return
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: answers %v; want exactly %v", what, got, want)
			return
		}
	}
}

// from is a browser behind the trusted proxy at the n-th address of a /16
// of its own (net), so that each request can have a source of its own.
func from(net, n int) map[string]string {
	return browserAt(fmt.Sprintf("10.%d.%d.%d", net, n/250, n%250+1))
}

// wrongCodes are n distinct six-digit codes, none of them right.
func wrongCodes(right string, n int) []string {
	r, _ := strconv.Atoi(right)
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%06d", (r+1+i)%1000000)
	}
	return out
}

// otpShots answers the user's latest sign-in code with each code, from
// sources of net (each its own, or all the first).
func (e *env) otpShots(userID string, codes []string, net int, oneSource bool) []shot {
	out := make([]shot, len(codes))
	for i, c := range codes {
		n := i
		if oneSource {
			n = 0
		}
		out[i] = shot{method: "POST", path: e.authPath("/otps/verify"), headers: from(net, n),
			body: map[string]any{"otp": c, "user_id": userID}}
	}
	return out
}

// sendCode sends a sign-in code to an address and returns it.
func (e *env) sendCode(t *testing.T, to string) string {
	t.Helper()
	scenario{method: "POST", path: e.authPath("/otps/login"), body: map[string]any{"identifier": to}, wantStatus: 200}.run(t, e)
	return e.code(t, to)
}

// testBurstEmailCode is the first report: wrong codes in parallel on a
// challenge that allows five, then the right one.
func testBurstEmailCode(t *testing.T, e *env) {
	const email = "burst@example.com"
	userID := e.newMember(t, email, "")

	code := e.sendCode(t, email)
	wantTally(t, "39 parallel wrong codes", e.burst(t, e.otpShots(userID, wrongCodes(code, 39), 1, false)),
		map[string]int{"422 invalid_code": 5, "429 too_many_attempts": 34})
	wantTally(t, "the right code after them", e.burst(t, e.otpShots(userID, []string{code}, 1, false)),
		map[string]int{"429 too_many_attempts": 1})

	// The right code among the wrong ones wins only as one of the first
	// five guesses; after it, the challenge is completed and every other
	// code is refused as used (422, uncompared).
	code = e.sendCode(t, email)
	got := tally(e.burst(t, e.otpShots(userID, append(wrongCodes(code, 39), code), 2, false)))
	ch, err := e.DB.LatestCodeChallenge(t.Context(), e.app.ID, userID)
	switch {
	case err != nil:
		t.Fatal(err)
	case got["200 "] == 1:
		if ch.Status != "completed" || ch.RemainingAttempts < 1 || got["422 invalid_code"] != 39 {
			t.Errorf("the right code won among 39 wrong: %v, challenge %s with %d attempts left; want it completed before its attempts ran out",
				got, ch.Status, ch.RemainingAttempts)
		}
	default:
		if got["422 invalid_code"] != 5 || got["429 too_many_attempts"] != 35 || ch.Status != "failed" {
			t.Errorf("39 wrong codes and the right one in parallel: %v, challenge %s; want 5 compared and 35 refused, or the right one winning",
				got, ch.Status)
		}
	}

	// From one source, the hourly budget (10 wrong codes per user and
	// source) holds across challenges: five, five, then none.
	for i, want := range []map[string]int{
		{"422 invalid_code": 5, "429 too_many_attempts": 45},
		{"422 invalid_code": 5, "429 too_many_attempts": 45},
		{"429 too_many_attempts": 50},
	} {
		code = e.sendCode(t, email)
		wantTally(t, fmt.Sprintf("burst %d of 50 wrong codes from one source", i+1),
			e.burst(t, e.otpShots(userID, wrongCodes(code, 50), 3, true)), want)
	}
	wantTally(t, "the right code from that source, its budget spent", e.burst(t, e.otpShots(userID, []string{code}, 3, true)),
		map[string]int{"429 too_many_attempts": 1})
	wantTally(t, "the right code from another source", e.burst(t, e.otpShots(userID, []string{code}, 4, false)),
		map[string]int{"200 ": 1})
}

// testBurstCodeLock repeats the first report's burst on one user until
// code entry locks: at the documented count (ratelimit.code_lock_after,
// 100), not one guess later.
func testBurstCodeLock(t *testing.T, e *env) {
	const email = "lock@example.com"
	userID := e.newMember(t, email, "")
	compared := 0
	for b := range 20 {
		code := e.sendCode(t, email)
		got := tally(e.burst(t, e.otpShots(userID, wrongCodes(code, 39), 10+b, false)))
		compared += got["422 invalid_code"]
		// The last burst reaches the lock: its later refusals say so.
		if got["422 invalid_code"] != 5 || got["429 too_many_attempts"]+got["429 code_entry_locked"] != 34 {
			t.Fatalf("burst %d: %v; want 5 compared and 34 refused", b+1, got)
		}
	}
	if compared != 100 {
		t.Fatalf("%d wrong codes compared; want 100", compared)
	}
	code := e.sendCode(t, email)
	wantTally(t, "after 100 wrong codes, the right one from a fresh source", e.burst(t, e.otpShots(userID, []string{code}, 40, false)),
		map[string]int{"429 code_entry_locked": 1})
	wantTally(t, "and another burst", e.burst(t, e.otpShots(userID, wrongCodes(code, 39), 41, false)),
		map[string]int{"429 code_entry_locked": 39})
	if n, err := e.DB.CodeFailureStreak(t.Context(), userID); err != nil || n != 100 {
		t.Errorf("streak = %d, %v; want exactly 100", n, err)
	}
}

// testBurstSMSCode: the same for a code sent by SMS.
func testBurstSMSCode(t *testing.T, e *env) {
	r := scenario{method: "POST", path: e.authPath("/otps/login"), body: map[string]any{"identifier": "+1 415 555 2671"},
		wantStatus: 200}.run(t, e)
	userID := r.str("user_id")
	code := e.code(t, "+14155552671")
	wantTally(t, "50 parallel wrong SMS codes", e.burst(t, e.otpShots(userID, wrongCodes(code, 50), 1, false)),
		map[string]int{"422 invalid_code": 5, "429 too_many_attempts": 45})
	wantTally(t, "the right code after them", e.burst(t, e.otpShots(userID, []string{code}, 2, false)),
		map[string]int{"429 too_many_attempts": 1})
}

// verifyShots answer each challenge token with the code at index i%len.
func (e *env) verifyShots(toks []string, codes []string, headers func(i int) map[string]string) []shot {
	n := max(len(toks), len(codes))
	out := make([]shot, n)
	for i := range n {
		out[i] = shot{method: "POST", path: e.chPath(toks[i%len(toks)], "/verify"), headers: headers(i),
			body: map[string]any{"code": codes[i%len(codes)]}}
	}
	return out
}

// stepUps starts n backend step-ups of a user by method.
func (e *env) stepUps(t *testing.T, userID, method string, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		out[i], _ = e.startChallenge(t, bearer(e.appSecret), map[string]any{"purpose": "step_up", "method": method, "app_user_id": userID})
	}
	return out
}

// testBurstTOTP: wrong TOTP codes on one challenge, and one right code on
// fifty challenges (one success; the rest are replays, each a wrong answer
// of the source's hourly budget).
func testBurstTOTP(t *testing.T, e *env) {
	const email = "totp@example.com"
	userID := e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email)
	_, secret := e.enrollTOTP(t, access, "Phone")
	right := totpAt(t, secret, e.Clock.Now())
	var wrong []string
	for _, c := range wrongCodes(right, 60) {
		if c != totpAt(t, secret, e.Clock.Now().Add(-totpPeriod)) && c != totpAt(t, secret, e.Clock.Now().Add(totpPeriod)) {
			wrong = append(wrong, c)
		}
	}
	one := e.stepUps(t, userID, "totp", 1)
	wantTally(t, "50 parallel wrong TOTP codes on one challenge",
		e.burst(t, e.verifyShots(one, wrong[:50], func(i int) map[string]string { return from(1, i) })),
		map[string]int{"422 invalid_code": 5, "429 too_many_attempts": 45})

	fifty := e.stepUps(t, userID, "totp", 50)
	wantTally(t, "one right TOTP code on 50 challenges at once, from one source",
		e.burst(t, e.verifyShots(fifty, []string{right}, func(int) map[string]string { return from(2, 0) })),
		map[string]int{"200 ": 1, "422 code_used": 10, "429 too_many_attempts": 39})
}

// testBurstBackupCode: wrong backup codes on one challenge; then the second
// report's shape, one backup code submitted to 20 step-ups at once, while
// another user reads their profile.
func testBurstBackupCode(t *testing.T, e *env) {
	const email = "backup@example.com"
	userID := e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email)
	codes := e.newBackupCodes(t, access)

	one := e.stepUps(t, userID, "backup_code", 1)
	var wrong []string
	for i := range 50 {
		wrong = append(wrong, fmt.Sprintf("ZZZZZ-%05d", i))
	}
	wantTally(t, "50 parallel wrong backup codes on one challenge",
		e.burst(t, e.verifyShots(one, wrong, func(i int) map[string]string { return from(1, i) })),
		map[string]int{"422 invalid_code": 5, "429 too_many_attempts": 45})

	const bystander = "bystander@example.com"
	byID := e.newMember(t, bystander, "")
	_, byAccess, _ := e.signIn(t, bystander)
	twenty := e.stepUps(t, userID, "backup_code", 20)
	shots := e.verifyShots(twenty, codes[:1], func(int) map[string]string { return from(2, 0) })
	shots = append(shots, shot{method: "GET", path: e.authPath("/current_user"), headers: user(byAccess)})
	as := e.burst(t, shots)
	wantTally(t, "one backup code on 20 step-ups at once (the DoS shape)", as[:20],
		map[string]int{"200 ": 1, "422 invalid_code": 10, "429 too_many_attempts": 9})
	if by := as[20]; by.status != 200 || !bytes.Contains(mustJSON(t, by.body), []byte(byID)) {
		t.Errorf("the bystander's current_user during the burst = %v %v; want 200 with the user %s", by, by.body, byID)
	}
}

// testBurstMatchNumber: wrong numbers approving a push, then the right one
// by many at once.
func testBurstMatchNumber(t *testing.T, e *env) {
	const email = "push@example.com"
	e.newMember(t, email, "")
	_, phone, _ := e.signIn(t, email)
	ask := map[string]any{"purpose": "authenticate", "method": "push", "identifier": email}
	approvals := func(id string, numbers func(i int) int, n int) []shot {
		out := make([]shot, n)
		for i := range out {
			out[i] = shot{method: "POST", path: e.authPath("/push/" + id + "/approve"), headers: user(phone),
				body: map[string]any{"match_number": numbers(i)}}
		}
		return out
	}
	_, ch := e.startChallenge(t, browserAt("203.0.113.30"), ask)
	number := int(ch["match_number"].(float64))
	wrong := func(i int) int { return (number-10+1+i%80)%90 + 10 }
	wantTally(t, "50 parallel wrong numbers", e.burst(t, approvals(ch["id"].(string), wrong, 50)),
		map[string]int{"400 invalid_request": 3, "429 too_many_attempts": 47})
	wantTally(t, "the right number after them", e.burst(t, approvals(ch["id"].(string), func(int) int { return number }, 1)),
		map[string]int{"429 too_many_attempts": 1})

	_, ch = e.startChallenge(t, browserAt("203.0.113.31"), ask)
	number = int(ch["match_number"].(float64))
	wantTally(t, "50 parallel right numbers", e.burst(t, approvals(ch["id"].(string), func(int) int { return number }, 50)),
		map[string]int{"200 ": 1, "409 challenge_closed": 49})
}

// testBurstMagicLink: one e-mailed token exchanged by 50 requests at once.
func testBurstMagicLink(t *testing.T, e *env) {
	const email = "link@example.com"
	e.newMember(t, email, "")
	scenario{method: "POST", path: e.authPath("/magic_links/login"), body: map[string]any{"identifier": email}, wantStatus: 200}.run(t, e)
	tok := e.magicToken(t, email)
	shots := make([]shot, 50)
	for i := range shots {
		shots[i] = shot{method: "PATCH", path: e.authPath("/magic_links/authenticate"), headers: from(1, i),
			body: map[string]any{"token": tok}}
	}
	as := e.burst(t, shots)
	wantTally(t, "one magic-link token 50 times at once", as, map[string]int{"200 ": 1, "404 magic_link_not_found_or_expired": 49})
}

// testBurstRefresh: one refresh token rotated by 50 requests at once: one
// rotation; the others, within the grace window, get the same successor.
func testBurstRefresh(t *testing.T, e *env) {
	const email = "refresh@example.com"
	e.newMember(t, email, "")
	_, _, refresh := e.signIn(t, email)
	shots := make([]shot, 50)
	for i := range shots {
		shots[i] = shot{method: "POST", path: e.authPath("/tokens/refresh"), headers: map[string]string{"X-Refresh-Token": refresh}}
	}
	as := e.burst(t, shots)
	wantTally(t, "one refresh token 50 times at once", as, map[string]int{"200 ": 50})
	next := map[string]bool{}
	for _, a := range as {
		if r, _ := a.body["refresh"].(string); r != "" {
			next[r] = true
		}
	}
	if len(next) != 1 || next[refresh] {
		t.Errorf("%d distinct successors; want exactly one, new", len(next))
	}
}

// testBurstStepUpToken: a completed step-up's token authorises one change,
// however many requests present it at once.
func testBurstStepUpToken(t *testing.T, e *env) {
	const email = "stepup@example.com"
	userID := e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email)
	codes := e.newBackupCodes(t, access)
	e.Clock.Advance(11 * time.Minute) // the session is no longer a recent sign-in
	tok := e.stepUps(t, userID, "backup_code", 1)[0]
	scenario{method: "POST", path: e.chPath(tok, "/verify"), body: map[string]any{"code": codes[0]}, wantStatus: 200}.run(t, e)
	shots := make([]shot, 50)
	for i := range shots {
		shots[i] = shot{method: "POST", path: e.authPath("/mfa/backup-codes"), headers: user(access), body: map[string]any{"challenge": tok}}
	}
	as := e.burst(t, shots)
	wantTally(t, "one step-up token 50 times at once", as, map[string]int{"200 ": 1, "403 verification_required": 49})
}

// testBurstPasskey: one passkey assertion finished by 50 requests at once.
func testBurstPasskey(t *testing.T, e *env) {
	const email = "passkey@example.com"
	e.newMember(t, email, "")
	_, access, _ := e.signIn(t, email)
	a := newAuthenticator()
	e.addPasskey(t, a, access)
	body := a.get(t, e.loginOptions(t, email))
	shots := make([]shot, 50)
	for i := range shots {
		shots[i] = shot{method: "POST", path: e.authPath("/webauthn/login/finalize"), headers: from(1, i), body: json.RawMessage(body)}
	}
	as := e.burst(t, shots)
	wantTally(t, "one passkey assertion 50 times at once", as, map[string]int{"200 ": 1, "400 webauthn_verification_error": 49})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
