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

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/machine"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/social"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// ErrorBody is the interface's error shape: {error, error_code?}, plus
// user_meta_errors where a user's metadata was refused.
type ErrorBody struct {
	Error          string            `json:"error" doc:"What went wrong, for people."`
	Code           string            `json:"error_code,omitempty" doc:"What went wrong, for programs; absent on 401 and 403."`
	UserMetaErrors map[string]string `json:"user_meta_errors,omitempty" doc:"Why each refused user_meta key was refused (422 invalid_user_meta)."`
	Details        map[string]any    `json:"details,omitempty" doc:"More about the error: recent_sign_in_minutes with 403 verification_required; rows (index, field, error_code, error) and total with a refused user import."`
}

// ErrorsBody is the one other error shape (interface §4.6, §7): a PATCH of
// a message service provider that names none.
type ErrorsBody struct {
	Errors string `json:"errors" doc:"What went wrong, for people."`
}

// apiError is an error with its HTTP status and body; huma writes it as is.
type apiError struct {
	ErrorBody
	status int
	header http.Header
	// errorsShape: the body is ErrorsBody, with Error as its text.
	errorsShape bool
}

// MarshalJSON writes the body of the error's shape.
func (e *apiError) MarshalJSON() ([]byte, error) {
	if e.errorsShape {
		return jsonMarshal(ErrorsBody{Errors: e.ErrorBody.Error})
	}
	return jsonMarshal(e.ErrorBody)
}

func (e *apiError) Error() string  { return e.ErrorBody.Error }
func (e *apiError) GetStatus() int { return e.status }

// GetHeaders adds headers such as Retry-After.
func (e *apiError) GetHeaders() http.Header { return e.header }

func newAPIError(status int, code, msg string) *apiError {
	return &apiError{status: status, ErrorBody: ErrorBody{Error: msg, Code: code}}
}

