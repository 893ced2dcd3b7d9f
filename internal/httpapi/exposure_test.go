package httpapi_test

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
)

// TestExposure reproduces the red team's attacks on what the API lets out
// and lets in (issue 8, findings 2, 3 and 6) and shows each now fails:
// telling known from unknown identifiers by the sends' answers, reading
// contacts through the anonymous lookups, turning a stolen access token into
// a long session with rotate_access, and users writing metadata only the app
// may set.
func TestExposure(t *testing.T) {
	l := servertest.LooseLimits()
	forEach(t, servertest.Options{Serve: true, Limits: &l}, func(t *testing.T, sys *servertest.System) {
		for _, g := range []struct {
			name string
			fn   func(t *testing.T, e *env)
		}{
			{"sends", testSendsDoNotTellExistence},
			{"lookups", testLookupsShowOnlyWhatWasSupplied},
			{"rotate_access_stolen", testRotateAccessWithoutSecret},
			{"rotate_access_secret", testRotateAccessWithSecret},
			{"app_only_meta", testUsersCannotWriteAppOnlyMeta},
		} {
			t.Run(g.name, func(t *testing.T) { g.fn(t, envOf(t, sys, g.name)) })
		}
	})
}

// keys lists a JSON object's keys, sorted.
func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// testSendsDoNotTellExistence: the answers to otps/login and the magic-link
// sends have the same status, keys and user_meta_errors for a known
// identifier, a new one, and (sign-up closed) an unknown one. Before, a new
// user's user_meta_errors listed the dropped and missing keys and a known
// user's was null.
func testSendsDoNotTellExistence(t *testing.T, e *env) {
	// The app requires a field, so "is required" would have told new users apart.
	schema := appuser.Schema{
		{ID: "first_name", Name: "First name", FieldName: "first_name", FieldType: appuser.FieldString, VisibleRegistration: true, VisibleProfile: true},
		{ID: "company", Name: "Company", FieldName: "company", FieldType: appuser.FieldString, Required: true, VisibleRegistration: true},
		{ID: "age", Name: "Age", FieldName: "age", FieldType: appuser.FieldInteger},
	}
	open := e.App(t, e.ws.ID, "Open", func(s *tenant.AppSettings) { s.Origin, s.MetaSchema = ptr(appOrigin), &schema })
	closed := e.App(t, e.ws.ID, "Closed", func(s *tenant.AppSettings) {
		s.Origin, s.MetaSchema, s.PublicSignup = ptr(appOrigin), &schema, ptr(false)
	})
	for _, app := range []tenant.App{open, closed} {
		e.createUser(t, app.ID, e.appSecretFor(t, app.ID), map[string]any{"identifier": "known@example.com",
			"user_meta": map[string]any{"first_name": "Kim", "company": "K", "age": 40}})
	}
	metas := []struct {
		name string
		meta map[string]any
		want any // user_meta_errors
	}{
		{"no user_meta", nil, nil},
		{"only allowed keys", map[string]any{"first_name": "Eve"}, nil},
		{"undeclared, ill-typed and app-only keys", map[string]any{"first_name": 7, "age": 99, "shoe": 44},
			map[string]any{"first_name": "must be a string", "age": "may only be set by the app", "shoe": "is not a declared field"}},
	}
	n := 0
	for _, app := range []tenant.App{open, closed} {
		for _, route := range []string{"/otps/login", "/magic_links/login", "/magic_links/register"} {
			for _, m := range metas {
				var shapes [][]string
				for _, who := range []string{"known", "new"} {
					n++
					identifier := "known@example.com"
					if who == "new" {
						identifier = "new" + strconv.Itoa(n) + "@example.com"
					}
					body := map[string]any{"identifier": identifier}
					if m.meta != nil {
						body["user_meta"] = m.meta
					}
					r := scenario{method: "POST", path: "/v1/auth/" + app.ID + route, body: body, wantStatus: 200,
						wantBody: map[string]any{"user_meta_errors": m.want}}.run(t, e)
					shapes = append(shapes, keys(r.body))
				}
				if !slices.Equal(shapes[0], shapes[1]) {
					t.Errorf("%s %s (%s): keys %v for a known identifier, %v for a new one; want the same", app.Name, route, m.name, shapes[0], shapes[1])
				}
			}
		}
	}
	// A meta too large is refused alike, before anyone is looked up.
	big := map[string]any{}
	for i := range appuser.MaxMetaKeys + 1 {
		big["k"+strconv.Itoa(i)] = i
	}
	for _, identifier := range []string{"known@example.com", "toolarge@example.com"} {
		scenario{method: "POST", path: "/v1/auth/" + open.ID + "/otps/login", body: map[string]any{"identifier": identifier, "user_meta": big},
			wantStatus: 400}.run(t, e)
	}

	// A known user's metadata is left alone; a new one gets only what sign-up may set.
	users := scenario{method: "GET", path: "/v1/" + open.ID + "/users", headers: bearer(e.appSecretFor(t, open.ID)), wantStatus: 200}.run(t, e)
	list, _ := users.body["users"].([]any)
	for _, it := range list {
		u := it.(map[string]any)
		meta, _ := u["meta"].(map[string]any)
		switch {
		case u["email"] == "known@example.com":
			if !jsonEqual(meta, map[string]any{"first_name": "Kim", "company": "K", "age": 40}) {
				t.Errorf("known user's meta = %v; want it unchanged by the sends", meta)
			}
		case meta["age"] != nil || (meta["first_name"] != nil && meta["first_name"] != "Eve"):
			t.Errorf("new user %v meta = %v; want at most first_name Eve, never age", u["email"], meta)
		}
	}
}

