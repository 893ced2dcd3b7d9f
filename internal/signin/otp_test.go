package signin_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// wrongCodes returns n distinct six-digit codes, none of them right.
func wrongCodes(right string, n int) []string {
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		if c := fmt.Sprintf("%06d", i); c != right {
			out = append(out, c)
		}
	}
	return out
}

func TestVerifyOTPConcurrentCorrectCode(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		_, code := e.sendCode(t, "alice@example.com")

		const n = 50
		var (
			mu      sync.Mutex
			won     []signin.TokenSet
			refused int
			wg      sync.WaitGroup
		)
		for range n {
			wg.Go(func() {
				ts, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code, e.client)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won = append(won, ts)
				case errors.Is(err, signin.ErrInvalidCode):
					refused++
				default:
					t.Errorf("VerifyOTP(correct code, concurrent) = %v; want nil or ErrInvalidCode", err)
				}
			})
		}
		wg.Wait()
		if len(won) != 1 || refused != n-1 {
			t.Fatalf("%d concurrent VerifyOTP(correct code): %d token sets, %d ErrInvalidCode; want 1 and %d", n, len(won), refused, n-1)
		}
		if c := e.caller(t, won[0].Access); c.User.ID != u.ID {
			t.Errorf("Authenticate(winner's token).User.ID = %s; want %s", c.User.ID, u.ID)
		}
		if sessions, err := e.SignIn.ListSessions(ctx, e.app, e.caller(t, won[0].Access)); err != nil || len(sessions) != 1 {
			t.Errorf("ListSessions = %d sessions, %v; want exactly 1", len(sessions), err)
		}
		ch, err := e.DB.LatestCodeChallenge(ctx, e.app.ID, u.ID)
		if err != nil || ch.Status != store.ChallengeCompleted || ch.RemainingAttempts != 5 {
			t.Errorf("challenge = status %q, %d attempts left, %v; want completed with 5", ch.Status, ch.RemainingAttempts, err)
		}
	})
}

func TestVerifyOTPConcurrentWrongCodes(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		_, code := e.sendCode(t, "alice@example.com")

		var (
			mu   sync.Mutex
			errs = map[error]int{}
			wg   sync.WaitGroup
		)
		for _, wrong := range wrongCodes(code, 50) {
			wg.Go(func() {
				_, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, wrong, e.client)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case errors.Is(err, signin.ErrInvalidCode):
					errs[signin.ErrInvalidCode]++
				case errors.Is(err, signin.ErrTooManyAttempts):
					errs[signin.ErrTooManyAttempts]++
				default:
					t.Errorf("VerifyOTP(%q, concurrent) = %v; want ErrInvalidCode or ErrTooManyAttempts", wrong, err)
				}
			})
		}
		wg.Wait()
		// Each guess takes an attempt before it is compared: exactly five
		// are compared (invalid), the other 45 are refused uncompared.
		if errs[signin.ErrInvalidCode] != 5 || errs[signin.ErrTooManyAttempts] != 45 {
			t.Errorf("50 concurrent wrong codes gave %v; want exactly 5 ErrInvalidCode and 45 ErrTooManyAttempts", errs)
		}
		ch, err := e.DB.LatestCodeChallenge(ctx, e.app.ID, u.ID)
		if err != nil || ch.Status != store.ChallengeFailed || ch.RemainingAttempts != 0 {
			t.Errorf("challenge = status %q, %d attempts left, %v; want failed with exactly 0", ch.Status, ch.RemainingAttempts, err)
		}
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code, e.client); !errors.Is(err, signin.ErrTooManyAttempts) {
			t.Errorf("VerifyOTP(correct code after 50 wrong) = %v; want ErrTooManyAttempts", err)
		}
	})
}

func TestVerifyOTPAttemptLimit(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		_, code := e.sendCode(t, "alice@example.com")

		for i, wrong := range wrongCodes(code, 5) {
			if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, wrong, e.client); !errors.Is(err, signin.ErrInvalidCode) {
				t.Errorf("VerifyOTP(wrong code #%d) = %v; want ErrInvalidCode (compared)", i+1, err)
			}
			ch, err := e.DB.LatestCodeChallenge(ctx, e.app.ID, u.ID)
			if err != nil || ch.RemainingAttempts != 4-i {
				t.Errorf("after wrong code #%d remaining_attempts = %d, %v; want %d", i+1, ch.RemainingAttempts, err, 4-i)
			}
		}
		for _, c := range []string{code, "000000", "abc"} {
			if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, c, e.client); !errors.Is(err, signin.ErrTooManyAttempts) {
				t.Errorf("VerifyOTP(%q) on a failed challenge = %v; want ErrTooManyAttempts", c, err)
			}
		}
		ch, err := e.DB.LatestCodeChallenge(ctx, e.app.ID, u.ID)
		if err != nil || ch.Status != store.ChallengeFailed || ch.RemainingAttempts != 0 {
			t.Errorf("challenge = status %q, %d attempts left, %v; want failed with 0", ch.Status, ch.RemainingAttempts, err)
		}
	})
}

