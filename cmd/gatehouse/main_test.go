package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/httpapi"
	"github.com/gatehouse-auth/gatehouse/internal/server"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// TestMain lets the test binary stand in for the gatehouse binary, so tests
// can start real server processes without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("GATEHOUSE_TEST_AS_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// startDev runs `gatehouse serve --dev` in-process and waits until it is
// ready; stop shuts it down gracefully and returns its exit status.
func startDev(t *testing.T, dir string) (b server.Bootstrap, stdout, stderr *servertest.LogBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &servertest.LogBuffer{}, &servertest.LogBuffer{}
	path := filepath.Join(dir, "bootstrap.json")
	before, _ := os.ReadFile(path)
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--dev", "--data-dir", dir, "--addr", "127.0.0.1:0"}, nil, stdout, stderr)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if raw, err := os.ReadFile(path); err == nil && !bytes.Equal(raw, before) && json.Unmarshal(raw, &b) == nil && b.BaseURL != "" {
			if resp, err := http.Get(b.BaseURL + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("server exited with %d before becoming ready; stderr:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("server not ready in time; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(20 * time.Second):
				t.Errorf("server did not stop within 20s")
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return b, stdout, stderr, stop
}

func call(t *testing.T, method, url, secret, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %q", method, url, raw)
	}
	return resp.StatusCode, out
}

// TestDevQuickstart is the README's walk-through, run as a newcomer would.
func TestDevQuickstart(t *testing.T) {
	dir := t.TempDir()
	b, stdout, stderr, stop := startDev(t, dir)

	for _, want := range []string{b.AppID, b.APISecret, b.BaseURL, "signed with ES256",
		`/v1/apps/` + b.AppID + ` -H 'Authorization: Bearer <API secret>'`, `{"app":{"access_token_alg":"RS256"}}`} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout does not show %q:\n%s", want, stdout.String())
		}
	}
	if b.AccessTokenAlg != "ES256" {
		t.Errorf("bootstrap access_token_alg = %q; want ES256", b.AccessTokenAlg)
	}
	if fi, err := os.Stat(filepath.Join(dir, "bootstrap.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("bootstrap.json mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "master.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("master.key mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}

	status, body := call(t, "POST", b.BaseURL+"/v1/"+b.AppID+"/users", b.APISecret, `{"identifier":"ada@example.com","user_meta":{"first_name":"Ada"}}`)
	if status != 200 {
		t.Fatalf("create user = %d %v; want 200", status, body)
	}
	user, _ := body["user"].(map[string]any)
	if user["email"] != "ada@example.com" || user["status"] != "active" {
		t.Errorf("created user = %v", user)
	}
	status, body = call(t, "GET", b.BaseURL+"/v1/apps/"+b.AppID, "", "")
	if status != 200 || body["id"] != b.AppID || body["name"] != "Demo" || body["origin"] != "http://localhost:3000" {
		t.Errorf("GET app = %d %v", status, body)
	}
	status, body = call(t, "POST", b.BaseURL+"/v1/"+b.AppID+"/users", "", `{"identifier":"x@example.com"}`)
	if status != 401 || body["error"] != "Unauthorized" {
		t.Errorf("no secret = %d %v; want 401 Unauthorized", status, body)
	}
	status, body = call(t, "POST", b.BaseURL+"/v1/"+b.AppID+"/users", b.APISecret, `{"identifier":"not-an-address"}`)
	if status != 400 || body["error_code"] != "invalid_identifier" {
		t.Errorf("bad identifier = %d %v; want 400 invalid_identifier", status, body)
	}

	if code := stop(); code != 0 {
		t.Fatalf("graceful stop exit = %d; want 0; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no graceful stop in the log:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), b.APISecret) {
		t.Errorf("the API secret appears in the log")
	}

	// A restart reuses everything: same ids, the same working secret, no second app.
	b2, _, _, stop2 := startDev(t, dir)
	if b2.AppID != b.AppID || b2.WorkspaceID != b.WorkspaceID {
		t.Errorf("restart ids = %s/%s; want %s/%s", b2.WorkspaceID, b2.AppID, b.WorkspaceID, b.AppID)
	}
	if status, body := call(t, "GET", b2.BaseURL+"/v1/"+b.AppID+"/users", b2.APISecret, ""); status != 200 || body["total_count"] != float64(1) {
		t.Errorf("after restart, list users = %d %v; want the one user", status, body)
	}
	stop2()
	// Outside --dev, the data directory's key is refused unless configured
	// (TestDataDirMasterKey); the operator commands take --dev as serve did.
	var out bytes.Buffer
	if code := run(context.Background(), []string{"apps", "list", "--dev", "--data-dir", dir}, nil, &out, io.Discard); code != 0 {
		t.Fatalf("apps list exit %d", code)
	}
	var apps struct{ Apps []map[string]any }
	if err := json.Unmarshal(out.Bytes(), &apps); err != nil || len(apps.Apps) != 1 {
		t.Errorf("apps after restart = %s (%v); want exactly one", out.String(), err)
	}
}

// gatehouse runs `gatehouse args...` in-process with exactly environ as its
// environment and returns its exit status and output.
func gatehouse(t *testing.T, environ []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, environ, &out, &errb)
	return code, out.String(), errb.String()
}