// testLookupsShowOnlyWhatWasSupplied: an anonymous lookup by e-mail shows no
// phone (nor whether one is verified), by phone no e-mail, and by id only
// masked contacts. Before, all three returned both contacts in full. The
// app's backend, with its API secret, still sees them.
func testLookupsShowOnlyWhatWasSupplied(t *testing.T, e *env) {
	u := e.createUser(t, e.app.ID, e.appSecret, map[string]any{"email": "both@example.com", "phone": "+14155554567"})
	id := u["id"].(string)
	if _, err := e.DB.MarkUserVerified(context.Background(), e.app.ID, id, true, true, e.Clock.Now()); err != nil {
		t.Fatalf("MarkUserVerified: %v", err)
	}
	lookup := e.authPath("/users?")
	want := func(fields map[string]any) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			got := userOf(t, r)
			for k, v := range fields {
				if !jsonEqual(got[k], v) {
					t.Errorf("user[%q] = %v; want %v (user %v)", k, got[k], v, got)
				}
			}
		}
	}
	runScenarios(t, e, []scenario{
		{name: "by e-mail: nothing of the phone", method: "GET", path: lookup + "identifier=" + url.QueryEscape("Both@Example.com"),
			wantStatus: 200, check: want(map[string]any{"id": id, "email": "both@example.com", "email_verified": true,
				"phone": nil, "phone_verified": false, "status": "active", "webauthn_enabled": false, "required_fields": []any{}})},
		{name: "by phone: nothing of the e-mail", method: "GET", path: lookup + "identifier=" + url.QueryEscape("+1 415 555 4567"),
			wantStatus: 200, check: want(map[string]any{"id": id, "phone": "+14155554567", "phone_verified": true,
				"email": nil, "email_verified": false})},
		{name: "by id: contacts masked", method: "GET", path: lookup + "user_id=" + id, wantStatus: 200,
			check: want(map[string]any{"id": id, "email": "b•••@example.com", "phone": "•••• 4567", "email_verified": true,
				"phone_verified": true})},
		{name: "by id with the API secret: in full", method: "GET", path: lookup + "user_id=" + id, headers: bearer(e.appSecret),
			wantStatus: 200, check: want(map[string]any{"email": "both@example.com", "phone": "+14155554567"})},
		{name: "by e-mail with the API secret: in full", method: "GET", path: lookup + "identifier=both%40example.com",
			headers: bearer(e.appSecret), wantStatus: 200, check: want(map[string]any{"phone": "+14155554567", "phone_verified": true})},
		{name: "another app's secret is refused", method: "GET", path: lookup + "user_id=" + id,
			headers: bearer(e.appSecretFor(t, e.createApp(t, e.ws.ID, "Other", nil).ID)), wantStatus: 403},
	})
}

