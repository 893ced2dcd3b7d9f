package courier

import "strings"

// MaskAddress masks an address for logs: "ada@example.com" -> "a**@example.com", "+14155552671" -> "+1415*****71".
// E-mail domains stay readable because they help operators diagnose delivery; the local part keeps only its first
// character. Anything that is neither an e-mail address nor a phone number keeps only its first character.
func MaskAddress(s string) string {
	if s == "" {
		return ""
	}
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		return maskRunes(s[:at], 1, 0) + s[at:]
	}
	if isPhone(s) {
		if len(s) >= 10 {
			return maskRunes(s, 5, 2)
		}
		return maskRunes(s, 2, 0)
	}
	return maskRunes(s, 1, 0)
}

// maskRunes keeps head runes at the start and tail runes at the end of s and stars the rest. When that would reveal
// the whole string, everything is starred.
func maskRunes(s string, head, tail int) string {
	r := []rune(s)
	if len(r) <= head+tail {
		return strings.Repeat("*", len(r))
	}
	var b strings.Builder
	b.WriteString(string(r[:head]))
	b.WriteString(strings.Repeat("*", len(r)-head-tail))
	b.WriteString(string(r[len(r)-tail:]))
	return b.String()
}

// isPhone reports whether s looks like a phone number: an optional leading '+' followed by digits only.
func isPhone(s string) bool {
	digits := strings.TrimPrefix(s, "+")
	if digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
