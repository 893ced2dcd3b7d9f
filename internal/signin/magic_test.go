package signin_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
)

func TestMagicLinkCrossDevice(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		handle, tok := e.sendLink(t, "alice@example.com", false)
		if handle == tok || len(handle) < 22 {
			t.Fatalf("poll handle %d chars, same as token %v; want ≥128 bits, distinct", len(handle), handle == tok)
		}

		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client); !errors.Is(err, signin.ErrMagicLinkPending) {
			t.Errorf("MagicLinkStatus(before the link is opened) = %v; want ErrMagicLinkPending", err)
		}
		var rl *signin.RateLimitedError
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client); !errors.As(err, &rl) || rl.RetryAfter <= 0 {
			t.Errorf("MagicLinkStatus(polled again at once) = %v; want *RateLimitedError", err)
		}

		deviceB := signin.Client{IP: "203.0.113.9", UserAgent: "Mobile Safari"}
		b, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, deviceB)
		if err != nil {
			t.Fatalf("AuthenticateMagicLink = %v; want nil", err)
		}
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, deviceB); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(used token) = %v; want ErrMagicLinkNotFound", err)
		}

		e.Clock.Advance(2 * time.Second)
		a, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client)
		if err != nil {
			t.Fatalf("MagicLinkStatus(after the link was opened) = %v; want nil", err)
		}
		ca, cb := e.caller(t, a.Access), e.caller(t, b.Access)
		if ca.User.ID != u.ID || cb.User.ID != u.ID || ca.Session.ID == cb.Session.ID {
			t.Errorf("device A: user %s session %s, device B: user %s session %s; want alice in two sessions",
				ca.User.ID, ca.Session.ID, cb.User.ID, cb.Session.ID)
		}
		if ca.Session.IP != e.client.IP || cb.Session.IP != deviceB.IP || ca.Session.Method != signin.MethodMagic {
			t.Errorf("sessions = %+v and %+v; want each device's own IP, method magic", ca.Session, cb.Session)
		}
		if sa, sb := tokentest.Payload(t, a.Access)["sid"], tokentest.Payload(t, b.Access)["sid"]; sa == sb {
			t.Errorf("both access tokens carry sid %v; want different sessions", sa)
		}

		e.Clock.Advance(2 * time.Second)
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("MagicLinkStatus(tokens collected) = %v; want ErrMagicLinkNotFound", err)
		}
		for name, h := range map[string]string{"unknown handle": token.RandomString(32), "e-mailed token": tok, "empty": ""} {
			if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, h, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
				t.Errorf("MagicLinkStatus(%s) = %v; want ErrMagicLinkNotFound", name, err)
			}
		}
		got, err := e.get(t, u.ID)
		if err != nil || !got.EmailVerified {
			t.Errorf("user after magic link = %+v, %v; want a verified e-mail", got.AppUser, err)
		}
	})
}

func TestMagicLinkHandleIsNotTheToken(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		e.user(t, "alice@example.com")
		handle, tok := e.sendLink(t, "alice@example.com", false)
		// The token cannot stand in for the handle even before the link is used.
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, tok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("MagicLinkStatus(e-mailed token) = %v; want ErrMagicLinkNotFound", err)
		}
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, handle, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(poll handle) = %v; want ErrMagicLinkNotFound", err)
		}
		dot := strings.LastIndex(tok, ".")
		for name, bad := range map[string]string{"signature flipped": flip(tok, dot+3), "payload flipped": flip(tok, dot-3)} {
			if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, bad, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
				t.Errorf("AuthenticateMagicLink(%s) = %v; want ErrMagicLinkNotFound", name, err)
			}
		}
		other := e.newApp(t, "Other", nil)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, other, tok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(other app) = %v; want ErrMagicLinkNotFound", err)
		}
		if _, err := e.SignIn.MagicLinkStatus(ctx, other, handle, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("MagicLinkStatus(other app) = %v; want ErrMagicLinkNotFound", err)
		}
		// None of that spent the link.
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, e.client); err != nil {
			t.Errorf("AuthenticateMagicLink(good token) = %v; want nil", err)
		}
	})
}

func TestMagicLinkResendSupersedes(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		e.user(t, "alice@example.com")
		oldHandle, oldTok := e.sendLink(t, "alice@example.com", false)
		newHandle, newTok := e.sendLink(t, "alice@example.com", false)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, oldTok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(superseded link) = %v; want ErrMagicLinkNotFound", err)
		}
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, oldHandle, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("MagicLinkStatus(superseded link) = %v; want ErrMagicLinkNotFound", err)
		}
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, newTok, e.client); err != nil {
			t.Errorf("AuthenticateMagicLink(newest link) = %v; want nil", err)
		}
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, newHandle, e.client); err != nil {
			t.Errorf("MagicLinkStatus(newest link, opened) = %v; want nil", err)
		}
	})
}

