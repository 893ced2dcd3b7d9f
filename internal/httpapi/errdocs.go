package httpapi

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// The reference documents every error an operation can answer: per status,
// the error_code values (an enum), what each means, and an example body per
// code. Statuses and messages come from the error table (errorTable, and
// otherCodes for the typed errors and huma's own); an operation declares
// only which codes it adds to those of its credential rule (register's
// last arguments). The package's tests record every error actually
// answered and fail when one is not in its operation's documented
// responses (errdocs_test.go), so the reference cannot drift.

// codeDoc is one error_code of the reference.
type codeDoc struct {
	status int
	msg    string // an example body's error: the table's text
}

// otherCodes are the codes that are not sentinel rows of errorTable: those
// of the typed errors and of huma's and the handler's own answers, each
// with the message it is answered with (the first one where it has several).
var otherCodes = map[string]codeDoc{
	"invalid_request":             {http.StatusBadRequest, "Malformed JSON body"},
	"body_too_large":              {http.StatusRequestEntityTooLarge, "Request body too large (at most 1 MiB)"},
	"unsupported_media_type":      {http.StatusUnsupportedMediaType, msgNotJSON},
	"rate_limited":                {http.StatusTooManyRequests, "Too many requests: slow down"},
	"slow_down":                   {http.StatusTooManyRequests, "Polling too fast: wait for Retry-After seconds between polls"},
	"sms_daily_cap_reached":       {http.StatusTooManyRequests, "This app has sent as many SMS today as it may: try again later or use e-mail"},
	"sms_prefix_cap_reached":      {http.StatusTooManyRequests, "Too many SMS to numbers like this one: try again later"},
	"webauthn_register_error":     {http.StatusBadRequest, "Passkey registration failed: the challenge does not match"},
	"webauthn_verification_error": {http.StatusBadRequest, "Passkey verification failed: the signature does not verify"},
	"challenge_closed":            {http.StatusConflict, "The challenge is expired"},
	"verification_required":       {http.StatusForbidden, "Verification required: sign in again or complete a step_up challenge (within 10 minutes)"},
	"invalid_user_meta":           {http.StatusUnprocessableEntity, "user_meta does not match the app's schema"},
}

