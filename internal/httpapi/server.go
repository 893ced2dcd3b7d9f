// Package httpapi serves Gatehouse's JSON API on huma: routes.go registers
// every route, errors.go turns every error into a response, credentials.go
// finds out who is calling. What a caller may do is decided by the domain
// method it reaches, never here. The other files hold the request path's
// concerns: observe.go (request id, client IP, access log, metrics),
// cors.go, input.go (body limit and text rules) and one file per area of
// operations (ops_*.go), where each operation's declaration (operation.go:
// path, credential rule, errors, description, examples) sits beside its
// handler.
package httpapi

import (
	"context"
	_ "embed"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/machine"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/social"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Deps are what the API needs; the server package builds them.
type Deps struct {
	Tenants  *tenant.Service
	Users    *appuser.Service
	SignIn   *signin.Service
	Webhooks *webhook.Service
	Machines *machine.Service
	// Outbound holds the message templates, the apps' own providers and
	// the SMS guards' settings.
	Outbound *outbound.Service
	// Social keeps the apps' social sign-in providers.
	Social  *social.Service
	Keyring *token.Keyring
	// Ready reports whether the server can serve: the database answers and
	// its schema is current. /readyz answers 503 with its error.
	Ready func(ctx context.Context) error
	// Outbox is the development outbox (nil outside development mode).
	Outbox *courier.Outbox
	Log    *slog.Logger
	// DBLog logs the requests that failed because the database is
	// unavailable (503), and TimeoutLog those that ran out of time (503
	// timeout): the assembly passes loggers that keep a database outage to
	// one line each way, however many requests fail meanwhile; an
	// unavailable database starts the check, a timeout alone does not (nil:
	// Log).
	DBLog, TimeoutLog *slog.Logger
	// LogRequests logs one INFO line per request (log.requests): method,
	// route pattern, status, duration, bytes, client IP and request id.
	LogRequests    bool
	Registry       *prometheus.Registry
	Dev            bool
	BaseURL        string
	Version        string
	TrustedProxies []netip.Prefix
	// MetricsOnAPI serves /metrics on the API listener (config
	// MetricsOnAPI: development mode or metrics.token, without
	// metrics.addr); otherwise only MetricsHandler serves it, on a
	// listener of its own (metrics.addr).
	MetricsOnAPI bool
	// MetricsToken, when set, is the bearer token /metrics requires
	// wherever it is served (metrics.token).
	MetricsToken string
	// SendMinTime is the shortest time a request that sends a code or a
	// magic link to an identifier takes to answer (ratelimit.send_min_time).
	SendMinTime time.Duration
	// RequestTimeout is every route's deadline (http.request_timeout), plus
	// longRoutes' own wait; 0 sets none.
	RequestTimeout time.Duration
	// Commit and BuildDate (the commit's time) describe the build beside
	// Version, in /healthz and the gatehouse_build_info metric.
	Commit, BuildDate string
	// Wrap, when set, wraps what Handler returns: this package's tests
	// record every error answered with it (export_test.go). nil in
	// production.
	Wrap func(*Server, http.Handler) http.Handler
}

// Server is the HTTP API.
type Server struct {
	Deps
	api     huma.API
	router  *router
	routes  []Route
	metrics *metrics

	specOnce sync.Once
	spec     []byte

	console http.Handler // the operators' console, under /console/ (MountConsole)
}

// MountConsole serves the operators' console (package web) under
// /console/, and the apps' hosted pages under /login/ and /account/,
// behind the same security headers, recovery, request id, client address,
// metrics and audit context as the API, but not its JSON rules or CORS:
// the console is same-origin HTML with its own CSP.
func (s *Server) MountConsole(h http.Handler) { s.console = h }

// Describe is the error table's answer to err (status, code, message),
// logged as an API call's failure is: the console answers with the API's
// errors.
func (s *Server) Describe(ctx context.Context, err error) (int, string, string) {
	e := s.fail(ctx, err)
	return e.status, e.Code, e.ErrorBody.Error
}

// Route is one registered method and path.
type Route struct {
	Method string
	Path   string
}

// apiOverview is the document's info.description (Markdown): credentials,
// errors, pagination and rate limits, what a reader needs before any one
// operation. docs/api.md has the details; keep the two in step.
//
//go:embed overview.md
var apiOverview string

// New builds the API and registers every route.
func New(d Deps) *Server {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.DBLog == nil {
		d.DBLog = d.Log
	}
	if d.TimeoutLog == nil {
		d.TimeoutLog = d.Log
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	s := &Server{Deps: d, router: newRouter(d.RequestTimeout)}
	s.metrics = newMetrics(d.Registry)
	d.Registry.MustRegister(buildInfoGauge(d))

	cfg := huma.DefaultConfig("Gatehouse API", d.Version)
	cfg.OpenAPIPath, cfg.DocsPath, cfg.SchemasPath = "", "", ""
	cfg.CreateHooks = nil // no "$schema" in bodies: responses keep the interface's exact shapes
	cfg.Transformers = append(cfg.Transformers, reshapeError)
	jsonFormat := huma.DefaultJSONFormat
	jsonFormat.Unmarshal = unmarshalJSON
	cfg.Formats = map[string]huma.Format{"application/json": jsonFormat, "json": jsonFormat}
	cfg.Info.Description = apiOverview // the docs page shows it first
	cfg.Info.License = &huma.License{Name: "Apache-2.0", Identifier: "Apache-2.0"}
	if d.BaseURL != "" {
		cfg.Servers = []*huma.Server{{URL: d.BaseURL}}
	}
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		schemeAPISecret: {Type: "http", Scheme: "bearer", BearerFormat: "JWT",
			Description: "An app or workspace API secret (JWT), or an app API key (`ghk_…`), in `Authorization: Bearer`."},
		schemeUserAccess: {Type: "apiKey", In: "header", Name: "X-Authorization",
			Description: "A user's access token (raw JWT, no `Bearer ` prefix)."},
		schemeKeyHeader: {Type: "apiKey", In: "header", Name: "X-Authorization",
			Description: "An app API key (`ghk_…`) in `X-Authorization` (interface §4.3). Alone it stands in for `Authorization`; beside an API secret it must be valid and of the same app (else 401 or 403) and adds no right: `Authorization` decides."},
		schemeM2M: {Type: "apiKey", In: "header", Name: HeaderM2MToken,
			Description: "An M2M access token from the client_credentials grant (also accepted in `Authorization: Bearer` or `X-Authorization`)."},
		schemeClient: {Type: "http", Scheme: "basic",
			Description: "An M2M client's id and secret (client_secret_basic); or send them in the body (client_secret_post)."},
	}
	s.api = humago.New(s.router, cfg)
	s.api.UseMiddleware(shapeErrors, s.credentials)
	s.registerRoutes()
	s.router.fallback(s.notFound)
	return s
}

// Handler returns the API with its middleware: the security headers
// (headers.go), recovery, request id, client IP, access log and metrics,
// CORS, the body limit, the text rules and the JSON content type of any body.
func (s *Server) Handler() http.Handler {
	h := s.handler()
	if s.Wrap != nil {
		h = s.Wrap(s, h)
	}
	return h
}

func (s *Server) handler() http.Handler {
	api := s.apiHandler()
	// cors wraps the console and hosted pages too: they never grant CORS
	// (no app id in their paths), but their answers vary with Origin (the
	// cross-origin check) and a preflight gets the same 204 refusal.
	return secureHeaders(s.BaseURL, s.recoverer(s.observe(s.cors(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.console != nil && (r.URL.Path == "/console" || strings.HasPrefix(r.URL.Path, "/console/")) {
			if r.URL.Path == "/console" {
				http.Redirect(w, r, "/console/", http.StatusMovedPermanently)
				return
			}
			s.console.ServeHTTP(w, r)
			r.Pattern = "/console/" // one metrics label for every console page
			return
		}
		// The apps' hosted sign-in and account pages are served by the
		// console's handler too (package web, with their own headers).
		if s.console != nil && (strings.HasPrefix(r.URL.Path, "/login/") || strings.HasPrefix(r.URL.Path, "/account/")) {
			s.console.ServeHTTP(w, r)
			r.Pattern = "/login/" // one metrics label each for the two families
			if strings.HasPrefix(r.URL.Path, "/account/") {
				r.Pattern = "/account/"
			}
			return
		}
		api.ServeHTTP(w, r)
	})))))
}