// errorTable is the one place domain errors become responses: sentinels
// matched with errors.Is, then the typed errors. 401 and 403 carry only
// {error}, as the interface shows them; the exceptions are 403
// verification_required, a code the server SDKs read, 401
// m2m_session_required, which the interface lists (§7), and 401
// invalid_client, RFC 6749's code at the M2M token endpoint.
var errorTable = []struct {
	target error
	status int
	code   string
	msg    string
}{
	{tenant.ErrUnauthorized, http.StatusUnauthorized, "", "Unauthorized"},
	{access.ErrForbidden, http.StatusForbidden, "", "Forbidden"},
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
	{signin.ErrCodeEntryLocked, http.StatusTooManyRequests, "code_entry_locked", "Too many wrong codes: sign-in by code is locked until you sign in another way, such as a magic link"},
	// The client SDK treats exactly this 404 message as non-fatal (client-compat §6.3).
	{signin.ErrMagicLinkDenied, http.StatusNotFound, "magic_link_denied", "Magic link not found or expired"},
	{signin.ErrMagicLinkNotFound, http.StatusNotFound, "magic_link_not_found_or_expired", "Magic link not found or expired"},
	{signin.ErrMagicLinkPending, http.StatusConflict, "magic_link_pending", "Magic link not yet activated"},
	{signin.ErrSessionNotFound, http.StatusNotFound, "session_not_found", "Session not found"},
	{signin.ErrPasskeyNotFound, http.StatusNotFound, "device_not_found", "Passkey not found"},
	{signin.ErrChallengeNotFound, http.StatusNotFound, "challenge_not_found", "Challenge not found"},
	{signin.ErrChallengePending, http.StatusConflict, "challenge_pending", "The challenge has not been approved yet"},
	{signin.ErrIdentifierTaken, http.StatusConflict, "identifier_taken", "Another user has this e-mail address or phone number"},
	{signin.ErrMFAMethodNotFound, http.StatusNotFound, "mfa_method_not_found", "Second factor not found"},
	{signin.ErrIdentityNotFound, http.StatusNotFound, "identity_not_found", "Identity not found"},
	{signin.ErrLastSignInMethod, http.StatusConflict, "last_sign_in_method", "This identity is the user's only way to sign in: add an e-mail address or phone number the app signs in with, or a passkey, first"},
	{signin.ErrCodeUsed, http.StatusUnprocessableEntity, "code_used", "This code was used already: wait for the next code of your authenticator app"},
	{signin.ErrFactorLocked, http.StatusTooManyRequests, "factor_locked", "Too many wrong codes for this second factor: use another one"},
	{signin.ErrPasskeysUnavailable, http.StatusConflict, "webauthn_unavailable", "Passkeys need the app's origin on a domain name (set origin or webauthn_rp_id)"},
	// Machine-to-machine: RFC 6749 §5.2's codes at the token endpoint, in
	// this API's shape ({error, error_code}, not {error, error_description}).
	{machine.ErrInvalidClient, http.StatusUnauthorized, "invalid_client", "Client authentication failed"},
	{machine.ErrUnsupportedGrantType, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be client_credentials"},
	{machine.ErrInvalidScope, http.StatusBadRequest, "invalid_scope", "scope is malformed or asks for a scope the client does not have"},
	{machine.ErrSessionRequired, http.StatusUnauthorized, "m2m_session_required", "An M2M access token is required (X-M2M-Token)"},
	{machine.ErrUnauthenticated, http.StatusUnauthorized, "", "Unauthorized"},
	{machine.ErrClientNotFound, http.StatusNotFound, "m2m_client_not_found", "M2M client not found"},
	{outbound.ErrAppNotFound, http.StatusNotFound, "app_not_found", "App not found"},
	{outbound.ErrProviderNotFound, http.StatusNotFound, "provider_not_found", "Message service provider not found: the slug names no provider type of this server"},
	{social.ErrAppNotFound, http.StatusNotFound, "app_not_found", "App not found"},
	{social.ErrProviderNotFound, http.StatusNotFound, "oauth_provider_not_found", "Social sign-in provider not found"},
	// SMS fraud guards (security R-RL-3): refused before anything is stored or sent.
	{outbound.ErrCountryNotAllowed, http.StatusBadRequest, "phone_country_not_allowed", "This app does not send SMS to this phone number's country"},
	{outbound.ErrLineTypeNotAllowed, http.StatusBadRequest, "phone_type_not_allowed", "This phone number cannot get codes by SMS (a landline, premium-rate, toll-free or shared-cost number): use a mobile number"},
	{outbound.ErrTemplateNotFound, http.StatusNotFound, "template_not_found", "The app has no template of this message for this channel and locale"},
	{webhook.ErrEndpointNotFound, http.StatusNotFound, "webhook_not_found", "Webhook endpoint not found"},
	{webhook.ErrDeliveryNotFound, http.StatusNotFound, "delivery_not_found", "Webhook delivery not found"},
	{webhook.ErrDeliveryInProgress, http.StatusConflict, "delivery_in_progress", "The delivery is still queued or being retried"},
	{webhook.ErrTooManyEndpoints, http.StatusConflict, "webhook_limit_reached", "This app has as many webhook endpoints as allowed: delete one first"},
	// 503 is retried by the client SDK, which is right for an outage and
	// never used for an application error.
	{errs.ErrUnavailable, http.StatusServiceUnavailable, "", "Service temporarily unavailable"},
	// A deadline passed: the request's own (http.request_timeout), or the
	// database's bound on a statement, a lock wait or an idle transaction.
	// Retried like an outage; nothing was half-written (its transaction
	// rolled back).
	{errs.ErrTimeout, http.StatusServiceUnavailable, codeTimeout, msgTimeout},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, codeTimeout, msgTimeout},
}

// The answer to a request that ran out of time, and when to try again: the
// contention behind it (a lock, a full pool) is usually over by then.
const (
	codeTimeout       = "timeout"
	msgTimeout        = "The request took too long: try again shortly"
	timeoutRetryAfter = "1"
)

