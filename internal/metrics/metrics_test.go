package metrics_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/internal/metrics"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// counter reads a counter's value by its labels from reg (0 when absent).
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// TestLabelsStayBounded: a value outside a label's list is counted as
// "other", never as a series of its own.
func TestLabelsStayBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	m.SignIn("ada@example.com", "whatever")
	m.SignIn(metrics.MethodTOTP, metrics.ResultLocked)
	m.Refresh("strange")
	m.SMSRefused("a reason nobody listed")
	if got := counter(t, reg, "gatehouse_signins_total", map[string]string{"method": "other", "result": "other"}); got != 1 {
		t.Errorf("sign-in with unlisted labels counted %v as other/other; want 1", got)
	}
	if got := counter(t, reg, "gatehouse_signins_total", map[string]string{"method": "totp", "result": "locked"}); got != 1 {
		t.Errorf("totp/locked = %v; want 1", got)
	}
	if got := counter(t, reg, "gatehouse_token_refreshes_total", map[string]string{"result": "other"}); got != 1 {
		t.Errorf("refresh other = %v; want 1", got)
	}
	if got := counter(t, reg, "gatehouse_sms_guard_refusals_total", map[string]string{"reason": "other"}); got != 1 {
		t.Errorf("sms refusal other = %v; want 1", got)
	}
	var nilMetrics *metrics.Metrics
	nilMetrics.SignIn(metrics.MethodPush, metrics.ResultSuccess) // counts nothing, does not panic
}

// TestRule names every rate-limit key the services build by its rule; a
// key holding an address or identifier never becomes a label.
func TestRule(t *testing.T) {
	for key, want := range map[string]string{
		"send:id:app_1:ada@example.com":  "send_per_identifier",
		"send:ip:2001:db8::1":            "send_per_ip",
		"verify:ip:198.51.100.7":         "verify_per_ip",
		"lookup:ip:198.51.100.7":         "lookup_per_ip",
		"challenge:ip:198.51.100.7":      "challenge_per_ip",
		"challenge:user:u1":              "challenge_per_user",
		"challenge:anon:u1":              "challenge_per_user",
		"challenge:unknown:198.51.100.7": "unknown_identifier_per_ip",
		"short-link:ip:198.51.100.7":     "short_link_per_ip",
		"poll:abcdef":                    "magic_link_poll",
		"m2m-auth:client:app:c1":         "m2m_failures_per_client",
		"m2m-auth:ip:198.51.100.7":       "m2m_failures_per_ip",
		"provider-test:app:app_1":        "provider_test",
		"something:new":                  "other",
	} {
		if got := metrics.Rule(key); got != want {
			t.Errorf("Rule(%q) = %q; want %q", key, got, want)
		}
	}
}

// TestKeySourceCountsRotations: the first load counts nothing, a load with
// the same signing keys nothing, a new key of one algorithm one rotation.
func TestKeySourceCountsRotations(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	signers := []*token.Key{{ID: "k1", Alg: token.ES256}, {ID: "r1", Alg: token.RS256}}
	src := m.KeySource(func(context.Context) (token.KeySet, error) { return token.KeySet{Signers: signers}, nil })
	load := func() {
		if _, err := src(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	load()
	load()
	if got := counter(t, reg, "gatehouse_signing_key_rotations_total", map[string]string{"alg": "ES256"}); got != 0 {
		t.Errorf("rotations after two loads of the same keys = %v; want 0", got)
	}
	signers = []*token.Key{{ID: "k2", Alg: token.ES256}, {ID: "r1", Alg: token.RS256}}
	load()
	if got := counter(t, reg, "gatehouse_signing_key_rotations_total", map[string]string{"alg": "ES256"}); got != 1 {
		t.Errorf("ES256 rotations = %v; want 1", got)
	}
	if got := counter(t, reg, "gatehouse_signing_key_rotations_total", map[string]string{"alg": "RS256"}); got != 0 {
		t.Errorf("RS256 rotations = %v; want 0", got)
	}
}
