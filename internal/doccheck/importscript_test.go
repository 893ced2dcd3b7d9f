package doccheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// migrateDoc holds the import script: the first ```python block.
const migrateDoc = "docs/migrate-from-scute.md"

// pythonBlock answers the first ```python block of a Markdown document.
func pythonBlock(t *testing.T, doc string) string {
	t.Helper()
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "\n```python\n")
	if !ok {
		t.Fatalf("%s has no ```python block", doc)
	}
	code, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatalf("%s: the ```python block does not end", doc)
	}
	return code + "\n"
}

// TestImportScript runs the migration guide's import script against a fake
// of both APIs: Scute's user list (1200 users on two pages, the first page
// answering 429 with Retry-After once, the second 503 once) and Gatehouse's
// import (the first batch answering 502 once, then imported; the second
// refused with a row error). The script must retry, map the first batch's
// ids, deactivate its inactive user, print the second batch's problem with
// the Scute id of its user, and end with status 1.
func TestImportScript(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 not found in PATH; CI must have it to test %s's import script: %v", migrateDoc, err)
		}
		t.Skipf("python3 not found in PATH (this is a failure when CI=true): %v", err)
	}
	root := repoRoot(t)
	script := filepath.Join(t.TempDir(), "import.py")
	if err := os.WriteFile(script, []byte(pythonBlock(t, filepath.Join(root, migrateDoc))), 0o644); err != nil {
		t.Fatal(err)
	}

	const (
		scuteApp, scuteSecret = "scute-app", "scute-secret"
		ghApp, ghSecret       = "gh-app", "gh-secret"
		users, perPage        = 1200, 600
		inactive, invalid     = 7, 1050 // Scute users s7 (deactivated) and s1050 (refused)
	)
	var mu sync.Mutex
	hits := map[string]int{}
	var deactivated []string
	var problems []string
	fail := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		key := r.Method + " " + r.URL.Path + "?" + r.URL.Query().Get("page")
		hits[key]++
		n := hits[key]
		mu.Unlock()
		answer := func(status int, v any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(v)
		}
		switch {
		case r.Method == "GET" && r.URL.Path == "/v1/"+scuteApp+"/users":
			if r.Header.Get("Authorization") != "Bearer "+scuteSecret {
				fail("Scute list without Scute's secret: %q", r.Header.Get("Authorization"))
			}
			page := r.URL.Query().Get("page")
			switch {
			case page == "1" && n == 1:
				w.Header().Set("Retry-After", "0")
				answer(http.StatusTooManyRequests, map[string]string{"error": "slow down"})
				return
			case page == "2" && n == 1:
				answer(http.StatusServiceUnavailable, map[string]string{"error": "unavailable"})
				return
			}
			first := map[string]int{"1": 0, "2": perPage}[page]
			var list []map[string]any
			for i := first; i < first+perPage; i++ {
				u := map[string]any{"id": fmt.Sprintf("s%d", i), "email": fmt.Sprintf("u%d@example.com", i),
					"email_verified": true, "status": "active", "meta": map[string]any{"first_name": "U"}}
				if i == inactive {
					u["status"] = "inactive"
				}
				list = append(list, u)
			}
			var next any
			if page == "1" {
				next = 2
			}
			answer(http.StatusOK, map[string]any{"users": list, "next_page": next})
		case r.Method == "POST" && r.URL.Path == "/v1/"+ghApp+"/users/import":
			if r.Header.Get("Authorization") != "Bearer "+ghSecret {
				fail("import without Gatehouse's secret: %q", r.Header.Get("Authorization"))
			}
			var body struct {
				Users []map[string]any `json:"users"`
			}
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				fail("import body: %v", err)
			}
			if len(body.Users) == 1000 && n == 1 {
				answer(http.StatusBadGateway, map[string]string{"error": "bad gateway"})
				return
			}
			for i, u := range body.Users {
				if u["email"] == fmt.Sprintf("u%d@example.com", invalid) {
					answer(http.StatusBadRequest, map[string]any{"error": "1 problem(s) in users, nothing was imported",
						"error_code": "invalid_request", "details": map[string]any{"total": 1,
							"rows": []map[string]any{{"index": i, "field": "email", "error_code": "invalid_identifier", "error": "is not a valid e-mail address"}}}})
					return
				}
			}
			var out []map[string]any
			for i, u := range body.Users {
				if u["email_verified"] != true || u["user_meta"] == nil {
					fail("import row %d lost a field: %v", i, u)
				}
				out = append(out, map[string]any{"index": i, "outcome": "created", "id": fmt.Sprintf("g-%v", u["email"]),
					"user_id": "person", "status": "imported"})
			}
			answer(http.StatusOK, map[string]any{"users": out, "created": len(out), "existing": 0})
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/deactivate"):
			mu.Lock()
			deactivated = append(deactivated, r.URL.Path)
			mu.Unlock()
			answer(http.StatusOK, map[string]any{"user": map[string]any{"status": "inactive"}})
		default:
			fail("unexpected request %s %s", r.Method, r.URL)
			answer(http.StatusNotFound, map[string]string{"error": "not found"})
		}
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, script)
	cmd.Env = append(os.Environ(), "SCUTE_URL="+srv.URL, "SCUTE_APP="+scuteApp, "SCUTE_SECRET="+scuteSecret,
		"GH="+srv.URL, "APP="+ghApp, "SECRET="+ghSecret)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the script ended with %v; want status 1 (a batch was refused)\nstderr:\n%s", err, stderr.String())
	}
	srv.Close() // every handler has returned
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
	mapped := strings.Count(stdout.String(), " created\n")
	if mapped != 1000 || !strings.Contains(stdout.String(), "s0 -> g-u0@example.com created\n") {
		t.Errorf("stdout maps %d users; want the first batch's 1000 as \"s0 -> g-u0@example.com created\":\n%.300s", mapped, stdout.String())
	}
	if want := []string{fmt.Sprintf("/v1/%s/users/g-u%d@example.com/deactivate", ghApp, inactive)}; fmt.Sprint(deactivated) != fmt.Sprint(want) {
		t.Errorf("deactivated %v; want %v", deactivated, want)
	}
	for _, want := range []string{
		"HTTP 429; trying again", "HTTP 503; trying again", "HTTP 502; trying again",
		"batch of 200 refused, nothing imported",
		fmt.Sprintf("Scute user s%d: email: invalid_identifier: is not a valid e-mail address", invalid),
		"1 batch(es) refused",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	for key, want := range map[string]int{"GET /v1/" + scuteApp + "/users?1": 2, "GET /v1/" + scuteApp + "/users?2": 2,
		"POST /v1/" + ghApp + "/users/import?": 3} {
		if hits[key] != want {
			t.Errorf("%s was requested %d times; want %d", key, hits[key], want)
		}
	}
}
