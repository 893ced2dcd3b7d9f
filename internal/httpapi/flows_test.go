package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
)

// The sign-in, token, session and webhook routes, driven through the
// assembled system over HTTP on both engines. Every scenario names the
// webhook events it must emit (and so that it emits no others).

// bouncer refuses every message to an address that starts with "bounce".
type bouncer struct{ courier.Provider }

func (b bouncer) Send(ctx context.Context, m courier.Message) (string, error) {
	if strings.HasPrefix(m.To, "bounce") {
		return "", courier.ErrDelivery
	}
	return b.Provider.Send(ctx, m)
}

func TestFlows(t *testing.T) {
	opts := servertest.Options{Serve: true, Courier: func(p courier.Provider) courier.Provider { return bouncer{p} }}
	forEach(t, opts, func(t *testing.T, sys *servertest.System) {
		groups := []struct {
			name string
			fn   func(t *testing.T, e *env)
		}{
			{"otp", testOTPFlow},
			{"magic_link", testMagicLinkFlow},
			{"magic_link_consent", testMagicLinkConsentFlow},
			{"invitation", testInvitationFlow},
			{"tokens", testTokenFlow},
			{"sessions", testSessionFlow},
			{"webhooks", testWebhookFlow},
		}
		for _, g := range groups {
			t.Run(g.name, func(t *testing.T) {
				// Each group has an app of its own, so one group's rate
				// limits and events do not reach another's.
				e := envOf(t, sys, g.name)
				e.recordEvents(t)
				g.fn(t, e)
			})
		}
	})
}

const (
	browserUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0 Safari/537.36"
	jsonType  = "application/json"
)

// authPath is a path of the client SDK's family for the env's app.
func (e *env) authPath(rest string) string { return "/v1/auth/" + e.app.ID + rest }

// code is the one-time code last sent to an address.
func (e *env) code(t *testing.T, to string) string {
	t.Helper()
	m, ok := e.Mail.Last(to)
	if !ok || m.Code == "" {
		t.Fatalf("no code was sent to %s", to)
	}
	e.remember(m.Code)
	return m.Code
}

// magicToken is the sct_magic token of the last link sent to an address.
func (e *env) magicToken(t *testing.T, to string) string {
	t.Helper()
	m, ok := e.Mail.Last(to)
	if !ok || m.Link == "" {
		t.Fatalf("no link was sent to %s", to)
	}
	u, err := url.Parse(m.Link)
	if err != nil {
		t.Fatalf("link %q does not parse: %v", m.Link, err)
	}
	tok := u.Query().Get("sct_magic")
	if tok == "" {
		t.Fatalf("link %q has no sct_magic", m.Link)
	}
	e.remember(m.Link)
	e.remember(tok)
	return tok
}

// tokenSet checks a token-set answer for the user and returns its access
// and refresh tokens, which it remembers for the log scan.
func (e *env) tokenSet(t *testing.T, r response, userID string) (access, refresh string) {
	t.Helper()
	access, refresh = r.str("access"), r.str("refresh")
	if access == "" || refresh == "" || r.str("csrf") == "" || r.str("message") != "ok" {
		t.Fatalf("token set = %s; want access, refresh, csrf and message ok", r.raw)
	}
	if userID != "" && r.str("user_id") != userID {
		t.Errorf("token set user_id = %q; want %q", r.str("user_id"), userID)
	}
	h := tokentest.Header(t, access)
	if alg := e.Tenants.AccessTokenAlg(e.app); h["alg"] != alg || h["kid"] != e.Keyring().SignerIDFor(alg) || r.str("key_id") != h["kid"] {
		t.Errorf("access header = %v, key_id %q; want alg %s and its signing key %q", h, r.str("key_id"), alg, e.Keyring().SignerIDFor(alg))
	}
	c := tokentest.Payload(t, access)
	if c["uuid"] != r.str("user_id") || c["aud"] != e.app.ID || c["iss"] != e.Config.Tokens.Issuer || c["wid"] != e.app.WorkspaceID {
		t.Errorf("access claims = %v; want uuid %s, aud %s, iss %s, wid %s", c, r.str("user_id"), e.app.ID, e.Config.Tokens.Issuer, e.app.WorkspaceID)
	}
	if _, ok := c["m2m"]; ok {
		t.Errorf("a user's access token carries m2m: %v", c)
	}
	e.remember(access)
	e.remember(refresh)
	return access, refresh
}

