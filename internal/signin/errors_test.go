package signin_test

import (
	"cmp"
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// TestErrorsNameTheOperation checks that every error of the service names
// the operation that failed, once, in front, and still matches its sentinel,
// so a failure logged far away says what failed and the API can still map it.
func TestErrorsNameTheOperation(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		emailOnly := e.newApp(t, "Email only", func(s *tenant.AppSettings) { s.AllowedIdentifiers = &[]string{"email"} })
		alice := e.user(t, "alice@example.com")
		bob := e.user(t, "bob@example.com")
		caller := e.caller(t, e.signIn(t, alice).Access)
		_, code := e.sendCode(t, "alice@example.com")
		wrong := wrongCodes(code, 1)[0]
		_, bobCode := e.sendCode(t, "bob@example.com")
		for _, c := range wrongCodes(bobCode, 5) {
			_, _ = e.SignIn.VerifyOTP(ctx, e.app, bob.ID, c, e.client)
		}
		stranger := e.Principal(t, e.AppSecret(t, emailOnly.ID))

		for _, tc := range []struct {
			op   string
			call func() error
			want error // nil: an *appuser.MetaInvalidError
		}{
			{"verify otp", func() error {
				_, err := e.SignIn.VerifyOTP(ctx, e.app, alice.ID, wrong, e.client)
				return err
			}, signin.ErrInvalidCode},
			{"verify otp", func() error {
				_, err := e.SignIn.VerifyOTP(ctx, e.app, bob.ID, bobCode, e.client)
				return err
			}, signin.ErrTooManyAttempts},
			{"send otp", func() error {
				_, err := e.SignIn.SendOTP(ctx, e.app, "not an identifier", nil, e.client)
				return err
			}, appuser.ErrInvalidIdentifier},
			{"send magic link", func() error {
				_, err := e.SignIn.SendMagicLink(ctx, emailOnly, "+14155552671", nil, false, e.client)
				return err
			}, appuser.ErrIdentifierNotAllowed},
			{"authenticate magic link", func() error {
				_, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, "not-a-token", e.client)
				return err
			}, signin.ErrMagicLinkNotFound},
			{"magic link status", func() error {
				_, err := e.SignIn.MagicLinkStatus(ctx, e.app, "no-such-handle", e.client)
				return err
			}, signin.ErrMagicLinkNotFound},
			{"confirm invite", func() error {
				_, err := e.SignIn.ConfirmInvite(ctx, e.app, "not-a-token", nil, e.client)
				return err
			}, signin.ErrMagicLinkNotFound},
			{"authenticate access token", func() error {
				_, err := e.SignIn.Authenticate(ctx, e.app, "not-a-token")
				return err
			}, signin.ErrUnauthenticated},
			{"rotate access token", func() error {
				_, err := e.SignIn.RotateAccess(ctx, nil, e.app, "not-a-token")
				return err
			}, signin.ErrUnauthenticated},
			{"refresh", func() error {
				_, err := e.SignIn.Refresh(ctx, e.app, "not-a-token")
				return err
			}, signin.ErrUnauthenticated},
			{"verify refresh token", func() error {
				return e.SignIn.VerifyRefresh(ctx, e.app, "not-a-token")
			}, signin.ErrUnauthenticated},
			{"revoke session", func() error {
				return e.SignIn.RevokeSession(ctx, e.app, caller, "no-such-session")
			}, signin.ErrSessionNotFound},
			{"list user sessions", func() error {
				_, err := e.SignIn.UserSessions(ctx, stranger, e.app, alice.ID)
				return err
			}, access.ErrForbidden},
			{"revoke user session", func() error {
				return e.SignIn.RevokeUserSession(ctx, stranger, e.app, alice.ID, caller.Session.ID)
			}, access.ErrForbidden},
			// UpdateMeta is appuser's UpdateOwnMeta, which names it.
			{"update own metadata", func() error {
				_, err := e.SignIn.UpdateMeta(ctx, e.app, caller, map[string]any{"undeclared": "x"})
				return err
			}, nil},
		} {
			err := tc.call()
			if err == nil {
				t.Errorf("%s: nil; want an error", tc.op)
				continue
			}
			var invalid *appuser.MetaInvalidError
			if tc.want != nil && !errors.Is(err, tc.want) || tc.want == nil && !errors.As(err, &invalid) {
				t.Errorf("%s: %v; want %v", tc.op, err, cmp.Or[any](tc.want, "an *appuser.MetaInvalidError"))
			}
			if prefix := tc.op + ": "; !strings.HasPrefix(err.Error(), prefix) || strings.Count(err.Error(), prefix) != 1 {
				t.Errorf("%s: error %q; want it to start with %q, once", tc.op, err, prefix)
			}
		}
		// The example of the issue, exactly.
		_, err := e.SignIn.VerifyOTP(ctx, e.app, alice.ID, wrong, e.client)
		if want := "verify otp: " + signin.ErrInvalidCode.Error(); err == nil || err.Error() != want {
			t.Errorf("VerifyOTP(wrong code) = %v; want %q", err, want)
		}
	})
}