func (s *Server) apiHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		}
		if !cleanText(r.URL.Path) || !cleanQuery(r.URL.RawQuery) {
			writeJSON(w, http.StatusBadRequest, ErrorBody{Error: "Request path or query: " + msgBadText, Code: "invalid_request"})
			return
		}
		if !declaredJSON(r) && !consentForm(r) && !tokenForm(r) {
			writeJSON(w, http.StatusUnsupportedMediaType, ErrorBody{Error: msgNotJSON, Code: "unsupported_media_type"})
			return
		}
		s.router.ServeHTTP(w, r)
	})
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.Log.ErrorContext(r.Context(), "panic", "request_id", requestID(r.Context()), "panic", p)
				writeJSON(w, http.StatusInternalServerError, ErrorBody{Error: "internal error"})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// Routes lists every registered route.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// OpenAPI returns the API description.
func (s *Server) OpenAPI() *huma.OpenAPI { return s.api.OpenAPI() }

// specJSON is the OpenAPI document, built once after every route is registered.
func (s *Server) specJSON() []byte {
	s.specOnce.Do(func() {
		b, err := json.Marshal(s.api.OpenAPI())
		if err != nil {
			panic("httpapi: OpenAPI document does not marshal: " + err.Error())
		}
		s.spec = b
	})
	return s.spec
}

