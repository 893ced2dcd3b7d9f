package apidocs

import (
	"html"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

const wantCSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; " +
	"connect-src 'self'; frame-ancestors 'none'"

// newMux mounts the handler exactly as the Handler doc comment tells callers to.
func newMux(specURL, title string) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/v1/docs/", http.StripPrefix("/v1/docs", Handler(specURL, title)))
	return mux
}

func do(t *testing.T, h http.Handler, method, target string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read body of %s %s: %v", method, target, err)
	}
	return res, string(body)
}

// attr returns the unescaped value of the first name="..." attribute in page.
func attr(t *testing.T, page, name string) string {
	t.Helper()
	m := regexp.MustCompile(`\s` + regexp.QuoteMeta(name) + `="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("attribute %s not found in page:\n%s", name, page)
	}
	return html.UnescapeString(m[1])
}

func checkCommonHeaders(t *testing.T, res *http.Response, target string) {
	t.Helper()
	if got := res.Header.Get("Content-Security-Policy"); got != wantCSP {
		t.Errorf("GET %s: Content-Security-Policy = %q; want %q", target, got, wantCSP)
	}
	if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("GET %s: X-Content-Type-Options = %q; want %q", target, got, "nosniff")
	}
}

func TestIndex(t *testing.T) {
	tests := []struct {
		name        string
		specURL     string
		title       string
		wantSpecURL string // as the browser sees it after attribute unescaping
	}{
		{"plain", "/v1/openapi.json", "Gatehouse API", "/v1/openapi.json"},
		{"hostile title", "/v1/openapi.json", `Docs <script>"alert(1)</script>' &amp;`, "/v1/openapi.json"},
		{"quote in spec url", `/v1/openapi.json?x="><script>`, "Docs", "/v1/openapi.json?x=%22%3e%3cscript%3e"},
		{"javascript spec url", "javascript:alert(1)", "Docs", "#ZgotmplZ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mux := newMux(tt.specURL, tt.title)
			res, page := do(t, mux, http.MethodGet, "/v1/docs/", nil)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET /v1/docs/ status = %d; want %d", res.StatusCode, http.StatusOK)
			}
			checkCommonHeaders(t, res, "/v1/docs/")
			if got, want := res.Header.Get("Content-Type"), "text/html; charset=utf-8"; got != want {
				t.Errorf("Content-Type = %q; want %q", got, want)
			}
			if got, want := res.Header.Get("Cache-Control"), "no-cache"; got != want {
				t.Errorf("Cache-Control = %q; want %q", got, want)
			}
			if got := attr(t, page, "data-title"); got != tt.title {
				t.Errorf("data-title = %q; want %q", got, tt.title)
			}
			if got := attr(t, page, "data-spec-url"); got != tt.wantSpecURL {
				t.Errorf("data-spec-url = %q; want %q", got, tt.wantSpecURL)
			}
			// Nothing from the inputs may appear unescaped: the only script tag is app.js.
			for _, tag := range []string{"<script", "</script>"} {
				if got := strings.Count(page, tag); got != 1 {
					t.Errorf("page has %d %s occurrences; want 1 (the app.js tag):\n%s", got, tag, page)
				}
			}
			if strings.Contains(page, `"alert(1)`) {
				t.Errorf("page contains the title's quote unescaped:\n%s", page)
			}
			m := regexp.MustCompile(`<title>([^<]*)</title>`).FindStringSubmatch(page)
			if m == nil || html.UnescapeString(m[1]) != tt.title {
				t.Errorf("<title> = %q; want text %q", m, tt.title)
			}
		})
	}
}