// TestAnonymousLookupsAreRateLimited: the identifier lookup, the user_id
// lookup and the metadata state share one budget per client IP, answered
// with 429 and Retry-After once spent. Before, the user_id lookup and
// metafields had no limit. The API secret is not limited.
func TestAnonymousLookupsAreRateLimited(t *testing.T) {
	l := servertest.LooseLimits()
	l.LookupPerIP = ratelimit.Rule{Limit: 4, Period: 10 * time.Minute}
	forEach(t, servertest.Options{Serve: true, Limits: &l}, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		id := e.createUser(t, e.app.ID, e.appSecret, map[string]any{"identifier": "rate@example.com"})["id"].(string)
		byID, byIdentifier, meta := e.authPath("/users?user_id="+id), e.authPath("/users?identifier=rate%40example.com"), e.authPath("/users/metafields?user_id="+id)
		limited := func(t *testing.T, r response) {
			if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
				t.Errorf("Retry-After = %q; want whole seconds", r.header.Get("Retry-After"))
			}
		}
		runScenarios(t, e, []scenario{
			{name: "by id", method: "GET", path: byID, wantStatus: 200},
			{name: "by identifier", method: "GET", path: byIdentifier, wantStatus: 200},
			{name: "metafields", method: "GET", path: meta, wantStatus: 200},
			{name: "by id again", method: "GET", path: byID, wantStatus: 200},
			{name: "by id over the budget", method: "GET", path: byID, wantStatus: 429, wantCode: "rate_limited", check: limited},
			{name: "by identifier over the budget", method: "GET", path: byIdentifier, wantStatus: 429, wantCode: "rate_limited", check: limited},
			{name: "metafields over the budget", method: "GET", path: meta, wantStatus: 429, wantCode: "rate_limited", check: limited},
			{name: "an unknown id counts too", method: "GET", path: e.authPath("/users?user_id=00000000-0000-7000-8000-000000000000"),
				wantStatus: 429},
			{name: "the app's backend is not limited", method: "GET", path: byID, headers: bearer(e.appSecret), wantStatus: 200},
		})
		e.Clock.Advance(10 * time.Minute)
		scenario{method: "GET", path: byID, wantStatus: 200}.run(t, e)
	})
}

// testRotateAccessWithoutSecret reproduces the attack: an access token alone,
// exchanged at rotate_access again and again, used to yield a fresh refresh
// token each time, a 30-day session on a branch reuse detection never saw.
// Now it yields no refresh token and never a later expiry; once the stolen
// token expires, the exchange is refused.
func testRotateAccessWithoutSecret(t *testing.T, e *env) {
	userID, access, refresh := e.signIn(t, "victim@example.com")
	rotate := e.authPath("/tokens/rotate_access")
	deadline := tokentest.Payload(t, access)["exp"].(float64)
	stolen := access
	for i := range 4 {
		e.Clock.Advance(2 * time.Minute)
		scenario{name: "exchange " + strconv.Itoa(i+1), method: "POST", path: rotate, headers: map[string]string{"X-Authorization": stolen},
			wantStatus: 200, check: func(t *testing.T, r response) {
				if _, ok := r.body["refresh"]; ok {
					t.Fatalf("rotate_access without the API secret = %s; want no refresh token", r.raw)
				}
				if _, ok := r.body["refresh_expires_at"]; ok {
					t.Errorf("rotate_access without the API secret has refresh_expires_at: %s", r.raw)
				}
				next := r.str("access")
				c := tokentest.Payload(t, next)
				if c["exp"].(float64) > deadline || c["uuid"] != userID || r.str("user_id") != userID {
					t.Fatalf("new access token exp %v, uuid %v; want no later than %v, %s", c["exp"], c["uuid"], deadline, userID)
				}
				e.remember(next)
				stolen = next
			}}.run(t, e)
	}
	runScenarios(t, e, []scenario{
		{name: "the owner's refresh token is untouched", method: "POST", path: e.authPath("/tokens/verify/refresh"),
			headers: bearer(refresh), wantStatus: 200},
		{name: "a garbage Authorization is refused, not ignored", method: "POST", path: rotate,
			headers: map[string]string{"X-Authorization": stolen, "Authorization": "Bearer garbage"}, wantStatus: 401},
		{name: "another app's secret is refused", method: "POST", path: rotate,
			headers:    map[string]string{"X-Authorization": stolen, "Authorization": "Bearer " + e.appSecretFor(t, e.createApp(t, e.ws.ID, "Other", nil).ID)},
			wantStatus: 403},
	})
	e.Clock.Advance(time.Unix(int64(deadline), 0).Add(31 * time.Second).Sub(e.Clock.Now())) // past the verifier's leeway
	runScenarios(t, e, []scenario{
		{name: "after the stolen token's expiry, no exchange", method: "POST", path: rotate,
			headers: map[string]string{"X-Authorization": stolen}, wantStatus: 401},
		{name: "nor does the exchanged token work", method: "GET", path: e.authPath("/current_user"), headers: user(stolen), wantStatus: 401},
	})
}

