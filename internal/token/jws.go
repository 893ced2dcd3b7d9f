package token

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// jwsHeader is the protected header of every token we sign.
type jwsHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid,omitempty"` // none on MAC tokens
	Typ string `json:"typ"`
}

// signCompact serialises payload as a compact JWS (RFC 7515 §7.1) signed
// with key under the header {alg, kid, typ}. It writes the few bytes of the
// format itself and calls the standard library's signature directly: the
// JOSE library builds a signer for every call and copies the token several
// times over, a fifth of an ES256 token's CPU and half its allocations, paid
// on every sign-in and refresh (BenchmarkSign). Verification stays
// with the library (Keyring.Verify), which checks every token this makes in
// the tests (TestSignCompact).
func signCompact(key *Key, typ string, payload []byte) (string, error) {
	return compact(jwsHeader{Alg: key.Alg, Kid: key.ID, Typ: typ}, payload, func(input []byte) ([]byte, error) {
		return signature(key, input)
	})
}

// compact serialises payload under header as a compact JWS, its signature
// made over the signing input by sign.
func compact(h jwsHeader, payload []byte, sign func(input []byte) ([]byte, error)) (string, error) {
	header, err := json.Marshal(h)
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
	sig, err := sign(buf)
	if err != nil {
		return "", err
	}
	buf = append(buf, '.')
	buf = enc.AppendEncode(buf, sig)
	return string(buf), nil
}

// HS256 is the algorithm of the tokens that only this server reads.
const HS256 = "HS256"

// MAC signs the tokens that only this server ever reads, as compact JWS
// with HS256 (RFC 7518 §3.2) under a key of its own: refresh tokens, which
// clients hold and never verify (the SDK reads exp alone) and the server
// authenticates by their keyed-hash row. An HMAC costs about a microsecond
// where an ES256 signature costs tens, on every sign-in and refresh
// (docs/performance.md). Keyring.Verify accepts no HS256 token of any type,
// so a MAC token can never pass for one the keyring signed; the key is not
// published and is never a signing key's public half.
type MAC struct {
	macs keyedMACs
}

// NewMAC returns a MAC keyed with a copy of key, at least 32 bytes.
func NewMAC(key []byte) (*MAC, error) {
	if len(key) < 32 {
		return nil, fmt.Errorf("token: MAC key of %d bytes; want at least 32", len(key))
	}
	return &MAC{macs: newKeyedMACs(key)}, nil
}

// Sign serialises claims as a compact JWS of type typ under {alg: HS256, typ}.
func (m *MAC) Sign(typ string, claims any) (string, error) {
	if typ == "" {
		return "", errors.New("token: mac sign: empty typ")
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("token: mac sign: marshal claims: %w", err)
	}
	return compact(jwsHeader{Alg: HS256, Typ: typ}, payload, func(input []byte) ([]byte, error) {
		return m.sum(input), nil
	})
}

// sum is the HMAC-SHA256 of input under m's key.
func (m *MAC) sum(input []byte) []byte {
	h := m.macs.get()
	defer m.macs.put(h)
	h.Write(input)
	return h.Sum(nil)
}

// Forged reports whether raw is neither a token m made (HS256, m's MAC over
// its header and payload) nor, its header naming ES256, one of the tokens
// the keyring signed before MAC tokens, which its caller still looks up (a
// refresh token lives at most its app's refresh lifetime unused, and each
// use replaces it with a MAC token). Anything else, whatever its header
// says, is refused without a lookup.
func (m *MAC) Forged(raw string) bool {
	if len(raw) > maxTokenLen {
		return true
	}
	header, err := parseHeader(raw)
	if err != nil {
		return true
	}
	switch alg, _ := headerString(header, "alg"); alg {
	case ES256:
		return false
	case HS256:
	default:
		return true
	}
	i := strings.LastIndexByte(raw, '.')
	sig, err := base64.RawURLEncoding.Strict().DecodeString(raw[i+1:])
	if err != nil {
		return true
	}
	return !hmac.Equal(m.sum([]byte(raw[:i])), sig)
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