func runJSON(t *testing.T, environ []string, args ...string) map[string]any {
	t.Helper()
	code, out, errb := gatehouse(t, environ, args...)
	if code != 0 {
		t.Fatalf("gatehouse %s: exit %d: %s", strings.Join(args, " "), code, errb)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("gatehouse %s: output is not a JSON object: %q", strings.Join(args, " "), out)
	}
	return v
}

// newMasterKey returns a fresh master key in the form GATEHOUSE_MASTER_KEY takes.
func newMasterKey(t *testing.T) string {
	t.Helper()
	key, err := token.GenerateMasterKey()
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// forEachEngine runs fn once per engine (SQLite always, PostgreSQL when
// GATEHOUSE_TEST_POSTGRES_URL is set), each with the settings of a new,
// empty database: no table at all, not even the migrations' own. The data
// directory is empty too (no master key in it).
func forEachEngine(t *testing.T, fn func(t *testing.T, kind string, dbEnv []string)) {
	t.Helper()
	for _, kind := range storetest.Kinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			url := "sqlite:" + filepath.Join(dir, "gatehouse.db")
			if kind == store.Postgres {
				url = storetest.EmptyPostgresURL(t)
			}
			fn(t, kind, []string{"GATEHOUSE_DATA_DIR=" + dir, "GATEHOUSE_DATABASE_URL=" + url})
		})
	}
}

// served is a `gatehouse serve` running in-process.
type served struct {
	url  string
	logs *servertest.LogBuffer
	// stop ends it gracefully and returns its exit status.
	stop func() int
}

// serveInProcess runs `gatehouse args...` (a serve command) in-process with
// environ and returns once it has logged "gatehouse started" and answers
// /readyz with 200. It is stopped when the test ends.
func serveInProcess(t *testing.T, environ []string, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{logs: &servertest.LogBuffer{}}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, environ, io.Discard, s.logs) }()
	var once sync.Once
	code := -1
	s.stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(20 * time.Second):
				t.Errorf("gatehouse %s did not stop within 20s", strings.Join(args, " "))
			}
		})
		return code
	}
	t.Cleanup(func() { s.stop() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		if s.url == "" {
			if lines := s.logs.Lines(`"msg":"gatehouse started"`); len(lines) > 0 {
				var rec struct{ Addr string }
				if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec.Addr == "" {
					t.Fatalf("start-up line %q has no addr (%v)", lines[0], err)
				}
				s.url = "http://" + rec.Addr
			}
		}
		if s.url != "" {
			if resp, err := http.Get(s.url + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return s
				}
			}
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("gatehouse %s exited with %d before becoming ready; log:\n%s", strings.Join(args, " "), code, s.logs.String())
		case <-time.After(20 * time.Millisecond): // real time: the server starts in real time
		}
		if time.Now().After(deadline) {
			t.Fatalf("gatehouse %s not ready in 60s; log:\n%s", strings.Join(args, " "), s.logs.String())
		}
	}
}

