package token

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"slices"
	"testing"
)

// manualThumbprint follows RFC 7638 §3 by hand: the required members in
// lexicographic order, no whitespace, SHA-256, base64url without padding.
func manualThumbprint(t *testing.T, pub *ecdsa.PublicKey) string {
	t.Helper()
	point, err := pub.Bytes()
	if err != nil {
		t.Fatalf("pub.Bytes() error: %v", err)
	}
	x := base64.RawURLEncoding.EncodeToString(point[1:33])
	y := base64.RawURLEncoding.EncodeToString(point[33:])
	canonical := `{"crv":"P-256","kty":"EC","x":"` + x + `","y":"` + y + `"}`
	sum := sha256.Sum256([]byte(canonical))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func TestKeyIDIsRFC7638Thumbprint(t *testing.T) {
	for i := range 5 {
		key, err := GenerateKey()
		if err != nil {
			t.Fatalf("GenerateKey() error: %v", err)
		}
		if want := manualThumbprint(t, key.Public.(*ecdsa.PublicKey)); key.ID != want {
			t.Errorf("key %d: ID = %q; want %q", i, key.ID, want)
		}
		der, err := key.PrivateDER()
		if err != nil {
			t.Fatalf("PrivateDER() error: %v", err)
		}
		again, err := KeyFromPrivateDER(der)
		if err != nil {
			t.Fatalf("KeyFromPrivateDER() error: %v", err)
		}
		if again.ID != key.ID {
			t.Errorf("KeyFromPrivateDER(PrivateDER()).ID = %q; want %q", again.ID, key.ID)
		}
		if !again.Private.(*ecdsa.PrivateKey).Equal(key.Private) || !again.Public.(*ecdsa.PublicKey).Equal(key.Public) {
			t.Errorf("KeyFromPrivateDER(PrivateDER()) returned a different key")
		}
	}
}

func TestKeyIDDistinct(t *testing.T) {
	a, b := mustKey(t), mustKey(t)
	if a.ID == b.ID {
		t.Errorf("two generated keys share ID %q", a.ID)
	}
}

func TestKeyFromPrivateDERRejects(t *testing.T) {
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p384DER, err := x509.MarshalPKCS8PrivateKey(p384)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024) // RS256 keys have at least 2048 bits
	if err != nil {
		t.Fatal(err)
	}
	rsaDER, err := x509.MarshalPKCS8PrivateKey(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		der  []byte
	}{
		{"empty", nil},
		{"garbage", []byte("not a key")},
		{"p384", p384DER},
		{"rsa1024", rsaDER},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if k, err := KeyFromPrivateDER(tt.der); err == nil {
				t.Errorf("KeyFromPrivateDER(%s) = %v, nil; want error", tt.name, k.ID)
			}
		})
	}
}

func TestPrivateDERVerifyOnly(t *testing.T) {
	key := mustKey(t)
	verifyOnly := &Key{ID: key.ID, Public: key.Public}
	if _, err := verifyOnly.PrivateDER(); err == nil {
		t.Errorf("PrivateDER() on verify-only key: err = nil; want error")
	}
}

func TestPublicJWK(t *testing.T) {
	key := mustKey(t)
	b, err := key.PublicJWK()
	if err != nil {
		t.Fatalf("PublicJWK() error: %v", err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("PublicJWK() = %s; not a JSON object of strings: %v", b, err)
	}
	var names []string
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"alg", "crv", "kid", "kty", "use", "x", "y"}; !slices.Equal(names, want) {
		t.Errorf("PublicJWK() members = %v; want %v", names, want)
	}
	point, err := key.Public.(*ecdsa.PublicKey).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": key.ID,
		"x": base64.RawURLEncoding.EncodeToString(point[1:33]),
		"y": base64.RawURLEncoding.EncodeToString(point[33:]),
	}
	for name, v := range want {
		if m[name] != v {
			t.Errorf("PublicJWK()[%q] = %q; want %q", name, m[name], v)
		}
	}
}

func mustKey(t testing.TB) *Key {
	t.Helper()
	key, err := GenerateKey()
	if err != nil {
		t.Fatalf("GenerateKey() error: %v", err)
	}
	return key
}
