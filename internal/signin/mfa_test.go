package signin_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// enrollTOTP gives the signed-in user of access a verified authenticator
// app and returns its secret.
func (e *env) enrollTOTP(t testing.TB, access string) string {
	t.Helper()
	c := e.caller(t, access)
	en, err := e.SignIn.EnrollTOTP(t.Context(), e.app, c, "phone", "")
	if err != nil {
		t.Fatalf("EnrollTOTP: %v", err)
	}
	code, _ := totp.GenerateCode(en.Secret, e.Clock.Now())
	if _, err := e.SignIn.VerifyEnrollment(t.Context(), e.app, c, en.Enrollment.ID, code, e.client); err != nil {
		t.Fatalf("VerifyEnrollment: %v", err)
	}
	return en.Secret
}

// The decision every first factor goes through: who is asked for a second
// factor, by which method, and who is let through flagged.
func TestMFAGate(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		for _, tc := range []struct {
			name       string
			policy     string
			allowed    []string
			enroll     bool
			identifier string
			wantMethod string // "" = tokens
			wantAvail  []string
			wantFlag   bool // mfa_enrollment_required
		}{
			{name: "off, enrolled", policy: "off", enroll: true, identifier: "off@example.com"},
			{name: "optional, nothing enrolled", policy: "optional", identifier: "opt0@example.com"},
			{name: "optional, authenticator app", policy: "optional", enroll: true, identifier: "opt1@example.com",
				wantMethod: "totp", wantAvail: []string{"totp"}},
			{name: "required, nothing possible", policy: "required", identifier: "req0@example.com", wantFlag: true},
			{name: "required, SMS allowed but the first factor was SMS", policy: "required", allowed: []string{"totp", "sms_otp"},
				identifier: "+14155550101", wantFlag: true},
			{name: "required, e-mail allowed after an SMS code", policy: "required", allowed: []string{"totp", "email_otp"},
				identifier: "+14155550102", wantMethod: "email_otp", wantAvail: []string{"email_otp"}},
			{name: "required, authenticator app and e-mail", policy: "required", allowed: []string{"email_otp", "totp"},
				enroll: true, identifier: "+14155550103", wantMethod: "totp", wantAvail: []string{"totp", "email_otp"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e.app = e.newApp(t, tc.name, nil)
				u := e.user(t, tc.identifier)
				if tc.identifier[0] == '+' { // give phone users an e-mail address too
					u, _ = e.Users.Update(ctx, servertest.Operator, e.app, u.ID, appuser.UpdateInput{Email: ptr("p" + tc.identifier[1:] + "@example.com")})
				}
				if tc.enroll {
					e.enrollTOTP(t, e.signIn(t, u).Access)
				}
				a, err := e.Tenants.UpdateOwnApp(ctx, servertest.Operator, e.app.ID, tenant.AppSettings{MFAPolicy: &tc.policy,
					MFAMethodsAllowed: orNil(tc.allowed)})
				if err != nil {
					t.Fatalf("UpdateOwnApp: %v", err)
				}
				e.app = a
				e.Clock.Advance(time.Minute)
				_, code := e.sendCode(t, tc.identifier) // the first factor: a code to this identifier
				got, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, code, e.client)
				if err != nil {
					t.Fatalf("VerifyOTP: %v", err)
				}
				switch {
				case tc.wantMethod == "" && (got.MFA != nil || got.Access == ""):
					t.Fatalf("sign-in = %+v; want tokens", got)
				case tc.wantMethod != "" && (got.MFA == nil || got.Access != "" || got.Refresh != ""):
					t.Fatalf("sign-in = %+v; want an MFA challenge and no tokens", got)
				case tc.wantMethod != "":
					ch := got.MFA.Challenge
					if ch.Method != tc.wantMethod || ch.Purpose != "mfa" || ch.Status != "pending" || !slices.Equal(got.MFA.AvailableMethods, tc.wantAvail) {
						t.Errorf("MFA = %+v; want method %s, available %v", got.MFA, tc.wantMethod, tc.wantAvail)
					}
					// A code second factor is sent only when asked for.
					if want := tc.wantMethod == "email_otp"; ch.DeliveryRequired != want {
						t.Errorf("delivery_required = %v; want %v", ch.DeliveryRequired, want)
					}
				}
				if got.MFAEnrollmentRequired != tc.wantFlag {
					t.Errorf("mfa_enrollment_required = %v; want %v", got.MFAEnrollmentRequired, tc.wantFlag)
				}
			})
		}
	})
}

