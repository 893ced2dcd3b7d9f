package httpapi

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gatehouse-auth/gatehouse/internal/apidocs"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
)

// healthBody is /healthz's answer: status first (what probes read), then
// what build is running, which helps during a rolling upgrade. The version
// is public anyway (the OpenAPI document's info.version).
type healthBody struct {
	Status    string `json:"status"`
	Version   string `json:"version,omitempty"`
	Commit    string `json:"commit,omitempty"`
	BuildDate string `json:"build_date,omitempty"`
	GoVersion string `json:"go_version"`
}

var healthOp = operation{id: "health", method: "GET", path: "/healthz", summary: "Liveness", tag: "Operations",
	contentType: "application/json",
	desc:        "Answers 200 `{\"status\":\"ok\"}` while the process serves requests, with the build: version, commit, build_date (the commit's time) and go_version; commit and build_date are left out when the binary was built without version control information.",
	resp:        `{"status":"ok","version":"0.1.0","commit":"5a1f99d0a1b2","build_date":"2026-11-26T14:25:46Z","go_version":"go1.26.0"}`}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, healthBody{Status: "ok", Version: s.Version, Commit: s.Commit, BuildDate: s.BuildDate, GoVersion: runtime.Version()})
}

// buildInfoGauge is the usual constant build metric: 1, labelled with what
// is running, so dashboards can count replicas per version.
func buildInfoGauge(d Deps) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "gatehouse_build_info",
		Help:        "Always 1, labelled with the running build's version, commit and Go version.",
		ConstLabels: prometheus.Labels{"version": d.Version, "commit": d.Commit, "go_version": runtime.Version()}})
	g.Set(1)
	return g
}