// keys returns the sorted keys of a JSON object.
func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkFields fails unless obj has exactly the fields want (sorted).
func checkFields(t *testing.T, what string, obj any, want ...string) map[string]any {
	t.Helper()
	m, ok := obj.(map[string]any)
	if !ok {
		t.Fatalf("%s = %#v; want a JSON object", what, obj)
	}
	sort.Strings(want)
	if got := keys(m); !slices.Equal(got, want) {
		t.Errorf("%s fields = %v; want %v (%v)", what, got, want, m)
	}
	return m
}

// apiFields are the JSON fields the API's shape v always answers (its
// omitempty fields aside): the CLI prints the same shapes.
func apiFields(v any) []string {
	var out []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || strings.Contains(opts, "omitempty") {
				continue
			}
			out = append(out, name)
		}
	}
	walk(reflect.TypeOf(v))
	return out
}

// checkTime fails unless v is an RFC 3339 time string.
func checkTime(t *testing.T, what string, v any) {
	t.Helper()
	s, _ := v.(string)
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		t.Errorf("%s = %#v; want an RFC 3339 time", what, v)
	}
}

// list returns the array under name in a command's output, failing if it is not one.
func list(t *testing.T, out map[string]any, name string) []any {
	t.Helper()
	l, ok := out[name].([]any)
	if !ok {
		t.Fatalf("output %v has no %q array", out, name)
	}
	return l
}

