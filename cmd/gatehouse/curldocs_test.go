package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestQuickstartCurl runs docs/quickstart-curl.md as a reader would: every
// ```sh block, verbatim and in order, in one bash (errexit, nounset,
// pipefail) against a fresh development server, with only GH and DATA set
// to where that server is. It checks what the page tells the reader to
// expect: each step succeeds, sign-out ends the session, the second use of a
// magic link is refused.
func TestQuickstartCurl(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("docs/quickstart-curl.md needs %s, which is not installed", tool)
			}
			t.Skipf("docs/quickstart-curl.md needs %s, which is not installed", tool)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "quickstart-curl.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?ms)^```sh\n(.*?)^```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 10 {
		t.Fatalf("docs/quickstart-curl.md has %d sh blocks; want the whole walk-through", len(blocks))
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for _, b := range blocks {
		script.WriteString(b[1])
	}

	// A fixed port: the links the server sends are built from its address.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s := serveInProcess(t, []string{"GATEHOUSE_DATA_DIR=" + dir}, "serve", "--dev", "--addr", addr)

	cmd := exec.Command("bash", "-c", script.String())
	cmd.Env = append(os.Environ(), "GH="+s.url, "DATA="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the walk-through failed (%v):\n%s\nserver log:\n%s", err, out, s.logs.String())
	}
	for _, want := range []string{
		`"name": "Demo"`,
		`"email_verified": true`,
		"sign-out: 200",
		"current_user after sign-out: 401",
		"refresh after sign-out: 401",
		"poll before the link is opened: 409",
		"the app's page gets sct_magic: ey",
		"the link a second time: 404",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walk-through's output does not show %q:\n%s", want, out)
		}
	}
	if n := len(regexp.MustCompile(`ada-[0-9]+@example\.com`).FindAllString(string(out), -1)); n < 3 {
		t.Errorf("the signed-in user's e-mail appears %d times; want after the refresh, and for both magic-link sessions:\n%s", n, out)
	}
}
