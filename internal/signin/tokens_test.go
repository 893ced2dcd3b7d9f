package signin_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
	"github.com/google/uuid"
)

func TestRefreshRotation(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil) // grace 10 s
		u := e.user(t, "alice@example.com")
		first := e.signIn(t, u)
		sid := e.caller(t, first.Access).Session.ID

		e.Clock.Advance(time.Minute)
		second, err := e.SignIn.Refresh(ctx, e.app, first.Refresh)
		if err != nil {
			t.Fatalf("Refresh(first) = %v; want nil", err)
		}
		if second.Refresh == first.Refresh || second.Access == first.Access || second.UserID != u.ID {
			t.Errorf("Refresh(first) = %+v; want new tokens for %s", second, u.ID)
		}
		if got := e.caller(t, second.Access).Session.ID; got != sid {
			t.Errorf("refreshed access token's session = %s; want the same session %s", got, sid)
		}
		if err := e.SignIn.VerifyRefresh(ctx, e.app, first.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("VerifyRefresh(rotated-out token) = %v; want ErrUnauthenticated", err)
		}
		if err := e.SignIn.VerifyRefresh(ctx, e.app, second.Refresh); err != nil {
			t.Errorf("VerifyRefresh(successor) = %v; want nil", err)
		}

		// A retry inside the grace window gets the same successor.
		e.Clock.Advance(5 * time.Second)
		retry, err := e.SignIn.Refresh(ctx, e.app, first.Refresh)
		if err != nil || retry.Refresh != second.Refresh {
			t.Fatalf("Refresh(first) again within grace = %v, same successor %v; want nil, true", err, retry.Refresh == second.Refresh)
		}
		newest := e.caller(t, retry.Access)

		// Outside it, reuse means a copy leaked: the whole session ends.
		e.Clock.Advance(6 * time.Second)
		if _, err := e.SignIn.Refresh(ctx, e.app, first.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Refresh(first) after grace = %v; want ErrUnauthenticated", err)
		}
		if _, err := e.SignIn.Refresh(ctx, e.app, second.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Refresh(successor) after reuse = %v; want ErrUnauthenticated", err)
		}
		if err := e.SignIn.VerifyRefresh(ctx, e.app, second.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("VerifyRefresh(successor) after reuse = %v; want ErrUnauthenticated", err)
		}
		for _, access := range []string{first.Access, second.Access, retry.Access} {
			if _, err := e.SignIn.Authenticate(ctx, e.app, access); !errors.Is(err, signin.ErrUnauthenticated) {
				t.Errorf("Authenticate(access token of a revoked session) = %v; want ErrUnauthenticated", err)
			}
		}
		if sessions, err := e.SignIn.ListSessions(ctx, e.app, newest); err != nil || len(sessions) != 0 {
			t.Errorf("ListSessions after reuse = %d sessions, %v; want none", len(sessions), err)
		}
	})
}

func TestRefreshConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace time.Duration
	}{
		{"grace10s", 10 * time.Second},
		{"grace0", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servertest.ForEach(t, options(func(o *servertest.Options) {
				o.Settings["GATEHOUSE_TOKENS_REFRESH_GRACE"] = tc.grace.String()
			}), func(t *testing.T, sys *servertest.System) {
				ctx := t.Context()
				e := newEnv(t, sys, nil)
				u := e.user(t, "alice@example.com")
				ts := e.signIn(t, u)
				other := e.signIn(t, u)

				const n = 20
				var (
					mu      sync.Mutex
					won     []signin.TokenSet
					refused int
					wg      sync.WaitGroup
				)
				for range n {
					wg.Go(func() {
						got, err := e.SignIn.Refresh(ctx, e.app, ts.Refresh)
						mu.Lock()
						defer mu.Unlock()
						switch {
						case err == nil:
							won = append(won, got)
						case errors.Is(err, signin.ErrUnauthenticated):
							refused++
						default:
							t.Errorf("Refresh(concurrent) = %v; want nil or ErrUnauthenticated", err)
						}
					})
				}
				wg.Wait()

				if tc.grace > 0 {
					if len(won) != n {
						t.Fatalf("%d concurrent refreshes with grace: %d succeeded; want all", n, len(won))
					}
					for _, got := range won {
						if got.Refresh != won[0].Refresh {
							t.Fatalf("concurrent refreshes returned different successors; want one")
						}
					}
					if _, err := e.SignIn.Refresh(ctx, e.app, won[0].Refresh); err != nil {
						t.Errorf("Refresh(the shared successor) = %v; want nil", err)
					}
				} else {
					if len(won) != 1 || refused != n-1 {
						t.Fatalf("%d concurrent refreshes without grace: %d succeeded, %d refused; want 1 and %d", n, len(won), refused, n-1)
					}
					if _, err := e.SignIn.Refresh(ctx, e.app, won[0].Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
						t.Errorf("Refresh(winner's successor) after reuse = %v; want ErrUnauthenticated", err)
					}
					if _, err := e.SignIn.Authenticate(ctx, e.app, won[0].Access); !errors.Is(err, signin.ErrUnauthenticated) {
						t.Errorf("Authenticate(winner's access token) after reuse = %v; want ErrUnauthenticated", err)
					}
				}
				// The user's other session is not part of the family.
				if _, err := e.SignIn.Refresh(ctx, e.app, other.Refresh); err != nil {
					t.Errorf("Refresh(another session) = %v; want nil", err)
				}
			})
		})
	}
}

// TestRefreshGraceZeroSequential checks that without a grace window the
// very first reuse, even at the same instant, revokes the session.
func TestRefreshGraceZeroSequential(t *testing.T) {
	servertest.ForEach(t, options(func(o *servertest.Options) { o.Settings["GATEHOUSE_TOKENS_REFRESH_GRACE"] = "0s" }), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		ts := e.signIn(t, u)
		next, err := e.SignIn.Refresh(ctx, e.app, ts.Refresh)
		if err != nil {
			t.Fatalf("Refresh = %v; want nil", err)
		}
		if _, err := e.SignIn.Refresh(ctx, e.app, ts.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Refresh(used token, same instant, grace 0) = %v; want ErrUnauthenticated", err)
		}
		if _, err := e.SignIn.Authenticate(ctx, e.app, next.Access); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Authenticate(newest access token) after reuse = %v; want ErrUnauthenticated", err)
		}
	})
}

func TestRefreshIdleExpiry(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		idle := e.user(t, "idle@example.com")
		busy := e.user(t, "busy@example.com")
		idleTS := e.signIn(t, idle)
		busyTS := e.signIn(t, busy)
		lifetime := time.Duration(e.app.RefreshExpiration) * time.Second

		e.Clock.Advance(lifetime - time.Minute)
		next, err := e.SignIn.Refresh(ctx, e.app, busyTS.Refresh)
		if err != nil {
			t.Fatalf("Refresh(just inside the idle limit) = %v; want nil", err)
		}
		e.Clock.Advance(2 * time.Minute)
		if _, err := e.SignIn.Refresh(ctx, e.app, idleTS.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Refresh(idle past %v) = %v; want ErrUnauthenticated", lifetime, err)
		}
		if err := e.SignIn.VerifyRefresh(ctx, e.app, idleTS.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("VerifyRefresh(idle past %v) = %v; want ErrUnauthenticated", lifetime, err)
		}
		if _, err := e.SignIn.Refresh(ctx, e.app, next.Refresh); err != nil {
			t.Errorf("Refresh(renewed token, 2 min old) = %v; want nil", err)
		}
	})
}

