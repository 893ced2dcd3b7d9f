package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHealthcheck: `gatehouse healthcheck` exits 0 when /healthz answers
// 200, at --url or at the address the settings give, and 1 with one line
// otherwise.
func TestHealthcheck(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))

	check := func(name string, environ []string, wantCode int, wantErr string, args ...string) {
		t.Helper()
		code, stdout, stderr := gatehouse(t, environ, append([]string{"healthcheck"}, args...)...)
		if code != wantCode || stdout != "" || !strings.Contains(stderr, wantErr) || wantErr == "" && stderr != "" {
			t.Errorf("%s: healthcheck %v = %d, %q, %q; want %d and %q", name, args, code, stdout, stderr, wantCode, wantErr)
		}
	}
	check("--url", nil, 0, "", "--url", srv.URL+"/healthz")
	check("http.addr", []string{"GATEHOUSE_HTTP_ADDR=127.0.0.1:" + port}, 0, "")
	check("unspecified host", []string{"GATEHOUSE_HTTP_ADDR=0.0.0.0:" + port}, 0, "")
	check("--addr", nil, 0, "", "--addr", "127.0.0.1:"+port)
	check("wrong path", nil, 1, "404 Not Found", "--url", srv.URL+"/nope")
	status = http.StatusServiceUnavailable
	check("not healthy", nil, 1, "503 Service Unavailable", "--url", srv.URL+"/healthz")
	srv.Close()
	check("nothing listening", nil, 1, "gatehouse: healthcheck: ", "--url", srv.URL+"/healthz")
	check("port 0", []string{"GATEHOUSE_HTTP_ADDR=127.0.0.1:0"}, 2, "give --url")
	check("stray argument", nil, 2, `"extra"`, "extra")
}

func TestHealthURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080":  "http://127.0.0.1:8080/healthz",
		"0.0.0.0:8080":    "http://127.0.0.1:8080/healthz",
		":8080":           "http://127.0.0.1:8080/healthz",
		"[::]:8080":       "http://[::1]:8080/healthz",
		"10.1.2.3:9000":   "http://10.1.2.3:9000/healthz",
		"auth.local:8080": "http://auth.local:8080/healthz",
		"[fd00::1]:8080":  "http://[fd00::1]:8080/healthz",
	} {
		if got, err := healthURL(addr); err != nil || got != want {
			t.Errorf("healthURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
}
