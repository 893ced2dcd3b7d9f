package signin_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Issue 8, finding 4: ten wrong codes from anyone locked the owner out of
// sign-in by code for an hour. Wrong codes now count per user and source (the
// client IP) in a rolling hour by attempt time, and consecutive wrong codes
// from every source lock code entry alone, until the user signs in another way.

// from is the env's client at another IP.
func (e *env) from(ip string) signin.Client {
	return signin.Client{IP: ip, UserAgent: e.client.UserAgent}
}

// wrong enters one wrong code for u's latest code (right) from c and checks
// the answer.
func (e *env) wrong(t *testing.T, u string, right string, c signin.Client, want error) {
	t.Helper()
	bad := wrongCodes(right, 1)[0]
	if _, err := e.SignIn.VerifyOTP(t.Context(), e.app, u, bad, c); !errors.Is(err, want) {
		t.Fatalf("VerifyOTP(wrong code from %s) = %v; want %v", c.IP, err, want)
	}
}

// notices returns the lock notices sent to an address.
func (e *env) notices(to string) []courier.Message {
	var out []courier.Message
	for _, m := range e.Mail.Messages() {
		if m.To == to && strings.Contains(m.Subject, "is locked") {
			out = append(out, m)
		}
	}
	return out
}

func TestVerifyOTPStrangerDoesNotLockOutOwner(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		stranger, owner := e.from("203.0.113.66"), e.from("198.51.100.20")

		// The stranger spends ten wrong codes over two codes sent: each is
		// compared (422), and the challenge's own limit refuses a sixth.
		for range 2 {
			_, code := e.sendCode(t, "alice@example.com")
			for range 5 {
				e.wrong(t, u.ID, code, stranger, signin.ErrInvalidCode)
			}
			e.wrong(t, u.ID, code, stranger, signin.ErrTooManyAttempts)
		}
		_, code := e.sendCode(t, "alice@example.com")
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code, stranger); !errors.Is(err, signin.ErrTooManyAttempts) {
			t.Errorf("VerifyOTP(right code from the stranger's IP, its budget spent) = %v; want ErrTooManyAttempts", err)
		}
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code, owner); err != nil {
			t.Errorf("VerifyOTP(the same right code from the owner's IP) = %v; want nil", err)
		}
		if n := len(e.notices("alice@example.com")); n != 0 {
			t.Errorf("%d lock notices after ten wrong codes; want none", n)
		}
	})
}

// TestVerifyOTPRollingWindow checks the hourly budget counts wrong codes by
// when they were entered, in a window that rolls: not by when their codes
// were sent, and not in fixed hours.
func TestVerifyOTPRollingWindow(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		source := e.from("203.0.113.66")
		at := func(want error, what string) {
			t.Helper()
			_, code := e.sendCode(t, "alice@example.com")
			if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code, source); !errors.Is(err, want) {
				t.Errorf("%s: VerifyOTP(right code) = %v; want %v", what, err, want)
			}
		}

		// The first code is sent at t0-9m and guessed at t0; then one wrong
		// code every five minutes up to t0+45m: ten in all.
		_, code := e.sendCode(t, "alice@example.com")
		e.Clock.Advance(9 * time.Minute)
		t0 := e.Clock.Now()
		e.wrong(t, u.ID, code, source, signin.ErrInvalidCode)
		set := func(d time.Duration) { e.Clock.Advance(t0.Add(d).Sub(e.Clock.Now())) } // the clock reads t0+d
		for range 9 {
			e.Clock.Advance(5 * time.Minute)
			_, code := e.sendCode(t, "alice@example.com")
			e.wrong(t, u.ID, code, source, signin.ErrInvalidCode)
		}
		set(50 * time.Minute)
		at(signin.ErrTooManyAttempts, "t0+50m, ten wrong codes in the last hour")
		// Counting by when the codes were sent would let the first go at t0+51m.
		set(59 * time.Minute)
		at(signin.ErrTooManyAttempts, "t0+59m, the first wrong code still within the hour")

		// At t0+61m the wrong code of t0 has left the window: one more fits.
		set(61 * time.Minute)
		_, code = e.sendCode(t, "alice@example.com")
		e.wrong(t, u.ID, code, source, signin.ErrInvalidCode)
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code, source); !errors.Is(err, signin.ErrTooManyAttempts) {
			t.Errorf("t0+61m, after the tenth wrong code of the hour: VerifyOTP(right code) = %v; want ErrTooManyAttempts", err)
		}
		// At t0+66m the one of t0+5m has left too.
		set(66 * time.Minute)
		at(nil, "t0+66m, nine wrong codes in the last hour")

		// The sweep deletes what has left the window (t0 and t0+5m).
		if err := e.SignIn.ExpireChallenges(ctx); err != nil {
			t.Fatalf("ExpireChallenges: %v", err)
		}
		if n, err := e.DB.CodeFailuresFrom(ctx, u.ID, source.IP, time.Time{}); err != nil || n != 9 {
			t.Errorf("wrong codes kept after the sweep = %d, %v; want the 9 of the last hour", n, err)
		}
	})
}