// msgProviderKeyMissing is the {errors} text of a provider PATCH that names no provider.
const msgProviderKeyMissing = "slug is required: name the provider to update (slug, provider_key, provider or provider_type)"

// typedErrors are the errors that carry details of their own.
var typedErrors = []func(error) *apiError{
	// Interface §4.6 and §7: the one answer in the {errors} shape.
	func(err error) *apiError {
		if !errors.Is(err, outbound.ErrProviderKeyMissing) {
			return nil
		}
		ae := newAPIError(http.StatusBadRequest, "", msgProviderKeyMissing)
		ae.errorsShape = true
		return ae
	},
	as(func(e *outbound.RateLimitedError) *apiError {
		ae := newAPIError(http.StatusTooManyRequests, "rate_limited", "Too many test messages for this app: try again later")
		ae.header = http.Header{"Retry-After": {strconv.Itoa(ratelimit.RetryAfterSeconds(e.RetryAfter))}}
		return ae
	}),
	as(func(e *machine.RateLimitedError) *apiError {
		ae := newAPIError(http.StatusTooManyRequests, "rate_limited", "Too many failed client authentications: try again later")
		ae.header = http.Header{"Retry-After": {strconv.Itoa(ratelimit.RetryAfterSeconds(e.RetryAfter))}}
		return ae
	}),
	as(func(e *errs.Invalid) *apiError {
		return newAPIError(http.StatusBadRequest, "invalid_request", e.Field+" "+e.Reason)
	}),
	as(func(e *signin.RateLimitedError) *apiError {
		ae := newAPIError(http.StatusTooManyRequests, "rate_limited", "Too many requests: slow down")
		if e.SlowDown {
			// RFC 8628 §3.5's name for polling faster than the interval.
			ae = newAPIError(http.StatusTooManyRequests, "slow_down", "Polling too fast: wait for Retry-After seconds between polls")
		}
		ae.header = http.Header{"Retry-After": {strconv.Itoa(ratelimit.RetryAfterSeconds(e.RetryAfter))}}
		return ae
	}),
	// The SMS guard's limits: the number's waits look like every other 429
	// (rate_limited); the caps have codes of their own. Retry-After: when
	// the number may be texted again, or the cap's window ends.
	as(func(e *outbound.LimitError) *apiError {
		var ae *apiError
		switch code := outbound.Reason(e); code {
		case "sms_daily_cap_reached":
			ae = newAPIError(http.StatusTooManyRequests, code, "This app has sent as many SMS today as it may: try again later or use e-mail")
		case "sms_prefix_cap_reached":
			ae = newAPIError(http.StatusTooManyRequests, code, "Too many SMS to numbers like this one: try again later")
		default:
			ae = newAPIError(http.StatusTooManyRequests, "rate_limited", "Too many requests: slow down")
		}
		ae.header = http.Header{"Retry-After": {strconv.Itoa(ratelimit.RetryAfterSeconds(e.RetryAfter))}}
		return ae
	}),
	// The client SDK's UI knows these two slugs; the message says which check failed.
	as(func(e *signin.PasskeyError) *apiError {
		if errors.Is(e.Kind, signin.ErrPasskeyRegistration) {
			return newAPIError(http.StatusBadRequest, "webauthn_register_error", "Passkey registration failed: "+e.Detail)
		}
		return newAPIError(http.StatusBadRequest, "webauthn_verification_error", "Passkey verification failed: "+e.Detail)
	}),
	as(func(e *signin.ChallengeClosedError) *apiError {
		return newAPIError(http.StatusConflict, "challenge_closed", "The challenge is "+e.Status)
	}),
	// The server SDKs' live suites read this code and detail (client-compat §8.3).
	as(func(e *signin.StepUpRequiredError) *apiError {
		ae := newAPIError(http.StatusForbidden, "verification_required",
			fmt.Sprintf("Verification required: sign in again or complete a step_up challenge (within %d minutes)", e.Minutes))
		ae.Details = map[string]any{"recent_sign_in_minutes": e.Minutes}
		return ae
	}),
	// RFC 6749 §5.2: a 401 to a client that used HTTP Basic names the scheme.
	as(func(basicChallenge) *apiError {
		ae := newAPIError(http.StatusUnauthorized, "invalid_client", "Client authentication failed")
		ae.header = http.Header{"Www-Authenticate": {`Basic realm="gatehouse", charset="UTF-8"`}}
		return ae
	}),
	// An import is refused whole: every problem, row by row, in details.rows.
	as(func(e *appuser.ImportInvalidError) *apiError { return importInvalid(e) }),
	as(func(e *appuser.MetaInvalidError) *apiError {
		ae := newAPIError(http.StatusUnprocessableEntity, "invalid_user_meta", "user_meta does not match the app's schema")
		ae.UserMetaErrors = e.Errors
		return ae
	}),
}

