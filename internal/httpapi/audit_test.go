package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

// TestAuditLog: administrative actions through the API each write one
// audit entry, in their own transaction, with the actor, where from, and
// only the fields they changed, never a secret; owners and admins read the
// log with filters and pages, members may not; on both engines.
func TestAuditLog(t *testing.T) {
	forEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		ctx := t.Context()
		owner := map[string]string{"Authorization": "Bearer " + e.wsSecret, "User-Agent": "audit-test/1.0"}
		ws := "/v1/workspaces/" + e.ws.ID
		log := func(t *testing.T, query string, headers map[string]string) response {
			t.Helper()
			return e.do(t, "GET", ws+"/audit_log"+query, headers, nil)
		}
		entries := func(t *testing.T, r response) []map[string]any {
			t.Helper()
			if r.status != 200 {
				t.Fatalf("audit_log = %d %s", r.status, r.raw)
			}
			var out []map[string]any
			for _, v := range r.body["entries"].([]any) {
				out = append(out, v.(map[string]any))
			}
			return out
		}

		// A settings change: one entry with only what changed.
		if r := e.do(t, "PATCH", ws+"/apps/"+e.app.ID, owner, map[string]any{"mfa_policy": "optional", "name": "Demo"}); r.status != 200 {
			t.Fatalf("PATCH app = %d %s", r.status, r.raw)
		}
		got := entries(t, log(t, "?action=app.updated", owner))
		if len(got) != 1 {
			t.Fatalf("app.updated entries = %v; want one", got)
		}
		u := got[0]
		actor, _ := u["actor"].(map[string]any)
		target, _ := u["target"].(map[string]any)
		if !jsonEqual(u["before"], map[string]any{"mfa_policy": "off"}) || !jsonEqual(u["after"], map[string]any{"mfa_policy": "optional"}) {
			t.Errorf("before/after = %v / %v; want only mfa_policy (the unchanged name left out)", u["before"], u["after"])
		}
		if actor["kind"] != "workspace_secret" || actor["member_id"] != e.owner.ID || actor["user_agent"] != "audit-test/1.0" || actor["ip"] == "" ||
			target["type"] != "app" || target["id"] != e.app.ID || u["app_id"] != e.app.ID {
			t.Errorf("entry = %v", u)
		}
		if r := e.do(t, "GET", ws+"/apps/"+e.app.ID, owner, nil); r.obj("app")["mfa_policy"] != "optional" {
			t.Errorf("the app reads %v", r.obj("app")["mfa_policy"])
		}

		// A save that changes nothing is no action.
		if r := e.do(t, "PATCH", ws+"/apps/"+e.app.ID, owner, map[string]any{"mfa_policy": "optional"}); r.status != 200 {
			t.Fatalf("PATCH app = %d %s", r.status, r.raw)
		}
		if got := entries(t, log(t, "?action=app.updated", owner)); len(got) != 1 {
			t.Errorf("after a save that changed nothing: %d app.updated entries; want still 1", len(got))
		}

		// Credentials and providers: entries without the secrets.
		secret := e.appSecretFor(t, e.app.ID)
		key := e.apiKey(t)
		providerSecret := "audit-provider-secret-0123456789"
		if r := e.do(t, "PUT", "/v1/apps/"+e.app.ID+"/oauth_providers/gh", bearer(secret),
			map[string]any{"type": "github", "client_id": "Iv1.audit", "client_secret": providerSecret}); r.status != 201 {
			t.Fatalf("PUT provider = %d %s", r.status, r.raw)
		}
		member, err := e.Tenants.AddMember(ctx, servertest.Operator, e.ws.ID, "member@acme.test", "Member", access.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		// Webhooks and users.
		hook := e.do(t, "POST", "/v1/apps/"+e.app.ID+"/webhooks", bearer(secret), map[string]any{"webhook": map[string]any{"url": newReceiver(t).URL + "/hook"}})
		hookID, _ := hook.obj("webhook")["id"].(string)
		if hook.status/100 != 2 || hookID == "" {
			t.Fatalf("create webhook = %d %s", hook.status, hook.raw)
		}
		if r := e.do(t, "POST", "/v1/apps/"+e.app.ID+"/webhooks/"+hookID+"/rotate_secret", bearer(secret), nil); r.status != 200 {
			t.Fatalf("rotate = %d %s", r.status, r.raw)
		}
		if r := e.do(t, "DELETE", "/v1/apps/"+e.app.ID+"/webhooks/"+hookID, bearer(secret), nil); r.status/100 != 2 {
			t.Fatalf("delete webhook = %d %s", r.status, r.raw)
		}
		user, _, err := e.Users.Create(ctx, servertest.Operator, e.app, appuser.CreateInput{Email: "audited@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Users.SetStatus(ctx, servertest.Operator, e.app, user.ID, "inactive"); err != nil {
			t.Fatal(err)
		}
		if st := entries(t, log(t, "?action=user.status_changed&target_id="+user.ID, owner)); len(st) != 1 ||
			!jsonEqual(st[0]["before"], map[string]any{"status": "active"}) || !jsonEqual(st[0]["after"], map[string]any{"status": "inactive"}) {
			t.Errorf("user.status_changed = %v", st)
		}
		if r := e.do(t, "DELETE", "/v1/"+e.app.ID+"/users/"+user.ID, bearer(secret), nil); r.status/100 != 2 {
			t.Fatalf("delete user = %d %s", r.status, r.raw)
		}
		if d := entries(t, log(t, "?action=user.deleted", owner)); len(d) != 1 || strings.Contains(string(log(t, "?action=user.", owner).raw), "audited@example.com") {
			t.Errorf("user.deleted = %v; want one entry that does not hold the address", d)
		}
		if w := entries(t, log(t, "?action=webhook.&target_id="+hookID, owner)); len(w) != 3 || w[0]["action"] != "webhook.deleted" ||
			w[1]["action"] != "webhook.secret_rotated" || w[2]["action"] != "webhook.created" {
			t.Errorf("webhook entries = %v; want created, secret_rotated, deleted", w)
		}

		// A user created by the operator, and a session an administrator ends.
		if c := entries(t, log(t, "?action=user.created&target_id="+user.ID, owner)); len(c) != 1 ||
			!jsonEqual(c[0]["after"], map[string]any{"status": "active"}) || c[0]["actor"].(map[string]any)["kind"] != "operator" {
			t.Errorf("user.created = %v", c)
		}
		signedID, access, _ := e.signIn(t, "session-audit@example.com")
		sessions := e.do(t, "GET", "/v1/auth/"+e.app.ID+"/sessions", map[string]string{"X-Authorization": access}, nil)
		ss, _ := sessions.body["sessions"].([]any)
		if len(ss) != 1 {
			t.Fatalf("sessions = %s", sessions.raw)
		}
		sid := ss[0].(map[string]any)["id"].(string)
		if r := e.do(t, "DELETE", "/v1/"+e.app.ID+"/users/"+signedID+"/sessions/"+sid, bearer(secret), nil); r.status/100 != 2 {
			t.Fatalf("revoke session = %d %s", r.status, r.raw)
		}
		if rv := entries(t, log(t, "?action=session.revoked&target_id="+sid, owner)); len(rv) != 1 ||
			!jsonEqual(rv[0]["before"], map[string]any{"user_id": signedID}) {
			t.Errorf("session.revoked = %v", rv)
		}

		// M2M clients.
		clientID, clientSecret := e.m2mClient(t, "reports:read")
		if r := e.do(t, "DELETE", e.m2mPath("/clients/"+clientID), bearer(e.appSecret), nil); r.status/100 != 2 {
			t.Fatalf("revoke client = %d %s", r.status, r.raw)
		}
		if m := entries(t, log(t, "?action=m2m_client.&target_id="+clientID, owner)); len(m) != 2 || m[0]["action"] != "m2m_client.revoked" ||
			!jsonEqual(m[0]["after"], map[string]any{"revoked": true}) || m[1]["action"] != "m2m_client.created" {
			t.Errorf("m2m_client entries = %v", m)
		}

		// Message providers and templates.
		if r := e.do(t, "PATCH", "/v1/apps/"+e.app.ID+"/message_service_providers", bearer(secret),
			map[string]any{"slug": "log", "name": "Log it", "enabled": true}); r.status != 200 {
			t.Fatalf("PATCH provider = %d %s", r.status, r.raw)
		}
		if m := entries(t, log(t, "?action=message_provider.updated&target_id=log", owner)); len(m) != 1 || m[0]["after"].(map[string]any)["enabled"] != true {
			t.Errorf("message_provider.updated = %v", m)
		}
		tpl := "/v1/apps/" + e.app.ID + "/message_templates/login_code/sms/de"
		if r := e.do(t, "PUT", tpl, bearer(secret), map[string]any{"template": map[string]any{"text": "Code: {{.Code}}"}}); r.status != 200 {
			t.Fatalf("PUT template = %d %s", r.status, r.raw)
		}
		if r := e.do(t, "DELETE", tpl, bearer(secret), nil); r.status/100 != 2 {
			t.Fatalf("DELETE template = %d %s", r.status, r.raw)
		}
		if m := entries(t, log(t, "?action=message_template.&target_id=login_code/sms/de", owner)); len(m) != 2 ||
			m[0]["action"] != "message_template.deleted" || m[1]["action"] != "message_template.saved" {
			t.Errorf("message_template entries = %v", m)
		}

		all := log(t, "?limit=200", owner)
		for _, s := range []string{secret, key, providerSecret, e.wsSecret, hook.obj("webhook")["secret"].(string), clientSecret} {
			if strings.Contains(string(all.raw), s) {
				t.Errorf("the audit log holds a secret")
			}
		}
		var actions []string
		for _, x := range entries(t, all) {
			actions = append(actions, x["action"].(string))
		}
		for _, want := range []string{"app.created", "app.updated", "api_secret.created", "api_key.created", "oauth_provider.created", "member.added"} {
			if !strings.Contains(strings.Join(actions, ","), want) {
				t.Errorf("actions = %v; want %s among them", actions, want)
			}
		}
		p := entries(t, log(t, "?action=oauth_provider.created", owner))
		if len(p) != 1 || p[0]["after"].(map[string]any)["settings"].(map[string]any)["client_secret"] != "****6789" {
			t.Errorf("oauth_provider.created = %v; want the secret as its hint", p)
		}
		if op := entries(t, log(t, "?action=member.added", owner)); len(op) != 1 || op[0]["actor"].(map[string]any)["kind"] != "operator" {
			t.Errorf("member.added = %v; want the operator as actor", op)
		}

		// Pages and filters.
		first := log(t, "?limit=2", owner)
		if len(entries(t, first)) != 2 || first.str("next_cursor") == "" {
			t.Fatalf("first page = %s", first.raw)
		}
		second := entries(t, log(t, "?limit=2&cursor="+first.str("next_cursor"), owner))
		if len(second) == 0 || second[0]["id"] == entries(t, first)[1]["id"] {
			t.Errorf("second page = %v", second)
		}
		if got := entries(t, log(t, "?action=app.&app_id="+e.app.ID, owner)); len(got) != 2 || got[0]["action"] != "app.updated" || got[1]["action"] != "app.created" {
			t.Errorf("app. on the app = %v; want app.updated, then app.created", got)
		}
		if r := log(t, "?cursor=not-a-cursor", owner); r.status != 400 || r.str("error_code") != "invalid_request" {
			t.Errorf("a bad cursor = %d %s", r.status, r.raw)
		}

		// Who may read it.
		memberSecret := e.workspaceSecret(t, e.ws.ID, member.ID)
		if r := log(t, "", bearer(memberSecret)); r.status != http.StatusForbidden {
			t.Errorf("a member reads the audit log: %d; want 403", r.status)
		}
		if r := log(t, "", bearer(secret)); r.status != http.StatusForbidden {
			t.Errorf("an app secret reads the audit log: %d; want 403", r.status)
		}
		other, _ := sys.Workspace(t, "Other")
		if r := e.do(t, "GET", "/v1/workspaces/"+other.ID+"/audit_log", owner, nil); r.status != http.StatusForbidden {
			t.Errorf("another workspace's log: %d; want 403", r.status)
		}
	})
}
