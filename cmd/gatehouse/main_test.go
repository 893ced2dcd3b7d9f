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
	"strings"
	"sync"
	"testing"
	"time"

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

// syncBuffer is a bytes.Buffer safe for the server goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startDev runs `gatehouse serve --dev` in-process and waits until it is
// ready; stop shuts it down gracefully and returns its exit status.
func startDev(t *testing.T, dir string) (b bootstrap, stdout, stderr *syncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
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

	for _, want := range []string{b.AppID, b.APISecret, b.BaseURL} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout does not show %q:\n%s", want, stdout.String())
		}
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
	var out bytes.Buffer
	if code := run(context.Background(), []string{"apps", "list", "--data-dir", dir}, nil, &out, io.Discard); code != 0 {
		t.Fatalf("apps list exit %d", code)
	}
	var apps struct{ Apps []map[string]any }
	if err := json.Unmarshal(out.Bytes(), &apps); err != nil || len(apps.Apps) != 1 {
		t.Errorf("apps after restart = %s (%v); want exactly one", out.String(), err)
	}
}

func TestStartupErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		environ []string
		want    string
	}{
		{"bad database url", []string{"serve", "--database-url", "mysql://x"}, nil, "database.url"},
		{"bad env setting", []string{"serve"}, []string{"GATEHOUSE_LOG_LEVEL=loud"}, "log.level"},
		{"bad address", []string{"serve", "--addr", "nonsense"}, nil, "http.addr"},
		{"no master key outside dev", []string{"serve", "--data-dir", "DIR", "--addr", "127.0.0.1:0"}, nil, "master_key"},
		{"unknown flag", []string{"serve", "--nope"}, nil, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string(nil), tt.args...)
			for i, a := range args {
				if a == "DIR" {
					args[i] = t.TempDir()
				}
			}
			var stderr bytes.Buffer
			code := run(context.Background(), args, tt.environ, io.Discard, &stderr)
			if code != 2 {
				t.Errorf("exit = %d; want 2 (stderr %q)", code, stderr.String())
			}
			if lines := strings.Count(strings.TrimSpace(stderr.String()), "\n"); lines != 0 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr = %q; want one line naming %q", stderr.String(), tt.want)
			}
		})
	}
}

func runJSON(t *testing.T, environ []string, args ...string) map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, environ, &out, &errb); code != 0 {
		t.Fatalf("gatehouse %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("gatehouse %s: output is not JSON: %q", strings.Join(args, " "), out.String())
	}
	return v
}

func TestOperatorCommands(t *testing.T) {
	dir := t.TempDir()
	key, err := token.GenerateMasterKey()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"GATEHOUSE_MASTER_KEY=" + key, "GATEHOUSE_DATA_DIR=" + dir}
	if m := runJSON(t, env, "migrate", "up"); len(m["migrations"].([]any)) == 0 {
		t.Errorf("migrate up listed no migrations: %v", m)
	}
	st := runJSON(t, env, "migrate", "status")
	for _, m := range st["migrations"].([]any) {
		if m.(map[string]any)["applied"] != true {
			t.Errorf("migration not applied after up: %v", m)
		}
	}
	ws := runJSON(t, env, "workspaces", "create", "--name", "Acme Corp", "--owner-email", "Owner@Acme.test")
	wsID := ws["workspace"].(map[string]any)["id"].(string)
	if ws["workspace"].(map[string]any)["slug"] != "acme-corp" || ws["owner"].(map[string]any)["email"] != "owner@acme.test" {
		t.Errorf("workspaces create = %v", ws)
	}
	app := runJSON(t, env, "apps", "create", "--workspace", wsID, "--name", "Shop", "--origin", "https://shop.acme.test")
	appID := app["app"].(map[string]any)["id"].(string)
	if list := runJSON(t, env, "apps", "list", "--workspace", wsID); len(list["apps"].([]any)) != 1 {
		t.Errorf("apps list = %v", list)
	}
	sec := runJSON(t, env, "secrets", "create", "--app", appID, "--name", "ci")
	if tok, _ := sec["api_secret"].(string); token.Peek(tok) != token.TypeAPISecret {
		t.Errorf("secrets create returned no API secret: %v", sec)
	}
	wsec := runJSON(t, env, "secrets", "create", "--workspace", wsID)
	if wsec["workspace_id"] != wsID || wsec["member_id"] == "" {
		t.Errorf("workspace secret = %v", wsec)
	}
	list := runJSON(t, env, "secrets", "list", "--app", appID)
	if raw, _ := json.Marshal(list); strings.Contains(string(raw), sec["api_secret"].(string)) || len(list["secrets"].([]any)) != 1 {
		t.Errorf("secrets list = %s; want one entry and no secret value", raw)
	}
	if r := runJSON(t, env, "secrets", "revoke", sec["id"].(string)); r["revoked"] != true {
		t.Errorf("secrets revoke = %v", r)
	}
	before := runJSON(t, env, "keys", "list")["keys"].([]any)
	rot := runJSON(t, env, "keys", "rotate")
	after := runJSON(t, env, "keys", "list")["keys"].([]any)
	if len(after) != len(before)+1 || after[0].(map[string]any)["kid"] != rot["key"].(map[string]any)["kid"] {
		t.Errorf("keys after rotate = %v", after)
	}
	old := after[1].(map[string]any)
	if old["status"] != "retired" || old["published"] != true {
		t.Errorf("previous key = %v; want retired and still published", old)
	}
	if raw, _ := json.Marshal(after); strings.Contains(string(raw), `"d"`) || strings.Contains(string(raw), "sealed") {
		t.Errorf("keys list shows private material: %s", raw)
	}
	var errb bytes.Buffer
	if code := run(context.Background(), []string{"secrets", "create"}, env, io.Discard, &errb); code != 2 {
		t.Errorf("secrets create without scope exit = %d; want 2", code)
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"version"}, nil, &out, io.Discard); code != 0 || !strings.HasPrefix(out.String(), "gatehouse ") {
		t.Errorf("version = %d %q", code, out.String())
	}
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
		log  *syncBuffer
	}
	procs := make([]*proc, 2)
	for i := range procs {
		cmd := exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir())
		cmd.Env = append(os.Environ(), "GATEHOUSE_TEST_AS_MAIN=1", "GATEHOUSE_DATABASE_URL="+url, "GATEHOUSE_MASTER_KEY="+key)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		p := &proc{cmd: cmd, addr: make(chan string, 1), log: &syncBuffer{}}
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
