package signin

import (
	"errors"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/metrics"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// metricMethod is a challenge method's label in gatehouse_signins_total.
func metricMethod(method string) string {
	switch method {
	case MethodEmailOTP:
		return metrics.MethodEmailCode
	case MethodSMSOTP:
		return metrics.MethodSMSCode
	case MethodMagicLink:
		return metrics.MethodMagicLink
	case MethodPasskey:
		return metrics.MethodPasskey
	case MethodTOTP:
		return metrics.MethodTOTP
	case MethodBackupCode:
		return metrics.MethodBackupCode
	case MethodPush:
		return metrics.MethodPush
	case methodInvite:
		return metrics.MethodInvite
	case MethodOAuth:
		return metrics.MethodOAuth
	}
	return metrics.MethodUnknown
}

// methodInvite names an accepted invitation (no challenge method).
const methodInvite = "invite"

// signInResult classifies how a sign-in attempt ended; counted is false for
// an answer that judged nothing (a magic link not opened yet).
func signInResult(err error, mfa bool) (result string, counted bool) {
	var rl *RateLimitedError
	var closed *ChallengeClosedError
	var pk *PasskeyError
	var invalid *errs.Invalid
	switch {
	case err == nil && mfa:
		return metrics.ResultMFARequired, true
	case err == nil:
		return metrics.ResultSuccess, true
	case errors.Is(err, ErrMagicLinkPending), errors.As(err, &rl) && rl.SlowDown:
		// A magic link not opened yet, a poll too soon: nothing judged.
		return "", false
	case errors.As(err, &rl):
		return metrics.ResultRateLimited, true
	case errors.Is(err, ErrMagicLinkDenied):
		return metrics.ResultDenied, true
	case errors.Is(err, ErrCodeEntryLocked):
		return metrics.ResultLocked, true
	case errors.Is(err, ErrTooManyAttempts):
		return metrics.ResultTooManyAttempts, true
	case errors.As(err, &closed) && closed.Status == store.ChallengeExpired:
		return metrics.ResultExpired, true
	case errors.As(err, &closed), errors.Is(err, ErrInvalidCode), errors.Is(err, ErrMagicLinkNotFound),
		errors.Is(err, ErrUnauthenticated), errors.As(err, &pk), errors.As(err, &invalid):
		return metrics.ResultInvalid, true
	}
	return metrics.ResultError, true
}

// refreshResult classifies how a refresh ended.
func refreshResult(err error, reused bool) string {
	switch {
	case reused:
		return metrics.ResultReused
	case err == nil:
		return metrics.ResultSuccess
	case errors.Is(err, ErrUnauthenticated):
		return metrics.ResultInvalid
	}
	return metrics.ResultError
}

// countSignIn counts one sign-in attempt of method (a challenge method, or
// "" when none was found) that ended with err.
func (s *Service) countSignIn(method string, mfa bool, err error) {
	if result, ok := signInResult(err, mfa); ok {
		s.metrics.SignIn(metricMethod(method), result)
	}
}
