package httpapi_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// goish matches text a person should never read in an error: the
// validator's and encoding/json's vocabulary, request locations and
// formatting slips.
var goish = regexp.MustCompile(`expected |unexpected property|json: |cannot unmarshal|%!|\bbody\.|\bquery\.|Validation failed|<nil>`)

// doubled finds a word written twice in a row ("url url must use https").
func doubled(s string) string {
	words := strings.Fields(s)
	for i := 1; i < len(words); i++ {
		if strings.EqualFold(strings.Trim(words[i], ".,;:"), strings.Trim(words[i-1], ".,;:")) {
			return words[i]
		}
	}
	return ""
}

// TestValidationMessages sends typical mistakes to a handful of routes and
// checks that each 400 reads as a short sentence naming the field, with the
// error_code unchanged.
func TestValidationMessages(t *testing.T) {
	for _, kind := range storetest.Kinds(t) {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t, kind, false)
			app, ws := e.app.ID, e.ws.ID
			a, w := bearer(e.appSecret), bearer(e.wsSecret)
			for _, tt := range []struct {
				method, path string
				auth         map[string]string
				body         string
				code, want   string
			}{
				{"POST", "/v1/" + app + "/users", a, `{"identifier": 5}`, "invalid_request", "identifier must be a string"},
				{"POST", "/v1/" + app + "/users", a, `{"user_meta": "x", "identifier": "a@example.com"}`, "invalid_request", "user_meta must be an object"},
				{"POST", "/v1/" + app + "/users", a, `{"identifier": "` + strings.Repeat("a", 321) + `"}`, "invalid_request", "identifier must be at most 320 characters long"},
				{"GET", "/v1/" + app + "/users?status=zz", a, "", "invalid_request", "status must be active, pending, inactive or imported"},
				{"PATCH", "/v1/apps/" + app, a, `{"app":{"access_expiration":"soon"}}`, "invalid_request", "app.access_expiration must be a whole number"},
				{"PATCH", "/v1/apps/" + app, a, `{"app":{"access_expiration":5}}`, "invalid_request", "app.access_expiration must be at least 60"},
				{"PATCH", "/v1/apps/" + app, a, `{"app":{"email_auth_type":"sms"}}`, "invalid_request", "app.email_auth_type must be magic or otp"},
				{"PATCH", "/v1/apps/" + app, a, `{"app":{"login_url":"nope"}}`, "invalid_request", "login_url must be an absolute http or https URL"},
				{"PATCH", "/v1/apps/" + app, a, `{"app":{"webauthn_rp_id":"example.org"}}`, "invalid_request",
					"webauthn_rp_id is not valid: origin https://app.example.com is not on example.org or a subdomain of it"},
				{"POST", "/v1/workspaces/" + ws + "/apps", w, `{"app":{"name":"Shop"}}`, "invalid_request", "app is not a known field"},
				{"POST", "/v1/workspaces/" + ws + "/members", w, `{"email":"a@example.com","role":"king"}`, "invalid_request", "role must be owner, admin or member"},
				{"POST", "/v1/workspaces", w, `{"name":""}`, "invalid_request", "name must not be empty"},
				{"POST", "/v1/apps/" + app + "/webhooks", a, `{"webhook":{"url":"https://1.1.1.1/in","retry_limit":99}}`, "invalid_request", "webhook.retry_limit must be at most 10"},
				{"POST", "/v1/apps/" + app + "/webhooks", a, `{"url":"https://hooks.example.com/in","event_types":["user.created"]}`, "invalid_request",
					"webhook is required; event_types and url are not known fields"},
				{"POST", "/v1/auth/" + app + "/otps/login", nil, `{}`, "invalid_request", "identifier is required"},
				{"POST", "/v1/auth/" + app + "/otps/verify", nil, `{"identifier":"a@example.com"}`, "invalid_request", "otp and user_id are required"},
				{"POST", "/v1/auth/" + app + "/magic_links/login", nil, `{"identifier":"a@example.com"`, "invalid_request", "Malformed JSON body"},
			} {
				r := e.do(t, tt.method, tt.path, tt.auth, nilIfEmpty(tt.body))
				got, code := r.str("error"), r.str("error_code")
				if r.status != 400 || code != tt.code || got != tt.want {
					t.Errorf("%s %s %s = %d %s %q; want 400 %s %q", tt.method, tt.path, tt.body, r.status, code, got, tt.code, tt.want)
				}
				if m := goish.FindString(got); m != "" {
					t.Errorf("%s %s %s: message %q has %q", tt.method, tt.path, tt.body, got, m)
				}
				if d := doubled(got); d != "" {
					t.Errorf("%s %s %s: message %q repeats %q", tt.method, tt.path, tt.body, got, d)
				}
			}
		})
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
