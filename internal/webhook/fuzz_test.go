package webhook

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// segmentMatch is the subscription rule written independently of matches:
// "*" selects every type, a pattern ending in ".*" selects the types that
// start with all of its other labels and have at least one more, and any
// other pattern selects only the type spelled exactly like it.
func segmentMatch(p, t string) bool {
	if p == "*" {
		return true
	}
	ps, ts := strings.Split(p, "."), strings.Split(t, ".")
	if ps[len(ps)-1] != "*" {
		return p == t
	}
	ps = ps[:len(ps)-1]
	return len(ts) > len(ps) && slices.Equal(ts[:len(ps)], ps)
}

func FuzzEventPattern(f *testing.F) {
	for _, s := range []string{
		"*", "**", ".*", "*.*", "user.*", "user.created", "user.", "user", "User.created", "user.created.*",
		"verification.*", "verification.email.*", "verification.email*", "verification..*", "verification.sms.verified",
		"verification.email.denied", "auth.login.failed", "auth.*", "auth.login.*", "webhook.test", " user.created",
		"user.*.created", "verification.*.verified", "user.identifier_changed",
	} {
		f.Add(s, "user.created")
	}
	f.Add("verification.*", "verification.email.verified")
	f.Add("user.*", "user.")
	f.Add("user.*", "userx.created")
	types := eventTypes()
	f.Fuzz(func(t *testing.T, p, typ string) {
		// The emitter only ever asks about known types, but matches must be
		// right for any pair.
		if got, want := matches(p, typ), segmentMatch(p, typ); got != want {
			t.Fatalf("matches(%q, %q) = %v; want %v", p, typ, got, want)
		}
		var selects []string
		for _, et := range types {
			if matches(p, et) {
				selects = append(selects, et)
			}
		}
		if got := ValidPattern(p); got != (len(selects) > 0) {
			t.Fatalf("ValidPattern(%q) = %v, but it selects %q", p, got, selects)
		}
		if len(selects) > 1 && p != "*" && !strings.HasSuffix(p, ".*") {
			t.Fatalf("pattern %q without a wildcard selects %q", p, selects)
		}
		for _, et := range types {
			// An endpoint with this one pattern gets exactly what it selects;
			// adding a pattern never takes an event away.
			if subscribed([]string{p}, et) != slices.Contains(selects, et) {
				t.Fatalf("subscribed([%q], %q) disagrees with matches", p, et)
			}
			if matches(et, et) && !subscribed([]string{p, et}, et) {
				t.Fatalf("subscribed([%q, %q], %q) = false", p, et, et)
			}
			if !subscribed(nil, et) {
				t.Fatalf("subscribed(nil, %q) = false; no patterns means every event", et)
			}
		}
	})
}

// spellings lists the ways an address can be written that Denied and the
// dial hook must judge as the address itself: its IPv4-mapped, IPv4-compatible
// and 6to4 forms for IPv4, and zoned forms for IPv6.
func spellings(a netip.Addr, zone string) []netip.Addr {
	out := []netip.Addr{a}
	if a.Is4() {
		b := a.As4()
		out = append(out,
			netip.AddrFrom16(a.As16()), // ::ffff:a.b.c.d
			netip.AddrFrom16([16]byte{0x20, 0x02, b[0], b[1], b[2], b[3], 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}))
		if zone != "" {
			out = append(out, netip.AddrFrom16(a.As16()).WithZone(zone))
		}
	} else if zone != "" {
		out = append(out, a.WithZone(zone))
	}
	return out
}

// FuzzDenied checks that a non-public address is refused whatever its
// spelling: by Denied, by the dial-time hook and by CheckURL, both as an IP
// literal and as the answer for a name.
func FuzzDenied(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1", "10.1.2.3", "169.254.169.254", "100.100.100.200", "0.0.0.0", "255.255.255.255", "224.0.0.1",
		"192.168.0.1", "172.16.0.1", "93.184.216.34", "8.8.8.8", "::1", "::", "fe80::1", "fd00:ec2::254", "ff02::1",
		"64:ff9b::7f00:1", "2001:db8::1", "2002:7f00:1::", "2002:5db8:d822::1", "2606:4700:4700::1111", "::7f00:1",
		"2001::1", "::ffff:7f00:1",
	} {
		f.Add([]byte(netip.MustParseAddr(s).AsSlice()), "eth0", uint16(443), false)
	}
	f.Add([]byte{127, 0, 0, 1}, "", uint16(8080), true)
	f.Fuzz(func(t *testing.T, raw []byte, zone string, port uint16, allowPrivate bool) {
		a, ok := netip.AddrFromSlice(raw)
		if !ok {
			return
		}
		if strings.ContainsAny(zone, "]%/?#@ ") || !isPrintable(zone) {
			zone = ""
		}
		p := Policy{AllowPrivate: allowPrivate}
		base := a.Unmap()
		denied := p.Denied(a)

		// Independent of the lists in Denied: what the standard library
		// classifies as non-public is refused.
		always := base.IsUnspecified() || base.IsMulticast()
		private := base.IsLoopback() || base.IsPrivate() || base.IsLinkLocalUnicast() || base.IsLinkLocalMulticast() ||
			base.IsInterfaceLocalMulticast() || !base.IsGlobalUnicast()
		if always && !denied {
			t.Fatalf("Denied(%v) = false with AllowPrivate=%v; unspecified and multicast are always refused", a, allowPrivate)
		}
		if !allowPrivate && private && !denied {
			t.Fatalf("Denied(%v) = false; the address is not public", a)
		}

		for _, s := range spellings(base, zone) {
			if denied && !p.Denied(s) {
				t.Fatalf("Denied(%v) = true but Denied(%v) = false", base, s)
			}
			addr := netip.AddrPortFrom(s, port).String()
			for _, network := range []string{"tcp", "tcp4", "tcp6"} {
				if err := p.control(network, addr, nil); (err != nil) != p.Denied(s) {
					t.Fatalf("control(%q, %q) = %v; want refused %v", network, addr, err, p.Denied(s))
				}
			}
		}

		res := &egressFakeResolver{any: []netip.Addr{a}}
		p.Resolver = res
		hosts := []string{"hooks.example.com"}
		if base.Is4() {
			hosts = append(hosts, base.String(), "["+netip.AddrFrom16(base.As16()).String()+"]")
		} else {
			hosts = append(hosts, "["+base.String()+"]")
		}
		for _, h := range hosts {
			raw := "https://" + h + "/hook"
			got, err := p.CheckURL(context.Background(), raw)
			if denied && err == nil {
				t.Fatalf("CheckURL(%q) = %q with %v resolved; want refused", raw, got, a)
			}
		}
	})
}

func isPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