func TestMagicLinkExpiry(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		e.user(t, "alice@example.com")
		e.user(t, "bob@example.com")
		aliceHandle, aliceTok := e.sendLink(t, "alice@example.com", false)
		bobHandle, bobTok := e.sendLink(t, "bob@example.com", false)
		ttl := time.Duration(e.app.MagicLinkExpiration) * time.Second

		e.Clock.Advance(ttl - time.Second)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, bobTok, e.client); err != nil {
			t.Errorf("AuthenticateMagicLink(1 s before expiry) = %v; want nil", err)
		}
		e.Clock.Advance(2 * time.Second)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, aliceTok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(1 s after expiry) = %v; want ErrMagicLinkNotFound", err)
		}
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, aliceHandle, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("MagicLinkStatus(expired link) = %v; want ErrMagicLinkNotFound", err)
		}
		// Past the token's own exp (and the verifier's leeway) as well.
		e.Clock.Advance(time.Minute)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, aliceTok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(a minute after expiry) = %v; want ErrMagicLinkNotFound", err)
		}
		// Bob opened his link in time, so his device still collects once.
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, bobHandle, e.client); err != nil {
			t.Errorf("MagicLinkStatus(opened in time) = %v; want nil", err)
		}
	})
}

func TestMagicLinkPayload(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		for _, webauthn := range []bool{false, true} {
			_, tok := e.sendLink(t, "alice@example.com", webauthn)
			p := tokentest.Payload(t, tok)
			if p["uuid"] != u.ID || p["user_status"] != store.StatusActive || p["email"] != "alice@example.com" {
				t.Errorf("magic token payload = %v; want uuid %s, user_status active, email alice@example.com", p, u.ID)
			}
			if got, ok := p["webauthnEnabled"].(bool); !ok || got != webauthn {
				t.Errorf("magic token payload webauthnEnabled = %v (present %v); want %v", p["webauthnEnabled"], ok, webauthn)
			}
			if exp, ok := p["exp"].(float64); !ok || int64(exp) != e.Clock.Now().Unix()+e.app.MagicLinkExpiration {
				t.Errorf("magic token exp = %v; want now + %d s", p["exp"], e.app.MagicLinkExpiration)
			}
		}
	})
}

func TestConfirmInvite(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		invited, _, err := e.Users.Invite(ctx, servertest.Operator, e.app, appuser.CreateInput{Identifier: "ivy@example.com"})
		if err != nil {
			t.Fatalf("Invite: %v", err)
		}
		if invited.Status != store.StatusPending {
			t.Fatalf("invited user status = %q; want pending", invited.Status)
		}
		msg, ok := e.Mail.Last("ivy@example.com")
		if !ok {
			t.Fatalf("no invitation was sent")
		}
		inviteTok := linkToken(t, msg.Link)

		// An invitation is not a magic sign-in link, and the reverse.
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, inviteTok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(invitation token) = %v; want ErrMagicLinkNotFound", err)
		}
		e.user(t, "alice@example.com")
		_, magicTok := e.sendLink(t, "alice@example.com", false)
		if _, err := e.SignIn.ConfirmInvite(ctx, e.app, magicTok, nil, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("ConfirmInvite(magic sign-in token) = %v; want ErrMagicLinkNotFound", err)
		}
		if _, err := e.SignIn.ConfirmInvite(ctx, e.newApp(t, "Other", nil), inviteTok, nil, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("ConfirmInvite(other app) = %v; want ErrMagicLinkNotFound", err)
		}

		ts, err := e.SignIn.ConfirmInvite(ctx, e.app, inviteTok, map[string]any{"nick": "Ivy", "role": "admin"}, e.client)
		if err != nil {
			t.Fatalf("ConfirmInvite = %v; want nil", err)
		}
		c := e.caller(t, ts.Access)
		if c.User.ID != invited.ID || c.Session.Method != signin.MethodInvite {
			t.Errorf("ConfirmInvite signed in %s by %q; want %s by invite", c.User.ID, c.Session.Method, invited.ID)
		}
		got, err := e.get(t, invited.ID)
		if err != nil || got.Status != store.StatusActive || !got.EmailVerified || got.Meta["nick"] != "Ivy" {
			t.Errorf("user after ConfirmInvite = %+v (meta %v), %v; want active, verified, nick Ivy", got.AppUser, got.Meta, err)
		}
		if _, ok := got.Meta["role"]; ok {
			t.Errorf("user meta = %v; want the undeclared key role dropped", got.Meta)
		}
		if _, err := e.SignIn.ConfirmInvite(ctx, e.app, inviteTok, nil, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("ConfirmInvite(used invitation) = %v; want ErrMagicLinkNotFound", err)
		}
	})
}

