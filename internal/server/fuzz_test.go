package server

import (
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/config"
)

// FuzzSettingsAccepted checks that what config accepts the server can use:
// every rate-limit rule parses into a rule (so `gatehouse serve` does not
// fail on a value the settings check passed), and no trusted proxy is
// silently dropped, and every test-identity pattern compiles.
func FuzzSettingsAccepted(f *testing.F) {
	for _, s := range []string{
		"5/10m", "off", "OFF", " off ", "0", "5/1ns", "5/1500us", "2000000000/1h", " 5 / 10m ", "5/10m ", "1/1ms",
		"10.0.0.0/8", "10.0.0.1", "::ffff:10.0.0.0/104", "fd00::/8, 192.168.1.10/32", "10.0.0.0/8,,", "fe80::1%eth0/64",
		`^\+1\d{3}55501\d{2}$`, `\+1555|\+1666`, "(", `\`, "a)(b",
	} {
		f.Add(s)
	}
	keys := []string{"GATEHOUSE_RATELIMIT_SEND_PER_IDENTIFIER", "GATEHOUSE_RATELIMIT_SEND_PER_IP",
		"GATEHOUSE_RATELIMIT_VERIFY_PER_IP", "GATEHOUSE_RATELIMIT_LOOKUP_PER_IP"}
	f.Fuzz(func(t *testing.T, value string) {
		if value == "" || strings.ContainsRune(value, 0) {
			return
		}
		for _, key := range keys {
			cfg, err := config.Load(nil, "", []string{key + "=" + value})
			if err != nil {
				continue
			}
			if _, err := signinLimits(cfg); err != nil {
				t.Fatalf("%s=%q passes the settings check, but the server refuses it: %v", key, value, err)
			}
		}
		if cfg, err := config.Load(nil, "", []string{"GATEHOUSE_TEST_IDENTITIES_PHONE_PATTERN=" + value}); err == nil {
			if _, err := testIdentities(cfg); err != nil {
				t.Fatalf("phone_pattern %q passes the settings check, but the server refuses it: %v", value, err)
			}
		}
		cfg, err := config.Load(nil, "", []string{"GATEHOUSE_HTTP_TRUSTED_PROXIES=" + value})
		if err != nil {
			return
		}
		if got := trustedProxies(cfg.HTTP.TrustedProxies); len(got) != len(cfg.HTTP.TrustedProxies) {
			t.Fatalf("trusted_proxies %q gives %v; want %d prefixes", value, got, len(cfg.HTTP.TrustedProxies))
		}
	})
}
