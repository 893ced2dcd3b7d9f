package secretset

import (
	"bytes"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// TestSealOpen: settings come back whole; the secret ones are not in the
// plain part nor readable under another owner's additional data.
func TestSealOpen(t *testing.T) {
	s, err := token.NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]string{"host": "smtp.example.com", "password": "pw-0123456789abcdef"}
	secret := func(name string) bool { return name == "password" }
	plain, sealed, err := Seal(s, in, secret, []byte("a:1"))
	if err != nil || bytes.Contains(plain, []byte("pw-")) || bytes.Contains(sealed, []byte("pw-")) || len(sealed) == 0 {
		t.Fatalf("Seal = %s, %d sealed bytes, %v; want the secret sealed only", plain, len(sealed), err)
	}
	out, err := Open(s, plain, sealed, []byte("a:1"))
	if err != nil || len(out) != 2 || out["host"] != in["host"] || out["password"] != in["password"] {
		t.Fatalf("Open = %v, %v; want %v", out, err, in)
	}
	if _, err := Open(s, plain, sealed, []byte("a:2")); err == nil {
		t.Error("the secrets opened under another owner's additional data")
	}
	if _, sealed, _ := Seal(s, map[string]string{"host": "x"}, secret, nil); sealed != nil {
		t.Errorf("no secret setting, yet %d sealed bytes", len(sealed))
	}
	for secret, want := range map[string]string{"0123456789abcdef": "****cdef", "0123456789abcde": "********", "": "********"} {
		if got := Hint(secret); got != want {
			t.Errorf("Hint(%q) = %q; want %q", secret, got, want)
		}
	}
}
