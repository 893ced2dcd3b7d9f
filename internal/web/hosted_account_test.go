package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/pquerna/otp/totp"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/passkey/passkeytest"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// The account page's changes (issue 27 item 2): each through the API's
// domain function with the hosted session's caller, refused without the
// account page's CSRF token, for another user's objects (404), and, where
// the API asks for a recent sign-in, until the user confirms it is them.

// accountApp is hostedApp with second factors (optional, with TOTP, backup
// codes and passkeys), a 5-minute window for changes that need a recent
// sign-in, and bob@shop.example too.
func accountApp(t *testing.T, sys *servertest.System, mod func(*tenant.AppSettings)) (tenant.App, string) {
	t.Helper()
	app, email := hostedApp(t, sys, func(s *tenant.AppSettings) {
		policy, methods, minutes := "optional", []string{"totp", "backup_code", "webauthn"}, 5
		s.MFAPolicy, s.MFAMethodsAllowed, s.MFAReverifyMinutes = &policy, &methods, &minutes
		if mod != nil {
			mod(s)
		}
	})
	if _, _, err := sys.Users.Create(context.Background(), access.Operator(), app, appuser.CreateInput{Identifier: "bob@shop.example"}); err != nil {
		t.Fatal(err)
	}
	return app, email
}

// onAccount signs a new browser in as email, back to the account page, and
// returns it with the page.
func onAccount(t *testing.T, sys *servertest.System, app tenant.App, email string) (*visitor, answer) {
	t.Helper()
	v := newVisitor(t, sys)
	if a := v.signIn(app.ID, "?return=%2Faccount%2F"+app.ID, email); a.header.Get("Location") != "/account/"+app.ID {
		t.Fatalf("sign-in: %q", a.header.Get("Location"))
	}
	return v, v.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
}

// post sends an account form with the page's CSRF token.
func (v *visitor) post(app tenant.App, path, csrf string, form url.Values, want int) answer {
	v.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", csrf)
	return v.expect("POST", "/account/"+app.ID+path, form, want)
}

// refusedWithoutCSRF checks a form is refused (403) without the token and
// with another session's.
func (v *visitor) refusedWithoutCSRF(app tenant.App, path string, form url.Values, other string) {
	v.t.Helper()
	for _, csrf := range []string{"", other} {
		f := url.Values{}
		for k, vs := range form {
			f[k] = vs
		}
		if csrf != "" {
			f.Set("csrf", csrf)
		}
		if a := v.do("POST", "/account/"+app.ID+path, f, nil); a.status != http.StatusForbidden || !strings.Contains(a.body, "CSRF") {
			v.t.Fatalf("POST %s with csrf %q: %d, want 403\n%s", path, csrf, a.status, a.body)
		}
	}
}

// codeTo is the code of the newest message to to among those after the
// first skip (security notices carry no code).
func codeTo(t *testing.T, sys *servertest.System, to string, skip int) string {
	t.Helper()
	msgs := sys.Mail.Messages()
	for i := len(msgs) - 1; i >= skip; i-- {
		if msgs[i].To != to {
			continue
		}
		if msgs[i].Code != "" {
			return msgs[i].Code
		}
		if c := regexp.MustCompile(`\b\d{6}\b`).FindString(msgs[i].Text); c != "" {
			return c
		}
	}
	t.Fatalf("no code to %s", to)
	return ""
}

// stepUp confirms it is the user by method, answered by answer (given the
// step-up page); it ends on the account page's notice.
func (v *visitor) stepUp(app tenant.App, csrf, method string, answer func(page answer) url.Values) {
	v.t.Helper()
	page := v.post(app, "/stepup", csrf, url.Values{"method": {method}}, http.StatusOK)
	m := regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(page.body)
	if m == nil {
		v.t.Fatalf("step-up page without a challenge:\n%s", page.body)
	}
	form := answer(page)
	form.Set("challenge", m[1])
	if a := v.post(app, "/stepup/verify", csrf, form, http.StatusSeeOther); a.header.Get("Location") != "/account/"+app.ID+"?notice=confirmed" {
		v.t.Fatalf("step-up: %q", a.header.Get("Location"))
	}
}

