// Package tokentest makes the keys a service needs in tests, derived from a
// fresh master key exactly as the server derives them.
package tokentest

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// MasterKey returns a new random master key.
func MasterKey(t testing.TB) []byte {
	t.Helper()
	raw, err := token.GenerateMasterKey()
	if err != nil {
		t.Fatalf("GenerateMasterKey: %v", err)
	}
	master, err := token.ParseMasterKey(raw)
	if err != nil {
		t.Fatalf("ParseMasterKey: %v", err)
	}
	return master
}

// Payload decodes a compact JWS's claims without checking anything, for
// tests that look inside the tokens a service hands out.
func Payload(t testing.TB, tok string) map[string]any {
	t.Helper()
	return part(t, tok, 1)
}

// Header decodes a compact JWS's protected header (alg, kid, typ) without
// checking anything.
func Header(t testing.TB, tok string) map[string]any {
	t.Helper()
	return part(t, tok, 0)
}

func part(t testing.TB, tok string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts; want a compact JWS", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatalf("token part %d: %v", i, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("token part %d: %v", i, err)
	}
	return m
}
