package signin_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// Test identities (server-sdk-compat §6) with the default settings: the
// addresses as a suite types them, their normalised forms, and the code.
const (
	testEmail     = "Live-Ruby-ab12-3+SCUTE_TEST@Example.com"
	testEmailNorm = "live-ruby-ab12-3+scute_test@example.com"
	testPhone     = "+1 415 555 0123"
	testPhoneNorm = "+14155550123"
	fixedCode     = "424242"
)

// acceptsTestIdentities is the app setting that opts in.
func acceptsTestIdentities(s *tenant.AppSettings) { s.TestIdentities = ptr(true) }

// sentSince fails the test when the courier was handed anything since it
// held before messages: nothing may reach a test identity.
func (e *env) sentSince(t testing.TB, before int, what string) {
	t.Helper()
	if msgs := e.Mail.Messages(); len(msgs) != before {
		t.Fatalf("%s: the courier was handed %d messages (the last to %s); want none", what, len(msgs)-before, msgs[len(msgs)-1].To)
	}
}

// A test identity of an app that accepts them signs in with the fixed code
// and is sent nothing, by e-mail and by SMS; the code is single-use like any
// other. The same address on an app that has not opted in is an ordinary
// identifier: it is sent a random code and the fixed one is wrong. Users and
// every event about a test identity say test: true, and only theirs.
func TestTestIdentitySignsInWithTheFixedCode(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, acceptsTestIdentities)
		other := e.newApp(t, "Other", nil)
		hook, otherHook := e.hook(t, e.app), e.hook(t, other)

		// An ordinary number of the opted-in app: a random code, sent; no flag.
		_, code := e.sendCode(t, "+14155550200")
		ordinary, _ := e.Users.Lookup(ctx, e.app, "+14155550200")
		if ordinary == nil || ordinary.Test {
			t.Fatalf("ordinary user = %+v; want a user without the test flag", ordinary)
		}
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, ordinary.ID, code, e.client); err != nil {
			t.Fatalf("VerifyOTP(ordinary user): %v", err)
		}
		for _, ev := range e.events(t, e.app, hook) {
			if _, ok := ev.Data["test"]; ok {
				t.Errorf("%s about an ordinary user carries test: %v", ev.Type, ev.Data)
			}
		}
		seen := len(e.events(t, e.app, hook))

		for _, tc := range []struct{ typed, stored string }{{testEmail, testEmailNorm}, {testPhone, testPhoneNorm}} {
			t.Run(tc.stored, func(t *testing.T) {
				before := len(e.Mail.Messages())
				res, err := e.SignIn.SendOTP(ctx, e.app, tc.typed, nil, e.client)
				if err != nil || !res.Sent {
					t.Fatalf("SendOTP(%q) = %+v, %v; want sent", tc.typed, res, err)
				}
				e.sentSince(t, before, "SendOTP")
				u, err := e.get(t, res.UserID)
				if err != nil || !u.Test || (u.Email != tc.stored && u.Phone != tc.stored) {
					t.Fatalf("user = %+v, %v; want %s, a test user", u, err, tc.stored)
				}
				if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, "000000", e.client); !errors.Is(err, signin.ErrInvalidCode) {
					t.Errorf("VerifyOTP(another code) = %v; want ErrInvalidCode", err)
				}
				ts, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, fixedCode, e.client)
				if err != nil || e.caller(t, ts.Access).User.ID != u.ID {
					t.Fatalf("VerifyOTP(fixed code) = %v; want a session of %s", err, u.ID)
				}
				if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, fixedCode, e.client); !errors.Is(err, signin.ErrInvalidCode) {
					t.Errorf("VerifyOTP(fixed code again) = %v; want ErrInvalidCode: a challenge's code works once", err)
				}
				e.sentSince(t, before, "the sign-in")
			})
		}
		evs := e.events(t, e.app, hook)[seen:]
		types := count(evs)
		for _, typ := range []string{"user.created", "verification.email.requested", "verification.sms.requested",
			"verification.email.verified", "verification.sms.verified", "challenge.created", "challenge.completed", "auth.login.failed"} {
			if types[typ] == 0 {
				t.Errorf("events about test identities = %v; want %s among them", types, typ)
			}
		}
		for _, ev := range evs {
			if ev.Data["test"] != true {
				t.Errorf("%s about a test identity = %v; want test: true", ev.Type, ev.Data)
			}
			if user, ok := ev.Data["user"].(map[string]any); ok && user["test"] != true {
				t.Errorf("%s user = %v; want test: true", ev.Type, user)
			}
		}

		// The app that has not opted in: a real code, and the fixed one is wrong.
		before := len(e.Mail.Messages())
		res, err := e.SignIn.SendOTP(ctx, other, testEmail, nil, e.client)
		if err != nil {
			t.Fatalf("SendOTP(other app): %v", err)
		}
		msgs := e.Mail.Messages()
		if len(msgs) != before+1 || msgs[before].To != testEmailNorm || msgs[before].Code == "" {
			t.Fatalf("SendOTP(other app) handed the courier %d messages; want the code to %s", len(msgs)-before, testEmailNorm)
		}
		sent := msgs[before].Code
		if sent != fixedCode { // one random code in a million is the fixed one: then it is right, as it should be
			if _, err := e.SignIn.VerifyOTP(ctx, other, res.UserID, fixedCode, e.client); !errors.Is(err, signin.ErrInvalidCode) {
				t.Errorf("VerifyOTP(other app, fixed code) = %v; want ErrInvalidCode", err)
			}
		}
		if _, err := e.SignIn.VerifyOTP(ctx, other, res.UserID, sent, e.client); err != nil {
			t.Errorf("VerifyOTP(other app, the code sent) = %v; want a session", err)
		}
		if u, err := e.Users.Get(ctx, servertest.Operator, other, res.UserID); err != nil || u.Test {
			t.Errorf("user of the other app = %+v, %v; want no test flag", u, err)
		}
		for _, ev := range e.events(t, other, otherHook) {
			if _, ok := ev.Data["test"]; ok {
				t.Errorf("%s on an app without test identities carries test: %v", ev.Type, ev.Data)
			}
		}
	})
}

