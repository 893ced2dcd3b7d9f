package signin_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// TestMagicLinkDecoyHandle: with sign-up closed, a link request for an
// unknown address sends nothing, yet its poll handle answers exactly like an
// unopened real link (pending, paced, then gone after the link's lifetime).
func TestMagicLinkDecoyHandle(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		closed := e.newApp(t, "Closed", func(s *tenant.AppSettings) { s.PublicSignup = ptr(false) })
		res, err := e.SignIn.SendMagicLink(ctx, closed, "nobody@example.com", nil, false, e.client)
		if err != nil {
			t.Fatalf("SendMagicLink(unknown) = %v", err)
		}
		if n := len(e.Mail.Messages()); n != 0 {
			t.Fatalf("messages sent = %d; want 0", n)
		}
		real := e.newApp(t, "Open", nil)
		realRes, err := e.SignIn.SendMagicLink(ctx, real, "someone@example.com", nil, false, e.client)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.ChallengeID) != len(realRes.ChallengeID) {
			t.Errorf("decoy handle length %d; real %d", len(res.ChallengeID), len(realRes.ChallengeID))
		}
		for name, tc := range map[string]struct {
			app    store.App
			handle string
		}{"decoy": {closed, res.ChallengeID}, "real": {real, realRes.ChallengeID}} {
			if _, err := e.SignIn.MagicLinkStatus(ctx, tc.app, tc.handle, e.client); !errors.Is(err, signin.ErrMagicLinkPending) {
				t.Errorf("%s: first poll = %v; want ErrMagicLinkPending", name, err)
			}
			var rl *signin.RateLimitedError
			if _, err := e.SignIn.MagicLinkStatus(ctx, tc.app, tc.handle, e.client); !errors.As(err, &rl) {
				t.Errorf("%s: immediate second poll = %v; want *RateLimitedError", name, err)
			}
		}
		e.Clock.Advance(time.Duration(closed.MagicLinkExpiration)*time.Second + time.Second)
		if _, err := e.SignIn.MagicLinkStatus(ctx, closed, res.ChallengeID, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("decoy after its lifetime = %v; want ErrMagicLinkNotFound", err)
		}
		forged := []byte(res.ChallengeID)
		forged[3] ^= 1
		if _, err := e.SignIn.MagicLinkStatus(ctx, closed, string(forged), e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("altered decoy = %v; want ErrMagicLinkNotFound", err)
		}
	})
}

// TestRefreshGraceOnlyForImmediatePredecessor: inside the grace window, a
// token whose successor has itself been used is reuse, and revokes.
func TestRefreshGraceOnlyForImmediatePredecessor(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil) // grace 10 s
		first := e.signIn(t, e.user(t, "chain@example.com"))
		second, err := e.SignIn.Refresh(ctx, e.app, first.Refresh)
		if err != nil {
			t.Fatal(err)
		}
		again, err := e.SignIn.Refresh(ctx, e.app, first.Refresh)
		if err != nil || again.Refresh != second.Refresh {
			t.Fatalf("reuse of the predecessor in grace = %v (same successor %v); want the same successor", err, again.Refresh == second.Refresh)
		}
		third, err := e.SignIn.Refresh(ctx, e.app, second.Refresh)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.SignIn.Refresh(ctx, e.app, first.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Fatalf("reuse of a grandparent token = %v; want ErrUnauthenticated", err)
		}
		if _, err := e.SignIn.Authenticate(ctx, e.app, third.Access); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("newest access token after reuse = %v; want the session revoked", err)
		}
	})
}

// TestLookupIsRateLimitedPerIP: the anonymous existence check is bounded per
// client IP, and one IP's budget does not touch another's.
func TestLookupIsRateLimitedPerIP(t *testing.T) {
	servertest.ForEach(t, options(func(o *servertest.Options) { o.Limits.LookupPerIP = ratelimit.Rule{Limit: 3, Period: 10 * time.Minute} }), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "found@example.com")
		for i := range 3 {
			got, err := e.SignIn.LookupUser(ctx, nil, e.app, signin.LookupQuery{Identifier: "Found@Example.com"}, e.client)
			if err != nil || got == nil || got.ID != u.ID {
				t.Fatalf("lookup %d = %v, %v; want the user", i+1, got, err)
			}
		}
		var rl *signin.RateLimitedError
		if _, err := e.SignIn.LookupUser(ctx, nil, e.app, signin.LookupQuery{Identifier: "nobody@example.com"}, e.client); !errors.As(err, &rl) {
			t.Errorf("4th lookup from one IP = %v; want *RateLimitedError", err)
		}
		other := signin.Client{IP: "203.0.113.9"}
		if got, err := e.SignIn.LookupUser(ctx, nil, e.app, signin.LookupQuery{Identifier: "nobody@example.com"}, other); err != nil || got != nil {
			t.Errorf("lookup from another IP = %v, %v; want nil, nil", got, err)
		}
		e.Clock.Advance(10 * time.Minute)
		if _, err := e.SignIn.LookupUser(ctx, nil, e.app, signin.LookupQuery{Identifier: "found@example.com"}, e.client); err != nil {
			t.Errorf("lookup after the period = %v; want allowed", err)
		}
	})
}
