package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestRequestLog: with log.requests on, each request is one INFO line with
// its route pattern, status, duration and request id, and never its path
// (which holds a challenge token here) or query string; off (the default),
// requests get no line of their own.
func TestRequestLog(t *testing.T) {
	const token = "tok-do-not-log-0123456789abcdef"
	for _, on := range []string{"true", "false"} {
		t.Run("log.requests="+on, func(t *testing.T) {
			sys := newSystem(t, store.SQLite, servertest.Options{Serve: true, Settings: map[string]string{"GATEHOUSE_LOG_REQUESTS": on}})
			e := envOf(t, sys, "Acme")
			path := "/v1/auth/" + e.app.ID + "/challenges/" + token + "?identifier=ada%40example.com"
			r := e.do(t, "GET", path, map[string]string{"X-Request-Id": "req-log-test-1"}, nil)
			if r.status < 400 {
				t.Fatalf("GET a made-up challenge = %d; want a refusal", r.status)
			}
			e.do(t, "GET", "/healthz", nil, nil)
			lines := sys.Logs.Lines(`"msg":"request"`)
			if strings.Contains(sys.Logs.String(), token) || strings.Contains(sys.Logs.String(), "identifier=") {
				t.Errorf("the log holds the path's token or the query string:\n%s", sys.Logs.String())
			}
			if on == "false" {
				if len(lines) != 0 {
					t.Errorf("log.requests off logged request lines:\n%s", strings.Join(lines, "\n"))
				}
				return
			}
			var found int
			for _, l := range lines {
				var rec struct {
					Level, Method, Route string
					RequestID            string `json:"request_id"`
					Status               int
					Duration             *float64 `json:"duration_ms"`
				}
				if err := json.Unmarshal([]byte(l), &rec); err != nil {
					t.Fatalf("request line %s: %v", l, err)
				}
				if rec.Route == "/healthz" {
					t.Errorf("/healthz was logged: %s", l)
				}
				if rec.RequestID == "" {
					t.Errorf("request line without request_id: %s", l)
				}
				if rec.Route == "/v1/auth/{app_id}/challenges/{token}" {
					found++
					if rec.Level != "INFO" || rec.Method != "GET" || rec.Status != r.status || rec.Duration == nil {
						t.Errorf("request line = %s; want INFO, GET, status %d, duration_ms", l, r.status)
					}
				}
			}
			if found != 1 {
				t.Errorf("%d request lines name the challenge route; want 1:\n%s", found, strings.Join(lines, "\n"))
			}
		})
	}
}
