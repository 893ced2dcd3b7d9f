package machine

import (
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
)

// validScope reports whether s is an RFC 6749 §3.3 scope-token (printable
// ASCII but space, '"' and '\') of at most MaxScopeLen characters.
func validScope(s string) bool {
	if s == "" || len(s) > MaxScopeLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// cleanScopes checks the scopes a client is created with and drops repeats,
// keeping the first order.
func cleanScopes(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for _, s := range in {
		if !validScope(s) {
			return nil, errs.Invalidf("scopes", "must each be 1 to %d printable ASCII characters without spaces, '\"' or '\\'", MaxScopeLen)
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if len(out) > MaxScopes {
		return nil, errs.Invalidf("scopes", "must be at most %d", MaxScopes)
	}
	return out, nil
}

// parseScope reads a request's space-separated scope parameter; extra
// spaces are tolerated, repeats dropped. A malformed one is ErrInvalidScope.
func parseScope(s string) ([]string, error) {
	out := []string{}
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, " ") {
		if part == "" {
			continue
		}
		if !validScope(part) {
			return nil, ErrInvalidScope
		}
		if !seen[part] {
			seen[part] = true
			out = append(out, part)
		}
	}
	if len(out) > MaxScopes {
		return nil, ErrInvalidScope
	}
	return out, nil
}