func TestRouting(t *testing.T) {
	js, err := static.ReadFile("static/app.js")
	if err != nil {
		t.Fatalf("read embedded app.js: %v", err)
	}
	css, err := static.ReadFile("static/style.css")
	if err != nil {
		t.Fatalf("read embedded style.css: %v", err)
	}
	tests := []struct {
		target     string
		wantStatus int
		wantType   string // prefix; http.NotFound sets text/plain
		wantCache  string
		wantBody   string // checked only when not empty
	}{
		{"/v1/docs/", http.StatusOK, "text/html; charset=utf-8", "no-cache", ""},
		{"/v1/docs/app.js", http.StatusOK, "text/javascript; charset=utf-8", "public, max-age=3600", string(js)},
		{"/v1/docs/style.css", http.StatusOK, "text/css; charset=utf-8", "public, max-age=3600", string(css)},
		{"/v1/docs/nope.js", http.StatusNotFound, "text/plain", "", ""},
		{"/v1/docs/index.html", http.StatusNotFound, "text/plain", "", ""},
		{"/v1/docs/static/app.js", http.StatusNotFound, "text/plain", "", ""},
		{"/v1/docs/app.js/x", http.StatusNotFound, "text/plain", "", ""},
		{"/v1/docs", http.StatusTemporaryRedirect, "", "", ""}, // ServeMux adds the slash
	}
	mux := newMux("/v1/openapi.json", "Docs")
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			res, body := do(t, mux, http.MethodGet, tt.target, nil)
			if tt.wantStatus == http.StatusTemporaryRedirect {
				// The redirect code has changed across Go releases; any redirect to the slash form is right.
				if res.StatusCode < 300 || res.StatusCode > 399 {
					t.Fatalf("GET %s status = %d; want a redirect", tt.target, res.StatusCode)
				}
				if got, want := res.Header.Get("Location"), "/v1/docs/"; got != want {
					t.Errorf("GET %s Location = %q; want %q", tt.target, got, want)
				}
				return
			}
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("GET %s status = %d; want %d", tt.target, res.StatusCode, tt.wantStatus)
			}
			checkCommonHeaders(t, res, tt.target)
			if got := res.Header.Get("Content-Type"); !strings.HasPrefix(got, tt.wantType) {
				t.Errorf("GET %s Content-Type = %q; want prefix %q", tt.target, got, tt.wantType)
			}
			if got := res.Header.Get("Cache-Control"); got != tt.wantCache {
				t.Errorf("GET %s Cache-Control = %q; want %q", tt.target, got, tt.wantCache)
			}
			if tt.wantBody != "" && body != tt.wantBody {
				t.Errorf("GET %s body differs from the embedded file (%d bytes; want %d)", tt.target, len(body), len(tt.wantBody))
			}
		})
	}
}

// TestUnmountedPaths covers paths as StripPrefix can leave them, with and
// without the leading slash, when the handler is used without a ServeMux.
func TestUnmountedPaths(t *testing.T) {
	h := Handler("/v1/openapi.json", "Docs")
	tests := []struct {
		path       string
		wantStatus int
		wantType   string
	}{
		{"", http.StatusOK, "text/html; charset=utf-8"},
		{"/", http.StatusOK, "text/html; charset=utf-8"},
		{"app.js", http.StatusOK, "text/javascript; charset=utf-8"},
		{"/style.css", http.StatusOK, "text/css; charset=utf-8"},
		{"//app.js", http.StatusNotFound, "text/plain; charset=utf-8"},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL.Path = tt.path
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.wantStatus || rec.Header().Get("Content-Type") != tt.wantType {
			t.Errorf("path %q = %d %q; want %d %q", tt.path, rec.Code, rec.Header().Get("Content-Type"), tt.wantStatus, tt.wantType)
		}
	}
}

func TestMethods(t *testing.T) {
	mux := newMux("/v1/openapi.json", "Docs")
	tests := []struct {
		method     string
		wantStatus int
		wantAllow  string
		wantEmpty  bool
	}{
		{http.MethodGet, http.StatusOK, "", false},
		{http.MethodHead, http.StatusOK, "", true},
		{http.MethodPost, http.StatusMethodNotAllowed, "GET, HEAD", false},
		{http.MethodDelete, http.StatusMethodNotAllowed, "GET, HEAD", false},
	}
	for _, tt := range tests {
		res, body := do(t, mux, tt.method, "/v1/docs/app.js", nil)
		if res.StatusCode != tt.wantStatus {
			t.Errorf("%s /v1/docs/app.js status = %d; want %d", tt.method, res.StatusCode, tt.wantStatus)
		}
		if got := res.Header.Get("Allow"); got != tt.wantAllow {
			t.Errorf("%s /v1/docs/app.js Allow = %q; want %q", tt.method, got, tt.wantAllow)
		}
		if got := body == ""; got != tt.wantEmpty {
			t.Errorf("%s /v1/docs/app.js empty body = %v; want %v", tt.method, got, tt.wantEmpty)
		}
	}
}

