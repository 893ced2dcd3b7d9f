// Package apidocs serves a self-contained HTML reference page for the server's
// OpenAPI 3.1 document. Every byte of the page (HTML, script and stylesheet) is
// embedded in the binary, so the page works offline and under a strict
// Content-Security-Policy: no CDN, no external fonts, no inline script or style.
//
// The script renders the document in the browser: info.description first (the
// overview), then the operations grouped by tag, each with the anchor
// #op-<operationId>. Descriptions are Markdown; the script parses the subset
// they use into DOM nodes, so document text never becomes markup.
package apidocs

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
)

// static holds the page assets. It is the package's only package-level
// variable because go:embed requires one; it is never written to.
//
//go:embed static/index.html static/app.js static/style.css
var static embed.FS

// contentSecurityPolicy allows only same-origin script, style and fetches, and
// forbids framing. data: images cover the inline favicon in index.html.
const contentSecurityPolicy = "default-src 'self'; img-src 'self' data:; style-src 'self'; " +
	"script-src 'self'; connect-src 'self'; frame-ancestors 'none'"

const (
	cacheIndex  = "no-cache"
	cacheAssets = "public, max-age=3600"
)

// asset is one fully prepared response body with its headers.
type asset struct {
	body         []byte
	contentType  string
	cacheControl string
	etag         string
}

// handler serves the prepared assets by their path below the mount point.
type handler struct {
	assets map[string]asset
}

// pageData is what index.html may see. Both values end up in attributes or
// element text and are escaped by html/template, never inside script.
type pageData struct {
	SpecURL string
	Title   string
}

// Handler serves the docs page. specURL is the path of the JSON document the
// page fetches (e.g. "/v1/openapi.json"); title is shown in the header.
// Requests for "" or "/" under the mount serve index.html; "app.js" and
// "style.css" serve the script and stylesheet; anything else is 404. Only GET
// and HEAD are allowed.
//
// The page refers to its assets by relative URLs, so it must be served from a
// path ending in a slash. Mount it on a ServeMux like this (the mux redirects
// "/v1/docs" to "/v1/docs/"):
//
//	mux.Handle("/v1/docs/", http.StripPrefix("/v1/docs", apidocs.Handler("/v1/openapi.json", "Gatehouse API")))
//
// The page's script fetches specURL from the same origin, as the
// Content-Security-Policy only allows connect-src 'self'.
func Handler(specURL, title string) http.Handler {
	tmpl, err := template.ParseFS(static, "static/index.html")
	if err != nil {
		// The template is embedded at build time, so this is a programming error.
		panic(fmt.Sprintf("apidocs: parse embedded index.html: %v", err))
	}
	var page bytes.Buffer
	if err := tmpl.Execute(&page, pageData{SpecURL: specURL, Title: title}); err != nil {
		panic(fmt.Sprintf("apidocs: render index.html: %v", err))
	}
	return &handler{assets: map[string]asset{
		"":          newAsset(page.Bytes(), "text/html; charset=utf-8", cacheIndex),
		"app.js":    newAsset(mustRead("static/app.js"), "text/javascript; charset=utf-8", cacheAssets),
		"style.css": newAsset(mustRead("static/style.css"), "text/css; charset=utf-8", cacheAssets),
	}}
}

// mustRead returns an embedded file; a missing one is a build-time mistake.
func mustRead(name string) []byte {
	b, err := static.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("apidocs: read embedded %s: %v", name, err))
	}
	return b
}

// newAsset prepares a body with a strong ETag so no-cache revalidation of the
// index (and of assets after max-age) can be answered with 304.
func newAsset(body []byte, contentType, cacheControl string) asset {
	sum := sha256.Sum256(body)
	return asset{
		body:         body,
		contentType:  contentType,
		cacheControl: cacheControl,
		etag:         `"` + hex.EncodeToString(sum[:12]) + `"`,
	}
}

// ServeHTTP serves the index or an asset. The path is taken as left by
// http.StripPrefix, so it may or may not start with a slash.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", contentSecurityPolicy)
	hdr.Set("X-Content-Type-Options", "nosniff")

	a, ok := h.assets[strings.TrimPrefix(r.URL.Path, "/")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hdr.Set("Content-Type", a.contentType)
	hdr.Set("Cache-Control", a.cacheControl)
	hdr.Set("ETag", a.etag)
	// ServeContent handles HEAD, If-None-Match and Range for us; the zero
	// modtime keeps it from sending a meaningless Last-Modified.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
