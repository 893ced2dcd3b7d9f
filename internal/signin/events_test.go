package signin_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
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

// TestQuietAppHearsOfItsFirstEndpoint: a replica that found an app without
// webhook endpoints skips reading them on its sign-ins for a while
// (webhook.QuietFor); when another replica adds the app's first endpoint,
// it hears of it by PostgreSQL's notification within a fraction of that,
// and on SQLite once the while is over. No event is recorded for the
// endpoint before it exists, and every one after.
func TestQuietAppHearsOfItsFirstEndpoint(t *testing.T) {
	servertest.ForEach(t, options(func(o *servertest.Options) { o.Serve, o.RealClock = true, true }), func(t *testing.T, sys *servertest.System) {
		e := newEnv(t, sys, nil)
		peer := servertest.New(t, sys.DB.Kind(), options(func(o *servertest.Options) { o.Peer, o.Serve, o.RealClock = sys, true, true }))
		if sys.DB.Kind() == store.Postgres {
			for deadline := time.Now().Add(10 * time.Second); !peer.Listening(); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the peer does not listen for endpoint changes after 10 s")
				}
			}
		}
		n := 0
		send := func() {
			t.Helper()
			n++
			if _, err := peer.SignIn.SendOTP(t.Context(), e.app, fmt.Sprintf("quiet%d@example.com", n), nil, e.client); err != nil {
				t.Fatal(err)
			}
		}
		send() // the peer finds no endpoint and remembers it
		created := time.Now()
		ep := e.hook(t, e.app)
		limit := webhook.QuietFor / 2
		if sys.DB.Kind() != store.Postgres {
			limit = webhook.QuietFor + time.Second
		}
		for {
			send()
			if len(e.events(t, e.app, ep)) > 0 {
				break
			}
			if time.Since(created) > limit {
				t.Fatalf("the peer recorded no event for the new endpoint %s after it was created; want within %s", time.Since(created).Round(time.Millisecond), limit)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("the peer recorded events for the new endpoint %s after it was created", time.Since(created).Round(time.Millisecond))
	})
}
