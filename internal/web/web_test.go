package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/console"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/web"
)

// operator is a browser signed in to the console.
type operator struct {
	t      testing.TB
	sys    *servertest.System
	cookie string
	csrf   string
}

type answer struct {
	status int
	header http.Header
	body   string
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// send makes one request as a same-origin browser would (Sec-Fetch-Site:
// same-origin), with the session cookie when there is one.
func send(t testing.TB, sys *servertest.System, cookie, method, path string, form url.Values, header map[string]string) answer {
	t.Helper()
	if form == nil {
		return sendBody(t, sys, cookie, method, path, nil, header)
	}
	h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for k, v := range header {
		h[k] = v
	}
	return sendBody(t, sys, cookie, method, path, strings.NewReader(form.Encode()), h)
}

// sendBody is send with a body of any kind (header sets its Content-Type).
func sendBody(t testing.TB, sys *servertest.System, cookie, method, path string, body io.Reader, header map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(method, sys.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if cookie != "" {
		req.Header.Set("Cookie", web.CookieName+"="+cookie)
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func link(t testing.TB, sys *servertest.System, email string) string {
	t.Helper()
	l, _, err := sys.Console.CreateLink(context.Background(), access.Operator(), email)
	if err != nil {
		t.Fatalf("CreateLink(%s): %v", email, err)
	}
	u, _ := url.Parse(l)
	return u.Query().Get("token")
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// signIn follows a fresh link for email and returns the signed-in browser.
func signIn(t testing.TB, sys *servertest.System, email string) *operator {
	t.Helper()
	a := send(t, sys, "", "POST", "/console/link", url.Values{"token": {link(t, sys, email)}}, nil)
	if a.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", a.status, a.body)
	}
	var cookie string
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		if c.Name == web.CookieName {
			cookie = c.Value
		}
	}
	if cookie == "" {
		t.Fatalf("sign-in set no %s cookie: %v", web.CookieName, a.header["Set-Cookie"])
	}
	o := &operator{t: t, sys: sys, cookie: cookie}
	page := o.get("/console/account", http.StatusOK)
	m := csrfField.FindStringSubmatch(page.body)
	if m == nil {
		t.Fatal("the account page has no CSRF field")
	}
	o.csrf = m[1]
	return o
}

func (o *operator) get(path string, want int) answer {
	o.t.Helper()
	a := send(o.t, o.sys, o.cookie, "GET", path, nil, nil)
	if a.status != want {
		o.t.Fatalf("GET %s: %d, want %d\n%s", path, a.status, want, a.body)
	}
	return a
}

func (o *operator) post(path string, form url.Values, want int) answer {
	o.t.Helper()
	form = maps.Clone(form) // the caller's form is not this operator's
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", o.csrf)
	}
	a := send(o.t, o.sys, o.cookie, "POST", path, form, nil)
	if a.status != want {
		o.t.Fatalf("POST %s: %d, want %d\n%s", path, a.status, want, a.body)
	}
	return a
}

func auditCount(t *testing.T, sys *servertest.System, workspaceID, action string) int {
	t.Helper()
	list, err := sys.Tenants.AuditLog(context.Background(), access.Operator(), workspaceID, tenant.AuditFilter{Action: action, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

var nonceRe = regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9_-]+)'`)

// checkHeaders checks a console answer's security headers and that every
// script and stylesheet of the page carries the header's nonce.
func checkHeaders(t *testing.T, what string, a answer) string {
	t.Helper()
	csp := a.header.Get("Content-Security-Policy")
	m := nonceRe.FindStringSubmatch(csp)
	if m == nil || !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") ||
		strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Fatalf("%s: CSP %q", what, csp)
	}
	for k, v := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "Cache-Control": "no-store"} {
		if got := a.header.Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got, v)
		}
	}
	for _, tag := range regexp.MustCompile(`<(script|link|style)\b[^>]*>`).FindAllString(a.body, -1) {
		if !strings.Contains(tag, `nonce="`+m[1]+`"`) {
			t.Errorf("%s: %s lacks the nonce", what, tag)
		}
	}
	if strings.Contains(a.body, " style=") || strings.Contains(a.body, " on") && regexp.MustCompile(`\son[a-z]+=`).MatchString(a.body) {
		t.Errorf("%s: inline style or event handler attribute", what)
	}
	return m[1]
}

func TestConsoleSignInAndSessions(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, owner := sys.Workspace(t, "Acme")

		// Links are the command line's: no other principal makes one, and
		// not for an address that is no member.
		if _, _, err := sys.Console.CreateLink(ctx, sys.Principal(t, sys.WorkspaceSecret(t, ws.ID, owner.ID)), owner.Email); err == nil {
			t.Fatal("a workspace secret made a console link")
		}
		if _, _, err := sys.Console.CreateLink(ctx, access.Operator(), "stranger@example.com"); err != console.ErrNoMember && !strings.Contains(err.Error(), console.ErrNoMember.Error()) {
			t.Fatalf("link for a stranger: %v", err)
		}

		// Opening the link changes nothing; signing in spends it.
		tok := link(t, sys, "  "+strings.ToUpper(owner.Email)+" ")
		for range 2 {
			a := send(t, sys, "", "GET", "/console/link?token="+tok, nil, nil)
			if a.status != http.StatusOK || !strings.Contains(a.body, `name="token"`) {
				t.Fatalf("link page: %d %s", a.status, a.body)
			}
			checkHeaders(t, "link page", a)
		}
		a := send(t, sys, "", "POST", "/console/link", url.Values{"token": {tok}}, nil)
		if a.status != http.StatusSeeOther || a.header.Get("Location") != "/console/" {
			t.Fatalf("sign-in: %d %v", a.status, a.header)
		}
		sc := a.header.Get("Set-Cookie")
		for _, part := range []string{web.CookieName + "=ghs_", "Path=/", "HttpOnly", "Secure", "SameSite=Strict"} {
			if !strings.Contains(sc, part) {
				t.Errorf("session cookie %q lacks %s", sc, part)
			}
		}
		if strings.Contains(sc, "Domain=") {
			t.Errorf("session cookie %q has a Domain", sc)
		}
		if again := send(t, sys, "", "POST", "/console/link", url.Values{"token": {tok}}, nil); again.status != http.StatusNotFound {
			t.Fatalf("a spent link signed in again: %d", again.status)
		}
		if n := auditCount(t, sys, ws.ID, "console."); n != 2 {
			t.Fatalf("audit: %d console entries, want link_created and signed_in", n)
		}
		list, _ := sys.Tenants.AuditLog(ctx, access.Operator(), ws.ID, tenant.AuditFilter{Action: "console.", Limit: 10})
		for _, e := range list {
			if strings.Contains(string(e.After), "ghl_") || strings.Contains(string(e.After), "ghs_") {
				t.Fatalf("audit entry %s holds a token: %s", e.Action, e.After)
			}
		}

		// An expired link does not sign in.
		old := link(t, sys, owner.Email)
		sys.Clock.Advance(console.LinkTTL + time.Second)
		if a := send(t, sys, "", "POST", "/console/link", url.Values{"token": {old}}, nil); a.status != http.StatusNotFound {
			t.Fatalf("expired link: %d", a.status)
		}

		// Signed out: pages go to the sign-in page, actions are refused.
		if a := send(t, sys, "", "GET", "/console/w/"+ws.ID, nil, nil); a.status != http.StatusSeeOther || a.header.Get("Location") != "/console/signin" {
			t.Fatalf("signed-out page: %d %v", a.status, a.header.Get("Location"))
		}
		if a := send(t, sys, "", "POST", "/console/w/"+ws.ID+"/members", url.Values{"email": {"x@example.com"}}, nil); a.status != http.StatusUnauthorized {
			t.Fatalf("signed-out action: %d", a.status)
		}

		// A session idles out after console.IdleTimeout; use keeps it; it
		// ends after console.AbsoluteTimeout whatever happens.
		o := signIn(t, sys, owner.Email)
		n1 := checkHeaders(t, "workspace page", o.get("/console/w/"+ws.ID, http.StatusOK))
		n2 := checkHeaders(t, "workspace page", o.get("/console/w/"+ws.ID, http.StatusOK))
		if n1 == n2 {
			t.Fatal("two pages had the same nonce")
		}
		for elapsed := time.Duration(0); elapsed < console.AbsoluteTimeout-console.IdleTimeout; elapsed += console.IdleTimeout - time.Minute {
			sys.Clock.Advance(console.IdleTimeout - time.Minute)
			o.get("/console/account", http.StatusOK)
		}
		sys.Clock.Advance(console.IdleTimeout)
		if a := send(t, sys, o.cookie, "GET", "/console/account", nil, nil); a.status != http.StatusSeeOther {
			t.Fatalf("after the absolute timeout: %d", a.status)
		}
		idle := signIn(t, sys, owner.Email)
		sys.Clock.Advance(console.IdleTimeout + time.Second)
		if a := send(t, sys, idle.cookie, "GET", "/console/account", nil, nil); a.status != http.StatusSeeOther {
			t.Fatalf("after the idle timeout: %d", a.status)
		}

		// Own sessions: listed, one revoked from another, sign out ends one.
		a1, a2 := signIn(t, sys, owner.Email), signIn(t, sys, owner.Email)
		page := a1.get("/console/account", http.StatusOK).body
		ids := regexp.MustCompile(`/console/account/sessions/([0-9a-f]+)/revoke`).FindAllStringSubmatch(page, -1)
		if len(ids) != 2 {
			t.Fatalf("account lists %d sessions, want 2", len(ids))
		}
		for _, id := range ids {
			if !strings.Contains(page, "this browser") {
				t.Fatal("the current session is not marked")
			}
			_ = id
		}
		var other string
		for _, id := range ids {
			if a := send(t, sys, a2.cookie, "GET", "/console/account", nil, nil); a.status == http.StatusOK && strings.Contains(a.body, id[1]) {
				other = id[1]
			}
		}
		// Revoke a2's session from a1 (the id a1 sees that is not its own
		// "this browser" row is a2's).
		for _, id := range ids {
			row := page[strings.Index(page, id[0])-400 : strings.Index(page, id[0])]
			if !strings.Contains(row, "this browser") {
				other = id[1]
			}
		}
		a1.post("/console/account/sessions/"+other+"/revoke", nil, http.StatusSeeOther)
		if a := send(t, sys, a2.cookie, "GET", "/console/account", nil, nil); a.status != http.StatusSeeOther {
			t.Fatalf("revoked session still works: %d", a.status)
		}
		a1.post("/console/signout", nil, http.StatusSeeOther)
		if a := send(t, sys, a1.cookie, "GET", "/console/account", nil, nil); a.status != http.StatusSeeOther {
			t.Fatalf("signed-out session still works: %d", a.status)
		}
	})
}