// testRotateAccessWithSecret: with the app's API secret, rotate_access
// refreshes the session's current refresh token: a full set whose refresh
// token replaces the previous one, which converges on it within the grace
// window and is reuse after it, revoking the session.
func testRotateAccessWithSecret(t *testing.T, e *env) {
	userID, access, refresh := e.signIn(t, "server@example.com")
	var next, nextAccess string
	e.Clock.Advance(time.Minute)
	runScenarios(t, e, []scenario{
		{name: "with the API secret: a full set", method: "POST", path: e.authPath("/tokens/rotate_access"),
			headers: map[string]string{"X-Authorization": access, "Authorization": "Bearer " + e.appSecret}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				nextAccess, next = e.tokenSet(t, r, userID)
				if next == refresh || r.str("refresh_expires_at") == "" {
					t.Errorf("rotate_access with the API secret = %s; want a new refresh token and its expiry", r.raw)
				}
			}},
	})
	runScenarios(t, e, []scenario{ // built after next is known
		{name: "the previous refresh token is spent", method: "POST", path: e.authPath("/tokens/verify/refresh"),
			headers: bearer(refresh), wantStatus: 401},
		{name: "the new one is live", method: "POST", path: e.authPath("/tokens/verify/refresh"), headers: bearer(next), wantStatus: 200},
		{name: "within the grace window the previous one gets the same successor", method: "POST", path: e.authPath("/tokens/refresh"),
			headers: map[string]string{"X-Refresh-Token": refresh}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if _, rf := e.tokenSet(t, r, userID); rf != next {
					t.Errorf("grace answer's refresh token differs from rotate_access's")
				}
			}},
	})
	e.Clock.Advance(e.Config.Tokens.RefreshGrace + time.Second)
	runScenarios(t, e, []scenario{
		{name: "after it, the previous one is reuse", method: "POST", path: e.authPath("/tokens/refresh"),
			headers: map[string]string{"X-Refresh-Token": refresh}, wantStatus: 401},
		{name: "which revoked the session: the new refresh token", method: "POST", path: e.authPath("/tokens/refresh"),
			headers: map[string]string{"X-Refresh-Token": next}, wantStatus: 401},
		{name: "and the new access token", method: "GET", path: e.authPath("/current_user"), headers: user(nextAccess), wantStatus: 401},
	})
}