// signIn signs a new or known user in by e-mail code and returns the user
// id and the token set.
func (e *env) signIn(t *testing.T, email string, events ...string) (userID, access, refresh string) {
	t.Helper()
	r := scenario{method: "POST", path: e.authPath("/otps/login"), body: map[string]any{"identifier": email}, wantStatus: 200,
		events: events}.run(t, e)
	userID = r.str("user_id")
	r = scenario{method: "POST", path: e.authPath("/otps/verify"), headers: map[string]string{"User-Agent": browserUA},
		body: map[string]any{"otp": e.code(t, email), "user_id": userID}, wantStatus: 200,
		events: []string{"verification.email.verified", "challenge.completed"}}.run(t, e)
	access, refresh = e.tokenSet(t, r, userID)
	return userID, access, refresh
}

func user(access string) map[string]string {
	return map[string]string{"X-Authorization": access, "User-Agent": browserUA}
}

func testOTPFlow(t *testing.T, e *env) {
	login, verify := e.authPath("/otps/login"), e.authPath("/otps/verify")
	var userID, phoneUser string
	runScenarios(t, e, []scenario{
		{name: "a new address signs up and gets a code", method: "POST", path: login,
			body: map[string]any{"identifier": "Otp@Example.com", "user_meta": map[string]any{"first_name": "Otto"}}, wantStatus: 200,
			wantBody: map[string]any{"user_meta_errors": nil},
			events:   []string{"user.created", "verification.email.requested", "challenge.created"},
			check: func(t *testing.T, r response) {
				userID = r.str("user_id")
				otp := r.obj("otp")
				if userID == "" || otp["success"] != true || otp["id"] == "" || otp["sent_at"] == nil {
					t.Errorf("body = %s; want user_id and otp {success: true, id, sent_at}", r.raw)
				}
				if m, ok := e.Mail.Last("otp@example.com"); !ok || len(m.Code) != 6 || !strings.Contains(m.Text, m.Code) {
					t.Errorf("message to otp@example.com = %+v, %v; want a six-digit code in its text", m, ok)
				}
			}},
		{name: "an invalid identifier", method: "POST", path: login, body: map[string]any{"identifier": "not-an-address"},
			wantStatus: 400, wantCode: "invalid_identifier"},
		{name: "no body", method: "POST", path: login, headers: map[string]string{"Content-Type": jsonType}, wantStatus: 400,
			wantCode: "invalid_request"},
	})
	code := e.code(t, "otp@example.com")
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	runScenarios(t, e, []scenario{
		{name: "a wrong code", method: "POST", path: verify, body: map[string]any{"otp": wrong, "user_id": userID}, wantStatus: 422,
			wantCode: "invalid_code", events: []string{"auth.login.failed"}},
		{name: "a malformed code spends an attempt too", method: "POST", path: verify, body: map[string]any{"otp": "12", "user_id": userID},
			wantStatus: 422, wantCode: "invalid_code", events: []string{"auth.login.failed"}},
		{name: "a code for an unknown user", method: "POST", path: verify,
			body: map[string]any{"otp": code, "user_id": "00000000-0000-7000-8000-000000000000"}, wantStatus: 422, wantCode: "invalid_code"},
		{name: "the right code signs in", method: "POST", path: verify, headers: map[string]string{"User-Agent": browserUA},
			body: map[string]any{"otp": code, "user_id": userID}, wantStatus: 200, events: []string{"verification.email.verified", "challenge.completed"},
			check: func(t *testing.T, r response) {
				access, _ := e.tokenSet(t, r, userID)
				me := scenario{method: "GET", path: e.authPath("/current_user"), headers: user(access), wantStatus: 200}.run(t, e)
				u := userOf(t, me)
				if u["id"] != userID || u["email"] != "otp@example.com" || u["email_verified"] != true ||
					!jsonEqual(u["meta"], map[string]any{"first_name": "Otto"}) {
					t.Errorf("current_user = %v; want the verified user with the metadata given at sign-up", u)
				}
			}},
		{name: "a code works once", method: "POST", path: verify, body: map[string]any{"otp": code, "user_id": userID},
			wantStatus: 422, wantCode: "invalid_code"},
		{name: "a known address gets a new code", method: "POST", path: login, body: map[string]any{"identifier": "otp@example.com"},
			wantStatus: 200, events: []string{"verification.email.requested", "challenge.created"},
			check: func(t *testing.T, r response) {
				if r.str("user_id") != userID {
					t.Errorf("user_id = %q; want the known user %q", r.str("user_id"), userID)
				}
			}},
	})
	code = e.code(t, "otp@example.com")
	wrong = "000000"
	if code == wrong {
		wrong = "111111"
	}
	failing := scenario{method: "POST", path: verify, body: map[string]any{"otp": wrong, "user_id": userID}, wantStatus: 422,
		wantCode: "invalid_code", events: []string{"auth.login.failed"}}
	for i := 1; i <= 4; i++ {
		failing.name = "wrong code " + string(rune('0'+i))
		runScenarios(t, e, []scenario{failing})
	}
	runScenarios(t, e, []scenario{
		{name: "the fifth wrong code is compared and fails the challenge", method: "POST", path: verify,
			body: map[string]any{"otp": wrong, "user_id": userID}, wantStatus: 422, wantCode: "invalid_code",
			events: []string{"auth.login.failed", "verification.email.failed", "challenge.failed"}},
		{name: "a sixth code is refused uncompared", method: "POST", path: verify,
			body: map[string]any{"otp": wrong, "user_id": userID}, wantStatus: 429, wantCode: "too_many_attempts",
			check: func(t *testing.T, r response) {
				if r.header.Get("Retry-After") == "" {
					t.Errorf("429 without Retry-After")
				}
			}},
		{name: "then even the right code is refused", method: "POST", path: verify, body: map[string]any{"otp": code, "user_id": userID},
			wantStatus: 429, wantCode: "too_many_attempts"},
		{name: "a phone number gets an SMS", method: "POST", path: login, body: map[string]any{"identifier": "+1 415 555 2671"},
			wantStatus: 200, events: []string{"user.created", "verification.sms.requested", "challenge.created"},
			check: func(t *testing.T, r response) {
				phoneUser = r.str("user_id")
				if m, ok := e.Mail.Last("+14155552671"); !ok || m.Channel != courier.ChannelSMS || m.Code == "" {
					t.Errorf("SMS = %+v, %v; want a code by SMS", m, ok)
				}
			}},
	})
	r := scenario{name: "the SMS code signs in", method: "POST", path: verify,
		body: map[string]any{"otp": e.code(t, "+14155552671"), "user_id": phoneUser}, wantStatus: 200,
		events: []string{"verification.sms.verified", "challenge.completed"}}.run(t, e)
	e.tokenSet(t, r, phoneUser)
	runScenarios(t, e, []scenario{
		{name: "a refused message is accepted for delivery, then delivery_failed fires", method: "POST", path: login,
			body: map[string]any{"identifier": "bounce@example.com"}, wantStatus: 200,
			events: []string{"user.created", "verification.email.requested", "challenge.created", "verification.email.delivery_failed"},
			check: func(t *testing.T, r response) {
				if r.obj("otp")["success"] != true {
					t.Errorf("otp = %v; want success true (accepted for delivery: the provider is called afterwards)", r.obj("otp"))
				}
			}},
	})
}

