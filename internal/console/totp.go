package console

import (
	"context"
	"errors"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
)

// Operators' authenticator apps (TOTP) are the built-in app's second
// factor: its MFA policy is optional, so an operator who set one up is
// asked for it after the code or passkey, by signin's MFA challenge (one
// attempt taken before each comparison, the challenge's attempt limit).

// SecondFactorError is a sign-in that waits for the operator's
// authenticator app: answer Challenge with VerifySecondFactor.
type SecondFactorError struct {
	Challenge string // the MFA challenge's token
	First     string // the first factor's method: email_code or passkey
}

func (e *SecondFactorError) Error() string { return "a code from your authenticator app is needed" }

// VerifySecondFactor answers the MFA challenge of a sign-in whose first
// factor was first, and starts the console session.
func (s *Service) VerifySecondFactor(ctx context.Context, challenge, first, code, ip, userAgent string, c signin.Client) (cookie string, _ Session, err error) {
	defer errs.Wrap(&err, "console second factor")
	if first != "email_code" && first != "passkey" {
		return "", Session{}, errs.Invalidf("first", "is not one this form gave")
	}
	a, err := s.app(ctx)
	if err != nil {
		return "", Session{}, err
	}
	res, err := s.signin.VerifyChallenge(ctx, a, challenge, signin.VerifyInput{Code: code}, c)
	if err != nil {
		return "", Session{}, err
	}
	if res.Tokens == nil || res.Tokens.MFA != nil {
		return "", Session{}, signin.ErrInvalidCode
	}
	return s.signedIn(ctx, a, *res.Tokens, first+"+totp", ip, userAgent)
}

// TOTP lists the operator's authenticator apps (none after a link sign-in).
func (s *Service) TOTP(ctx context.Context, sess Session) ([]signin.MFAMethod, error) {
	a, c, err := s.caller(ctx, sess)
	if errors.Is(err, ErrNeedsCodeSignIn) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	o, err := s.signin.MFAMethods(ctx, a, c)
	if err != nil {
		return nil, err
	}
	var out []signin.MFAMethod
	for _, m := range o.Methods {
		if m.Method == signin.MethodTOTP && m.Verified {
			out = append(out, m)
		}
	}
	return out, nil
}

// EnrollTOTP starts setting up an authenticator app: the secret and its
// otpauth URI, active once VerifyTOTP confirms a code from it.
func (s *Service) EnrollTOTP(ctx context.Context, sess Session) (_ signin.NewEnrollment, err error) {
	defer errs.Wrap(&err, "console totp enrolment")
	a, c, err := s.caller(ctx, sess)
	if err != nil {
		return signin.NewEnrollment{}, err
	}
	return s.signin.EnrollTOTP(ctx, a, c, "Authenticator app", "")
}

// VerifyTOTP confirms an enrolment with a code from the app.
func (s *Service) VerifyTOTP(ctx context.Context, sess Session, id, code string, client signin.Client) (err error) {
	defer errs.Wrap(&err, "console totp confirmation")
	a, c, err := s.caller(ctx, sess)
	if err != nil {
		return err
	}
	_, err = s.signin.VerifyEnrollment(ctx, a, c, id, code, client)
	return err
}

// DeleteTOTP removes one of the operator's authenticator apps.
func (s *Service) DeleteTOTP(ctx context.Context, sess Session, id string) (err error) {
	defer errs.Wrap(&err, "console totp removal")
	a, c, err := s.caller(ctx, sess)
	if err != nil {
		return err
	}
	return s.signin.DeleteMFAMethod(ctx, a, c, id, "")
}
