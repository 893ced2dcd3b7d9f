package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
)

// ErrUnsafeURL refuses a webhook URL (not https, userinfo, a non-public
// address, a forbidden name...). Its messages never include the resolved IP
// or a dial error text (R-WH-11).
var ErrUnsafeURL = errors.New("unsafe webhook url")

// maxURLLength bounds a stored webhook URL.
const maxURLLength = 2048

// egressRefusal is the only text a tenant sees for a blocked target (R-WH-11).
const egressRefusal = "refused: non-public address"

// Policy decides which targets are allowed.
type Policy struct {
	// AllowPrivate permits http:// and private, loopback and link-local targets (development only).
	AllowPrivate bool
	// Resolver looks up host names; nil => net.DefaultResolver. Tests inject one.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
}

// egressUnsafe builds a CheckURL refusal: ErrUnsafeURL, and an invalid url
// field for the one error table. reason is a fixed string, never derived
// from a resolver or dial error.
func egressUnsafe(reason string) error {
	return fmt.Errorf("%w: %w", ErrUnsafeURL, &errs.Invalid{Field: "url", Reason: reason})
}

// CheckURL validates a URL when an endpoint is created or updated (R-WH-9)
// and returns it normalised: lower-case scheme and host, no trailing dot, no
// default port. Names are resolved with the Policy's resolver and refused if
// any current A/AAAA answer is denied; the dial-time check in Client still
// applies because the answer may change later.
func (p Policy) CheckURL(ctx context.Context, raw string) (string, error) {
	if len(raw) > maxURLLength {
		return "", egressUnsafe("is too long")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", egressUnsafe("is not valid")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.AllowPrivate:
	default:
		return "", egressUnsafe("must use https")
	}
	if u.User != nil {
		return "", egressUnsafe("must not contain credentials")
	}
	// A fragment is never sent, so one in a webhook URL is a mistake or a
	// parser-confusion attempt; an empty "#" counts too.
	if strings.Contains(raw, "#") {
		return "", egressUnsafe("must not contain a fragment")
	}
	if u.Opaque != "" || u.Host == "" {
		return "", egressUnsafe("must have a host")
	}

	port, err := p.checkPort(u)
	if err != nil {
		return "", err
	}
	host, addr, err := p.checkHost(u)
	if err != nil {
		return "", err
	}

	if addr.IsValid() {
		if p.Denied(addr) {
			return "", egressUnsafe(egressRefusal)
		}
	} else {
		addrs, err := p.resolver().LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			// The resolver's error names the DNS server, which may be internal.
			return "", egressUnsafe("host does not resolve")
		}
		for _, a := range addrs {
			if p.Denied(a) {
				return "", egressUnsafe(egressRefusal)
			}
		}
	}

	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	switch {
	case addr.Is4():
		host = addr.String()
	case addr.Is6():
		host = "[" + addr.String() + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	u.Fragment, u.RawFragment = "", ""
	// Normalising can lengthen a URL (re-escaped bytes); what is stored must
	// pass this check again, so the limit applies to the result too.
	out := u.String()
	if len(out) > maxURLLength {
		return "", egressUnsafe("is too long")
	}
	return out, nil
}

// CheckHost vets a host (a name or an address, with or without a port)
// as CheckURL does before resolving it: a forbidden name, a local name or
// a non-public address literal is refused. Names are not resolved here;
// the dial-time check (DialControl, Client) refuses what they resolve to.
// Its refusal is ErrUnsafeURL with an invalid "url" field, whose reason
// the caller may show.
func (p Policy) CheckHost(host string) error {
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		host = "[" + host + "]" // a bare IPv6 literal, as an SMTP host may be
	}
	_, addr, err := p.checkHost(&url.URL{Host: host})
	if err != nil {
		return err
	}
	if addr.IsValid() && p.Denied(addr) {
		return egressUnsafe(egressRefusal)
	}
	return nil
}

