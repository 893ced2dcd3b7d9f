package httpapi_test

import (
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

func TestXAuthorizationAPIKey(t *testing.T) {
	forEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		testXAuthorizationAPIKey(t, envOf(t, sys, "Keys"))
	})
}

// testXAuthorizationAPIKey is the rule of interface §4.3 and §5:
// Authorization decides; an API key in X-Authorization beside it must be
// valid and of the same app and adds nothing; alone, it stands in.
func testXAuthorizationAPIKey(t *testing.T, e *env) {
	keys := "/v1/apps/" + e.app.ID + "/api_keys"
	users := "/v1/" + e.app.ID + "/users"
	key := e.apiKey(t)
	revoked := e.apiKey(t)
	scenario{method: "DELETE", path: keys + "/" + e.apiKeyID(t, revoked), headers: bearer(e.appSecret), wantStatus: 200}.run(t, e)
	other := e.createApp(t, e.ws.ID, "Gamma", nil)
	otherKey := e.apiKeyFor(t, other.ID, e.appSecretFor(t, other.ID))
	both := func(authz, xauth string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + authz, "X-Authorization": xauth}
	}
	runScenarios(t, e, []scenario{
		{name: "create a key with the secret and a key (interface §4.3)", method: "POST", path: keys, headers: both(e.appSecret, key),
			body: map[string]any{"nickname": "both"}, wantStatus: 200, check: func(t *testing.T, r response) {
				e.remember(r.obj("api_key")["token"].(string))
			}},
		{name: "the key after Bearer works too", method: "POST", path: keys, headers: both(e.appSecret, "Bearer "+key),
			wantStatus: 200, check: func(t *testing.T, r response) { e.remember(r.obj("api_key")["token"].(string)) }},
		{name: "a revoked key beside the secret", method: "POST", path: keys, headers: both(e.appSecret, revoked), wantStatus: 401},
		{name: "an unknown key beside the secret", method: "POST", path: keys, headers: both(e.appSecret, "ghk_nope"), wantStatus: 401},
		{name: "another app's key beside the secret", method: "POST", path: keys, headers: both(e.appSecret, otherKey), wantStatus: 403},
		{name: "a key alone in X-Authorization stands in", method: "GET", path: users, headers: map[string]string{"X-Authorization": key}, wantStatus: 200},
		{name: "a key alone cannot manage credentials", method: "POST", path: keys, headers: map[string]string{"X-Authorization": key}, wantStatus: 403},
		{name: "a key beside a key adds nothing", method: "POST", path: keys, headers: both(key, key), wantStatus: 403},
		{name: "a revoked key alone", method: "GET", path: users, headers: map[string]string{"X-Authorization": revoked}, wantStatus: 401},
		{name: "another app's key alone", method: "GET", path: users, headers: map[string]string{"X-Authorization": otherKey}, wantStatus: 403},
		{name: "Authorization decides: a bad one is not saved by a good key", method: "GET", path: users, headers: both("nope", key), wantStatus: 401},
		{name: "a value that is no API key is left alone", method: "GET", path: users, headers: both(e.appSecret, "not-a-key"), wantStatus: 200},
		{name: "nothing at all", method: "GET", path: users, wantStatus: 401},
	})
}