// as matches errors of type T with errors.As and builds their response.
func as[T error](build func(T) *apiError) func(error) *apiError {
	return func(err error) *apiError {
		var t T
		if errors.As(err, &t) {
			return build(t)
		}
		return nil
	}
}

var errDevOnly = errors.New("development mode only")

// fail turns err into the response error; unknown errors are logged once
// with the request id and become a bare 500.
func (s *Server) fail(ctx context.Context, err error) *apiError {
	for _, row := range errorTable {
		if errors.Is(err, row.target) {
			e := newAPIError(row.status, row.code, row.msg)
			switch {
			case row.code == codeTimeout:
				// Expected under load rather than a fault: a warning, which
				// names what ran out of time.
				// A database that stopped answering times every request
				// out: TimeoutLog keeps that to one line.
				s.TimeoutLog.WarnContext(ctx, "request timed out", "request_id", requestID(ctx), "err", err)
				e.header = http.Header{"Retry-After": {timeoutRetryAfter}}
			case errors.Is(err, errs.ErrUnavailable):
				s.DBLog.ErrorContext(ctx, "request failed: the database is unavailable", "request_id", requestID(ctx), "err", err)
			case row.status >= 500:
				s.Log.ErrorContext(ctx, "request failed", "request_id", requestID(ctx), "err", err)
			case row.status == http.StatusTooManyRequests:
				e.header = http.Header{"Retry-After": {"60"}}
			}
			return e
		}
	}
	for _, typed := range typedErrors {
		if e := typed(err); e != nil {
			return e
		}
	}
	if errors.Is(err, context.Canceled) {
		return newAPIError(499, "", "Client closed request")
	}
	s.Log.ErrorContext(ctx, "request failed", "request_id", requestID(ctx), "err", err)
	return newAPIError(http.StatusInternalServerError, "", "internal error")
}

// writeError writes err's response from a huma middleware (before the operation runs).
func (s *Server) writeError(hctx huma.Context, err error) {
	ae := s.fail(hctx.Context(), err)
	b, _ := ae.MarshalJSON()
	for k, vs := range ae.header {
		for _, v := range vs {
			hctx.AppendHeader(k, v)
		}
	}
	hctx.SetHeader("Content-Type", "application/json")
	hctx.SetStatus(ae.status)
	_, _ = hctx.BodyWriter().Write(b)
}

// huma writes its own errors (malformed JSON, failed validation, oversize or
// wrongly typed bodies) as RFC 9457 problem documents, built by a hook that
// is global to the process. Rather than replace that hook, each Server
// reshapes them on the way out: shapeErrors gives every operation a context
// that keeps the JSON content type and takes the status the reshaped body
// asks for, and reshapeError (a response transformer of this API) turns the
// problem document into ErrorBody.

