package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// maxBodyBytes bounds every request body.
const maxBodyBytes = 1 << 20

// msgBadText refuses text PostgreSQL cannot store (it fails the query, which
// became a 500); SQLite would store it, so both engines refuse it alike.
const msgBadText = "text must be valid UTF-8 without NUL characters"

// cleanText reports whether s is valid UTF-8 without NUL.
func cleanText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// cleanQuery reports whether every decoded query key and value is clean text.
// A query that does not parse is left to the operation to refuse.
func cleanQuery(raw string) bool {
	if raw == "" {
		return true
	}
	q, _ := url.ParseQuery(raw)
	for k, vs := range q {
		if !cleanText(k) {
			return false
		}
		for _, v := range vs {
			if !cleanText(v) {
				return false
			}
		}
	}
	return true
}

// errBadText is what the JSON format returns for a body holding a NUL escape;
// useErrorShape turns it into a 400.
var errBadText = errors.New(msgBadText)

// unmarshalJSON is json.Unmarshal that refuses "\u0000" escapes (raw control
// characters are already invalid JSON; invalid UTF-8 is replaced on decoding).
func unmarshalJSON(data []byte, v any) error {
	for i := 0; i+1 < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		if data[i+1] == 'u' && i+6 <= len(data) && string(data[i+2:i+6]) == "0000" {
			return errBadText
		}
		i++ // skip the escaped character: in \\u0000 the backslash is text, not a NUL escape
	}
	return json.Unmarshal(data, v)
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyClientIP
	keyPrincipal
	keyApp
	keyCaller
)

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(keyRequestID).(string)
	return id
}

// ClientIP returns the caller's address as decided by the trusted-proxy rules.
func ClientIP(ctx context.Context) netip.Addr {
	ip, _ := ctx.Value(keyClientIP).(netip.Addr)
	return ip
}

// Handler returns the API with its middleware: recovery, request id, client
// IP, access log and metrics, CORS and the body limit.
func (s *Server) Handler() http.Handler {
	return s.recoverer(s.observe(s.cors(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		}
		if !cleanText(r.URL.Path) || !cleanQuery(r.URL.RawQuery) {
			writeJSON(w, http.StatusBadRequest, ErrorBody{Error: "Request path or query: " + msgBadText, Code: "invalid_request"})
			return
		}
		s.router.ServeHTTP(w, r)
	}))))
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

func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter records the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe assigns the request id and client IP, then logs and counts the
// request. The log line carries no query string and no header: both can hold
// identifiers or credentials.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		ip := s.clientIP(r)
		ctx := context.WithValue(context.WithValue(r.Context(), keyRequestID, id), keyClientIP, ip)
		r = r.WithContext(ctx)
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		d := time.Since(start)
		route := r.Pattern // set in place by the ServeMux that matched
		if route == "" || route == "/" {
			route = "unmatched"
		} else if i := strings.IndexByte(route, ' '); i >= 0 {
			route = route[i+1:]
		}
		s.metrics.requests.WithLabelValues(r.Method, route, strconv.Itoa(sw.status)).Inc()
		s.metrics.duration.WithLabelValues(r.Method, route).Observe(d.Seconds())
		if route == "/healthz" || route == "/metrics" {
			return
		}
		s.Log.LogAttrs(ctx, levelFor(sw.status), "request",
			slogStr("request_id", id), slogStr("method", r.Method), slogStr("path", r.URL.Path),
			slogStr("route", route), slogInt("status", sw.status), slogInt("bytes", sw.bytes),
			slogDur("duration_ms", d), slogStr("ip", ip.String()))
	})
}

// clientIP is the socket peer, or the nearest untrusted address in
// X-Forwarded-For when the peer is a configured trusted proxy.
func (s *Server) clientIP(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	peer = peer.Unmap()
	if !s.trusted(peer) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer
		}
		a = a.Unmap()
		if !s.trusted(a) {
			return a
		}
	}
	return peer
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// corsHeaders are what the client SDK sends (client-compat §1.2).
const corsHeaders = "Content-Type, Authorization, X-Authorization, X-Refresh-Token, X-Fingerprint, X-Request-Id"

// cors answers credentialed CORS for the origins an app allows: the exact
// Origin is echoed (never "*"), and other origins get no CORS headers.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Origin")
		allowed := false
		if appID := appIDFromPath(r.URL.Path); appID != "" {
			if app, err := s.apps.get(r.Context(), appID); err == nil {
				allowed = tenant.AllowsOrigin(app, origin)
			}
		}
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if allowed {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After")
			if preflight {
				h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
				h.Set("Access-Control-Allow-Headers", corsHeaders)
				h.Set("Access-Control-Max-Age", "600")
			}
		}
		if preflight {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// appIDFromPath finds the app id in the three path families.
func appIDFromPath(p string) string {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 4)
	if len(parts) < 2 || parts[0] != "v1" {
		return ""
	}
	switch parts[1] {
	case "auth", "apps":
		if len(parts) >= 3 {
			return parts[2]
		}
		return ""
	case "workspaces", "openapi.json", "docs", "":
		return ""
	}
	return parts[1]
}

// appCache keeps apps for a moment, for CORS preflights and credential checks
// on hot paths. Local changes invalidate it; other replicas see them within ttl.
type appCache struct {
	tenants *tenant.Service
	ttl     time.Duration
	now     func() time.Time
	mu      sync.Mutex
	m       map[string]cachedApp
}

type cachedApp struct {
	app tenant.App
	at  time.Time
}

func newAppCache(t *tenant.Service, ttl time.Duration, now func() time.Time) *appCache {
	return &appCache{tenants: t, ttl: ttl, now: now, m: map[string]cachedApp{}}
}

func (c *appCache) get(ctx context.Context, id string) (tenant.App, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.app, nil
	}
	app, err := c.tenants.GetApp(ctx, id)
	if err != nil {
		return app, err
	}
	c.mu.Lock()
	if len(c.m) > 10000 {
		clear(c.m)
	}
	c.m[id] = cachedApp{app: app, at: now}
	c.mu.Unlock()
	return app, nil
}

func (c *appCache) forget(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_http_requests_total",
			Help: "HTTP requests by method, route and status."}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gatehouse_http_request_duration_seconds",
			Help: "HTTP request latency by method and route.", Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}},
			[]string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
