package httpapi_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

// TestCodeLockout replays issue 8's finding 4 over HTTP, behind a trusted
// proxy that names the client in X-Forwarded-For: a stranger's ten wrong
// codes used to lock the owner out of sign-in by code for an hour. Now they
// spend the budget of the stranger's IP only; the owner, from another IP,
// signs in. Consecutive wrong codes from many IPs lock code entry (a lower
// threshold than the default 100, to keep the test short) and tell the user.
func TestCodeLockout(t *testing.T) {
	l := servertest.LooseLimits()
	l.CodeLockAfter = 15
	opts := servertest.Options{Serve: true, Limits: &l, Settings: map[string]string{"GATEHOUSE_HTTP_TRUSTED_PROXIES": "127.0.0.1/32"}}
	forEach(t, opts, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		e.recordEvents(t)
		const (
			address  = "lock@example.com"
			owner    = "198.51.100.7"
			stranger = "203.0.113.66"
		)
		login, verify := e.authPath("/otps/login"), e.authPath("/otps/verify")
		from := func(ip string) map[string]string {
			return map[string]string{"X-Forwarded-For": ip, "User-Agent": browserUA}
		}
		userID := scenario{method: "POST", path: login, headers: from(owner), body: map[string]any{"identifier": address},
			wantStatus: 200, events: []string{"user.created", "verification.email.requested", "challenge.created"}}.run(t, e).str("user_id")
		send := func() string {
			t.Helper()
			scenario{method: "POST", path: login, headers: from(stranger), body: map[string]any{"identifier": address},
				wantStatus: 200, events: []string{"verification.email.requested", "challenge.created"}}.run(t, e)
			return e.code(t, address)
		}
		enter := func(ip, otp string, status int, code string, events ...string) {
			t.Helper()
			scenario{method: "POST", path: verify, headers: from(ip), body: map[string]any{"otp": otp, "user_id": userID},
				wantStatus: status, wantCode: code, events: events}.run(t, e)
		}
		// guess enters the five wrong codes a challenge allows from ip; the
		// fifth fails the challenge, and final, when set, enters that one.
		guess := func(ip string, final func(wrong string)) {
			t.Helper()
			wrong := "000000"
			if send() == wrong {
				wrong = "111111"
			}
			for range 4 {
				enter(ip, wrong, 422, "invalid_code", "auth.login.failed")
			}
			if final == nil {
				enter(ip, wrong, 422, "invalid_code", "auth.login.failed", "verification.email.failed", "challenge.failed")
				enter(ip, wrong, 429, "too_many_attempts") // a sixth: refused uncompared
			} else {
				final(wrong)
			}
		}

		// The attack: ten wrong codes from the stranger's IP.
		guess(stranger, nil)
		guess(stranger, nil)
		code := send()
		t.Run("the stranger's IP is refused, even the right code", func(t *testing.T) {
			enter(stranger, code, 429, "too_many_attempts")
		})
		t.Run("the owner, from another IP, signs in with the same code", func(t *testing.T) {
			enter(owner, code, 200, "", "verification.email.verified", "challenge.completed")
		})

		// Fifteen consecutive wrong codes from three other IPs lock code
		// entry; the fifteenth is compared, the next is refused, and the
		// user gets one notice.
		before := len(e.Mail.Messages())
		guess("192.0.2.1", nil)
		guess("192.0.2.1", nil)
		guess("192.0.2.2", func(wrong string) {
			enter("192.0.2.2", wrong, 422, "invalid_code", "auth.login.failed", "verification.email.failed", "challenge.failed")
			enter("192.0.2.2", wrong, 429, "code_entry_locked")
		})
		notices := 0
		for _, m := range e.Mail.Messages()[before:] {
			if m.To == address && strings.Contains(m.Subject, "locked") {
				notices++
				if m.Code != "" || m.Link != "" {
					t.Errorf("the lock notice carries a code or a link: %+v", m)
				}
			}
		}
		if notices != 1 {
			t.Errorf("%d lock notices sent to %s; want 1", notices, address)
		}
		code = send()
		t.Run("locked, even the owner's right code is refused", func(t *testing.T) {
			enter(owner, code, 429, "code_entry_locked")
		})
	})
}