func TestConsoleCSRFAndNoChangeOnGet(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		o := signIn(t, sys, owner.Email)
		other := signIn(t, sys, owner.Email)
		path := "/console/w/" + ws.ID + "/apps/" + app.ID
		before := auditCount(t, sys, ws.ID, "")

		form := func(csrf string) url.Values {
			return url.Values{"csrf": {csrf}, "email_auth_type": {"otp"}}
		}
		for name, c := range map[string]struct {
			form   url.Values
			header map[string]string
		}{
			"no token":                {form: url.Values{"email_auth_type": {"otp"}}},
			"wrong token":             {form: form(strings.Repeat("0", 64))},
			"another session's token": {form: form(other.csrf)},
			"cross-site":              {form: form(o.csrf), header: map[string]string{"Sec-Fetch-Site": "cross-site"}},
			"another origin":          {form: form(o.csrf), header: map[string]string{"Sec-Fetch-Site": "", "Origin": "https://evil.example"}},
			"token in a wrong header": {form: url.Values{"email_auth_type": {"otp"}}, header: map[string]string{"X-CSRF-Token": "nope"}},
		} {
			a := send(t, sys, o.cookie, "POST", path, c.form, c.header)
			if a.status != http.StatusForbidden {
				t.Errorf("%s: %d, want 403", name, a.status)
			}
		}
		got, _ := sys.Tenants.GetApp(ctx, app.ID)
		if got.EmailAuthType != app.EmailAuthType || auditCount(t, sys, ws.ID, "") != before {
			t.Fatal("a refused POST changed something")
		}
		// htmx sends the token in X-CSRF-Token.
		if a := send(t, sys, o.cookie, "POST", path, url.Values{"email_auth_type": {"otp"}}, map[string]string{"X-CSRF-Token": o.csrf}); a.status != http.StatusSeeOther {
			t.Fatalf("htmx header token: %d %s", a.status, a.body)
		}

		// Every page, read twice: nothing is written.
		if _, _, err := sys.Tenants.CreateAPIKey(ctx, access.Operator(), app.ID, "k"); err != nil {
			t.Fatal(err)
		}
		before = auditCount(t, sys, ws.ID, "")
		pages := []string{"/console/", "/console/account", "/console/w/" + ws.ID, path, path + "/preview?email_auth_type=otp", path + "/keys",
			path + "/users", path + "/users.csv", path + "/health", path + "/webhooks", "/console/w/" + ws.ID + "/members", "/console/w/" + ws.ID + "/audit",
			"/console/w/" + ws.ID + "/audit.csv", "/console/signin", "/console/static/" + web.HTMX, "/console/static/console.css", "/console/static/console.js"}
		for range 2 {
			for _, p := range pages {
				a := send(t, sys, o.cookie, "GET", p, nil, nil)
				if a.status != http.StatusOK && a.status != http.StatusSeeOther {
					t.Errorf("GET %s: %d", p, a.status)
				}
			}
		}
		if auditCount(t, sys, ws.ID, "") != before {
			t.Fatal("a GET wrote an audit entry")
		}
		// No page accepts a state change by GET.
		for _, p := range []string{path + "/keys/x/revoke", "/console/w/" + ws.ID + "/members/x/remove", "/console/signout", "/console/link?token=ghl_x"} {
			a := send(t, sys, o.cookie, "GET", p, nil, nil)
			if a.status == http.StatusSeeOther && !strings.Contains(p, "/link") {
				t.Errorf("GET %s: %d", p, a.status)
			}
		}
	})
}

