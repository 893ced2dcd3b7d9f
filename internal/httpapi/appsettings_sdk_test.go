package httpapi_test

import (
	"strings"
	"testing"
)

// What Scute's server SDKs send and read about an app (server-sdk-compat
// §4): its settings bare or wrapped in "app", and test_identities in the
// app read for the app's own secret only.
func TestServerSDKAppSettings(t *testing.T) {
	runGroups(t, challengeOptions(), []group{
		{"body_forms", testAppSettingsForms},
		{"read", testAppReadTestIdentities},
	})
}

func testAppSettingsForms(t *testing.T, e *env) {
	own := "/v1/apps/" + e.app.ID
	ws := "/v1/workspaces/" + e.ws.ID + "/apps/" + e.app.ID
	policy := func(want string) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			if got := r.obj("app")["mfa_policy"]; got != want {
				t.Errorf("mfa_policy = %v; want %s", got, want)
			}
		}
	}
	runScenarios(t, e, []scenario{
		{name: "bare, as the Ruby SDK sends it", method: "PATCH", path: own, headers: bearer(e.appSecret),
			body: map[string]any{"mfa_policy": "optional"}, wantStatus: 200, check: policy("optional")},
		{name: "wrapped, as the Python SDK sends it", method: "PATCH", path: own, headers: bearer(e.appSecret),
			body: map[string]any{"app": map[string]any{"mfa_policy": "off"}}, wantStatus: 200, check: policy("off")},
		{name: "the workspace route takes both too", method: "PATCH", path: ws, headers: bearer(e.wsSecret),
			body: map[string]any{"app": map[string]any{"mfa_policy": "required"}}, wantStatus: 200, check: policy("required")},
		{name: "and bare", method: "PATCH", path: ws, headers: bearer(e.wsSecret),
			body: map[string]any{"mfa_policy": "off"}, wantStatus: 200, check: policy("off")},
		{name: "both forms at once", method: "PATCH", path: own, headers: bearer(e.appSecret),
			body: map[string]any{"mfa_policy": "optional", "app": map[string]any{"mfa_policy": "required"}}, wantStatus: 400,
			check: func(t *testing.T, r response) {
				if !strings.Contains(string(r.raw), "app") {
					t.Errorf("the refusal does not name app: %s", r.raw)
				}
			}},
		{name: "an unknown setting, bare", method: "PATCH", path: own, headers: bearer(e.appSecret),
			body: map[string]any{"mfa_polcy": "optional"}, wantStatus: 400,
			check: func(t *testing.T, r response) {
				if !strings.Contains(string(r.raw), "mfa_polcy") {
					t.Errorf("the refusal does not name the field: %s", r.raw)
				}
			}},
		{name: "an unknown setting, wrapped", method: "PATCH", path: own, headers: bearer(e.appSecret),
			body: map[string]any{"app": map[string]any{"mfa_polcy": "optional"}}, wantStatus: 400,
			check: func(t *testing.T, r response) {
				if !strings.Contains(string(r.raw), "mfa_polcy") {
					t.Errorf("the refusal does not name the field: %s", r.raw)
				}
			}},
		{name: "a bad value, bare", method: "PATCH", path: own, headers: bearer(e.appSecret),
			body: map[string]any{"mfa_policy": "sometimes"}, wantStatus: 400},
		{name: "nothing changed by the refusals", method: "GET", path: ws, headers: bearer(e.wsSecret), wantStatus: 200, check: policy("off")},
	})
}

func testAppReadTestIdentities(t *testing.T, e *env) {
	path := "/v1/apps/" + e.app.ID
	e.setApp(t, map[string]any{"test_identities": true})
	other := e.createApp(t, e.ws.ID, "Other", nil)
	hidden := func(t *testing.T, r response) {
		if _, ok := r.body["test_identities"]; ok || r.body["email_auth_type"] == nil {
			t.Errorf("app read shows test_identities: %s", r.raw)
		}
	}
	runScenarios(t, e, []scenario{
		{name: "the app's secret sees test_identities", method: "GET", path: path, headers: bearer(e.appSecret), wantStatus: 200,
			wantBody: map[string]any{"test_identities": true, "email_auth_type": "magic"}},
		{name: "a workspace secret too", method: "GET", path: path, headers: bearer(e.wsSecret), wantStatus: 200,
			wantBody: map[string]any{"test_identities": true}},
		{name: "an anonymous reader does not", method: "GET", path: path, wantStatus: 200, check: hidden},
		{name: "another app's secret does not", method: "GET", path: path, headers: bearer(e.appSecretFor(t, other.ID)), wantStatus: 200, check: hidden},
		{name: "nor does a wrong secret, which is ignored", method: "GET", path: path, headers: bearer("sk_wrong"), wantStatus: 200, check: hidden},
	})
}