// errorContext is the huma.Context operations run with.
type errorContext struct {
	humaContext
	status *int // set by reshapeError: the status of the reshaped error
}

// humaContext lets errorContext embed huma.Context, whose Context method
// would clash with a field named Context.
type humaContext = huma.Context

func (c *errorContext) SetStatus(code int) {
	if *c.status != 0 {
		code = *c.status
	}
	c.humaContext.SetStatus(code)
}

// WithContext keeps the wrapper when a middleware adds a value (huma.WithValue).
func (c *errorContext) WithContext(ctx context.Context) huma.Context {
	return &errorContext{humaContext: huma.WithContext(c.humaContext, ctx), status: c.status}
}

func (c *errorContext) SetHeader(name, value string) {
	if strings.EqualFold(name, "Content-Type") && value == "application/problem+json" {
		value = "application/json"
	}
	c.humaContext.SetHeader(name, value)
}

// shapeErrors is the first huma middleware.
func shapeErrors(hctx huma.Context, next func(huma.Context)) {
	next(&errorContext{humaContext: hctx, status: new(int)})
}

// reshapeError is a response transformer: it turns huma's problem documents
// into ErrorBody and leaves every other body alone.
func reshapeError(hctx huma.Context, _ string, v any) (any, error) {
	m, ok := v.(*huma.ErrorModel)
	if !ok {
		return v, nil
	}
	status, body := humaErrorBody(m)
	if c, ok := hctx.(*errorContext); ok {
		*c.status = status
	}
	return body, nil
}

// humaErrorBody is the status and body for one of huma's own errors. The
// caller's input (ErrorDetail.Value) is never echoed.
func humaErrorBody(m *huma.ErrorModel) (int, ErrorBody) {
	body := false // the body did not parse as JSON
	for _, d := range m.Errors {
		if d != nil && d.Location == "body" {
			body = true
		}
	}
	details := validationSentences(m.Errors)
	status, code, msg := m.Status, "", m.Detail
	switch status {
	case http.StatusUnprocessableEntity:
		status, code = http.StatusBadRequest, "invalid_request"
	case http.StatusBadRequest:
		code = "invalid_request"
		switch {
		case body && nulInBody(m.Errors):
			msg, details = "Request body: "+msgBadText, nil
		case body && bodyHas(m.Errors, duplicateKey):
			msg, details = msgDuplicateKey, nil
		case body:
			msg, details = "Malformed JSON body", nil
		}
	case http.StatusRequestEntityTooLarge:
		code, msg, details = "body_too_large", "Request body too large (at most 1 MiB)", nil
	case http.StatusUnsupportedMediaType:
		code, msg, details = "unsupported_media_type", msgNotJSON, nil
	}
	if status >= 500 {
		msg, details = "internal error", nil
	}
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	if len(details) > 0 {
		// The details say all: huma's "validation failed" before them adds
		// nothing. They start with a field's name, which keeps its case.
		msg = strings.Join(details, "; ")
	}
	return status, ErrorBody{Error: msg, Code: code}
}

// nulInBody reports whether the body that failed to parse held a NUL escape,
// which unmarshalJSON refuses: judged from the body itself, not the error's text.
func nulInBody(details []*huma.ErrorDetail) bool { return bodyHas(details, nulEscape) }

// bodyHas reports whether the body that failed to parse has what test
// finds, one of the things unmarshalJSON refuses.
func bodyHas(details []*huma.ErrorDetail, test func([]byte) bool) bool {
	for _, d := range details {
		if d != nil && d.Location == "body" {
			if s, ok := d.Value.(string); ok && test([]byte(s)) {
				return true
			}
		}
	}
	return false
}