func TestConditionalGet(t *testing.T) {
	mux := newMux("/v1/openapi.json", "Docs")
	for _, target := range []string{"/v1/docs/", "/v1/docs/app.js", "/v1/docs/style.css"} {
		res, _ := do(t, mux, http.MethodGet, target, nil)
		etag := res.Header.Get("ETag")
		if etag == "" {
			t.Fatalf("GET %s ETag = %q; want a value", target, etag)
		}
		res, body := do(t, mux, http.MethodGet, target, map[string]string{"If-None-Match": etag})
		if res.StatusCode != http.StatusNotModified || body != "" {
			t.Errorf("GET %s with If-None-Match = %d, %d bytes; want %d, 0 bytes", target, res.StatusCode, len(body), http.StatusNotModified)
		}
		res, _ = do(t, mux, http.MethodGet, target, map[string]string{"If-None-Match": `"stale"`})
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s with stale If-None-Match = %d; want %d", target, res.StatusCode, http.StatusOK)
		}
	}
	// The index embeds the title, so a different title must change its ETag.
	a, _ := do(t, newMux("/v1/openapi.json", "A"), http.MethodGet, "/v1/docs/", nil)
	b, _ := do(t, newMux("/v1/openapi.json", "B"), http.MethodGet, "/v1/docs/", nil)
	if a.Header.Get("ETag") == b.Header.Get("ETag") {
		t.Errorf("index ETag for titles A and B = %q for both; want them to differ", a.Header.Get("ETag"))
	}
}

