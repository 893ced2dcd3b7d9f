package httpapi_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// The SMS fraud guards (security R-RL-3, checklist 54-56): every refusal
// happens before anything is stored or sent, so the courier sees no call
// and no event fires, apart from a cap's one alert per window.

// smsGuardSystem serves a system with the guards' documented defaults for
// the number waits, and caps given as settings.
func smsGuardSystem(t *testing.T, kind string, settings map[string]string) *env {
	t.Helper()
	s := map[string]string{"GATEHOUSE_SMS_PER_NUMBER_BURST": "3", "GATEHOUSE_SMS_PREFIX_HOURLY_CAP": "0"}
	for k, v := range settings {
		s[k] = v
	}
	return envOf(t, newSystem(t, kind, servertest.Options{Serve: true, Settings: s}), "Acme")
}

// newSMSUser: /otps/login for a number that has no account yet.
var newSMSUser = []string{"user.created", "verification.sms.requested", "challenge.created"}

// sentTo counts the messages the courier got for to.
func sentTo(e *env, to string) int {
	n := 0
	for _, m := range e.Mail.Messages() {
		if m.To == to {
			n++
		}
	}
	return n
}

func smsLogin(e *env, identifier string, status int, code string, events ...string) scenario {
	return scenario{name: identifier, method: "POST", path: e.authPath("/otps/login"), headers: browser,
		body: map[string]any{"identifier": identifier}, wantStatus: status, wantCode: code, events: events}
}