func testMagicLinkFlow(t *testing.T, e *env) {
	login, status, authn := e.authPath("/magic_links/login"), e.authPath("/magic_links/status"), e.authPath("/magic_links/authenticate")
	var handle, userID string
	runScenarios(t, e, []scenario{
		{name: "a link for a new address", method: "POST", path: login,
			body: map[string]any{"identifier": "link@example.com", "webauthn_enabled": true}, wantStatus: 200,
			events: []string{"user.created", "verification.email.requested", "challenge.created"},
			check: func(t *testing.T, r response) {
				handle, userID = r.obj("magic_link")["id"].(string), r.str("user_id")
				if handle == "" || userID == "" {
					t.Fatalf("body = %s; want magic_link.id and user_id", r.raw)
				}
				e.remember(handle)
			}},
	})
	tok := e.magicToken(t, "link@example.com")
	if handle == tok {
		t.Fatalf("the poll handle is the e-mailed token")
	}
	if c := tokentest.Payload(t, tok); c["uuid"] != userID || c["webauthnEnabled"] != true || c["purpose"] != "magic_link" {
		t.Errorf("magic claims = %v; want uuid %s, webauthnEnabled true, purpose magic_link", c, userID)
	}
	poll := scenario{method: "POST", path: status, body: map[string]any{"id": handle}}
	pending := poll
	pending.name, pending.wantStatus, pending.wantCode = "polled before the link is opened", 409, "magic_link_pending"
	runScenarios(t, e, []scenario{
		pending,
		{name: "polled again too soon", method: "POST", path: status, body: map[string]any{"id": handle}, wantStatus: 429,
			wantCode: "slow_down"},
		{name: "a forged token", method: "PATCH", path: authn, body: map[string]any{"token": tok[:len(tok)-4] + "AAAA"},
			wantStatus: 404, wantCode: "magic_link_not_found_or_expired"},
		{name: "opening the link signs that device in", method: "PATCH", path: authn, body: map[string]any{"token": tok},
			wantStatus: 200, events: []string{"verification.email.verified", "challenge.completed"},
			check: func(t *testing.T, r response) { e.tokenSet(t, r, userID) }},
		{name: "opening it again is a failed login", method: "PATCH", path: authn, body: map[string]any{"token": tok},
			wantStatus: 404, wantCode: "magic_link_not_found_or_expired", events: []string{"auth.login.failed"}},
	})
	e.Clock.Advance(3 * time.Second) // past the poll interval
	collected := poll
	collected.name, collected.wantStatus = "the device that asked collects its own session", 200
	collected.check = func(t *testing.T, r response) { e.tokenSet(t, r, userID) }
	runScenarios(t, e, []scenario{collected})
	e.Clock.Advance(3 * time.Second)
	gone := poll
	gone.name, gone.wantStatus, gone.wantCode = "and only once", 404, "magic_link_not_found_or_expired"
	runScenarios(t, e, []scenario{
		gone,
		{name: "sign-up by link", method: "POST", path: e.authPath("/magic_links/register"), body: map[string]any{"identifier": "new@example.com"},
			wantStatus: 200, events: []string{"user.created", "verification.email.requested", "challenge.created"}},
		{name: "a link again for the same address", method: "POST", path: login, body: map[string]any{"identifier": "new@example.com"},
			wantStatus: 200, events: []string{"verification.email.requested", "challenge.created"}},
	})
	newest := e.magicToken(t, "new@example.com")
	// Past the link's lifetime and the 30 s of clock skew every token is allowed.
	e.Clock.Advance(time.Duration(e.app.MagicLinkExpiration)*time.Second + time.Minute)
	// Its challenge's expiry is now due. The periodic sweep would emit its
	// events within 15 s (real time), during the next requests or not; run
	// the sweep here (a second run finds nothing), so they are its own.
	if err := e.SignIn.ExpireChallenges(context.Background()); err != nil {
		t.Fatalf("ExpireChallenges: %v", err)
	}
	e.events.await(t, "verification.email.expired")
	runScenarios(t, e, []scenario{
		{name: "an expired link", method: "PATCH", path: authn, body: map[string]any{"token": newest}, wantStatus: 404,
			wantCode: "magic_link_not_found_or_expired"},
		{name: "an unknown poll handle", method: "POST", path: status, body: map[string]any{"id": "nope"}, wantStatus: 404,
			wantCode: "magic_link_not_found_or_expired"},
	})
}

