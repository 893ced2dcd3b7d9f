package signin

import (
	"encoding/base32"
	"net/url"
	"testing"
	"time"
)

// RFC 6238 Appendix B's SHA-1 secret and two of its vectors, cut to six
// digits (the low six of the eight-digit codes).
var rfcSecret = []byte("12345678901234567890")

func TestTOTPCodeMatchesRFC6238(t *testing.T) {
	for _, tc := range []struct {
		unix int64
		want string
	}{
		{59, "287082"},         // 94287082
		{1111111109, "081804"}, // 07081804
		{1234567890, "005924"}, // 89005924
		{2000000000, "279037"}, // 69279037
	} {
		got, err := totpCode(rfcSecret, totpStep(time.Unix(tc.unix, 0)))
		if err != nil || got != tc.want {
			t.Errorf("totpCode at %d = %q, %v; want %q", tc.unix, got, err, tc.want)
		}
	}
}

// A code is accepted one step either side of now and no further (security
// R-TOTP-2), and the step it matched is returned for the replay check.
func TestMatchTOTPWindow(t *testing.T) {
	now := time.Unix(1_800_000_015, 0)
	n := totpStep(now)
	for d := int64(-3); d <= 3; d++ {
		code, err := totpCode(rfcSecret, n+d)
		if err != nil {
			t.Fatal(err)
		}
		step, ok := matchTOTP(rfcSecret, code, now)
		wantOK := d >= -1 && d <= 1
		if ok != wantOK || (ok && step != n+d) {
			t.Errorf("code of step n%+d: matched step %d, %v; want ok=%v (step %d)", d, step, ok, wantOK, n+d)
		}
	}
	for _, bad := range []string{"", "12345", "1234567", "abcdef"} {
		if _, ok := matchTOTP(rfcSecret, bad, now); ok {
			t.Errorf("matchTOTP(%q) matched; want refused", bad)
		}
	}
}

// The secret is 160 bits, and the otpauth URI names the app as issuer with
// the parameters every authenticator app understands (R-TOTP-1).
func TestNewTOTPKey(t *testing.T) {
	secret, uri, err := newTOTPKey("Acme & Co", "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if len(secret) != 20 {
		t.Errorf("secret is %d bytes; want 20", len(secret))
	}
	if want := "otpauth://totp/Acme%20%26%20Co:ada@example.com?secret="; uri[:len(want)] != want {
		t.Errorf("uri %q; want it to start %q", uri, want)
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "otpauth" || u.Host != "totp" {
		t.Fatalf("uri %q (%v); want otpauth://totp/…", uri, err)
	}
	if u.Path != "/Acme & Co:ada@example.com" {
		t.Errorf("label %q; want issuer:account", u.Path)
	}
	q := u.Query()
	for k, want := range map[string]string{"issuer": "Acme & Co", "algorithm": "SHA1", "digits": "6", "period": "30"} {
		if q.Get(k) != want {
			t.Errorf("%s = %q; want %q", k, q.Get(k), want)
		}
	}
	got, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(q.Get("secret"))
	if err != nil || string(got) != string(secret) {
		t.Errorf("secret in the URI decodes to %x, %v; want %x", got, err, secret)
	}
	other, _, _ := newTOTPKey("Acme & Co", "ada@example.com")
	if string(other) == string(secret) {
		t.Error("two enrolments got the same secret")
	}
}

func TestNormalizeCode(t *testing.T) {
	for in, want := range map[string]string{" 123 456 ": "123456", "7kq2m-xh4pd": "7KQ2MXH4PD", "7KQ2M XH4PD\t": "7KQ2MXH4PD"} {
		if got := normalizeCode(in); got != want {
			t.Errorf("normalizeCode(%q) = %q; want %q", in, got, want)
		}
	}
}

// Every pair the method table names is a valid purpose and method, and
// every purpose has at least one method.
func TestPurposeMethodTable(t *testing.T) {
	for _, p := range Purposes {
		ms := purposeMethods[p]
		if len(ms) == 0 {
			t.Errorf("purpose %s has no method", p)
		}
		for _, m := range ms {
			if !MethodServes(p, m) {
				t.Errorf("MethodServes(%s, %s) = false", p, m)
			}
		}
	}
	for _, m := range []string{MethodTOTP, MethodBackupCode} {
		if MethodServes(PurposeAuthenticate, m) {
			t.Errorf("%s can authenticate alone; it must only be a second factor", m)
		}
	}
	if MethodServes(PurposeMFA, MethodMagicLink) || MethodServes(PurposeVerifyContact, MethodTOTP) {
		t.Error("a magic link serves mfa, or a TOTP code verifies a contact")
	}
}
