package httpapi

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// The magic-link consent page (security.md R-ML-2, R-ML-4): every e-mailed
// link lands here. Opening it changes nothing. The device that asked for the
// link is sent on to the app at once (one click: the link); any other device
// is asked "Was this you?" with the requesting device's details, and to pick
// the number that device shows among three. Only Approve with the right
// number releases a session to the poller; a wrong or missing number denies.
// Served as HTML by the binary, styled with the app's name and logo, and
// usable without JavaScript.

//go:embed pages/magic_link.html
var pageFiles embed.FS

var magicLinkPage = template.Must(template.ParseFS(pageFiles, "pages/magic_link.html"))

type magicLinkView struct {
	Page, Title, Nonce, Action, Token, LoginURL string
	RequestedAt, ExpiresAt                      string
	App                                         tenant.App
	Link                                        signin.LinkConsent
}

// maxConsentForm bounds the consent form's body: a token, a number and two words.
const maxConsentForm = 16 << 10

var openMagicLinkOp = operation{id: "openMagicLink", method: "GET", path: "/v1/auth/{app_id}/magic_links/open", summary: "Open an e-mailed magic link (consent page)", tag: "Sign-in",
	contentType: "text/html", errors: []string{"503"},
	pages: map[int]string{http.StatusSeeOther: "The device that asked: on to the app's login page with `sct_magic`", http.StatusNotFound: "Unknown app, or an unknown, used or expired link"},
	desc:  "Where e-mailed links land (`?sct_magic=<token>`). Opening it changes nothing. The device that asked for the link is redirected (303) to the app's login page with `sct_magic`, where the client SDK signs it in; any other device gets an HTML page asking \"Was this you?\" with the requesting device, place and time, asking which number that device shows among three (the match number and two decoys, the same three in the same order on every opening, none pre-selected), with Approve and Deny buttons. The page never shows which number is right. 404 page: unknown, used or expired link."}

func (s *Server) magicLinkOpen(w http.ResponseWriter, r *http.Request) {
	app, ok := s.pageApp(w, r)
	if !ok {
		return
	}
	tok := strings.TrimSpace(r.URL.Query().Get("sct_magic"))
	c := client(r.Context(), r.UserAgent())
	link, err := s.SignIn.OpenMagicLink(r.Context(), app, tok, c)
	if err != nil {
		s.renderLinkError(w, r, app, err)
		return
	}
	if link.SameDevice {
		noStore(w)
		http.Redirect(w, r, link.AppLink, http.StatusSeeOther)
		return
	}
	s.renderMagicLink(w, r, http.StatusOK, magicLinkView{Page: "consent", Title: "Was this you?", App: app, Link: link,
		Token: tok, Action: r.URL.Path,
		RequestedAt: link.RequestedAt.UTC().Format("Mon, 2 Jan 2006 15:04 MST"),
		ExpiresAt:   link.ExpiresAt.UTC().Format("15:04 MST")})
}

var decideMagicLinkOp = operation{id: "decideMagicLink", method: "POST", path: "/v1/auth/{app_id}/magic_links/open", summary: "Approve or deny a magic link (consent page form)", tag: "Sign-in",
	contentType: "text/html", errors: []string{"503"},
	pages: map[int]string{http.StatusBadRequest: "No decision, or not approve or deny (nothing is recorded)", http.StatusNotFound: "Unknown app, or an unknown, used or expired link",
		http.StatusUnsupportedMediaType: "The body is not application/x-www-form-urlencoded"},
	desc: "The consent page's form (`application/x-www-form-urlencoded`: `sct_magic`, `decision` = approve or deny, `number` = the number picked (with approve), optional `reason` = not_requested or number_mismatch (with deny)). Approve with the requesting device's match number verifies the contact and lets that device's next status poll collect its session. Approve with any other `number`, none or a malformed one is the link's one guess: it denies, as Deny does, with `denial_reason` number_mismatch (200 page saying the number was wrong). Deny ends the request (`verification.{channel}.denied` with `consent_decision` and `denial_reason`). Every answer spends the link, and of answers sent at once exactly one is recorded (the others get the 404 page). 400 page: no decision; 404 page: unknown, used or expired link; 415: not a form."}