func TestSessionAbsoluteLifetime(t *testing.T) {
	const lifetime = 3 * time.Hour
	servertest.ForEach(t, options(func(o *servertest.Options) {
		o.Settings["GATEHOUSE_TOKENS_SESSION_LIFETIME"] = lifetime.String()
	}), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, func(s *tenant.AppSettings) { s.RefreshExpiration = ptr[int64](3600) })
		u := e.user(t, "alice@example.com")
		ts := e.signIn(t, u)
		began := e.Clock.Now()
		end := began.Truncate(time.Microsecond).Add(lifetime)

		for _, step := range []time.Duration{50 * time.Minute, 50 * time.Minute, 50 * time.Minute, 20 * time.Minute, 9*time.Minute + 59*time.Second} {
			e.Clock.Advance(step)
			next, err := e.SignIn.Refresh(ctx, e.app, ts.Refresh)
			if err != nil {
				t.Fatalf("Refresh at +%v = %v; want nil", e.Clock.Now().Sub(began), err)
			}
			if next.RefreshExpiresAt.After(end) {
				t.Errorf("Refresh at +%v: refresh expires %v; want no later than the session's end %v",
					e.Clock.Now().Sub(began), next.RefreshExpiresAt, end)
			}
			ts = next
		}
		e.Clock.Advance(2 * time.Second) // 3 h + 1 s after sign-in
		if _, err := e.SignIn.Refresh(ctx, e.app, ts.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Refresh past the session's absolute lifetime = %v; want ErrUnauthenticated", err)
		}
		if _, err := e.SignIn.Authenticate(ctx, e.app, ts.Access); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Authenticate(unexpired access token of an ended session) = %v; want ErrUnauthenticated", err)
		}
	})
}

func TestAuthenticate(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		ts := e.signIn(t, u)
		c := e.caller(t, ts.Access)
		if c.User.ID != u.ID || c.Session.AppUserID != u.ID || c.Session.AppID != e.app.ID || c.Session.Method != signin.MethodOTP {
			t.Errorf("Authenticate = %+v; want alice's OTP session in app %s", c, e.app.ID)
		}
		claims := tokentest.Payload(t, ts.Access)
		if claims["sub"] != u.ID || claims["uuid"] != u.ID || claims["aud"] != e.app.ID || claims["iss"] != issuer ||
			claims["sid"] != c.Session.ID || claims["exp"] == nil || claims["jti"] == nil {
			t.Errorf("access token claims = %v; want sub/uuid %s, aud %s, iss, sid %s, exp, jti", claims, u.ID, e.app.ID, c.Session.ID)
		}

		other := e.newApp(t, "Other", nil)
		dot := strings.Index(ts.Access, ".")
		for name, tok := range map[string]string{
			"empty":             "",
			"garbage":           "not-a-token",
			"refresh token":     ts.Refresh,
			"payload flipped":   flip(ts.Access, dot+5),
			"signature flipped": flip(ts.Access, len(ts.Access)-5),
			"header flipped":    flip(ts.Access, 3),
		} {
			if _, err := e.SignIn.Authenticate(ctx, e.app, tok); !errors.Is(err, signin.ErrUnauthenticated) {
				t.Errorf("Authenticate(%s) = %v; want ErrUnauthenticated", name, err)
			}
		}
		if _, err := e.SignIn.Authenticate(ctx, other, ts.Access); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Authenticate(app A's token on app B) = %v; want ErrUnauthenticated", err)
		}
		if _, err := e.SignIn.Refresh(ctx, other, ts.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Refresh(app A's token on app B) = %v; want ErrUnauthenticated", err)
		}
		if _, err := e.SignIn.Refresh(ctx, e.app, ts.Access); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Refresh(access token) = %v; want ErrUnauthenticated", err)
		}
		if err := e.SignIn.VerifyRefresh(ctx, e.app, ts.Access); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("VerifyRefresh(access token) = %v; want ErrUnauthenticated", err)
		}
		_, magic := e.sendLink(t, "alice@example.com", false)
		if _, err := e.SignIn.Authenticate(ctx, e.app, magic); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Authenticate(magic-link token) = %v; want ErrUnauthenticated", err)
		}
		if _, err := e.SignIn.Refresh(ctx, e.app, magic); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Refresh(magic-link token) = %v; want ErrUnauthenticated", err)
		}

		// Expiry, with the verifier's 30 s of leeway for clock skew.
		access := time.Duration(e.app.AccessExpiration) * time.Second
		e.Clock.Advance(access + 29*time.Second)
		e.caller(t, ts.Access)
		e.Clock.Advance(2 * time.Second)
		if _, err := e.SignIn.Authenticate(ctx, e.app, ts.Access); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Authenticate(expired access token) = %v; want ErrUnauthenticated", err)
		}
		if _, err := e.SignIn.RotateAccess(ctx, nil, e.app, ts.Access); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("RotateAccess(expired access token) = %v; want ErrUnauthenticated", err)
		}
	})
}