func testInvitationFlow(t *testing.T, e *env) {
	var invitedID string
	runScenarios(t, e, []scenario{
		{name: "an administrator invites", method: "POST", path: "/v1/" + e.app.ID + "/users/invite", headers: bearer(e.appSecret),
			body: map[string]any{"identifier": "guest@example.com"}, wantStatus: 200, events: []string{"user.created"},
			check: func(t *testing.T, r response) { invitedID = userOf(t, r)["id"].(string) }},
	})
	tok := e.magicToken(t, "guest@example.com")
	confirm := e.authPath("/magic_links/confirm_invite")
	runScenarios(t, e, []scenario{
		{name: "a forged invitation", method: "POST", path: confirm, body: map[string]any{"token": tok[:len(tok)-4] + "AAAA"},
			wantStatus: 404, wantCode: "magic_link_not_found_or_expired"},
		{name: "a magic-link token is no invitation", method: "POST", path: confirm, body: map[string]any{"token": "sct_nothing"},
			wantStatus: 404, wantCode: "magic_link_not_found_or_expired"},
		{name: "accepting signs in and updates the user", method: "POST", path: confirm,
			body:       map[string]any{"token": tok, "user_meta": map[string]any{"first_name": "Guest", "shoe": 44}},
			wantStatus: 200, events: []string{"user.updated"},
			check: func(t *testing.T, r response) {
				e.tokenSet(t, r, invitedID)
				got := scenario{method: "GET", path: "/v1/" + e.app.ID + "/users/" + invitedID, headers: bearer(e.appSecret),
					wantStatus: 200}.run(t, e)
				u := userOf(t, got)
				if u["status"] != "active" || u["email_verified"] != true || !jsonEqual(u["meta"], map[string]any{"first_name": "Guest"}) {
					t.Errorf("invited user = %v; want active, verified, with the accepted metadata only", u)
				}
			}},
		{name: "an invitation works once", method: "POST", path: confirm, body: map[string]any{"token": tok}, wantStatus: 404,
			wantCode: "magic_link_not_found_or_expired"},
	})
}

