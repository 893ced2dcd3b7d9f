package token

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// jwsHeader is the protected header of every token we sign.
type jwsHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

// signCompact serialises payload as a compact JWS (RFC 7515 §7.1) signed
// with key under the header {alg, kid, typ}. It writes the few bytes of the
// format itself and calls the standard library's signature directly: the
// JOSE library builds a signer for every call and copies the token several
// times over, a fifth of an ES256 token's CPU and half its allocations, paid
// twice on every sign-in and refresh (BenchmarkSign). Verification stays
// with the library (Keyring.Verify), which checks every token this makes in
// the tests (TestSignCompact).
func signCompact(key *Key, typ string, payload []byte) (string, error) {
	header, err := json.Marshal(jwsHeader{Alg: key.Alg, Kid: key.ID, Typ: typ})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	hl, pl := enc.EncodedLen(len(header)), enc.EncodedLen(len(payload))
	// Room for the signature: 86 bytes encoded for ES256, 342 for RSA-4096.
	buf := make([]byte, hl+1+pl, hl+1+pl+1+342)
	enc.Encode(buf, header)
	buf[hl] = '.'
	enc.Encode(buf[hl+1:], payload)
	sig, err := signature(key, buf)
	if err != nil {
		return "", err
	}
	buf = append(buf, '.')
	buf = enc.AppendEncode(buf, sig)
	return string(buf), nil
}

// signature signs the JWS signing input with key by its algorithm: ES256 as
// the fixed-width r||s of RFC 7518 §3.4 (not ASN.1), RS256 as PKCS #1 v1.5
// over SHA-256, EdDSA over the input itself (RFC 8037 §3.1).
func signature(key *Key, input []byte) ([]byte, error) {
	switch priv := key.Private.(type) {
	case *ecdsa.PrivateKey:
		if key.Alg != ES256 || priv.Curve != elliptic.P256() {
			break
		}
		digest := sha256.Sum256(input)
		r, s, err := ecdsa.Sign(rand.Reader, priv, digest[:])
		if err != nil {
			return nil, err
		}
		sig := make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
		return sig, nil
	case *rsa.PrivateKey:
		if key.Alg != RS256 {
			break
		}
		digest := sha256.Sum256(input)
		return rsa.SignPKCS1v15(rand.Reader, priv, crypto.SHA256, digest[:])
	case ed25519.PrivateKey:
		if key.Alg != EdDSA {
			break
		}
		return ed25519.Sign(priv, input), nil
	}
	return nil, fmt.Errorf("a %T key does not sign %s", key.Private, key.Alg)
}