// stepUpByEmail confirms by a code sent to the user's e-mail address.
func (v *visitor) stepUpByEmail(app tenant.App, csrf, email string) {
	v.t.Helper()
	sent := len(v.sys.Mail.Messages())
	v.stepUp(app, csrf, "email_otp", func(answer) url.Values {
		return url.Values{"code": {codeTo(v.t, v.sys, email, sent)}}
	})
}

// ownRemovalPage checks the answer to removing a factor that made the
// sign-in recent itself: 403, saying why (not "sign in in the last N
// minutes": it is recent), and offering every way but that factor's kind
// (confirming by it again would loop).
func ownRemovalPage(t *testing.T, what string, a answer, method string) {
	t.Helper()
	if a.status != http.StatusForbidden || !strings.Contains(a.body, "cannot confirm its own removal") || strings.Contains(a.body, "needs a sign-in in the last") ||
		strings.Contains(a.body, `name="method" value="`+method+`"`) || !strings.Contains(a.body, `name="method" value="email_otp"`) {
		t.Fatalf("%s: %d, want the step-up page without %s\n%s", what, a.status, method, a.body)
	}
}

// isStepUpPage checks a refused change's answer: 403, asking to confirm
// with a way to sign in again.
func isStepUpPage(t *testing.T, what string, a answer, app tenant.App) {
	t.Helper()
	if a.status != http.StatusForbidden || !strings.Contains(a.body, "Confirm it&#39;s you") || !strings.Contains(a.body, "needs a sign-in in the last 5 minutes") ||
		!strings.Contains(a.body, `href="/login/`+app.ID+`?return=%2Faccount%2F`+app.ID+`"`) || !strings.Contains(a.body, `role="alert"`) {
		t.Fatalf("%s: %d, want the step-up page\n%s", what, a.status, a.body)
	}
}

func userOf(t *testing.T, sys *servertest.System, app tenant.App, email string) appuser.User {
	t.Helper()
	u, err := sys.Users.Lookup(context.Background(), app, email)
	if err != nil || u == nil {
		t.Fatalf("lookup %s: %v", email, err)
	}
	return *u
}

var pendingStep = 31 * time.Second // past a TOTP step