func TestConsoleRoles(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		if _, err := sys.Tenants.AddMember(ctx, access.Operator(), ws.ID, "mel@acme.example", "Mel", access.RoleMember); err != nil {
			t.Fatal(err)
		}
		admin, err := sys.Tenants.AddMember(ctx, access.Operator(), ws.ID, "ada@acme.example", "Ada", access.RoleAdmin)
		if err != nil {
			t.Fatal(err)
		}
		other, _ := sys.Workspace(t, "Other")
		mel := signIn(t, sys, "mel@acme.example")
		base := "/console/w/" + ws.ID
		ap := base + "/apps/" + app.ID

		// A member reads...
		page := mel.get(ap, http.StatusOK).body
		if !strings.Contains(page, "<fieldset disabled>") || strings.Contains(page, "Save settings") {
			t.Fatal("a member's settings page offers to save")
		}
		mel.get(ap+"/keys", http.StatusForbidden) // listing keys is Manage, as in the API
		mel.get(ap+"/users", http.StatusOK)
		mel.get(base+"/members", http.StatusOK)
		// ...but the server refuses every change, whatever the page showed.
		before := auditCount(t, sys, ws.ID, "")
		mel.post(ap, url.Values{"email_auth_type": {"otp"}}, http.StatusForbidden)
		mel.post(ap+"/keys", url.Values{"nickname": {"mine"}}, http.StatusForbidden)
		mel.post(ap+"/keys", url.Values{"nickname": {"mine"}, "kind": {"secret"}}, http.StatusForbidden)
		mel.post(ap+"/keys", url.Values{"nickname": {"mine"}, "kind": {"m2m"}}, http.StatusForbidden)
		mel.post(base+"/members", url.Values{"email": {"eve@acme.example"}, "role": {"owner"}}, http.StatusForbidden)
		mel.post(base+"/members/"+owner.ID+"/role", url.Values{"role": {"member"}}, http.StatusForbidden)
		mel.post(base+"/members/"+admin.ID+"/remove", nil, http.StatusForbidden)
		mel.post(base+"/apps", url.Values{"name": {"Mine"}, "origin": {"https://mine.example"}}, http.StatusForbidden)
		mel.get(base+"/audit", http.StatusForbidden)
		if auditCount(t, sys, ws.ID, "") != before {
			t.Fatal("a member's refused action wrote an audit entry")
		}
		if keys, _ := sys.Tenants.ListAPIKeys(ctx, access.Operator(), app.ID); len(keys) != 0 {
			t.Fatal("a member made an API key")
		}
		// Another workspace: not a member.
		mel.get("/console/w/"+other.ID, http.StatusForbidden)
		mel.get("/console/w/"+other.ID+"/apps/"+app.ID, http.StatusForbidden)

		// An admin may; the last owner stays.
		ada := signIn(t, sys, "ada@acme.example")
		ada.post(ap, url.Values{"email_auth_type": {"otp"}}, http.StatusSeeOther)
		ada.post(ap+"/keys", url.Values{"nickname": {"ci"}, "kind": {"api_key"}}, http.StatusBadRequest) // not a kind: nothing made
		a := ada.post(ap+"/keys", url.Values{"nickname": {"ci"}}, http.StatusCreated)
		m := regexp.MustCompile(`value="(ghk_[A-Za-z0-9_-]+)"`).FindStringSubmatch(a.body)
		if m == nil {
			t.Fatal("the new key is not shown")
		}
		if p, err := sys.Tenants.Authenticate(ctx, m[1]); err != nil || p.AppID != app.ID {
			t.Fatalf("the shown key does not work: %v", err)
		}
		if strings.Contains(ada.get(ap+"/keys", http.StatusOK).body, m[1]) {
			t.Fatal("the key is shown again")
		}
		// An API secret and an M2M client, shown once each, and revoked.
		a = ada.post(ap+"/keys", url.Values{"nickname": {"backend"}, "kind": {"secret"}}, http.StatusCreated)
		sec := regexp.MustCompile(`value="(ey[A-Za-z0-9_.-]+)"`).FindStringSubmatch(a.body)
		if sec == nil {
			t.Fatal("the new secret is not shown")
		}
		sp, err := sys.Tenants.Authenticate(ctx, sec[1])
		if err != nil || sp.Kind != access.KindAppSecret {
			t.Fatalf("the shown secret does not work: %v", err)
		}
		a = ada.post(ap+"/keys", url.Values{"nickname": {"cron"}, "kind": {"m2m"}}, http.StatusCreated)
		if !regexp.MustCompile(`Client id: <code>[0-9a-f-]{36}</code>`).MatchString(a.body) {
			t.Fatal("the new client's id is not shown")
		}
		ada.post(ap+"/keys/secrets/"+sp.CredentialID+"/revoke", nil, http.StatusSeeOther)
		if _, err := sys.Tenants.Authenticate(ctx, sec[1]); err == nil {
			t.Fatal("a revoked secret still works")
		}
		wsSecret, _, _ := sys.Tenants.CreateWorkspaceSecret(ctx, access.Operator(), ws.ID, owner.ID, "ws")
		wp := sys.Principal(t, wsSecret)
		ada.post(ap+"/keys/secrets/"+wp.CredentialID+"/revoke", nil, http.StatusNotFound) // a workspace secret is no app credential
		ada.post(ap+"/keys/bogus/x/revoke", nil, http.StatusNotFound)
		ada.post(base+"/members/"+owner.ID+"/role", url.Values{"role": {"admin"}}, http.StatusForbidden) // only owners touch owners
		olive := signIn(t, sys, owner.Email)
		if a := olive.post(base+"/members/"+owner.ID+"/role", url.Values{"role": {"admin"}}, http.StatusConflict); !strings.Contains(a.body, "owner") {
			t.Fatalf("last owner demotion: %s", a.body)
		}
		olive.post(base+"/members/"+owner.ID+"/remove", nil, http.StatusConflict)
		olive.post(base+"/members", url.Values{"email": {"not an address"}, "role": {"member"}}, http.StatusBadRequest)
		olive.post(base+"/members", url.Values{"email": {"new@acme.example"}, "role": {"admin"}}, http.StatusSeeOther)
		olive.post(base+"/members/"+admin.ID+"/remove", nil, http.StatusSeeOther)
		if a := send(t, sys, ada.cookie, "GET", ap, nil, nil); a.status != http.StatusForbidden {
			t.Fatalf("a removed member's session still reads the workspace: %d", a.status)
		}
		// Two members added by the command line, one in the console.
		for action, want := range map[string]int{"member.added": 3, "member.removed": 1, "api_key.created": 1, "app.updated": 1,
			"api_secret.created": 2, "api_secret.revoked": 1, "m2m_client.created": 1} {
			if got := auditCount(t, sys, ws.ID, action); got != want {
				t.Errorf("audit: %d %s, want %d", got, action, want)
			}
		}
	})
}

func TestConsoleSettingsAndAudit(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		o := signIn(t, sys, owner.Email)
		ap := "/console/w/" + ws.ID + "/apps/" + app.ID
		sp := o.get(ap, http.StatusOK)
		checkHeaders(t, "settings", sp)
		page := sp.body
		if !strings.Contains(page, "E-mail") || !strings.Contains(page, "Signed in") {
			t.Fatal("the settings page has no flow preview")
		}
		// The preview follows the form without saving.
		prev := o.get(ap+"/preview?email_auth_type=otp&mfa_policy=required&allowed_identifiers.shown=1&allowed_identifiers=email", http.StatusOK).body
		if !strings.Contains(prev, "one-time code") || !strings.Contains(prev, "Every user must pass a second factor") || strings.Contains(prev, "texts") {
			t.Fatalf("preview: %s", prev)
		}
		if got, _ := sys.Tenants.GetApp(ctx, app.ID); got.EmailAuthType != app.EmailAuthType {
			t.Fatal("the preview saved")
		}

		// A refused value: 400 with the reason, nothing saved.
		a := o.post(ap, url.Values{"access_expiration": {"5"}}, http.StatusBadRequest)
		if !strings.Contains(a.body, "access_expiration must be") {
			t.Fatalf("bad value: %s", a.body)
		}
		o.post(ap, url.Values{"access_expiration": {"ten"}}, http.StatusBadRequest)
		if auditCount(t, sys, ws.ID, "app.updated") != 0 {
			t.Fatal("a refused save wrote an audit entry")
		}

		// A save: visible in the API, one audit entry with before and after.
		o.post(ap, url.Values{"email_auth_type": {"otp"}, "access_expiration": {"600"}, "public_signup.shown": {"1"}}, http.StatusSeeOther)
		secret := sys.WorkspaceSecret(t, ws.ID, owner.ID)
		req, _ := http.NewRequest("GET", sys.URL+"/v1/workspaces/"+ws.ID+"/apps/"+app.ID, nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			App struct {
				EmailAuthType    string `json:"email_auth_type"`
				AccessExpiration int64  `json:"access_expiration"`
				PublicSignup     bool   `json:"public_signup"`
			} `json:"app"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if got.App.EmailAuthType != "otp" || got.App.AccessExpiration != 600 || got.App.PublicSignup {
			t.Fatalf("API reads %+v", got.App)
		}
		list, err := sys.Tenants.AuditLog(ctx, access.Operator(), ws.ID, tenant.AuditFilter{Action: "app.updated", Limit: 10})
		if err != nil || len(list) != 1 {
			t.Fatalf("audit: %v %d entries", err, len(list))
		}
		e := list[0]
		if e.ActorKind != string(access.KindConsole) || e.MemberID != owner.ID || e.IP == "" || e.TargetID != app.ID ||
			!strings.Contains(string(e.Before), `"email_auth_type":"magic"`) || !strings.Contains(string(e.After), `"email_auth_type":"otp"`) {
			t.Fatalf("audit entry %+v before %s after %s", e, e.Before, e.After)
		}
		// The audit page shows it; the CSV export has it, formula-safe.
		if !strings.Contains(o.get("/console/w/"+ws.ID+"/audit?action=app.", http.StatusOK).body, "app.updated") {
			t.Fatal("the audit page does not show the change")
		}
		csv := o.get("/console/w/"+ws.ID+"/audit.csv?action=app.updated", http.StatusOK)
		if !strings.HasPrefix(csv.header.Get("Content-Type"), "text/csv") || strings.Count(csv.body, "app.updated") != 1 {
			t.Fatalf("audit CSV: %s", csv.body)
		}

		// Re-authentication: a destructive action needs a sign-in from the
		// last console.ReauthWindow.
		sys.Clock.Advance(console.ReauthWindow - time.Minute)
		o.get("/console/account", http.StatusOK)
		sys.Clock.Advance(2 * time.Minute)
		if a := o.post(ap+"/keys", url.Values{"nickname": {"late"}}, http.StatusForbidden); !strings.Contains(a.body, "Sign in again") {
			t.Fatalf("stale session made a key: %s", a.body)
		}
		if keys, _ := sys.Tenants.ListAPIKeys(ctx, access.Operator(), app.ID); len(keys) != 0 {
			t.Fatal("a key was made without re-authentication")
		}
		o.post(ap, url.Values{"email_auth_type": {"magic"}}, http.StatusSeeOther) // not destructive
	})
}

func TestConsoleUsers(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		var ids []string
		for _, e := range []string{"ann@shop.example", "bob@shop.example", "=cmd@shop.example"} {
			u := createUser(t, sys, app, e)
			ids = append(ids, u)
		}
		o := signIn(t, sys, owner.Email)
		up := "/console/w/" + ws.ID + "/apps/" + app.ID + "/users"
		if b := o.get(up+"?q="+ids[1], http.StatusOK).body; !strings.Contains(b, "bob@shop.example") || strings.Contains(b, "ann@shop.example") {
			t.Fatal("a pasted id does not find its user alone")
		}
		if b := o.get(up+"?q=AN", http.StatusOK).body; !strings.Contains(b, "ann@shop.example") || strings.Contains(b, "bob@") {
			t.Fatal("search by the start of an address")
		}
		csv := o.get(up+".csv", http.StatusOK).body
		if strings.Count(csv, "\n") != 4 || !strings.Contains(csv, "'=cmd@shop.example") {
			t.Fatalf("users CSV:\n%s", csv)
		}
		o.get(up+"/"+ids[0], http.StatusOK)
		o.get(up+"/00000000-0000-7000-8000-000000000000", http.StatusNotFound)

		// Pages: 25 newest, then "Next page" after the last one shown.
		for i := range 25 {
			createUser(t, sys, app, fmt.Sprintf("u%02d@shop.example", i))
		}
		first := o.get(up, http.StatusOK).body
		older := regexp.MustCompile(`href="\?(after=[0-9a-f-]+)" rel="next"`).FindStringSubmatch(first)
		if older == nil || strings.Count(first, "/users/0") != 25 || strings.Contains(first, ">First page<") {
			t.Fatalf("first page:\n%s", first)
		}
		second := o.get(up+"?"+older[1], http.StatusOK).body
		if strings.Count(second, "/users/0") != 3 || strings.Contains(second, `rel="next"`) || !strings.Contains(second, ">First page<") {
			t.Fatalf("second page:\n%s", second)
		}
		o.get(up+"?after=00000000-0000-7000-8000-000000000000", http.StatusNotFound)
		o.get(up+"?sort=last_sign_in&after="+ids[0]+"&at=yesterday", http.StatusBadRequest)

		// By last sign-in: bob, then ann, then those who never signed in;
		// the next page keeps the order and lists the rest, each once.
		now := sys.Clock.Now()
		for i, id := range []string{ids[0], ids[1]} {
			if err := sys.DB.TouchAppUser(context.Background(), app.ID, id, now.Add(time.Duration(i)*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		userLink := regexp.MustCompile(`/users/([0-9a-f-]{36})"`)
		listed := func(b string) []string {
			var out []string
			for _, m := range userLink.FindAllStringSubmatch(b, -1) {
				out = append(out, m[1])
			}
			return out
		}
		first = o.get(up+"?sort=last_sign_in", http.StatusOK).body
		next := regexp.MustCompile(`href="\?(after=[0-9a-f-]+&amp;at=[^"&]+&amp;sort=last_sign_in)" rel="next"`).FindStringSubmatch(first)
		got := listed(first)
		if next == nil || len(got) != 25 || got[0] != ids[1] || got[1] != ids[0] || !strings.Contains(first, `value="last_sign_in" selected`) {
			t.Fatalf("first page by last sign-in (%d users):\n%s", len(got), first)
		}
		// The last user shown signs in before the next page is read: the
		// page continues from where the first one ended all the same.
		if err := sys.DB.TouchAppUser(context.Background(), app.ID, got[24], now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		got = append(got, listed(o.get(up+"?"+html.UnescapeString(next[1]), http.StatusOK).body)...)
		seen := map[string]bool{}
		for _, id := range got {
			seen[id] = true
		}
		if len(got) != 28 || len(seen) != 28 {
			t.Errorf("by last sign-in, two pages list %d users (%d distinct), want all 28 once", len(got), len(seen))
		}
	})
}