func TestAuthenticateAfterRevocation(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		signedOut := e.signIn(t, u)
		revoked := e.signIn(t, u)
		kept := e.signIn(t, u)

		if err := e.SignIn.SignOut(ctx, e.app, e.caller(t, signedOut.Access)); err != nil {
			t.Fatalf("SignOut: %v", err)
		}
		sid := e.caller(t, revoked.Access).Session.ID
		if err := e.SignIn.RevokeUserSession(ctx, servertest.Operator, e.app, u.ID, sid); err != nil {
			t.Fatalf("RevokeUserSession: %v", err)
		}
		for name, ts := range map[string]signin.TokenSet{"signed out": signedOut, "revoked by admin": revoked} {
			if _, err := e.SignIn.Authenticate(ctx, e.app, ts.Access); !errors.Is(err, signin.ErrUnauthenticated) {
				t.Errorf("Authenticate(%s) = %v; want ErrUnauthenticated", name, err)
			}
			if _, err := e.SignIn.Refresh(ctx, e.app, ts.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
				t.Errorf("Refresh(%s) = %v; want ErrUnauthenticated", name, err)
			}
			if _, err := e.SignIn.RotateAccess(ctx, nil, e.app, ts.Access); !errors.Is(err, signin.ErrUnauthenticated) {
				t.Errorf("RotateAccess(%s) = %v; want ErrUnauthenticated", name, err)
			}
		}
		if err := e.SignIn.RevokeUserSession(ctx, servertest.Operator, e.app, u.ID, "no-such-session"); !errors.Is(err, signin.ErrSessionNotFound) {
			t.Errorf("RevokeUserSession(unknown id) = %v; want ErrSessionNotFound", err)
		}

		// Other sessions keep working, and a rotated set stays in its session.
		rotated, err := e.SignIn.RotateAccess(ctx, nil, e.app, kept.Access)
		if err != nil {
			t.Fatalf("RotateAccess(live session) = %v; want nil", err)
		}
		if got, want := e.caller(t, rotated.Access).Session.ID, e.caller(t, kept.Access).Session.ID; got != want {
			t.Errorf("RotateAccess moved the caller to session %s; want %s", got, want)
		}

		// Deactivation stops every token of the user at once. The status is
		// set in the store first, as a path that does not end the sessions
		// would, so the check on every request is what is tested; then
		// through the user service, which also ends them.
		if _, err := e.DB.SetAppUserStatus(ctx, e.app.ID, u.ID, store.StatusInactive, e.Clock.Now()); err != nil {
			t.Fatalf("SetAppUserStatus(inactive): %v", err)
		}
		for _, ts := range []signin.TokenSet{kept, rotated} {
			if _, err := e.SignIn.Authenticate(ctx, e.app, ts.Access); !errors.Is(err, signin.ErrUnauthenticated) {
				t.Errorf("Authenticate(user inactive in the store) = %v; want ErrUnauthenticated", err)
			}
			if _, err := e.SignIn.Refresh(ctx, e.app, ts.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
				t.Errorf("Refresh(user inactive in the store) = %v; want ErrUnauthenticated", err)
			}
		}
		if _, err := e.Users.SetStatus(ctx, servertest.Operator, e.app, u.ID, store.StatusInactive); err != nil {
			t.Fatalf("SetStatus(inactive): %v", err)
		}
		for _, ts := range []signin.TokenSet{kept, rotated} {
			if _, err := e.SignIn.Authenticate(ctx, e.app, ts.Access); !errors.Is(err, signin.ErrUnauthenticated) {
				t.Errorf("Authenticate(deactivated user) = %v; want ErrUnauthenticated", err)
			}
			if _, err := e.SignIn.Refresh(ctx, e.app, ts.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
				t.Errorf("Refresh(deactivated user) = %v; want ErrUnauthenticated", err)
			}
			if err := e.SignIn.VerifyRefresh(ctx, e.app, ts.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
				t.Errorf("VerifyRefresh(deactivated user) = %v; want ErrUnauthenticated", err)
			}
		}
	})
}

