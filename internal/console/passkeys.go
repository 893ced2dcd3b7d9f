package console

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Operators' passkeys are passkeys of the built-in app's users, made and
// checked by signin like any app's (its relying party is base_url's host).

// Passkey is one of an operator's passkeys.
type Passkey = signin.Passkey

// ErrNeedsCodeSignIn: adding or removing a passkey needs a session that
// signed in with a code or a passkey (a link sign-in has no built-in app
// session to add it to).
var ErrNeedsCodeSignIn = errors.New("sign in with an e-mail code or a passkey first")

// BeginPasskeySignIn starts a discoverable passkey sign-in: the browser's
// options (no user named).
func (s *Service) BeginPasskeySignIn(ctx context.Context, c signin.Client) (_ json.RawMessage, err error) {
	defer errs.Wrap(&err, "begin console passkey sign-in")
	a, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	return s.signin.BeginPasskeyLogin(ctx, a, "", c)
}

// FinishPasskeySignIn checks the browser's answer and starts a console
// session for the passkey's operator.
func (s *Service) FinishPasskeySignIn(ctx context.Context, body []byte, ip, userAgent string, c signin.Client) (cookie string, _ Session, err error) {
	defer errs.Wrap(&err, "console passkey sign-in")
	a, err := s.app(ctx)
	if err != nil {
		return "", Session{}, err
	}
	set, err := s.signin.FinishPasskeyLogin(ctx, a, body, c)
	if err != nil {
		return "", Session{}, err
	}
	if set.MFA != nil {
		return "", Session{}, &SecondFactorError{Challenge: set.MFA.Challenge.Token, First: "passkey"}
	}
	return s.signedIn(ctx, a, set, "passkey", ip, userAgent)
}

// caller is the operator as the built-in app's signed-in user, with the
// app: what signin's own-account methods take.
func (s *Service) caller(ctx context.Context, sess Session) (store.App, signin.Caller, error) {
	if sess.AppSessionID == "" {
		return store.App{}, signin.Caller{}, ErrNeedsCodeSignIn
	}
	a, err := s.app(ctx)
	if err != nil {
		return store.App{}, signin.Caller{}, err
	}
	c, err := s.signin.SessionCaller(ctx, a, sess.AppSessionID)
	if errors.Is(err, signin.ErrUnauthenticated) {
		return store.App{}, signin.Caller{}, ErrNeedsCodeSignIn
	}
	return a, c, err
}

// Passkeys lists the operator's passkeys (none after a link sign-in: they
// are listed once signed in with a code or a passkey).
func (s *Service) Passkeys(ctx context.Context, sess Session) ([]Passkey, error) {
	a, c, err := s.caller(ctx, sess)
	if errors.Is(err, ErrNeedsCodeSignIn) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.signin.ListPasskeys(ctx, a, c)
}

// BeginPasskeyRegistration starts adding a passkey for the operator.
func (s *Service) BeginPasskeyRegistration(ctx context.Context, sess Session) (_ json.RawMessage, err error) {
	defer errs.Wrap(&err, "begin console passkey registration")
	a, c, err := s.caller(ctx, sess)
	if err != nil {
		return nil, err
	}
	opts, err := s.signin.BeginDeviceRegistration(ctx, a, c)
	return opts.Options, err
}

// FinishPasskeyRegistration stores the passkey the browser made.
func (s *Service) FinishPasskeyRegistration(ctx context.Context, sess Session, body []byte, client signin.Client) (_ Passkey, err error) {
	defer errs.Wrap(&err, "console passkey registration")
	a, c, err := s.caller(ctx, sess)
	if err != nil {
		return Passkey{}, err
	}
	return s.signin.FinishDeviceRegistration(ctx, a, c, body, client)
}

// DeletePasskey removes one of the operator's passkeys.
func (s *Service) DeletePasskey(ctx context.Context, sess Session, id string) (err error) {
	defer errs.Wrap(&err, "delete console passkey")
	a, c, err := s.caller(ctx, sess)
	if err != nil {
		return err
	}
	return s.signin.DeletePasskey(ctx, a, c, id)
}