func TestConfirmInviteExpiredOrDeactivated(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		late, _, err := e.Users.Invite(ctx, servertest.Operator, e.app, appuser.CreateInput{Identifier: "late@example.com"})
		if err != nil {
			t.Fatalf("Invite: %v", err)
		}
		gone, _, err := e.Users.Invite(ctx, servertest.Operator, e.app, appuser.CreateInput{Identifier: "gone@example.com"})
		if err != nil {
			t.Fatalf("Invite: %v", err)
		}
		lateMsg, _ := e.Mail.Last("late@example.com")
		goneMsg, _ := e.Mail.Last("gone@example.com")
		if _, err := e.Users.SetStatus(ctx, servertest.Operator, e.app, gone.ID, store.StatusInactive); err != nil {
			t.Fatalf("SetStatus: %v", err)
		}
		if _, err := e.SignIn.ConfirmInvite(ctx, e.app, linkToken(t, goneMsg.Link), nil, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("ConfirmInvite(deactivated user) = %v; want ErrMagicLinkNotFound", err)
		}
		e.Clock.Advance(appuser.InvitationTTL + time.Minute)
		if _, err := e.SignIn.ConfirmInvite(ctx, e.app, linkToken(t, lateMsg.Link), nil, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("ConfirmInvite(expired invitation) = %v; want ErrMagicLinkNotFound", err)
		}
		if got, err := e.get(t, late.ID); err != nil || got.Status != store.StatusPending {
			t.Errorf("user after expired invitation = %q, %v; want still pending", got.Status, err)
		}
	})
}

// TestMagicLinkConcurrentUse checks a link and an invitation each start
// exactly one session however many requests race to use them.
func TestMagicLinkConcurrentUse(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		e.user(t, "alice@example.com")
		_, magicTok := e.sendLink(t, "alice@example.com", false)
		if _, _, err := e.Users.Invite(ctx, servertest.Operator, e.app, appuser.CreateInput{Identifier: "ivy@example.com"}); err != nil {
			t.Fatalf("Invite: %v", err)
		}
		msg, _ := e.Mail.Last("ivy@example.com")
		inviteTok := linkToken(t, msg.Link)

		for name, use := range map[string]func() (signin.TokenSet, error){
			"AuthenticateMagicLink": func() (signin.TokenSet, error) {
				return e.SignIn.AuthenticateMagicLink(ctx, e.app, magicTok, e.client)
			},
			"ConfirmInvite": func() (signin.TokenSet, error) {
				return e.SignIn.ConfirmInvite(ctx, e.app, inviteTok, nil, e.client)
			},
		} {
			const n = 20
			var mu sync.Mutex
			var wg sync.WaitGroup
			won, refused := 0, 0
			for range n {
				wg.Go(func() {
					_, err := use()
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						won++
					case errors.Is(err, signin.ErrMagicLinkNotFound):
						refused++
					default:
						t.Errorf("%s(concurrent) = %v; want nil or ErrMagicLinkNotFound", name, err)
					}
				})
			}
			wg.Wait()
			if won != 1 || refused != n-1 {
				t.Errorf("%d concurrent %s: %d succeeded, %d refused; want 1 and %d", n, name, won, refused, n-1)
			}
		}
	})
}

// TestMagicLinkConcurrentPolls checks the token set is handed out once even
// when polls race with no poll interval to hold them apart.
func TestMagicLinkConcurrentPolls(t *testing.T) {
	servertest.ForEach(t, options(func(o *servertest.Options) { o.Limits.PollInterval = 0 }), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		e.user(t, "alice@example.com")
		handle, tok := e.sendLink(t, "alice@example.com", false)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, e.client); err != nil {
			t.Fatalf("AuthenticateMagicLink: %v", err)
		}
		const n = 20
		var mu sync.Mutex
		var wg sync.WaitGroup
		won, refused := 0, 0
		for range n {
			wg.Go(func() {
				_, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case errors.Is(err, signin.ErrMagicLinkNotFound):
					refused++
				default:
					t.Errorf("MagicLinkStatus(concurrent) = %v; want nil or ErrMagicLinkNotFound", err)
				}
			})
		}
		wg.Wait()
		if won != 1 || refused != n-1 {
			t.Errorf("%d concurrent polls: %d token sets, %d not found; want 1 and %d", n, won, refused, n-1)
		}
	})
}