// TestVerifyOTPLockAfterConsecutiveFailures checks the default lock: 100
// consecutive wrong codes from ten IPs, each within its hourly budget, lock
// code entry for the user, who is told once; the account stays active, a
// magic link still signs in, and that lifts the lock.
func TestVerifyOTPLockAfterConsecutiveFailures(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		if servertest.LooseLimits().CodeLockAfter != 100 {
			t.Fatalf("CodeLockAfter = %d; the test expects the default 100", servertest.LooseLimits().CodeLockAfter)
		}
		const address = "alice@example.com"
		u := e.user(t, address)
		failures := 0
		for ip := range 10 {
			source := e.from(fmt.Sprintf("203.0.113.%d", 10+ip))
			for range 2 {
				_, code := e.sendCode(t, address)
				for range 5 {
					failures++
					e.wrong(t, u.ID, code, source, signin.ErrInvalidCode) // every one compared
				}
			}
		}
		if failures != 100 {
			t.Fatalf("%d wrong codes; want 100", failures)
		}
		notices := e.notices(address)
		if len(notices) != 1 {
			t.Fatalf("%d lock notices after 100 wrong codes; want 1", len(notices))
		}
		if n := notices[0]; n.Code != "" || n.Link != "" || !strings.Contains(n.Text, "sign in another way") {
			t.Errorf("lock notice = %+v; want no code or link, and how to unlock", n)
		}
		if got := sys.Logs.String(); !strings.Contains(got, "sign-in by code locked") {
			t.Errorf("no log line says code entry locked")
		}

		// Locked: the right code of a new challenge from a fresh IP is
		// refused, and a wrong one is neither counted nor notified again.
		fresh := e.from("192.0.2.1")
		_, code := e.sendCode(t, address)
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code, fresh); !errors.Is(err, signin.ErrCodeEntryLocked) {
			t.Errorf("VerifyOTP(right code, locked) = %v; want ErrCodeEntryLocked", err)
		}
		e.wrong(t, u.ID, code, fresh, signin.ErrCodeEntryLocked)
		if n, err := e.DB.CodeFailureStreak(ctx, u.ID); err != nil || n != 100 {
			t.Errorf("streak = %d, %v; want 100 (refusals are not counted)", n, err)
		}
		if n := len(e.notices(address)); n != 1 {
			t.Errorf("%d lock notices; want still 1", n)
		}
		if got, err := e.get(t, u.ID); err != nil || got.Status != store.StatusActive {
			t.Errorf("user = %+v, %v; want still active", got.AppUser, err)
		}

		// A magic link still signs in, and lifts the lock.
		_, tok := e.sendLink(t, address, false)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, fresh); err != nil {
			t.Fatalf("AuthenticateMagicLink(locked code entry) = %v; want nil", err)
		}
		_, code = e.sendCode(t, address)
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code, fresh); err != nil {
			t.Errorf("VerifyOTP(right code after a magic-link sign-in) = %v; want nil", err)
		}
	})
}