// codeAbout says what each error_code means, for the reference.
var codeAbout = map[string]string{
	"invalid_request":                 "The request is malformed: a field, parameter or body that is missing, of the wrong type or refused (the message names it), or text that is not valid UTF-8 or holds NUL.",
	"body_too_large":                  "The body is larger than 1 MiB.",
	"unsupported_media_type":          "The body is not JSON (Content-Type application/json).",
	"app_not_found":                   "No app has this id (or, where the credential must reach the app, none it reaches).",
	"workspace_not_found":             "No workspace has this id.",
	"member_not_found":                "The workspace has no such member.",
	"member_exists":                   "The workspace already has a member with this e-mail address.",
	"slug_taken":                      "Another workspace or app has this slug.",
	"last_owner":                      "The change would leave the workspace without an owner.",
	"api_key_not_found":               "The app has no such API key.",
	"api_secret_not_found":            "No such API secret.",
	"invalid_identifier":              "The identifier is neither a valid e-mail address nor an international phone number, or is of a kind the app does not accept.",
	"user_exists":                     "The app already has a user with this identifier.",
	"user_not_found":                  "The app has no such user.",
	"not_found":                       "Nothing here (the development outbox outside development mode, an unknown docs asset).",
	"invalid_code":                    "The code is wrong or has expired; it spent an attempt.",
	"code_used":                       "The TOTP code's time step was used already (a replay); it spent an attempt. The authenticator app's next code works.",
	"too_many_attempts":               "Too many wrong codes for this code or challenge, or from this source in the last hour: refused without being compared; request a new code later.",
	"code_entry_locked":               "Too many wrong codes for this identifier: sign-in by code is locked until the user signs in another way.",
	"magic_link_denied":               "The magic link was denied on the consent page (the client SDK treats this message as non-fatal).",
	"magic_link_not_found_or_expired": "The magic link is unknown, used, replaced or expired.",
	"magic_link_pending":              "The magic link has not been opened and approved yet: poll again.",
	"session_not_found":               "No such session of this user.",
	"device_not_found":                "No such passkey of this user.",
	"challenge_not_found":             "The challenge token is unknown (or another app's).",
	"challenge_pending":               "The challenge has not been approved yet.",
	"challenge_closed":                "The challenge is no longer pending: the message says expired, completed, cancelled, denied or collected.",
	"identifier_taken":                "Another user of the app has this e-mail address or phone number.",
	"mfa_method_not_found":            "No such second factor of this user.",
	"identity_not_found":              "No such social sign-in identity of this user.",
	"last_sign_in_method":             "The identity is the user's only way to sign in: add an e-mail address or phone number the app signs in with, or a passkey, first.",
	"factor_locked":                   "Too many wrong codes for this second factor: use another one.",
	"webauthn_unavailable":            "Passkeys need the app's origin on a domain name (origin or webauthn_rp_id).",
	"webauthn_register_error":         "The passkey registration did not verify; the message says which check failed.",
	"webauthn_verification_error":     "The passkey assertion did not verify; the message says which check failed.",
	"invalid_client":                  "The M2M client's id or secret is wrong, or the client is revoked (RFC 6749 §5.2); with HTTP Basic the answer carries WWW-Authenticate.",
	"unsupported_grant_type":          "grant_type is not client_credentials.",
	"invalid_scope":                   "scope is malformed or names a scope the client does not have.",
	"m2m_session_required":            "The request carries no M2M access token.",
	"m2m_client_not_found":            "The app has no such M2M client.",
	"provider_not_found":              "The slug names no message service provider type of this server.",
	"oauth_provider_not_found":        "The app has no social sign-in provider by that slug.",
	"phone_country_not_allowed":       "The app does not send SMS to this phone number's country.",
	"phone_type_not_allowed":          "The number cannot get SMS codes (landline, premium-rate, toll-free or shared-cost).",
	"template_not_found":              "The app has no template of this message for this channel and locale.",
	"webhook_not_found":               "The app has no such webhook endpoint.",
	"delivery_not_found":              "The endpoint has no such delivery.",
	"delivery_in_progress":            "The delivery is still queued or being retried.",
	"webhook_limit_reached":           "The app has as many webhook endpoints as allowed.",
	"rate_limited":                    "Too many requests of this kind from this caller, address or app: wait for Retry-After seconds.",
	"slow_down":                       "Polling faster than the interval (RFC 8628 §3.5): wait Retry-After seconds between polls.",
	"sms_daily_cap_reached":           "The app has sent as many SMS today as it may: try later or use e-mail.",
	"sms_prefix_cap_reached":          "Too many SMS to numbers like this one: try later.",
	"verification_required":           "The action needs a recent sign-in or a completed step_up challenge; details.recent_sign_in_minutes says how recent.",
	"invalid_user_meta":               "user_meta does not match the app's schema; user_meta_errors says why per key.",
	"timeout":                         "The request ran out of time (the server's request deadline, or the database's bound on a statement or a lock wait), usually because the server is busy; what it had not committed was rolled back. Retry after Retry-After seconds.",
}

// statusAbout describes the answers without an error_code.
var statusAbout = map[int]string{
	http.StatusUnauthorized:        "No credential, or one that is malformed, invalid, expired or revoked: `{\"error\": \"Unauthorized\"}`, no error_code.",
	http.StatusForbidden:           "The credential is valid but may not do this here (another app or workspace, or a role without the right): `{\"error\": \"Forbidden\"}`, no error_code.",
	http.StatusInternalServerError: "An unexpected failure, logged with the request id (X-Request-Id).",
	http.StatusServiceUnavailable:  "The database is unreachable or refusing connections: retry later (never an application error).",
}

// noCodeMsg is the error of each answer without an error_code.
var noCodeMsg = map[int]string{
	http.StatusUnauthorized:        "Unauthorized",
	http.StatusForbidden:           "Forbidden",
	http.StatusInternalServerError: "internal error",
	http.StatusServiceUnavailable:  "Service temporarily unavailable",
}