func createUser(t *testing.T, sys *servertest.System, app tenant.App, email string) string {
	t.Helper()
	secret := sys.AppSecret(t, app.ID)
	req, _ := http.NewRequest("POST", sys.URL+"/v1/"+app.ID+"/users", strings.NewReader(`{"identifier":"`+email+`"}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil || out.User.ID == "" {
		t.Fatalf("create user %s: %d %s", email, resp.StatusCode, b)
	}
	return out.User.ID
}

// TestHTMXPinned keeps the vendored htmx the file its name says.
func TestHTMXPinned(t *testing.T) {
	b, err := os.ReadFile("static/" + web.HTMX)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717" {
		t.Fatalf("%s has SHA-256 %s: not htmx.org 2.0.11's dist/htmx.min.js", web.HTMX, got)
	}
}

// TestConsoleLinkOnce: of 50 sign-ins with one link at once, one succeeds.
func TestConsoleLinkOnce(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ws, owner := sys.Workspace(t, "Acme")
		tok := link(t, sys, owner.Email)
		const n = 50
		codes := make(chan int, n)
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("POST", sys.URL+"/console/link", strings.NewReader(url.Values{"token": {tok}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Sec-Fetch-Site", "same-origin")
				resp, err := noRedirect.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				codes <- resp.StatusCode
			}()
		}
		wg.Wait()
		close(codes)
		got := map[int]int{}
		for c := range codes {
			got[c]++
		}
		if got[http.StatusSeeOther] != 1 || got[http.StatusNotFound] != n-1 {
			t.Fatalf("50 sign-ins with one link: %v", got)
		}
		if k := auditCount(t, sys, ws.ID, "console.signed_in"); k != 1 {
			t.Fatalf("%d console.signed_in entries", k)
		}
	})
}

func TestConsoleWebhooks(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		var hits sync.Map
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Store(r.Header.Get("Webhook-Id"), true)
			w.WriteHeader(http.StatusNoContent)
		}))
		defer recv.Close()
		o := signIn(t, sys, owner.Email)
		wp := "/console/w/" + ws.ID + "/apps/" + app.ID + "/webhooks"

		o.post(wp, url.Values{"url": {"ftp://nope"}}, http.StatusBadRequest)
		a := o.post(wp, url.Values{"url": {recv.URL + "/hook"}, "event_types.shown": {"1"}, "event_types": {"user.created"}}, http.StatusCreated)
		secret := regexp.MustCompile(`id="new-secret" class="mono"|value="(whsec_[A-Za-z0-9+/=_-]+)"`).FindStringSubmatch(a.body)
		if secret == nil || secret[1] == "" {
			t.Fatalf("the new endpoint's secret is not shown:\n%s", a.body)
		}
		list, err := sys.Webhooks.List(ctx, access.Operator(), app.ID)
		if err != nil || len(list) != 1 {
			t.Fatalf("endpoints: %v %d", err, len(list))
		}
		ep := list[0]
		if strings.Contains(o.get(wp, http.StatusOK).body, secret[1]) || strings.Contains(o.get(wp+"/"+ep.ID, http.StatusOK).body, secret[1]) {
			t.Fatal("the secret is shown again")
		}

		// A test send, delivered; the list filters by status.
		o.post(wp+"/"+ep.ID+"/test", nil, http.StatusSeeOther)
		var d webhookDelivery
		waitFor(t, "the test delivery", func() bool {
			pg, err := sys.Webhooks.Deliveries(ctx, access.Operator(), app.ID, ep.ID, 1, 10)
			if err == nil && len(pg.Deliveries) == 1 && pg.Deliveries[0].Status == "delivered" {
				d = webhookDelivery{ID: pg.Deliveries[0].ID, EventID: pg.Deliveries[0].EventID}
				return true
			}
			return false
		})
		if b := o.get(wp+"/"+ep.ID+"?status=delivered", http.StatusOK).body; !strings.Contains(b, "webhook.test") || !strings.Contains(b, "HTTP 204") {
			t.Fatalf("delivered filter:\n%s", b)
		}
		if b := o.get(wp+"/"+ep.ID+"?status=failed", http.StatusOK).body; strings.Contains(b, "webhook.test") {
			t.Fatal("failed filter shows a delivered one")
		}
		o.get(wp+"/"+ep.ID+"?status=bogus", http.StatusBadRequest)
		detail := o.get(wp+"/"+ep.ID+"/deliveries/"+d.ID, http.StatusOK).body
		if !strings.Contains(detail, "This is a test event.") || !strings.Contains(detail, "attempt 1") || !strings.Contains(detail, d.EventID) {
			t.Fatalf("delivery detail:\n%s", detail)
		}
		o.get(wp+"/"+ep.ID+"/deliveries/00000000-0000-7000-8000-000000000000", http.StatusNotFound)

		// Redeliver: the same event again.
		o.post(wp+"/"+ep.ID+"/deliveries/"+d.ID+"/redeliver", nil, http.StatusSeeOther)
		waitFor(t, "the redelivery", func() bool {
			_, attempts, _, err := sys.Webhooks.DeliveryDetail(ctx, access.Operator(), app.ID, ep.ID, d.ID)
			return err == nil && len(attempts) == 2
		})

		// Delivery health: the endpoint's deliveries of the week by status.
		hb := o.get("/console/w/"+ws.ID+"/apps/"+app.ID+"/health", http.StatusOK).body
		if !strings.Contains(hb, recv.URL+"/hook") || !strings.Contains(hb, "Waiting to send") {
			t.Fatalf("health page:\n%s", hb)
		}

		// Rotation: a new secret shown once, the old one signing for a while; it needs a recent sign-in.
		a = o.post(wp+"/"+ep.ID+"/rotate", nil, http.StatusOK)
		rotated := regexp.MustCompile(`value="(whsec_[A-Za-z0-9+/=_-]+)"`).FindStringSubmatch(a.body)
		if rotated == nil || rotated[1] == secret[1] || !strings.Contains(a.body, "still signs until") {
			t.Fatalf("rotation:\n%s", a.body)
		}
		for action, want := range map[string]int{"webhook.secret_rotated": 1, "webhook.test_sent": 1, "webhook.redelivered": 1, "webhook.created": 1} {
			if n := auditCount(t, sys, ws.ID, action); n != want {
				t.Errorf("%d %s entries, want %d", n, action, want)
			}
		}
		sys.Clock.Advance(console.ReauthWindow + time.Minute)
		o.post(wp+"/"+ep.ID+"/rotate", nil, http.StatusForbidden)

		// A member reads deliveries but changes nothing.
		if _, err := sys.Tenants.AddMember(ctx, access.Operator(), ws.ID, "mel@acme.example", "", access.RoleMember); err != nil {
			t.Fatal(err)
		}
		mel := signIn(t, sys, "mel@acme.example")
		mel.get(wp+"/"+ep.ID+"/deliveries/"+d.ID, http.StatusOK)
		mel.get("/console/w/"+ws.ID+"/apps/"+app.ID+"/health", http.StatusOK)
		mel.post(wp, url.Values{"url": {recv.URL + "/x"}}, http.StatusForbidden)
		mel.post(wp+"/"+ep.ID+"/test", nil, http.StatusForbidden)
		mel.post(wp+"/"+ep.ID+"/rotate", nil, http.StatusForbidden)
		mel.post(wp+"/"+ep.ID+"/deliveries/"+d.ID+"/redeliver", nil, http.StatusForbidden)
	})
}

type webhookDelivery struct{ ID, EventID string }

// waitFor polls cond (real time: deliveries are made by the job workers).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var handleField = regexp.MustCompile(`name="handle" value="([0-9a-f-]+)"`)

// TestConsoleCodeSignIn: an operator signs in with an e-mail code, through
// signin (the same attempts and limits as any app's users); a stranger's
// address gets the same answer and no message; re-authenticating replaces
// the browser's session.
func TestConsoleCodeSignIn(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		ask := func(email string) (answer, string) {
			t.Helper()
			a := send(t, sys, "", "POST", "/console/signin", url.Values{"email": {email}}, nil)
			m := handleField.FindStringSubmatch(a.body)
			if a.status != http.StatusOK || m == nil {
				t.Fatalf("send code to %s: %d\n%s", email, a.status, a.body)
			}
			return a, m[1]
		}
		// A stranger: the same page, nothing sent.
		stranger, _ := ask("stranger@example.com")
		if !strings.Contains(stranger.body, "If <strong>stranger@example.com</strong> is an operator") {
			t.Fatal("the stranger's page differs")
		}
		if _, ok := sys.Mail.Last("stranger@example.com"); ok {
			t.Fatal("a code went to a stranger")
		}
		if a := send(t, sys, "", "POST", "/console/signin", url.Values{"email": {"not an address"}}, nil); a.status != http.StatusBadRequest {
			t.Fatalf("bad address: %d", a.status)
		}
		// The built-in app is nobody's workspace.
		if list, _ := sys.Tenants.ListWorkspaces(context.Background(), access.Operator()); len(list) != 1 {
			t.Fatalf("operator lists %d workspaces, want the tenant's only", len(list))
		}
		if list, _ := sys.Tenants.ListApps(context.Background(), access.Operator(), ""); len(list) != 1 || list[0].ID != app.ID {
			t.Fatalf("operator lists %d apps, want the tenant's only", len(list))
		}

		_, handle := ask(owner.Email)
		msg, ok := sys.Mail.Last(owner.Email)
		if !ok || msg.Code == "" && !regexp.MustCompile(`\d{6}`).MatchString(msg.Text) {
			t.Fatalf("no code e-mailed: %+v", msg)
		}
		code := msg.Code
		if code == "" {
			code = regexp.MustCompile(`\d{6}`).FindString(msg.Text)
		}
		if !strings.Contains(msg.Subject+msg.Text, console.AppName) {
			t.Errorf("the message does not say it is the console's: %q", msg.Subject)
		}
		// A wrong code: 422 with the API's message, and one attempt spent.
		wrong := "000000"
		if wrong == code {
			wrong = "111111"
		}
		if a := send(t, sys, "", "POST", "/console/signin/verify", url.Values{"handle": {handle}, "code": {wrong}, "email": {owner.Email}}, nil); a.status != http.StatusUnprocessableEntity {
			t.Fatalf("wrong code: %d\n%s", a.status, a.body)
		}
		a := send(t, sys, "", "POST", "/console/signin/verify", url.Values{"handle": {handle}, "code": {code}, "email": {owner.Email}}, nil)
		if a.status != http.StatusSeeOther || !strings.Contains(a.header.Get("Set-Cookie"), web.CookieName+"=ghs_") {
			t.Fatalf("right code: %d %v", a.status, a.header)
		}
		if again := send(t, sys, "", "POST", "/console/signin/verify", url.Values{"handle": {handle}, "code": {code}, "email": {owner.Email}}, nil); again.status == http.StatusSeeOther {
			t.Fatal("a code signed in twice")
		}
		var cookie string
		for _, c := range (&http.Response{Header: a.header}).Cookies() {
			cookie = c.Value
		}
		o := &operator{t: t, sys: sys, cookie: cookie}
		o.get("/console/w/"+ws.ID+"/apps/"+app.ID, http.StatusOK)
		if n := auditCount(t, sys, ws.ID, "console.signed_in"); n != 1 {
			t.Fatalf("%d console.signed_in", n)
		}

		// Re-authentication by code, from the browser that has a session:
		// a new session, the old one ended.
		sys.Clock.Advance(console.ReauthWindow + time.Minute)
		_, handle = ask(owner.Email)
		msg, _ = sys.Mail.Last(owner.Email)
		code = msg.Code
		if code == "" {
			code = regexp.MustCompile(`\d{6}`).FindString(msg.Text)
		}
		b := send(t, sys, cookie, "POST", "/console/signin/verify", url.Values{"handle": {handle}, "code": {code}, "email": {owner.Email}}, nil)
		if b.status != http.StatusSeeOther {
			t.Fatalf("re-authentication: %d", b.status)
		}
		if c := send(t, sys, cookie, "GET", "/console/account", nil, nil); c.status != http.StatusSeeOther {
			t.Fatalf("the replaced session still works: %d", c.status)
		}

		// A member removed after asking for a code is refused.
		if _, err := sys.Tenants.AddMember(context.Background(), access.Operator(), ws.ID, "gone@acme.example", "", access.RoleMember); err != nil {
			t.Fatal(err)
		}
		_, handle = ask("gone@acme.example")
		msg, _ = sys.Mail.Last("gone@acme.example")
		code = msg.Code
		if code == "" {
			code = regexp.MustCompile(`\d{6}`).FindString(msg.Text)
		}
		ms, _ := sys.Tenants.ListMembers(context.Background(), access.Operator(), ws.ID)
		for _, m := range ms {
			if m.Email == "gone@acme.example" {
				if err := sys.Tenants.RemoveMember(context.Background(), access.Operator(), ws.ID, m.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		if a := send(t, sys, "", "POST", "/console/signin/verify", url.Values{"handle": {handle}, "code": {code}, "email": {"gone@acme.example"}}, nil); a.status != http.StatusForbidden {
			t.Fatalf("a removed member signed in: %d", a.status)
		}
	})
}

// TestConsolePasskeyRefusals: the passkey actions' refusals (the ceremony
// itself is walked in Chromium with a virtual authenticator).
func TestConsolePasskeyRefusals(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		_, owner := sys.Workspace(t, "Acme")
		json := map[string]string{"Content-Type": "application/json"}
		a := send(t, sys, "", "POST", "/console/signin/passkey/begin", nil, json)
		if a.status != http.StatusOK || !strings.Contains(a.body, `"challenge"`) {
			t.Fatalf("begin: %d %s", a.status, a.body)
		}
		post := func(cookie, path, body string, header map[string]string) answer {
			t.Helper()
			return sendBody(t, sys, cookie, "POST", path, strings.NewReader(body), header)
		}
		for name, c := range map[string]struct {
			body   string
			header map[string]string
			want   int
		}{
			"not JSON":       {body: "x=1", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, want: http.StatusBadRequest},
			"malformed JSON": {body: "{", header: json, want: http.StatusBadRequest},
			"no assertion":   {body: `{"id":"x","type":"public-key"}`, header: json, want: http.StatusBadRequest},
		} {
			if a := post("", "/console/signin/passkey/finish", c.body, c.header); a.status != c.want || a.header.Get("Set-Cookie") != "" {
				t.Errorf("%s: %d %s", name, a.status, a.body)
			}
		}
		if a := post("", "/console/signin/passkey/finish", `{}`, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}); a.status != http.StatusForbidden {
			t.Errorf("cross-site finish: %d", a.status)
		}
		// After a link sign-in there is no built-in app session: adding a
		// passkey asks for a code sign-in first; without the CSRF header it is refused.
		o := signIn(t, sys, owner.Email)
		if a := post(o.cookie, "/console/account/passkeys/begin", "{}", json); a.status != http.StatusForbidden {
			t.Errorf("begin registration without CSRF: %d", a.status)
		}
		a = post(o.cookie, "/console/account/passkeys/begin", "{}", map[string]string{"Content-Type": "application/json", "X-CSRF-Token": o.csrf})
		if a.status != http.StatusForbidden || !strings.Contains(a.body, "reauthentication_required") {
			t.Errorf("begin registration after a link: %d %s", a.status, a.body)
		}
		if b := o.get("/console/account", http.StatusOK).body; !strings.Contains(b, "You signed in with a link") {
			t.Error("the account page offers passkeys to a link session")
		}
	})
}

func TestConsoleUserAndAppDangerZone(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		ann := createUser(t, sys, app, "ann@shop.example")
		bob := createUser(t, sys, app, "bob@shop.example")
		if _, err := sys.Tenants.AddMember(ctx, access.Operator(), ws.ID, "mel@acme.example", "", access.RoleMember); err != nil {
			t.Fatal(err)
		}
		mel := signIn(t, sys, "mel@acme.example")
		o := signIn(t, sys, owner.Email)
		up := "/console/w/" + ws.ID + "/apps/" + app.ID + "/users/"
		page := o.get(up+ann, http.StatusOK).body
		for _, want := range []string{"Passkeys", "Social sign-in identities", "Deactivate", "Delete this user"} {
			if !strings.Contains(page, want) {
				t.Errorf("the user page lacks %q", want)
			}
		}
		if b := mel.get(up+ann, http.StatusOK).body; strings.Contains(b, "Delete this user") {
			t.Error("a member is offered to delete a user")
		}
		mel.post(up+ann+"/status", url.Values{"status": {"inactive"}}, http.StatusForbidden)
		mel.post(up+ann+"/delete", nil, http.StatusForbidden)

		o.post(up+ann+"/status", url.Values{"status": {"inactive"}}, http.StatusSeeOther)
		if u, _ := sys.Users.Get(ctx, access.Operator(), app, ann); u.Status != "inactive" {
			t.Fatalf("status %s", u.Status)
		}
		o.post(up+ann+"/status", url.Values{"status": {"sleeping"}}, http.StatusBadRequest)
		o.post(up+ann+"/delete", nil, http.StatusSeeOther)
		if _, err := sys.Users.Get(ctx, access.Operator(), app, ann); err == nil {
			t.Fatal("the user is still there")
		}
		o.post(up+ann+"/delete", nil, http.StatusNotFound)

		// Deleting an app: the name typed again, and a recent sign-in.
		ap := "/console/w/" + ws.ID + "/apps/" + app.ID
		if a := o.post(ap+"/delete", url.Values{"confirm": {"shop"}}, http.StatusBadRequest); !strings.Contains(a.body, "type the app") {
			t.Fatalf("wrong confirmation: %s", a.body)
		}
		sys.Clock.Advance(console.ReauthWindow + time.Minute)
		o.post(up+bob+"/delete", nil, http.StatusForbidden)
		o.post(ap+"/delete", url.Values{"confirm": {app.Name}}, http.StatusForbidden)
		if _, err := sys.Tenants.GetApp(ctx, app.ID); err != nil {
			t.Fatal("the app went without re-authentication")
		}
		o = signIn(t, sys, owner.Email)
		o.post(ap+"/delete", url.Values{"confirm": {app.Name}}, http.StatusSeeOther)
		if _, err := sys.Tenants.GetApp(ctx, app.ID); err == nil {
			t.Fatal("the app is still there")
		}
		for action, want := range map[string]int{"user.status_changed": 1, "user.deleted": 1, "app.deleted": 1} {
			if got := auditCount(t, sys, ws.ID, action); got != want {
				t.Errorf("%d %s, want %d", got, action, want)
			}
		}
	})
}

// codeSignIn signs email in by e-mail code from a fresh browser; with
// a second factor it returns the TOTP page instead of a session.
func codeSignIn(t *testing.T, sys *servertest.System, email string) answer {
	t.Helper()
	a := send(t, sys, "", "POST", "/console/signin", url.Values{"email": {email}}, nil)
	m := handleField.FindStringSubmatch(a.body)
	if m == nil {
		t.Fatalf("no handle: %s", a.body)
	}
	code, _ := sys.Mail.LastCode(email) // a notice may have come after it
	return send(t, sys, "", "POST", "/console/signin/verify", url.Values{"handle": {m[1]}, "code": {code}, "email": {email}}, nil)
}

func cookieOf(a answer) string {
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		if c.Name == web.CookieName {
			return c.Value
		}
	}
	return ""
}

func TestConsoleTOTP(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ws, owner := sys.Workspace(t, "Acme")
		a := codeSignIn(t, sys, owner.Email)
		o := &operator{t: t, sys: sys, cookie: cookieOf(a)}
		page := o.get("/console/account", http.StatusOK).body
		o.csrf = csrfField.FindStringSubmatch(page)[1]
		en := o.post("/console/account/totp", nil, http.StatusOK)
		secret := regexp.MustCompile(`id="totp-secret" class="mono">([A-Z2-7]+)<`).FindStringSubmatch(en.body)
		id := regexp.MustCompile(`name="id" value="([0-9a-f-]+)"`).FindStringSubmatch(en.body)
		if secret == nil || id == nil || !strings.Contains(en.body, `src="data:image/png;base64,`) {
			t.Fatalf("enrolment page:\n%s", en.body)
		}
		o.post("/console/account/totp/verify", url.Values{"id": {id[1]}, "code": {"000000"}}, http.StatusUnprocessableEntity)
		code, _ := totp.GenerateCode(secret[1], sys.Clock.Now())
		o.post("/console/account/totp/verify", url.Values{"id": {id[1]}, "code": {code}}, http.StatusSeeOther)
		if !strings.Contains(o.get("/console/account", http.StatusOK).body, "Remove authenticator app") {
			t.Fatal("the app is not listed")
		}

		// The next sign-in asks for it.
		sys.Clock.Advance(time.Minute)
		a = codeSignIn(t, sys, owner.Email)
		ch := regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(a.body)
		if a.status != http.StatusOK || ch == nil || cookieOf(a) != "" {
			t.Fatalf("second factor page: %d %s", a.status, a.body)
		}
		if b := send(t, sys, "", "POST", "/console/signin/totp", url.Values{"challenge": {ch[1]}, "first": {"email_code"}, "code": {"000000"}}, nil); b.status != http.StatusUnprocessableEntity || cookieOf(b) != "" {
			t.Fatalf("wrong TOTP: %d", b.status)
		}
		if b := send(t, sys, "", "POST", "/console/signin/totp", url.Values{"challenge": {ch[1]}, "first": {"link"}, "code": {"000000"}}, nil); b.status != http.StatusBadRequest {
			t.Fatalf("forged first factor: %d", b.status)
		}
		code, _ = totp.GenerateCode(secret[1], sys.Clock.Now())
		b := send(t, sys, "", "POST", "/console/signin/totp", url.Values{"challenge": {ch[1]}, "first": {"email_code"}, "code": {code}}, nil)
		if b.status != http.StatusSeeOther || cookieOf(b) == "" {
			t.Fatalf("right TOTP: %d %s", b.status, b.body)
		}
		list, _ := sys.Tenants.AuditLog(context.Background(), access.Operator(), ws.ID, tenant.AuditFilter{Action: "console.signed_in", Limit: 1})
		if len(list) != 1 || !strings.Contains(string(list[0].After), `"email_code+totp"`) {
			t.Fatalf("audit: %+v", list)
		}
		// Removing it needs a recent sign-in.
		o2 := &operator{t: t, sys: sys, cookie: cookieOf(b)}
		o2.csrf = csrfField.FindStringSubmatch(o2.get("/console/account", http.StatusOK).body)[1]
		tid := regexp.MustCompile(`/console/account/totp/([0-9a-f-]+)/delete`).FindStringSubmatch(o2.get("/console/account", http.StatusOK).body)
		sys.Clock.Advance(console.ReauthWindow + time.Minute)
		o2.post("/console/account/totp/"+tid[1]+"/delete", nil, http.StatusForbidden)
	})
}

