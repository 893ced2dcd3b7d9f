package token

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"math/big"
	"strings"
)

// RandomString returns nbytes random bytes as base64url without padding.
// It panics only if crypto/rand fails, which it does not on Go 1.24+.
func RandomString(nbytes int) string {
	b := make([]byte, nbytes)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("token: crypto/rand failed: %v", err))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// NewSecret returns prefix followed by 32 random bytes (RandomString(32)), e.g. "ghk_…".
// The prefix lets secret scanners recognise leaked values.
func NewSecret(prefix string) string {
	return prefix + RandomString(32)
}

// NewCode returns a uniformly random decimal code of exactly digits digits,
// leading zeros kept. It panics if digits < 1.
func NewCode(digits int) string {
	if digits < 1 {
		panic(fmt.Sprintf("token: NewCode(%d): digits must be at least 1", digits))
	}
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(digits)), nil)
	// rand.Int rejects out-of-range draws, so there is no modulo bias.
	n, err := rand.Int(rand.Reader, limit)
	if err != nil {
		panic(fmt.Sprintf("token: crypto/rand failed: %v", err))
	}
	s := n.String()
	return strings.Repeat("0", digits-len(s)) + s
}