func TestHostedAccountProfile(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := accountApp(t, sys, func(s *tenant.AppSettings) {
			on := true
			schema := appuser.Schema{
				{ID: "1", Name: "Nickname", FieldName: "nickname", FieldType: appuser.FieldString, VisibleProfile: true},
				{ID: "2", Name: "Newsletter", FieldName: "newsletter", FieldType: appuser.FieldBoolean, VisibleProfile: true},
				{ID: "3", Name: "Age", FieldName: "age", FieldType: appuser.FieldInteger, VisibleProfile: true},
				{ID: "4", Name: "Plan", FieldName: "plan", FieldType: appuser.FieldString},
			}
			s.ProfileManagement, s.MetaSchema = &on, &schema
		})
		v, page := onAccount(t, sys, app, email)
		checkHostedHeaders(t, "account", page, "https://shop.example https://www.shop.example")
		if !strings.Contains(page.body, `name="meta.nickname"`) || !strings.Contains(page.body, `name="meta.newsletter"`) || strings.Contains(page.body, "meta.plan") {
			t.Fatalf("profile form (nickname, newsletter and age; not plan):\n%s", page.body)
		}
		csrf := csrfOf(t, page)
		w, _ := onAccount(t, sys, app, email) // another hosted session of the same user
		otherCSRF := csrfOf(t, w.expect("GET", "/account/"+app.ID, nil, http.StatusOK))

		form := url.Values{"meta.nickname": {"Ali"}, "meta.newsletter.shown": {"1"}, "meta.newsletter": {"1"}, "meta.age": {"thirty"}, "meta.plan": {"gold"}}
		v.refusedWithoutCSRF(app, "/profile", form, otherCSRF)
		// The schema's validation, by the field.
		a := v.post(app, "/profile", csrf, form, http.StatusUnprocessableEntity)
		if !strings.Contains(a.body, "Age must be an integer") || !strings.Contains(a.body, `value="Ali"`) {
			t.Fatalf("refused profile:\n%s", a.body)
		}
		if u := userOf(t, sys, app, email); len(u.Meta) != 0 {
			t.Fatalf("a refused form saved %v", u.Meta)
		}
		form.Set("meta.age", "30")
		if a := v.post(app, "/profile", csrf, form, http.StatusSeeOther); a.header.Get("Location") != "/account/"+app.ID+"?notice=profile" {
			t.Fatalf("save: %q", a.header.Get("Location"))
		}
		u := userOf(t, sys, app, email)
		if u.Meta["nickname"] != "Ali" || u.Meta["newsletter"] != true || u.Meta["age"] != float64(30) || u.Meta["plan"] != nil {
			t.Fatalf("meta after saving: %v", u.Meta)
		}
		page = v.expect("GET", "/account/"+app.ID+"?notice=profile", nil, http.StatusOK)
		if !strings.Contains(page.body, "Profile saved") || !strings.Contains(page.body, `value="Ali"`) || !strings.Contains(page.body, "checked") {
			t.Fatalf("after saving:\n%s", page.body)
		}
		// Unticked and emptied: removed.
		v.post(app, "/profile", csrf, url.Values{"meta.nickname": {""}, "meta.newsletter.shown": {"1"}, "meta.age": {"30"}}, http.StatusSeeOther)
		if u := userOf(t, sys, app, email); u.Meta["nickname"] != nil || u.Meta["newsletter"] != false {
			t.Fatalf("meta after clearing: %v", u.Meta)
		}

		// An app that lets users edit nothing shows no form and takes none.
		ws, _ := sys.Workspace(t, "Other")
		plain := sys.App(t, ws.ID, "Plain", func(s *tenant.AppSettings) {
			ids, on, otp := []string{"email"}, true, "otp"
			schema := appuser.Schema{{ID: "1", Name: "Plan", FieldName: "plan", FieldType: appuser.FieldString}}
			s.AllowedIdentifiers, s.RequiredIdentifiers, s.ProfileManagement, s.MetaSchema, s.EmailAuthType = &ids, &ids, &on, &schema, &otp
		})
		if _, _, err := sys.Users.Create(context.Background(), access.Operator(), plain, appuser.CreateInput{Identifier: email}); err != nil {
			t.Fatal(err)
		}
		x, page := onAccount(t, sys, plain, email)
		if strings.Contains(page.body, "/profile") {
			t.Fatalf("profile form of an app without profile fields:\n%s", page.body)
		}
		x.post(plain, "/profile", csrfOf(t, page), url.Values{"meta.nickname": {"x"}}, http.StatusForbidden)
	})
}

