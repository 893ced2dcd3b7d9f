package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
)

// Hasher computes keyed hashes (HMAC-SHA256) of secrets so they can be stored
// and looked up without storing the secrets themselves.
type Hasher struct {
	key []byte
}

// NewHasher returns a Hasher keyed with a copy of key.
func NewHasher(key []byte) *Hasher {
	return &Hasher{key: append([]byte(nil), key...)}
}

// Hash returns the lowercase hex HMAC of parts. Each part is prefixed with its
// length, so ("ab", "c") and ("a", "bc") hash differently.
func (h *Hasher) Hash(parts ...string) string {
	return hex.EncodeToString(h.sum(parts))
}

// Equal reports in constant time whether hexHash is the hash of parts.
func (h *Hasher) Equal(hexHash string, parts ...string) bool {
	want, err := hex.DecodeString(hexHash)
	if err != nil {
		return false
	}
	return hmac.Equal(h.sum(parts), want)
}

func (h *Hasher) sum(parts []string) []byte {
	mac := hmac.New(sha256.New, h.key)
	for _, p := range parts {
		writePart(mac, p)
	}
	return mac.Sum(nil)
}

// writePart writes an 8-byte big-endian length and then the part itself.
func writePart(w hash.Hash, p string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(p)))
	w.Write(n[:])
	w.Write([]byte(p))
}