func (s *Server) magicLinkDecide(w http.ResponseWriter, r *http.Request) {
	app, ok := s.pageApp(w, r)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxConsentForm)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		s.renderMagicLink(w, r, http.StatusUnsupportedMediaType, magicLinkView{Page: "invalid", Title: "Not answered", App: app})
		return
	}
	if err := r.ParseForm(); err != nil {
		s.renderMagicLink(w, r, http.StatusBadRequest, magicLinkView{Page: "invalid", Title: "Not answered", App: app})
		return
	}
	answer := signin.ConsentAnswer{Decision: r.PostForm.Get("decision"), Number: strings.TrimSpace(r.PostForm.Get("number")),
		Reason: r.PostForm.Get("reason")}
	approved, err := s.SignIn.DecideMagicLink(r.Context(), app, strings.TrimSpace(r.PostForm.Get("sct_magic")), answer,
		client(r.Context(), r.UserAgent()))
	switch {
	case err != nil:
		s.renderLinkError(w, r, app, err)
	case approved:
		s.renderMagicLink(w, r, http.StatusOK, magicLinkView{Page: "approved", Title: "Approved", App: app})
	case answer.Decision == signin.DecisionApprove:
		s.renderMagicLink(w, r, http.StatusOK, magicLinkView{Page: "wrong_number", Title: "Request denied", App: app,
			LoginURL: loginURL(app)})
	default:
		s.renderMagicLink(w, r, http.StatusOK, magicLinkView{Page: "denied", Title: "Request denied", App: app})
	}
}

// pageOp documents a page's other answers, which are pages too.
func pageOp(o huma.Operation, answers map[int]string) huma.Operation {
	for status, desc := range answers {
		o.Responses[strconv.Itoa(status)] = &huma.Response{Description: desc,
			Content: map[string]*huma.MediaType{"text/html": {}}}
	}
	return o
}

// consentForm reports whether r is the consent page's form post or a
// provider's form post to the social sign-in callback, the bodies that are
// not JSON (the handlers check their own).
func consentForm(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/auth/") &&
		(strings.HasSuffix(r.URL.Path, "/magic_links/open") || strings.HasSuffix(r.URL.Path, "/oauth/callback"))
}

// pageApp resolves the path's app; an unknown one answers a bare 404 page.
func (s *Server) pageApp(w http.ResponseWriter, r *http.Request) (tenant.App, bool) {
	app, err := s.Tenants.App(r.Context(), r.PathValue("app_id"))
	if err != nil {
		if !errors.Is(err, tenant.ErrAppNotFound) {
			s.Log.ErrorContext(r.Context(), "magic link page", "request_id", requestID(r.Context()), "err", err)
			http.Error(w, "Service temporarily unavailable", http.StatusServiceUnavailable)
			return app, false
		}
		http.Error(w, "Not found", http.StatusNotFound)
		return app, false
	}
	return app, true
}

func (s *Server) renderLinkError(w http.ResponseWriter, r *http.Request, app tenant.App, err error) {
	var invalid *errs.Invalid
	switch {
	case errors.Is(err, signin.ErrMagicLinkNotFound):
		s.renderMagicLink(w, r, http.StatusNotFound, magicLinkView{Page: "expired", Title: "Link expired", App: app,
			LoginURL: loginURL(app)})
	case errors.As(err, &invalid):
		s.renderMagicLink(w, r, http.StatusBadRequest, magicLinkView{Page: "invalid", Title: "Not answered", App: app})
	default:
		s.Log.ErrorContext(r.Context(), "magic link page", "request_id", requestID(r.Context()), "err", err)
		http.Error(w, "Service temporarily unavailable", http.StatusServiceUnavailable)
	}
}

// loginURL is where a person asks the app for a new link.
func loginURL(app tenant.App) string {
	for _, u := range []string{app.LoginURL, app.Origin} {
		if p, err := url.Parse(u); err == nil && (p.Scheme == "https" || p.Scheme == "http") && p.Host != "" {
			return u
		}
	}
	return ""
}

// renderMagicLink writes the page with headers that keep it out of frames,
// caches and Referer headers, and allow only its own nonce-tagged style.
func (s *Server) renderMagicLink(w http.ResponseWriter, r *http.Request, status int, v magicLinkView) {
	s.renderPage(w, r, status, "magic link", nil, func(nonce string, buf *bytes.Buffer) (string, error) {
		v.Nonce = nonce
		return "default-src 'none'; style-src 'nonce-" + nonce + "'; img-src https: data:; form-action 'self'; " +
			"frame-ancestors 'none'; base-uri 'none'", magicLinkPage.Execute(buf, v)
	})
}

// renderPage answers a server-rendered page: render writes it with a fresh
// nonce and returns the Content-Security-Policy that allows that nonce
// (frame-ancestors 'none' always), and the page is never cached nor named
// in a Referer. header, when set, adds headers of the page's own.
func (s *Server) renderPage(w http.ResponseWriter, r *http.Request, status int, what string, header http.Header,
	render func(nonce string, buf *bytes.Buffer) (csp string, err error)) {
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	var buf bytes.Buffer
	csp, err := render(base64.RawStdEncoding.EncodeToString(raw), &buf)
	if err != nil {
		s.Log.ErrorContext(r.Context(), "render "+what+" page", "request_id", requestID(r.Context()), "err", err)
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	for k, v := range header {
		h[k] = v
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	h.Set("Referrer-Policy", "no-referrer")
	noStore(w)
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
}
