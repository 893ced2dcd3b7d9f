package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode"
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

// msgDuplicateKey refuses a body whose object repeats a key, exactly or in
// another case: huma validates one of them (its lookup ignores case) and
// encoding/json stores the last, so the value used would not be the value
// checked.
const msgDuplicateKey = "Request body has a duplicate key (keys are compared ignoring case)"

// duplicateKeyError is what the JSON format returns for such a body.
type duplicateKeyError struct{}

func (duplicateKeyError) Error() string { return msgDuplicateKey }

// unmarshalJSON is json.Unmarshal that refuses NUL escapes and duplicate or
// case-variant keys.
func unmarshalJSON(data []byte, v any) error {
	if nulEscape(data) {
		return badTextError{}
	}
	if duplicateKey(data) {
		return duplicateKeyError{}
	}
	return json.Unmarshal(data, v)
}

// duplicateKey reports whether an object anywhere in the JSON text has two
// keys that are equal ignoring case (as strings.EqualFold, which huma uses,
// and encoding/json's matching see them). Text that is not JSON is left to
// json.Unmarshal to refuse.
func duplicateKey(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers are not parsed: only keys matter here
	// One frame per open object or array; keys is nil for an array.
	type frame struct {
		keys    map[string]bool
		wantKey bool // the next token of this object is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if n := len(stack); n > 0 && stack[n-1].keys != nil && stack[n-1].wantKey {
			if key, ok := tok.(string); ok {
				f := foldKey(key)
				if stack[n-1].keys[f] {
					return true
				}
				stack[n-1].keys[f] = true
				stack[n-1].wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{keys: map[string]bool{}, wantKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the object holding it expects a key next.
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].wantKey = true
		}
	}
}

// foldKey maps s to one spelling for all its case variants: two strings get
// the same foldKey when strings.EqualFold calls them equal.
func foldKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

// msgNotJSON refuses a body that is not declared application/json.
const msgNotJSON = "Content-Type must be application/json"

// declaredJSON reports whether r's body, if it has one, is declared
// application/json (parameters such as charset allowed). A request without a
// body passes whatever its headers say: the client SDK's body-less POSTs
// (token refresh, device registration, user activation) send neither a body
// nor a Content-Type. A body that is not declared JSON is refused rather than
// read as JSON, so a cross-site form or a bare fetch (which a browser sends
// without a CORS preflight) never reaches an operation.
func declaredJSON(r *http.Request) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == "application/json" {
		return true
	}
	switch {
	case r.ContentLength == 0 || r.Body == nil:
		return true
	case r.ContentLength < 0: // length unknown (chunked): is there a first byte?
		var b [1]byte
		n, _ := io.ReadFull(r.Body, b[:])
		return n == 0
	}
	return false
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