// TestVerifyOTPSuccessEndsStreak checks the lock counts consecutive wrong
// codes: a successful sign-in starts the count again.
func TestVerifyOTPSuccessEndsStreak(t *testing.T) {
	servertest.ForEach(t, options(func(o *servertest.Options) { o.Limits.CodeLockAfter = 20 }), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		const address = "alice@example.com"
		u := e.user(t, address)
		// spend enters n wrong codes from ip, five per code sent.
		spend := func(ip string, n int, last error) {
			t.Helper()
			var code string
			for i := range n {
				if i%5 == 0 {
					_, code = e.sendCode(t, address)
				}
				e.wrong(t, u.ID, code, e.from(ip), signin.ErrInvalidCode)
			}
			if last != nil {
				e.wrong(t, u.ID, code, e.from(ip), last)
			}
		}
		spend("203.0.113.1", 10, nil)
		spend("203.0.113.2", 9, nil)
		e.signIn(t, u)
		if n, err := e.DB.CodeFailureStreak(ctx, u.ID); err != nil || n != 0 {
			t.Errorf("streak after a sign-in = %d, %v; want 0", n, err)
		}
		spend("203.0.113.3", 10, nil)
		spend("203.0.113.4", 9, nil)
		if n := len(e.notices(address)); n != 0 {
			t.Fatalf("%d lock notices after 19 wrong codes since the last sign-in; want none", n)
		}
		spend("203.0.113.5", 1, signin.ErrCodeEntryLocked) // the 20th is compared, a 21st refused
		if n := len(e.notices(address)); n != 1 {
			t.Errorf("%d lock notices after 20 consecutive wrong codes; want 1", n)
		}
	})
}

// TestVerifyOTPLockConcurrent checks a burst of guesses from many IPs cannot
// overshoot the lock, and the user is told exactly once.
func TestVerifyOTPLockConcurrent(t *testing.T) {
	servertest.ForEach(t, options(func(o *servertest.Options) { o.Limits.CodeLockAfter = 12 }), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		const address = "alice@example.com"
		u := e.user(t, address)
		for ip := range 2 { // ten wrong codes
			_, code := e.sendCode(t, address)
			for range 5 {
				e.wrong(t, u.ID, code, e.from(fmt.Sprintf("203.0.113.%d", ip)), signin.ErrInvalidCode)
			}
		}
		_, code := e.sendCode(t, address)
		var (
			mu   sync.Mutex
			errs = map[error]int{}
			wg   sync.WaitGroup
		)
		for i, bad := range wrongCodes(code, 20) {
			wg.Go(func() {
				_, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, bad, e.from(fmt.Sprintf("192.0.2.%d", i)))
				mu.Lock()
				defer mu.Unlock()
				for _, known := range []error{signin.ErrInvalidCode, signin.ErrTooManyAttempts, signin.ErrCodeEntryLocked} {
					if errors.Is(err, known) {
						errs[known]++
						return
					}
				}
				t.Errorf("VerifyOTP(burst) = %v; want a refusal", err)
			})
		}
		wg.Wait()
		if n, err := e.DB.CodeFailureStreak(ctx, u.ID); err != nil || n != 12 {
			t.Errorf("streak after the burst = %d, %v; want exactly 12", n, err)
		}
		// Two guesses are compared before the lock; the other 18 are refused
		// without comparing, whatever order they arrive in.
		if errs[signin.ErrInvalidCode] != 2 || errs[signin.ErrCodeEntryLocked] != 18 {
			t.Errorf("burst answers %v; want exactly 2 ErrInvalidCode and 18 ErrCodeEntryLocked", errs)
		}
		if n := len(e.notices(address)); n != 1 {
			t.Errorf("%d lock notices; want exactly 1", n)
		}
		if ch, err := e.DB.LatestCodeChallenge(ctx, e.app.ID, u.ID); err != nil || ch.RemainingAttempts != 3 {
			t.Errorf("challenge = %d attempts left, %v; want 3 (two wrong codes counted, the rest refused unspent)", ch.RemainingAttempts, err)
		}
	})
}