func TestVerifyOTPExpiry(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		late := e.user(t, "late@example.com")
		onTime := e.user(t, "ontime@example.com")
		_, lateCode := e.sendCode(t, "late@example.com")
		_, onTimeCode := e.sendCode(t, "ontime@example.com")

		e.Clock.Advance(10*time.Minute - time.Second)
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, onTime.ID, onTimeCode, e.client); err != nil {
			t.Errorf("VerifyOTP(correct code, 9m59s later) = %v; want nil", err)
		}
		e.Clock.Advance(2 * time.Second)
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, late.ID, lateCode, e.client); !errors.Is(err, signin.ErrInvalidCode) {
			t.Errorf("VerifyOTP(correct code, 10m01s later) = %v; want ErrInvalidCode", err)
		}
		ch, err := e.DB.LatestCodeChallenge(ctx, e.app.ID, late.ID)
		if err != nil || !ch.ExpiresAt.Equal(ch.CreatedAt.Add(10*time.Minute)) || ch.Status == store.ChallengeCompleted {
			t.Errorf("challenge = %+v, %v; want not completed, expiring 10 min after creation", ch, err)
		}
	})
}

func TestVerifyOTPResendSupersedes(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		first, code1 := e.sendCode(t, "alice@example.com")
		second, code2 := e.sendCode(t, "alice@example.com")
		if first.ChallengeID == second.ChallengeID {
			t.Fatalf("two sends returned the same challenge %s", first.ChallengeID)
		}
		if code1 != code2 {
			if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code1, e.client); !errors.Is(err, signin.ErrInvalidCode) {
				t.Errorf("VerifyOTP(first code after resend) = %v; want ErrInvalidCode", err)
			}
		}
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code2, e.client); err != nil {
			t.Errorf("VerifyOTP(second code) = %v; want nil", err)
		}
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code2, e.client); !errors.Is(err, signin.ErrInvalidCode) {
			t.Errorf("VerifyOTP(second code again) = %v; want ErrInvalidCode (single use)", err)
		}
	})
}

// TestVerifyOTPBoundToUser checks a code only completes its own user's
// challenge, and a wrong guess on another user's challenge costs an attempt.
func TestVerifyOTPBoundToUser(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		alice := e.user(t, "alice@example.com")
		bob := e.user(t, "bob@example.com")
		_, aliceCode := e.sendCode(t, "alice@example.com")
		_, bobCode := e.sendCode(t, "bob@example.com")
		if aliceCode == bobCode {
			t.Skip("the two codes happen to be equal")
		}
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, bob.ID, aliceCode, e.client); !errors.Is(err, signin.ErrInvalidCode) {
			t.Errorf("VerifyOTP(bob, alice's code) = %v; want ErrInvalidCode", err)
		}
		if ch, err := e.DB.LatestCodeChallenge(ctx, e.app.ID, bob.ID); err != nil || ch.RemainingAttempts != 4 {
			t.Errorf("bob's remaining_attempts = %d, %v; want 4", ch.RemainingAttempts, err)
		}
		other := e.newApp(t, "Other", nil)
		if _, err := e.SignIn.VerifyOTP(ctx, other, alice.ID, aliceCode, e.client); !errors.Is(err, signin.ErrInvalidCode) {
			t.Errorf("VerifyOTP(other app, alice's code) = %v; want ErrInvalidCode", err)
		}
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, bob.ID, bobCode, e.client); err != nil {
			t.Errorf("VerifyOTP(bob, bob's code) = %v; want nil", err)
		}
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, alice.ID, aliceCode, e.client); err != nil {
			t.Errorf("VerifyOTP(alice, alice's code) = %v; want nil", err)
		}
	})
}

func TestVerifyOTPHourlyBudget(t *testing.T) {
	servertest.ForEach(t, options(func(o *servertest.Options) { o.Limits.CodeFailuresPerHour = 10 }), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")

		// Ten wrong codes over a first send and three resends: no single
		// challenge reaches its own limit of five.
		wrong := 0
		for _, n := range []int{3, 3, 3, 1} {
			_, code := e.sendCode(t, "alice@example.com")
			for _, c := range wrongCodes(code, n) {
				wrong++
				if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, c, e.client); !errors.Is(err, signin.ErrInvalidCode) {
					t.Errorf("VerifyOTP(wrong code #%d) = %v; want ErrInvalidCode", wrong, err)
				}
			}
			e.Clock.Advance(time.Minute)
		}
		_, code := e.sendCode(t, "alice@example.com")
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code, e.client); !errors.Is(err, signin.ErrTooManyAttempts) {
			t.Errorf("VerifyOTP(correct code of a new challenge, budget spent) = %v; want ErrTooManyAttempts", err)
		}
		if ch, err := e.DB.LatestCodeChallenge(ctx, e.app.ID, u.ID); err != nil || ch.Status != store.ChallengePending {
			t.Errorf("new challenge status = %q, %v; want pending (refused before checking)", ch.Status, err)
		}

		e.Clock.Advance(time.Hour + time.Second)
		_, code = e.sendCode(t, "alice@example.com")
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code, e.client); err != nil {
			t.Errorf("VerifyOTP(correct code, an hour later) = %v; want nil", err)
		}
	})
}

