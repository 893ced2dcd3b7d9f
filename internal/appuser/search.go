package appuser

import (
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Search narrows f to the users whose e-mail address or phone number starts
// with q (GET /v1/{app_id}/users?q=), compared as the identifiers are stored
// (lower-case e-mail addresses, E.164 numbers), so that an index serves it.
// An empty q (after trimming) adds nothing. A q of a "+" or a digit followed
// only by digits and the separators ParsePhone ignores (spaces, dots, dashes,
// parentheses) searches phone numbers: separators dropped, a leading "00"
// read as "+", "+" added when missing ("415 555" searches "+415555"). Any
// other q searches e-mail addresses, ASCII letters lower-cased: other
// characters are left as they are, as a look-alike such as the Kelvin sign
// folds onto "k" under Unicode rules but never names a stored (ASCII) address.
func Search(f Filter, q string) Filter {
	q = strings.TrimSpace(q)
	if q == "" {
		return f
	}
	if p, ok := phonePrefix(q); ok {
		f.PhonePrefix = p
		return f
	}
	f.EmailPrefix = strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, q)
	return f
}

// phonePrefix is q as the start of an E.164 number, when q looks like one.
func phonePrefix(q string) (string, bool) {
	rest := q
	switch {
	case strings.HasPrefix(q, "+"):
		rest = q[1:]
	case strings.HasPrefix(q, "00"):
		rest = q[2:]
	case q[0] >= '0' && q[0] <= '9':
	default:
		return "", false
	}
	out := make([]byte, 1, len(rest)+1)
	out[0] = '+'
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case c >= '0' && c <= '9':
			out = append(out, c)
		case c == ' ' || c == '.' || c == '-' || c == '(' || c == ')':
		default:
			return "", false
		}
	}
	return string(out), true
}

// SearchNames narrows f to the users each word of q starts a word of
// whose names (the user_meta keys that contain "name"), in any case: the
// console's name search, asked for rather than guessed from q. An app
// without name fields (NameKeys), or an empty q, adds nothing.
func SearchNames(f Filter, q string, app store.App) Filter {
	if len(NameKeys(app)) > 0 && strings.TrimSpace(q) != "" {
		f.Name = q
	}
	return f
}

// NameKeys are the user_meta keys of app's schema that hold a name: text
// fields whose key contains "name" (name, first_name, last_name,
// display_name, username…), whose words the store indexes.
func NameKeys(app store.App) []string {
	var keys []string
	for _, fd := range SchemaOf(app) {
		if (fd.FieldType == FieldString || fd.FieldType == FieldText) && strings.Contains(fd.FieldName, "name") {
			keys = append(keys, fd.FieldName)
		}
	}
	return keys
}
