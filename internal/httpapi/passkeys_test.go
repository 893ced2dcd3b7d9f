package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	vwa "github.com/descope/virtualwebauthn"

	"github.com/gatehouse-auth/gatehouse/internal/passkey/passkeytest"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// Passkey ceremonies over real HTTP, on both engines, with a software
// authenticator (descope/virtualwebauthn: packed self attestation, ES256)
// standing in for the browser. The real browser runs them in
// e2e/sdk/test/passkeys.browser.test.mjs.

func TestPasskeys(t *testing.T) {
	forEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		groups := []struct {
			name string
			fn   func(t *testing.T, e *env)
		}{
			{"devices", testPasskeyDevices},
			{"refusals", testPasskeyRefusals},
			{"clone", testPasskeyClone},
			{"other_app", testPasskeyOtherApp},
			{"signup", testPasskeySignup},
			{"settings", testPasskeySettings},
		}
		for _, g := range groups {
			t.Run(g.name, func(t *testing.T) {
				e := envOf(t, sys, g.name)
				e.recordEvents(t)
				g.fn(t, e)
			})
		}
		t.Run("replicas", func(t *testing.T) { testPasskeyReplicas(t, sys) })
	})
}

// authenticator is a software authenticator (passkeytest) for the fixture app's origin.
type authenticator struct{ passkeytest.Authenticator }

func newAuthenticator() *authenticator {
	return &authenticator{*passkeytest.New("app.example.com", appOrigin)}
}

// options re-encodes the options of an answer for the authenticator.
func options(t *testing.T, r response) string {
	t.Helper()
	raw, err := json.Marshal(r.body["options"])
	if err != nil || r.body["options"] == nil {
		t.Fatalf("answer has no options: %s", r.raw)
	}
	return string(raw)
}

// create answers creation options with a new credential (kept) and returns the body.
func (a *authenticator) create(t *testing.T, r response) (string, vwa.Credential) {
	t.Helper()
	body, cred, err := a.Create(options(t, r))
	if err != nil {
		t.Fatal(err)
	}
	return body, cred
}

