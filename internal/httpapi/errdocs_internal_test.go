package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
)

// TestErrorCodesDescribed: every error_code the table and the typed errors
// answer is in the reference's catalogue with its status and a meaning, and
// the catalogue names no code that is never answered.
func TestErrorCodesDescribed(t *testing.T) {
	for code := range errorCodes {
		if codeAbout[code] == "" {
			t.Errorf("error_code %s has no description in codeAbout", code)
		}
	}
	for code := range codeAbout {
		if _, ok := errorCodes[code]; !ok {
			t.Errorf("codeAbout describes %s, which no error answers", code)
		}
	}
	for _, row := range errorTable {
		if row.code == "" {
			if noCodeMsg[row.status] != row.msg {
				t.Errorf("table row %v: %d without error_code, message %q; the reference shows %q", row.target, row.status, row.msg, noCodeMsg[row.status])
			}
			continue
		}
		if d := errorCodes[row.code]; d.status != row.status {
			t.Errorf("table row %v: %s is %d in the reference, %d in the table", row.target, row.code, d.status, row.status)
		}
	}
	s := &Server{Deps: Deps{Log: slog.New(slog.DiscardHandler)}}
	typed := []error{
		&outbound.RateLimitedError{}, &signin.RateLimitedError{}, &signin.RateLimitedError{SlowDown: true},
		&errs.Invalid{Field: "f", Reason: "is wrong"},
		&outbound.LimitError{Limit: outbound.LimitNumber}, &outbound.LimitError{Limit: outbound.LimitDaily}, &outbound.LimitError{Limit: outbound.LimitPrefix},
		&signin.PasskeyError{Kind: signin.ErrPasskeyRegistration, Detail: "x"}, &signin.PasskeyError{Kind: signin.ErrPasskeyVerification, Detail: "x"},
		&signin.ChallengeClosedError{Status: "expired"}, &signin.StepUpRequiredError{Minutes: 10}, basicChallenge{},
		&appuser.MetaInvalidError{},
	}
	for _, err := range typed {
		ae := s.fail(context.Background(), err)
		if ae.Code == "" {
			continue
		}
		d, ok := errorCodes[ae.Code]
		if !ok || d.status != ae.status {
			t.Errorf("%T answers %d %s; the reference has %+v", err, ae.status, ae.Code, d)
		}
		if ae.status == http.StatusTooManyRequests && ae.header.Get("Retry-After") == "" {
			t.Errorf("%T answers 429 without Retry-After", err)
		}
	}
}

// TestDocumentedAnswers: the check TestMain applies to every error answered
// (export_test.go) accepts the documented answers and refuses the others.
func TestDocumentedAnswers(t *testing.T) {
	s := New(Deps{})
	verify := s.operation(http.MethodPost, "/v1/auth/{app_id}/otps/verify")
	refresh := s.operation(http.MethodPost, "/v1/auth/{app_id}/tokens/refresh")
	for _, c := range []struct {
		o    string
		a    Answer
		ok   bool
		json bool
	}{
		{"verify", Answer{"verifyOtp", 429, "too_many_attempts"}, true, true},
		{"verify", Answer{"verifyOtp", 422, "invalid_code"}, true, true},
		{"verify", Answer{"verifyOtp", 429, "slug_taken"}, false, true},
		{"verify", Answer{"verifyOtp", 409, "magic_link_pending"}, false, true},
		{"verify", Answer{"verifyOtp", 429, ""}, false, true},
		{"verify", Answer{"verifyOtp", 404, ""}, false, false}, // a text/plain 404
		{"refresh", Answer{"refreshTokens", 401, ""}, true, true},
		{"refresh", Answer{"refreshTokens", 403, ""}, false, true},
	} {
		o, mt := verify, "text/plain"
		if c.o == "refresh" {
			o = refresh
		}
		if c.json {
			mt = "application/json"
		}
		if why := documented(o, c.a, mt); (why == "") != c.ok {
			t.Errorf("documented(%v, %s) = %q; want ok %v", c.a, mt, why, c.ok)
		}
	}
}
