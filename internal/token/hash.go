package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"sync"
)

// Hasher computes keyed hashes (HMAC-SHA256) of secrets so they can be stored
// and looked up without storing the secrets themselves.
type Hasher struct {
	macs keyedMACs
}

// NewHasher returns a Hasher keyed with a copy of key.
func NewHasher(key []byte) *Hasher {
	return &Hasher{macs: newKeyedMACs(key)}
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
	mac := h.macs.get()
	defer h.macs.put(mac)
	for _, p := range parts {
		writePart(mac, p)
	}
	return mac.Sum(nil)
}

// keyedMACs hands out HMAC-SHA256 states under one key, reused: a new one
// costs an allocation and two SHA-256 blocks for the key's pads, several
// times on every sign-in and refresh, where Reset costs neither.
type keyedMACs struct {
	pool *sync.Pool // of hash.Hash, each keyed with a copy of the key
}

func newKeyedMACs(key []byte) keyedMACs {
	k := append([]byte(nil), key...)
	return keyedMACs{pool: &sync.Pool{New: func() any { return hmac.New(sha256.New, k) }}}
}

func (m keyedMACs) get() hash.Hash { return m.pool.Get().(hash.Hash) }

// put returns mac, Reset to its keyed start, for the next caller.
func (m keyedMACs) put(mac hash.Hash) {
	mac.Reset()
	m.pool.Put(mac)
}

// writePart writes an 8-byte big-endian length and then the part itself.
func writePart(w hash.Hash, p string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(p)))
	w.Write(n[:])
	w.Write([]byte(p))
}