// checkPort returns the URL's explicit port, which must be 443 (or absent)
// unless AllowPrivate.
func (p Policy) checkPort(u *url.URL) (string, error) {
	if strings.HasSuffix(u.Host, ":") {
		return "", egressUnsafe("port is not valid")
	}
	port := u.Port()
	if port == "" {
		return "", nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || port[0] == '0' {
		return "", egressUnsafe("port is not valid")
	}
	if port != "443" && !p.AllowPrivate {
		return "", egressUnsafe("port is not allowed")
	}
	return port, nil
}

// checkHost validates the host part. It returns the lower-cased name without
// a trailing dot, or the address when the host is an IP literal.
func (p Policy) checkHost(u *url.URL) (string, netip.Addr, error) {
	name := u.Hostname()
	if strings.HasPrefix(u.Host, "[") {
		a, err := netip.ParseAddr(name)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", netip.Addr{}, egressUnsafe("host is not a valid address")
		}
		return "", a, nil
	}
	// Strict dotted quad only: netip refuses leading zeros and short forms.
	if a, err := netip.ParseAddr(name); err == nil && a.Is4() {
		return "", a, nil
	}

	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if !egressValidName(name) {
		return "", netip.Addr{}, egressUnsafe("host is not a valid name")
	}
	labels := strings.Split(name, ".")
	// A host whose last label is a number is read as an IPv4 address by
	// WHATWG URL parsers and inet_aton ("2130706433", "0x7f.1",
	// "017700000001", "127.1"); a full dotted quad was accepted above, so
	// this is a legacy form. No real top-level domain is numeric, so
	// "123.example.com" stays a name.
	if egressNumericLabel(labels[len(labels)-1]) {
		return "", netip.Addr{}, egressUnsafe("host uses a legacy numeric address form")
	}
	// Cloud metadata names are never a legitimate target, even in development.
	if name == "metadata.google.internal" || name == "metadata.amazonaws.com" {
		return "", netip.Addr{}, egressUnsafe("host is not allowed")
	}
	if !p.AllowPrivate {
		if name == "localhost" || egressHasSuffix(name, "localhost", "internal", "local", "home.arpa") {
			return "", netip.Addr{}, egressUnsafe("host is not allowed")
		}
		// A single label is subject to resolver search domains, i.e. the
		// local network's naming.
		if len(labels) < 2 {
			return "", netip.Addr{}, egressUnsafe("host must be a fully qualified domain name")
		}
	}
	return name, netip.Addr{}, nil
}

// egressValidName reports whether s is a lower-case LDH host name.
func egressValidName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// egressNumericLabel reports whether a label is all digits or hex ("0x...").
func egressNumericLabel(l string) bool {
	if strings.HasPrefix(l, "0x") {
		l = l[2:]
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// egressHasSuffix reports whether name is, or is under, one of the zones.
func egressHasSuffix(name string, zones ...string) bool {
	for _, z := range zones {
		if name == z || strings.HasSuffix(name, "."+z) {
			return true
		}
	}
	return false
}

// Denied reports whether an address may not be dialled: the IANA
// special-purpose ranges of security.md §12.4, unless AllowPrivate (which
// still refuses unspecified, multicast and broadcast addresses). Mapped and
// 6to4 addresses are judged by the IPv4 address they carry.
func (p Policy) Denied(a netip.Addr) bool {
	if !a.IsValid() {
		return true
	}
	// Prefix.Contains never matches a zoned address.
	a = a.WithZone("")
	if a.Is4In6() {
		return p.Denied(a.Unmap())
	}
	if a.Is6() && netip.MustParsePrefix("2002::/16").Contains(a) {
		b := a.As16()
		return p.Denied(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}

	var always, private []string
	if a.Is4() {
		always = []string{"0.0.0.0/8", "224.0.0.0/4", "255.255.255.255/32"}
		private = []string{
			"10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
			"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24",
			"192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
			"203.0.113.0/24", "240.0.0.0/4",
		}
	} else {
		always = []string{"::/128", "ff00::/8"}
		private = []string{
			"::/96", // ::1 and the deprecated IPv4-compatible form
			"64:ff9b::/96", "64:ff9b:1::/48", "100::/64",
			"2001::/23",     // IETF protocol assignments, incl. Teredo 2001::/32
			"2001:db8::/32", // documentation
			"3fff::/20",     // documentation (RFC 9637)
			"5f00::/16",     // SRv6 SIDs (RFC 9602)
			"fc00::/7", "fe80::/10",
			"fec0::/10", // deprecated site-local
		}
	}
	for _, s := range always {
		if netip.MustParsePrefix(s).Contains(a) {
			return true
		}
	}
	if p.AllowPrivate {
		return false
	}
	for _, s := range private {
		if netip.MustParsePrefix(s).Contains(a) {
			return true
		}
	}
	// Belt and braces for anything the lists above miss.
	return !a.IsGlobalUnicast()
}

// refusedError is the dial-time refusal. Its text is fixed so that wrapping
// errors (url.Error) never carry the dialled address.
type refusedError struct{}

func (refusedError) Error() string { return egressRefusal }

// IsRefused reports whether err came from the dial-time refusal (so a
// delivery can record "refused: non-public address" without the error text).
func IsRefused(err error) bool {
	var r refusedError
	return errors.As(err, &r)
}

// Client returns the HTTP client deliveries must use (R-WH-10). Names are
// resolved with the Policy's resolver and refused if any answer is denied;
// the dialer's Control hook then re-checks the address actually dialled, so
// DNS rebinding between CheckURL and delivery gets no connection. Proxy is
// nil, redirects are returned rather than followed, TLS is 1.2 or later, and
// keep-alive connections are checked once, when dialled. timeout bounds the
// whole attempt. Other dial errors (timeouts, resets) are returned as is:
// callers must not show err.Error() to tenants.
func (p Policy) Client(timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: timeout, Control: p.control}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	tr := &http.Transport{
		// Environment proxies would dial on our behalf and bypass Control.
		Proxy:                  nil,
		DialContext:            p.dialContext(d),
		DialTLSContext:         dialTLS(p.dialContext(d), tlsConfig),
		TLSClientConfig:        tlsConfig,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           100,
		IdleConnTimeout:        90 * time.Second,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			// A 3xx is a delivery failure, never a new target (R-WH-5).
			return http.ErrUseLastResponse
		},
	}
}

// DialControl is the net.Dialer hook of Client, for other dialers (an app's
// SMTP host) that must refuse the same addresses.
func (p Policy) DialControl() func(network, address string, c syscall.RawConn) error {
	return p.control
}

// control is the net.Dialer hook: it sees the final address of every
// connection attempt, after any resolution.
func (p Policy) control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return refusedError{}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil || p.Denied(ap.Addr()) {
		return refusedError{}
	}
	return nil
}