func testTokenFlow(t *testing.T, e *env) {
	userID, access, refresh := e.signIn(t, "tokens@example.com", "user.created", "verification.email.requested", "challenge.created")
	refreshPath := e.authPath("/tokens/refresh")
	rotated := func(t *testing.T, r response) {
		a, rf := e.tokenSet(t, r, userID)
		if a == access || rf == refresh {
			t.Errorf("rotation returned the same tokens")
		}
		access, refresh = a, rf
	}
	first := refresh
	var successor string
	runScenarios(t, e, []scenario{
		{name: "refresh rotates", method: "POST", path: refreshPath, headers: map[string]string{"X-Refresh-Token": refresh},
			wantStatus: 200, check: func(t *testing.T, r response) { rotated(t, r); successor = refresh }},
	})
	runScenarios(t, e, []scenario{
		{name: "the spent token within the grace window returns the same successor", method: "POST", path: refreshPath,
			headers: map[string]string{"X-Refresh-Token": first}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if _, rf := e.tokenSet(t, r, userID); rf != successor {
					t.Errorf("grace answer refresh differs from the successor")
				}
			}},
		{name: "verify a live refresh token", method: "POST", path: e.authPath("/tokens/verify/refresh"),
			headers: bearer(successor), wantStatus: 200, wantBody: map[string]any{"verified": true, "message": "ok"}},
		{name: "verify a spent one", method: "POST", path: e.authPath("/tokens/verify/refresh"), headers: bearer(first), wantStatus: 401},
		{name: "force_refresh rotates too", method: "POST", path: e.authPath("/tokens/force_refresh"),
			headers: map[string]string{"X-Refresh-Token": successor}, wantStatus: 200, check: rotated},
	})
	runScenarios(t, e, []scenario{
		{name: "rotate_access with the API secret exchanges an access token for a full set", method: "POST",
			path: e.authPath("/tokens/rotate_access"), headers: map[string]string{"X-Authorization": access, "Authorization": "Bearer " + e.appSecret},
			wantStatus: 200, check: rotated},
		{name: "no refresh token", method: "POST", path: refreshPath, wantStatus: 401},
		{name: "an access token is no refresh token", method: "POST", path: refreshPath,
			headers: map[string]string{"X-Refresh-Token": access}, wantStatus: 401},
		{name: "rotate_access without a token", method: "POST", path: e.authPath("/tokens/rotate_access"), wantStatus: 401},
	})
	e.Clock.Advance(e.Config.Tokens.RefreshGrace + time.Second)
	runScenarios(t, e, []scenario{
		{name: "the first token reused after the grace window revokes the session", method: "POST", path: refreshPath,
			headers: map[string]string{"X-Refresh-Token": first}, wantStatus: 401},
		{name: "so the newest access token is refused", method: "GET", path: e.authPath("/current_user"), headers: user(access),
			wantStatus: 401},
		{name: "and the newest refresh token", method: "POST", path: refreshPath, headers: map[string]string{"X-Refresh-Token": refresh},
			wantStatus: 401},
	})
}