// TestOperatorCommands runs every operator command against a real database
// of each engine, migrated by `gatehouse migrate up`, checks the JSON each
// prints field by field, and then checks that a server started on the same
// database honours what they did (secrets issued and revoked, keys rotated).
func TestOperatorCommands(t *testing.T) {
	forEachEngine(t, func(t *testing.T, kind string, dbEnv []string) {
		env := append([]string{"GATEHOUSE_MASTER_KEY=" + newMasterKey(t)}, dbEnv...)
		if m := runJSON(t, env, "migrate", "up"); len(list(t, m, "migrations")) == 0 {
			t.Errorf("migrate up listed no migrations: %v", m)
		}
		for _, m := range list(t, runJSON(t, env, "migrate", "status"), "migrations") {
			if m.(map[string]any)["applied"] != true {
				t.Errorf("migration not applied after up: %v", m)
			}
		}

		// Workspaces.
		ws := runJSON(t, env, "workspaces", "create", "--name", "Acme Corp", "--owner-email", "Owner@Acme.test", "--owner-name", "Olive")
		checkFields(t, "workspaces create", ws, "workspace", "owner")
		wsObj := checkFields(t, "workspaces create .workspace", ws["workspace"], apiFields(httpapi.Workspace{})...)
		owner := checkFields(t, "workspaces create .owner", ws["owner"], apiFields(httpapi.Member{})...)
		wsID, _ := wsObj["id"].(string)
		ownerID, _ := owner["id"].(string)
		if wsID == "" || wsObj["name"] != "Acme Corp" || wsObj["slug"] != "acme-corp" {
			t.Errorf("workspaces create .workspace = %v; want an id, name Acme Corp, slug acme-corp", wsObj)
		}
		if ownerID == "" || owner["email"] != "owner@acme.test" || owner["role"] != "owner" {
			t.Errorf("workspaces create .owner = %v; want an id, owner@acme.test, role owner", owner)
		}
		checkTime(t, "workspace created_at", wsObj["created_at"])
		checkTime(t, "owner created_at", owner["created_at"])
		runJSON(t, env, "workspaces", "create", "--name", "Other", "--slug", "elsewhere", "--owner-email", "o@other.test")
		wsList := list(t, runJSON(t, env, "workspaces", "list"), "workspaces")
		var listed map[string]any
		slugs := map[any]bool{}
		for i, w := range wsList {
			m := checkFields(t, fmt.Sprintf("workspaces list [%d]", i), w, apiFields(httpapi.Workspace{})...)
			slugs[m["slug"]] = true
			if m["id"] == wsID {
				listed = m
			}
		}
		if len(wsList) != 2 || !slugs["acme-corp"] || !slugs["elsewhere"] {
			t.Errorf("workspaces list = %v; want acme-corp and elsewhere", wsList)
		}
		if !reflect.DeepEqual(listed, wsObj) {
			t.Errorf("workspaces list entry for %s = %v; want what create printed, %v", wsID, listed, wsObj)
		}

		// Apps.
		app := runJSON(t, env, "apps", "create", "--workspace", wsID, "--name", "Shop", "--origin", "https://shop.acme.test")
		checkFields(t, "apps create", app, "app")
		appObj := checkFields(t, "apps create .app", app["app"], apiFields(httpapi.AppFull{})...)
		appID, _ := appObj["id"].(string)
		if appID == "" || appObj["workspace_id"] != wsID || appObj["name"] != "Shop" || appObj["slug"] != "shop" ||
			appObj["origin"] != "https://shop.acme.test" || appObj["login_url"] != "" {
			// An unset login_url stays empty: links fall back to the origin when they are made.
			t.Errorf("apps create .app = %v; want Shop in %s with no login_url", appObj, wsID)
		}
		checkTime(t, "app created_at", appObj["created_at"])
		app2 := runJSON(t, env, "apps", "create", "--workspace", wsID, "--name", "Blog", "--origin", "https://blog.acme.test",
			"--login-url", "https://blog.acme.test/login")["app"].(map[string]any)
		if app2["login_url"] != "https://blog.acme.test/login" {
			t.Errorf("apps create --login-url = %v", app2)
		}
		otherWS := list(t, runJSON(t, env, "workspaces", "list"), "workspaces")
		var otherID string
		for _, w := range otherWS {
			if w.(map[string]any)["slug"] == "elsewhere" {
				otherID, _ = w.(map[string]any)["id"].(string)
			}
		}
		runJSON(t, env, "apps", "create", "--workspace", otherID, "--name", "Elsewhere", "--origin", "https://elsewhere.test")
		inWS := list(t, runJSON(t, env, "apps", "list", "--workspace", wsID), "apps")
		names := map[any]bool{}
		for i, a := range inWS {
			m := checkFields(t, fmt.Sprintf("apps list [%d]", i), a, apiFields(httpapi.AppFull{})...)
			if m["workspace_id"] != wsID {
				t.Errorf("apps list --workspace %s shows %v", wsID, m)
			}
			if m["id"] == appID && !reflect.DeepEqual(m, appObj) {
				t.Errorf("apps list entry for %s = %v; want what create printed, %v", appID, m, appObj)
			}
			names[m["name"]] = true
		}
		if len(inWS) != 2 || !names["Shop"] || !names["Blog"] {
			t.Errorf("apps list --workspace = %v; want Shop and Blog", inWS)
		}
		if all := list(t, runJSON(t, env, "apps", "list"), "apps"); len(all) != 3 {
			t.Errorf("apps list = %d apps; want all 3: %v", len(all), all)
		}

		// Secrets.
		sec := runJSON(t, env, "secrets", "create", "--app", appID, "--name", "ci")
		checkFields(t, "secrets create --app", sec, "id", "name", "created_at", "revoked_at", "app_id", "api_secret")
		revokedTok, _ := sec["api_secret"].(string)
		if token.Peek(revokedTok) != token.TypeAPISecret || sec["app_id"] != appID || sec["name"] != "ci" || sec["revoked_at"] != nil || sec["id"] == "" {
			t.Errorf("secrets create --app = %v; want an API secret for %s named ci, not revoked", sec, appID)
		}
		checkTime(t, "secret created_at", sec["created_at"])
		live := runJSON(t, env, "secrets", "create", "--app", appID, "--name", "live")
		wsec := runJSON(t, env, "secrets", "create", "--workspace", wsID)
		checkFields(t, "secrets create --workspace", wsec, "id", "name", "created_at", "revoked_at", "workspace_id", "member_id", "api_secret")
		if wsec["workspace_id"] != wsID || wsec["member_id"] != ownerID || token.Peek(wsec["api_secret"].(string)) != token.TypeAPISecret {
			t.Errorf("workspace secret = %v; want one for %s acting for the first owner %s", wsec, wsID, ownerID)
		}
		if m := runJSON(t, env, "secrets", "create", "--workspace", wsID, "--member", "OWNER@acme.test"); m["member_id"] != ownerID {
			t.Errorf("secrets create --member by e-mail = %v; want member %s", m, ownerID)
		}
		secrets := list(t, runJSON(t, env, "secrets", "list", "--app", appID), "secrets")
		if raw, _ := json.Marshal(secrets); strings.Contains(string(raw), revokedTok) || strings.Contains(string(raw), live["api_secret"].(string)) {
			t.Errorf("secrets list shows a secret's value: %s", raw)
		}
		ids := map[any]bool{}
		for i, s := range secrets {
			m := checkFields(t, fmt.Sprintf("secrets list --app [%d]", i), s, "id", "name", "created_at", "revoked_at", "app_id")
			ids[m["id"]] = true
		}
		if len(secrets) != 2 || !ids[sec["id"]] || !ids[live["id"]] {
			t.Errorf("secrets list --app = %v; want ci and live", secrets)
		}
		wsSecrets := list(t, runJSON(t, env, "secrets", "list", "--workspace", wsID), "secrets")
		for i, s := range wsSecrets {
			m := checkFields(t, fmt.Sprintf("secrets list --workspace [%d]", i), s, "id", "name", "created_at", "revoked_at", "workspace_id", "member_id")
			if m["member_id"] != ownerID {
				t.Errorf("workspace secret %v; want member %s", m, ownerID)
			}
		}
		if len(wsSecrets) != 2 {
			t.Errorf("secrets list --workspace = %v; want 2", wsSecrets)
		}
		if r := runJSON(t, env, "secrets", "revoke", sec["id"].(string)); len(r) != 2 || r["revoked"] != true || r["id"] != sec["id"] {
			t.Errorf("secrets revoke = %v; want {id, revoked: true}", r)
		}
		for _, s := range list(t, runJSON(t, env, "secrets", "list", "--app", appID), "secrets") {
			m := s.(map[string]any)
			switch m["id"] {
			case sec["id"]:
				checkTime(t, "revoked secret's revoked_at", m["revoked_at"])
			case live["id"]:
				if m["revoked_at"] != nil {
					t.Errorf("the other secret shows revoked: %v", m)
				}
			}
		}

		// Signing keys.
		before := list(t, runJSON(t, env, "keys", "list"), "keys")
		if len(before) != 1 {
			t.Fatalf("keys list on a new database = %v; want the one key made on the first start", before)
		}
		first := checkFields(t, "keys list [0]", before[0], "kid", "alg", "status", "published", "created_at")
		if first["kid"] == "" || first["alg"] == "" || first["status"] != "active" || first["published"] != true {
			t.Errorf("first key = %v; want active and published", first)
		}
		checkTime(t, "key created_at", first["created_at"])
		if code, out, _ := gatehouse(t, env, "keys", "rotate", "--alg", "HS256"); code == 0 {
			t.Errorf("keys rotate --alg HS256 = %s; want an error", out)
		}
		rot := runJSON(t, env, "keys", "rotate")
		checkFields(t, "keys rotate", rot, "keys")
		rotated := list(t, rot, "keys")
		if len(rotated) != 1 {
			t.Fatalf("keys rotate = %v; want the one algorithm in use rotated", rotated)
		}
		newKey := checkFields(t, "keys rotate .keys[0]", rotated[0], "kid", "alg", "status", "published", "created_at")
		if newKey["kid"] == first["kid"] || newKey["status"] != "active" || newKey["published"] != true || newKey["alg"] != first["alg"] {
			t.Errorf("rotated key = %v; want a new active, published %v key", newKey, first["alg"])
		}
		after := list(t, runJSON(t, env, "keys", "list"), "keys")
		if len(after) != 2 {
			t.Fatalf("keys after rotate = %v; want 2", after)
		}
		if cur := checkFields(t, "keys list [0] after rotate", after[0], "kid", "alg", "status", "published", "created_at"); !reflect.DeepEqual(cur, newKey) {
			t.Errorf("keys list [0] after rotate = %v; want the rotated key %v", cur, newKey)
		}
		old, _ := after[1].(map[string]any)
		if !slices.Contains(keys(old), "retired_at") || (len(old) != 6 && len(old) != 7) {
			t.Errorf("previous key fields = %v; want kid, alg, status, published, created_at, retired_at [, publish_until]", keys(old))
		}
		for _, k := range keys(old) {
			if !slices.Contains([]string{"kid", "alg", "status", "published", "created_at", "retired_at", "publish_until"}, k) {
				t.Errorf("previous key has field %q", k)
			}
		}
		if old["kid"] != first["kid"] || old["status"] != "retired" || old["published"] != true {
			t.Errorf("previous key = %v; want %v retired and still published", old, first["kid"])
		}
		checkTime(t, "retired_at", old["retired_at"])
		if raw, _ := json.Marshal(after); strings.Contains(string(raw), `"d"`) || strings.Contains(string(raw), "sealed") || strings.Contains(string(raw), "private") {
			t.Errorf("keys list shows private material: %s", raw)
		}
		after2 := runJSON(t, env, "secrets", "create", "--app", appID, "--name", "after rotation")

		// A server on the same database honours all of it.
		srv := serveInProcess(t, env, "serve", "--addr", "127.0.0.1:0")
		for _, tt := range []struct {
			name, secret string
			want         int
		}{
			{"revoked secret", revokedTok, http.StatusUnauthorized},
			{"secret from before the rotation", live["api_secret"].(string), http.StatusOK},
			{"secret from after the rotation", after2["api_secret"].(string), http.StatusOK},
		} {
			if status, body := call(t, "GET", srv.url+"/v1/apps/"+appID+"/webhooks", tt.secret, ""); status != tt.want {
				t.Errorf("%s: list webhooks = %d %v; want %d", tt.name, status, body, tt.want)
			}
		}
		_, jwks := call(t, "GET", srv.url+"/.well-known/jwks.json", "", "")
		published := map[any]any{}
		for _, k := range list(t, jwks, "keys") {
			published[k.(map[string]any)["kid"]] = k.(map[string]any)["alg"]
		}
		if len(published) != 2 || published[first["kid"]] != first["alg"] || published[newKey["kid"]] != newKey["alg"] {
			t.Errorf("served JWKS kids = %v; want both keys keys list shows (%v, %v)", published, first["kid"], newKey["kid"])
		}
		if code := srv.stop(); code != 0 {
			t.Errorf("serve exit = %d; want 0; log:\n%s", code, srv.logs.String())
		}
	})
}