// get answers request options, advancing the credential's counter.
func (a *authenticator) get(t *testing.T, r response) string {
	t.Helper()
	body, err := a.Get(options(t, r))
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func (e *env) registerOptions(t *testing.T, access string) response {
	t.Helper()
	return scenario{method: "POST", path: e.authPath("/devices/register"), headers: user(access), wantStatus: 200,
		wantBody: map[string]any{"user_verification": "required"}}.run(t, e)
}

// addPasskey registers a new passkey of a for the signed-in user and returns its device record.
func (e *env) addPasskey(t *testing.T, a *authenticator, access string) response {
	t.Helper()
	body, _ := a.create(t, e.registerOptions(t, access))
	return scenario{method: "POST", path: e.authPath("/devices/finalize"), headers: user(access), body: body,
		wantStatus: 200, events: []string{"user.updated"}}.run(t, e)
}

func (e *env) loginOptions(t *testing.T, identifier string) response {
	t.Helper()
	body := map[string]any{}
	if identifier != "" {
		body["identifier"] = identifier
	}
	return scenario{method: "POST", path: e.authPath("/webauthn/login/initialize"), body: body, wantStatus: 200}.run(t, e)
}

func allowList(t *testing.T, r response) []string {
	t.Helper()
	opts, err := vwa.ParseAssertionOptions(options(t, r))
	if err != nil {
		t.Fatalf("parse request options: %v", err)
	}
	return opts.AllowCredentials
}

func (e *env) passkeyRefused(t *testing.T, body string, events ...string) response {
	t.Helper()
	if events == nil {
		events = []string{"auth.login.failed", "challenge.failed"}
	}
	return scenario{method: "POST", path: e.authPath("/webauthn/login/finalize"), body: body, wantStatus: 400,
		wantCode: "webauthn_verification_error", events: events}.run(t, e)
}

func (e *env) currentUser(t *testing.T, access string) map[string]any {
	t.Helper()
	return scenario{method: "GET", path: e.authPath("/current_user"), headers: user(access), wantStatus: 200}.run(t, e).obj("user")
}

func testPasskeyDevices(t *testing.T, e *env) {
	const email = "ada@example.com"
	userID, access, _ := e.signIn(t, email, "user.created", "verification.email.requested", "challenge.created")

	// Before any passkey: a stand-in credential, stable, the same shape as
	// for an identifier nobody has (security R-WA-7).
	stand := allowList(t, e.loginOptions(t, email))
	if len(stand) != 1 || !slices.Equal(stand, allowList(t, e.loginOptions(t, email))) {
		t.Fatalf("allowCredentials without passkeys = %v; want one stable stand-in", stand)
	}
	nobody := allowList(t, e.loginOptions(t, "nobody@example.com"))
	if len(nobody) != 1 || nobody[0] == stand[0] || len(nobody[0]) != len(stand[0]) {
		t.Errorf("allowCredentials for an unknown identifier = %v; want one stand-in like %v", nobody, stand)
	}

	a := newAuthenticator()
	opts := e.registerOptions(t, access)
	pk := opts.obj("options")
	if rp, _ := pk["rp"].(map[string]any); rp["id"] != "app.example.com" || pk["challenge"] == "" || pk["publicKey"] != nil {
		t.Fatalf("creation options = %s; want the inner options with rp.id app.example.com", opts.raw)
	}
	if u, _ := pk["user"].(map[string]any); u["name"] != email || len(u["id"].(string)) < 80 {
		t.Errorf("options.user = %v; want the e-mail as name and a 64-byte random handle", u)
	}
	body, cred := a.create(t, opts)
	dev := scenario{method: "POST", path: e.authPath("/devices/finalize"), headers: user(access), body: body,
		wantStatus: 200, events: []string{"user.updated"},
		wantBody: map[string]any{"type": "webauthn", "attestation_format": "packed", "backup_eligible": true,
			"suspended": false, "name": "Chrome on Linux"}}.run(t, e)
	credID := dev.str("credential_id")
	if credID == "" || credID != b64(cred.ID) {
		t.Fatalf("device credential_id = %q; want the credential's id %q", credID, b64(cred.ID))
	}
	u := e.currentUser(t, access)
	if u["webauthn_enabled"] != true || !jsonEqual(u["webauthn_types"], []any{"cross-platform"}) {
		t.Errorf("user after registration: webauthn_enabled %v, webauthn_types %v", u["webauthn_enabled"], u["webauthn_types"])
	}
	lookup := scenario{method: "GET", path: e.authPath("/users?identifier=" + email), wantStatus: 200}.run(t, e)
	if lookup.obj("user")["webauthn_enabled"] != true {
		t.Errorf("lookup after registration = %s; want webauthn_enabled", lookup.raw)
	}

	// A second registration excludes the first credential.
	again := e.registerOptions(t, access)
	if ex, _ := again.obj("options")["excludeCredentials"].([]any); len(ex) != 1 || ex[0].(map[string]any)["id"] != credID {
		t.Errorf("excludeCredentials = %v; want the registered credential", again.obj("options")["excludeCredentials"])
	}

	// Sign-in by identifier lists the credential, as the SDK's new-device check needs.
	lo := e.loginOptions(t, email)
	if got := allowList(t, lo); !slices.Equal(got, []string{credID}) {
		t.Fatalf("allowCredentials = %v; want [%s]", got, credID)
	}
	assertion := a.get(t, lo)
	r := scenario{method: "POST", path: e.authPath("/webauthn/login/finalize"), headers: map[string]string{"User-Agent": browserUA},
		body: assertion, wantStatus: 200, events: []string{"challenge.completed"}}.run(t, e)
	pkAccess, _ := e.tokenSet(t, r, userID)
	sessions := scenario{method: "GET", path: e.authPath("/sessions"), headers: user(pkAccess), wantStatus: 200}.run(t, e)
	var found bool
	for _, s := range sessions.body["sessions"].([]any) {
		s := s.(map[string]any)
		if s["current"] == true {
			found = s["type"] == "webauthn" && s["credential_id"] == credID
		}
	}
	if !found {
		t.Errorf("sessions = %s; want the current one of type webauthn with credential_id %s", sessions.raw, credID)
	}

	// The same assertion again: its ceremony is spent (replay).
	e.passkeyRefused(t, assertion)

	// A discoverable sign-in (no identifier): the authenticator names the user.
	disc := e.loginOptions(t, "")
	if got := allowList(t, disc); len(got) != 0 {
		t.Errorf("discoverable allowCredentials = %v; want none", got)
	}
	r = scenario{method: "POST", path: e.authPath("/webauthn/login/finalize"), body: a.get(t, disc), wantStatus: 200,
		events: []string{"challenge.completed"}}.run(t, e)
	e.tokenSet(t, r, userID)
	// It belongs to the client that asked for it: another user agent's
	// answer is refused and leaves it to that client.
	disc = scenario{method: "POST", path: e.authPath("/webauthn/login/initialize"), headers: browser, body: map[string]any{},
		wantStatus: 200}.run(t, e)
	answer := a.get(t, disc)
	scenario{method: "POST", path: e.authPath("/webauthn/login/finalize"), headers: map[string]string{"User-Agent": "curl/8.0"},
		body: answer, wantStatus: 400, wantCode: "webauthn_verification_error",
		events: []string{"auth.login.failed", "challenge.failed"}}.run(t, e)
	scenario{method: "POST", path: e.authPath("/webauthn/login/finalize"), headers: browser, body: answer, wantStatus: 200,
		events: []string{"challenge.completed"}}.run(t, e)

	// Listing, renaming, the administrator's view.
	list := scenario{method: "GET", path: e.authPath("/devices"), headers: user(access), wantStatus: 200}.run(t, e)
	devs, _ := list.body["devices"].([]any)
	if len(devs) != 1 || devs[0].(map[string]any)["last_used_at"] == nil {
		t.Fatalf("devices = %s; want the one passkey, used", list.raw)
	}
	scenario{method: "PATCH", path: e.authPath("/devices/" + dev.str("id")), headers: user(access),
		body: map[string]any{"name": "Work laptop"}, wantStatus: 200,
		check: func(t *testing.T, r response) {
			if r.obj("device")["name"] != "Work laptop" {
				t.Errorf("renamed device = %s", r.raw)
			}
		}}.run(t, e)
	scenario{method: "PATCH", path: e.authPath("/devices/" + dev.str("id")), headers: user(access),
		body: map[string]any{"name": "  "}, wantStatus: 400, wantCode: "invalid_request"}.run(t, e)
	scenario{method: "PATCH", path: e.authPath("/devices/nope"), headers: user(access),
		body: map[string]any{"name": "x"}, wantStatus: 404, wantCode: "device_not_found"}.run(t, e)
	admin := scenario{method: "GET", path: "/v1/" + e.app.ID + "/users/" + userID + "/devices", headers: bearer(e.appSecret), wantStatus: 200}.run(t, e)
	if devs, _ := admin.body["devices"].([]any); len(devs) != 1 {
		t.Errorf("admin devices = %s", admin.raw)
	}
	scenario{method: "GET", path: "/v1/" + e.app.ID + "/users/" + userID + "/devices", wantStatus: 401}.run(t, e)

	// Removing the last passkey (by credential id, as the SDK does) turns passkeys off.
	scenario{method: "DELETE", path: e.authPath("/devices/" + credID), headers: user(access), wantStatus: 200,
		events: []string{"user.updated"}}.run(t, e)
	scenario{method: "DELETE", path: e.authPath("/devices/" + credID), headers: user(access), wantStatus: 404,
		wantCode: "device_not_found"}.run(t, e)
	u = e.currentUser(t, access)
	if u["webauthn_enabled"] != false || !jsonEqual(u["webauthn_types"], []any{}) {
		t.Errorf("user after removal: webauthn_enabled %v, webauthn_types %v", u["webauthn_enabled"], u["webauthn_types"])
	}
	if got := allowList(t, e.loginOptions(t, email)); !slices.Equal(got, stand) {
		t.Errorf("allowCredentials after removal = %v; want the stand-in %v again", got, stand)
	}
	e.passkeyRefused(t, a.get(t, e.loginOptions(t, "")))

	// An administrator removes a passkey too.
	e.addPasskey(t, a, access)
	second := a.Auth.Credentials[len(a.Auth.Credentials)-1]
	scenario{method: "DELETE", path: "/v1/" + e.app.ID + "/users/" + userID + "/devices/" + b64(second.ID),
		headers: bearer(e.appSecret), wantStatus: 200, events: []string{"user.updated"}}.run(t, e)
	if u := e.currentUser(t, access); u["webauthn_enabled"] != false {
		t.Errorf("user after the administrator removed the passkey: webauthn_enabled %v", u["webauthn_enabled"])
	}
}

func testPasskeyRefusals(t *testing.T, e *env) {
	_, access, _ := e.signIn(t, "grace@example.com", "user.created", "verification.email.requested", "challenge.created")
	register := func(t *testing.T, a *authenticator, access string) response {
		t.Helper()
		body, _ := a.create(t, e.registerOptions(t, access))
		return scenario{method: "POST", path: e.authPath("/devices/finalize"), headers: user(access), body: body,
			wantStatus: 400, wantCode: "webauthn_register_error"}.run(t, e)
	}

	// A registration from an origin that is not the app's (R-WA-2).
	evil := newAuthenticator()
	evil.RP.Origin = "https://evil.example"
	if r := register(t, evil, access); !strings.Contains(r.str("error"), "origin") {
		t.Errorf("wrong-origin refusal = %s; want it to name the origin", r.raw)
	}
	// For another RP id.
	other := newAuthenticator()
	other.RP.ID = "example.com"
	register(t, other, access)
	// Without user verification while the app requires it.
	noUV := newAuthenticator()
	noUV.Auth.Options.UserNotVerified = true
	register(t, noUV, access)
	// Garbage: the schema refuses what lacks fields; the verifier, the rest.
	scenario{method: "POST", path: e.authPath("/devices/finalize"), headers: user(access), body: `{"id":"x","type":"public-key"}`,
		wantStatus: 400, wantCode: "invalid_request"}.run(t, e)
	scenario{method: "POST", path: e.authPath("/devices/finalize"), headers: user(access), body: bogusCredential,
		wantStatus: 400, wantCode: "webauthn_register_error"}.run(t, e)
	// Someone else's ceremony: the answer to one user's options, sent with another's token.
	_, otherAccess, _ := e.signIn(t, "hopper@example.com", "user.created", "verification.email.requested", "challenge.created")
	mine, _ := newAuthenticator().create(t, e.registerOptions(t, access))
	scenario{method: "POST", path: e.authPath("/devices/finalize"), headers: user(otherAccess), body: mine,
		wantStatus: 400, wantCode: "webauthn_register_error"}.run(t, e)
	// That ceremony is spent now, even for its owner.
	scenario{method: "POST", path: e.authPath("/devices/finalize"), headers: user(access), body: mine,
		wantStatus: 400, wantCode: "webauthn_register_error"}.run(t, e)
	// Without a session.
	scenario{method: "POST", path: e.authPath("/devices/register"), wantStatus: 401}.run(t, e)
	if u := e.currentUser(t, access); u["webauthn_enabled"] != false {
		t.Fatalf("refused registrations enabled passkeys: %v", u)
	}

	// A credential registered by one user cannot be registered by another (R-WA-4).
	a := newAuthenticator()
	e.addPasskey(t, a, access)
	cred := a.Auth.Credentials[0]
	opts, err := vwa.ParseAttestationOptions(options(t, e.registerOptions(t, otherAccess)))
	if err != nil {
		t.Fatal(err)
	}
	dup := vwa.CreateAttestationResponse(a.RP, a.Auth, cred, *opts)
	r := scenario{method: "POST", path: e.authPath("/devices/finalize"), headers: user(otherAccess), body: dup,
		wantStatus: 400, wantCode: "webauthn_register_error"}.run(t, e)
	if !strings.Contains(r.str("error"), "registered already") {
		t.Errorf("duplicate credential refusal = %s", r.raw)
	}

	// Sign-in refusals (R-WA-1, R-WA-2, R-WA-4).
	first := e.loginOptions(t, "grace@example.com")
	earlier := a.get(t, first)
	scenario{method: "POST", path: e.authPath("/webauthn/login/finalize"), body: earlier, wantStatus: 200,
		events: []string{"challenge.completed"}}.run(t, e)
	e.loginOptions(t, "grace@example.com") // a new ceremony does not revive the old challenge
	e.passkeyRefused(t, earlier)

	wrongOrigin := *a
	wrongOrigin.RP.Origin = "https://evil.example"
	e.passkeyRefused(t, wrongOrigin.get(t, e.loginOptions(t, "grace@example.com")))
	wrongRP := *a
	wrongRP.RP.ID = "evil.example"
	e.passkeyRefused(t, wrongRP.get(t, e.loginOptions(t, "grace@example.com")))
	unverified := *a
	unverified.Auth.Options.UserNotVerified = true
	e.passkeyRefused(t, unverified.get(t, e.loginOptions(t, "grace@example.com")))

	// A ceremony answered after its 300 s.
	late := e.loginOptions(t, "grace@example.com")
	e.Clock.Advance(301 * time.Second)
	e.passkeyRefused(t, a.get(t, late))

	// Grace's passkey answering a ceremony begun for Hopper.
	e.addPasskey(t, newAuthenticator(), otherAccess)
	e.passkeyRefused(t, a.get(t, withAllowed(t, e.loginOptions(t, "hopper@example.com"), a)))

	// Malformed answers.
	scenario{method: "POST", path: e.authPath("/webauthn/login/finalize"), body: `{"id":"x"}`, wantStatus: 400,
		wantCode: "invalid_request"}.run(t, e)
	scenario{method: "POST", path: e.authPath("/webauthn/login/finalize"), body: `[]`, wantStatus: 400,
		wantCode: "invalid_request"}.run(t, e)
	e.passkeyRefused(t, bogusCredential)
	// Browsers send null for what they cannot tell; that is not a schema error.
	e.passkeyRefused(t, strings.Replace(bogusCredential, `"type"`, `"authenticatorAttachment":null,"clientExtensionResults":null,"type"`, 1))

	// The seed route for an existing identifier: user_exists, nothing bound.
	scenario{method: "POST", path: e.authPath("/webauthn/register/initialize"), headers: bearer(e.appSecret),
		body: map[string]any{"identifier": "grace@example.com"}, wantStatus: 400, wantCode: "user_exists"}.run(t, e)
	scenario{method: "POST", path: e.authPath("/webauthn/register/initialize"),
		body: map[string]any{"identifier": "new@example.com"}, wantStatus: 401}.run(t, e)
}

// bogusCredential has the shape of a credential and nothing valid in it.
const bogusCredential = `{"id":"AAAA","rawId":"AAAA","type":"public-key","response":{"clientDataJSON":"e30","attestationObject":"oA","authenticatorData":"AA","signature":"AA"}}`

// withAllowed rewrites request options to allow a's credentials, as an
// attacker's page could, so the authenticator signs over that challenge.
func withAllowed(t *testing.T, r response, a *authenticator) response {
	t.Helper()
	o := r.obj("options")
	list := []any{}
	for _, c := range a.Auth.Credentials {
		list = append(list, map[string]any{"type": "public-key", "id": b64(c.ID)})
	}
	o["allowCredentials"] = list
	return r
}

func testPasskeyClone(t *testing.T, e *env) {
	userID, access, _ := e.signIn(t, "clone@example.com", "user.created", "verification.email.requested", "challenge.created")
	a := newAuthenticator()
	e.addPasskey(t, a, access)
	for i := range 2 {
		r := scenario{method: "POST", path: e.authPath("/webauthn/login/finalize"), body: a.get(t, e.loginOptions(t, "clone@example.com")),
			wantStatus: 200, events: []string{"challenge.completed"}}.run(t, e)
		e.tokenSet(t, r, userID)
		// The stored counter rises with each good sign-in.
		list := scenario{method: "GET", path: e.authPath("/devices"), headers: user(access), wantStatus: 200}.run(t, e)
		if d := list.body["devices"].([]any)[0].(map[string]any); d["sign_count"] != float64(i+1) {
			t.Errorf("sign_count after sign-in %d = %v; want %d", i+1, d["sign_count"], i+1)
		}
	}
	// A copy of the key whose counter lags behind: the counter goes
	// backwards, so the passkey is suspended (R-WA-3).
	a.Auth.Credentials[0].Counter = 0
	e.passkeyRefused(t, a.get(t, e.loginOptions(t, "clone@example.com")), "auth.login.failed", "challenge.failed", "user.updated")
	list := scenario{method: "GET", path: e.authPath("/devices"), headers: user(access), wantStatus: 200}.run(t, e)
	if d := list.body["devices"].([]any)[0].(map[string]any); d["suspended"] != true {
		t.Errorf("device after the counter went back = %v; want suspended", d)
	}
	if u := e.currentUser(t, access); u["webauthn_enabled"] != false {
		t.Errorf("a suspended passkey still counts: %v", u)
	}
	// Even an advancing counter no longer signs in.
	a.Auth.Credentials[0].Counter = 100
	e.passkeyRefused(t, a.get(t, e.loginOptions(t, "")))
}

func testPasskeyOtherApp(t *testing.T, e *env) {
	_, access, _ := e.signIn(t, "multi@example.com", "user.created", "verification.email.requested", "challenge.created")
	a := newAuthenticator()
	e.addPasskey(t, a, access)
	// App B has the same origin (so the same RP id): the credential still
	// belongs to app A alone.
	b := e.sibling(t, e.System, e.createApp(t, e.ws.ID, "Other", nil))
	_, accessB, _ := b.signIn(t, "multi@example.com")
	opts := b.loginOptions(t, "")
	scenario{method: "POST", path: b.authPath("/webauthn/login/finalize"), body: a.get(t, opts), wantStatus: 400,
		wantCode: "webauthn_verification_error"}.run(t, b)
	// App A's access token does not open app B's devices.
	scenario{method: "GET", path: b.authPath("/devices"), headers: user(access), wantStatus: 401}.run(t, b)
	list := scenario{method: "GET", path: b.authPath("/devices"), headers: user(accessB), wantStatus: 200}.run(t, b)
	if devs := list.body["devices"].([]any); len(devs) != 0 {
		t.Errorf("app B lists app A's passkeys: %s", list.raw)
	}
}

func testPasskeySignup(t *testing.T, e *env) {
	r := scenario{method: "POST", path: e.authPath("/webauthn/register/initialize"), headers: bearer(e.appSecret),
		body:       map[string]any{"identifier": "Lin@Example.com", "user_meta": map[string]any{"first_name": "Lin", "shoe": 42}},
		wantStatus: 200, events: []string{"user.created"},
		wantBody: map[string]any{"user_verification": "required"}}.run(t, e)
	if me := r.obj("user_meta_errors"); me["shoe"] == nil {
		t.Errorf("user_meta_errors = %v; want the undeclared key reported", me)
	}
	a := newAuthenticator()
	body, cred := a.create(t, r)
	done := scenario{method: "POST", path: e.authPath("/webauthn/register/finalize"), headers: map[string]string{"User-Agent": browserUA},
		body: body, wantStatus: 200, events: []string{"user.updated"}}.run(t, e)
	access, _ := e.tokenSet(t, done, "")
	if d := done.obj("device"); d["credential_id"] != b64(cred.ID) {
		t.Errorf("device = %v", d)
	}
	u := e.currentUser(t, access)
	if u["email"] != "lin@example.com" || u["webauthn_enabled"] != true || u["meta"].(map[string]any)["first_name"] != "Lin" {
		t.Errorf("new user = %v", u)
	}
	// The ceremony is spent.
	scenario{method: "POST", path: e.authPath("/webauthn/register/finalize"), body: body, wantStatus: 400,
		wantCode: "webauthn_register_error"}.run(t, e)
	scenario{method: "POST", path: e.authPath("/webauthn/register/initialize"), headers: bearer(e.appSecret),
		body: map[string]any{"identifier": "not an address"}, wantStatus: 400, wantCode: "invalid_identifier"}.run(t, e)
	// A user deactivated before the browser answers: refused, and nothing is stored.
	off := scenario{method: "POST", path: e.authPath("/webauthn/register/initialize"), headers: bearer(e.appSecret),
		body: map[string]any{"identifier": "off@example.com"}, wantStatus: 200, events: []string{"user.created"}}.run(t, e)
	offID := off.str("user_id")
	scenario{method: "POST", path: "/v1/" + e.app.ID + "/users/" + offID + "/deactivate", headers: bearer(e.appSecret),
		wantStatus: 200, events: []string{"user.updated"}}.run(t, e)
	offBody, _ := newAuthenticator().create(t, off)
	scenario{method: "POST", path: e.authPath("/webauthn/register/finalize"), body: offBody, wantStatus: 400,
		wantCode: "webauthn_register_error"}.run(t, e)
	list := scenario{method: "GET", path: "/v1/" + e.app.ID + "/users/" + offID + "/devices", headers: bearer(e.appSecret), wantStatus: 200}.run(t, e)
	if devs := list.body["devices"].([]any); len(devs) != 0 {
		t.Errorf("a refused sign-up stored a passkey: %s", list.raw)
	}
	// A device-registration ceremony cannot be finished at the sign-up route.
	dev, _ := newAuthenticator().create(t, e.registerOptions(t, access))
	scenario{method: "POST", path: e.authPath("/webauthn/register/finalize"), body: dev, wantStatus: 400,
		wantCode: "webauthn_register_error"}.run(t, e)
}

func testPasskeySettings(t *testing.T, e *env) {
	path := "/v1/workspaces/" + e.ws.ID + "/apps/" + e.app.ID
	scenario{method: "PATCH", path: path, headers: bearer(e.wsSecret), body: map[string]any{"webauthn_rp_id": "other.example"},
		wantStatus: 400, wantCode: "invalid_request"}.run(t, e)
	scenario{method: "PATCH", path: path, headers: bearer(e.wsSecret), body: map[string]any{"webauthn_user_verification": "sometimes"},
		wantStatus: 400, wantCode: "invalid_request"}.run(t, e)
	scenario{method: "PATCH", path: path, headers: bearer(e.wsSecret),
		body:       map[string]any{"webauthn_rp_id": "example.com", "webauthn_user_verification": "preferred", "webauthn_attestation": "direct"},
		wantStatus: 200, check: func(t *testing.T, r response) {
			a := r.obj("app")
			if a == nil {
				a = r.body
			}
			if a["webauthn_rp_id"] != "example.com" || a["webauthn_user_verification"] != "preferred" || a["webauthn_attestation"] != "direct" {
				t.Errorf("app = %s", r.raw)
			}
		}}.run(t, e)
	_, access, _ := e.signIn(t, "pref@example.com", "user.created", "verification.email.requested", "challenge.created")
	r := scenario{method: "POST", path: e.authPath("/devices/register"), headers: user(access), wantStatus: 200,
		wantBody: map[string]any{"user_verification": "preferred"}}.run(t, e)
	o := r.obj("options")
	if rp := o["rp"].(map[string]any); rp["id"] != "example.com" || o["attestation"] != "direct" {
		t.Errorf("options with the new settings = %s", r.raw)
	}
	// With preferred verification, an authenticator without it registers
	// and signs in.
	a := newAuthenticator()
	a.RP.ID = "example.com"
	a.Auth.Options.UserNotVerified = true
	body, _ := a.create(t, r)
	scenario{method: "POST", path: e.authPath("/devices/finalize"), headers: user(access), body: body, wantStatus: 200,
		events: []string{"user.updated"}}.run(t, e)
	scenario{method: "POST", path: e.authPath("/webauthn/login/finalize"), body: a.get(t, e.loginOptions(t, "pref@example.com")),
		wantStatus: 200, events: []string{"challenge.completed"}}.run(t, e)

	// An app on an IP address cannot use passkeys, and says so.
	b := e.sibling(t, e.System, e.createAppAt(t, "IP app", "http://127.0.0.1:8080"))
	scenario{method: "POST", path: b.authPath("/webauthn/login/initialize"), body: map[string]any{}, wantStatus: 409,
		wantCode: "webauthn_unavailable"}.run(t, b)
}

// sibling is an env for app on sys (another app, or another replica),
// sharing e's workspace; it records no events.
func (e *env) sibling(t *testing.T, sys *servertest.System, app tenant.App) *env {
	t.Helper()
	return &env{System: sys, client: e.client, ws: e.ws, owner: e.owner, app: app, appSecret: e.appSecretFor(t, app.ID),
		wsSecret: e.wsSecret}
}

func (e *env) createAppAt(t *testing.T, name, origin string) tenant.App {
	t.Helper()
	return e.App(t, e.ws.ID, name, func(s *tenant.AppSettings) { s.Origin = &origin })
}

// testPasskeyReplicas: a ceremony begun on one replica is finished on
// another (the state is in the database), and spent for both.
func testPasskeyReplicas(t *testing.T, sys *servertest.System) {
	e := envOf(t, sys, "replicas")
	peer := e.sibling(t, newSystem(t, sys.DB.Kind(), servertest.Options{Peer: sys, Serve: true}), e.app)
	userID, access, _ := e.signIn(t, "twin@example.com")
	a := newAuthenticator()
	body, _ := a.create(t, e.registerOptions(t, access))
	scenario{method: "POST", path: peer.authPath("/devices/finalize"), headers: user(access), body: body, wantStatus: 200}.run(t, peer)
	assertion := a.get(t, peer.loginOptions(t, "twin@example.com"))
	r := scenario{method: "POST", path: e.authPath("/webauthn/login/finalize"), body: assertion, wantStatus: 200}.run(t, e)
	e.tokenSet(t, r, userID)
	scenario{method: "POST", path: peer.authPath("/webauthn/login/finalize"), body: assertion, wantStatus: 400,
		wantCode: "webauthn_verification_error"}.run(t, peer)
	if peer.URL == e.URL {
		t.Fatal("the peer serves on the same address")
	}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
