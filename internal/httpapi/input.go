package httpapi

import (
	"encoding/json"
	"net/url"
	"strings"
	"unicode/utf8"
)

// maxBodyBytes bounds every request body.
const maxBodyBytes = 1 << 20

// msgBadText refuses text PostgreSQL cannot store (it fails the query, which
// became a 500); SQLite would store it, so both engines refuse it alike.
const msgBadText = "text must be valid UTF-8 without NUL characters"

// cleanText reports whether s is valid UTF-8 without NUL.
func cleanText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// cleanQuery reports whether every query key and value is clean text, as
// huma reads them: pairs split on "&" only and unescaped one by one.
// url.ParseQuery skips a pair holding ";", which huma still reads, so
// "?user_id=%00;x" passed a check built on it and reached the database.
func cleanQuery(raw string) bool {
	for pair := range strings.SplitSeq(raw, "&") {
		k, v, _ := strings.Cut(pair, "=")
		for _, s := range []string{k, v} {
			// A part that does not unescape is read as empty.
			if d, err := url.QueryUnescape(s); !cleanText(s) || err == nil && !cleanText(d) {
				return false
			}
		}
	}
	return true
}

// badTextError is what the JSON format returns for a body holding a NUL escape.
type badTextError struct{}

func (badTextError) Error() string { return msgBadText }

// nulEscape reports whether JSON text holds a "\u0000" escape (raw control
// characters are already invalid JSON; invalid UTF-8 is replaced on decoding).
func nulEscape(data []byte) bool {
	for i := 0; i+1 < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		if data[i+1] == 'u' && i+6 <= len(data) && string(data[i+2:i+6]) == "0000" {
			return true
		}
		i++ // skip the escaped character: in \\u0000 the backslash is text, not a NUL escape
	}
	return false
}

// unmarshalJSON is json.Unmarshal that refuses NUL escapes.
func unmarshalJSON(data []byte, v any) error {
	if nulEscape(data) {
		return badTextError{}
	}
	return json.Unmarshal(data, v)
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