// TestVerifyOTPHourlyBudgetConcurrent checks a burst of guesses cannot
// overshoot the hourly budget: each failure is counted in the same
// transaction that records it.
func TestVerifyOTPHourlyBudgetConcurrent(t *testing.T) {
	servertest.ForEach(t, options(func(o *servertest.Options) { o.Limits.CodeFailuresPerHour = 10 }), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		for _, name := range []string{"alice", "bob"} {
			identifier := name + "@example.com"
			u := e.user(t, identifier)
			var code string
			for _, n := range []int{4, 4, 1} { // nine failures, four attempts left on the last challenge
				_, code = e.sendCode(t, identifier)
				for _, c := range wrongCodes(code, n) {
					if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, c, e.client); !errors.Is(err, signin.ErrInvalidCode) {
						t.Fatalf("VerifyOTP(wrong code) = %v; want ErrInvalidCode", err)
					}
				}
			}
			// Bob's burst also holds the right code, which may win only as
			// the tenth guess.
			burst := wrongCodes(code, 30)[10:]
			if name == "bob" {
				burst = append(burst, code)
			}
			var (
				mu      sync.Mutex
				invalid int
				won     int
				wg      sync.WaitGroup
			)
			for _, c := range burst {
				wg.Go(func() {
					_, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, c, e.client)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						won++
					case errors.Is(err, signin.ErrInvalidCode):
						invalid++
					case !errors.Is(err, signin.ErrTooManyAttempts):
						t.Errorf("VerifyOTP(burst) = %v; want nil, ErrInvalidCode or ErrTooManyAttempts", err)
					}
				})
			}
			wg.Wait()
			failures, err := e.DB.CodeFailuresFrom(ctx, u.ID, e.client.IP, e.Clock.Now().Add(-time.Hour))
			if err != nil {
				t.Fatalf("CodeFailuresFrom: %v", err)
			}
			// Once the code wins, later guesses meet a completed challenge and
			// are refused as invalid without costing anything.
			if failures+won != 10 || won > 1 || (won == 0 && invalid != failures-9) {
				t.Errorf("%s: burst of %d at 9 failures: %d failures recorded, %d refused as invalid, %d succeeded; want 10 guesses in all",
					name, len(burst), failures, invalid, won)
			}
		}
	})
}

func TestOTPCodesAndStorage(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		var codes []string
		for range 20 {
			_, code := e.sendCode(t, "alice@example.com")
			if len(code) != 6 || strings.Trim(code, "0123456789") != "" {
				t.Errorf("code %q; want 6 digits", code)
			}
			codes = append(codes, code)
		}
		code := codes[len(codes)-1]
		ch, err := e.DB.LatestCodeChallenge(ctx, e.app.ID, u.ID)
		if err != nil {
			t.Fatalf("LatestCodeChallenge: %v", err)
		}
		unkeyed := sha256.Sum256([]byte(code))
		if servertest.ContainsWord(fmt.Sprintf("%+v", ch), code) || ch.SecretHash == hex.EncodeToString(unkeyed[:]) {
			t.Errorf("stored challenge %+v holds the code or its plain SHA-256", ch)
		}
		all := dump(t, e.DB)
		if !strings.Contains(all, ch.SecretHash) {
			t.Fatalf("the dump lacks the challenge's row; the dump is broken")
		}
		for _, c := range codes {
			if servertest.ContainsWord(all, c) {
				t.Errorf("database dump contains code %q", c)
			}
			plain := sha256.Sum256([]byte(c))
			salted := sha256.Sum256([]byte(ch.ID + c))
			for _, h := range [][32]byte{plain, salted} {
				if strings.Contains(all, hex.EncodeToString(h[:])) {
					t.Errorf("database dump contains an unkeyed SHA-256 of code %q", c)
				}
			}
		}
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code, e.client); err != nil {
			t.Errorf("VerifyOTP(latest code) = %v; want nil", err)
		}
	})
}

