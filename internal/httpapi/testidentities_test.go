package httpapi_test

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Test identities over HTTP (server-sdk-compat §6, issue 11 item 4): an app
// opts in with its own secret; then a test identity signs in with the fixed
// code by e-mail and by SMS and nothing is sent; users and events say so.
// On an app that has not opted in the same address is an ordinary one.

const (
	testEmail = "live-ruby-ab12-3+scute_test@example.com"
	testPhone = "+14155550123"
	fixedCode = "424242"
)

func TestTestIdentities(t *testing.T) {
	runGroups(t, servertest.Options{Serve: true}, []group{
		{"sign_in", testTestIdentitySignIn},
		{"not_opted_in", testTestIdentityNotOptedIn},
	})
}

// optIn turns test identities on with the app's own secret and checks that
// the admin representations show it and the public one does not.
func (e *env) optIn(t *testing.T) {
	t.Helper()
	if app := e.setApp(t, map[string]any{"test_identities": true}).obj("app"); app["test_identities"] != true {
		t.Fatalf("PATCH /v1/apps/{app_id} answered %v; want test_identities true", app)
	}
	runScenarios(t, e, []scenario{
		{name: "the workspace sees it", method: "GET", path: "/v1/workspaces/" + e.ws.ID + "/apps/" + e.app.ID,
			headers: bearer(e.wsSecret), wantStatus: 200, check: func(t *testing.T, r response) {
				if app := r.obj("app"); app["test_identities"] != true {
					t.Errorf("workspace app = %s; want test_identities true", r.raw)
				}
			}},
		{name: "the public configuration does not", method: "GET", path: "/v1/apps/" + e.app.ID, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if _, ok := r.body["test_identities"]; ok {
					t.Errorf("public app = %s; want no test_identities", r.raw)
				}
			}},
		{name: "a boolean only", method: "PATCH", path: "/v1/apps/" + e.app.ID, headers: bearer(e.appSecret),
			body: map[string]any{"app": map[string]any{"test_identities": "yes"}}, wantStatus: 400, wantCode: "invalid_request"},
	})
}

// eventData returns the data of every event the env's recording endpoint
// has received so far, oldest first.
func (e *env) eventData(t *testing.T) []map[string]any {
	t.Helper()
	ctx := t.Context()
	page, err := e.Webhooks.Deliveries(ctx, servertest.Operator, e.app.ID, e.events.endpointID, 1, 100)
	if err != nil {
		t.Fatalf("Deliveries: %v", err)
	}
	var out []map[string]any
	for i := len(page.Deliveries) - 1; i >= 0; i-- {
		w, err := e.DB.GetDeliveryWork(ctx, page.Deliveries[i].ID)
		if err != nil {
			t.Fatalf("GetDeliveryWork: %v", err)
		}
		var env webhook.Envelope
		if err := json.Unmarshal(w.Body, &env); err != nil {
			t.Fatalf("delivery body: %v", err)
		}
		data, _ := env.Data.(map[string]any)
		data["event_type"] = env.EventType // for messages
		out = append(out, data)
	}
	return out
}

