package signin_test

import (
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// TestEvents checks that sign-in emits its webhook events where things
// happen, in the transactions of the changes: requested and verified for
// codes and links, auth.login.failed for wrong codes and spent links, failed
// for the fifth wrong code, expired from the sweep. The events are the
// system's own, as an endpoint of the app receives them.
func TestEvents(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		ep := e.hook(t, e.app)

		// A magic link, opened, then opened again.
		_, tok := e.sendLink(t, "link@example.com", false)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, e.client); err != nil {
			t.Fatalf("AuthenticateMagicLink: %v", err)
		}
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, e.client); err == nil {
			t.Fatal("a spent link signed in again")
		}
		// Five wrong codes fail a challenge.
		res, code := e.sendCode(t, "codes@example.com")
		for _, c := range wrongCodes(code, 5) {
			_, _ = e.SignIn.VerifyOTP(ctx, e.app, res.UserID, c, e.client)
		}
		// A code nobody enters expires.
		e.sendCode(t, "late@example.com")
		e.Clock.Advance(11 * time.Minute)
		if err := e.SignIn.ExpireChallenges(ctx); err != nil {
			t.Fatalf("ExpireChallenges: %v", err)
		}

		got := count(e.events(t, e.app, ep))
		want := map[string]int{
			webhook.UserCreated: 3,
			webhook.Verification("email", webhook.OutcomeRequested): 3,
			webhook.Verification("email", webhook.OutcomeVerified):  1,
			webhook.Verification("email", webhook.OutcomeFailed):    1,
			webhook.Verification("email", webhook.OutcomeExpired):   1,
			webhook.AuthLoginFailed:                                 6, // five wrong codes and one spent link
			// Every code and link is a challenge too.
			webhook.ChallengeCreated:   3,
			webhook.ChallengeCompleted: 1,
			webhook.ChallengeFailed:    2, // the failed code and the expired one
		}
		for typ, n := range want {
			if got[typ] != n {
				t.Errorf("%s events = %d; want %d (all: %v)", typ, got[typ], n, got)
			}
		}
		for typ, n := range got {
			if _, ok := want[typ]; !ok {
				t.Errorf("%d unexpected %s events (all: %v)", n, typ, got)
			}
		}
	})
}
