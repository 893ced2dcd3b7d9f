package social

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// TestAppleClientSecret: the minted secret is the JWT Apple's token
// endpoint checks: ES256 by the .p8 key, kid the key id, iss the team, sub
// the Services ID, aud Apple, short-lived.
func TestAppleClientSecret(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	p8 := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	raw, err := AppleClientSecret("ABCDE12345", "KEY1234567", "com.example.web", p8, now)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil || tok.Headers[0].KeyID != "KEY1234567" {
		t.Fatalf("ParseSigned = %v, kid %v", err, tok)
	}
	var c jwt.Claims
	if err := tok.Claims(&k.PublicKey, &c); err != nil {
		t.Fatalf("the secret is not signed by the .p8 key: %v", err)
	}
	err = c.Validate(jwt.Expected{Issuer: "ABCDE12345", Subject: "com.example.web", AnyAudience: jwt.Audience{"https://appleid.apple.com"}, Time: now.Add(time.Minute)})
	if err != nil || c.Expiry.Time().Sub(c.IssuedAt.Time()) > 10*time.Minute {
		t.Errorf("claims %+v: %v; want Apple's, valid for minutes", c, err)
	}
	if _, err := AppleClientSecret("ABCDE12345", "KEY1234567", "com.example.web", "not a key", now); err == nil {
		t.Error("a secret was minted from something that is not a .p8 key")
	}
}
