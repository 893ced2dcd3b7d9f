package machine

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzParseScope checks the reader of a token request's scope: what it
// accepts is a list of distinct RFC 6749 scope tokens, each from the input,
// that reads back the same once joined; what it refuses is ErrInvalidScope.
func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"", "a", "a b  a", "invoices:read invoices:write", "a\tb", `"x"`, `a\b`, "café", " ", strings.Repeat("s ", 60)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := parseScope(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidScope) {
				t.Fatalf("parseScope(%q) = %v; want ErrInvalidScope", in, err)
			}
			return
		}
		if len(got) > MaxScopes {
			t.Errorf("parseScope(%q) has %d scopes; want at most %d", in, len(got), MaxScopes)
		}
		fields := strings.Split(in, " ")
		for i, s := range got {
			if !validScope(s) || !slices.Contains(fields, s) || slices.Contains(got[:i], s) {
				t.Errorf("parseScope(%q) = %q: %q is invalid, not from the input, or repeated", in, got, s)
			}
		}
		again, err := parseScope(strings.Join(got, " "))
		if err != nil || !slices.Equal(again, got) {
			t.Errorf("parseScope(joined %q) = %q, %v; want the same", got, again, err)
		}
		if _, err := cleanScopes(got); err != nil {
			t.Errorf("cleanScopes(%q) = %v; a request's scopes must be scopes a client can have", got, err)
		}
	})
}