// TestSMSCountriesAndLineTypes: checklist 54 (a country the app does not
// allow), and line types by the phone-number metadata.
func TestSMSCountriesAndLineTypes(t *testing.T) {
	for _, kind := range storetest.Kinds(t) {
		t.Run(kind, func(t *testing.T) {
			e := smsGuardSystem(t, kind, nil)
			e.recordEvents(t)
			refused := []struct{ name, number, code string }{
				{"India is not in the default list", "+91 98123 45678", "phone_country_not_allowed"},
				{"Jamaica shares +1 but is not US", "+1 876 555 0100", "phone_country_not_allowed"},
				{"a non-geographic satellite number", "+881 612 345 678", "phone_country_not_allowed"},
				{"a UK landline", "+44 20 7946 0000", "phone_type_not_allowed"},
				{"a UK premium-rate number", "+44 909 879 0000", "phone_type_not_allowed"},
				{"a UK personal number", "+44 70 1234 5678", "phone_type_not_allowed"},
				{"a US toll-free number", "+1 800 555 0100", "phone_type_not_allowed"},
				{"a US premium-rate number", "+1 900 555 0100", "phone_type_not_allowed"},
				{"a French landline", "+33 1 23 45 67 89", "phone_type_not_allowed"},
			}
			before := len(e.Mail.Messages())
			for _, r := range refused {
				t.Run(r.name, func(t *testing.T) {
					s := smsLogin(e, r.number, 400, r.code)
					s.run(t, e)
					s.path = e.authPath("/magic_links/login")
					s.run(t, e)
					scenario{method: "POST", path: e.authPath("/challenges"), headers: browser, body: map[string]any{
						"purpose": "authenticate", "method": "sms_otp", "identifier": r.number}, wantStatus: 400, wantCode: r.code}.run(t, e)
				})
			}
			if n := len(e.Mail.Messages()) - before; n != 0 {
				t.Errorf("the courier got %d messages for refused numbers; want none", n)
			}
			if u, err := e.Users.Lookup(t.Context(), e.app, "+919812345678"); err != nil || u != nil {
				t.Errorf("Lookup(refused number) = %v, %v; want no user stored", u, err)
			}

			// Accepted: mobiles, and North American numbers (fixed or
			// mobile by their plan), the fictional 555-01xx ones included.
			for _, number := range []string{"+1 415 555 0163", "+1 202 555 0100", "+1 613 555 0123", "+44 7400 123456", "+49 151 23456789"} {
				smsLogin(e, number, 200, "", newSMSUser...).run(t, e)
			}
			if n := sentTo(e, "+14155550163"); n != 1 {
				t.Errorf("messages to +14155550163 = %d; want its code (a 555-01xx number is an ordinary one)", n)
			}

			// While the app sends through the server's provider, its own list
			// only narrows the server's: India stays closed, the US too.
			r := e.setApp(t, map[string]any{"sms_allowed_countries": []string{"in", "GB"}})
			if app := r.obj("app"); !jsonEqual(app["sms_allowed_countries"], []any{"GB"}) || app["sms_allowed_countries_default"] != false {
				t.Errorf("app after PATCH = %v; want sms_allowed_countries [GB] (its list within the server's), not the default", app)
			}
			smsLogin(e, "+91 98123 45678", 400, "phone_country_not_allowed").run(t, e)
			smsLogin(e, "+1 415 555 0165", 400, "phone_country_not_allowed").run(t, e)

			// With an SMS provider of its own the app opens a country of its
			// own: India goes, the default list no longer applies, and
			// ["default"] brings it back.
			scenario{method: "PATCH", path: "/v1/apps/" + e.app.ID + "/message_service_providers", headers: bearer(e.appSecret),
				body: map[string]any{"slug": "log", "enabled": true}, wantStatus: 200}.run(t, e)
			r = e.setApp(t, map[string]any{"sms_allowed_countries": []string{"in", "GB"}})
			if app := r.obj("app"); !jsonEqual(app["sms_allowed_countries"], []any{"IN", "GB"}) {
				t.Errorf("app with its own provider = %v; want sms_allowed_countries [IN GB]", app)
			}
			smsLogin(e, "+91 98123 45678", 200, "", newSMSUser...).run(t, e)
			smsLogin(e, "+1 415 555 0164", 400, "phone_country_not_allowed").run(t, e)
			r = e.setApp(t, map[string]any{"sms_allowed_countries": []string{"default"}})
			if app := r.obj("app"); app["sms_allowed_countries_default"] != true || !strings.Contains(string(r.raw), `"US","CA","GB"`) {
				t.Errorf("app after PATCH default = %s; want the server's list", r.raw)
			}
			smsLogin(e, "+91 98123 45679", 400, "phone_country_not_allowed").run(t, e)
			for _, bad := range [][]string{{"XX"}, {"USA"}, {"*", "US"}} {
				scenario{method: "PATCH", path: "/v1/apps/" + e.app.ID, headers: bearer(e.appSecret),
					body: map[string]any{"app": map[string]any{"sms_allowed_countries": bad}}, wantStatus: 400, wantCode: "invalid_request"}.run(t, e)
			}
			e.setApp(t, map[string]any{"sms_allowed_countries": []string{"*"}})
			smsLogin(e, "+91 98123 45679", 200, "", newSMSUser...).run(t, e)
			smsLogin(e, "+44 20 7946 0001", 400, "phone_type_not_allowed").run(t, e) // every country, still mobiles only

			// E-mail is untouched by any of it.
			for i := range 5 {
				events := []string{"verification.email.requested", "challenge.created"}
				if i == 0 {
					events = append(events, "user.created")
				}
				scenario{method: "POST", path: e.authPath("/otps/login"), headers: browser, body: map[string]any{"identifier": "mail@example.com"},
					wantStatus: 200, events: events}.run(t, e)
			}
		})
	}
}

