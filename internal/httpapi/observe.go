package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/internal/audit"
)

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyClientIP
	keyClientLocation
	keyPrincipal
	keyApp
	keyCaller
	keyAcceptLanguage
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

// observe assigns the request id and client IP, then counts the request
// and, with LogRequests, logs it. The log line carries the route pattern,
// not the path (a path may hold a challenge token), and no query string,
// header or body: all can hold identifiers or credentials. A failed request
// is logged by fail (with its request id) whether or not LogRequests is on.
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
		if loc := s.clientLocation(r); loc != "" {
			ctx = context.WithValue(ctx, keyClientLocation, loc)
		}
		if al := r.Header.Get("Accept-Language"); al != "" {
			ctx = context.WithValue(ctx, keyAcceptLanguage, al)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions {
			// Where a change came from, for its audit entry (reads make none).
			ctx = audit.WithRequest(ctx, audit.Request{IP: ip.String(), UserAgent: r.UserAgent()})
		}
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
		if !s.LogRequests || route == "/healthz" || route == "/metrics" {
			return
		}
		s.Log.LogAttrs(ctx, slog.LevelInfo, "request",
			slog.String("request_id", id), slog.String("method", r.Method),
			slog.String("route", route), slog.Int("status", sw.status), slog.Int("bytes", sw.bytes),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000), slog.String("ip", ip.String()))
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

// geoHeaders are the approximate-place headers that common proxies and CDNs
// add (city, country); they are believed only from a trusted proxy.
var geoHeaders = [][2]string{
	{"CF-IPCity", "CF-IPCountry"},
	{"X-Vercel-IP-City", "X-Vercel-IP-Country"},
	{"X-AppEngine-City", "X-AppEngine-Country"},
	{"X-Client-City", "X-Client-Country"},
}

// clientLocation is "City, CC" (or one of them) from a trusted proxy's geo
// headers, for showing a person where a request came from; empty otherwise.
func (s *Server) clientLocation(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !s.trusted(peer.Unmap()) {
		return ""
	}
	for _, h := range geoHeaders {
		city, country := printable(r.Header.Get(h[0]), 60), printable(r.Header.Get(h[1]), 8)
		switch {
		case city != "" && country != "":
			return city + ", " + country
		case city != "" || country != "":
			return city + country
		}
	}
	return ""
}

// printable keeps at most n runes of v, dropping control characters.
func printable(v string, n int) string {
	out := make([]rune, 0, len(v))
	for _, r := range strings.TrimSpace(v) {
		if len(out) == n {
			break
		}
		if unicode.IsPrint(r) {
			out = append(out, r)
		}
	}
	return string(out)
}

// trusted reports whether a (unmapped) is a configured proxy. An IPv4
// address also matches a prefix written in IPv4-mapped form
// (::ffff:10.0.0.0/104), which would otherwise never match.
func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.TrustedProxies {
		if p.Contains(a) || a.Is4() && p.Contains(netip.AddrFrom16(a.As16())) {
			return true
		}
	}
	return false
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
