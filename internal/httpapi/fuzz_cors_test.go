package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// FuzzCORS sends any path, method and Origin to the real handler with two
// apps, A (https://a.example) and B (https://b.example plus an allowed
// origin). Credentialed CORS is granted only by echoing an origin that the app
// named in the path configured, never "*" or another app's origin, always with
// Vary: Origin; preflights answer 204 whatever the path.
func FuzzCORS(f *testing.F) {
	for _, s := range [][3]string{
		{"/v1/auth/{A}/users", "GET", "https://a.example"},
		{"/v1/auth/{A}/users", "OPTIONS", "https://a.example"},
		{"/v1/auth/{B}/otps/login", "OPTIONS", "https://b2.example:8443"},
		{"/v1/auth/{B}/users", "GET", "https://a.example"},
		{"/v1/{A}/users", "GET", "https://a.example"},
		{"/v1/apps/{A}", "GET", "https://A.example"},
		{"/v1/apps/{A}", "GET", "https://a.example/"},
		{"/v1/apps/{A}", "GET", "null"},
		{"/v1/apps/{A}", "GET", "*"},
		{"/v1/workspaces/{A}/apps", "OPTIONS", "https://a.example"},
		{"/v1/auth/{B}/../{A}/users", "GET", "https://a.example"},
		{"/v1/auth/{B}%2F{A}/users", "GET", "https://a.example"},
		{"/v1//auth/{A}/users", "GET", "https://a.example"},
		{"/v1/auth/{A}/users", "GET", "https://a.example, https://b.example"},
		{"/v1/docs/{A}", "GET", "https://a.example"},
		// The console and hosted pages never grant CORS, but vary with Origin.
		{"/login/", "0", "0"},
		{"/login/{A}", "POST", "https://a.example"},
		{"/account/{A}", "OPTIONS", "https://a.example"},
		{"/console/", "GET", "https://evil.example"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	sys := newSystem(f, store.SQLite, servertest.Options{})
	ws, _ := sys.Workspace(f, "Acme")
	a := sys.App(f, ws.ID, "A", func(s *tenant.AppSettings) { s.Origin = ptr("https://a.example") })
	b := sys.App(f, ws.ID, "B", func(s *tenant.AppSettings) {
		s.Origin = ptr("https://b.example")
		s.AllowedOrigins = &[]string{"https://b2.example:8443"}
	})
	origins := map[string][]string{a.ID: {"https://a.example"}, b.ID: {"https://b.example", "https://b2.example:8443"}}
	h := sys.API().Handler()
	f.Fuzz(func(t *testing.T, path, method, origin string) {
		path = strings.NewReplacer("{A}", a.ID, "{B}", b.ID).Replace(path)
		u, err := url.ParseRequestURI(path)
		if err != nil || !strings.HasPrefix(path, "/") || !validMethod(method) || !validHeader(origin) {
			return
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.Method, r.URL, r.RequestURI = method, u, path
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)

		if w.Code >= 500 {
			t.Fatalf("%s %s (Origin %q) = %d %s", method, path, origin, w.Code, w.Body)
		}
		if origin != "" && !strings.Contains(strings.Join(w.Header().Values("Vary"), ","), "Origin") {
			t.Fatalf("%s %s (Origin %q): no Vary: Origin", method, path, origin)
		}
		if method == http.MethodOptions && w.Code != http.StatusNoContent && origin != "" {
			t.Fatalf("preflight %s (Origin %q) = %d; want 204", path, origin, w.Code)
		}
		acao := w.Header().Get("Access-Control-Allow-Origin")
		for id, list := range origins {
			// The client SDK's paths: an allowed origin is always granted.
			if strings.HasPrefix(u.Path, "/v1/auth/"+id+"/") && slices.Contains(list, origin) && acao != origin {
				t.Fatalf("%s %s (Origin %q): Access-Control-Allow-Origin %q; want the origin", method, path, origin, acao)
			}
		}
		if acao == "" {
			if w.Header().Get("Access-Control-Allow-Credentials") != "" {
				t.Fatalf("%s %s (Origin %q): credentials allowed without an origin", method, path, origin)
			}
			return
		}
		if acao != origin || w.Header().Get("Access-Control-Allow-Credentials") != "true" {
			t.Fatalf("%s %s (Origin %q): Access-Control-Allow-Origin %q", method, path, origin, acao)
		}
		granted := false
		for id, list := range origins {
			for _, o := range list {
				// The app must be named in the path as a whole segment.
				if o == origin && strings.Contains(u.Path+"/", "/"+id+"/") {
					granted = true
				}
			}
		}
		if !granted {
			t.Fatalf("%s %s: CORS granted to %q, which no app named in the path allows", method, path, origin)
		}
	})
}

func validMethod(m string) bool {
	return m != "" && strings.IndexFunc(m, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r) }) < 0
}

func validHeader(v string) bool {
	return strings.IndexFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) < 0
}