// A passkey sign-in that verified the user is two factors already: it is
// never asked for another, whatever the policy.
func TestMFAGatePasskeyWithUserVerification(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "pk@example.com")
		access := e.signIn(t, u).Access
		e.enrollTOTP(t, access)
		c := e.caller(t, access)
		a := e.registerPasskey(t, c)
		policy := "required"
		var err error
		if e.app, err = e.Tenants.UpdateOwnApp(ctx, servertest.Operator, e.app.ID, tenant.AppSettings{MFAPolicy: &policy}); err != nil {
			t.Fatal(err)
		}
		login, err := e.SignIn.BeginPasskeyLogin(ctx, e.app, "pk@example.com", e.client)
		if err != nil {
			t.Fatal(err)
		}
		answer, err := a.Get(string(login))
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.SignIn.FinishPasskeyLogin(ctx, e.app, []byte(answer), e.client)
		if err != nil || got.MFA != nil || got.Access == "" {
			t.Fatalf("passkey sign-in = %+v, %v; want tokens", got, err)
		}
		// The e-mail code is one factor: the authenticator app (or the
		// passkey) is asked for.
		if got := e.signIn(t, u); got.MFA == nil || !slices.Equal(got.MFA.AvailableMethods, []string{"totp", "webauthn", "backup_code"}[:2]) {
			t.Errorf("code sign-in = %+v; want an MFA challenge offering totp and webauthn", got.MFA)
		}
	})
}

// One TOTP code answers one challenge: of racing answers with the same
// code on two sign-ins, exactly one wins (security R-TOTP-3).
func TestTOTPCodeOnceUnderRace(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "race@example.com")
		secret := e.enrollTOTP(t, e.signIn(t, u).Access)
		policy := "optional"
		var err error
		if e.app, err = e.Tenants.UpdateOwnApp(ctx, servertest.Operator, e.app.ID, tenant.AppSettings{MFAPolicy: &policy}); err != nil {
			t.Fatal(err)
		}
		e.Clock.Advance(30 * time.Second) // past the step the enrolment used
		// A sign-in's second factor and a backend's step-up, both by TOTP.
		got := e.signIn(t, u)
		if got.MFA == nil {
			t.Fatalf("sign-in = %+v; want an MFA challenge", got)
		}
		op := servertest.Operator
		step, err := e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{Principal: &op},
			signin.ChallengeRequest{Purpose: "step_up", Method: "totp", AppUserID: u.ID}, e.client)
		if err != nil {
			t.Fatalf("CreateChallenge(step_up, totp): %v", err)
		}
		tokens := []string{got.MFA.Challenge.Token, step.Token}
		code, _ := totp.GenerateCode(secret, e.Clock.Now())
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			won  int
			errs []error
		)
		for _, tok := range tokens {
			wg.Go(func() {
				res, err := e.SignIn.VerifyChallenge(ctx, e.app, tok, signin.VerifyInput{Code: code}, e.client)
				mu.Lock()
				defer mu.Unlock()
				if err == nil && res.Challenge.Status == "completed" {
					won++
				} else {
					errs = append(errs, err)
				}
			})
		}
		wg.Wait()
		if won != 1 || len(errs) != 1 || !errors.Is(errs[0], signin.ErrCodeUsed) {
			t.Errorf("two answers with one code: %d won, refusals %v; want 1 won and 1 ErrCodeUsed (a replay says so)", won, errs)
		}
	})
}

func orNil(s []string) *[]string {
	if s == nil {
		return nil
	}
	return &s
}

