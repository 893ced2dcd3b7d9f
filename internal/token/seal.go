package token

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// sealVersion is the first byte of every sealed value, so the format can change later.
const sealVersion = 1

// masterKeyLen is the length of the master key and of every derived key.
const masterKeyLen = 32

// Sealer encrypts secrets at rest (signing keys, webhook secrets) with AES-256-GCM.
// Its output is version byte 1 || 12-byte random nonce || ciphertext and tag.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer returns a Sealer for a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != masterKeyLen {
		return nil, fmt.Errorf("token: sealer key is %d bytes; want %d", len(key), masterKeyLen)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("token: sealer: %w", err)
	}
	// The random-nonce GCM prepends its 12-byte nonce, which is exactly our layout after the version byte.
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("token: sealer: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plaintext and authenticates it together with additionalData,
// which must be given again to Open (bind it to the row or purpose of the secret).
func (s *Sealer) Seal(plaintext, additionalData []byte) ([]byte, error) {
	out := make([]byte, 1, 1+len(plaintext)+s.aead.Overhead())
	out[0] = sealVersion
	return s.aead.Seal(out, nil, plaintext, additionalData), nil
}

// Open decrypts a value produced by Seal. It fails if the key, the additional
// data or any byte of sealed differs.
func (s *Sealer) Open(sealed, additionalData []byte) ([]byte, error) {
	if len(sealed) < 1+s.aead.Overhead() {
		return nil, errors.New("token: open sealed value: too short")
	}
	if sealed[0] != sealVersion {
		return nil, fmt.Errorf("token: open sealed value: unknown version %d", sealed[0])
	}
	plaintext, err := s.aead.Open(nil, nil, sealed[1:], additionalData)
	if err != nil {
		return nil, fmt.Errorf("token: open sealed value: %w", err)
	}
	return plaintext, nil
}

// GenerateMasterKey returns 32 random bytes in standard base64 with padding,
// the form operators store in their secret store.
func GenerateMasterKey() (string, error) {
	b := make([]byte, masterKeyLen)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("token: generate master key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// ParseMasterKey decodes a master key given in standard or URL-safe base64, with
// or without padding and with surrounding whitespace. It must decode to exactly 32 bytes.
func ParseMasterKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("token: master key is empty")
	}
	encodings := []*base64.Encoding{
		base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding,
	}
	for _, enc := range encodings {
		b, err := enc.Strict().DecodeString(s)
		if err != nil {
			continue
		}
		if len(b) != masterKeyLen {
			return nil, fmt.Errorf("token: master key decodes to %d bytes; want %d", len(b), masterKeyLen)
		}
		return b, nil
	}
	// The error never includes the input: it is a secret.
	return nil, errors.New("token: master key is not valid base64")
}

// DeriveKey derives an independent 32-byte sub-key for one purpose (e.g. "seal",
// "hash") from the master key with HKDF-SHA256. Distinct purposes give unrelated keys.
func DeriveKey(master []byte, purpose string) ([]byte, error) {
	if len(master) != masterKeyLen {
		return nil, fmt.Errorf("token: master key is %d bytes; want %d", len(master), masterKeyLen)
	}
	if purpose == "" {
		return nil, errors.New("token: derive key: empty purpose")
	}
	key, err := hkdf.Key(sha256.New, master, nil, deriveInfo(purpose), masterKeyLen)
	if err != nil {
		return nil, fmt.Errorf("token: derive key: %w", err)
	}
	return key, nil
}

// deriveInfo is the HKDF info string; the prefix keeps our keys apart from any
// other use of the same master secret.
func deriveInfo(purpose string) string {
	return "gatehouse/v1/" + purpose
}

// FromMasterKey derives from the master key the sealer of secrets at rest and
// the keyed hasher, each from a key of its own (DeriveKey "seal" and "hash"),
// so neither key serves two purposes.
func FromMasterKey(master []byte) (*Sealer, *Hasher, error) {
	sealKey, err := DeriveKey(master, "seal")
	if err != nil {
		return nil, nil, err
	}
	hashKey, err := DeriveKey(master, "hash")
	if err != nil {
		return nil, nil, err
	}
	sealer, err := NewSealer(sealKey)
	if err != nil {
		return nil, nil, err
	}
	return sealer, NewHasher(hashKey), nil
}

// MACFromMasterKey derives from the master key the MAC of the tokens only
// this server reads (DeriveKey "mac"), a key of its own as well.
func MACFromMasterKey(master []byte) (*MAC, error) {
	key, err := DeriveKey(master, "mac")
	if err != nil {
		return nil, err
	}
	return NewMAC(key)
}