func testTestIdentitySignIn(t *testing.T, e *env) {
	e.optIn(t)
	sent := len(e.Mail.Messages())
	var access string
	for _, tc := range []struct{ identifier, channel string }{{"Live-Ruby-ab12-3+SCUTE_TEST@example.com", "email"}, {"+1 415 555 0123", "sms"}} {
		r := scenario{method: "POST", path: e.authPath("/otps/login"), headers: browser, body: map[string]any{"identifier": tc.identifier},
			wantStatus: 200, events: []string{"user.created", "verification." + tc.channel + ".requested", "challenge.created"}}.run(t, e)
		userID := r.str("user_id")
		runScenarios(t, e, []scenario{
			{name: tc.channel + ": another code is wrong", method: "POST", path: e.authPath("/otps/verify"), headers: browser,
				body: map[string]any{"otp": "123456", "user_id": userID}, wantStatus: 422, wantCode: "invalid_code",
				events: []string{"auth.login.failed"}},
			{name: tc.channel + ": the fixed code signs in", method: "POST", path: e.authPath("/otps/verify"), headers: browser,
				body: map[string]any{"otp": fixedCode, "user_id": userID}, wantStatus: 200,
				events: []string{"verification." + tc.channel + ".verified", "challenge.completed"},
				check:  func(t *testing.T, r response) { access, _ = e.tokenSet(t, r, userID) }},
			{name: tc.channel + ": once", method: "POST", path: e.authPath("/otps/verify"), headers: browser,
				body: map[string]any{"otp": fixedCode, "user_id": userID}, wantStatus: 422, wantCode: "invalid_code"},
		})
	}
	if msgs := e.Mail.Messages(); len(msgs) != sent {
		t.Errorf("the courier was handed %d messages (the last to %s); want none", len(msgs)-sent, msgs[len(msgs)-1].To)
	}

	isTest := func(t *testing.T, u map[string]any) {
		t.Helper()
		if u["test"] != true {
			t.Errorf("user %v; want test: true", u)
		}
	}
	newUser := func(email string) map[string]any {
		t.Helper()
		return userOf(t, scenario{method: "POST", path: "/v1/" + e.app.ID + "/users", headers: bearer(e.appSecret),
			body: map[string]any{"email": email}, wantStatus: 200, events: []string{"user.created"}}.run(t, e))
	}
	created := newUser("review+scute_test@example.com")
	isTest(t, created)
	ordinary := newUser("real@example.com")
	if _, ok := ordinary["test"]; ok {
		t.Errorf("ordinary user %v; want no test field", ordinary)
	}
	runScenarios(t, e, []scenario{
		{name: "the list says which users are test users", method: "GET", path: "/v1/" + e.app.ID + "/users",
			headers: bearer(e.appSecret), wantStatus: 200, check: func(t *testing.T, r response) {
				users, _ := r.body["users"].([]any)
				if len(users) != 4 {
					t.Fatalf("users = %s; want 4", r.raw)
				}
				for _, it := range users {
					u := it.(map[string]any)
					if want := u["email"] != "real@example.com"; (u["test"] == true) != want {
						t.Errorf("listed user %v; want test %v", u, want)
					}
				}
			}},
		{name: "the admin read", method: "GET", path: "/v1/" + e.app.ID + "/users/" + created["id"].(string),
			headers: bearer(e.appSecret), wantStatus: 200, check: func(t *testing.T, r response) { isTest(t, userOf(t, r)) }},
		{name: "the current user", method: "GET", path: e.authPath("/current_user"), headers: user(access), wantStatus: 200,
			check: func(t *testing.T, r response) { isTest(t, userOf(t, r)) }},
	})

	// Every event so far is about a test identity except the ordinary user's creation.
	for _, d := range e.eventData(t) {
		u, _ := d["user"].(map[string]any)
		if u != nil && u["email"] == "real@example.com" {
			if _, ok := d["test"]; ok {
				t.Errorf("%s about an ordinary user = %v; want no test", d["event_type"], d)
			}
			continue
		}
		if d["test"] != true || (u != nil && u["test"] != true) {
			t.Errorf("%s about a test identity = %v; want test: true", d["event_type"], d)
		}
	}
}

// On an app that has not opted in, the same address is sent a random code
// and the fixed one is wrong; its user is no test user.
func testTestIdentityNotOptedIn(t *testing.T, e *env) {
	path := "/v1/workspaces/" + e.ws.ID + "/apps/" + e.app.ID
	for _, on := range []bool{true, false} { // the workspace route sets it too; this app ends without
		scenario{method: "PATCH", path: path, headers: bearer(e.wsSecret), body: map[string]any{"test_identities": on},
			wantStatus: 200, check: func(t *testing.T, r response) {
				if app := r.obj("app"); app["test_identities"] != on {
					t.Errorf("PATCH %s answered %s; want test_identities %v", path, r.raw, on)
				}
			}}.run(t, e)
	}
	r := scenario{method: "POST", path: e.authPath("/otps/login"), headers: browser, body: map[string]any{"identifier": testEmail},
		wantStatus: 200, events: []string{"user.created", "verification.email.requested", "challenge.created"}}.run(t, e)
	userID, code := r.str("user_id"), e.code(t, testEmail)
	if code != fixedCode { // one random code in a million is the fixed one: then it is right, as it should be
		scenario{method: "POST", path: e.authPath("/otps/verify"), headers: browser, body: map[string]any{"otp": fixedCode, "user_id": userID},
			wantStatus: 422, wantCode: "invalid_code", events: []string{"auth.login.failed"}}.run(t, e)
	}
	r = scenario{method: "POST", path: e.authPath("/otps/verify"), headers: browser, body: map[string]any{"otp": code, "user_id": userID},
		wantStatus: 200, events: emailVerified}.run(t, e)
	access, _ := e.tokenSet(t, r, userID)
	if u := e.currentUser(t, access); u["test"] != nil {
		t.Errorf("current user %v; want no test field", u)
	}
	for _, d := range e.eventData(t) {
		if _, ok := d["test"]; ok {
			t.Errorf("%s on an app without test identities = %v; want no test", d["event_type"], d)
		}
	}
	scenario{method: "POST", path: e.authPath("/otps/login"), headers: browser, body: map[string]any{"identifier": testPhone},
		wantStatus: 200, events: []string{"user.created", "verification.sms.requested", "challenge.created"}}.run(t, e)
	e.code(t, testPhone) // sent
}