func TestSessions(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		alice := e.user(t, "alice@example.com")
		bob := e.user(t, "bob@example.com")
		a1TS, b1TS := e.signIn(t, alice), e.signIn(t, bob)
		a1, b1 := e.caller(t, a1TS.Access), e.caller(t, b1TS.Access)
		a2 := e.caller(t, e.signIn(t, alice).Access)
		a3 := e.caller(t, e.signIn(t, alice).Access)
		if err := e.SignIn.SignOut(ctx, e.app, a3); err != nil {
			t.Fatalf("SignOut: %v", err)
		}

		ids := func(ss []store.Session) []string {
			out := make([]string, 0, len(ss))
			for _, s := range ss {
				out = append(out, s.ID)
			}
			slices.Sort(out)
			return out
		}
		want := ids([]store.Session{a1.Session, a2.Session})
		got, err := e.SignIn.ListSessions(ctx, e.app, a1)
		if err != nil || !slices.Equal(ids(got), want) {
			t.Errorf("ListSessions(alice) = %v, %v; want %v (live, alice's only)", ids(got), err, want)
		}
		for _, s := range got {
			if s.AppUserID != alice.ID || s.RevokedAt != nil || s.IP != e.client.IP || s.UserAgent != e.client.UserAgent {
				t.Errorf("ListSessions(alice) row = %+v; want alice's live session with IP and user agent", s)
			}
		}
		if got, err := e.SignIn.ListSessions(ctx, e.app, b1); err != nil || !slices.Equal(ids(got), []string{b1.Session.ID}) {
			t.Errorf("ListSessions(bob) = %v, %v; want only %s", ids(got), err, b1.Session.ID)
		}
		if got, err := e.SignIn.UserSessions(ctx, servertest.Operator, e.app, alice.ID); err != nil || !slices.Equal(ids(got), want) {
			t.Errorf("UserSessions(alice) = %v, %v; want %v", ids(got), err, want)
		}

		if err := e.SignIn.RevokeSession(ctx, e.app, a1, b1.Session.ID); !errors.Is(err, signin.ErrSessionNotFound) {
			t.Errorf("RevokeSession(alice, bob's session) = %v; want ErrSessionNotFound", err)
		}
		if err := e.SignIn.RevokeSession(ctx, e.app, a1, "no-such-session"); !errors.Is(err, signin.ErrSessionNotFound) {
			t.Errorf("RevokeSession(unknown id) = %v; want ErrSessionNotFound", err)
		}
		if _, err := e.SignIn.Authenticate(ctx, e.app, b1TS.Access); err != nil {
			t.Errorf("bob's session after alice tried to revoke it: %v; want live", err)
		}

		if err := e.SignIn.RevokeSession(ctx, e.app, a1, a2.Session.ID); err != nil {
			t.Fatalf("RevokeSession(alice, her other session) = %v; want nil", err)
		}
		if got, err := e.SignIn.ListSessions(ctx, e.app, a1); err != nil || !slices.Equal(ids(got), []string{a1.Session.ID}) {
			t.Errorf("ListSessions(alice) after revoking one = %v, %v; want only %s", ids(got), err, a1.Session.ID)
		}
		other := e.newApp(t, "Other", nil)
		if err := e.SignIn.RevokeUserSession(ctx, servertest.Operator, other, alice.ID, a1.Session.ID); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("RevokeUserSession(other app, alice's session) = %v; want ErrUserNotFound", err)
		}
		if _, err := e.SignIn.Authenticate(ctx, e.app, a1TS.Access); err != nil {
			t.Errorf("alice's session after another app tried to revoke it: %v; want live", err)
		}
	})
}

