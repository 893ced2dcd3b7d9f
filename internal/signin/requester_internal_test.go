package signin

import (
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestDescribeRequester: the "Requested from" line of a magic-link message
// leaves out what is not known instead of showing it empty.
func TestDescribeRequester(t *testing.T) {
	for _, tc := range []struct {
		ua, ip, place, want string
	}{
		{"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "203.0.113.7", "Berlin, DE", "Firefox on Linux, 203.0.113.7 (Berlin, DE)"},
		{"curl-test/8.5", "127.0.0.1", "", "curl-test, 127.0.0.1"},
		{"", "", "", "Unknown device"},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile/15E148 Safari/604.1", "", "", "Safari on iOS"},
	} {
		if got := describeRequester(store.Challenge{UserAgent: tc.ua, IP: tc.ip, Location: tc.place}); got != tc.want {
			t.Errorf("describeRequester(%q, %q, %q) = %q; want %q", tc.ua, tc.ip, tc.place, got, tc.want)
		}
	}
}
