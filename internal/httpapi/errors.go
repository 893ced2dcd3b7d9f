package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// ErrorBody is the interface's error shape: {error, error_code?}, plus
// user_meta_errors where a user's metadata was refused.
type ErrorBody struct {
	Error          string            `json:"error"`
	Code           string            `json:"error_code,omitempty"`
	UserMetaErrors map[string]string `json:"user_meta_errors,omitempty"`
}

// apiError is an error with its HTTP status and body; huma writes it as is.
type apiError struct {
	ErrorBody
	status int
	header http.Header
}

func (e *apiError) Error() string  { return e.ErrorBody.Error }
func (e *apiError) GetStatus() int { return e.status }

// GetHeaders adds headers such as Retry-After.
func (e *apiError) GetHeaders() http.Header { return e.header }

func newAPIError(status int, code, msg string) *apiError {
	return &apiError{status: status, ErrorBody: ErrorBody{Error: msg, Code: code}}
}

// errorTable is the one place domain errors become responses. 401 and 403
// carry only {error}, as the interface shows them.
var errorTable = []struct {
	target error
	status int
	code   string
	msg    string
}{
	{tenant.ErrUnauthorized, http.StatusUnauthorized, "", "Unauthorized"},
	{tenant.ErrForbidden, http.StatusForbidden, "", "Forbidden"},
	{tenant.ErrAppNotFound, http.StatusNotFound, "app_not_found", "App not found"},
	{tenant.ErrWorkspaceNotFound, http.StatusNotFound, "workspace_not_found", "Workspace not found"},
	{tenant.ErrMemberNotFound, http.StatusNotFound, "member_not_found", "Member not found"},
	{tenant.ErrMemberExists, http.StatusConflict, "member_exists", "A member with this e-mail address already exists"},
	{tenant.ErrSlugTaken, http.StatusConflict, "slug_taken", "This slug is already taken"},
	{tenant.ErrLastOwner, http.StatusConflict, "last_owner", "A workspace must keep at least one owner"},
	{tenant.ErrAPIKeyNotFound, http.StatusNotFound, "api_key_not_found", "API key not found"},
	{tenant.ErrSecretNotFound, http.StatusNotFound, "api_secret_not_found", "API secret not found"},
	{appuser.ErrInvalidIdentifier, http.StatusBadRequest, "invalid_identifier", "Invalid identifier: send a valid e-mail address or an international phone number"},
	{appuser.ErrIdentifierNotAllowed, http.StatusBadRequest, "invalid_identifier", "This app does not accept that kind of identifier"},
	{appuser.ErrUserExists, http.StatusBadRequest, "user_exists", "User already exists"},
	{appuser.ErrUserNotFound, http.StatusNotFound, "user_not_found", "User not found"},
	{appuser.ErrMetaTooLarge, http.StatusBadRequest, "invalid_request", "user_meta is too large (at most 50 keys and 16 KiB)"},
	{appuser.ErrInvalidStatus, http.StatusBadRequest, "invalid_request", "status must be active, pending, inactive or imported"},
	{errDevOnly, http.StatusNotFound, "not_found", "Not found"},
	{signin.ErrUnauthenticated, http.StatusUnauthorized, "", "Unauthorized"},
	{signin.ErrInvalidCode, http.StatusUnprocessableEntity, "invalid_code", "Invalid or expired code"},
	{signin.ErrTooManyAttempts, http.StatusTooManyRequests, "too_many_attempts", "Too many wrong codes: request a new code later"},
	// The client SDK treats exactly this 404 message as non-fatal (client-compat §6.3).
	{signin.ErrMagicLinkNotFound, http.StatusNotFound, "magic_link_not_found_or_expired", "Magic link not found or expired"},
	{signin.ErrMagicLinkPending, http.StatusConflict, "magic_link_pending", "Magic link not yet activated"},
	{signin.ErrSessionNotFound, http.StatusNotFound, "session_not_found", "Session not found"},
	{webhook.ErrEndpointNotFound, http.StatusNotFound, "webhook_not_found", "Webhook endpoint not found"},
	{webhook.ErrDeliveryNotFound, http.StatusNotFound, "delivery_not_found", "Webhook delivery not found"},
	{webhook.ErrDeliveryInProgress, http.StatusConflict, "delivery_in_progress", "The delivery is still queued or being retried"},
	// 503 is retried by the client SDK, which is right for an outage and
	// never used for an application error.
	{store.ErrUnavailable, http.StatusServiceUnavailable, "", "Service temporarily unavailable"},
}