// TestSMSNumberWaits: checklist 55. Three SMS to one number in 10 minutes,
// then the 4th is refused with 429 and Retry-After; the waits then double
// up to 32 minutes, and start over after an hour's quiet. A test identity
// of an app that accepts them is exempt (nothing is sent to it anyway).
func TestSMSNumberWaits(t *testing.T) {
	for _, kind := range storetest.Kinds(t) {
		t.Run(kind, func(t *testing.T) {
			e := smsGuardSystem(t, kind, nil)
			const number = "+14155552671"
			login := func(t *testing.T, status int) response {
				t.Helper()
				code := ""
				if status == 429 {
					code = "rate_limited"
				}
				return smsLogin(e, number, status, code).run(t, e)
			}
			for range 3 {
				login(t, 200)
				e.Clock.Advance(time.Minute)
			}
			before := sentTo(e, number)
			r := login(t, 429) // 3 minutes after the first: 7 minutes of the window left
			if got := r.header.Get("Retry-After"); got != "420" {
				t.Errorf("Retry-After of the 4th SMS = %q; want 420 (the window's rest)", got)
			}
			if sentTo(e, number) != before {
				t.Errorf("the refused 4th SMS reached the courier")
			}
			e.Clock.Advance(7 * time.Minute)
			login(t, 200)
			// Each wait doubles, less up to a tenth of jitter, up to 32 minutes.
			for _, want := range []int{1, 2, 4, 8, 16, 32, 32} {
				r := login(t, 429)
				secs, err := strconv.Atoi(r.header.Get("Retry-After"))
				if err != nil || secs > want*60 || secs < want*60*9/10 {
					t.Fatalf("Retry-After = %q; want a wait of %d minutes less at most a tenth", r.header.Get("Retry-After"), want)
				}
				e.Clock.Advance(time.Duration(secs) * time.Second)
				login(t, 200)
			}
			// An hour without an SMS: a fresh burst of three.
			e.Clock.Advance(time.Hour)
			for range 3 {
				login(t, 200)
			}
			login(t, 429)

			// The waits count every path to the number: a verify_contact
			// challenge's code and its resends.
			e.Clock.Advance(2 * time.Hour)
			uid := e.newMember(t, "wait@example.com", "+1 312 555 0142")
			tok, _ := e.startChallenge(t, bearer(e.appSecret), map[string]any{"purpose": "verify_contact", "method": "sms_otp", "app_user_id": uid},
				"verification.sms.requested", "challenge.created")
			for _, status := range []int{200, 200, 429} {
				scenario{method: "POST", path: e.chPath(tok, "/resend"), headers: browser, wantStatus: status}.run(t, e)
			}

			// Test identities of an app that accepts them are exempt.
			e.setApp(t, map[string]any{"test_identities": true})
			for range 5 {
				smsLogin(e, "+1 415 555 0123", 200, "").run(t, e)
			}
			if n := sentTo(e, "+14155550123"); n != 0 {
				t.Errorf("messages to the test identity = %d; want none", n)
			}
		})
	}
}

