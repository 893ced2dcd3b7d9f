// Package token mints and verifies Gatehouse's signed tokens (compact JWS:
// ES256, RS256 or EdDSA), seals secrets at rest, computes keyed hashes and
// draws random secrets and codes. It is pure: no I/O (a Keyring reads its
// keys through the KeySource it is given), and it imports nothing else from
// Gatehouse.
package token

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"

	jose "github.com/go-jose/go-jose/v4"
)

// Signature algorithms (JOSE "alg" names). ES256 is the default and the
// cheapest to sign; RS256 is what Scute's server SDKs verify; EdDSA
// (Ed25519) is the fastest to verify.
const (
	ES256 = "ES256"
	RS256 = "RS256"
	EdDSA = "EdDSA"
)

// Algorithm is the default: it signs every token whose kind does not choose
// (API secrets, links) and the access tokens of apps that keep the server
// default. Refresh tokens carry a MAC instead (MAC).
const Algorithm = ES256

// Algorithms lists the algorithms a key can have, in the order keys are made.
var Algorithms = []string{ES256, RS256, EdDSA}

// ValidAlgorithm reports whether alg is one of Algorithms.
func ValidAlgorithm(alg string) bool { return slices.Contains(Algorithms, alg) }

// rsaBits is the size of the RSA keys we make; smaller ones are refused.
const rsaBits = 2048

// Key is one signing key. Private is nil for a verify-only key. Alg follows
// from the key's type and is the only algorithm it signs or verifies with.
type Key struct {
	ID      string // RFC 7638 JWK thumbprint (SHA-256, base64url without padding) of the public key
	Alg     string
	Private crypto.Signer
	Public  crypto.PublicKey
}

// GenerateKey creates a new P-256 (ES256) signing key.
func GenerateKey() (*Key, error) { return GenerateKeyFor(ES256) }

// GenerateKeyFor creates a new signing key for alg: P-256 for ES256,
// RSA-2048 for RS256, Ed25519 for EdDSA.
func GenerateKeyFor(alg string) (*Key, error) {
	var priv crypto.Signer
	var err error
	switch alg {
	case ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case RS256:
		priv, err = rsa.GenerateKey(rand.Reader, rsaBits)
	case EdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, fmt.Errorf("token: generate key: unknown algorithm %q", alg)
	}
	if err != nil {
		return nil, fmt.Errorf("token: generate %s key: %w", alg, err)
	}
	return newKey(priv)
}

// KeyFromPrivateDER parses a PKCS#8 DER private key (P-256, RSA ≥ 2048 bits
// or Ed25519) and computes its ID and algorithm.
func KeyFromPrivateDER(der []byte) (*Key, error) {
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("token: parse private key: %w", err)
	}
	switch p := parsed.(type) {
	case *ecdsa.PrivateKey:
		return newKey(p)
	case *rsa.PrivateKey:
		return newKey(p)
	case ed25519.PrivateKey:
		return newKey(p)
	}
	return nil, fmt.Errorf("token: parse private key: got %T; want ECDSA P-256, RSA or Ed25519", parsed)
}

// PrivateDER encodes the private key as PKCS#8 DER.
func (k *Key) PrivateDER() ([]byte, error) {
	if k == nil || k.Private == nil {
		return nil, errors.New("token: key has no private part")
	}
	der, err := x509.MarshalPKCS8PrivateKey(k.Private)
	if err != nil {
		return nil, fmt.Errorf("token: marshal private key: %w", err)
	}
	return der, nil
}