// A test identity's code obeys the limits every code does: its challenge
// fails after the last wrong attempt, even for the fixed code, and sending
// to it spends the identifier's budget, though nothing is sent.
func TestTestIdentityLimits(t *testing.T) {
	servertest.ForEach(t, options(func(o *servertest.Options) {
		o.Limits.SendPerIdentifier = ratelimit.Rule{Limit: 2, Period: 10 * time.Minute}
	}), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, acceptsTestIdentities)
		res, err := e.SignIn.SendOTP(ctx, e.app, testEmail, nil, e.client)
		if err != nil {
			t.Fatalf("SendOTP: %v", err)
		}
		for i, c := range wrongCodes(fixedCode, 5) {
			if _, err := e.SignIn.VerifyOTP(ctx, e.app, res.UserID, c, e.client); err == nil {
				t.Fatalf("wrong code %d accepted", i+1)
			}
		}
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, res.UserID, fixedCode, e.client); !errors.Is(err, signin.ErrTooManyAttempts) {
			t.Errorf("VerifyOTP(fixed code after 5 wrong ones) = %v; want ErrTooManyAttempts", err)
		}
		if _, err := e.SignIn.SendOTP(ctx, e.app, testEmail, nil, e.client); err != nil {
			t.Fatalf("second SendOTP: %v", err)
		}
		var limited *signin.RateLimitedError
		if _, err := e.SignIn.SendOTP(ctx, e.app, testEmail, nil, e.client); !errors.As(err, &limited) {
			t.Errorf("third SendOTP in 10 minutes = %v; want RateLimitedError", err)
		}
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, res.UserID, fixedCode, e.client); err != nil {
			t.Errorf("VerifyOTP(fixed code, second challenge) = %v; want a session", err)
		}
		e.sentSince(t, 0, "the whole test")
	})
}