func TestHostedAccountTOTPAndBackupCodes(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := accountApp(t, sys, nil)
		v, page := onAccount(t, sys, app, email)
		csrf := csrfOf(t, page)
		b, _ := onAccount(t, sys, app, "bob@shop.example")
		bobCSRF := csrfOf(t, b.expect("GET", "/account/"+app.ID, nil, http.StatusOK))

		// Set up, just signed in: the secret on this answer only.
		v.refusedWithoutCSRF(app, "/totp", url.Values{"name": {"Phone"}}, bobCSRF)
		a := v.post(app, "/totp", csrf, url.Values{"name": {"Phone"}}, http.StatusOK)
		checkHostedHeaders(t, "totp", a, "https://shop.example https://www.shop.example")
		secret := regexp.MustCompile(`<code id="totp-secret">([A-Z2-7]+)</code>`).FindStringSubmatch(a.body)
		enrol := regexp.MustCompile(`name="enrollment_id" value="([^"]+)"`).FindStringSubmatch(a.body)
		if secret == nil || enrol == nil || !strings.Contains(a.body, `src="data:image/png;base64,`) {
			t.Fatalf("TOTP setup page:\n%s", a.body)
		}
		// A wrong code: asked again, without the secret.
		a = v.post(app, "/totp/confirm", csrf, url.Values{"enrollment_id": {enrol[1]}, "code": {"000000"}}, http.StatusUnprocessableEntity)
		if strings.Contains(a.body, secret[1]) || !strings.Contains(a.body, `role="alert"`) {
			t.Fatalf("wrong code page:\n%s", a.body)
		}
		// Bob cannot confirm Alice's.
		code, _ := totp.GenerateCode(secret[1], sys.Clock.Now())
		b.post(app, "/totp/confirm", bobCSRF, url.Values{"enrollment_id": {enrol[1]}, "code": {code}}, http.StatusNotFound)
		if a := v.post(app, "/totp/confirm", csrf, url.Values{"enrollment_id": {enrol[1]}, "code": {code}}, http.StatusSeeOther); a.header.Get("Location") != "/account/"+app.ID+"?notice=totp-added" {
			t.Fatalf("confirm: %q", a.header.Get("Location"))
		}
		page = v.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		totpID := regexp.MustCompile(`/totp/([0-9a-f-]+)/delete`).FindStringSubmatch(page.body)
		if totpID == nil || !strings.Contains(page.body, "Phone") || strings.Contains(page.body, secret[1]) {
			t.Fatalf("account page after adding (the app, never the secret):\n%s", page.body)
		}

		// Backup codes: shown once.
		v.refusedWithoutCSRF(app, "/backup-codes", nil, bobCSRF)
		a = v.post(app, "/backup-codes", csrf, nil, http.StatusOK)
		codes := regexp.MustCompile(`<code>([A-Z0-9]{5}-[A-Z0-9]{5})</code>`).FindAllStringSubmatch(a.body, -1)
		if len(codes) != 10 {
			t.Fatalf("backup codes page:\n%s", a.body)
		}
		page = v.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		if strings.Contains(page.body, codes[0][1]) || !strings.Contains(page.body, "You have 10 unused backup codes") {
			t.Fatalf("account page after backup codes:\n%s", page.body)
		}

		// Later, the same changes need a recent sign-in: refused, and
		// nothing changes.
		sys.Clock.Advance(10 * time.Minute)
		isStepUpPage(t, "backup codes", v.post(app, "/backup-codes", csrf, nil, http.StatusForbidden), app)
		isStepUpPage(t, "set up TOTP", v.post(app, "/totp", csrf, nil, http.StatusForbidden), app)
		isStepUpPage(t, "remove TOTP", v.post(app, "/totp/"+totpID[1]+"/delete", csrf, nil, http.StatusForbidden), app)
		if page := v.expect("GET", "/account/"+app.ID, nil, http.StatusOK); !strings.Contains(page.body, "You have 10 unused backup codes") || !strings.Contains(page.body, totpID[1]) {
			t.Fatalf("a refused change changed something:\n%s", page.body)
		}
		// Bob's page has no such authenticator app.
		b.post(app, "/totp/"+totpID[1]+"/delete", bobCSRF, nil, http.StatusNotFound)

		// The step-up page lists the user's ways; GET starts nothing.
		sent := len(sys.Mail.Messages())
		su := v.expect("GET", "/account/"+app.ID+"/stepup", nil, http.StatusOK)
		for _, m := range []string{`value="totp"`, `value="email_otp"`, `value="backup_code"`} {
			if !strings.Contains(su.body, m) {
				t.Fatalf("step-up page without %s:\n%s", m, su.body)
			}
		}
		if len(sys.Mail.Messages()) != sent {
			t.Fatal("GET /stepup sent a message")
		}

		// A wrong TOTP does not confirm.
		p := v.post(app, "/stepup", csrf, url.Values{"method": {"totp"}}, http.StatusOK)
		ch := regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(p.body)
		if ch == nil {
			t.Fatalf("TOTP step-up page:\n%s", p.body)
		}
		v.post(app, "/stepup/verify", csrf, url.Values{"challenge": {ch[1]}, "code": {"000000"}}, http.StatusUnprocessableEntity)
		// Another session cannot use this one's challenge.
		b.post(app, "/stepup/verify", bobCSRF, url.Values{"challenge": {ch[1]}, "code": {"000000"}}, http.StatusBadRequest)
		sys.Clock.Advance(pendingStep)
		v.stepUp(app, csrf, "totp", func(answer) url.Values {
			c, _ := totp.GenerateCode(secret[1], sys.Clock.Now())
			return url.Values{"code": {c}}
		})
		if !strings.Contains(v.expect("GET", "/account/"+app.ID+"?notice=confirmed", nil, http.StatusOK).body, "that is confirmed") {
			t.Fatal("no notice after the step-up")
		}
		// Confirmed by this authenticator app: new codes, yes; removing the
		// app itself, no (security R-MFA-2).
		if a := v.post(app, "/backup-codes", csrf, nil, http.StatusOK); len(regexp.MustCompile(`<code>[A-Z0-9]{5}-[A-Z0-9]{5}</code>`).FindAllString(a.body, -1)) != 10 {
			t.Fatalf("backup codes after the step-up:\n%s", a.body)
		}
		ownRemovalPage(t, "remove TOTP confirmed by itself", v.post(app, "/totp/"+totpID[1]+"/delete", csrf, nil, http.StatusForbidden), "totp")
		// Confirmed by a backup code, it goes.
		sys.Clock.Advance(10 * time.Minute)
		a = v.post(app, "/backup-codes", csrf, nil, http.StatusForbidden)
		v.stepUpByEmail(app, csrf, email)
		codes = regexp.MustCompile(`<code>([A-Z0-9]{5}-[A-Z0-9]{5})</code>`).FindAllStringSubmatch(v.post(app, "/backup-codes", csrf, nil, http.StatusOK).body, -1)
		sys.Clock.Advance(10 * time.Minute)
		v.stepUp(app, csrf, "backup_code", func(answer) url.Values { return url.Values{"code": {codes[3][1]}} })
		v.refusedWithoutCSRF(app, "/totp/"+totpID[1]+"/delete", nil, bobCSRF)
		if a := v.post(app, "/totp/"+totpID[1]+"/delete", csrf, nil, http.StatusSeeOther); a.header.Get("Location") != "/account/"+app.ID+"?notice=totp-removed" {
			t.Fatalf("remove: %q", a.header.Get("Location"))
		}
		if page := v.expect("GET", "/account/"+app.ID, nil, http.StatusOK); strings.Contains(page.body, totpID[1]) {
			t.Fatalf("removed TOTP still listed:\n%s", page.body)
		}
	})
}