// With enumeration_protection an unknown identifier gets a decoy that
// answers every challenge route as a pending challenge would, sends
// nothing, and expires; passkey and push sign-in challenges, which would
// show whether an account has a passkey or a device, are refused for all.
func TestChallengeDecoy(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, func(s *tenant.AppSettings) { s.EnumerationProtection = ptr(true) })
		before := len(e.Mail.Messages())
		v, err := e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{},
			signin.ChallengeRequest{Purpose: "authenticate", Method: "email_otp", Identifier: "nobody@example.com"}, e.client)
		if err != nil || v.Status != "pending" || v.Method != "email_otp" || v.Token == "" || v.TimeRemaining != 600 {
			t.Fatalf("CreateChallenge(unknown) = %+v, %v; want a pending decoy", v, err)
		}
		if got, err := e.SignIn.GetChallenge(ctx, e.app, v.Token); err != nil || got.Status != "pending" || got.Method != "email_otp" {
			t.Errorf("GetChallenge(decoy) = %+v, %v; want pending email_otp", got, err)
		}
		if _, err := e.SignIn.VerifyChallenge(ctx, e.app, v.Token, signin.VerifyInput{Code: "123456"}, e.client); !errors.Is(err, signin.ErrInvalidCode) {
			t.Errorf("VerifyChallenge(decoy) = %v; want ErrInvalidCode", err)
		}
		if got, err := e.SignIn.ResendChallenge(ctx, e.app, v.Token, e.client); err != nil || got.Status != "pending" {
			t.Errorf("ResendChallenge(decoy) = %+v, %v; want pending", got, err)
		}
		if n := len(e.Mail.Messages()) - before; n != 0 {
			t.Errorf("a decoy sent %d messages; want none", n)
		}
		e.Clock.Advance(11 * time.Minute)
		if got, err := e.SignIn.GetChallenge(ctx, e.app, v.Token); err != nil || got.Status != "expired" || got.TimeRemaining != 0 {
			t.Errorf("GetChallenge(expired decoy) = %+v, %v; want expired", got, err)
		}
		var closed *signin.ChallengeClosedError
		if _, err := e.SignIn.CancelChallenge(ctx, e.app, v.Token); !errors.As(err, &closed) || closed.Status != "expired" {
			t.Errorf("CancelChallenge(expired decoy) = %v; want closed (expired)", err)
		}
		e.user(t, "known@example.com")
		for _, m := range []string{"webauthn", "push"} {
			for _, id := range []string{"known@example.com", "nobody@example.com"} {
				var inv *errs.Invalid
				_, err := e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{},
					signin.ChallengeRequest{Purpose: "authenticate", Method: m, Identifier: id}, e.client)
				if !errors.As(err, &inv) || inv.Field != "method" {
					t.Errorf("CreateChallenge(%s, %s) = %v; want invalid method, the same for both", m, id, err)
				}
			}
		}
	})
}

// TOTP has a consecutive-failure lock of its own: at the threshold the
// method answers ErrFactorLocked even for a right code, backup codes still
// work, and a passed second factor (here the backup code) lifts the lock.
func TestFactorLock(t *testing.T) {
	servertest.ForEach(t, options(func(o *servertest.Options) { o.Limits.CodeLockAfter = 6 }), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "lock@example.com")
		access := e.signIn(t, u).Access
		secret := e.enrollTOTP(t, access)
		codes, err := e.SignIn.NewBackupCodes(ctx, e.app, e.caller(t, access), "")
		if err != nil {
			t.Fatal(err)
		}
		op := servertest.Operator
		stepUp := func(method string) string {
			t.Helper()
			v, err := e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{Principal: &op},
				signin.ChallengeRequest{Purpose: "step_up", Method: method, AppUserID: u.ID}, e.client)
			if err != nil {
				t.Fatalf("CreateChallenge(step_up, %s): %v", method, err)
			}
			return v.Token
		}
		answer := func(tok, code string) error {
			_, err := e.SignIn.VerifyChallenge(ctx, e.app, tok, signin.VerifyInput{Code: code}, e.client)
			return err
		}
		// Six wrong TOTP codes over two challenges (five fail the first).
		tok := stepUp("totp")
		for range 5 {
			_ = answer(tok, "000000")
		}
		tok = stepUp("totp")
		if err := answer(tok, "000000"); !errors.Is(err, signin.ErrInvalidCode) {
			t.Fatalf("sixth wrong TOTP code = %v; want ErrInvalidCode (compared: it reaches the lock)", err)
		}
		if err := answer(tok, "000000"); !errors.Is(err, signin.ErrFactorLocked) {
			t.Fatalf("seventh TOTP code = %v; want ErrFactorLocked", err)
		}
		e.Clock.Advance(30 * time.Second)
		right, _ := totp.GenerateCode(secret, e.Clock.Now())
		if err := answer(stepUp("totp"), right); !errors.Is(err, signin.ErrFactorLocked) {
			t.Fatalf("right TOTP code while locked = %v; want ErrFactorLocked", err)
		}
		if err := answer(stepUp("backup_code"), codes[0]); err != nil {
			t.Fatalf("backup code while TOTP is locked = %v; want it to work", err)
		}
		if err := answer(stepUp("totp"), right); err != nil {
			t.Fatalf("right TOTP code after a passed backup code = %v; want the lock lifted", err)
		}
	})
}

