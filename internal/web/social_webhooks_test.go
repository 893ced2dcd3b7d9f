package web_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/console"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// auditEntries reads the workspace's audit entries of action, newest first.
func auditEntries(t *testing.T, sys *servertest.System, workspaceID, action string) []tenant.AuditEntry {
	t.Helper()
	list, err := sys.Tenants.AuditLog(context.Background(), access.Operator(), workspaceID, tenant.AuditFilter{Action: action, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// apiCall calls the JSON API with credential.
func apiCall(t *testing.T, sys *servertest.System, credential, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, sys.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+credential)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func jsonKeys(t *testing.T, b []byte) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return slices.Sorted(maps.Keys(m))
}

// TestConsoleSocialProviders: the app's social sign-in providers as a
// page, through the API's domain methods: listed with secrets as hints,
// added and changed as PUT does (the same refusals, the same audit
// entries), deleted after a recent sign-in; members read but change
// nothing; the client secret appears in no page, audit entry or log line.
func TestConsoleSocialProviders(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		if _, err := sys.Tenants.AddMember(ctx, access.Operator(), ws.ID, "mel@acme.example", "", access.RoleMember); err != nil {
			t.Fatal(err)
		}
		o := signIn(t, sys, owner.Email)
		mel := signIn(t, sys, "mel@acme.example")
		sp := "/console/w/" + ws.ID + "/apps/" + app.ID + "/social"
		const secret = "GOCSPX-console-test-secret-Zq9W"
		var pages []string // every page shown, checked for the secret at the end
		seen := func(a answer) answer { pages = append(pages, a.body); return a }

		// The page: nonce CSP, the redirect URI to register, linked from the app's navigation.
		a := seen(o.get(sp, http.StatusOK))
		checkHeaders(t, "social page", a)
		for _, want := range []string{sys.Social.RedirectURI(app.ID), "No social sign-in providers yet.", "Add Google", "Add Apple", "Add Microsoft",
			"Add GitHub", "Add OpenID", `href="` + sp + `" aria-current="page">Social sign-in</a>`} {
			if !strings.Contains(a.body, want) {
				t.Errorf("the social page lacks %q", want)
			}
		}
		if b := seen(o.get("/console/w/"+ws.ID+"/apps/"+app.ID+"/webhooks", http.StatusOK)).body; !strings.Contains(b, `href="`+sp+`">Social sign-in</a>`) {
			t.Error("the app's navigation does not link the social page")
		}
		if b := seen(mel.get(sp, http.StatusOK)).body; strings.Contains(b, "Add Google") || !strings.Contains(b, "can read the providers") {
			t.Error("a member is offered to add a provider")
		}

		google := url.Values{"type": {"google"}, "slug": {"google"}, "client_id": {"1234-abc.apps.googleusercontent.com"}, "client_secret": {secret},
			"enabled.shown": {"1"}, "enabled": {"on"}, "link_existing.shown": {"1"}}
		with := func(v url.Values, kv ...string) url.Values {
			v = maps.Clone(v)
			for i := 0; i < len(kv); i += 2 {
				if kv[i+1] == "" {
					v.Del(kv[i])
				} else {
					v.Set(kv[i], kv[i+1])
				}
			}
			return v
		}

		// Bad input: 400 with the API's reason; nothing saved, nothing audited,
		// and a secret typed into a refused form is not shown back.
		for name, c := range map[string]struct {
			form url.Values
			want string
		}{
			"unknown kind":          {with(google, "type", "myspace"), "type must be one of google, apple, microsoft, github, oidc"},
			"no client secret":      {with(google, "client_secret", ""), "client_secret is required for google providers"},
			"no client id":          {with(google, "client_id", ""), "client_id is required"},
			"another type's field":  {with(google, "issuer", "https://id.example.com"), "issuer is not a setting of google providers"},
			"bad slug":              {with(google, "slug", "Big Corp"), "slug must be 1 to 40 lower-case letters"},
			"bad colour":            {with(google, "color", "red"), "color must be a colour as #rrggbb"},
			"bad scopes":            {with(google, "scopes", `openid "email"`), "scopes must be OAuth scope tokens"},
			"issuer not https":      {url.Values{"type": {"oidc"}, "slug": {"corp"}, "client_id": {"gh"}, "client_secret": {secret}, "issuer": {"ftp://id.example.com"}}, "issuer"},
			"apple key not a key":   {url.Values{"type": {"apple"}, "slug": {"apple"}, "client_id": {"com.example.web"}, "team_id": {"ABCDE12345"}, "key_id": {"KEY1234567"}, "private_key": {secret}}, "private_key must be the contents of the .p8 file"},
			"microsoft tenant odd":  {url.Values{"type": {"microsoft"}, "slug": {"ms"}, "client_id": {"x"}, "client_secret": {secret}, "tenant": {"not a tenant!"}}, "tenant must be common"},
			"github missing secret": {url.Values{"type": {"github"}, "slug": {"github"}, "client_id": {"Iv1.abc"}}, "client_secret is required for github providers"},
		} {
			a := seen(o.post(sp, c.form, http.StatusBadRequest))
			if !strings.Contains(html.UnescapeString(a.body), c.want) || !strings.Contains(a.body, `role="alert"`) {
				t.Errorf("%s: the page does not say %q:\n%s", name, c.want, a.body[strings.Index(a.body, "<main"):])
			}
			if strings.Contains(a.body, secret) {
				t.Errorf("%s: a refused form shows the secret typed", name)
			}
		}
		// What the refused form had is kept (but the secret).
		a = seen(o.post(sp, with(google, "color", "red", "name", "Sign in with G"), http.StatusBadRequest))
		if !strings.Contains(a.body, `value="Sign in with G"`) || !strings.Contains(a.body, "type them again") {
			t.Errorf("a refused form lost what was typed:\n%s", a.body[strings.Index(a.body, "<main"):])
		}
		if n := auditCount(t, sys, ws.ID, "oauth_provider."); n != 0 {
			t.Fatalf("refused forms wrote %d audit entries", n)
		}

		// CSRF: without the token, with another's, from another site: refused, nothing changes.
		for name, c := range map[string]struct {
			form   url.Values
			header map[string]string
		}{
			"no token":    {form: google},
			"wrong token": {form: with(google, "csrf", mel.csrf)},
			"cross-site":  {form: with(google, "csrf", o.csrf), header: map[string]string{"Sec-Fetch-Site": "cross-site"}},
		} {
			if a := send(t, sys, o.cookie, "POST", sp, c.form, c.header); a.status != http.StatusForbidden {
				t.Errorf("%s: %d, want 403", name, a.status)
			}
		}
		// A member is refused, whatever the page showed.
		mel.post(sp, google, http.StatusForbidden)
		if list, _ := sys.Social.List(ctx, access.Operator(), app.ID); len(list) != 0 {
			t.Fatalf("a refused POST added %+v", list)
		}

		// Added: as PUT (link_existing unticked is false, as the API's false).
		a = o.post(sp, google, http.StatusSeeOther)
		if a.header.Get("Location") != sp+"?notice=saved" {
			t.Fatalf("after adding: %v", a.header.Get("Location"))
		}
		a = seen(o.get(sp+"?notice=saved", http.StatusOK))
		if !strings.Contains(a.body, "Saved.") || !strings.Contains(a.body, "****Zq9W") || strings.Contains(a.body, secret) {
			t.Fatal("the page shows the secret, or not its hint")
		}
		st, body := apiCall(t, sys, sys.AppSecret(t, app.ID), "GET", "/v1/apps/"+app.ID+"/oauth_providers", "")
		if st != http.StatusOK || !strings.Contains(body, `"client_secret":"****Zq9W"`) || !strings.Contains(body, `"link_existing":false`) ||
			!strings.Contains(body, `"enabled":true`) || strings.Contains(body, secret) {
			t.Fatalf("the API reads %d %s", st, body)
		}
		mel.post(sp, google, http.StatusForbidden) // the role first, even for a slug in use
		// The add form does not replace a provider by surprise.
		if a := seen(o.post(sp, with(google, "client_id", "other"), http.StatusBadRequest)); !strings.Contains(a.body, "already a provider") {
			t.Fatalf("re-adding google: %s", a.body)
		}

		// Changed: the form as shown (the hint sent back keeps the secret), renamed and disabled.
		hint := regexp.MustCompile(`name="client_secret" value="([^"]*)"`).FindStringSubmatch(a.body)
		if hint == nil || html.UnescapeString(hint[1]) != "****Zq9W" {
			t.Fatalf("the edit form's secret field: %v", hint)
		}
		edit := url.Values{"type": {"google"}, "name": {"Google Workspace"}, "client_id": {"1234-abc.apps.googleusercontent.com"},
			"client_secret": {html.UnescapeString(hint[1])}, "enabled.shown": {"1"}, "link_existing.shown": {"1"}, "link_existing": {"on"}}
		mel.post(sp+"/google", edit, http.StatusForbidden)
		if a := send(t, sys, o.cookie, "POST", sp+"/google", edit, nil); a.status != http.StatusForbidden {
			t.Fatalf("an update without the CSRF token: %d", a.status)
		}
		o.post(sp+"/google", edit, http.StatusSeeOther)
		list, err := sys.Social.List(ctx, access.Operator(), app.ID)
		if err != nil || len(list) != 1 || list[0].Enabled || list[0].Name != "Google Workspace" || !list[0].LinkExisting || list[0].Settings["client_secret"] != "****Zq9W" {
			t.Fatalf("after the change: %v %+v", err, list)
		}
		// A refused change of an existing provider: its form shows the hint, never what was typed.
		a = seen(o.post(sp+"/google", with(edit, "client_secret", "a-brand-new-secret-123456", "color", "blue"), http.StatusBadRequest))
		if strings.Contains(a.body, "a-brand-new-secret-123456") || !strings.Contains(a.body, "color must be") {
			t.Fatalf("refused change:\n%s", a.body)
		}

		// The audit entries are the API's: created, then updated with before
		// and after (the fields that changed: the secret kept is not one).
		created := auditEntries(t, sys, ws.ID, "oauth_provider.created")
		updated := auditEntries(t, sys, ws.ID, "oauth_provider.updated")
		if len(created) != 1 || len(updated) != 1 {
			t.Fatalf("audit: %d created, %d updated", len(created), len(updated))
		}
		u := updated[0]
		if u.ActorKind != string(access.KindConsole) || u.MemberID != owner.ID || u.TargetType != "oauth_provider" || u.TargetID != "google" || u.AppID != app.ID ||
			!strings.Contains(string(u.Before), `"enabled":true`) || !strings.Contains(string(u.After), `"enabled":false`) ||
			!strings.Contains(string(u.After), `"name":"Google Workspace"`) || strings.Contains(string(u.After), "client_secret") {
			t.Fatalf("oauth_provider.updated: %+v\nbefore %s\nafter %s", u, u.Before, u.After)
		}
		// The API's PUT writes the same entry (the same keys, the same actions).
		st, body = apiCall(t, sys, sys.AppSecret(t, app.ID), "PUT", "/v1/apps/"+app.ID+"/oauth_providers/corp",
			`{"type":"oidc","client_id":"gh","client_secret":"`+secret+`","issuer":"https://127.0.0.1/realms/acme"}`)
		if st != http.StatusCreated {
			t.Fatalf("API PUT: %d %s", st, body)
		}
		created = auditEntries(t, sys, ws.ID, "oauth_provider.created")
		if len(created) != 2 || !slices.Equal(jsonKeys(t, created[0].After), jsonKeys(t, created[1].After)) {
			t.Fatalf("the console's and the API's entries differ: %s vs %s", created[0].After, created[1].After)
		}
		a = seen(o.get(sp, http.StatusOK))
		if !strings.Contains(a.body, `value="https://127.0.0.1/realms/acme"`) || !strings.Contains(a.body, "Delete corp") {
			t.Fatal("the API's provider is not on the page with its issuer")
		}

		// No change on GET: reading every page, or an action's address, writes nothing.
		before := auditCount(t, sys, ws.ID, "")
		for _, p := range []string{sp, sp + "/google", sp + "/google/delete", sp + "?notice=provider-deleted"} {
			if a := send(t, sys, o.cookie, "GET", p, nil, nil); a.status == http.StatusSeeOther {
				t.Errorf("GET %s: %d", p, a.status)
			}
		}
		if auditCount(t, sys, ws.ID, "") != before {
			t.Fatal("a GET wrote an audit entry")
		}

		// Delete: the box ticked, a recent sign-in, the role; then gone, audited.
		mel.post(sp+"/google/delete", url.Values{"confirm": {"on"}}, http.StatusForbidden)
		if a := send(t, sys, o.cookie, "POST", sp+"/google/delete", url.Values{"confirm": {"on"}}, nil); a.status != http.StatusForbidden {
			t.Fatalf("a delete without the CSRF token: %d", a.status)
		}
		if a := seen(o.post(sp+"/google/delete", nil, http.StatusBadRequest)); !strings.Contains(a.body, "tick the box") {
			t.Fatalf("unconfirmed delete: %s", a.body)
		}
		sys.Clock.Advance(console.ReauthWindow + time.Minute)
		if a := o.post(sp+"/google/delete", url.Values{"confirm": {"on"}}, http.StatusForbidden); !strings.Contains(a.body, "Sign in again") {
			t.Fatalf("a stale session deleted: %s", a.body)
		}
		// Changing a provider needs a recent sign-in too.
		if a := o.post(sp+"/google", url.Values{"type": {"google"}, "client_id": {"changed.apps.googleusercontent.com"}},
			http.StatusForbidden); !strings.Contains(a.body, "Sign in again") {
			t.Fatalf("a stale session changed a provider: %s", a.body)
		}
		if list, _ := sys.Social.List(ctx, access.Operator(), app.ID); len(list) != 2 || auditCount(t, sys, ws.ID, "oauth_provider.deleted") != 0 {
			t.Fatal("a refused delete deleted")
		}
		o = signIn(t, sys, owner.Email)
		a = o.post(sp+"/google/delete", url.Values{"confirm": {"on"}}, http.StatusSeeOther)
		if a.header.Get("Location") != sp+"?notice=provider-deleted" {
			t.Fatalf("after deleting: %s", a.header.Get("Location"))
		}
		if b := seen(o.get(sp+"?notice=provider-deleted", http.StatusOK)).body; !strings.Contains(b, "Provider deleted") || strings.Contains(b, "Delete google") {
			t.Fatal("the deleted provider is still listed")
		}
		o.post(sp+"/google/delete", url.Values{"confirm": {"on"}}, http.StatusNotFound)
		deleted := auditEntries(t, sys, ws.ID, "oauth_provider.deleted")
		if len(deleted) != 1 || deleted[0].TargetID != "google" || deleted[0].ActorKind != string(access.KindConsole) ||
			!strings.Contains(string(deleted[0].Before), `"name":"Google Workspace"`) || string(deleted[0].After) != "" && string(deleted[0].After) != "null" {
			t.Fatalf("oauth_provider.deleted: %+v before %s after %s", deleted, deleted[0].Before, deleted[0].After)
		}

		// The secret is nowhere: no page, no audit entry, no log line.
		for i, p := range pages {
			if strings.Contains(p, secret) {
				t.Fatalf("page %d shows the client secret", i)
			}
		}
		for _, e := range auditEntries(t, sys, ws.ID, "") {
			if strings.Contains(string(e.Before)+string(e.After), secret) {
				t.Fatalf("audit entry %s holds the secret", e.Action)
			}
		}
		if strings.Contains(sys.Logs.String(), secret) {
			t.Fatal("a log line holds the secret")
		}
		if !strings.Contains(sys.Logs.String(), "oauth provider changed") {
			t.Fatal("the change was not logged as the API's is")
		}
	})
}