// TestAppJSHasNoHTMLSinks guards the rule that spec text only ever reaches
// the page through textContent: none of the APIs that parse HTML or code may
// appear in app.js.
func TestAppJSHasNoHTMLSinks(t *testing.T) {
	js, err := static.ReadFile("static/app.js")
	if err != nil {
		t.Fatalf("read embedded app.js: %v", err)
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function(", "createContextualFragment", "setAttribute('style'"} {
		if strings.Contains(string(js), sink) {
			t.Errorf("app.js contains %q; want DOM nodes built with textContent only", sink)
		}
	}
	if !strings.Contains(string(js), "textContent") {
		t.Errorf("app.js does not use textContent; the guard above is checking the wrong file")
	}
}

// TestIndexIsCSPFriendly checks that index.html has nothing the strict CSP
// would block: inline scripts, style elements or attributes, event handlers.
func TestIndexIsCSPFriendly(t *testing.T) {
	page, err := static.ReadFile("static/index.html")
	if err != nil {
		t.Fatalf("read embedded index.html: %v", err)
	}
	for _, tag := range regexp.MustCompile(`<script\b[^>]*>`).FindAllString(string(page), -1) {
		if !strings.Contains(tag, " src=") {
			t.Errorf("index.html has inline script tag %q; want only src= scripts", tag)
		}
	}
	for _, re := range []string{`<style\b`, `\sstyle=`, `\son[a-z]+=`, `javascript:`, `https?://`} {
		if loc := regexp.MustCompile(re).FindStringIndex(string(page)); loc != nil {
			t.Errorf("index.html matches %s at %q; want none", re, page[loc[0]:loc[1]])
		}
	}
}

// TestIndexReferencesEmbeddedAssets parses the asset names referenced by the
// rendered page and checks each is embedded and served, and that every
// embedded asset is referenced.
func TestIndexReferencesEmbeddedAssets(t *testing.T) {
	mux := newMux("/v1/openapi.json", "Docs")
	_, page := do(t, mux, http.MethodGet, "/v1/docs/", nil)
	refs := map[string]bool{}
	for _, re := range []string{`<script\b[^>]*\ssrc="([^"]+)"`, `<link\b[^>]*\shref="([^"]+)"`} {
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(page, -1) {
			if strings.HasPrefix(m[1], "data:") {
				continue // the inline favicon is allowed by img-src data:
			}
			refs[m[1]] = true
		}
	}
	for _, want := range []string{"app.js", "style.css"} {
		if !refs[want] {
			t.Errorf("index.html references %v; want it to include %q", refs, want)
		}
	}
	for ref := range refs {
		if strings.Contains(ref, ":") || strings.HasPrefix(ref, "/") {
			t.Errorf("index.html references %q; want a relative same-origin asset name", ref)
			continue
		}
		if _, err := fs.Stat(static, path.Join("static", ref)); err != nil {
			t.Errorf("index.html references %q, which is not embedded: %v", ref, err)
		}
		if res, _ := do(t, mux, http.MethodGet, "/v1/docs/"+ref, nil); res.StatusCode != http.StatusOK {
			t.Errorf("GET /v1/docs/%s status = %d; want %d", ref, res.StatusCode, http.StatusOK)
		}
	}
	entries, err := fs.ReadDir(static, "static")
	if err != nil {
		t.Fatalf("list embedded files: %v", err)
	}
	for _, e := range entries {
		if e.Name() != "index.html" && !refs[e.Name()] {
			t.Errorf("embedded %q is not referenced by index.html", e.Name())
		}
	}
}

// TestAppJSMatchesIndex checks that every element id and data attribute the
// script reads exists in index.html, so a rename on one side fails here.
func TestAppJSMatchesIndex(t *testing.T) {
	js, err := static.ReadFile("static/app.js")
	if err != nil {
		t.Fatalf("read embedded app.js: %v", err)
	}
	page, err := static.ReadFile("static/index.html")
	if err != nil {
		t.Fatalf("read embedded index.html: %v", err)
	}
	ids := regexp.MustCompile(`\$\('([A-Za-z0-9_-]+)'\)`).FindAllStringSubmatch(string(js), -1)
	data := regexp.MustCompile(`dataset\.([A-Za-z0-9]+)`).FindAllStringSubmatch(string(js), -1)
	if len(ids) == 0 || len(data) == 0 {
		t.Fatalf("found %d id and %d dataset lookups in app.js; want some of each", len(ids), len(data))
	}
	for _, m := range ids {
		if !strings.Contains(string(page), `id="`+m[1]+`"`) {
			t.Errorf("app.js looks up #%s; index.html has no such id", m[1])
		}
	}
	for _, m := range data {
		name := "data-" + regexp.MustCompile(`[A-Z]`).ReplaceAllStringFunc(m[1], func(s string) string { return "-" + strings.ToLower(s) })
		if !strings.Contains(string(page), " "+name+`="`) {
			t.Errorf("app.js reads dataset.%s; index.html has no %s attribute", m[1], name)
		}
	}
}

// TestDocsSidebarShowsWholePaths guards the sidebar against cutting paths
// short: several share a long prefix (/v1/auth/{app_id}/tokens/…), so an
// ellipsis makes them look alike. The browser test (e2e/sdk
// docs.browser.test.mjs) checks what Chromium shows; this keeps the rule
// visible to `go test`.
func TestDocsSidebarShowsWholePaths(t *testing.T) {
	css, err := static.ReadFile("static/style.css")
	if err != nil {
		t.Fatalf("read embedded style.css: %v", err)
	}
	rules := regexp.MustCompile(`(?s)([^{}]+)\{([^{}]*)\}`).FindAllStringSubmatch(string(css), -1)
	found := false
	for _, r := range rules {
		selector := strings.TrimSpace(regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(r[1], ""))
		if !strings.Contains(selector, ".nav") {
			continue
		}
		found = found || strings.Contains(selector, ".nav-path")
		for _, bad := range []string{"ellipsis", "nowrap"} {
			if strings.Contains(r[2], bad) {
				t.Errorf("style.css rule %q has %q; want sidebar paths whole", selector, bad)
			}
		}
	}
	if !found {
		t.Errorf("style.css has no .nav-path rule; want one that lets paths wrap")
	}
	js, err := static.ReadFile("static/app.js")
	if err != nil {
		t.Fatalf("read embedded app.js: %v", err)
	}
	if !strings.Contains(string(js), "'nav-path'") {
		t.Errorf("app.js does not build .nav-path elements; the rule above checks the wrong class")
	}
}