func TestConsoleMessages(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		if _, err := sys.Tenants.AddMember(ctx, access.Operator(), ws.ID, "mel@acme.example", "", access.RoleMember); err != nil {
			t.Fatal(err)
		}
		o := signIn(t, sys, owner.Email)
		mel := signIn(t, sys, "mel@acme.example")
		mp := "/console/w/" + ws.ID + "/apps/" + app.ID + "/messages"
		if b := o.get(mp, http.StatusOK).body; !strings.Contains(b, "postmark") || !strings.Contains(b, "login_code") {
			t.Fatalf("messages page:\n%s", b)
		}
		if b := mel.get(mp, http.StatusOK).body; strings.Contains(b, "Send test") || strings.Contains(b, "login_code") {
			t.Fatal("a member is offered changes or the templates (Manage, as in the API)")
		}

		// A provider: a missing required setting is refused; a secret shows as its hint only.
		o.post(mp+"/providers/postmark", url.Values{"enabled.shown": {"1"}, "enabled": {"on"}, "config.from": {"Acme <no-reply@acme.example>"}}, http.StatusBadRequest)
		o.post(mp+"/providers/postmark", url.Values{"enabled.shown": {"1"}, "enabled": {"on"}, "config.from": {"Acme <no-reply@acme.example>"},
			"config.server_token": {"pm-secret-token-1234"}}, http.StatusSeeOther)
		b := o.get(mp, http.StatusOK).body
		if strings.Contains(b, "pm-secret-token-1234") || !strings.Contains(b, "1234") {
			t.Fatal("the secret is shown, or its hint is not")
		}
		// Saving the form as shown (the hint sent back) keeps the secret.
		hint := regexp.MustCompile(`name="config.server_token" value="([^"]+)"`).FindStringSubmatch(b)
		o.post(mp+"/providers/postmark", url.Values{"enabled.shown": {"1"}, "enabled": {"on"}, "config.from": {"Acme <no-reply@acme.example>"},
			"config.server_token": {html.UnescapeString(hint[1])}}, http.StatusSeeOther)
		list, _ := sys.Outbound.Providers.List(ctx, access.Operator(), app.ID)
		for _, p := range list {
			if p.Slug == "postmark" && (!p.Enabled || p.Config["server_token"] != html.UnescapeString(hint[1])) {
				t.Fatalf("postmark after saving the hint: %+v", p)
			}
		}
		mel.post(mp+"/providers/postmark", url.Values{"enabled.shown": {"1"}}, http.StatusForbidden)
		o.post(mp+"/providers/nosuch", nil, http.StatusNotFound)

		// A template: preview saves nothing; save, then delete.
		tp := mp + "/templates/login_code"
		o.get(tp+"?channel=email&locale=de", http.StatusOK)
		o.get(mp+"/templates/nosuch", http.StatusNotFound)
		form := url.Values{"channel": {"email"}, "locale": {"en"}, "subject": {"Your {{.AppName}} code"}, "text": {"Code: {{.Code}}"}, "html": {"<p>Code: {{.Code}}</p>"}}
		form.Set("action", "preview")
		if a := o.post(tp, form, http.StatusOK); !strings.Contains(a.body, "Subject:</strong> Your Shop code") {
			t.Fatalf("preview:\n%s", a.body)
		}
		if n := auditCount(t, sys, ws.ID, "message_template."); n != 0 {
			t.Fatal("a preview saved")
		}
		bad := url.Values{"channel": {"email"}, "locale": {"en"}, "subject": {"x"}, "text": {"{{.Nope}}"}, "action": {"save"}}
		o.post(tp, bad, http.StatusBadRequest)
		form.Set("action", "save")
		o.post(tp, form, http.StatusSeeOther)
		if b := o.get(tp+"?channel=email&locale=en", http.StatusOK).body; !strings.Contains(b, "The app's own template") {
			t.Fatalf("the override is not shown as the app's:\n%s", b[strings.Index(b, "<main"):])
		}
		mel.post(tp, form, http.StatusForbidden)
		form.Set("action", "delete")
		o.post(tp, form, http.StatusSeeOther)
		for action, want := range map[string]int{"message_provider.updated": 1, "message_template.saved": 1, "message_template.deleted": 1} {
			if got := auditCount(t, sys, ws.ID, action); got != want {
				t.Errorf("%d %s, want %d", got, action, want)
			}
		}
	})
}