// errorCodes is every error_code with its status and example message:
// errorTable's rows (the first row of a code gives its message) and
// otherCodes, whose message wins.
var errorCodes = func() map[string]codeDoc {
	out := map[string]codeDoc{}
	for _, row := range errorTable {
		if _, ok := out[row.code]; !ok && row.code != "" {
			out[row.code] = codeDoc{row.status, row.msg}
		}
	}
	for code, d := range otherCodes {
		if prev, ok := out[code]; ok && prev.status != d.status {
			panic("httpapi: error_code " + code + " has two statuses")
		}
		out[code] = d // its message is the general one (invalid_request's rows name one field)
	}
	return out
}()

// errorsShape declares the 400 in the {errors} shape (interface §4.6) beside
// the usual one: a PATCH of a message service provider that names none.
const errorsShape = "{errors}"

// Answers every operation can give: a path or query that is not clean text
// (400 invalid_request) and a server failure. The database's outage and a
// request out of time (503, 503 timeout) are added to every huma
// operation, all of which read it under the request's deadline.
// Any request with a body that is not JSON is refused (415) before it is
// routed; an operation that reads a body refuses one over 1 MiB (413).
var (
	anyOperation = []string{"invalid_request", "500"}
	notJSON      = []string{"unsupported_media_type"}
	tooLarge     = []string{"body_too_large"}
)

// sendErrors are the answers of an operation that sends a code or a link
// to an identifier: a refused identifier, the SMS guards and rate limits.
var sendErrors = []string{"invalid_identifier", "phone_country_not_allowed", "phone_type_not_allowed",
	"rate_limited", "sms_daily_cap_reached", "sms_prefix_cap_reached"}

// with is a group of codes and some more.
func with(group []string, codes ...string) []string {
	return append(slices.Clip(group), codes...)
}

// authErrors are the answers of each credential rule (credentials()).
func authErrors(a auth) []string {
	switch a {
	case authApp, authWorkspace:
		return []string{"401", "403"}
	case authAppHidden:
		return []string{"401", "403", "app_not_found"}
	case authUser, authPublicApp:
		out := []string{"app_not_found"}
		if a == authUser {
			out = append(out, "401")
		}
		return out
	case authOptionalApp:
		return []string{"401", "403", "app_not_found"}
	case authM2M:
		return []string{"401", "m2m_session_required", "403", "app_not_found"}
	}
	return nil
}

// errorSet is what one status of an operation answers.
type errorSet struct {
	codes  []string // sorted error_code values
	noCode bool     // answered without an error_code too
	errors bool     // answered in the {errors} shape too
}