// TestConsoleWebhookEditing: an endpoint's URL, events, retries,
// description and enabled flag changed as PATCH does, and the endpoint
// deleted as DELETE does, with the API's refusals and audit entries.
func TestConsoleWebhookEditing(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		if _, err := sys.Tenants.AddMember(ctx, access.Operator(), ws.ID, "mel@acme.example", "", access.RoleMember); err != nil {
			t.Fatal(err)
		}
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
		defer recv.Close()
		u := recv.URL + "/hook"
		ep, err := sys.Webhooks.Create(ctx, access.Operator(), app.ID, webhook.Input{URL: &u, EventTypes: &[]string{"user.created", "verification.*"}})
		if err != nil {
			t.Fatal(err)
		}
		o := signIn(t, sys, owner.Email)
		mel := signIn(t, sys, "mel@acme.example")
		wp := "/console/w/" + ws.ID + "/apps/" + app.ID + "/webhooks/" + ep.ID

		// The page: nonce CSP; the form shows the endpoint's settings, its
		// pattern kept among the API's event types.
		a := o.get(wp, http.StatusOK)
		checkHeaders(t, "endpoint page", a)
		for _, want := range []string{"Edit this endpoint", `name="url" value="` + u + `"`, `value="user.created" checked`, `value="verification.*" checked`,
			`value="user.updated">`, `value="some" checked`, "Delete endpoint"} {
			if !strings.Contains(a.body, want) {
				t.Errorf("the endpoint page lacks %q", want)
			}
		}
		if b := mel.get(wp, http.StatusOK).body; strings.Contains(b, "Save endpoint") || strings.Contains(b, "Delete endpoint") {
			t.Error("a member is offered to edit or delete the endpoint")
		}

		good := url.Values{"url": {recv.URL + "/v2"}, "description": {"CRM sync"}, "retry_limit": {"5"}, "enabled.shown": {"1"},
			"events": {"some"}, "event_types": {"user.created", "user.updated"}}
		with := func(kv ...string) url.Values {
			v := maps.Clone(good)
			for i := 0; i < len(kv); i += 2 {
				if kv[i+1] == "" {
					v.Del(kv[i])
				} else {
					v.Set(kv[i], kv[i+1])
				}
			}
			return v
		}
		// Bad input: 400 with the reason, the form keeping what was typed; nothing changes.
		for name, c := range map[string]struct {
			form url.Values
			want string
		}{
			"invalid URL":        {with("url", "ftp://hooks.example.com/x"), "url"},
			"no URL":             {with("url", " "), "url"},
			"no events":          {with("event_types", ""), "event_types must name at least one event"},
			"unknown event":      {with("event_types", "user.exploded"), `event_types contains an unknown event type "user.exploded"`},
			"retries too many":   {with("retry_limit", "99"), "retry_limit must be between 0 and 10"},
			"retries not number": {with("retry_limit", "lots"), "retry_limit must be a whole number"},
			"events mode":        {with("events", "most"), "events must be all or some"},
		} {
			a := o.post(wp, c.form, http.StatusBadRequest)
			if !strings.Contains(html.UnescapeString(a.body), c.want) || !strings.Contains(a.body, `role="alert"`) {
				t.Errorf("%s: the page does not say %q:\n%s", name, c.want, a.body[strings.Index(a.body, "<main"):])
			}
			if name == "unknown event" && !strings.Contains(a.body, `name="url" value="`+recv.URL+`/v2"`) {
				t.Errorf("%s: the form lost the URL typed", name)
			}
		}
		// CSRF and role: refused, nothing changes.
		if a := send(t, sys, o.cookie, "POST", wp, good, nil); a.status != http.StatusForbidden {
			t.Fatalf("an update without the CSRF token: %d", a.status)
		}
		if a := send(t, sys, o.cookie, "POST", wp, with("csrf", o.csrf), map[string]string{"Sec-Fetch-Site": "cross-site"}); a.status != http.StatusForbidden {
			t.Fatalf("a cross-site update: %d", a.status)
		}
		mel.post(wp, good, http.StatusForbidden)
		if got, _ := sys.Webhooks.Get(ctx, access.Operator(), app.ID, ep.ID); got.URL != u || auditCount(t, sys, ws.ID, "webhook.updated") != 0 {
			t.Fatalf("a refused update changed the endpoint: %+v", got.WebhookEndpoint)
		}

		// Saved: as PATCH, one webhook.updated entry with before and after.
		if a := o.post(wp, good, http.StatusSeeOther); a.header.Get("Location") != wp+"?notice=saved" {
			t.Fatalf("after saving: %s", a.header.Get("Location"))
		}
		got, err := sys.Webhooks.Get(ctx, access.Operator(), app.ID, ep.ID)
		if err != nil || got.URL != recv.URL+"/v2" || got.Description != "CRM sync" || got.RetryLimit != 5 || got.Enabled ||
			!slices.Equal(got.EventTypes, []string{"user.created", "user.updated"}) {
			t.Fatalf("after saving: %v %+v", err, got.WebhookEndpoint)
		}
		list := auditEntries(t, sys, ws.ID, "webhook.updated")
		if len(list) != 1 {
			t.Fatalf("%d webhook.updated entries", len(list))
		}
		e := list[0]
		if e.ActorKind != string(access.KindConsole) || e.MemberID != owner.ID || e.TargetType != "webhook" || e.TargetID != ep.ID ||
			!strings.Contains(string(e.Before), u) || !strings.Contains(string(e.After), recv.URL+"/v2") ||
			!strings.Contains(string(e.Before), `"enabled":true`) || !strings.Contains(string(e.After), `"enabled":false`) {
			t.Fatalf("webhook.updated: %+v\nbefore %s\nafter %s", e, e.Before, e.After)
		}
		// The API's PATCH and the console write the same entry for the same
		// change: the API enables it, the console disables it again.
		st, body := apiCall(t, sys, sys.AppSecret(t, app.ID), "PATCH", "/v1/apps/"+app.ID+"/webhooks/"+ep.ID, `{"webhook":{"enabled":true}}`)
		if st != http.StatusOK {
			t.Fatalf("API PATCH: %d %s", st, body)
		}
		o.post(wp, good, http.StatusSeeOther)
		list = auditEntries(t, sys, ws.ID, "webhook.updated")
		if len(list) != 3 || string(list[0].After) != string(list[1].Before) || string(list[0].Before) != string(list[1].After) ||
			string(list[0].After) != `{"enabled":false}` || list[0].ActorKind != string(access.KindConsole) || list[1].ActorKind == string(access.KindConsole) {
			t.Fatalf("the console's and the API's entries differ: %s %s vs %s %s", list[0].Before, list[0].After, list[1].Before, list[1].After)
		}
		// Every event: an empty list, as the API's (a field not on the form keeps its value).
		o.post(wp, url.Values{"events": {"all"}, "event_types": {"user.created"}}, http.StatusSeeOther)
		if got, _ := sys.Webhooks.Get(ctx, access.Operator(), app.ID, ep.ID); len(got.EventTypes) != 0 || got.Enabled || got.URL != recv.URL+"/v2" {
			t.Fatalf("every event: %+v", got.WebhookEndpoint)
		}
		if b := o.get(wp+"?notice=saved", http.StatusOK).body; !strings.Contains(b, "Saved.") || !strings.Contains(b, `value="all" checked`) {
			t.Fatal("the page does not show every event chosen")
		}

		// No change on GET.
		before := auditCount(t, sys, ws.ID, "")
		for _, p := range []string{wp, wp + "/delete"} {
			if a := send(t, sys, o.cookie, "GET", p, nil, nil); a.status == http.StatusSeeOther {
				t.Errorf("GET %s: %d", p, a.status)
			}
		}
		if auditCount(t, sys, ws.ID, "") != before {
			t.Fatal("a GET wrote an audit entry")
		}

		// Delete: the role, the token, the box, a recent sign-in; then gone.
		mel.post(wp+"/delete", url.Values{"confirm": {"on"}}, http.StatusForbidden)
		if a := send(t, sys, o.cookie, "POST", wp+"/delete", url.Values{"confirm": {"on"}}, nil); a.status != http.StatusForbidden {
			t.Fatalf("a delete without the CSRF token: %d", a.status)
		}
		if a := o.post(wp+"/delete", nil, http.StatusBadRequest); !strings.Contains(a.body, "tick the box") {
			t.Fatalf("unconfirmed delete: %s", a.body)
		}
		sys.Clock.Advance(console.ReauthWindow + time.Minute)
		if a := o.post(wp+"/delete", url.Values{"confirm": {"on"}}, http.StatusForbidden); !strings.Contains(a.body, "Sign in again") {
			t.Fatalf("a stale session deleted: %s", a.body)
		}
		// So does editing it (a new URL sends the users' data elsewhere).
		if a := o.post(wp, url.Values{"url": {"https://elsewhere.example/hook"}, "events": {"all"}}, http.StatusForbidden); !strings.Contains(a.body, "Sign in again") {
			t.Fatalf("a stale session edited the endpoint: %s", a.body)
		}
		if _, err := sys.Webhooks.Get(ctx, access.Operator(), app.ID, ep.ID); err != nil {
			t.Fatalf("a refused delete deleted: %v", err)
		}
		o = signIn(t, sys, owner.Email)
		a = o.post(wp+"/delete", url.Values{"confirm": {"on"}}, http.StatusSeeOther)
		lp := "/console/w/" + ws.ID + "/apps/" + app.ID + "/webhooks"
		if a.header.Get("Location") != lp+"?notice=webhook-deleted" {
			t.Fatalf("after deleting: %s", a.header.Get("Location"))
		}
		if b := o.get(lp+"?notice=webhook-deleted", http.StatusOK).body; !strings.Contains(b, "Endpoint deleted") || strings.Contains(b, recv.URL) {
			t.Fatal("the deleted endpoint is still listed")
		}
		if _, err := sys.Webhooks.Get(ctx, access.Operator(), app.ID, ep.ID); err == nil {
			t.Fatal("the endpoint is still there")
		}
		o.post(wp+"/delete", url.Values{"confirm": {"on"}}, http.StatusNotFound)
		o.get(wp, http.StatusNotFound)
		deleted := auditEntries(t, sys, ws.ID, "webhook.deleted")
		if len(deleted) != 1 || deleted[0].TargetID != ep.ID || deleted[0].ActorKind != string(access.KindConsole) || !strings.Contains(string(deleted[0].Before), recv.URL+"/v2") {
			t.Fatalf("webhook.deleted: %+v", deleted)
		}
		for _, e := range auditEntries(t, sys, ws.ID, "webhook.") {
			if strings.Contains(string(e.Before)+string(e.After), ep.Secret) || strings.Contains(string(e.Before)+string(e.After), "whsec_") {
				t.Fatalf("audit entry %s holds the signing secret", e.Action)
			}
		}
	})
}