// passkeyOptions reads the ceremony options a page put on its form.
func passkeyOptions(t *testing.T, a answer) string {
	t.Helper()
	m := regexp.MustCompile(`data-options="([^"]+)"`).FindStringSubmatch(a.body)
	if m == nil {
		t.Fatalf("no passkey options:\n%s", a.body)
	}
	return html.UnescapeString(m[1])
}

// addPasskey adds a passkey through the page and returns its id.
func (v *visitor) addPasskey(app tenant.App, csrf string, auth *passkeytest.Authenticator) string {
	v.t.Helper()
	before := regexp.MustCompile(`/passkeys/([0-9a-f-]+)/delete`).FindAllStringSubmatch(v.expect("GET", "/account/"+app.ID, nil, http.StatusOK).body, -1)
	page := v.post(app, "/passkeys/begin", csrf, nil, http.StatusOK)
	checkHostedHeaders(v.t, "add a passkey", page, "https://shop.example https://www.shop.example")
	if !strings.Contains(page.body, `src="/console/static/hosted_account.js?v=`) {
		v.t.Fatalf("passkey page without its script:\n%s", page.body)
	}
	body, _, err := auth.Create(passkeyOptions(v.t, page))
	if err != nil {
		v.t.Fatal(err)
	}
	if a := v.post(app, "/passkeys/finish", csrf, url.Values{"credential": {body}}, http.StatusSeeOther); a.header.Get("Location") != "/account/"+app.ID+"?notice=passkey-added" {
		v.t.Fatalf("finish: %q", a.header.Get("Location"))
	}
	after := regexp.MustCompile(`/passkeys/([0-9a-f-]+)/delete`).FindAllStringSubmatch(v.expect("GET", "/account/"+app.ID, nil, http.StatusOK).body, -1)
	if len(after) != len(before)+1 {
		v.t.Fatalf("passkeys before %d, after %d", len(before), len(after))
	}
	return after[len(after)-1][1]
}

