package appuser

import (
	"regexp"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestIdentities are the e-mail addresses and phone numbers that an app
// which accepts them (its test_identities setting) treats as test
// identities (server-sdk-compat §6): nothing is ever sent to them, and
// every one-time code for them is Code. On any other app they are ordinary
// identifiers. The zero value has none.
type TestIdentities struct {
	// EmailSuffix ends the local part of a test address, in lower case
	// (addresses are stored lower-cased); "" matches none.
	EmailSuffix string
	// Phone matches a whole E.164 test number; nil matches none.
	Phone *regexp.Regexp
	// Code is the fixed one-time code.
	Code string
}

// match reports whether value, a normalised e-mail address or E.164
// number, matches the patterns, whatever the app.
func (t TestIdentities) match(value string) bool {
	if local, _, ok := strings.Cut(value, "@"); ok {
		return t.EmailSuffix != "" && strings.HasSuffix(strings.ToLower(local), t.EmailSuffix)
	}
	return value != "" && t.Phone != nil && t.Phone.MatchString(value)
}

// Of reports whether value (a normalised e-mail address or E.164 number) is
// a test identity of app: the app accepts them and value matches. Apps that
// do not accept them pay one field test.
func (t TestIdentities) Of(app store.App, value string) bool {
	return app.TestIdentities && t.match(value)
}

// User reports whether u is a test user of app: one of its identifiers is
// a test identity, so anyone who knows the fixed code can sign in as u.
func (t TestIdentities) User(app store.App, u store.AppUser) bool {
	return app.TestIdentities && (t.match(u.Email) || t.match(u.Phone))
}