var readyOp = operation{id: "ready", method: "GET", path: "/readyz", summary: "Readiness", tag: "Operations",
	contentType: "application/json", errors: []string{"503"},
	desc: "Answers 200 when the database answers, 503 otherwise.",
	resp: `{"status":"ready"}`}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		s.Log.WarnContext(ctx, "not ready", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, ErrorBody{Error: "not ready: the database is unavailable or its schema is not current"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// metricsOp is GET /metrics on the API listener, as MetricsToken has it.
func metricsOp(token bool) operation {
	o := operation{id: "metrics", method: "GET", path: "/metrics", summary: "Prometheus metrics", tag: "Operations", contentType: "text/plain",
		desc: "Request counts and latencies by route, plus Go runtime and process metrics. Served here in development mode only (or with metrics.token); production servers serve it on metrics.addr."}
	if token {
		o.desc = "Request counts and latencies by route, plus Go runtime and process metrics. Needs `Authorization: Bearer` with the server's metrics.token (else 401)."
		o.errors = []string{"401"}
		o.security = []map[string][]string{{schemeMetricsToken: {}}}
	}
	return o
}

// metricsHandler serves the registry, behind metrics.token when it is set.
func (s *Server) metricsHandler() http.Handler {
	h := promhttp.HandlerFor(prometheus.Gatherers{s.Registry}, promhttp.HandlerOpts{})
	if s.MetricsToken == "" {
		return h
	}
	want := sha256.Sum256([]byte("Bearer " + s.MetricsToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Hashed first, so the comparison takes the same time whatever
		// the length of what was sent.
		got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			writeJSON(w, http.StatusUnauthorized, ErrorBody{Error: "Unauthorized"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// MetricsHandler serves GET /metrics alone, for the metrics listener
// (metrics.addr); every other path is a JSON 404.
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metricsHandler())
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, ErrorBody{Error: "Not found", Code: "not_found"})
	})
	return secureHeaders("", mux)
}

var jwksOp = operation{id: "jwks", method: "GET", path: "/.well-known/jwks.json", summary: "Token signing keys (JWKS)", tag: "Tokens",
	contentType: "application/json",
	desc:        "The public keys that verify tokens, by kid, each with kty, alg, use and kid: EC P-256 keys (ES256: refresh tokens, API secrets, and the access tokens of apps on ES256), RSA-2048 keys (RS256) and OKP Ed25519 keys (EdDSA) when an app signs its access tokens with them. A key is listed from the moment it can sign, on every replica (the keys are read again when more than a second old; the answer may be cached for 60 s); a retired key stays listed until every token it signed has expired. An unknown kid means a new key: read the set again (at most once a minute).",
	resp:        `{"keys":[{"kty":"EC","crv":"P-256","x":"ZXhhbXBsZS14LWNvb3JkaW5hdGUtMDAwMDAwMDAwMDA","y":"ZXhhbXBsZS15LWNvb3JkaW5hdGUtMDAwMDAwMDAwMDA","alg":"ES256","use":"sig","kid":"example-kid-1"}]}`}

var appJwksOp = operation{id: "appJwks", method: "GET", path: "/v1/auth/{app_id}/.well-known/jwks.json", summary: "Token signing keys (JWKS), per app path", tag: "Tokens",
	contentType: "application/json",
	desc:        "The same key set as /.well-known/jwks.json, at the path the server SDKs use.",
	resp:        `{"keys":[{"kty":"EC","crv":"P-256","x":"ZXhhbXBsZS14LWNvb3JkaW5hdGUtMDAwMDAwMDAwMDA","y":"ZXhhbXBsZS15LWNvb3JkaW5hdGUtMDAwMDAwMDAwMDA","alg":"ES256","use":"sig","kid":"example-kid-1"}]}`}

func (s *Server) jwks(w http.ResponseWriter, _ *http.Request) {
	b := s.Keyring.FreshJWKS()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	// A verifier that meets an unknown kid reads the set again; a shared
	// cache must not keep a new key from it for long.
	h.Set("Cache-Control", "public, max-age=60")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

var openapiOp = operation{id: "openapi", method: "GET", path: "/v1/openapi.json", summary: "This OpenAPI document", tag: "Operations",
	contentType: "application/json",
	desc:        "The OpenAPI 3.1 description of every route, generated from the server's code.",
	resp:        `{"openapi":"3.1.0","info":{"title":"Gatehouse API","version":"v1.0.0"},"servers":[{"url":"https://auth.example.com"}],"paths":{},"components":{"schemas":{},"securitySchemes":{}},"webhooks":{}}`}

func (s *Server) openAPIDocument(w http.ResponseWriter, _ *http.Request) {
	b := s.specJSON()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

var docsRedirectOp = operation{id: "docsRedirect", method: "GET", path: "/v1/docs", summary: "API documentation (redirect)", tag: "Operations",
	redirect: "/v1/docs/", redirectStatus: http.StatusMovedPermanently,
	desc: "Redirects (301) to /v1/docs/, the documentation page: its script and stylesheet are addressed relative to it."}

func (s *Server) docsRedirect(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/v1/docs/", http.StatusMovedPermanently)
}

var rootOp = operation{id: "root", method: "GET", path: "/{$}", summary: "Start page (redirect to the API documentation)", tag: "Operations",
	redirect: "/v1/docs/",
	desc:     "Redirects (302) to /v1/docs/, this API's documentation page; only the exact path /, every other unknown path is a JSON 404."}

// rootRedirect sends a browser that opens the server's address to the API
// documentation (there is no console yet). 302, not 301: a console may take
// this path over, and browsers keep a 301 for good.
func (s *Server) rootRedirect(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/v1/docs/", http.StatusFound)
}

// redirectOp documents a plain redirect: a 302 (or status) with its
// Location instead of plainOp's 200.
func redirectOp(o huma.Operation, location string, status int) huma.Operation {
	o.Responses = map[string]*huma.Response{strconv.Itoa(cmp.Or(status, http.StatusFound)): {Description: http.StatusText(cmp.Or(status, http.StatusFound)) + ": the page is at " + location,
		Headers: map[string]*huma.Param{"Location": {Description: "Always " + location + ".", Schema: &huma.Schema{Type: "string"}}}}}
	return o
}

// The page and its two files share one route: its wildcard also matches
// nothing, which is the page itself at /v1/docs/ (a path ending in a slash,
// which OpenAPI linters refuse as a path of its own).
var docsOp = operation{id: "docs", method: "GET", path: "/v1/docs/{asset...}", summary: "API documentation", tag: "Operations",
	contentType: "text/html", errors: []string{"not_found"},
	desc: "A documentation page for this API, served by the binary itself (no CDN): the page at /v1/docs/ (`asset` empty), its script (`app.js`, text/javascript) and its stylesheet (`style.css`, text/css). Any other asset is 404."}

func (s *Server) docs() http.Handler {
	h := http.StripPrefix("/v1/docs", apidocs.Handler("/v1/openapi.json", "Gatehouse API"))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&jsonNotFound{ResponseWriter: w}, r)
	})
}

// jsonNotFound replaces a plain-text 404 (an unknown docs asset) with the
// API's JSON error shape: every error body is JSON (client-compat §1.3).
type jsonNotFound struct {
	http.ResponseWriter
	replaced bool
}

func (w *jsonNotFound) WriteHeader(code int) {
	if code == http.StatusNotFound {
		w.replaced = true
		writeJSON(w.ResponseWriter, code, ErrorBody{Error: "Not found", Code: "not_found"})
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *jsonNotFound) Write(b []byte) (int, error) {
	if w.replaced {
		return len(b), nil // the plain-text body of the replaced 404
	}
	return w.ResponseWriter.Write(b)
}

func (w *jsonNotFound) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// devOutbox

type devOutboxInput struct {
	To     string    `query:"to" doc:"Only messages to this address or phone number, read as sign-in reads an identifier (case, spaces, dashes and parentheses do not matter; a leading + left unescaped, which arrives as a space, is read as +)." example:"+14155552671"`
	Limit  int       `query:"limit" minimum:"1" maximum:"200" default:"50" doc:"Messages to return, newest first (default 50)."`
	Since  time.Time `query:"since" doc:"Only messages kept at or after this moment (RFC 3339)." example:"2026-11-26T12:00:00Z"`
	WaitMS int       `query:"wait_ms" minimum:"0" maximum:"10000" default:"0" doc:"When no message matches, wait up to this many milliseconds for one (messages are sent by the send queue's workers just after the request that causes them answers) instead of answering an empty list at once."`
}

// OutboxMessage is a message the development outbox kept instead of sending.
type OutboxMessage struct {
	ID        string    `json:"id" doc:"The message id."`
	Channel   string    `json:"channel" enum:"email,sms" doc:"email or sms."`
	To        string    `json:"to" doc:"The address or phone number it went to."`
	Subject   string    `json:"subject" doc:"The e-mail subject; empty for SMS."`
	Text      string    `json:"text" doc:"The text body, or the SMS."`
	HTML      string    `json:"html" doc:"The HTML body of an e-mail, if any."`
	Code      string    `json:"code" doc:"The one-time code the message carries, if any."`
	Link      string    `json:"link" doc:"The magic or invitation link the message carries, if any."`
	CreatedAt time.Time `json:"created_at" doc:"When it was sent (RFC 3339)."`
}

type devOutboxOutput struct {
	Body struct {
		Messages []OutboxMessage `json:"messages" doc:"The messages, newest first."`
	}
}

// outboxRecipient reads the to filter as sign-in reads an identifier, so
// that "Ada@Example.com", "+1 415-555-2671" and "+14155552671" all find
// the messages stored under the normalised form. A "+" left unescaped in a
// query string arrives as a space: " 14155552671" is read as
// "+14155552671". What is neither an address nor a number is compared as
// it is.
func outboxRecipient(raw string) string {
	to := strings.TrimSpace(raw)
	if to != "" && !strings.Contains(to, "@") && strings.HasPrefix(raw, " ") {
		to = "+" + to
	}
	if id, err := appuser.ParseIdentifier(to); err == nil {
		return id.Value
	}
	if strings.Contains(to, "@") {
		return strings.ToLower(to)
	}
	return to
}

// outboxMaxWait is wait_ms's maximum, which the route's deadline allows
// for (longRoutes).
const outboxMaxWait = 10 * time.Second

var devOutboxOp = operation{id: "devOutbox", method: "GET", path: "/dev/outbox", summary: "Read the development outbox", tag: "Development",
	auth: authNone,
	desc: "Development servers only (`--dev`; elsewhere the route does not exist). The e-mails and SMS the server would have sent, newest first, with the code or link each carries pulled out, so tests and the example app can sign in without a mailbox. `to` finds an address or phone number however it is written (a `+` sent unescaped is read as one); `since` and `wait_ms` (up to 10 s) let a test wait for a message instead of polling. No credentials.",
	resp: body(func(o *devOutboxOutput) {
		o.Body.Messages = []OutboxMessage{{ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a10", Channel: "email", To: exEmail,
			Subject: "Your Demo code", Text: "123456 is your Demo code.", HTML: "<p>Your code: <b>123456</b></p>",
			Code: "123456", CreatedAt: exT0}}
	})}

// devOutbox exists only in development mode: it hands codes and links to
// tests and to a developer without a mail server.
func (s *Server) devOutbox(ctx context.Context, in *devOutboxInput) (*devOutboxOutput, error) {
	if !s.Dev || s.Outbox == nil {
		return nil, errDevOnly
	}
	to := outboxRecipient(in.To)
	var msgs []courier.Kept
	deadline := time.Now().Add(time.Duration(in.WaitMS) * time.Millisecond)
	for {
		changed := s.Outbox.Changed(to) // before the read, so no message slips between
		all, err := s.Outbox.List(ctx, to, in.Limit)
		if err != nil {
			return nil, err
		}
		msgs = all[:0]
		for _, m := range all {
			if !m.CreatedAt.Before(in.Since) {
				msgs = append(msgs, m)
			}
		}
		left := time.Until(deadline)
		if len(msgs) > 0 || left <= 0 {
			break
		}
		// Another replica's messages close no channel here: look again
		// at least every 100 ms.
		t := time.NewTimer(min(left, 100*time.Millisecond))
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
	out := &devOutboxOutput{}
	out.Body.Messages = make([]OutboxMessage, 0, len(msgs))
	for _, m := range msgs {
		out.Body.Messages = append(out.Body.Messages, OutboxMessage{ID: m.ID, Channel: string(m.Channel), To: m.To,
			Subject: m.Subject, Text: m.Text, HTML: m.HTML, Code: m.Code, Link: m.Link, CreatedAt: m.CreatedAt})
	}
	return out, nil
}
