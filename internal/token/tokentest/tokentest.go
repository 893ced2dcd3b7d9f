// Package tokentest makes the keys a service needs in tests, derived from a
// fresh master key exactly as the server derives them.
package tokentest

import (
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

// Keys returns a sealer and a keyed hasher derived from a new master key.
func Keys(t testing.TB) (*token.Sealer, *token.Hasher) {
	t.Helper()
	sealer, hasher, err := token.FromMasterKey(MasterKey(t))
	if err != nil {
		t.Fatalf("FromMasterKey: %v", err)
	}
	return sealer, hasher
}