// A magic-link sign-in challenge's token is its poll handle, and the
// sweep closes an unanswered code challenge as expired with its events.
func TestChallengeLinkAndExpiry(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		ep := e.hook(t, e.app)
		e.user(t, "link@example.com")
		link, err := e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{},
			signin.ChallengeRequest{Purpose: "authenticate", Method: "magic_link", Identifier: "link@example.com"}, e.client)
		if err != nil || link.MatchNumber < 10 {
			t.Fatalf("CreateChallenge(magic_link) = %+v, %v", link, err)
		}
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, link.Token, e.client); !errors.Is(err, signin.ErrMagicLinkPending) {
			t.Errorf("MagicLinkStatus(challenge token) = %v; want pending", err)
		}
		code, err := e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{},
			signin.ChallengeRequest{Purpose: "authenticate", Method: "email_otp", Identifier: "link@example.com", Intent: "checkout"}, e.client)
		if err != nil {
			t.Fatal(err)
		}
		before := len(e.events(t, e.app, ep))
		e.Clock.Advance(11 * time.Minute)
		if err := e.SignIn.ExpireChallenges(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := e.SignIn.GetChallenge(ctx, e.app, code.Token); err != nil || got.Status != "expired" || got.TimeRemaining != 0 {
			t.Errorf("GetChallenge(after expiry) = %+v, %v; want expired", got, err)
		}
		var failed, expired, intents int
		for _, ev := range e.events(t, e.app, ep)[before:] {
			switch {
			case ev.Type == "challenge.failed" && ev.Data["status"] == "expired" && ev.Data["reason"] == "expired":
				failed++
			case ev.Type == "verification.email.expired":
				expired++
				if ev.Data["intent"] == "checkout" {
					intents++
				}
			}
		}
		if failed != 2 || expired != 2 || intents != 1 { // the link and the code, whose intent the events carry
			t.Errorf("expiry events: %d challenge.failed (expired), %d verification.email.expired (%d with the intent); want 2, 2 and 1",
				failed, expired, intents)
		}
	})
}

// A push vouches only as far as the session that approves it: a sign-in
// by a push approved from an hour-old session is no fresher than that
// session, so it cannot make sensitive changes (a stolen old session cannot
// mint itself a recent one).
func TestPushNoFresherThanItsApprover(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "push@example.com")
		first := e.signIn(t, u)
		signedIn := e.Clock.Now()
		e.Clock.Advance(time.Hour)
		next, err := e.SignIn.Refresh(ctx, e.app, first.Refresh) // the old session, still alive
		if err != nil {
			t.Fatal(err)
		}
		approver := e.caller(t, next.Access)
		v, err := e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{},
			signin.ChallengeRequest{Purpose: "authenticate", Method: "push", Identifier: "push@example.com"}, e.client)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.SignIn.ApprovePush(ctx, e.app, approver, v.ID, v.MatchNumber); err != nil {
			t.Fatalf("ApprovePush: %v", err)
		}
		res, err := e.SignIn.VerifyChallenge(ctx, e.app, v.Token, signin.VerifyInput{}, e.client)
		if err != nil || res.Tokens == nil {
			t.Fatalf("collect push = %+v, %v", res, err)
		}
		pushed := e.caller(t, res.Tokens.Access)
		if got := pushed.Session.Authenticated(); !got.Equal(signedIn.UTC().Truncate(time.Microsecond)) {
			t.Errorf("the push session's auth_time = %v; want its approver's, %v", got, signedIn)
		}
		var stale *signin.StepUpRequiredError
		_, err = e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{Caller: &pushed},
			signin.ChallengeRequest{Purpose: "change_identifier", Method: "email_otp", Identifier: "thief@example.com"}, e.client)
		if !errors.As(err, &stale) {
			t.Errorf("change_identifier from the push session = %v; want verification required", err)
		}
	})
}