// TestSMSCaps: checklist 56. Past the prefix's hourly cap, and past the
// app's daily cap, sends are refused (429) without a provider call; the
// first refusal of each window logs a warning and emits
// verification.sms.delivery_failed, the later ones do not.
func TestSMSCaps(t *testing.T) {
	for _, kind := range storetest.Kinds(t) {
		t.Run(kind, func(t *testing.T) {
			e := smsGuardSystem(t, kind, map[string]string{"GATEHOUSE_SMS_PREFIX_HOURLY_CAP": "3"})
			e.recordEvents(t)
			alert := []string{"verification.sms.delivery_failed"}
			for _, n := range []string{"+1 415 555 2671", "+1 415 555 2672", "+1 415 555 2673"} {
				smsLogin(e, n, 200, "", newSMSUser...).run(t, e)
			}
			before := len(e.Mail.Messages())
			r := smsLogin(e, "+1 415 555 2674", 429, "sms_prefix_cap_reached", alert...).run(t, e)
			if secs, _ := strconv.Atoi(r.header.Get("Retry-After")); secs < 1 || secs > 3600 {
				t.Errorf("Retry-After = %q; want the rest of the hour", r.header.Get("Retry-After"))
			}
			smsLogin(e, "+1 415 555 2675", 429, "sms_prefix_cap_reached").run(t, e) // no second alert
			scenario{method: "POST", path: e.authPath("/magic_links/login"), headers: browser, body: map[string]any{"identifier": "+1 415 555 2676"},
				wantStatus: 429, wantCode: "sms_prefix_cap_reached"}.run(t, e)
			if n := len(e.Mail.Messages()) - before; n != 0 {
				t.Errorf("the courier got %d messages past the cap; want none", n)
			}
			if lines := e.Logs.Lines("sms cap reached", `"cap":"prefix_cap"`, e.app.ID, `"prefix":"+1415555****"`); len(lines) != 1 {
				t.Errorf("alert log lines = %q; want one, with the app and the masked prefix", lines)
			}
			if strings.Contains(e.Logs.String(), "4155552674") {
				t.Errorf("a log line holds the whole number")
			}
			smsLogin(e, "+1 212 555 0187", 200, "", newSMSUser...).run(t, e) // another prefix

			// The app's own daily cap: 4 sent today, the 5th goes, the 6th not.
			r = e.setApp(t, map[string]any{"sms_daily_cap": 5})
			if app := r.obj("app"); app["sms_daily_cap"] != 5.0 || app["sms_daily_cap_default"] != false {
				t.Errorf("app after PATCH = %v; want sms_daily_cap 5, its own", app)
			}
			smsLogin(e, "+1 312 555 0142", 200, "", newSMSUser...).run(t, e)
			smsLogin(e, "+1 646 555 0111", 429, "sms_daily_cap_reached", alert...).run(t, e)
			smsLogin(e, "+1 646 555 0112", 429, "sms_daily_cap_reached").run(t, e)
			if lines := e.Logs.Lines("sms cap reached", `"cap":"daily_cap"`, `"limit":5`); len(lines) != 1 {
				t.Errorf("daily alert log lines = %q; want one", lines)
			}
			scenario{method: "POST", path: e.authPath("/otps/login"), headers: browser, body: map[string]any{"identifier": "capped@example.com"},
				wantStatus: 200, events: []string{"user.created", "verification.email.requested", "challenge.created"}}.run(t, e)

			// A new UTC day (and hour): both caps start over.
			now := e.Clock.Now().UTC()
			e.Clock.Advance(time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 1, 0, time.UTC).Sub(now))
			// The day's challenges are now expired: sweep them here, so that
			// the periodic sweep cannot emit their events inside a scenario.
			if err := e.SignIn.ExpireChallenges(t.Context()); err != nil {
				t.Fatalf("ExpireChallenges: %v", err)
			}
			smsLogin(e, "+1 646 555 0113", 200, "", newSMSUser...).run(t, e)
			smsLogin(e, "+1 415 555 2677", 200, "", newSMSUser...).run(t, e)
			r = e.setApp(t, map[string]any{"sms_daily_cap": 0})
			if app := r.obj("app"); app["sms_daily_cap"] != 1000.0 || app["sms_daily_cap_default"] != true {
				t.Errorf("app after PATCH 0 = %v; want the server's 1000", app)
			}
		})
	}
}

// TestSMSInvitationGuarded: an invitation by SMS asks the guard too; a
// refused one stores no user.
func TestSMSInvitationGuarded(t *testing.T) {
	for _, kind := range storetest.Kinds(t) {
		t.Run(kind, func(t *testing.T) {
			e := smsGuardSystem(t, kind, nil)
			invite := "/v1/" + e.app.ID + "/users/invite"
			scenario{method: "POST", path: invite, headers: bearer(e.appSecret), body: map[string]any{"identifier": "+44 20 7946 0000"},
				wantStatus: 400, wantCode: "phone_type_not_allowed"}.run(t, e)
			if u, err := e.Users.Lookup(t.Context(), e.app, "+442079460000"); err != nil || u != nil {
				t.Errorf("Lookup(refused invitee) = %v, %v; want no user stored", u, err)
			}
			scenario{method: "POST", path: invite, headers: bearer(e.appSecret), body: map[string]any{"identifier": "+44 7400 123456"},
				wantStatus: 200}.run(t, e)
			if n := sentTo(e, "+447400123456"); n != 1 {
				t.Errorf("invitations by SMS = %d; want 1", n)
			}
		})
	}
}