// TestRotateAccessWithoutSecretCannotExtendAStolenToken reproduces the
// attack: an access token alone, exchanged again and again, used to yield a
// new refresh token each time (a 30-day session). Now it yields no refresh
// token, adds none to the session, and never a later expiry than the stolen
// token's; once that passes, the exchange is refused.
func TestRotateAccessWithoutSecretCannotExtendAStolenToken(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		signedIn := e.signIn(t, e.user(t, "victim@example.com"))
		sid := e.caller(t, signedIn.Access).Session.ID
		deadline := signedIn.AccessExpiresAt
		stolen := signedIn.Access
		for i := range 5 {
			e.Clock.Advance(time.Minute)
			got, err := e.SignIn.RotateAccess(ctx, nil, e.app, stolen)
			if err != nil {
				t.Fatalf("exchange %d: RotateAccess(access only) = %v; want a token set", i+1, err)
			}
			if got.Refresh != "" || !got.RefreshExpiresAt.IsZero() {
				t.Fatalf("exchange %d: RotateAccess(access only) gave a refresh token (expires %v); want none", i+1, got.RefreshExpiresAt)
			}
			exp := time.Unix(int64(tokentest.Payload(t, got.Access)["exp"].(float64)), 0)
			if exp.After(deadline) || got.AccessExpiresAt.After(deadline) {
				t.Fatalf("exchange %d: new access token expires %v (said %v); want no later than the stolen one's %v", i+1, exp, got.AccessExpiresAt, deadline)
			}
			if c := e.caller(t, got.Access); c.Session.ID != sid {
				t.Errorf("exchange %d: session %s; want %s", i+1, c.Session.ID, sid)
			}
			stolen = got.Access // the attacker keeps exchanging the newest one
		}
		if ids, err := e.DB.UnspentRefreshTokens(ctx, sid); err != nil || len(ids) != 1 {
			t.Errorf("live refresh tokens of the session = %v, %v; want only the one sign-in gave", ids, err)
		}
		e.Clock.Advance(deadline.Add(31 * time.Second).Sub(e.Clock.Now())) // past the verifier's leeway
		if _, err := e.SignIn.RotateAccess(ctx, nil, e.app, stolen); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("RotateAccess after the stolen token's expiry = %v; want ErrUnauthenticated", err)
		}
		// The owner's refresh token still works: nothing was branched off it.
		if _, err := e.SignIn.Refresh(ctx, e.app, signedIn.Refresh); err != nil {
			t.Errorf("Refresh(the owner's token) = %v; want a new set", err)
		}
	})
}

