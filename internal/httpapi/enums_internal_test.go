package httpapi

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestMFAPolicyEnums: a struct tag cannot name a constant, so every
// mfa_policy the API documents is checked against store.MFAPolicies, the one
// list the settings are validated with.
func TestMFAPolicyEnums(t *testing.T) {
	var want []string
	for _, p := range store.MFAPolicies {
		want = append(want, string(p))
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[AppPublic](),
		reflect.TypeFor[AppSettingsBody](),
		reflect.TypeFor[mfaStatusOutput]().Field(0).Type,
	} {
		f, ok := typ.FieldByName("MFAPolicy")
		if !ok {
			t.Fatalf("%s has no MFAPolicy field", typ)
		}
		if got := strings.Split(f.Tag.Get("enum"), ","); !slices.Equal(got, want) {
			t.Errorf("%s.MFAPolicy enum = %v; want %v", typ, got, want)
		}
	}
}