// testUsersCannotWriteAppOnlyMeta reproduces the attack: a user set a field
// the app's users are not shown (age here, the app's alone) when signing up,
// accepting an invitation and through PATCH /current_user/meta. Now sign-up
// and acceptance drop it (and sign-up reports it), the PATCH is refused with
// 422 naming it, and with profile_management off users change nothing. The
// app's API secret still writes it.
func testUsersCannotWriteAppOnlyMeta(t *testing.T, e *env) {
	admin := func(id string) string { return "/v1/" + e.app.ID + "/users/" + id }
	meta := func(id string) map[string]any {
		r := scenario{method: "GET", path: admin(id), headers: bearer(e.appSecret), wantStatus: 200}.run(t, e)
		m, _ := userOf(t, r)["meta"].(map[string]any)
		return m
	}
	appOnly := map[string]any{"age": "may only be set by the app"}
	var codeUser, linkUser string
	runScenarios(t, e, []scenario{
		{name: "sign-up by code drops age", method: "POST", path: e.authPath("/otps/login"),
			body:       map[string]any{"identifier": "mallory@example.com", "user_meta": map[string]any{"first_name": "Mal", "age": 99}},
			wantStatus: 200, wantBody: map[string]any{"user_meta_errors": appOnly},
			check: func(t *testing.T, r response) { codeUser = r.str("user_id") }},
		{name: "sign-up by link drops age", method: "POST", path: e.authPath("/magic_links/register"),
			body:       map[string]any{"identifier": "trudy@example.com", "user_meta": map[string]any{"first_name": "Tru", "age": 99}},
			wantStatus: 200, wantBody: map[string]any{"user_meta_errors": appOnly},
			check: func(t *testing.T, r response) { linkUser = r.str("user_id") }},
	})
	for _, id := range []string{codeUser, linkUser} {
		if m := meta(id); m["age"] != nil || m["first_name"] == nil {
			t.Errorf("signed-up user's meta = %v; want first_name and no age", m)
		}
	}

	scenario{method: "POST", path: "/v1/" + e.app.ID + "/users/invite", headers: bearer(e.appSecret),
		body: map[string]any{"identifier": "guest@example.com"}, wantStatus: 200}.run(t, e)
	guest := scenario{method: "GET", path: e.authPath("/users?identifier=guest%40example.com"), headers: bearer(e.appSecret),
		wantStatus: 200}.run(t, e)
	guestID := userOf(t, guest)["id"].(string)
	scenario{method: "POST", path: e.authPath("/magic_links/confirm_invite"),
		body:       map[string]any{"token": e.magicToken(t, "guest@example.com"), "user_meta": map[string]any{"first_name": "Gus", "age": 99}},
		wantStatus: 200}.run(t, e)
	if m := meta(guestID); m["age"] != nil || m["first_name"] != "Gus" {
		t.Errorf("invitee's meta = %v; want first_name Gus and no age", m)
	}

	_, access, _ := e.signIn(t, "mallory@example.com")
	me := e.authPath("/current_user/meta")
	runScenarios(t, e, []scenario{
		{name: "PATCH age is refused", method: "PATCH", path: me, headers: user(access),
			body: map[string]any{"user_meta": map[string]any{"age": 120}}, wantStatus: 422, wantCode: "invalid_user_meta",
			wantBody: map[string]any{"user_meta_errors": appOnly}},
		{name: "so is clearing it", method: "PATCH", path: me, headers: user(access),
			body: map[string]any{"user_meta": map[string]any{"age": nil}}, wantStatus: 422, wantCode: "invalid_user_meta"},
		{name: "the app sets it", method: "PATCH", path: admin(codeUser), headers: bearer(e.appSecret),
			body: map[string]any{"user_meta": map[string]any{"age": 30}}, wantStatus: 200},
		{name: "the user changes a profile field", method: "PATCH", path: me, headers: user(access),
			body: map[string]any{"user_meta": map[string]any{"first_name": "Mallory"}}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if m := userOf(t, r)["meta"]; !jsonEqual(m, map[string]any{"first_name": "Mallory", "age": 30}) {
					t.Errorf("meta = %v; want first_name Mallory and the app's age 30", m)
				}
			}},
	})

	// Profile management off: users change nothing at all.
	off := false
	if _, err := e.Tenants.UpdateApp(context.Background(), servertest.Operator, e.ws.ID, e.app.ID, tenant.AppSettings{ProfileManagement: &off}); err != nil {
		t.Fatalf("UpdateApp(profile_management off): %v", err)
	}
	e.Clock.Advance(3 * time.Second) // past the app cache
	scenario{method: "PATCH", path: me, headers: user(access), body: map[string]any{"user_meta": map[string]any{"first_name": "M"}},
		wantStatus: 422, wantCode: "invalid_user_meta",
		wantBody: map[string]any{"user_meta_errors": map[string]any{"first_name": "may only be set by the app"}}}.run(t, e)
}
