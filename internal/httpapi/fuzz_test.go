package httpapi

import (
	"encoding/json"
	"errors"
	"net"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// fuzzProxies are the trusted proxies of FuzzClientIP, besides the one the
// fuzzer configures.
var fuzzProxies = []string{"10.0.0.0/8", "192.168.1.10/32", "2001:db8:1::/48"}

// inPrefix reports whether a configured prefix holds a, however either is
// spelled: an IPv4 address is also inside an IPv4-mapped prefix.
func inPrefix(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) || a.Is4() && p.Contains(netip.AddrFrom16(a.As16())) {
			return true
		}
	}
	return false
}

// FuzzClientIP checks the client IP taken for rate limits and logs: a peer
// that is not a trusted proxy is the client whatever headers it sends; behind
// a trusted proxy the client is the nearest untrusted hop, which the headers a
// client adds in front cannot change; and the answer is always the peer or
// one of the hops.
func FuzzClientIP(f *testing.F) {
	for _, s := range [][4]string{
		{"203.0.113.5:4000", "1.2.3.4", "for=1.2.3.4", ""},
		{"10.0.0.2:4000", "1.2.3.4", "", ""},
		{"10.0.0.2:4000", "1.2.3.4, 10.0.0.3", "", ""},
		{"10.0.0.2:4000", "garbage, 1.2.3.4", "", ""},
		{"10.0.0.2:4000", "1.2.3.4,garbage", "", ""},
		{"10.0.0.2:4000", "", "", ""},
		{"10.0.0.2:4000", "10.9.9.9, 10.0.0.3", "", ""},
		{"[::ffff:10.0.0.2]:4000", "::ffff:1.2.3.4", "", ""},
		{"[2001:db8:1::5]:443", "2001:db8:2::1", "", ""},
		{"[fe80::1%eth0]:443", "1.2.3.4", "", "fe80::/10"},
		{"192.168.1.10:1", " 1.2.3.4 ,\t5.6.7.8 ", "", ""},
		{"192.168.1.11:1", "1.2.3.4", "", ""},
		{"not an address", "1.2.3.4", "", ""},
		{"172.16.0.1:1", "1.2.3.4", "", "172.16.0.0/12"},
		{"172.16.0.1:1", "1.2.3.4", "", "::ffff:172.16.0.0/108"},
		{"172.16.0.1:1", "1.2.3.4", "", "172.16.0.1/32"},
		{"172.16.0.1:1", "1.2.3.4%x", "", "0.0.0.0/0"},
		{"[::1]:1", "[::2]:80", "", "::1/128"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, remote, xff, forwarded, cidr string) {
		prefixes := make([]netip.Prefix, 0, len(fuzzProxies)+1)
		for _, c := range fuzzProxies {
			prefixes = append(prefixes, netip.MustParsePrefix(c))
		}
		// What config's http.trusted_proxies accepts (netip.ParsePrefix).
		if p, err := netip.ParsePrefix(cidr); err == nil {
			prefixes = append(prefixes, p)
		}
		s := &Server{Deps: Deps{TrustedProxies: prefixes}}
		ip := func(headers ...string) netip.Addr {
			r := httptest.NewRequest("GET", "/v1/x", nil)
			r.RemoteAddr = remote
			for _, h := range headers {
				r.Header.Add("X-Forwarded-For", h)
			}
			r.Header.Set("Forwarded", forwarded)
			r.Header.Set("X-Real-Ip", "198.51.100.99")
			return s.clientIP(r)
		}
		got := ip(xff)

		// net/http sets RemoteAddr to host:port; anything else is read whole.
		host, _, err := net.SplitHostPort(remote)
		if err != nil {
			host = remote
		}
		peer, err := netip.ParseAddr(host)
		if err != nil {
			if got.IsValid() {
				t.Fatalf("clientIP(remote %q) = %v; want no address", remote, got)
			}
			return
		}
		p := peer.Unmap()
		if !inPrefix(prefixes, p) {
			// A spoofed header from an untrusted peer never changes the client IP.
			if got != p {
				t.Fatalf("clientIP(remote %q, X-Forwarded-For %q) = %v; want the untrusted peer %v", remote, xff, got, p)
			}
			return
		}
		// Behind a trusted proxy that appended the real client's address,
		// that address is the client, whatever the client sent before it.
		const client = "198.51.100.7"
		if !inPrefix(prefixes, netip.MustParseAddr(client)) {
			for _, headers := range [][]string{{xff, client}, {xff + "," + client}, {xff + ", " + client + " "}} {
				if c := ip(headers...); c.String() != client {
					t.Fatalf("clientIP(remote %q, X-Forwarded-For %q) = %v; want %s appended by the trusted proxy", remote, headers, c, client)
				}
			}
		}
		if got == p {
			return
		}
		// Otherwise the answer is a hop, untrusted, with only trusted hops to its right.
		hops := strings.Split(xff, ",")
		found := false
		for i := len(hops) - 1; i >= 0; i-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				t.Fatalf("clientIP(remote %q, X-Forwarded-For %q) = %v, read past the malformed hop %q", remote, xff, got, hops[i])
			}
			if a.Unmap() == got {
				found = true
				break
			}
			if !inPrefix(prefixes, a.Unmap()) {
				t.Fatalf("clientIP(remote %q, X-Forwarded-For %q) = %v, past the untrusted hop %v", remote, xff, got, a)
			}
		}
		if !found || inPrefix(prefixes, got) {
			t.Fatalf("clientIP(remote %q, X-Forwarded-For %q) = %v; want an untrusted hop", remote, xff, got)
		}
		// Whatever a client puts in front changes nothing.
		for _, headers := range [][]string{{"6.6.6.6", xff}, {"garbage," + xff}, {"6.6.6.6, 10.0.0.1," + xff}} {
			if c := ip(headers...); c != got {
				t.Fatalf("clientIP(remote %q, X-Forwarded-For %q) = %v; want %v as without the prefix", remote, headers, c, got)
			}
		}
	})
}