func TestHostedAccountPasskeys(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := accountApp(t, sys, nil)
		v, page := onAccount(t, sys, app, email)
		csrf := csrfOf(t, page)
		b, bobPage := onAccount(t, sys, app, "bob@shop.example")
		bobCSRF := csrfOf(t, bobPage)
		auth := passkeytest.New("shop.example", "https://shop.example")

		v.refusedWithoutCSRF(app, "/passkeys/begin", nil, bobCSRF)
		id := v.addPasskey(app, csrf, auth)
		bobsID := b.addPasskey(app, bobCSRF, passkeytest.New("shop.example", "https://shop.example"))
		// A finish without CSRF stores nothing.
		v.refusedWithoutCSRF(app, "/passkeys/finish", url.Values{"credential": {"{}"}}, bobCSRF)

		// Rename.
		v.refusedWithoutCSRF(app, "/passkeys/"+id+"/rename", url.Values{"name": {"Laptop"}}, bobCSRF)
		if a := v.post(app, "/passkeys/"+id+"/rename", csrf, url.Values{"name": {"Laptop"}}, http.StatusSeeOther); a.header.Get("Location") != "/account/"+app.ID+"?notice=passkey-renamed" {
			t.Fatalf("rename: %q", a.header.Get("Location"))
		}
		if !strings.Contains(v.expect("GET", "/account/"+app.ID, nil, http.StatusOK).body, `value="Laptop"`) {
			t.Fatal("not renamed")
		}
		v.post(app, "/passkeys/"+id+"/rename", csrf, url.Values{"name": {""}}, http.StatusBadRequest)
		// Bob's passkey is none of Alice's.
		v.post(app, "/passkeys/"+bobsID+"/rename", csrf, url.Values{"name": {"Mine"}}, http.StatusNotFound)
		v.post(app, "/passkeys/"+bobsID+"/delete", csrf, nil, http.StatusNotFound)

		// Later: removing or adding one needs a recent sign-in.
		sys.Clock.Advance(10 * time.Minute)
		isStepUpPage(t, "remove passkey", v.post(app, "/passkeys/"+id+"/delete", csrf, nil, http.StatusForbidden), app)
		isStepUpPage(t, "add passkey", v.post(app, "/passkeys/begin", csrf, nil, http.StatusForbidden), app)
		// Confirmed by this passkey: it cannot vouch for its own removal.
		v.stepUp(app, csrf, "webauthn", func(page answer) url.Values {
			cred, err := auth.Get(passkeyOptions(t, page))
			if err != nil {
				t.Fatal(err)
			}
			return url.Values{"credential": {cred}}
		})
		ownRemovalPage(t, "remove passkey confirmed by itself", v.post(app, "/passkeys/"+id+"/delete", csrf, nil, http.StatusForbidden), "webauthn")
		v.stepUpByEmail(app, csrf, email)
		v.refusedWithoutCSRF(app, "/passkeys/"+id+"/delete", nil, bobCSRF)
		if a := v.post(app, "/passkeys/"+id+"/delete", csrf, nil, http.StatusSeeOther); a.header.Get("Location") != "/account/"+app.ID+"?notice=passkey-removed" {
			t.Fatalf("remove: %q", a.header.Get("Location"))
		}
		if strings.Contains(v.expect("GET", "/account/"+app.ID, nil, http.StatusOK).body, id) {
			t.Fatal("removed passkey still listed")
		}
		// Bob's is still there.
		if !strings.Contains(b.expect("GET", "/account/"+app.ID, nil, http.StatusOK).body, bobsID) {
			t.Fatal("Bob's passkey went")
		}
	})
}

