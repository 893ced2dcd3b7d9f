// Package token mints and verifies Gatehouse's signed tokens (compact JWS, ES256),
// seals secrets at rest, computes keyed hashes and draws random secrets and codes.
// It is pure: no I/O (a Keyring reads its keys through the KeySource it is
// given), and it imports nothing else from Gatehouse.
package token

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"
)

// Key is one signing key. Private is nil for a verify-only key.
type Key struct {
	ID      string // RFC 7638 JWK thumbprint (SHA-256, base64url without padding) of the public key
	Private *ecdsa.PrivateKey
	Public  *ecdsa.PublicKey
}

// GenerateKey creates a new P-256 signing key.
func GenerateKey() (*Key, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("token: generate key: %w", err)
	}
	return newKey(priv)
}

// KeyFromPrivateDER parses a PKCS#8 DER P-256 private key and computes its ID.
func KeyFromPrivateDER(der []byte) (*Key, error) {
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("token: parse private key: %w", err)
	}
	priv, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("token: parse private key: got %T; want ECDSA P-256", parsed)
	}
	return newKey(priv)
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
// hold private material, so a JWKS can never leak "d" whatever key it is given.
type publicJWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// PublicJWK returns the JSON of the public JWK (kty, crv, x, y, kid, alg, use).
func (k *Key) PublicJWK() ([]byte, error) {
	if k == nil {
		return nil, errors.New("token: nil key")
	}
	x, y, err := publicCoordinates(k.Public)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(publicJWK{
		Kty: "EC",
		Crv: "P-256",
		X:   base64.RawURLEncoding.EncodeToString(x),
		Y:   base64.RawURLEncoding.EncodeToString(y),
		Kid: k.ID,
		Alg: Algorithm,
		Use: "sig",
	})
	if err != nil {
		return nil, fmt.Errorf("token: marshal public jwk: %w", err)
	}
	return b, nil
}

// newKey wraps a private key after checking it is on P-256, the only curve ES256 allows.
func newKey(priv *ecdsa.PrivateKey) (*Key, error) {
	if priv == nil {
		return nil, errors.New("token: nil private key")
	}
	pub := &priv.PublicKey
	id, err := thumbprint(pub)
	if err != nil {
		return nil, err
	}
	return &Key{ID: id, Private: priv, Public: pub}, nil
}

// thumbprint computes the RFC 7638 SHA-256 thumbprint used as kid.
func thumbprint(pub *ecdsa.PublicKey) (string, error) {
	if _, _, err := publicCoordinates(pub); err != nil {
		return "", err
	}
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