func testSessionFlow(t *testing.T, e *env) {
	userID, access, _ := e.signIn(t, "neo@example.com", "user.created", "verification.email.requested", "challenge.created")
	_, other, _ := e.signIn(t, "neo@example.com", "verification.email.requested", "challenge.created")
	me := e.authPath("/current_user")
	var otherSession, thisSession string
	runScenarios(t, e, []scenario{
		{name: "current_user", method: "GET", path: me, headers: user(access), wantStatus: 200,
			check: func(t *testing.T, r response) {
				u := userOf(t, r)
				sessions, _ := u["sessions"].([]any)
				if u["id"] != userID || len(sessions) != 2 {
					t.Fatalf("current_user = %v; want %s with its two sessions", u, userID)
				}
				for _, it := range sessions {
					if s := it.(map[string]any); s["current"] == true {
						thisSession = s["id"].(string)
					} else {
						otherSession = s["id"].(string)
					}
				}
			}},
		{name: "without a token", method: "GET", path: me, wantStatus: 401},
		{name: "with an API secret", method: "GET", path: me, headers: map[string]string{"X-Authorization": e.appSecret}, wantStatus: 401},
		{name: "update own metadata", method: "PATCH", path: me + "/meta", headers: user(access),
			body: map[string]any{"user_meta": map[string]any{"first_name": "Neo"}}, wantStatus: 200, events: []string{"user.updated"},
			check: func(t *testing.T, r response) {
				if u := userOf(t, r); !jsonEqual(u["meta"], map[string]any{"first_name": "Neo"}) {
					t.Errorf("meta = %v; want first_name Neo", u["meta"])
				}
			}},
		{name: "a key outside the schema is refused", method: "PATCH", path: me + "/meta", headers: user(access),
			body: map[string]any{"user_meta": map[string]any{"shoe": 44}}, wantStatus: 422, wantCode: "invalid_user_meta"},
		{name: "a field only the app may set is refused", method: "PATCH", path: me + "/meta", headers: user(access),
			body: map[string]any{"user_meta": map[string]any{"first_name": "Neo2", "age": 99}}, wantStatus: 422, wantCode: "invalid_user_meta",
			wantBody: map[string]any{"user_meta_errors": map[string]any{"age": "may only be set by the app"}}},
		{name: "list own sessions", method: "GET", path: e.authPath("/sessions"), headers: user(access), wantStatus: 200,
			check: func(t *testing.T, r response) {
				if list, _ := r.body["sessions"].([]any); len(list) != 2 {
					t.Errorf("sessions = %s; want 2", r.raw)
				}
			}},
	})
	if otherSession == "" || thisSession == "" {
		t.Fatalf("sessions not found")
	}
	admin := "/v1/" + e.app.ID + "/users/" + userID + "/sessions"
	runScenarios(t, e, []scenario{
		{name: "end another session of one's own", method: "DELETE", path: e.authPath("/sessions/" + otherSession), headers: user(access),
			wantStatus: 200},
		{name: "its token stops working", method: "GET", path: me, headers: user(other), wantStatus: 401},
		{name: "ending it again changes nothing", method: "DELETE", path: e.authPath("/sessions/" + otherSession), headers: user(access),
			wantStatus: 200},
		{name: "a session that is not the user's", method: "DELETE", path: e.authPath("/sessions/00000000-0000-7000-8000-000000000000"),
			headers: user(access), wantStatus: 404, wantCode: "session_not_found"},
		{name: "the administrator lists the user's sessions", method: "GET", path: "/v1/apps/" + e.app.ID + "/users/" + userID + "/sessions",
			headers: bearer(e.appSecret), wantStatus: 200,
			check: func(t *testing.T, r response) {
				var list []any
				if err := json.Unmarshal(r.raw, &list); err != nil || len(list) != 1 || list[0].(map[string]any)["id"] != thisSession {
					t.Errorf("sessions = %s; want only %s", r.raw, thisSession)
				}
			}},
		{name: "on the alternate path too", method: "GET", path: admin, headers: bearer(e.appSecret), wantStatus: 200},
		{name: "another app's secret may not", method: "GET", path: admin, headers: bearer(e.appSecretFor(t, e.createApp(t, e.ws.ID, "Elsewhere", nil).ID)),
			wantStatus: 403},
		{name: "sessions of an unknown user", method: "GET", path: "/v1/" + e.app.ID + "/users/00000000-0000-7000-8000-000000000000/sessions",
			headers: bearer(e.appSecret), wantStatus: 404, wantCode: "user_not_found"},
		{name: "the administrator ends a session", method: "DELETE", path: admin + "/" + thisSession, headers: bearer(e.appSecret),
			wantStatus: 200},
		{name: "its token stops working at once", method: "GET", path: me, headers: user(access), wantStatus: 401},
	})
	_, access, _ = e.signIn(t, "neo@example.com", "verification.email.requested", "challenge.created")
	runScenarios(t, e, []scenario{
		{name: "sign out", method: "DELETE", path: me, headers: user(access), wantStatus: 200},
		{name: "signed out", method: "GET", path: me, headers: user(access), wantStatus: 401},
		{name: "a client error report", method: "POST", path: e.authPath("/errors"), body: map[string]any{"payload": map[string]any{"msg": "x"}},
			wantStatus: 200},
	})
}