// documentErrors sets an operation's error responses from declarations:
// error_code values, statuses written as numbers (answered without an
// error_code) and errorsShape. A code not in the table panics at start-up.
func (s *Server) documentErrors(o *huma.Operation, decl []string) {
	sets := map[int]*errorSet{}
	set := func(status int) *errorSet {
		if sets[status] == nil {
			sets[status] = &errorSet{}
		}
		return sets[status]
	}
	for _, d := range decl {
		switch n, err := strconv.Atoi(d); {
		case d == errorsShape:
			set(http.StatusBadRequest).errors = true
		case err == nil:
			if noCodeMsg[n] == "" {
				panic(fmt.Sprintf("httpapi: %s declares status %d without an error_code, which no error answers", o.OperationID, n))
			}
			set(n).noCode = true
		default:
			c, ok := errorCodes[d]
			if !ok || codeAbout[d] == "" {
				panic(fmt.Sprintf("httpapi: %s declares error_code %q, which is not in the error table or has no description", o.OperationID, d))
			}
			if st := set(c.status); !slices.Contains(st.codes, d) {
				st.codes = append(st.codes, d)
			}
		}
	}
	reg := s.api.OpenAPI().Components.Schemas
	errSchema := reg.Schema(reflect.TypeFor[ErrorBody](), true, "Error")
	if o.Responses == nil {
		o.Responses = map[string]*huma.Response{}
	}
	for status, st := range sets {
		slices.Sort(st.codes)
		resp := &huma.Response{Description: http.StatusText(status)}
		var lines []string
		examples := map[string]*huma.Example{}
		for _, c := range st.codes {
			lines = append(lines, fmt.Sprintf("- `%s`: %s", c, codeAbout[c]))
			examples[c] = &huma.Example{Summary: c, Value: exampleBody(c)}
		}
		if st.noCode {
			lines = append(lines, "- no error_code: "+statusAbout[status])
			examples["no_code"] = &huma.Example{Summary: "no error_code", Value: ErrorBody{Error: noCodeMsg[status]}}
		}
		if st.errors {
			lines = append(lines, "- `{\"errors\": \"...\"}` (interface §4.6): no provider named (no slug).")
			examples["errors_shape"] = &huma.Example{Summary: "no provider named", Value: ErrorsBody{Errors: msgProviderKeyMissing}}
		}
		if len(lines) > 0 {
			resp.Description += ":\n\n" + strings.Join(lines, "\n")
		}
		schema := errSchema
		if len(st.codes) > 0 {
			enum := make([]any, len(st.codes))
			for i, c := range st.codes {
				enum[i] = c
			}
			codeSchema := &huma.Schema{Type: "object", Properties: map[string]*huma.Schema{
				"error_code": {Type: "string", Enum: enum, Description: "This status's error codes."}}}
			if !st.noCode {
				codeSchema.Required = []string{"error_code"}
			}
			schema = &huma.Schema{AllOf: []*huma.Schema{errSchema, codeSchema}}
		}
		if st.errors {
			schema = &huma.Schema{OneOf: []*huma.Schema{reg.Schema(reflect.TypeFor[ErrorsBody](), true, "ErrorsBody"), schema}}
		}
		resp.Content = map[string]*huma.MediaType{"application/json": {Schema: schema, Examples: examples}}
		// A page's own answer of this status (pageOp) stays beside the JSON one.
		if prev := o.Responses[strconv.Itoa(status)]; prev != nil {
			resp.Description = prev.Description + "; or JSON: " + resp.Description
			for ct, mt := range prev.Content {
				resp.Content[ct] = mt
			}
		}
		if status == http.StatusTooManyRequests {
			resp.Headers = map[string]*huma.Param{"Retry-After": {Description: "Seconds to wait before trying again.",
				Required: true, Schema: &huma.Schema{Type: "integer", Minimum: ptrFloat(1)}}}
		}
		if status == http.StatusServiceUnavailable && slices.Contains(st.codes, codeTimeout) {
			resp.Headers = map[string]*huma.Param{"Retry-After": {Description: "With error_code timeout: seconds to wait before trying again.",
				Schema: &huma.Schema{Type: "integer", Minimum: ptrFloat(1)}}}
		}
		if status == http.StatusUnauthorized && slices.Contains(st.codes, "invalid_client") {
			resp.Headers = map[string]*huma.Param{"WWW-Authenticate": {Description: "With HTTP Basic client authentication: `Basic realm=\"gatehouse\", charset=\"UTF-8\"` (RFC 6749 §5.2).", Schema: &huma.Schema{Type: "string"}}}
		}
		o.Responses[strconv.Itoa(status)] = resp
	}
}

// exampleBody is the example answer of code, with the fields some codes add.
func exampleBody(code string) ErrorBody {
	b := ErrorBody{Error: errorCodes[code].msg, Code: code}
	switch code {
	case "verification_required":
		b.Details = map[string]any{"recent_sign_in_minutes": 10}
	case "invalid_user_meta":
		b.UserMetaErrors = map[string]string{"age": "must be an integer"}
	}
	return b
}

func ptrFloat(f float64) *float64 { return &f }

// requireHeaders marks request headers of a registered operation required
// in the document. The server's checks stay as they are (a missing token
// is 401, not a validation error); the document says what to send.
func (s *Server) requireHeaders(o *huma.Operation, names ...string) {
	for _, name := range names {
		found := false
		for _, p := range o.Parameters {
			if p.In == "header" && strings.EqualFold(p.Name, name) {
				p.Required, found = true, true
			}
		}
		if !found {
			panic("httpapi: " + o.OperationID + " has no header parameter " + name)
		}
	}
}

// operation is the registered operation of method and path (nil if none).
func (s *Server) operation(method, path string) *huma.Operation {
	p := s.api.OpenAPI().Paths[path]
	if p == nil {
		return nil
	}
	switch method {
	case http.MethodGet:
		return p.Get
	case http.MethodPost:
		return p.Post
	case http.MethodPut:
		return p.Put
	case http.MethodPatch:
		return p.Patch
	case http.MethodDelete:
		return p.Delete
	}
	return nil
}