func TestHostedAccountIdentities(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := accountApp(t, sys, nil)
		link := func(who string) string {
			u := userOf(t, sys, app, who)
			id := uuid.Must(uuid.NewV7()).String()
			now := sys.Clock.Now()
			if err := sys.DB.CreateIdentity(context.Background(), store.Identity{ID: id, AppID: app.ID, AppUserID: u.ID, Provider: "github",
				Issuer: "https://github.com", Subject: "sub-" + who, Email: who, CreatedAt: now, LastUsedAt: now}); err != nil {
				t.Fatal(err)
			}
			return id
		}
		mine, bobs := link(email), link("bob@shop.example")
		v, page := onAccount(t, sys, app, email)
		csrf := csrfOf(t, page)
		b, bobPage := onAccount(t, sys, app, "bob@shop.example")
		if !strings.Contains(page.body, "Linked accounts") || !strings.Contains(page.body, "/identities/"+mine+"/unlink") || strings.Contains(page.body, bobs) {
			t.Fatalf("identities on the account page:\n%s", page.body)
		}
		v.refusedWithoutCSRF(app, "/identities/"+mine+"/unlink", nil, csrfOf(t, bobPage))
		v.post(app, "/identities/"+bobs+"/unlink", csrf, nil, http.StatusNotFound)
		sys.Clock.Advance(10 * time.Minute)
		isStepUpPage(t, "unlink", v.post(app, "/identities/"+mine+"/unlink", csrf, nil, http.StatusForbidden), app)
		v.stepUpByEmail(app, csrf, email)
		if a := v.post(app, "/identities/"+mine+"/unlink", csrf, nil, http.StatusSeeOther); a.header.Get("Location") != "/account/"+app.ID+"?notice=unlinked" {
			t.Fatalf("unlink: %q", a.header.Get("Location"))
		}
		if ids, _ := sys.SignIn.UserIdentities(context.Background(), userOf(t, sys, app, email).ID); len(ids) != 0 {
			t.Fatalf("identities after unlinking: %v", ids)
		}

		// Never the last way in: once the app stops signing in by e-mail,
		// Bob's GitHub account is his only way.
		b.stepUpByEmail(app, csrfOf(t, bobPage), "bob@shop.example")
		ids := []string{"phone"}
		if _, err := sys.Tenants.UpdateApp(context.Background(), servertest.Operator, app.WorkspaceID, app.ID, tenant.AppSettings{AllowedIdentifiers: &ids, RequiredIdentifiers: &ids}); err != nil {
			t.Fatal(err)
		}
		a := b.post(app, "/identities/"+bobs+"/unlink", csrfOf(t, bobPage), nil, http.StatusConflict)
		if !strings.Contains(a.body, "only way to sign in") {
			t.Fatalf("last way in:\n%s", a.body)
		}
	})
}