func testWebhookFlow(t *testing.T, e *env) {
	hooks := "/v1/apps/" + e.app.ID + "/webhooks"
	auth := bearer(e.appSecret)
	rcv := newReceiver(t)
	var id, secret string
	runScenarios(t, e, []scenario{
		{name: "event types", method: "GET", path: hooks + "/event_types", headers: auth, wantStatus: 200,
			check: func(t *testing.T, r response) {
				types, _ := r.body["event_types"].([]any)
				if !strings.Contains(string(r.raw), `"user.updated"`) || len(types) < 10 {
					t.Errorf("event_types = %s; want every type", r.raw)
				}
			}},
		{name: "create", method: "POST", path: hooks, headers: auth,
			body: map[string]any{"webhook": map[string]any{"url": rcv.URL + "/in", "event_types": []string{"user.*"}}}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				w := r.obj("webhook")
				id, _ = w["id"].(string)
				secret, _ = w["secret"].(string)
				e.remember(secret)
				if id == "" || !strings.HasPrefix(secret, "whsec_") || !jsonEqual(w["event_types"], []string{"user.*"}) {
					t.Errorf("webhook = %s; want an id, a whsec_ secret and the event types", r.raw)
				}
			}},
		{name: "a URL that is not https", method: "POST", path: hooks, headers: auth,
			body: map[string]any{"webhook": map[string]any{"url": "ftp://example.com/in"}}, wantStatus: 400, wantCode: "invalid_request",
			check: func(t *testing.T, r response) {
				if msg := r.str("error"); msg != "url must use https" {
					t.Errorf("error = %q; want %q", msg, "url must use https")
				}
			}},
		{name: "an unknown event type", method: "POST", path: hooks, headers: auth,
			body: map[string]any{"webhook": map[string]any{"url": rcv.URL, "event_types": []string{"user.exploded"}}}, wantStatus: 400,
			wantCode: "invalid_request"},
		{name: "another app's secret", method: "GET", path: hooks, headers: bearer(e.appSecretFor(t, e.createApp(t, e.ws.ID, "Spy", nil).ID)),
			wantStatus: 403},
	})
	one := hooks + "/" + id
	runScenarios(t, e, []scenario{
		{name: "list shows no secret", method: "GET", path: hooks, headers: auth, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if list, _ := r.body["webhooks"].([]any); len(list) != 2 || strings.Contains(string(r.raw), "whsec_") {
					t.Errorf("webhooks = %s; want the two endpoints without secrets", r.raw)
				}
			}},
		{name: "get shows no secret", method: "GET", path: one, headers: auth, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if strings.Contains(string(r.raw), "whsec_") {
					t.Errorf("webhook = %s; want no secret", r.raw)
				}
			}},
		{name: "a user change reaches both endpoints", method: "POST", path: "/v1/" + e.app.ID + "/users", headers: auth,
			body: map[string]any{"identifier": "hooked@example.com"}, wantStatus: 200, events: []string{"user.created"}},
		{name: "disable it", method: "PATCH", path: one, headers: auth,
			body: map[string]any{"webhook": map[string]any{"enabled": false, "description": "paused"}}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if w := r.obj("webhook"); w["enabled"] != false || w["description"] != "paused" {
					t.Errorf("webhook = %s; want disabled with its description", r.raw)
				}
			}},
		{name: "a test event goes to that endpoint only", method: "POST", path: one + "/test", headers: auth, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if d := r.obj("delivery"); d["event_type"] != "webhook.test" {
					t.Errorf("delivery = %s; want a webhook.test delivery", r.raw)
				}
			}},
		{name: "a test event to the recording endpoint", method: "POST", path: hooks + "/" + e.events.endpointID + "/test", headers: auth,
			wantStatus: 200, events: []string{"webhook.test"}},
		{name: "rotate the secret", method: "POST", path: one + "/rotate_secret", headers: auth, wantStatus: 200,
			check: func(t *testing.T, r response) {
				w := r.obj("webhook")
				s, _ := w["secret"].(string)
				e.remember(s)
				if !strings.HasPrefix(s, "whsec_") || s == secret || w["previous_secret_expires_at"] == nil {
					t.Errorf("webhook = %s; want a new secret and the old one's expiry", r.raw)
				}
			}},
	})
	// The test delivery to the disabled endpoint fails for good once the
	// worker has tried it; then it may be delivered again.
	var deliveryID string
	deadline := time.Now().Add(20 * time.Second)
	for deliveryID == "" {
		r := scenario{method: "GET", path: one + "/deliveries", headers: auth, wantStatus: 200}.run(t, e)
		for _, it := range r.body["deliveries"].([]any) {
			if d := it.(map[string]any); d["event_type"] == "webhook.test" && d["status"] == "failed" && d["next_attempt_at"] == nil {
				deliveryID = d["id"].(string)
			}
		}
		if deliveryID == "" {
			if time.Now().After(deadline) {
				t.Fatalf("the test delivery to the disabled endpoint did not fail in time: %s", r.raw)
			}
			time.Sleep(100 * time.Millisecond) // the job queue works in real time
		}
	}
	runScenarios(t, e, []scenario{
		{name: "redeliver", method: "POST", path: one + "/deliveries/" + deliveryID + "/redeliver", headers: auth, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if d := r.obj("delivery"); d["id"] != deliveryID || d["status"] != "pending" {
					t.Errorf("delivery = %s; want %s pending again", r.raw, deliveryID)
				}
			}},
		{name: "redeliver an unknown delivery", method: "POST", path: one + "/deliveries/00000000-0000-7000-8000-000000000000/redeliver",
			headers: auth, wantStatus: 404, wantCode: "delivery_not_found"},
		{name: "delete", method: "DELETE", path: one, headers: auth, wantStatus: 200},
		{name: "gone", method: "GET", path: one, headers: auth, wantStatus: 404, wantCode: "webhook_not_found"},
		{name: "deliveries of a deleted endpoint", method: "GET", path: one + "/deliveries", headers: auth, wantStatus: 404,
			wantCode: "webhook_not_found"},
	})
}

