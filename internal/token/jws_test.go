package token

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
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

// TestMAC: a MAC token is a compact JWS with exactly {alg: HS256, typ}, the
// claims' JSON and an HS256 signature the JOSE library accepts under the
// key; Forged holds for anything its key did not sign, whatever its header
// names, and for its own tokens when too long, but not for a token the
// keyring signed with ES256 (a refresh token from before MAC tokens, looked
// up as before); and the keyring verifies no MAC token, of any type,
// whether or not it names one of the keyring's keys.
func TestMAC(t *testing.T) {
	master := make([]byte, 32)
	mac, err := MACFromMasterKey(master)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := MACFromMasterKey(master)
	other, _ := MACFromMasterKey(append(make([]byte, 31), 1))
	key, _ := DeriveKey(master, "mac")

	raw, err := mac.Sign(TypeRefresh, sampleClaims())
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts; want 3", len(parts))
	}
	header, _ := base64.RawURLEncoding.DecodeString(parts[0])
	if want := `{"alg":"HS256","typ":"rt+jwt"}`; string(header) != want {
		t.Errorf("header = %s; want %s", header, want)
	}
	claims, _ := json.Marshal(sampleClaims())
	if payload, _ := base64.RawURLEncoding.DecodeString(parts[1]); string(payload) != string(claims) {
		t.Errorf("payload = %s; want %s", payload, claims)
	}
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.HS256})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jws.Verify(key); err != nil {
		t.Errorf("the JOSE library does not verify the MAC under its key: %v", err)
	}
	if mac.Forged(raw) || again.Forged(raw) {
		t.Error("Forged(a token of the key) = true")
	}

	twin, _ := other.Sign(TypeRefresh, sampleClaims())
	altered := sampleClaims()
	altered.Subject = "someone-else"
	body, _ := json.Marshal(altered)
	flipped := []byte(parts[2])
	flipped[0] = map[bool]byte{true: 'B', false: 'A'}[flipped[0] == 'A'] // still base64url: the MAC decides
	macWith := func(h jwsHeader) string {
		tok, err := compact(h, claims, func(input []byte) ([]byte, error) { return mac.sum(input), nil })
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	long := sampleClaims()
	long.Subject = strings.Repeat("x", maxTokenLen)
	tooLong, err := mac.Sign(TypeRefresh, long)
	if err != nil {
		t.Fatal(err)
	}
	forged := map[string]string{
		"another key's":     twin,
		"altered payload":   parts[0] + "." + base64.RawURLEncoding.EncodeToString(body) + "." + parts[2],
		"altered signature": parts[0] + "." + parts[1] + "." + string(flipped),
		"no signature":      parts[0] + "." + parts[1] + ".",
		"not a JWS":         "not-a-token",
		"too long":          tooLong,
		"alg none":          macWith(jwsHeader{Alg: "none", Typ: TypeRefresh}),
		"alg HS512":         macWith(jwsHeader{Alg: "HS512", Typ: TypeRefresh}),
		"alg RS256":         macWith(jwsHeader{Alg: RS256, Typ: TypeRefresh}),
		"alg EdDSA":         macWith(jwsHeader{Alg: EdDSA, Typ: TypeRefresh}),
		"alg missing":       macWith(jwsHeader{Typ: TypeRefresh}),
	}
	if mac.Forged(macWith(jwsHeader{Alg: HS256, Typ: TypeRefresh})) {
		t.Fatal("Forged(the MAC made by hand) = true: the forged cases below prove nothing")
	}
	for name, tok := range forged {
		if !mac.Forged(tok) {
			t.Errorf("Forged(%s) = false", name)
		}
	}

	ring := NewKeyring(nil)
	signers := []*Key{keyFor(t, ES256), keyFor(t, RS256), keyFor(t, EdDSA)}
	ring.ReplaceSet(KeySet{Signers: signers})
	legacy, err := ring.Sign(TypeRefresh, sampleClaims())
	if err != nil {
		t.Fatal(err)
	}
	if mac.Forged(legacy) {
		t.Error("Forged(an ES256 refresh token) = true; it is looked up instead")
	}
	for _, typ := range []string{TypeAccess, TypeM2M, TypeRefresh, TypeAPISecret, TypeMagic} {
		tok, _ := mac.Sign(typ, sampleClaims())
		var got accessClaims
		if _, err := ring.Verify(tok, typ, &got); !errors.Is(err, ErrInvalid) {
			t.Errorf("Keyring.Verify(MAC %s token) = %v; want ErrInvalid", typ, err)
		}
		for _, k := range signers { // naming a key the keyring holds
			named := macWith(jwsHeader{Alg: HS256, Kid: k.ID, Typ: typ})
			if _, err := ring.Verify(named, typ, &got); !errors.Is(err, ErrInvalid) {
				t.Errorf("Keyring.Verify(MAC %s token naming the %s key) = %v; want ErrInvalid", typ, k.Alg, err)
			}
		}
	}
	if _, err := NewMAC(make([]byte, 16)); err == nil {
		t.Error("NewMAC(16 bytes) succeeded")
	}
	if _, err := mac.Sign("", sampleClaims()); err == nil {
		t.Error("Sign with an empty typ succeeded")
	}
}
