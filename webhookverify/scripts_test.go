package webhookverify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// script is one of the receiver scripts in testdata that docs/webhooks.md also shows.
type script struct {
	interpreter string
	file        string
}

func scripts() []script {
	return []script{
		{"node", filepath.Join("testdata", "verify.mjs")},
		{"python3", filepath.Join("testdata", "verify.py")},
	}
}

// interpreter returns the path of s's interpreter. It skips the test when the interpreter
// is missing, except in CI, where the scripts must run.
func interpreter(t *testing.T, s script) string {
	t.Helper()
	bin, err := exec.LookPath(s.interpreter)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found in PATH; CI must have it to test %s: %v", s.interpreter, s.file, err)
		}
		t.Skipf("%s not found in PATH, skipping %s (this is a failure when CI=true)", s.interpreter, s.file)
	}
	return bin
}

// runScript feeds {"header", "body"} to the script and returns its first output line and
// whether it exited 0.
func runScript(t *testing.T, bin string, s script, header, body string, secrets []string) (string, bool) {
	t.Helper()
	input, err := json.Marshal(map[string]string{"header": header, "body": body})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, s.file, strings.Join(secrets, ","))
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running %s %s: %v (stderr %q)", s.interpreter, s.file, err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("%s wrote to stderr: %q", s.file, stderr.String())
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line, err == nil
}

func TestScripts(t *testing.T) {
	body := deliveryBody
	unicodeBody := `{"id":"e1","event_type":"user.updated","data":{"name":"Zoë – 東京 ✓"}}`
	now := time.Now()
	tests := []struct {
		name    string
		header  string
		body    string
		secrets []string
		wantOK  bool
	}{
		{"valid", Sign([]byte(body), now, testSecret), body, []string{testSecret}, true},
		{"tampered body", Sign([]byte(body), now, testSecret), strings.Replace(body, "verified", "denied", 1), []string{testSecret}, false},
		{"expired", Sign([]byte(body), now.Add(-10*time.Minute), testSecret), body, []string{testSecret}, false},
		{"from the future", Sign([]byte(body), now.Add(10*time.Minute), testSecret), body, []string{testSecret}, false},
		{"rotation, second v1 matches", Sign([]byte(body), now, otherSecret, testSecret), body, []string{testSecret}, true},
		{"rotation, receiver lists both", Sign([]byte(body), now, otherSecret), body, []string{testSecret, otherSecret}, true},
		{"wrong secret", Sign([]byte(body), now, otherSecret), body, []string{testSecret}, false},
		{"non-ASCII body", Sign([]byte(unicodeBody), now, testSecret), unicodeBody, []string{testSecret}, true},
		{"spaces and unknown keys", " " + strings.Replace(Sign([]byte(body), now, testSecret), ",", " , v0=zz, ", 1), body, []string{testSecret}, true},
		{"missing header", "", body, []string{testSecret}, false},
		{"malformed t", "t=abc,v1=00", body, []string{testSecret}, false},
		{"no t", strings.SplitN(Sign([]byte(body), now, testSecret), ",", 2)[1], body, []string{testSecret}, false},
		{"v1 not hex", Sign([]byte(body), now, testSecret) + ",v1=0g", body, []string{testSecret}, false},
		{"no secrets", Sign([]byte(body), now, testSecret), body, nil, false},
	}
	for _, s := range scripts() {
		t.Run(s.interpreter, func(t *testing.T) {
			bin := interpreter(t, s)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					// The Go implementation must agree with the script.
					goErr := Verify(tt.header, []byte(tt.body), time.Now(), DefaultTolerance, tt.secrets...)
					if (goErr == nil) != tt.wantOK {
						t.Fatalf("Go Verify(%q) = %v; want ok=%v", tt.header, goErr, tt.wantOK)
					}
					line, ok := runScript(t, bin, s, tt.header, tt.body, tt.secrets)
					if ok != tt.wantOK {
						t.Errorf("%s %s: exit ok = %v (%q); want %v", s.interpreter, s.file, ok, line, tt.wantOK)
					}
					if tt.wantOK && line != "ok" {
						t.Errorf("%s %s printed %q; want %q", s.interpreter, s.file, line, "ok")
					}
					if !tt.wantOK && !strings.HasPrefix(line, "fail: ") {
						t.Errorf("%s %s printed %q; want prefix %q", s.interpreter, s.file, line, "fail: ")
					}
				})
			}
		})
	}
}

// TestScriptsBadInput checks that input the scripts cannot use is a clean failure.
func TestScriptsBadInput(t *testing.T) {
	for _, s := range scripts() {
		t.Run(s.interpreter, func(t *testing.T) {
			bin := interpreter(t, s)
			// Raw stdin here: runScript always sends a well-formed object.
			for _, input := range []string{"not json", `{"header":"t=1,v1=00"}`, `{"header":"t=1,v1=00","body":{"id":"x"}}`, `[]`} {
				cmd := exec.CommandContext(t.Context(), bin, s.file, testSecret)
				cmd.Stdin = strings.NewReader(input)
				out, err := cmd.Output()
				if err == nil || !strings.HasPrefix(string(out), "fail: ") {
					t.Errorf("%s with stdin %q: output %q, err %v; want fail: and a non-zero exit", s.file, input, out, err)
				}
			}
		})
	}
}
