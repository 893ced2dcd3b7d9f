package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/httpapi"
	"github.com/gatehouse-auth/gatehouse/internal/server"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// gatehouseFails runs a command that must fail with status code and a
// message on stderr that has want.
func gatehouseFails(t *testing.T, env []string, code int, want string, args ...string) {
	t.Helper()
	got, out, errb := gatehouse(t, env, args...)
	if got != code || !strings.Contains(errb, want) {
		t.Errorf("gatehouse %s = exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(args, " "), got, out, errb, code, want)
	}
}

// TestOperatorAppsUsersMembers runs apps update|delete, users and members
// against a real database of each engine, and checks that every command
// naming an app or workspace that does not exist fails rather than
// answering an empty list.
func TestOperatorAppsUsersMembers(t *testing.T) {
	forEachEngine(t, func(t *testing.T, kind string, dbEnv []string) {
		env := append([]string{"GATEHOUSE_MASTER_KEY=" + newMasterKey(t)}, dbEnv...)
		runJSON(t, env, "migrate", "up")
		ws := runJSON(t, env, "workspaces", "create", "--name", "Acme", "--owner-email", "owner@acme.test")
		wsID := ws["workspace"].(map[string]any)["id"].(string)
		ownerID := ws["owner"].(map[string]any)["id"].(string)
		appID := runJSON(t, env, "apps", "create", "--workspace", wsID, "--name", "Shop", "--origin", "https://shop.acme.test")["app"].(map[string]any)["id"].(string)

		// apps update: only the settings named change, with the API's checks.
		up := checkFields(t, "apps update", runJSON(t, env, "apps", "update", appID, "--name", "Shop 2", "--email-auth-type", "otp", "--public-signup=false"), "app")
		got := checkFields(t, "apps update .app", up["app"], apiFields(httpapi.AppFull{})...)
		if got["name"] != "Shop 2" || got["email_auth_type"] != "otp" || got["public_signup"] != false || got["origin"] != "https://shop.acme.test" || got["slug"] != "shop" {
			t.Errorf("apps update = %v; want name Shop 2, otp, no public sign-up, the rest as before", got)
		}
		gatehouseFails(t, env, 1, "email_auth_type must be magic or otp", "apps", "update", appID, "--email-auth-type", "sms")
		gatehouseFails(t, env, 2, "at least one setting", "apps", "update", appID)
		gatehouseFails(t, env, 1, "app not found", "apps", "update", "no-such-app", "--name", "X")

		// A webhook endpoint of the app, to see the events the commands emit:
		// nothing here delivers them (no command runs the workers).
		cfg, err := config.Load(nil, "", env)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Webhooks.AllowPrivateTargets = "true"
		ctx := context.Background()
		sys, err := server.New(ctx, cfg, server.Options{Schema: server.RequireSchema})
		if err != nil {
			t.Fatal(err)
		}
		defer sys.Close()
		hook := "http://127.0.0.1:9/hook"
		ep, err := sys.Webhooks.Create(ctx, access.Operator(), appID, webhook.Input{URL: &hook})
		if err != nil {
			t.Fatalf("create webhook endpoint: %v", err)
		}

		// users: create, list, get, update, delete.
		c := runJSON(t, env, "users", "create", "--app", appID, "--identifier", "Ann@Example.com", "--meta", `{"first_name":"Ann"}`)
		checkFields(t, "users create", c, "user", "user_meta_errors")
		u := checkFields(t, "users create .user", c["user"], apiFields(httpapi.User{})...)
		userID, _ := u["id"].(string)
		if userID == "" || u["email"] != "ann@example.com" || u["status"] != "active" || u["phone"] != nil || u["app_id"] != appID {
			t.Errorf("users create .user = %v; want active ann@example.com of %s", u, appID)
		}
		// The app declares no metadata: the key is dropped and reported, as by the API.
		if errs, _ := c["user_meta_errors"].(map[string]any); errs["first_name"] == nil {
			t.Errorf("users create user_meta_errors = %v; want first_name reported", c["user_meta_errors"])
		}
		gatehouseFails(t, env, 1, "user already exists", "users", "create", "--app", appID, "--identifier", "ann@example.com")
		gatehouseFails(t, env, 1, "invalid identifier", "users", "create", "--app", appID, "--identifier", "nobody")
		gatehouseFails(t, env, 2, "--meta must be a JSON object", "users", "create", "--app", appID, "--identifier", "bo@example.com", "--meta", "[1]")
		runJSON(t, env, "users", "create", "--app", appID, "--identifier", "+14155552671")
		l := runJSON(t, env, "users", "list", "--app", appID)
		checkFields(t, "users list", l, "users", "total_count", "total_pages", "current_page", "per_page")
		if n := len(list(t, l, "users")); n != 2 || l["total_count"] != 2.0 {
			t.Errorf("users list = %v; want 2 users", l)
		}
		if found := list(t, runJSON(t, env, "users", "list", "--app", appID, "--q", "ann"), "users"); len(found) != 1 || found[0].(map[string]any)["id"] != userID {
			t.Errorf("users list --q ann = %v; want Ann only", found)
		}
		if p := runJSON(t, env, "users", "list", "--app", appID, "--per-page", "1", "--page", "2"); len(list(t, p, "users")) != 1 || p["total_pages"] != 2.0 || p["current_page"] != 2.0 {
			t.Errorf("users list page 2 of 1 per page = %v", p)
		}
		gatehouseFails(t, env, 1, "invalid status", "users", "list", "--app", appID, "--status", "gone")
		for _, ref := range []string{userID, "ANN@example.com"} {
			if g := runJSON(t, env, "users", "get", "--app", appID, ref)["user"].(map[string]any); g["id"] != userID {
				t.Errorf("users get %s = %v; want %s", ref, g, userID)
			}
		}
		if g := runJSON(t, env, "users", "get", "--app", appID, "+1 415 555 2671")["user"].(map[string]any); g["phone"] != "+14155552671" {
			t.Errorf("users get by phone = %v", g)
		}
		gatehouseFails(t, env, 1, "user not found", "users", "get", "--app", appID, "zed@example.com")
		if g := runJSON(t, env, "users", "update", "--app", appID, userID, "--status", "inactive")["user"].(map[string]any); g["status"] != "inactive" {
			t.Errorf("users update --status inactive = %v", g)
		}
		gatehouseFails(t, env, 1, "user_meta does not match", "users", "update", "--app", appID, userID, "--meta", `{"first_name":"Ann"}`)
		gatehouseFails(t, env, 2, "--meta or --status", "users", "update", "--app", appID, userID)
		if d := runJSON(t, env, "users", "delete", "--app", appID, "ann@example.com"); d["id"] != userID || d["deleted"] != true {
			t.Errorf("users delete = %v; want {id: %s, deleted: true}", d, userID)
		}
		gatehouseFails(t, env, 1, "user not found", "users", "get", "--app", appID, userID)
		// The same events as through the API: two users created, one deactivated.
		page, err := sys.Webhooks.Deliveries(ctx, access.Operator(), appID, ep.ID, 1, 50)
		if err != nil {
			t.Fatal(err)
		}
		var events []string
		for _, d := range page.Deliveries {
			events = append(events, d.EventType)
		}
		slices.Sort(events)
		if want := []string{webhook.UserCreated, webhook.UserCreated, webhook.UserUpdated}; !slices.Equal(events, want) {
			t.Errorf("events emitted by the user commands = %v; want %v", events, want)
		}
		gatehouseFails(t, env, 2, "needs --app", "users", "list")

		// members: list, add, remove; never the last owner.
		m := runJSON(t, env, "members", "add", "--workspace", wsID, "--email", "Bob@Acme.test", "--name", "Bob", "--role", "admin")
		bob := checkFields(t, "members add .member", m["member"], apiFields(httpapi.Member{})...)
		if bob["email"] != "bob@acme.test" || bob["role"] != "admin" || bob["name"] != "Bob" {
			t.Errorf("members add = %v", bob)
		}
		gatehouseFails(t, env, 1, "already exists", "members", "add", "--workspace", wsID, "--email", "bob@acme.test")
		gatehouseFails(t, env, 1, "role must be owner, admin or member", "members", "add", "--workspace", wsID, "--email", "cy@acme.test", "--role", "king")
		if ms := list(t, runJSON(t, env, "members", "list", "--workspace", wsID), "members"); len(ms) != 2 {
			t.Errorf("members list = %v; want the owner and Bob", ms)
		}
		if r := runJSON(t, env, "members", "remove", "--workspace", wsID, "BOB@acme.test"); r["id"] != bob["id"] || r["removed"] != true {
			t.Errorf("members remove by e-mail = %v; want {id: %v, removed: true}", r, bob["id"])
		}
		gatehouseFails(t, env, 1, "at least one owner", "members", "remove", "--workspace", wsID, ownerID)
		gatehouseFails(t, env, 1, "member not found", "members", "remove", "--workspace", wsID, "nobody@acme.test")

		// An app or workspace that does not exist is an error, never an empty list.
		for _, args := range [][]string{
			{"secrets", "list", "--app", "no-such-app"},
			{"secrets", "create", "--app", "no-such-app"},
			{"users", "list", "--app", "no-such-app"},
			{"users", "create", "--app", "no-such-app", "--identifier", "a@example.com"},
			{"apps", "delete", "no-such-app"},
		} {
			gatehouseFails(t, env, 1, "app not found", args...)
		}
		for _, args := range [][]string{
			{"secrets", "list", "--workspace", "no-such-workspace"},
			{"secrets", "create", "--workspace", "no-such-workspace"},
			{"apps", "list", "--workspace", "no-such-workspace"},
			{"apps", "create", "--workspace", "no-such-workspace", "--name", "X", "--origin", "https://x.test"},
			{"members", "list", "--workspace", "no-such-workspace"},
			{"members", "add", "--workspace", "no-such-workspace", "--email", "a@example.com"},
		} {
			gatehouseFails(t, env, 1, "workspace not found", args...)
		}

		// apps delete takes the app with it.
		if d := runJSON(t, env, "apps", "delete", appID); d["id"] != appID || d["deleted"] != true {
			t.Errorf("apps delete = %v", d)
		}
		if apps := list(t, runJSON(t, env, "apps", "list", "--workspace", wsID), "apps"); len(apps) != 0 {
			t.Errorf("apps list after delete = %v", apps)
		}
		gatehouseFails(t, env, 1, "app not found", "users", "list", "--app", appID)
	})
}
