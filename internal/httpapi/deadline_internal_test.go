package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
)

// TestRouteDeadlines: every route a router registers runs with a deadline of
// the request timeout, the long routes with their extra wait on top; the 404
// fallback, which does no work, has none; a zero timeout sets none.
func TestRouteDeadlines(t *testing.T) {
	const timeout = time.Minute
	for _, tc := range []struct {
		timeout          time.Duration
		pattern, request string
		want             time.Duration // 0: no deadline
	}{
		{timeout, "POST /v1/workspaces", "/v1/workspaces", timeout},
		{timeout, "GET /dev/outbox", "/dev/outbox", timeout + outboxMaxWait},
		{timeout, "POST /v1/apps/{app_id}/message_service_providers/test", "/v1/apps/a1/message_service_providers/test", timeout + 20*time.Second},
		{0, "POST /v1/workspaces", "/v1/workspaces", 0},
	} {
		rt := newRouter(tc.timeout)
		var left time.Duration
		var has bool
		probe := func(_ http.ResponseWriter, r *http.Request) {
			var d time.Time
			d, has = r.Context().Deadline()
			left = time.Until(d)
		}
		rt.HandleFunc(tc.pattern, probe)
		rt.fallback(probe)
		method, _, _ := strings.Cut(tc.pattern, " ")
		rt.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, tc.request, nil))
		switch {
		case tc.want == 0 && has:
			t.Errorf("%s with timeout %v: deadline in %v; want none", tc.pattern, tc.timeout, left)
		case tc.want != 0 && (!has || left > tc.want || left < tc.want-10*time.Second):
			t.Errorf("%s: deadline set %v, in %v; want one in %v", tc.pattern, has, left, tc.want)
		}
		rt.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/nowhere", nil))
		if has {
			t.Errorf("the 404 fallback has a deadline in %v; want none", left)
		}
	}
	if got := LongestDeadline(timeout); got != timeout+20*time.Second {
		t.Errorf("LongestDeadline(%v) = %v; want %v (the provider test's wait on top)", timeout, got, timeout+20*time.Second)
	}
}

// TestLongRoutesAreRoutes: every long route names a registered route, so a
// renamed path cannot silently lose its extra wait.
func TestLongRoutesAreRoutes(t *testing.T) {
	s := New(Deps{Dev: true})
	registered := map[string]bool{}
	for _, r := range s.Routes() {
		registered[r.Method+" "+r.Path] = true
	}
	for pattern := range longRoutes {
		if !registered[pattern] {
			t.Errorf("longRoutes names %q, which is not a registered route", pattern)
		}
	}
}

// TestTimeoutAnswers: what ran out of time answers 503 timeout with
// Retry-After, whether the request's deadline passed or the database gave
// up (statement, lock, idle transaction, SQLite busy: errs.ErrTimeout); an
// outage stays the 503 without a code; a client that went away is 499.
func TestTimeoutAnswers(t *testing.T) {
	s := New(Deps{})
	for _, tc := range []struct {
		err        error
		status     int
		code       string
		retryAfter bool
	}{
		{fmt.Errorf("update workspace: %w", context.DeadlineExceeded), 503, "timeout", true},
		{fmt.Errorf("update workspace: %w: SQLSTATE 55P03", errs.ErrTimeout), 503, "timeout", true},
		{fmt.Errorf("get app: %w", errs.ErrUnavailable), 503, "", false},
		{fmt.Errorf("get app: %w", context.Canceled), 499, "", false},
		{errors.New("something else"), 500, "", false},
	} {
		e := s.fail(context.Background(), tc.err)
		if e.status != tc.status || e.Code != tc.code || e.Error() == "" {
			t.Errorf("fail(%v) = %d %q %q; want %d %q", tc.err, e.status, e.Code, e.Error(), tc.status, tc.code)
		}
		if got := e.header.Get("Retry-After") != ""; got != tc.retryAfter {
			t.Errorf("fail(%v) Retry-After %q; want one: %v", tc.err, e.header.Get("Retry-After"), tc.retryAfter)
		}
	}
}
