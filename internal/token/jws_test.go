package token

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"reflect"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// TestSignCompact: a token signed with each algorithm is a compact JWS
// whose header is exactly {alg, kid, typ}, whose payload is the claims'
// JSON, and whose signature the standard library and the JOSE library both
// accept (ES256 as the 64-byte r||s, not ASN.1); a key never signs under
// another algorithm's name.
func TestSignCompact(t *testing.T) {
	for _, alg := range Algorithms {
		t.Run(alg, func(t *testing.T) {
			key := keyFor(t, alg)
			ring := NewKeyring(nil)
			ring.ReplaceSet(KeySet{Signers: []*Key{key}})
			for _, typ := range []string{TypeAccess, TypeM2M} {
				raw, kid, err := ring.SignWith(alg, typ, sampleClaims())
				if err != nil || kid != key.ID {
					t.Fatalf("SignWith(%s, %s) = %q, %v", alg, typ, kid, err)
				}
				parts := strings.Split(raw, ".")
				if len(parts) != 3 {
					t.Fatalf("token has %d parts; want 3", len(parts))
				}
				dec := func(s string) []byte {
					b, err := base64.RawURLEncoding.Strict().DecodeString(s)
					if err != nil {
						t.Fatalf("part %q is not unpadded base64url: %v", s, err)
					}
					return b
				}
				wantHeader := `{"alg":"` + alg + `","kid":"` + key.ID + `","typ":"` + typ + `"}`
				if got := string(dec(parts[0])); got != wantHeader {
					t.Errorf("header = %s; want %s", got, wantHeader)
				}
				claims, _ := json.Marshal(sampleClaims())
				if got := string(dec(parts[1])); got != string(claims) {
					t.Errorf("payload = %s; want %s", got, claims)
				}
				input, sig := []byte(parts[0]+"."+parts[1]), dec(parts[2])
				digest := sha256.Sum256(input)
				var ok bool
				switch pub := key.Public.(type) {
				case *ecdsa.PublicKey:
					ok = len(sig) == 64 && ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
				case *rsa.PublicKey:
					ok = rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig) == nil
				case ed25519.PublicKey:
					ok = ed25519.Verify(pub, input, sig)
				}
				if !ok {
					t.Errorf("the standard library does not verify the %s signature", alg)
				}
				jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
				if err != nil {
					t.Fatalf("jose.ParseSigned: %v", err)
				}
				if _, err := jws.Verify(key.Public); err != nil {
					t.Errorf("jose does not verify the %s token: %v", alg, err)
				}
				var got accessClaims
				if kid, err := ring.Verify(raw, typ, &got); err != nil || kid != key.ID || !reflect.DeepEqual(got, sampleClaims()) {
					t.Errorf("Verify = %q, %v, %+v; want the claims signed", kid, err, got)
				}
			}
			// r and s are left-padded: about one signature in 128 has a
			// leading zero byte in one of them, so try a few hundred.
			if alg == ES256 {
				for i := range 300 {
					input := []byte{byte(i), byte(i >> 8)}
					sig, err := signature(key, input)
					digest := sha256.Sum256(input)
					pub := key.Public.(*ecdsa.PublicKey)
					if err != nil || len(sig) != 64 || !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
						t.Fatalf("signature %d: %d bytes, %v; want 64 that verify", i, len(sig), err)
					}
				}
			}
			for _, other := range Algorithms {
				if other == alg {
					continue
				}
				if _, err := signCompact(&Key{ID: key.ID, Alg: other, Private: key.Private, Public: key.Public}, TypeAccess, []byte("{}")); err == nil {
					t.Errorf("a %s key signed as %s", alg, other)
				}
			}
		})
	}
}
