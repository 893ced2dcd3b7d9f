// Package tokentest makes the keys a service needs in tests, derived from a
// fresh master key exactly as the server derives them.
package tokentest

import (
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// Keys returns a sealer and a keyed hasher derived from a new master key.
func Keys(t testing.TB) (*token.Sealer, *token.Hasher) {
	t.Helper()
	raw, err := token.GenerateMasterKey()
	if err != nil {
		t.Fatalf("GenerateMasterKey: %v", err)
	}
	master, err := token.ParseMasterKey(raw)
	if err != nil {
		t.Fatalf("ParseMasterKey: %v", err)
	}
	sealKey, err := token.DeriveKey(master, "seal")
	if err != nil {
		t.Fatalf("DeriveKey(seal): %v", err)
	}
	hashKey, err := token.DeriveKey(master, "hash")
	if err != nil {
		t.Fatalf("DeriveKey(hash): %v", err)
	}
	sealer, err := token.NewSealer(sealKey)
	if err != nil {
		t.Fatalf("NewSealer: %v", err)
	}
	return sealer, token.NewHasher(hashKey)
}