// publicJWK is the JSON shape of a published key. It has no field that could
// hold private material ("d", "p", "q", …), so a JWKS can never leak one
// whatever key it is given.
type publicJWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// PublicJWK returns the JSON of the public JWK: kty, the public parameters
// of its type (crv, x, y for EC; n, e for RSA; crv, x for OKP), kid, alg, use.
func (k *Key) PublicJWK() ([]byte, error) {
	if k == nil {
		return nil, errors.New("token: nil key")
	}
	alg, err := publicAlg(k.Public)
	if err != nil {
		return nil, err
	}
	j := publicJWK{Kid: k.ID, Alg: alg, Use: "sig"}
	enc := base64.RawURLEncoding.EncodeToString
	switch pub := k.Public.(type) {
	case *ecdsa.PublicKey:
		x, y, err := publicCoordinates(pub)
		if err != nil {
			return nil, err
		}
		j.Kty, j.Crv, j.X, j.Y = "EC", "P-256", enc(x), enc(y)
	case *rsa.PublicKey:
		j.Kty, j.N, j.E = "RSA", enc(pub.N.Bytes()), enc(big.NewInt(int64(pub.E)).Bytes())
	case ed25519.PublicKey:
		j.Kty, j.Crv, j.X = "OKP", "Ed25519", enc(pub)
	}
	b, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("token: marshal public jwk: %w", err)
	}
	return b, nil
}

// newKey wraps a private key after checking its public part is one we sign with.
// An RSA key gets its CRT values computed here, once: crypto/rsa would
// otherwise derive them again on every signature (which made one take
// 1.3–1.8× as long when measured). The parser and the generator already do it, so this
// is a no-op for every key we make or load; it guards keys built otherwise.
func newKey(priv crypto.Signer) (*Key, error) {
	if priv == nil {
		return nil, errors.New("token: nil private key")
	}
	if p, ok := priv.(*rsa.PrivateKey); ok {
		if p == nil {
			return nil, errors.New("token: nil private key")
		}
		p.Precompute()
	}
	pub := priv.Public()
	alg, err := publicAlg(pub)
	if err != nil {
		return nil, err
	}
	id, err := thumbprint(pub)
	if err != nil {
		return nil, err
	}
	return &Key{ID: id, Alg: alg, Private: priv, Public: pub}, nil
}

// publicAlg returns the algorithm a public key is for, after checking it is
// well formed: a point on P-256, an RSA modulus of at least 2048 bits with a
// sane exponent, or a 32-byte Ed25519 key.
func publicAlg(pub crypto.PublicKey) (string, error) {
	switch p := pub.(type) {
	case *ecdsa.PublicKey:
		if _, _, err := publicCoordinates(p); err != nil {
			return "", err
		}
		return ES256, nil
	case *rsa.PublicKey:
		if p == nil || p.N == nil || p.N.BitLen() < rsaBits || p.E < 3 || p.E%2 == 0 {
			return "", errors.New("token: RSA key must have at least 2048 bits and an odd exponent ≥ 3")
		}
		return RS256, nil
	case ed25519.PublicKey:
		if len(p) != ed25519.PublicKeySize {
			return "", errors.New("token: Ed25519 key has the wrong size")
		}
		return EdDSA, nil
	case nil:
		return "", errors.New("token: key has no public part")
	}
	return "", fmt.Errorf("token: unsupported key type %T", pub)
}

// thumbprint computes the RFC 7638 SHA-256 thumbprint used as kid.
func thumbprint(pub crypto.PublicKey) (string, error) {
	jwk := jose.JSONWebKey{Key: pub}
	sum, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("token: key thumbprint: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// publicCoordinates returns the fixed-length (32-byte) X and Y of a P-256 public key.
func publicCoordinates(pub *ecdsa.PublicKey) (x, y []byte, err error) {
	if pub == nil {
		return nil, nil, errors.New("token: key has no public part")
	}
	if pub.Curve != elliptic.P256() {
		return nil, nil, errors.New("token: key is not on P-256")
	}
	// Bytes also rejects points that are not on the curve.
	point, err := pub.Bytes()
	if err != nil {
		return nil, nil, fmt.Errorf("token: encode public key: %w", err)
	}
	if len(point) != 65 || point[0] != 4 {
		return nil, nil, errors.New("token: unexpected public key encoding")
	}
	return point[1:33], point[33:65], nil
}
