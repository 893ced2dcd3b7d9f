package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

// TestBrowserFacingHeaders: with an https base_url every answer carries
// Strict-Transport-Security, and every answer (HTML pages, their errors,
// redirects, plain-text and JSON errors) a Content-Security-Policy with
// frame-ancestors 'none', X-Frame-Options DENY and nosniff, for GET and
// HEAD (curl -I) alike; with an http base_url (development on localhost)
// no HSTS.
func TestBrowserFacingHeaders(t *testing.T) {
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		name, baseURL string
		dev, hsts     bool
	}{
		{"https base_url", "https://auth.example.test", false, true},
		{"http base_url in development", "", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			settings := map[string]string{}
			if tc.baseURL != "" {
				settings["GATEHOUSE_BASE_URL"] = tc.baseURL
			}
			if tc.dev {
				settings["GATEHOUSE_DEV"] = "true"
			}
			sys := newSystem(t, "sqlite", servertest.Options{Serve: true, Settings: settings})
			e := envOf(t, sys, "headers")
			open := "/v1/auth/" + e.app.ID + "/magic_links/open"
			requests := []struct {
				method, path, contentType string
				status                    int
				html                      bool
			}{
				{"GET", "/", "", http.StatusFound, true},
				{"HEAD", "/", "", http.StatusFound, true},
				{"GET", "/v1/docs", "", http.StatusMovedPermanently, true},
				{"GET", "/v1/docs/", "", http.StatusOK, true},
				{"HEAD", "/v1/docs/", "", http.StatusOK, true},
				{"GET", "/v1/docs/style.css", "", http.StatusOK, false},
				{"GET", "/v1/docs/missing.js", "", http.StatusNotFound, false},
				{"GET", "/m/AAAAAAAAAAAAAAAA", "", http.StatusNotFound, true},
				{"HEAD", "/m/AAAAAAAAAAAAAAAA", "", http.StatusNotFound, true},
				{"GET", "/m/short", "", http.StatusNotFound, true},
				{"GET", open + "?sct_magic=nope", "", http.StatusNotFound, true},
				{"GET", "/v1/auth/no-such-app/magic_links/open?sct_magic=nope", "", http.StatusNotFound, false},
				{"POST", open, "text/plain", http.StatusUnsupportedMediaType, true},
				{"POST", open, "application/x-www-form-urlencoded", http.StatusBadRequest, true},
				{"GET", "/healthz", "", http.StatusOK, false},
				{"GET", "/no/such/path", "", http.StatusNotFound, false},
				{"GET", "/v1/auth/" + e.app.ID + "/current_user", "", http.StatusUnauthorized, false},
			}
			for _, rq := range requests {
				req, err := http.NewRequest(rq.method, e.URL+rq.path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if rq.contentType != "" {
					req.Body = io.NopCloser(strings.NewReader("decision="))
					req.Header.Set("Content-Type", rq.contentType)
				}
				res, err := client.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", rq.method, rq.path, err)
				}
				res.Body.Close()
				h := res.Header
				what := rq.method + " " + rq.path
				if res.StatusCode != rq.status {
					t.Errorf("%s = %d; want %d", what, res.StatusCode, rq.status)
				}
				if isHTML := strings.HasPrefix(h.Get("Content-Type"), "text/html"); isHTML != rq.html {
					t.Errorf("%s Content-Type = %q; want HTML %v", what, h.Get("Content-Type"), rq.html)
				}
				if got := h.Get("Strict-Transport-Security"); (got == "max-age=63072000; includeSubDomains") != tc.hsts || (!tc.hsts && got != "") {
					t.Errorf("%s Strict-Transport-Security = %q; want it %v", what, got, tc.hsts)
				}
				if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src") {
					t.Errorf("%s Content-Security-Policy = %q; want default-src and frame-ancestors 'none'", what, csp)
				}
				if got := h.Get("X-Frame-Options"); got != "DENY" {
					t.Errorf("%s X-Frame-Options = %q; want DENY", what, got)
				}
				if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
					t.Errorf("%s X-Content-Type-Options = %q; want nosniff", what, got)
				}
			}
			if tc.dev {
				// The development outbox is JSON, with the same headers.
				r := e.do(t, "GET", "/dev/outbox", nil, nil)
				if r.status != 200 || r.header.Get("X-Frame-Options") != "DENY" || !strings.Contains(r.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
					t.Errorf("GET /dev/outbox = %d, headers %v; want 200 with the security headers", r.status, r.header)
				}
			}
		})
	}
}

// TestShortLinkRateLimit: short links opened from one address beyond
// ratelimit.short_link_per_ip get a 429 page with Retry-After before the
// code is looked up, so a right code is refused too; other addresses are
// not affected, and the budget refills with time.
func TestShortLinkRateLimit(t *testing.T) {
	limits := servertest.LooseLimits()
	limits.ShortLinkPerIP = ratelimit.Rule{Limit: 3, Period: 10 * time.Minute}
	forEach(t, servertest.Options{Serve: true, Limits: &limits,
		Settings: map[string]string{"GATEHOUSE_HTTP_TRUSTED_PROXIES": "127.0.0.1/32"}}, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "shortlimit")
		phone := "+14155552671"
		if r := e.do(t, "POST", e.authPath("/magic_links/login"), nil, map[string]any{"identifier": phone}); r.status != 200 {
			t.Fatalf("POST magic_links/login = %d %s", r.status, r.raw)
		}
		m, _ := e.Mail.Last(phone)
		short := m.Text[strings.Index(m.Text, e.URL+"/m/"):]
		short = short[:strings.IndexByte(short, ' ')]

		get := func(url string, headers map[string]string) (*http.Response, string) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return res, string(b)
		}
		for i := range 3 {
			if res, _ := get(e.URL+"/m/AAAAAAAAAAAAAAA"+string(rune('A'+i)), nil); res.StatusCode != http.StatusNotFound {
				t.Fatalf("guess %d = %d; want 404 within the budget", i+1, res.StatusCode)
			}
		}
		for _, url := range []string{e.URL + "/m/AAAAAAAAAAAAAAAZ", short} {
			res, body := get(url, nil)
			if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" ||
				!strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "Too many links opened") ||
				!strings.Contains(res.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
				t.Errorf("GET %s after the budget = %d %v %.200s; want a 429 page with Retry-After", url, res.StatusCode, res.Header, body)
			}
		}
		if res, _ := get(short, map[string]string{"X-Forwarded-For": "198.51.100.7"}); res.StatusCode != http.StatusSeeOther {
			t.Errorf("GET the short link from another address = %d; want 303", res.StatusCode)
		}
		e.Clock.Advance(201 * time.Second) // one emission interval (10m / 3)
		if res, _ := get(short, nil); res.StatusCode != http.StatusSeeOther {
			t.Errorf("GET the short link once the budget refilled = %d; want 303", res.StatusCode)
		}
	})
}
