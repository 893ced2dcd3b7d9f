package passkey

import (
	"testing"

	"github.com/go-webauthn/webauthn/protocol"
)

func TestCheckRPID(t *testing.T) {
	for _, c := range []struct {
		rpID    string
		origins []string
		ok      bool
	}{
		{"example.com", []string{"https://example.com", "https://app.example.com:8443"}, true},
		{"app.example.com", []string{"https://app.example.com"}, true},
		{"localhost", []string{"http://localhost:3000"}, true},
		// A look-alike suffix is not a parent domain.
		{"example.com", []string{"https://evilexample.com"}, false},
		{"app.example.com", []string{"https://example.com"}, false},
		{"example.com", []string{"https://app.example.com", "https://other.test"}, false},
		// WebAuthn RP ids are domain names, never addresses.
		{"127.0.0.1", []string{"http://127.0.0.1:8080"}, false},
		{"", []string{"https://example.com"}, false},
	} {
		if err := CheckRPID(c.rpID, c.origins); (err == nil) != c.ok {
			t.Errorf("CheckRPID(%q, %v) = %v; want ok %v", c.rpID, c.origins, err, c.ok)
		}
	}
}

func TestRPIDFor(t *testing.T) {
	if got := RPIDFor("https://App.Example.com:8443", ""); got != "App.Example.com" && got != "app.example.com" {
		t.Errorf("RPIDFor(origin) = %q", got)
	}
	if got := RPIDFor("https://app.example.com", "example.com"); got != "example.com" {
		t.Errorf("RPIDFor(origin, set) = %q; want the set one", got)
	}
}

func TestAttachment(t *testing.T) {
	for _, c := range []struct {
		reported string
		ts       []protocol.AuthenticatorTransport
		want     string
	}{
		{"platform", nil, "platform"},
		{"cross-platform", []protocol.AuthenticatorTransport{protocol.Internal}, "cross-platform"},
		{"", []protocol.AuthenticatorTransport{protocol.Internal, protocol.Hybrid}, "platform"},
		{"", []protocol.AuthenticatorTransport{protocol.USB, protocol.NFC}, "cross-platform"},
		{"", nil, "cross-platform"},
	} {
		if got := attachment(c.reported, c.ts); got != c.want {
			t.Errorf("attachment(%q, %v) = %q; want %q", c.reported, c.ts, got, c.want)
		}
	}
}

func TestNewDefaults(t *testing.T) {
	rp, err := New(Settings{RPID: "example.com", RPName: "Demo", Origins: []string{"https://example.com"}, UserVerification: "sometimes"})
	if err != nil {
		t.Fatal(err)
	}
	if rp.UserVerification() != "required" {
		t.Errorf("an unknown requirement became %q; want required", rp.UserVerification())
	}
}
