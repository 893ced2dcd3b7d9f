package appuser

import (
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// The default patterns of server-sdk-compat §6 against identifiers as
// ParseIdentifier leaves them, on an app that accepts test identities and
// on one that does not.
func TestTestIdentities(t *testing.T) {
	cfg, err := config.Load(nil, "", nil) // the defaults
	if err != nil {
		t.Fatal(err)
	}
	phone, err := cfg.TestIdentities.PhoneRegexp()
	if err != nil || cfg.TestIdentities.EmailSuffix != "+scute_test" || cfg.TestIdentities.Code != "424242" {
		t.Fatalf("default test identities = %+v, %v; want server-sdk-compat §6's", cfg.TestIdentities, err)
	}
	ti := TestIdentities{EmailSuffix: cfg.TestIdentities.EmailSuffix, Phone: phone, Code: cfg.TestIdentities.Code}
	on, off := store.App{TestIdentities: true}, store.App{}
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{"live-ruby-ab12-3+scute_test@example.com", true},
		{"Live-Ruby-ab12-3+SCUTE_TEST@Example.COM", true},
		{"+scute_test@example.com", true},
		{"a+scute_test+x@example.com", false},
		{"a+scute_testing@example.com", false},
		{"ascute_test@example.com", false},
		{"+1 415 555 0123", true},
		{"+1 312 555 0142", true},
		{"+1 212 555 0100", true},
		{"+1 212 555 0199", true},
		{"+1 212 555 0200", false},
		{"+1 212 555 0099", false},
		{"+44 20 7946 0123", false},
	} {
		id, err := ParseIdentifier(tc.raw)
		if err != nil {
			t.Fatalf("ParseIdentifier(%q): %v", tc.raw, err)
		}
		if got := ti.Of(on, id.Value); got != tc.want {
			t.Errorf("Of(opted-in app, %q) = %v; want %v", id.Value, got, tc.want)
		}
		if ti.Of(off, id.Value) {
			t.Errorf("Of(app that has not opted in, %q) = true; want false", id.Value)
		}
	}
	if ti.Of(on, "") || (TestIdentities{}).Of(on, "live+scute_test@example.com") || (TestIdentities{}).Of(on, "+14155550123") {
		t.Error("an empty identifier, or patterns that are off, match; want nothing")
	}
	for _, tc := range []struct {
		u    store.AppUser
		want bool
	}{
		{store.AppUser{Email: "qa+scute_test@example.com"}, true},
		{store.AppUser{Phone: "+14155550123"}, true},
		{store.AppUser{Email: "real@example.com", Phone: "+14155550123"}, true}, // the fixed code signs in by SMS
		{store.AppUser{Email: "real@example.com", Phone: "+14155552671"}, false},
	} {
		if got := ti.User(on, tc.u); got != tc.want {
			t.Errorf("User(opted-in app, %s %s) = %v; want %v", tc.u.Email, tc.u.Phone, got, tc.want)
		}
		if ti.User(off, tc.u) {
			t.Errorf("User(app that has not opted in, %s %s) = true; want false", tc.u.Email, tc.u.Phone)
		}
	}
}
