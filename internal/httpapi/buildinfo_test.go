package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/httpapi"
)

// TestHealthAndMetricsNameTheBuild: /healthz answers status ok (what probes
// read) plus the build's version, commit, commit date and Go version, and
// /metrics has gatehouse_build_info with the same labels, on the API
// listener and on a metrics listener of its own. Neither needs the database.
func TestHealthAndMetricsNameTheBuild(t *testing.T) {
	api := httpapi.New(httpapi.Deps{Version: "1.2.3", Commit: "5a1f99d0a1b2+dirty", BuildDate: "2026-11-26T14:25:46Z", MetricsOnAPI: true})
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	apart := httptest.NewServer(api.MetricsHandler())
	defer apart.Close()

	code, body := getBody(t, srv.URL+"/healthz")
	var health map[string]any
	if err := json.Unmarshal([]byte(body), &health); err != nil || code != http.StatusOK {
		t.Fatalf("GET /healthz = %d %s (%v); want 200 JSON", code, body, err)
	}
	want := map[string]any{"status": "ok", "version": "1.2.3", "commit": "5a1f99d0a1b2+dirty",
		"build_date": "2026-11-26T14:25:46Z", "go_version": runtime.Version()}
	for k, v := range want {
		if health[k] != v {
			t.Errorf("/healthz %s = %v; want %v (body %s)", k, health[k], v, body)
		}
	}
	if len(health) != len(want) {
		t.Errorf("/healthz = %s; want exactly the fields %v", body, want)
	}

	line := `gatehouse_build_info{commit="5a1f99d0a1b2+dirty",go_version="` + runtime.Version() + `",version="1.2.3"} 1`
	for _, url := range []string{srv.URL + "/metrics", apart.URL + "/metrics"} {
		code, body := getBody(t, url)
		if code != http.StatusOK || !strings.Contains(body, line+"\n") {
			t.Errorf("GET %s = %d; want 200 with %s", url, code, line)
		}
	}
}

// TestHealthWithoutBuildDetails: an unknown commit and date are left out
// rather than sent empty.
func TestHealthWithoutBuildDetails(t *testing.T) {
	srv := httptest.NewServer(httpapi.New(httpapi.Deps{Version: "0.1.0"}).Handler())
	defer srv.Close()
	code, body := getBody(t, srv.URL+"/healthz")
	if want := `{"status":"ok","version":"0.1.0","go_version":"` + runtime.Version() + `"}`; code != 200 || strings.TrimSpace(body) != want {
		t.Errorf("GET /healthz = %d %s; want 200 %s", code, body, want)
	}
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}