// TestReplicasStartTogether starts two real server processes at the same
// moment against one empty PostgreSQL database: one migrates, the other
// waits for the lock, and both become ready.
func TestReplicasStartTogether(t *testing.T) {
	url := storetest.EmptyPostgresURL(t)
	key, err := token.GenerateMasterKey()
	if err != nil {
		t.Fatal(err)
	}
	type proc struct {
		cmd  *exec.Cmd
		addr chan string
		log  *servertest.LogBuffer
	}
	procs := make([]*proc, 2)
	for i := range procs {
		cmd := exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir())
		cmd.Env = append(os.Environ(), "GATEHOUSE_TEST_AS_MAIN=1", "GATEHOUSE_DATABASE_URL="+url, "GATEHOUSE_MASTER_KEY="+key)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		p := &proc{cmd: cmd, addr: make(chan string, 1), log: &servertest.LogBuffer{}}
		procs[i] = p
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				line := sc.Text()
				fmt.Fprintln(p.log, line)
				var rec struct{ Msg, Addr string }
				if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "gatehouse started" {
					p.addr <- rec.Addr
				}
			}
		}()
	}
	for _, p := range procs { // start both as close together as possible
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, p := range procs {
			_ = p.cmd.Process.Signal(os.Interrupt)
			_ = p.cmd.Wait()
		}
	})
	for i, p := range procs {
		select {
		case addr := <-p.addr:
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("replica %d not ready: %v %v", i, resp, err)
			}
			if resp != nil {
				resp.Body.Close()
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("replica %d did not start; log:\n%s", i, p.log.String())
		}
	}
}