// dialContext resolves with the Policy's resolver (so tests and operators get
// the same view as CheckURL) and dials the addresses in turn through d.
func (p Policy) dialContext(d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, portStr, err := net.SplitHostPort(address)
		if err != nil {
			return nil, errors.New("webhook dial: address is not valid")
		}
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil {
			return nil, errors.New("webhook dial: port is not valid")
		}
		var addrs []netip.Addr
		if a, err := netip.ParseAddr(host); err == nil {
			// Left to Control, which judges every literal the same way.
			addrs = []netip.Addr{a}
		} else {
			lookup := "ip"
			switch network {
			case "tcp4":
				lookup = "ip4"
			case "tcp6":
				lookup = "ip6"
			}
			addrs, err = p.resolver().LookupNetIP(ctx, lookup, host)
			if err != nil || len(addrs) == 0 {
				if ctx.Err() != nil {
					return nil, fmt.Errorf("webhook dial: %w", ctx.Err())
				}
				return nil, errHostNotFound
			}
			// One bad answer taints the name, as at create time.
			for _, a := range addrs {
				if p.Denied(a) {
					return nil, refusedError{}
				}
			}
		}
		var first error
		for _, a := range addrs {
			conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
			if err == nil {
				return conn, nil
			}
			if IsRefused(err) {
				// Drop the net.OpError wrapper: it names the address.
				return nil, refusedError{}
			}
			if first == nil {
				first = err
			}
			if ctx.Err() != nil {
				break
			}
		}
		return nil, first
	}
}

// errHostNotFound is a delivery target whose name does not resolve; the
// resolver's own error names the DNS server, which may be internal.
var errHostNotFound = errors.New("webhook dial: host does not resolve")

// handshakeError marks a failed TLS handshake, so a delivery records "TLS
// handshake failed" by the error's type, whatever the TLS library said.
type handshakeError struct{ err error }

func (e handshakeError) Error() string { return "webhook dial: tls handshake: " + e.err.Error() }
func (e handshakeError) Unwrap() error { return e.err }

// dialTLS dials through dial (and so through every check of the Policy) and
// runs the TLS handshake itself, wrapping its failure in handshakeError.
func dialTLS(dial func(ctx context.Context, network, address string) (net.Conn, error), cfg *tls.Config) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			c.ServerName, _, _ = net.SplitHostPort(address)
		}
		tc := tls.Client(conn, c)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, handshakeError{err}
		}
		return tc, nil
	}
}

// resolver returns the configured resolver or the system one.
func (p Policy) resolver() interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
} {
	if p.Resolver != nil {
		return p.Resolver
	}
	return net.DefaultResolver
}