// TestRotateAccessWithSecretStaysOnTheRefreshChain: with the app's backend
// credential, rotate_access refreshes the session's current refresh token:
// the new token is the session's only live one, the previous one gets the
// same successor within the grace window, and presenting it after that is
// reuse, which revokes the session. Another app's credential is refused.
func TestRotateAccessWithSecretStaysOnTheRefreshChain(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		signedIn := e.signIn(t, e.user(t, "server@example.com"))
		sid := e.caller(t, signedIn.Access).Session.ID
		backend := sys.Principal(t, sys.AppSecret(t, e.app.ID))

		foreign := sys.Principal(t, sys.AppSecret(t, e.newApp(t, "Elsewhere", nil).ID))
		if _, err := e.SignIn.RotateAccess(ctx, &foreign, e.app, signedIn.Access); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("RotateAccess(another app's secret) = %v; want ErrForbidden", err)
		}

		e.Clock.Advance(time.Minute)
		got, err := e.SignIn.RotateAccess(ctx, &backend, e.app, signedIn.Access)
		if err != nil {
			t.Fatalf("RotateAccess(with secret) = %v", err)
		}
		if got.Refresh == "" || got.Refresh == signedIn.Refresh || !got.AccessExpiresAt.After(signedIn.AccessExpiresAt) {
			t.Fatalf("RotateAccess(with secret) = refresh %t, access until %v; want a new refresh token and a fresh access token",
				got.Refresh != "", got.AccessExpiresAt)
		}
		if c := e.caller(t, got.Access); c.Session.ID != sid {
			t.Errorf("RotateAccess moved the caller to session %s; want %s", c.Session.ID, sid)
		}
		if ids, err := e.DB.UnspentRefreshTokens(ctx, sid); err != nil || len(ids) != 1 {
			t.Errorf("live refresh tokens of the session = %v, %v; want one (the new one)", ids, err)
		}
		if err := e.SignIn.VerifyRefresh(ctx, e.app, signedIn.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("VerifyRefresh(the replaced token) = %v; want ErrUnauthenticated (spent)", err)
		}
		// Within the grace window the replaced token converges on the new one.
		again, err := e.SignIn.Refresh(ctx, e.app, signedIn.Refresh)
		if err != nil || again.Refresh != got.Refresh {
			t.Fatalf("Refresh(replaced token, in grace) = %v (same successor %v); want the new token", err, again.Refresh == got.Refresh)
		}
		// After it, presenting the replaced token is reuse: the session ends.
		e.Clock.Advance(11 * time.Second)
		if _, err := e.SignIn.Refresh(ctx, e.app, signedIn.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Fatalf("Refresh(replaced token, after grace) = %v; want ErrUnauthenticated", err)
		}
		if _, err := e.SignIn.Refresh(ctx, e.app, got.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Refresh(the new token) after reuse = %v; want the session revoked", err)
		}
		if _, err := e.SignIn.Authenticate(ctx, e.app, got.Access); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Authenticate(the new access token) after reuse = %v; want the session revoked", err)
		}
	})
}

// TestRotateAccessRacingRefreshKeepsOneChain: rotate_access with the API
// secret racing refreshes of the same session never leaves two live refresh
// tokens: afterwards the session has exactly one, or reuse revoked it.
func TestRotateAccessRacingRefreshKeepsOneChain(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		backend := sys.Principal(t, sys.AppSecret(t, e.app.ID))
		for round := range 3 {
			ts := e.signIn(t, e.user(t, "race"+strconv.Itoa(round)+"@example.com"))
			sid := e.caller(t, ts.Access).Session.ID
			var wg sync.WaitGroup
			for i := range 6 {
				wg.Go(func() {
					var err error
					if i%2 == 0 {
						_, err = e.SignIn.RotateAccess(ctx, &backend, e.app, ts.Access)
					} else {
						_, err = e.SignIn.Refresh(ctx, e.app, ts.Refresh)
					}
					if err != nil && !errors.Is(err, signin.ErrUnauthenticated) {
						t.Errorf("racing call %d: %v", i, err)
					}
				})
			}
			wg.Wait()
			ids, err := e.DB.UnspentRefreshTokens(ctx, sid)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.SignIn.Authenticate(ctx, e.app, ts.Access); err == nil && len(ids) != 1 {
				t.Errorf("round %d: live session with %d unspent refresh tokens; want 1", round, len(ids))
			}
		}
	})
}

