package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
)

// egressFakeResolver answers from a table that tests may change between calls
// (DNS rebinding). Unknown names fail like NXDOMAIN.
type egressFakeResolver struct {
	mu    sync.Mutex
	hosts map[string][]netip.Addr
	any   []netip.Addr // answer for every name, when set
}

func newFakeResolver(hosts map[string]string) *egressFakeResolver {
	r := &egressFakeResolver{hosts: map[string][]netip.Addr{}}
	for h, list := range hosts {
		r.set(h, list)
	}
	return r
}

// set replaces the answer for host with a comma-separated address list.
func (r *egressFakeResolver) set(host, list string) {
	var addrs []netip.Addr
	for _, s := range strings.Split(list, ",") {
		addrs = append(addrs, netip.MustParseAddr(s))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hosts[host] = addrs
}

func (r *egressFakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	addrs := r.any
	if addrs == nil {
		addrs = r.hosts[host]
	}
	var out []netip.Addr
	for _, a := range addrs {
		if network == "ip" || (network == "ip4") == a.Is4() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.9.9.9:53", IsNotFound: true}
	}
	return out, nil
}

func TestCheckURLRefused(t *testing.T) {
	res := newFakeResolver(map[string]string{
		"example.com":              "93.184.216.34",
		"internal.example.com":     "10.1.2.3",
		"mixed.example.com":        "93.184.216.34,127.0.0.1",
		"v6.example.com":           "2606:2800:220:1:248:1893:25c8:1946,fd00::1",
		"mapped.example.com":       "::ffff:169.254.169.254",
		"localhost":                "127.0.0.1",
		"foo.localhost":            "127.0.0.1",
		"single":                   "93.184.216.34",
		"metadata.google.internal": "169.254.169.254",
	})
	p := Policy{Resolver: res}
	tests := []struct {
		raw  string
		want string // substring of the error
	}{
		// Checklist item 65.
		{"http://example.com", "must use https"},
		{"https://127.0.0.1", egressRefusal},
		{"https://169.254.169.254/latest/meta-data", egressRefusal},
		{"https://[::1]", egressRefusal},
		{"https://[::ffff:127.0.0.1]", egressRefusal},
		{"https://2130706433", "legacy numeric"},
		{"https://0x7f.1", "legacy numeric"},
		{"https://017700000001", "legacy numeric"},
		{"https://localhost", "not allowed"},
		{"https://10.0.0.5", egressRefusal},
		{"https://100.100.100.200", egressRefusal},
		{"https://[fd00:ec2::254]", egressRefusal},
		// Further forms.
		{"https://user:pw@example.com", "credentials"},
		{"https://user@example.com", "credentials"},
		{"https://127.1", "legacy numeric"},
		{"https://0x7f000001", "legacy numeric"},
		{"https://0177.0.0.1", "legacy numeric"},
		{"https://127.000.000.001", "legacy numeric"},
		{"https://127.0.0.1.", "legacy numeric"},
		{"https://foo.localhost", "not allowed"},
		{"https://LOCALHOST.", "not allowed"},
		{"https://metadata.google.internal", "not allowed"},
		{"https://Metadata.Google.Internal.", "not allowed"},
		{"https://metadata.amazonaws.com", "not allowed"},
		{"https://[2002:7f00:1::]", egressRefusal},
		{"https://[64:ff9b::7f00:1]", egressRefusal},
		{"https://[64:ff9b::808:808]", egressRefusal},
		{"https://[2001::1]", egressRefusal},
		{"https://[fe80::1%25eth0]", "not a valid address"},
		{"https://[::]", egressRefusal},
		{"https://0.0.0.0", egressRefusal},
		{"https://example.com:8443", "port is not allowed"},
		{"https://example.com:", "port is not valid"},
		{"https://example.com:0443", "port is not valid"},
		{"https://internal.example.com/hook", egressRefusal},
		{"https://mixed.example.com", egressRefusal},
		{"https://v6.example.com", egressRefusal},
		{"https://mapped.example.com", egressRefusal},
		{"https://nxdomain.example.com", "does not resolve"},
		{"https://single", "fully qualified"},
		{"https://example.com/#frag", "fragment"},
		{"https://example.com/#", "fragment"},
		{"ftp://example.com", "must use https"},
		{"https:example.com", "must have a host"},
		{"https:///path", "must have a host"},
		{"//example.com", "must use https"},
		{"https://exa_mple.com", "not a valid name"},
		{"https://-example.com", "not a valid name"},
		{"https://ex..ample.com", "not a valid name"},
		{"https://bücher.example", "not a valid name"},
		{"https://[127.0.0.1]", "not valid"},
		{"https://example.com/" + strings.Repeat("a", maxURLLength), "too long"},
		{"https://exa mple.com", "not valid"},
	}
	for _, tt := range tests {
		got, err := p.CheckURL(context.Background(), tt.raw)
		if !errors.Is(err, ErrUnsafeURL) {
			t.Errorf("CheckURL(%q) = %q, %v; want ErrUnsafeURL", tt.raw, got, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckURL(%q) error = %q; want it to contain %q", tt.raw, err, tt.want)
		}
		// Also the one invalid-input error, on the url field, whose reason
		// does not repeat the field.
		var inv *errs.Invalid
		if !errors.As(err, &inv) || inv.Field != "url" {
			t.Errorf("CheckURL(%q) error = %v (%T); want an *errs.Invalid on \"url\"", tt.raw, err, err)
		} else if !strings.Contains(inv.Reason, tt.want) || strings.HasPrefix(inv.Reason, "url") || strings.Contains(err.Error(), "url url") {
			t.Errorf("CheckURL(%q) reason = %q (error %q); want it to contain %q without repeating the field", tt.raw, inv.Reason, err, tt.want)
		}
		// R-WH-11: never the resolved address or the resolver's text.
		for _, leak := range []string{"10.1.2.3", "10.9.9.9", "no such host", "fd00::1"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("CheckURL(%q) error = %q; must not contain %q", tt.raw, err, leak)
			}
		}
	}
}

func TestCheckURLAccepted(t *testing.T) {
	res := newFakeResolver(map[string]string{
		"hooks.example.com": "93.184.216.34",
		"v6.example.com":    "2606:2800:220:1:248:1893:25c8:1946",
		"6to4.example.com":  "2002:5db8:d822::1",
		"localhost":         "127.0.0.1,::1",
		"svc.local":         "192.168.1.20",
		"123.example.com":   "93.184.216.35",
	})
	tests := []struct {
		private bool
		raw     string
		want    string
	}{
		{false, "https://hooks.example.com/x?y=1", "https://hooks.example.com/x?y=1"},
		{false, "https://123.example.com/hook", "https://123.example.com/hook"}, // a numeric label that is not the last
		{false, "HTTPS://Hooks.Example.COM./x?y=1", "https://hooks.example.com/x?y=1"},
		{false, "https://hooks.example.com:443/x", "https://hooks.example.com/x"},
		{false, "https://93.184.216.34/hook", "https://93.184.216.34/hook"},
		{false, "https://[2606:2800:220:1:248:1893:25c8:1946]/h", "https://[2606:2800:220:1:248:1893:25c8:1946]/h"},
		{false, "https://[::ffff:93.184.216.34]/h", "https://[::ffff:93.184.216.34]/h"},
		{false, "https://v6.example.com", "https://v6.example.com"},
		{false, "https://6to4.example.com/", "https://6to4.example.com/"},
		{true, "http://127.0.0.1:8080/hook", "http://127.0.0.1:8080/hook"},
		{true, "http://localhost:9000", "http://localhost:9000"},
		{true, "https://[::1]:8443/h", "https://[::1]:8443/h"},
		{true, "http://svc.local:80/h", "http://svc.local/h"},
		{true, "https://10.0.0.5", "https://10.0.0.5"},
	}
	for _, tt := range tests {
		p := Policy{AllowPrivate: tt.private, Resolver: res}
		got, err := p.CheckURL(context.Background(), tt.raw)
		if err != nil || got != tt.want {
			t.Errorf("Policy{AllowPrivate: %v}.CheckURL(%q) = %q, %v; want %q, nil", tt.private, tt.raw, got, err, tt.want)
		}
	}
}

func TestCheckURLAllowPrivateStillRefuses(t *testing.T) {
	res := newFakeResolver(map[string]string{"zero.example.com": "0.0.0.0"})
	p := Policy{AllowPrivate: true, Resolver: res}
	for _, raw := range []string{
		"http://0.0.0.0:8080",
		"http://[::]:8080",
		"http://224.0.0.1",
		"http://255.255.255.255",
		"http://zero.example.com",
		"http://metadata.google.internal",
		"http://2130706433",
		"http://u:p@127.0.0.1",
		"ftp://127.0.0.1",
	} {
		got, err := p.CheckURL(context.Background(), raw)
		var inv *errs.Invalid
		if !errors.Is(err, ErrUnsafeURL) || !errors.As(err, &inv) || inv.Field != "url" {
			t.Errorf("Policy{AllowPrivate: true}.CheckURL(%q) = %q, %v; want ErrUnsafeURL and an *errs.Invalid on \"url\"", raw, got, err)
		}
	}
}

func TestDenied(t *testing.T) {
	tests := []struct {
		addr          string
		want, private bool // Denied without and with AllowPrivate
	}{
		{"0.0.0.0", true, true},
		{"0.255.255.255", true, true},
		{"1.0.0.1", false, false},
		{"8.8.8.8", false, false},
		{"93.184.216.34", false, false},
		{"9.255.255.255", false, false},
		{"10.0.0.0", true, false},
		{"10.255.255.255", true, false},
		{"11.0.0.0", false, false},
		{"100.63.255.255", false, false},
		{"100.64.0.0", true, false},
		{"100.127.255.255", true, false},
		{"100.128.0.0", false, false},
		{"126.255.255.255", false, false},
		{"127.0.0.1", true, false},
		{"127.255.255.254", true, false},
		{"128.0.0.0", false, false},
		{"169.253.255.255", false, false},
		{"169.254.0.0", true, false},
		{"169.254.169.254", true, false},
		{"169.254.170.2", true, false},
		{"169.255.0.0", false, false},
		{"172.15.255.255", false, false},
		{"172.16.0.0", true, false},
		{"172.31.255.255", true, false},
		{"172.32.0.0", false, false},
		{"192.0.0.8", true, false},
		{"192.0.1.0", false, false},
		{"192.0.2.1", true, false},
		{"192.88.99.1", true, false},
		{"192.167.255.255", false, false},
		{"192.168.0.1", true, false},
		{"192.169.0.0", false, false},
		{"198.17.255.255", false, false},
		{"198.18.0.0", true, false},
		{"198.19.255.255", true, false},
		{"198.20.0.0", false, false},
		{"198.51.100.7", true, false},
		{"203.0.113.9", true, false},
		{"203.0.114.0", false, false},
		{"223.255.255.255", false, false},
		{"224.0.0.1", true, true},
		{"239.255.255.255", true, true},
		{"240.0.0.1", true, false},
		{"255.255.255.254", true, false},
		{"255.255.255.255", true, true},
		{"::", true, true},
		{"::1", true, false},
		{"::7f00:1", true, false}, // IPv4-compatible 127.0.0.1
		{"::ffff:127.0.0.1", true, false},
		{"::ffff:10.0.0.1", true, false},
		{"::ffff:0.0.0.0", true, true},
		{"::ffff:8.8.8.8", false, false},
		{"64:ff9b::7f00:1", true, false},
		{"64:ff9b::808:808", true, false},
		{"64:ff9b:1::1", true, false},
		{"100::1", true, false},
		{"100:0:0:1::1", false, false},
		{"2001::1", true, false},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", true, false},
		{"2001:db8::1", true, false},
		{"2001:db9::1", false, false},
		{"2002:7f00:1::", true, false},
		{"2002:a00:1::1", true, false},
		{"2002:a9fe:a9fe::", true, false},
		{"2002:808:808::1", false, false},
		{"2002::", true, true}, // 6to4 of 0.0.0.0
		{"2606:4700:4700::1111", false, false},
		{"2001:4860:4860::8888", false, false},
		{"fbff:ffff::1", false, false},
		{"fc00::1", true, false},
		{"fd00:ec2::254", true, false},
		{"fdff:ffff::1", true, false},
		{"fe00::1", false, false},
		{"fe80::1", true, false},
		{"fe80::1%eth0", true, false},
		{"fd00::1%eth0", true, false},
		{"ff02::1%eth0", true, true},
		{"febf:ffff::1", true, false},
		{"fec0::1", true, false},
		{"ff02::1", true, true},
		{"ff0e::1", true, true},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		if got := (Policy{}).Denied(a); got != tt.want {
			t.Errorf("Policy{}.Denied(%s) = %v; want %v", tt.addr, got, tt.want)
		}
		if got := (Policy{AllowPrivate: true}).Denied(a); got != tt.private {
			t.Errorf("Policy{AllowPrivate: true}.Denied(%s) = %v; want %v", tt.addr, got, tt.private)
		}
	}
	if got := (Policy{AllowPrivate: true}).Denied(netip.Addr{}); !got {
		t.Errorf("Policy{AllowPrivate: true}.Denied(zero Addr) = %v; want true", got)
	}
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// newCountingServer starts a loopback server whose handler records how many
// connections had been accepted when each request arrived.
func newCountingServer(t *testing.T) (*httptest.Server, *countingListener, *atomic.Int64) {
	t.Helper()
	var seen atomic.Int64
	srv := httptest.NewUnstartedServer(nil)
	ln := &countingListener{Listener: srv.Listener}
	srv.Listener = ln
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(ln.accepted.Load())
		fmt.Fprint(w, "ok")
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, ln, &seen
}

func serverPort(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// getOK performs a GET that must succeed with a 200.
func getOK(t *testing.T, c *http.Client, target string) {
	t.Helper()
	resp, err := c.Get(target)
	if err != nil {
		t.Fatalf("Get(%q) error = %v; want nil", target, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Fatalf("Get(%q) = %d %q; want 200 \"ok\"", target, resp.StatusCode, body)
	}
}

func TestClientDNSRebinding(t *testing.T) {
	srv, ln, seen := newCountingServer(t)
	port := serverPort(t, srv)

	// Public at create time...
	res := newFakeResolver(map[string]string{"rebind.example.com": "93.184.216.34"})
	p := Policy{Resolver: res}
	if _, err := p.CheckURL(context.Background(), "https://rebind.example.com/hook"); err != nil {
		t.Fatalf("CheckURL at create time = %v; want nil", err)
	}
	// ...loopback at delivery time.
	res.set("rebind.example.com", "127.0.0.1")
	target := "http://rebind.example.com:" + port + "/hook"
	resp, err := p.Client(5 * time.Second).Get(target)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("Get(%q) status = %d; want a refusal", target, resp.StatusCode)
	}
	if !IsRefused(err) {
		t.Errorf("IsRefused(%v) = false; want true", err)
	}
	if strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("Get(%q) error = %q; must not contain the resolved address", target, err)
	}

	// The same request in development mode succeeds, and is the first
	// connection the listener ever accepted: the refused one never connected
	// (a connection queued before it would have been accepted first).
	getOK(t, Policy{AllowPrivate: true, Resolver: res}.Client(5*time.Second), target)
	if got := seen.Load(); got != 1 {
		t.Errorf("connections accepted before the allowed request = %d; want 1", got)
	}
	if got := ln.accepted.Load(); got != 1 {
		t.Errorf("connections accepted = %d; want 1", got)
	}
}

func TestClientControlRefusesLiteral(t *testing.T) {
	srv, ln, seen := newCountingServer(t)
	// An IP literal skips resolution, so only the Control hook stands between
	// the client and the loopback listener.
	target := srv.URL + "/hook"
	resp, err := Policy{}.Client(5 * time.Second).Get(target)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("Get(%q) status = %d; want a refusal", target, resp.StatusCode)
	}
	if !IsRefused(err) {
		t.Errorf("IsRefused(%v) = false; want true", err)
	}
	var ue *url.Error
	if !errors.As(err, &ue) || ue.Err.Error() != egressRefusal {
		t.Errorf("Get(%q) error = %v; want a url.Error around %q only", target, err, egressRefusal)
	}
	getOK(t, Policy{AllowPrivate: true}.Client(5*time.Second), target)
	if got := seen.Load(); got != 1 {
		t.Errorf("connections accepted before the allowed request = %d; want 1", got)
	}
	if got := ln.accepted.Load(); got != 1 {
		t.Errorf("connections accepted = %d; want 1", got)
	}
}

func TestClientDialRefusals(t *testing.T) {
	res := newFakeResolver(map[string]string{
		// The denied answer first, so that even a regression dials nothing
		// beyond loopback.
		"mixed.example.com": "10.0.0.1,93.184.216.34",
		"zero.example.com":  "0.0.0.0",
	})
	tests := []struct {
		private bool
		target  string
		refused bool
	}{
		{false, "http://mixed.example.com:1/", true},
		{true, "http://zero.example.com:1/", true},
		{true, "http://0.0.0.0:1/", true},
		{true, "http://[::]:1/", true},
		{false, "http://nxdomain.example.com:1/", false},
	}
	for _, tt := range tests {
		p := Policy{AllowPrivate: tt.private, Resolver: res}
		resp, err := p.Client(5 * time.Second).Get(tt.target)
		if err == nil {
			resp.Body.Close()
			t.Errorf("Policy{AllowPrivate: %v} Get(%q) status = %d; want an error", tt.private, tt.target, resp.StatusCode)
			continue
		}
		if got := IsRefused(err); got != tt.refused {
			t.Errorf("Policy{AllowPrivate: %v} Get(%q): IsRefused(%v) = %v; want %v", tt.private, tt.target, err, got, tt.refused)
		}
		for _, leak := range []string{"10.0.0.1", "10.9.9.9", "no such host"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("Get(%q) error = %q; must not contain %q", tt.target, err, leak)
			}
		}
	}
}