func TestConsoleRequireSecondFactor(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, owner := sys.Workspace(t, "Acme")
		if _, err := sys.Tenants.AddMember(ctx, access.Operator(), ws.ID, "ada@acme.example", "", access.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		// A code-only session cannot turn it on (it would shut itself out).
		weak := &operator{t: t, sys: sys, cookie: cookieOf(codeSignIn(t, sys, owner.Email))}
		weak.csrf = csrfField.FindStringSubmatch(weak.get("/console/account", http.StatusOK).body)[1]
		weak.post("/console/w/"+ws.ID+"/security", url.Values{"require": {"on"}}, http.StatusBadRequest)
		// A link session (the server's command line) can.
		o := signIn(t, sys, owner.Email)
		o.post("/console/w/"+ws.ID+"/security", url.Values{"require": {"on"}}, http.StatusSeeOther)
		if n := auditCount(t, sys, ws.ID, "workspace.updated"); n != 1 {
			t.Fatalf("%d workspace.updated", n)
		}
		// Now a code-only session reads nothing of the workspace.
		if a := weak.get("/console/w/"+ws.ID, http.StatusForbidden); !strings.Contains(a.body, "Second factor required") {
			t.Fatal("no explanation")
		}
		weak.get("/console/w/"+ws.ID+"/members", http.StatusForbidden)
		ada := &operator{t: t, sys: sys, cookie: cookieOf(codeSignIn(t, sys, "ada@acme.example"))}
		ada.get("/console/w/"+ws.ID, http.StatusForbidden)
		// The strong session still works, and turns it off again.
		o.get("/console/w/"+ws.ID, http.StatusOK)
		o.post("/console/w/"+ws.ID+"/security", url.Values{}, http.StatusSeeOther)
		ada.get("/console/w/"+ws.ID, http.StatusOK)
	})
}