// Every other message to a test identity is not sent either, and every
// other code is the fixed one: a second factor's, a contact check's, a new
// number's; a magic link, an invitation and the notice of a changed number.
func TestTestIdentityCodeChallengesSendNothing(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, func(s *tenant.AppSettings) {
			acceptsTestIdentities(s)
			s.MFAPolicy, s.MFAMethodsAllowed = ptr("required"), &[]string{"sms_otp"}
		})
		hook := e.hook(t, e.app)
		u, _, err := e.Users.Create(ctx, servertest.Operator, e.app, appuser.CreateInput{Email: testEmail, Phone: testPhone})
		if err != nil || !u.Test {
			t.Fatalf("Create = %+v, %v; want a test user", u, err)
		}

		// First factor by e-mail, second by SMS: sent only on request, and then not at all.
		res, err := e.SignIn.SendOTP(ctx, e.app, testEmail, nil, e.client)
		if err != nil {
			t.Fatalf("SendOTP: %v", err)
		}
		first, err := e.SignIn.VerifyOTP(ctx, e.app, res.UserID, fixedCode, e.client)
		if err != nil || first.MFA == nil || first.MFA.Challenge.Method != "sms_otp" {
			t.Fatalf("VerifyOTP = %+v, %v; want an sms_otp second factor", first, err)
		}
		tok := first.MFA.Challenge.Token
		if _, err := e.SignIn.ResendChallenge(ctx, e.app, tok, e.client); err != nil {
			t.Fatalf("ResendChallenge: %v", err)
		}
		second, err := e.SignIn.VerifyChallenge(ctx, e.app, tok, signin.VerifyInput{Code: fixedCode}, e.client)
		if err != nil || second.Tokens == nil || second.Tokens.Access == "" {
			t.Fatalf("VerifyChallenge(mfa, fixed code) = %+v, %v; want tokens", second, err)
		}
		caller := e.caller(t, second.Tokens.Access)
		who := signin.Requester{Caller: &caller}

		for _, req := range []signin.ChallengeRequest{
			{Purpose: signin.PurposeVerifyContact, Method: signin.MethodEmailOTP},
			{Purpose: signin.PurposeStepUp, Method: signin.MethodSMSOTP},
			{Purpose: signin.PurposeChangeIdentifier, Method: signin.MethodSMSOTP, Identifier: "+1 312 555 0142"},
		} {
			v, err := e.SignIn.CreateChallenge(ctx, e.app, who, req, e.client)
			if err != nil {
				t.Fatalf("CreateChallenge(%s): %v", req.Purpose, err)
			}
			if _, err := e.SignIn.VerifyChallenge(ctx, e.app, v.Token, signin.VerifyInput{Code: fixedCode}, e.client); err != nil {
				t.Errorf("VerifyChallenge(%s, fixed code) = %v; want it completed", req.Purpose, err)
			}
		}
		if got, _ := e.get(t, u.ID); got.Phone != "+13125550142" || !got.Test {
			t.Errorf("after change_identifier user = %+v; want +13125550142, still a test user", got)
		}

		// A magic link is stored and answered as for anyone, but not sent.
		link, err := e.SignIn.SendMagicLink(ctx, e.app, testEmail, nil, false, e.client)
		if err != nil || !link.Sent || link.UserID != u.ID {
			t.Errorf("SendMagicLink = %+v, %v; want it answered as sent, for %s", link, err, u.ID)
		}
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, link.ChallengeID, e.client); !errors.Is(err, signin.ErrMagicLinkPending) {
			t.Errorf("MagicLinkStatus = %v; want ErrMagicLinkPending", err)
		}

		// An invitee is not sent the invitation; the fixed code lets them in.
		invitee, _, err := e.Users.Invite(ctx, servertest.Operator, e.app, appuser.CreateInput{Identifier: "invitee+scute_test@example.com"})
		if err != nil || invitee.Status != appuser.StatusPending || !invitee.Test {
			t.Fatalf("Invite = %+v, %v; want a pending test user", invitee, err)
		}
		if _, err := e.SignIn.SendOTP(ctx, e.app, "invitee+scute_test@example.com", nil, e.client); err != nil {
			t.Fatalf("SendOTP(invitee): %v", err)
		}
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, invitee.ID, fixedCode, e.client); err != nil {
			t.Fatalf("VerifyOTP(invitee, fixed code): %v", err)
		}
		if got, _ := e.get(t, invitee.ID); got.Status != appuser.StatusActive {
			t.Errorf("invitee after the fixed code = %s; want active", got.Status)
		}

		// The link nobody was sent expires, as a test identity's.
		e.Clock.Advance(11 * time.Minute)
		if err := e.SignIn.ExpireChallenges(ctx); err != nil {
			t.Fatalf("ExpireChallenges: %v", err)
		}

		e.sentSince(t, 0, "the whole test")
		evs := e.events(t, e.app, hook)
		if n := count(evs)["verification.email.expired"]; n != 1 {
			t.Errorf("events = %v; want the link's verification.email.expired", count(evs))
		}
		for _, ev := range evs {
			if ev.Data["test"] != true {
				t.Errorf("%s about a test identity = %v; want test: true", ev.Type, ev.Data)
			}
		}
	})
}