var errDevOnly = errors.New("development mode only")

// fail turns err into the response error; unknown errors are logged once
// with the request id and become a bare 500.
func (s *Server) fail(ctx context.Context, err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var inv *tenant.InvalidError
	if errors.As(err, &inv) {
		return newAPIError(http.StatusBadRequest, "invalid_request", inv.Error())
	}
	var limited *signin.RateLimitedError
	if errors.As(err, &limited) {
		e := newAPIError(http.StatusTooManyRequests, "rate_limited", "Too many requests: slow down")
		e.header = http.Header{"Retry-After": {strconv.Itoa(ratelimit.RetryAfterSeconds(limited.RetryAfter))}}
		return e
	}
	var hookInv *webhook.InvalidError
	if errors.As(err, &hookInv) {
		return newAPIError(http.StatusBadRequest, "invalid_request", hookInv.Error())
	}
	var meta *appuser.MetaInvalidError
	if errors.As(err, &meta) {
		e := newAPIError(http.StatusUnprocessableEntity, "invalid_user_meta", "user_meta does not match the app's schema")
		e.UserMetaErrors = meta.Errors
		return e
	}
	for _, row := range errorTable {
		if errors.Is(err, row.target) {
			if row.status >= 500 {
				s.Log.ErrorContext(ctx, "request failed", "request_id", requestID(ctx), "err", err)
			}
			e := newAPIError(row.status, row.code, row.msg)
			if row.status == http.StatusTooManyRequests {
				e.header = http.Header{"Retry-After": {"60"}}
			}
			return e
		}
	}
	if errors.Is(err, context.Canceled) {
		return newAPIError(499, "", "Client closed request")
	}
	s.Log.ErrorContext(ctx, "request failed", "request_id", requestID(ctx), "err", err)
	return newAPIError(http.StatusInternalServerError, "", "internal error")
}

// useErrorShape makes huma's own errors (malformed JSON, failed validation,
// oversize or wrongly typed bodies) use the interface's shape. huma keeps this
// hook in a package variable; setting it again is harmless.
func useErrorShape() {
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		var details []string
		for _, e := range errs {
			var d *huma.ErrorDetail
			if errors.As(e, &d) {
				// Never echo d.Value: it is the caller's input.
				loc := strings.TrimPrefix(d.Location, "body.")
				details = append(details, strings.TrimSpace(loc+" "+d.Message))
			}
		}
		code := ""
		switch status {
		case http.StatusUnprocessableEntity:
			status, code = http.StatusBadRequest, "invalid_request"
		case http.StatusBadRequest:
			code = "invalid_request"
			switch {
			case slices.ContainsFunc(errs, func(e error) bool { return errors.Is(e, errBadText) || strings.Contains(e.Error(), msgBadText) }):
				msg, details = "Request body: "+msgBadText, nil
			case len(details) > 0 && strings.HasPrefix(details[0], "body ") || strings.Contains(strings.ToLower(msg), "unmarshal"):
				msg, details = "Malformed JSON body", nil
			}
		case http.StatusRequestEntityTooLarge:
			code, msg, details = "body_too_large", "Request body too large (at most 1 MiB)", nil
		case http.StatusUnsupportedMediaType:
			code, msg, details = "unsupported_media_type", "Content-Type must be application/json", nil
		}
		if status >= 500 {
			msg, details = "internal error", nil
		}
		if len(details) > 0 {
			msg = fmt.Sprintf("%s: %s", strings.TrimSuffix(msg, "."), strings.Join(details, "; "))
		}
		if msg != "" {
			msg = strings.ToUpper(msg[:1]) + msg[1:]
		}
		return &apiError{status: status, ErrorBody: ErrorBody{Error: msg, Code: code}}
	}
}