func TestSendOTPNothingToSend(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, func(s *tenant.AppSettings) { s.PublicSignup = ptr(false) })
		gone := e.user(t, "gone@example.com")
		if _, err := e.Users.SetStatus(ctx, servertest.Operator, e.app, gone.ID, store.StatusInactive); err != nil {
			t.Fatalf("SetStatus(inactive): %v", err)
		}
		known := e.user(t, "known@example.com")
		sent, _ := e.sendCode(t, "known@example.com")
		before := len(e.Mail.Messages())

		for _, identifier := range []string{"stranger@example.com", "+14155552671", "gone@example.com"} {
			res, err := e.SignIn.SendOTP(ctx, e.app, identifier, nil, e.client)
			if err != nil || !res.Sent || res.ChallengeID == "" || res.UserID == "" || res.MetaErrors != nil ||
				!res.SentAt.Equal(sent.SentAt) || res.UserID == gone.ID || res.UserID == known.ID {
				t.Errorf("SendOTP(%q) = %+v, %v; want a normal-looking result like %+v", identifier, res, err, sent)
			}
			if _, err := e.SignIn.SendMagicLink(ctx, e.app, identifier, nil, false, e.client); err != nil {
				t.Errorf("SendMagicLink(%q) = %v; want nil", identifier, err)
			}
			if identifier == "gone@example.com" {
				continue
			}
			if u, err := e.Users.Lookup(ctx, e.app, identifier); err != nil || u != nil {
				t.Errorf("Lookup(%q) after SendOTP = %v, %v; want no user (sign-up is closed)", identifier, u, err)
			}
			if _, err := e.SignIn.VerifyOTP(ctx, e.app, res.UserID, "123456", e.client); !errors.Is(err, signin.ErrInvalidCode) {
				t.Errorf("VerifyOTP(decoy user id) = %v; want ErrInvalidCode", err)
			}
		}
		if got := len(e.Mail.Messages()) - before; got != 0 {
			t.Errorf("sends to unknown and deactivated identifiers delivered %d messages; want 0", got)
		}
		if ch, err := e.DB.LatestCodeChallenge(ctx, e.app.ID, gone.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("LatestCodeChallenge(deactivated user) = %+v, %v; want ErrNotFound", ch, err)
		}

		for _, bad := range []string{"", "not an identifier", "alice@", "12"} {
			if _, err := e.SignIn.SendOTP(ctx, e.app, bad, nil, e.client); !errors.Is(err, appuser.ErrInvalidIdentifier) {
				t.Errorf("SendOTP(%q) = %v; want ErrInvalidIdentifier", bad, err)
			}
		}
		emailOnly := e.newApp(t, "Email only", func(s *tenant.AppSettings) { s.AllowedIdentifiers = &[]string{"email"} })
		if _, err := e.SignIn.SendOTP(ctx, emailOnly, "+14155552671", nil, e.client); !errors.Is(err, appuser.ErrIdentifierNotAllowed) {
			t.Errorf("SendOTP(phone, e-mail-only app) = %v; want ErrIdentifierNotAllowed", err)
		}
	})
}

// TestSendOTPPublicSignup checks the other side of the rule above: with
// sign-up open, a new identifier gets a user and a code.
func TestSendOTPPublicSignup(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		res, code := e.sendCode(t, "newcomer@example.com")
		u, err := e.Users.Lookup(ctx, e.app, "newcomer@example.com")
		if err != nil || u == nil || u.ID != res.UserID {
			t.Fatalf("Lookup(newcomer) = %v, %v; want the user %s", u, err, res.UserID)
		}
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, res.UserID, code, e.client); err != nil {
			t.Errorf("VerifyOTP(newcomer) = %v; want nil", err)
		}
		got, err := e.get(t, res.UserID)
		if err != nil || !got.EmailVerified || got.Status != store.StatusActive {
			t.Errorf("user after sign-in = %+v, %v; want active with a verified e-mail", got.AppUser, err)
		}
	})
}

func TestSendOTPRateLimited(t *testing.T) {
	servertest.ForEach(t, options(func(o *servertest.Options) {
		o.Limits.SendPerIdentifier = ratelimit.Rule{Limit: 3, Period: 10 * time.Minute}
	}), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		e.user(t, "alice@example.com")
		for range 3 {
			e.sendCode(t, "alice@example.com")
		}
		before := len(e.Mail.Messages())
		_, err := e.SignIn.SendOTP(ctx, e.app, "Alice@Example.com", nil, e.client)
		var rl *signin.RateLimitedError
		if !errors.As(err, &rl) || rl.RetryAfter <= 0 {
			t.Errorf("4th SendOTP within 10 min = %v; want *RateLimitedError with a wait", err)
		}
		if got := len(e.Mail.Messages()) - before; got != 0 {
			t.Errorf("refused send delivered %d messages; want 0", got)
		}
		e.Clock.Advance(10 * time.Minute)
		e.sendCode(t, "alice@example.com")
	})
}