// A step-up in the session by an authenticator app makes the session
// recent, but not for removing that app; another factor's can.
func TestStepUpCannotRemoveItsOwnFactor(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "own@example.com")
		set := e.signIn(t, u)
		secret := e.enrollTOTP(t, set.Access)
		methods, err := e.SignIn.MFAMethods(ctx, e.app, e.caller(t, set.Access))
		if err != nil || len(methods.Methods) != 1 {
			t.Fatalf("MFAMethods = %+v, %v", methods, err)
		}
		id := methods.Methods[0].ID
		e.Clock.Advance(11 * time.Minute)
		r2 := e.refreshed(t, set.Refresh)
		c := e.caller(t, r2.Access)
		v, err := e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{Caller: &c},
			signin.ChallengeRequest{Purpose: "step_up", Method: "totp"}, e.client)
		if err != nil {
			t.Fatal(err)
		}
		code, _ := totp.GenerateCode(secret, e.Clock.Now())
		res, err := e.SignIn.VerifyChallenge(ctx, e.app, v.Token, signin.VerifyInput{Code: code}, e.client)
		if err != nil || res.Tokens == nil {
			t.Fatalf("step-up = %+v, %v", res, err)
		}
		// The step-up spent the session's refresh token into its own: the old
		// one now answers the step-up's (grace window), so the family stays
		// one chain and reuse after the window is still detected.
		if again, err := e.SignIn.Refresh(ctx, e.app, r2.Refresh); err != nil || again.Refresh != res.Tokens.Refresh {
			t.Errorf("the pre-step-up refresh token = %v, same as the step-up's: %v; want the step-up's", err, err == nil && again.Refresh == res.Tokens.Refresh)
		}
		stepped := e.caller(t, res.Tokens.Access)
		var stale *signin.StepUpRequiredError
		if err := e.SignIn.DeleteMFAMethod(ctx, e.app, stepped, id, ""); !errors.As(err, &stale) {
			t.Errorf("removing the app that answered the step-up = %v; want verification required", err)
		}
		codes, err := e.SignIn.NewBackupCodes(ctx, e.app, stepped, "")
		if err != nil {
			t.Fatalf("NewBackupCodes in the stepped-up session: %v", err)
		}
		v, err = e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{Caller: &stepped},
			signin.ChallengeRequest{Purpose: "step_up", Method: "backup_code"}, e.client)
		if err != nil {
			t.Fatal(err)
		}
		res, err = e.SignIn.VerifyChallenge(ctx, e.app, v.Token, signin.VerifyInput{Code: codes[0]}, e.client)
		if err != nil || res.Tokens == nil {
			t.Fatalf("step-up by backup code = %+v, %v", res, err)
		}
		if err := e.SignIn.DeleteMFAMethod(ctx, e.app, e.caller(t, res.Tokens.Access), id, ""); err != nil {
			t.Errorf("removing the app after a step-up by a backup code = %v; want nil", err)
		}
		// Each change of how the user signs in was told to their address,
		// queued with the change itself (security R-MFA-3).
		var told []string
		for _, m := range e.Mail.Messages() {
			if m.To == "own@example.com" && strings.HasPrefix(m.Subject, "A change to how you sign in") {
				if m.Code != "" || m.Link != "" {
					t.Errorf("notice %q carries a code or link", m.Text)
				}
				told = append(told, m.Text)
			}
		}
		for _, want := range []string{"An authenticator app was added", "New backup codes were made", "A backup code was used", "An authenticator app was removed"} {
			if !slices.ContainsFunc(told, func(text string) bool { return strings.Contains(text, want) }) {
				t.Errorf("notices = %q; want one saying %q", told, want)
			}
		}
	})
}