// TestRefreshTokenForms: refresh tokens are HS256 MAC tokens, which no one
// but the server reads; a refresh token of the earlier form (ES256, signed
// by the keyring) stays good until it is spent, and is rotated into the new
// form; a token altered in any part, or naming another algorithm, is refused
// by its MAC even when a row with its hash exists, and without a lookup,
// while an unknown token of the earlier form is looked up and refused.
func TestRefreshTokenForms(t *testing.T) {
	var statements atomic.Int64
	opts := options(func(o *servertest.Options) {
		o.OnStatement = func(context.Context, string, bool) { statements.Add(1) }
	})
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "forms@example.com")
		first := e.signIn(t, u)
		if h := tokentest.Header(t, first.Refresh); h["alg"] != token.HS256 || h["typ"] != token.TypeRefresh || h["kid"] != nil {
			t.Errorf("refresh token header = %v; want HS256, rt+jwt and no kid", h)
		}
		sid := e.caller(t, first.Access).Session.ID

		// A token of the earlier form, as a server before MAC tokens made it.
		now := e.Clock.Now()
		legacy, err := sys.Keyring().Sign(token.TypeRefresh, map[string]any{"iss": issuer, "sub": u.ID, "aud": e.app.ID,
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": "legacy-1", "sid": sid})
		if err != nil {
			t.Fatal(err)
		}
		if h := tokentest.Header(t, legacy); h["alg"] != token.ES256 {
			t.Fatalf("legacy token alg = %v; want ES256", h["alg"])
		}
		_, hasher, err := token.FromMasterKey(sys.MasterKey)
		if err != nil {
			t.Fatal(err)
		}
		if err := sys.DB.InsertRefreshToken(ctx, store.RefreshToken{ID: uuid.Must(uuid.NewV7()).String(), SessionID: sid,
			TokenHash: hasher.Hash("refresh", legacy), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := e.SignIn.VerifyRefresh(ctx, e.app, legacy); err != nil {
			t.Errorf("VerifyRefresh(ES256 token) = %v; want nil", err)
		}
		next, err := e.SignIn.Refresh(ctx, e.app, legacy)
		if err != nil {
			t.Fatalf("Refresh(ES256 token) = %v; want nil", err)
		}
		if h := tokentest.Header(t, next.Refresh); h["alg"] != token.HS256 {
			t.Errorf("successor of an ES256 token: alg %v; want HS256", h["alg"])
		}
		if got := e.caller(t, next.Access).Session.ID; got != sid {
			t.Errorf("refreshed session = %s; want %s", got, sid)
		}

		parts := strings.Split(next.Refresh, ".")
		sig := []byte(parts[2])
		sig[0] = map[bool]byte{true: 'B', false: 'A'}[sig[0] == 'A'] // still base64url: the MAC decides
		claims := tokentest.Payload(t, next.Refresh)
		claims["exp"] = now.Add(1000 * time.Hour).Unix()
		body, _ := json.Marshal(claims)
		none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"rt+jwt"}`))
		for name, tok := range map[string]string{
			"altered signature": parts[0] + "." + parts[1] + "." + string(sig),
			"altered payload":   parts[0] + "." + base64.RawURLEncoding.EncodeToString(body) + "." + parts[2],
			"alg none":          none + "." + parts[1] + ".",
		} {
			// A row for it, as if the hash had been planted: only the MAC
			// can refuse it now, on either engine.
			if err := sys.DB.InsertRefreshToken(ctx, store.RefreshToken{ID: uuid.Must(uuid.NewV7()).String(), SessionID: sid,
				TokenHash: hasher.Hash("refresh", tok), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			before := statements.Load()
			if _, err := e.SignIn.Refresh(ctx, e.app, tok); !errors.Is(err, signin.ErrUnauthenticated) {
				t.Errorf("Refresh(%s) = %v; want ErrUnauthenticated", name, err)
			}
			if err := e.SignIn.VerifyRefresh(ctx, e.app, tok); !errors.Is(err, signin.ErrUnauthenticated) {
				t.Errorf("VerifyRefresh(%s) = %v; want ErrUnauthenticated", name, err)
			}
			if n := statements.Load() - before; n != 0 {
				t.Errorf("%s: %d statements; want none (refused before any lookup)", name, n)
			}
		}
		unknown, _ := sys.Keyring().Sign(token.TypeRefresh, map[string]any{"sub": u.ID, "jti": "legacy-2", "sid": sid})
		before := statements.Load()
		if _, err := e.SignIn.Refresh(ctx, e.app, unknown); !errors.Is(err, signin.ErrUnauthenticated) {
			t.Errorf("Refresh(unknown ES256 token) = %v; want ErrUnauthenticated", err)
		}
		if n := statements.Load() - before; sys.DB.Kind() == store.Postgres && n == 0 {
			t.Error("an unknown ES256 token was refused without its lookup: the statement counter sees nothing")
		}
		if _, err := e.SignIn.Refresh(ctx, e.app, next.Refresh); err != nil {
			t.Errorf("Refresh(the HS256 successor) = %v; want nil", err)
		}
	})
}