// holdsNUL reports whether a decoded JSON value holds a NUL in any key or string.
func holdsNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		for _, e := range v {
			if holdsNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) || holdsNUL(e) {
				return true
			}
		}
	}
	return false
}

// holdsBadText reports whether a decoded JSON value holds text that is not
// valid UTF-8 or holds a NUL.
func holdsBadText(v any) bool {
	switch v := v.(type) {
	case string:
		return !cleanText(v)
	case []any:
		for _, e := range v {
			if holdsBadText(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if !cleanText(k) || holdsBadText(e) {
				return true
			}
		}
	}
	return false
}

// FuzzUnmarshalJSON checks the request body decoder: whatever it accepts
// decodes exactly as encoding/json does and holds only clean text (no NUL,
// valid UTF-8), which both databases can store; a body refused for its text
// really holds a NUL.
func FuzzUnmarshalJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"identifier":"a@example.com"}`, `{"a":"\u0000"}`, `{"a":"\\u0000"}`, `{"a":"\\\u0000"}`, `{"\u0000":1}`,
		`{"a":"\ud800\u0000"}`, `{"a":"\U0000"}`, `{"a":"\u00000"}`, `["\u0000"]`, `"\u0000"`, `{"a":"\u000"}`,
		`{"a":"x\\"}`, `{"a":"\\\\u0000"}`, "{\"a\":\"\xff\"}", "{\"a\":\"\x00\"}", `{"a":"\ud800"}`, `{"a":1e999}`,
		`{"user_meta":{"age":1,"x":[null,true,{"y":"\u0001"}]}}`, `{"a":1,"a":2}`, `{"a":1,"A":2}`, ``, `nul`, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got any
		err := unmarshalJSON(data, &got)
		var ref any
		refErr := json.Unmarshal(data, &ref)
		if err == nil {
			if refErr != nil {
				t.Fatalf("unmarshalJSON(%q) accepted what encoding/json refuses: %v", data, refErr)
			}
			if !reflect.DeepEqual(got, ref) {
				t.Fatalf("unmarshalJSON(%q) = %#v; encoding/json gives %#v", data, got, ref)
			}
			if holdsBadText(got) {
				t.Fatalf("unmarshalJSON(%q) = %#v, which holds a NUL or invalid UTF-8", data, got)
			}
			return
		}
		var bad badTextError
		if errors.As(err, &bad) && refErr == nil && !holdsNUL(ref) {
			t.Fatalf("unmarshalJSON(%q) refused the text of %#v, which holds no NUL", data, ref)
		}
		if refErr == nil && holdsNUL(ref) && !errors.As(err, &bad) {
			t.Fatalf("unmarshalJSON(%q) error = %v; want %q for a NUL", data, err, msgBadText)
		}
	})
}