// Strangers' refused second-factor requests for a user do not use up the
// budget of the user's own step-ups.
func TestChallengeBudgetsApart(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "budget@example.com")
		c := e.caller(t, e.signIn(t, u).Access)
		for range 30 {
			_, _ = e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{},
				signin.ChallengeRequest{Purpose: "mfa", Method: "totp", AppUserID: u.ID}, signin.Client{IP: "203.0.113.9", UserAgent: "x"})
		}
		if _, err := e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{Caller: &c},
			signin.ChallengeRequest{Purpose: "step_up", Method: "email_otp"}, e.client); err != nil {
			t.Errorf("the user's own step-up after strangers' refused requests = %v; want nil", err)
		}
	})
}

// refreshed rotates a refresh token and fails the test if it is refused.
func (e *env) refreshed(t testing.TB, refresh string) signin.TokenSet {
	t.Helper()
	next, err := e.SignIn.Refresh(t.Context(), e.app, refresh)
	if err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	return next
}

// A change_identifier started in a session ends with it: revoked (signed
// out everywhere, say), its code no longer changes anything.
func TestChangeIdentifierEndsWithItsSession(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "move@example.com")
		c := e.caller(t, e.signIn(t, u).Access)
		v, err := e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{Caller: &c},
			signin.ChallengeRequest{Purpose: "change_identifier", Method: "email_otp", Identifier: "moved@example.com"}, e.client)
		if err != nil {
			t.Fatal(err)
		}
		code := e.Mail.Messages()[len(e.Mail.Messages())-1].Code
		if err := e.DB.RevokeSession(ctx, e.app.ID, u.ID, c.Session.ID, e.Clock.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.SignIn.VerifyChallenge(ctx, e.app, v.Token, signin.VerifyInput{Code: code}, e.client); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("verify after the session was revoked = %v; want ErrUnauthenticated", err)
		}
		if got, _ := e.get(t, u.ID); got.Email != "move@example.com" {
			t.Errorf("e-mail = %q; want it unchanged", got.Email)
		}
	})
}

// Wrong TOTP and backup codes spend the hourly budget of wrong codes per
// user and source, as e-mail and SMS codes do: after ten from one source,
// every code from it is refused for the hour, a right one too, while the
// user's other sources are unaffected.
func TestFactorCodesHourlyBudget(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "budget2@example.com")
		access := e.signIn(t, u).Access
		e.enrollTOTP(t, access)
		codes, err := e.SignIn.NewBackupCodes(ctx, e.app, e.caller(t, access), "")
		if err != nil {
			t.Fatal(err)
		}
		op := servertest.Operator
		answer := func(method, code string, c signin.Client) error {
			t.Helper()
			v, err := e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{Principal: &op},
				signin.ChallengeRequest{Purpose: "step_up", Method: method, AppUserID: u.ID}, c)
			if err != nil {
				t.Fatalf("CreateChallenge(%s): %v", method, err)
			}
			_, err = e.SignIn.VerifyChallenge(ctx, e.app, v.Token, signin.VerifyInput{Code: code}, c)
			return err
		}
		guesser := signin.Client{IP: "203.0.113.66", UserAgent: e.client.UserAgent}
		for i := range 10 {
			method := "totp"
			if i%2 == 1 {
				method = "backup_code"
			}
			if err := answer(method, "000000", guesser); !errors.Is(err, signin.ErrInvalidCode) {
				t.Fatalf("wrong code %d = %v; want ErrInvalidCode", i+1, err)
			}
		}
		if err := answer("backup_code", codes[0], guesser); !errors.Is(err, signin.ErrTooManyAttempts) {
			t.Errorf("right backup code from the source that spent its budget = %v; want ErrTooManyAttempts", err)
		}
		if err := answer("backup_code", codes[0], e.client); err != nil {
			t.Errorf("right backup code from the user's own source = %v; want it to work", err)
		}
	})
}