// Passkey events about a test user carry the flag too: a passkey added, a
// sign-in with it, and a refused one (a cloned key) with its suspension.
func TestTestIdentityPasskeyEvents(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, acceptsTestIdentities)
		hook := e.hook(t, e.app)
		u := e.user(t, testEmail)
		if _, err := e.SignIn.SendOTP(ctx, e.app, testEmail, nil, e.client); err != nil {
			t.Fatalf("SendOTP: %v", err)
		}
		ts, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, fixedCode, e.client)
		if err != nil {
			t.Fatalf("VerifyOTP(fixed code): %v", err)
		}
		c := e.caller(t, ts.Access)
		a := e.registerPasskey(t, c)
		login := func() error {
			t.Helper()
			options, err := e.SignIn.BeginPasskeyLogin(ctx, e.app, testEmail, e.client)
			if err != nil {
				t.Fatal(err)
			}
			answer, err := a.Get(string(options))
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.SignIn.FinishPasskeyLogin(ctx, e.app, []byte(answer), e.client)
			return err
		}
		if err := login(); err != nil {
			t.Fatalf("passkey sign-in: %v", err)
		}
		a.Auth.Credentials[0].Counter = 0 // a copy of the key that lags behind
		if err := login(); err == nil {
			t.Fatalf("passkey sign-in with a counter gone back succeeded")
		}
		evs := e.events(t, e.app, hook)
		types := count(evs)
		if types["user.updated"] != 2 || types["challenge.completed"] < 2 || types["auth.login.failed"] != 1 || types["challenge.failed"] != 1 {
			t.Errorf("events = %v; want the passkey's two user.updated, its sign-in, and the refusal", types)
		}
		for _, ev := range evs {
			if ev.Data["test"] != true {
				t.Errorf("%s about a test identity = %v; want test: true", ev.Type, ev.Data)
			}
		}
	})
}

// An app that stops accepting test identities stops accepting the fixed
// code at once, even for a code challenge opened while it accepted them:
// by /otps/verify and by the challenge's own verify.
func TestTestIdentityOptOutRefusesOpenChallenges(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, acceptsTestIdentities)
		res, err := e.SignIn.SendOTP(ctx, e.app, testEmail, nil, e.client)
		if err != nil {
			t.Fatalf("SendOTP: %v", err)
		}
		if _, err := e.SignIn.SendOTP(ctx, e.app, testPhone, nil, e.client); err != nil { // makes the user
			t.Fatalf("SendOTP(test phone): %v", err)
		}
		ch, err := e.SignIn.CreateChallenge(ctx, e.app, signin.Requester{}, signin.ChallengeRequest{
			Purpose: signin.PurposeAuthenticate, Method: signin.MethodSMSOTP, Identifier: testPhone}, e.client)
		if err != nil {
			t.Fatalf("CreateChallenge(test phone): %v", err)
		}
		app, err := e.Tenants.UpdateApp(ctx, servertest.Operator, e.ws.ID, e.app.ID, tenant.AppSettings{TestIdentities: ptr(false)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.SignIn.VerifyOTP(ctx, app, res.UserID, fixedCode, e.client); !errors.Is(err, signin.ErrInvalidCode) {
			t.Errorf("VerifyOTP(fixed code after the app opted out) = %v; want ErrInvalidCode", err)
		}
		if _, err := e.SignIn.VerifyChallenge(ctx, app, ch.Token, signin.VerifyInput{Code: fixedCode}, e.client); !errors.Is(err, signin.ErrInvalidCode) {
			t.Errorf("VerifyChallenge(fixed code after the app opted out) = %v; want ErrInvalidCode", err)
		}
		// Opted in again, the still-open challenges take it.
		app, err = e.Tenants.UpdateApp(ctx, servertest.Operator, e.ws.ID, e.app.ID, tenant.AppSettings{TestIdentities: ptr(true)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.SignIn.VerifyOTP(ctx, app, res.UserID, fixedCode, e.client); err != nil {
			t.Errorf("VerifyOTP(fixed code once opted in again) = %v; want a session", err)
		}
	})
}