// router sends each family of paths to its own ServeMux. The client SDK's
// paths overlap in ways one ServeMux refuses (GET /v1/auth/{app}/users and
// GET /v1/{app}/users/{id}); app ids are generated and never equal a reserved
// first segment, so the segment after /v1/ picks the family before any
// pattern is matched.
type router struct {
	families map[string]*http.ServeMux // by reserved segment: auth, apps, workspaces, docs
	rest     *http.ServeMux
	timeout  time.Duration // each route's deadline (0: none), see HandleFunc
}

func newRouter(timeout time.Duration) *router {
	rt := &router{families: map[string]*http.ServeMux{}, rest: http.NewServeMux(), timeout: timeout}
	for _, seg := range reservedSegments {
		rt.families[seg] = http.NewServeMux()
	}
	return rt
}

// reservedSegments may never be app ids.
var reservedSegments = []string{"auth", "apps", "workspaces", "docs"}

func (rt *router) muxFor(path string) *http.ServeMux {
	if rest, ok := strings.CutPrefix(path, "/v1/"); ok {
		seg, _, _ := strings.Cut(rest, "/")
		if m, ok := rt.families[seg]; ok {
			return m
		}
	}
	return rt.rest
}

// HandleFunc registers a "METHOD /path" pattern on its family's mux, with
// the route's deadline: every registered route has one (huma's operations
// are registered here too); the 404 fallback, which does no work, has none.
func (rt *router) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	path := pattern
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		path = pattern[i+1:]
	}
	if rt.timeout > 0 {
		h = withDeadline(rt.timeout+longRoutes[pattern], h)
	}
	rt.muxFor(path).HandleFunc(pattern, h)
}

// longRoutes wait longer than a request may, on purpose, and by how much
// more: the development outbox's long poll (wait_ms) and a provider test
// message, which awaits the provider's answer. Nothing else waits on
// anything but the database, and nothing streams.
var longRoutes = map[string]time.Duration{
	"GET /dev/outbox": outboxMaxWait,
	"POST /v1/apps/{app_id}/message_service_providers/test": outbound.ProviderTestTimeout,
}

// LongestDeadline is the longest deadline of a route when requests have
// requestTimeout: the HTTP server's write timeout must allow for it.
func LongestDeadline(requestTimeout time.Duration) time.Duration {
	return requestTimeout + slices.Max(slices.Collect(maps.Values(longRoutes)))
}

// withDeadline runs h with a context that ends after d. What the request
// waits for then (a connection, a lock, a statement) is cancelled, and it
// answers 503 timeout (errors.go); a transaction it had open rolls back.
func withDeadline(d time.Duration, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		h(w, r.WithContext(ctx))
	}
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt.muxFor(r.URL.Path).ServeHTTP(w, r)
}

// fallback answers every unmatched path with a JSON 404 (or 405).
func (rt *router) fallback(h http.HandlerFunc) {
	rt.rest.HandleFunc("/", h)
	for _, m := range rt.families {
		m.HandleFunc("/", h)
	}
}

// allowed lists the methods that would match path, for a 405's Allow header.
func (rt *router) allowed(r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, pattern := rt.muxFor(r.URL.Path).Handler(r2); pattern != "/" && pattern != "" {
			out = append(out, m)
		}
	}
	return out
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if allow := s.router.allowed(r); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, ErrorBody{Error: "Method not allowed", Code: "method_not_allowed"})
		return
	}
	writeJSON(w, http.StatusNotFound, ErrorBody{Error: "Not found", Code: "not_found"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