// TestWebhookEndpointLimit: creating an endpoint beyond the app's limit
// (webhooks.max_endpoints_per_app) answers 409 webhook_limit_reached and
// creates nothing; deleting one makes room (issue 8 finding 5).
func TestWebhookEndpointLimit(t *testing.T) {
	opts := servertest.Options{Serve: true, Settings: map[string]string{"GATEHOUSE_WEBHOOKS_MAX_ENDPOINTS_PER_APP": "2"}}
	forEach(t, opts, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		hooks := "/v1/apps/" + e.app.ID + "/webhooks"
		auth := bearer(e.appSecret)
		rcv := newReceiver(t)
		create := func(name string, status int, code string) scenario {
			return scenario{name: name, method: "POST", path: hooks, headers: auth,
				body: map[string]any{"webhook": map[string]any{"url": rcv.URL + "/in"}}, wantStatus: status, wantCode: code}
		}
		var first string
		runScenarios(t, e, []scenario{
			{name: "first", method: "POST", path: hooks, headers: auth,
				body: map[string]any{"webhook": map[string]any{"url": rcv.URL + "/in"}}, wantStatus: 200,
				check: func(t *testing.T, r response) {
					first, _ = r.obj("webhook")["id"].(string)
					e.remember(r.obj("webhook")["secret"].(string))
				}},
			create("second", 200, ""),
			create("third is over the limit", 409, "webhook_limit_reached"),
			{name: "still two", method: "GET", path: hooks, headers: auth, wantStatus: 200,
				check: func(t *testing.T, r response) {
					if list, _ := r.body["webhooks"].([]any); len(list) != 2 {
						t.Errorf("webhooks = %s; want two", r.raw)
					}
				}},
		})
		runScenarios(t, e, []scenario{
			{name: "delete one", method: "DELETE", path: hooks + "/" + first, headers: auth, wantStatus: 200},
			create("then there is room", 200, ""),
		})
	})
}

// newReceiver is a webhook receiver that answers 204.
func newReceiver(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	return srv
}