func TestHostedAccountContactChange(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := accountApp(t, sys, nil)
		v, page := onAccount(t, sys, app, email)
		csrf := csrfOf(t, page)
		b, bobPage := onAccount(t, sys, app, "bob@shop.example")
		bobCSRF := csrfOf(t, bobPage)
		if !strings.Contains(page.body, `name="kind" value="email"`) || strings.Contains(page.body, `name="kind" value="phone"`) {
			t.Fatalf("contact forms of an app that signs in by e-mail:\n%s", page.body)
		}
		newAddr := "alice.new@shop.example"
		form := url.Values{"kind": {"email"}, "identifier": {newAddr}}
		v.refusedWithoutCSRF(app, "/contact", form, bobCSRF)
		v.post(app, "/contact", csrf, url.Values{"kind": {"phone"}, "identifier": {"+14155550100"}}, http.StatusBadRequest)
		// Another user's address: refused.
		if a := v.post(app, "/contact", csrf, url.Values{"kind": {"email"}, "identifier": {"bob@shop.example"}}, http.StatusConflict); !strings.Contains(a.body, `role="alert"`) {
			t.Fatalf("taken address:\n%s", a.body)
		}
		// Later: needs a recent sign-in, and nothing is sent.
		sys.Clock.Advance(10 * time.Minute)
		isStepUpPage(t, "change e-mail", v.post(app, "/contact", csrf, form, http.StatusForbidden), app)
		if _, ok := sys.Mail.Last(newAddr); ok {
			t.Fatal("a code went to the new address without a step-up")
		}
		v.stepUpByEmail(app, csrf, email)
		sent := len(sys.Mail.Messages())
		a := v.post(app, "/contact", csrf, form, http.StatusOK)
		checkHostedHeaders(t, "contact code", a, "https://shop.example https://www.shop.example")
		ch := regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(a.body)
		if ch == nil || !strings.Contains(a.body, newAddr) {
			t.Fatalf("code page:\n%s", a.body)
		}
		code := codeTo(t, sys, newAddr, sent)
		wrong := "000000"
		if code == wrong {
			wrong = "111111"
		}
		v.refusedWithoutCSRF(app, "/contact/verify", url.Values{"challenge": {ch[1]}, "code": {code}}, bobCSRF)
		v.post(app, "/contact/verify", csrf, url.Values{"challenge": {ch[1]}, "code": {wrong}}, http.StatusUnprocessableEntity)
		// Bob's session cannot use Alice's change.
		b.post(app, "/contact/verify", bobCSRF, url.Values{"challenge": {ch[1]}, "code": {code}}, http.StatusBadRequest)
		if a := v.post(app, "/contact/verify", csrf, url.Values{"challenge": {ch[1]}, "code": {code}}, http.StatusSeeOther); a.header.Get("Location") != "/account/"+app.ID+"?notice=contact" {
			t.Fatalf("verify: %q", a.header.Get("Location"))
		}
		if u := userOf(t, sys, app, newAddr); u.Email != newAddr {
			t.Fatalf("e-mail after the change: %q", u.Email)
		}
		if page := v.expect("GET", "/account/"+app.ID, nil, http.StatusOK); !strings.Contains(page.body, "Signed in as <strong>"+newAddr) {
			t.Fatalf("account page after the change:\n%s", page.body)
		}
		// The old address was told.
		told := false
		for _, m := range sys.Mail.Messages()[sent:] {
			told = told || m.To == email
		}
		if !told {
			t.Fatal("no notice to the old address")
		}
	})
}

func TestHostedAccountNoChangeOnGET(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := accountApp(t, sys, nil)
		v, _ := onAccount(t, sys, app, email)
		sent := len(sys.Mail.Messages())
		for _, p := range []string{"/profile", "/contact", "/contact/verify", "/passkeys/begin", "/passkeys/finish", "/passkeys/x/rename",
			"/passkeys/x/delete", "/totp", "/totp/confirm", "/totp/x/delete", "/backup-codes", "/identities/x/unlink", "/stepup/verify"} {
			if a := v.do("GET", "/account/"+app.ID+p, nil, nil); a.status == http.StatusOK || a.status == http.StatusSeeOther {
				t.Errorf("GET %s: %d", p, a.status)
			}
		}
		page := v.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		if strings.Contains(page.body, "totp-secret") || strings.Contains(page.body, "/totp/") || strings.Contains(page.body, "unused backup codes") {
			t.Fatalf("GETs made something:\n%s", page.body)
		}
		if n := len(sys.Mail.Messages()); n != sent {
			t.Fatalf("GETs sent %d messages", n-sent)
		}
		// Signed out, a POST is refused, not redirected.
		w := newVisitor(t, sys)
		if a := w.do("POST", "/account/"+app.ID+"/backup-codes", url.Values{"csrf": {"x"}}, nil); a.status != http.StatusUnauthorized {
			t.Fatalf("signed-out POST: %d", a.status)
		}
	})
}
