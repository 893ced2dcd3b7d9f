package httpapi

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"strconv"
	"strings"
)

// Response headers every answer carries (security.md "Browser-facing
// answers"), set before any handler runs: a page that needs a looser
// Content-Security-Policy (the consent page's nonce, the docs page's own
// script) replaces it, keeping frame-ancestors 'none'. One place, so an
// answer that is HTML by accident (http.Redirect's body, an http.Error page)
// is covered as well as the pages.
const (
	// defaultCSP allows nothing: no script, style, image, form or frame.
	// JSON, plain text and redirect bodies need nothing more.
	defaultCSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
	// hstsValue is sent when base_url is https: two years, subdomains
	// included, no preload (that is the operator's choice, made with the
	// browsers' list, not by a server).
	hstsValue = "max-age=63072000; includeSubDomains"
)

// secureHeaders sets the headers above on every answer, and
// Strict-Transport-Security when the public address (base_url) is https:
// behind a proxy that ends TLS the server sees plain HTTP, so the
// configured address decides, not the connection.
func secureHeaders(baseURL string, next http.Handler) http.Handler {
	hsts := strings.HasPrefix(strings.ToLower(baseURL), "https://")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if hsts {
			h.Set("Strict-Transport-Security", hstsValue)
		}
		h.Set("Content-Security-Policy", defaultCSP)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// noticePage is a short page without an app's branding: what a browser
// gets at a short link that is unknown, or opened too often from one
// address.
var noticePage = template.Must(template.ParseFS(noticeFiles, "pages/notice.html"))

//go:embed pages/notice.html
var noticeFiles embed.FS

type noticeView struct {
	Title, Message, Nonce string
}

// renderNotice writes a notice page with status; retryAfter > 0 adds
// Retry-After (seconds).
func (s *Server) renderNotice(w http.ResponseWriter, r *http.Request, status int, v noticeView, retryAfter int) {
	var extra http.Header
	if retryAfter > 0 {
		extra = http.Header{"Retry-After": {strconv.Itoa(retryAfter)}}
	}
	s.renderPage(w, r, status, "notice", extra, func(nonce string, buf *bytes.Buffer) (string, error) {
		v.Nonce = nonce
		return "default-src 'none'; style-src 'nonce-" + nonce + "'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
			noticePage.Execute(buf, v)
	})
}