// TestTestIdentitiesDevOutbox is the check from outside (issue 11): on a
// development server, whose messages go to /dev/outbox, a test identity of
// an app that opted in signs in and the outbox stays empty, with settings of
// the operator's own (another code and number range, no e-mail addresses);
// another app's code for the same number is in the outbox.
func TestTestIdentitiesDevOutbox(t *testing.T) {
	const code, number = "135790", "+447400123412"
	forEach(t, servertest.Options{Serve: true, SettingsCourier: true, Settings: map[string]string{
		"GATEHOUSE_DEV":                           "true",
		"GATEHOUSE_TEST_IDENTITIES_CODE":          code,
		"GATEHOUSE_TEST_IDENTITIES_PHONE_PATTERN": `\+4474001234\d\d`,
		"GATEHOUSE_TEST_IDENTITIES_EMAIL_SUFFIX":  "off",
	}}, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		e.optIn(t)
		outbox := func(t *testing.T, to string) []any {
			t.Helper()
			e.Mail.Settle() // the send queue's workers write the outbox after the answer
			r := scenario{method: "GET", path: "/dev/outbox?to=" + url.QueryEscape(to), wantStatus: 200}.run(t, e)
			msgs, _ := r.body["messages"].([]any)
			return msgs
		}
		r := scenario{method: "POST", path: e.authPath("/otps/login"), headers: browser, body: map[string]any{"identifier": "+44 7400 123412"},
			wantStatus: 200}.run(t, e)
		scenario{method: "POST", path: e.authPath("/otps/verify"), headers: browser, body: map[string]any{"otp": code, "user_id": r.str("user_id")},
			wantStatus: 200, check: func(t *testing.T, r response) { e.tokenSet(t, r, "") }}.run(t, e)
		if msgs := outbox(t, number); len(msgs) != 0 {
			t.Errorf("outbox for the test number = %v; want nothing", msgs)
		}
		// With the e-mail suffix off, +scute_test is an ordinary address.
		scenario{method: "POST", path: e.authPath("/otps/login"), headers: browser, body: map[string]any{"identifier": testEmail},
			wantStatus: 200}.run(t, e)
		if msgs := outbox(t, testEmail); len(msgs) != 1 {
			t.Errorf("outbox for %s = %v; want its code", testEmail, msgs)
		}

		other := e.sibling(t, sys, e.createApp(t, e.ws.ID, "Other", nil))
		r = scenario{method: "POST", path: other.authPath("/otps/login"), headers: browser, body: map[string]any{"identifier": number},
			wantStatus: 200}.run(t, other)
		msgs := outbox(t, number)
		if len(msgs) != 1 {
			t.Fatalf("outbox for the number after the other app's code = %v; want that code", msgs)
		}
		if sent, _ := msgs[0].(map[string]any)["code"].(string); sent != code {
			scenario{method: "POST", path: other.authPath("/otps/verify"), headers: browser,
				body: map[string]any{"otp": code, "user_id": r.str("user_id")}, wantStatus: 422, wantCode: "invalid_code"}.run(t, other)
		}
		if n := len(e.Mail.Messages()); n != 0 {
			t.Errorf("the recorder saw %d messages; want the settings' courier to have had them", n)
		}
	})
}