func TestDialContextChecksEveryAnswer(t *testing.T) {
	res := newFakeResolver(map[string]string{
		"mixed.example.com":  "93.184.216.34,10.0.0.1",
		"public.example.com": "93.184.216.34",
	})
	tests := []struct {
		address string
		dialled int64 // connection attempts that reach the dialer
	}{
		{"mixed.example.com:443", 0},
		{"public.example.com:443", 1},
	}
	for _, tt := range tests {
		var attempts atomic.Int64
		// The hook fails every attempt, so nothing is ever connected.
		d := &net.Dialer{Control: func(string, string, syscall.RawConn) error {
			attempts.Add(1)
			return errors.New("test: no dialling")
		}}
		_, err := Policy{Resolver: res}.dialContext(d)(context.Background(), "tcp", tt.address)
		if err == nil {
			t.Errorf("dialContext(%q) error = nil; want an error", tt.address)
		}
		if got := attempts.Load(); got != tt.dialled {
			t.Errorf("dialContext(%q) attempts = %d; want %d", tt.address, got, tt.dialled)
		}
	}
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	var hits atomic.Int64
	second := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	defer second.Close()
	location := second.URL + "/internal"
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, location, http.StatusMovedPermanently)
	}))
	defer first.Close()

	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, err := http.NewRequest(method, first.URL+"/hook", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := Policy{AllowPrivate: true}.Client(5 * time.Second).Do(req)
		if err != nil {
			t.Fatalf("%s %s error = %v; want the 301 response", method, first.URL, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != location {
			t.Errorf("%s %s = %d Location %q; want 301 Location %q", method, first.URL, resp.StatusCode, resp.Header.Get("Location"), location)
		}
	}
	if got := hits.Load(); got != 0 {
		t.Errorf("requests reaching the redirect target = %d; want 0", got)
	}
}

func TestClientIgnoresEnvironmentProxy(t *testing.T) {
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pl := &countingListener{Listener: proxy}
	defer pl.Close()
	go func() {
		for {
			c, err := pl.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	proxyURL := "http://" + proxy.Addr().String()
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"} {
		t.Setenv(k, proxyURL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")

	srv, _, _ := newCountingServer(t)
	// A non-loopback name: Go's environment proxy lookup skips loopback hosts,
	// which would make this test unable to fail.
	res := newFakeResolver(map[string]string{"hooks.example.com": "127.0.0.1"})
	c := Policy{AllowPrivate: true, Resolver: res}.Client(5 * time.Second)
	if tr, ok := c.Transport.(*http.Transport); !ok || tr.Proxy != nil {
		t.Errorf("Client().Transport = %T with Proxy set; want *http.Transport with nil Proxy", c.Transport)
	}
	getOK(t, c, "http://hooks.example.com:"+serverPort(t, srv)+"/hook")
	if got := pl.accepted.Load(); got != 0 {
		t.Errorf("proxy connections = %d; want 0", got)
	}
}

func TestClientSettings(t *testing.T) {
	c := Policy{}.Client(10 * time.Second)
	if c.Timeout != 10*time.Second {
		t.Errorf("Client(10s).Timeout = %v; want 10s", c.Timeout)
	}
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("Client().Transport = %T; want *http.Transport", c.Transport)
	}
	if tr.TLSClientConfig == nil || tr.TLSClientConfig.MinVersion < 0x0303 {
		t.Errorf("Client().Transport.TLSClientConfig = %+v; want MinVersion >= TLS 1.2", tr.TLSClientConfig)
	}
	if tr.DisableKeepAlives {
		t.Errorf("Client().Transport.DisableKeepAlives = true; want false")
	}
}

func TestControl(t *testing.T) {
	tests := []struct {
		private          bool
		network, address string
		refused          bool
	}{
		{false, "tcp4", "127.0.0.1:443", true},
		{false, "tcp4", "169.254.169.254:80", true},
		{false, "tcp6", "[::ffff:7f00:1]:443", true},
		{false, "tcp6", "[fe80::1%eth0]:443", true},
		{false, "tcp4", "93.184.216.34:443", false},
		{false, "tcp6", "[2606:4700:4700::1111]:443", false},
		{false, "udp4", "93.184.216.34:53", true},
		{false, "tcp4", "not-an-address", true},
		{true, "tcp4", "127.0.0.1:8080", false},
		{true, "tcp4", "0.0.0.0:8080", true},
	}
	for _, tt := range tests {
		err := Policy{AllowPrivate: tt.private}.control(tt.network, tt.address, nil)
		if got := IsRefused(err); got != tt.refused {
			t.Errorf("Policy{AllowPrivate: %v}.control(%q, %q) = %v; want refused %v", tt.private, tt.network, tt.address, err, tt.refused)
		}
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"http://example.com", "https://127.0.0.1", "https://169.254.169.254/latest/meta-data",
		"https://[::1]", "https://[::ffff:127.0.0.1]", "https://2130706433", "https://0x7f.1",
		"https://017700000001", "https://localhost", "https://10.0.0.5", "https://100.100.100.200",
		"https://[fd00:ec2::254]", "https://user:pw@example.com", "https://127.1", "https://foo.localhost",
		"https://metadata.google.internal", "https://[2002:7f00:1::]", "https://[64:ff9b::7f00:1]",
		"https://example.com:8443", "https://hooks.example.com/x?y=1", "https://93.184.216.34/hook",
		"https://[fe80::1%25eth0]", "https://example.com:443/a%2Fb?c=%zz", "HTTPS://EXAMPLE.COM./",
		"https://example.com\\@127.0.0.1/", "https://example.com%2F@127.0.0.1",
	} {
		f.Add(s)
	}
	res := &egressFakeResolver{any: []netip.Addr{netip.MustParseAddr("93.184.216.34")}}
	p := Policy{Resolver: res}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := p.CheckURL(context.Background(), raw)
		if err != nil {
			var inv *errs.Invalid
			if !errors.Is(err, ErrUnsafeURL) || !errors.As(err, &inv) || inv.Field != "url" {
				t.Fatalf("CheckURL(%q) error = %v; want ErrUnsafeURL and an *errs.Invalid on \"url\"", raw, err)
			}
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("CheckURL(%q) = %q, which does not parse: %v", raw, got, err)
		}
		if u.Scheme != "https" || u.User != nil || u.Hostname() == "" || u.Fragment != "" {
			t.Fatalf("CheckURL(%q) = %q; want https, a host, no userinfo and no fragment", raw, got)
		}
		if a, err := netip.ParseAddr(u.Hostname()); err == nil && p.Denied(a) {
			t.Fatalf("CheckURL(%q) = %q; host is a denied address", raw, got)
		}
		if again, err := p.CheckURL(context.Background(), got); err != nil || again != got {
			t.Fatalf("CheckURL(%q) = %q, %v; want it stable at %q", got, again, err, got)
		}
	})
}

// TestCheckHost: the save-time check of a message provider's host refuses
// what CheckURL refuses of a host before resolving it, and resolves nothing.
func TestCheckHost(t *testing.T) {
	for _, tc := range []struct {
		host         string
		allowPrivate bool
		ok           bool
	}{
		{"api.twilio.com", false, true},
		{"smtp.example.com:587", false, true},
		{"93.184.216.34", false, true},
		{"[2606:2800:220:1:248:1893:25c8:1946]:443", false, true},
		{"10.0.0.1", false, false},
		{"127.0.0.1:25", false, false},
		{"::1", false, false},
		{"[::1]:25", false, false},
		{"169.254.169.254", false, false},
		{"localhost", false, false},
		{"mail.corp.internal", false, false},
		{"intranet", false, false},
		{"0x7f.1", false, false},
		{"10.0.0.1", true, true},
		{"localhost:2525", true, true},
		{"metadata.google.internal", true, false},
	} {
		err := Policy{AllowPrivate: tc.allowPrivate}.CheckHost(tc.host)
		if (err == nil) != tc.ok {
			t.Errorf("CheckHost(%q, allowPrivate %v) = %v; want ok %v", tc.host, tc.allowPrivate, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrUnsafeURL) {
			t.Errorf("CheckHost(%q) = %v; want ErrUnsafeURL", tc.host, err)
		}
	}
}