// validationSentences turns huma's validation details ("body.app.name",
// "expected string") into short sentences that name the field as the
// caller wrote it ("app.name must be a string"). Fields that are missing
// are named together ("otp and user_id are required"). The caller's value
// is never echoed.
func validationSentences(details []*huma.ErrorDetail) []string {
	var out, missing, unknown []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, d := range details {
		if d == nil {
			continue
		}
		field := d.Location
		for _, p := range []string{"body", "query", "path", "header", "cookie"} {
			if field == p {
				field = ""
				break
			}
			field = strings.TrimPrefix(field, p+".")
		}
		var prop string
		if _, err := fmt.Sscanf(d.Message, "expected required property %s to be present", &prop); err == nil {
			missing = append(missing, joinField(field, prop))
			continue
		}
		if field == "" {
			field = "the request body"
		}
		if d.Message == "unexpected property" {
			unknown = append(unknown, field)
			continue
		}
		add(field + " " + humanRule(d.Message))
	}
	// huma reports an object's properties in map order: sorted, the text is stable.
	slices.Sort(out)
	slices.Sort(unknown)
	if len(unknown) > 0 {
		out = append([]string{names(unknown) + map[bool]string{true: " is not a known field", false: " are not known fields"}[len(unknown) == 1]}, out...)
	}
	if len(missing) > 0 {
		out = append([]string{names(missing) + map[bool]string{true: " is required", false: " are required"}[len(missing) == 1]}, out...)
	}
	return out
}

// names lists fields as a sentence does: "a", "a and b", "a, b and c".
func names(fields []string) string {
	n := len(fields)
	if n == 1 {
		return fields[0]
	}
	return strings.Join(fields[:n-1], ", ") + " and " + fields[n-1]
}

func joinField(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// humanRule rewrites one of huma's validation messages (huma/validation's
// Msg* texts) as the rest of a sentence that starts with the field's name.
func humanRule(msg string) string {
	var n string
	for _, r := range []struct{ format, rule string }{
		{"expected number >= %s", "must be at least %s"},
		{"expected number > %s", "must be greater than %s"},
		{"expected number <= %s", "must be at most %s"},
		{"expected number < %s", "must be less than %s"},
		{"expected length >= %s", "must be at least %s characters long"},
		{"expected length <= %s", "must be at most %s characters long"},
		{"expected array length >= %s", "must have at least %s items"},
		{"expected array length <= %s", "must have at most %s items"},
		{"expected object with at least %s properties", "must have at least %s keys"},
		{"expected object with at most %s properties", "must have at most %s keys"},
		{"expected number to be a multiple of %s", "must be a multiple of %s"},
	} {
		if _, err := fmt.Sscanf(msg, r.format, &n); err == nil {
			if r.rule == "must be at least %s characters long" && n == "1" {
				return "must not be empty"
			}
			return fmt.Sprintf(r.rule, n)
		}
	}
	if v, ok := strings.CutPrefix(msg, `expected value to be one of "`); ok {
		values := strings.Split(strings.TrimSuffix(v, `"`), ", ")
		if n := len(values); n > 1 {
			return "must be " + strings.Join(values[:n-1], ", ") + " or " + values[n-1]
		}
		return "must be " + values[0]
	}
	switch msg {
	case "unexpected property":
		return "is not a known field"
	case "expected string":
		return "must be a string"
	case "expected boolean":
		return "must be true or false"
	case "expected number":
		return "must be a number"
	case "expected integer":
		return "must be a whole number"
	case "expected array":
		return "must be an array"
	case "expected object":
		return "must be an object"
	case "expected array items to be unique":
		return "must not list an item twice"
	case "expected string to be RFC 3339 date-time":
		return "must be an RFC 3339 date and time, such as 2025-01-31T12:00:00Z"
	}
	switch {
	case strings.HasPrefix(msg, "expected string to be RFC 5322 email"):
		return "must be an e-mail address"
	case strings.HasPrefix(msg, "expected string to be RFC 3986"):
		return "must be an absolute URL"
	case strings.HasPrefix(msg, "expected string to match pattern"), strings.HasPrefix(msg, "expected string to be"):
		return "is not in the expected format"
	}
	return "is not valid"
}