// TestConsoleUserProfileMFAAndHistory: the user page edits the profile and
// metadata (as PATCH /v1/{app}/users/{id}: same checks, one audit entry
// naming the fields, not their values), resets second factors after a
// recent sign-in, and shows the sign-in history and the changes made.
func TestConsoleUserProfileMFAAndHistory(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", func(s *tenant.AppSettings) {
			s.MetaSchema = &appuser.Schema{{Name: "Company", FieldName: "company", FieldType: appuser.FieldString},
				{Name: "Seats", FieldName: "seats", FieldType: appuser.FieldInteger}}
		})
		ann := createUser(t, sys, app, "ann@shop.example")
		if _, err := sys.Tenants.AddMember(ctx, access.Operator(), ws.ID, "mel@acme.example", "", access.RoleMember); err != nil {
			t.Fatal(err)
		}
		mel := signIn(t, sys, "mel@acme.example")
		o := signIn(t, sys, owner.Email)
		up := "/console/w/" + ws.ID + "/apps/" + app.ID + "/users/" + ann
		get := func() appuser.User {
			u, err := sys.Users.Get(ctx, access.Operator(), app, ann)
			if err != nil {
				t.Fatal(err)
			}
			return u
		}

		// Profile and metadata. The form carries the user's version, read
		// here as the page shows it.
		profile := func(op *operator, email, meta string, want int) answer {
			t.Helper()
			return op.post(up+"/profile", url.Values{"email": {email}, "phone": {""}, "meta": {meta},
				"version": {get().UpdatedAt.UTC().Format(time.RFC3339Nano)}}, want)
		}
		if b := o.get(up, http.StatusOK).body; !strings.Contains(b, `name="version" value="`+get().UpdatedAt.UTC().Format(time.RFC3339Nano)+`"`) {
			t.Fatal("the profile form does not carry the user's version")
		}
		acme := "{\r\n  \"company\": \"Acme\",\r\n  \"seats\": 5\r\n}"
		profile(mel, "ann@shop.example", acme, http.StatusForbidden)
		profile(mel, "ann@shop.example", "{}", http.StatusForbidden) // nothing changed: still not theirs
		if b := mel.get(up, http.StatusOK).body; strings.Contains(b, "Save profile") || strings.Contains(b, "Reset second factors") {
			t.Error("a member is offered to edit the profile or reset second factors")
		}
		profile(o, "ann@shop.example", acme, http.StatusSeeOther)
		if u := get(); u.Meta["company"] != "Acme" || u.Meta["seats"] != 5.0 || u.Email != "ann@shop.example" {
			t.Fatalf("after saving: %+v", u)
		}
		profile(o, "ann@shop.example", acme, http.StatusSeeOther) // the same again: no change, no entry
		// A form made before the user changed is not saved over the change.
		stale := get().UpdatedAt.UTC().Format(time.RFC3339Nano)
		sys.Clock.Advance(time.Second)
		if _, err := sys.Users.Update(ctx, access.Operator(), app, ann, appuser.UpdateInput{Meta: map[string]any{"seats": 7}}); err != nil {
			t.Fatal(err)
		}
		if a := o.post(up+"/profile", url.Values{"email": {"ann@shop.example"}, "phone": {""}, "meta": {acme}, "version": {stale}},
			http.StatusConflict); !strings.Contains(a.body, "changed since you opened the page") {
			t.Errorf("a stale form: %s", a.body)
		}
		if u := get(); u.Meta["seats"] != 7.0 {
			t.Fatalf("a stale form overwrote the user: %+v", u)
		}
		profile(o, "ann.b@shop.example", `{"seats": 6}`, http.StatusSeeOther)
		if u := get(); u.Meta["company"] != nil || u.Meta["seats"] != 6.0 || u.Email != "ann.b@shop.example" || u.EmailVerified {
			t.Fatalf("after the second save: %+v", u)
		}
		entries, err := sys.Tenants.AuditLog(ctx, access.Operator(), ws.ID, tenant.AuditFilter{Action: "user.updated", Limit: 10})
		if err != nil || len(entries) != 3 {
			t.Fatalf("%d user.updated entries (%v), want 3 (two saves here, one by the operator)", len(entries), err)
		}
		if got := string(entries[0].After); got != `{"changed":["email","user_meta.company","user_meta.seats"]}` || entries[0].TargetID != ann {
			t.Errorf("the entry of the second save: %s", got)
		}
		// The API's statuses: 400 for a form that is not JSON or an
		// address that is not one, 422 for metadata against the schema.
		for _, tc := range []struct {
			email, meta, want string
			status            int
		}{
			{"ann.b@shop.example", `{"company": `, "must be a JSON object", 400},
			{"ann.b@shop.example", `["x"]`, "must be a JSON object", 400},
			{"ann.b@shop.example", `{"nickname": "A"}`, "metadata nickname", 422},
			{"ann.b@shop.example", `{"seats": "many"}`, "metadata seats", 422},
			{"not an address", `{"seats": 6}`, "Not saved", 400},
		} {
			a := profile(o, tc.email, tc.meta, tc.status)
			if !strings.Contains(html.UnescapeString(a.body), tc.want) || !strings.Contains(a.body, html.EscapeString(tc.meta)) {
				t.Errorf("%s / %s: the form again with %q and the input; got\n%s", tc.email, tc.meta, tc.want, a.body)
			}
		}
		if u := get(); u.Meta["seats"] != 6.0 || u.Email != "ann.b@shop.example" {
			t.Fatalf("a refused save changed the user: %+v", u)
		}
		// A key the schema does not declare (any more) is left alone while
		// untouched, and can be removed.
		row, err := sys.DB.GetAppUser(ctx, app.ID, ann)
		if err != nil {
			t.Fatal(err)
		}
		row.Meta, row.UpdatedAt = []byte(`{"seats": 6, "legacy": 1}`), sys.Clock.Now().Add(2*time.Second)
		if _, err := sys.DB.UpdateAppUser(ctx, row); err != nil {
			t.Fatal(err)
		}
		profile(o, "ann.b@shop.example", `{"seats": 8, "legacy": 1}`, http.StatusSeeOther)
		if u := get(); u.Meta["seats"] != 8.0 || u.Meta["legacy"] != 1.0 {
			t.Fatalf("with an undeclared key kept: %+v", u.Meta)
		}
		profile(o, "ann.b@shop.example", `{"seats": 8}`, http.StatusSeeOther)
		if u := get(); u.Meta["legacy"] != nil || u.Meta["seats"] != 8.0 {
			t.Fatalf("the undeclared key was not removed: %+v", u.Meta)
		}

		// Second factors: listed, reset only after a recent sign-in.
		now := sys.Clock.Now()
		if err := sys.DB.CreateTOTP(ctx, store.TOTPEnrollment{ID: "totp-1", AppID: app.ID, AppUserID: ann, Name: "Old phone",
			SecretSealed: []byte("sealed"), Verified: true, CreatedAt: now, VerifiedAt: &now}); err != nil {
			t.Fatal(err)
		}
		if err := sys.DB.ReplaceBackupCodes(ctx, app.ID, ann, []string{"b1", "b2"}, []string{"h1", "h2"}, now); err != nil {
			t.Fatal(err)
		}
		if b := o.get(up, http.StatusOK).body; !strings.Contains(b, "Old phone") || !strings.Contains(b, "Backup codes left: 2.") {
			t.Fatalf("the user page does not list the second factors:\n%s", b)
		}
		mel.post(up+"/mfa/reset", nil, http.StatusForbidden)
		sys.Clock.Advance(console.ReauthWindow + time.Minute)
		o.post(up+"/mfa/reset", nil, http.StatusForbidden) // the re-authentication page
		if st, _ := sys.DB.GetMFAState(ctx, ann); st.VerifiedTOTP != 1 || st.BackupCodes != 2 {
			t.Fatalf("reset without a recent sign-in: %+v", st)
		}
		// A new address redirects sign-in codes: it needs a recent sign-in
		// too; metadata does not.
		profile(o, "ann.c@shop.example", `{"seats": 8}`, http.StatusForbidden)
		profile(o, "ann.b@shop.example", `{"seats": 9}`, http.StatusSeeOther)
		if u := get(); u.Email != "ann.b@shop.example" || u.Meta["seats"] != 9.0 {
			t.Fatalf("after an old session's saves: %+v", u)
		}
		o = signIn(t, sys, owner.Email)
		o.post(up+"/mfa/reset", nil, http.StatusSeeOther)
		if st, _ := sys.DB.GetMFAState(ctx, ann); st.VerifiedTOTP != 0 || st.BackupCodes != 0 {
			t.Fatalf("after the reset: %+v", st)
		}
		if got := auditCount(t, sys, ws.ID, "user.mfa_reset"); got != 1 {
			t.Errorf("%d user.mfa_reset entries, want 1", got)
		}
		if msg, ok := sys.Mail.Last("ann.b@shop.example"); !ok || !strings.Contains(strings.ToLower(msg.Subject+msg.Text), "authenticator") {
			t.Errorf("the user was not told of the reset: %+v", msg)
		}

		// Sign-in history: live and ended sessions; the changes made.
		t0 := sys.Clock.Now()
		for i, s := range []store.Session{
			{ID: "s-old", Method: "email_otp", IP: "192.0.2.1", UserAgent: "Old browser", CreatedAt: t0.Add(-48 * time.Hour), ExpiresAt: t0.Add(-24 * time.Hour)},
			{ID: "s-revoked", Method: "magic_link", IP: "192.0.2.2", UserAgent: "Firefox", CreatedAt: t0.Add(-2 * time.Hour), ExpiresAt: t0.Add(time.Hour)},
			{ID: "s-live", Method: "passkey", IP: "192.0.2.3", UserAgent: "Safari", CreatedAt: t0.Add(-time.Hour), ExpiresAt: t0.Add(time.Hour)},
		} {
			s.AppID, s.AppUserID, s.LastActiveAt = app.ID, ann, s.CreatedAt
			if err := sys.DB.CreateSession(ctx, s); err != nil {
				t.Fatal(i, err)
			}
		}
		if err := sys.DB.RevokeSession(ctx, app.ID, ann, "s-revoked", t0.Add(-90*time.Minute)); err != nil {
			t.Fatal(err)
		}
		page := o.get(up, http.StatusOK).body
		history := page[strings.Index(page, "Recent sign-ins"):]
		order := []string{"Safari", "live", "Firefox", "revoked", "Old browser", "expired"}
		for i := 1; i < len(order); i++ {
			if a, b := strings.Index(history, order[i-1]), strings.Index(history, order[i]); a < 0 || b < a {
				t.Fatalf("sign-in history: %q then %q:\n%s", order[i-1], order[i], history)
			}
		}
		for _, want := range []string{"user.mfa_reset", "user.updated", "?target_id=" + ann} {
			if !strings.Contains(history, want) {
				t.Errorf("the changes section lacks %q", want)
			}
		}
		if b := mel.get(up, http.StatusOK).body; !strings.Contains(b, "Recent sign-ins") || strings.Contains(b, "Changes by administrators") {
			t.Error("a member sees the sign-in history but not the audit log's entries")
		}
	})
}
