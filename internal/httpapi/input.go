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
// json.Unmarshal to refuse. huma decodes every body twice (to validate it,
// then into the input), so this runs twice per request: scanBodyKeys
// answers for the bodies clients send (ASCII keys without escapes, small
// objects) without allocating, and anything else is decoded token by
// token (duplicateKeyDecoded), which FuzzDuplicateKey holds them equal to.
func duplicateKey(data []byte) bool {
	if dup, ok := scanBodyKeys(data); ok {
		return dup
	}
	return duplicateKeyDecoded(data)
}

// scanBodyKeys is duplicateKey for well-formed JSON whose keys are ASCII
// without escapes, in objects of at most 32 keys nested at most 16 deep; ok
// is false for anything else (text that is not JSON included), which the
// caller decodes instead. It stops at the first repeated key, as the
// decoder does, having checked the text before it just as strictly.
func scanBodyKeys(data []byte) (dup, ok bool) {
	const maxDepth, maxKeys = 16, 32
	type frame struct {
		object bool
		first  int // index in keys of this object's first key
	}
	var stackBuf [maxDepth]frame
	var keysBuf [2 * maxKeys][2]int
	stack, keys := stackBuf[:0], keysBuf[:0]
	i, n := 0, len(data)
	ws := func() {
		for i < n && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
			i++
		}
	}
	digits := func() bool {
		start := i
		for i < n && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return i > start
	}
	// str reads the string at data[i] (its opening quote): its contents'
	// bounds, whether it is valid JSON, and whether it is plain (ASCII, no
	// escape): a key must be.
	str := func() (start, end int, valid, plain bool) {
		i++
		start, plain = i, true
		for i < n {
			c := data[i]
			switch {
			case c == '"':
				i++
				return start, i - 1, true, plain
			case c < 0x20:
				return 0, 0, false, false
			case c >= 0x80:
				plain = false
			case c == '\\':
				plain = false
				i++
				if i >= n {
					return 0, 0, false, false
				}
				switch data[i] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				case 'u':
					if n-i <= 4 {
						return 0, 0, false, false
					}
					for _, h := range data[i+1 : i+5] {
						if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
							return 0, 0, false, false
						}
					}
					i += 4
				default:
					return 0, 0, false, false
				}
			}
			i++
		}
		return 0, 0, false, false
	}
	// value reads one value at data[i]; a container only opens its frame.
	value := func() bool {
		if i >= n {
			return false
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			if len(stack) == maxDepth {
				return false
			}
			stack = append(stack, frame{object: c == '{', first: len(keys)})
			i++
			return true
		case c == '"':
			_, _, valid, _ := str()
			return valid
		case c == '-' || c >= '0' && c <= '9':
			// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
			if c == '-' {
				i++
			}
			if i < n && data[i] == '0' {
				i++
			} else if !digits() {
				return false
			}
			if i < n && data[i] == '.' {
				i++
				if !digits() {
					return false
				}
			}
			if i < n && (data[i] == 'e' || data[i] == 'E') {
				i++
				if i < n && (data[i] == '+' || data[i] == '-') {
					i++
				}
				if !digits() {
					return false
				}
			}
			return true
		}
		for _, lit := range [...]string{"true", "false", "null"} {
			if n-i >= len(lit) && string(data[i:i+len(lit)]) == lit {
				i += len(lit)
				return true
			}
		}
		return false
	}
	ws()
	if !value() {
		return false, false
	}
	// Inside a container: after its opening, a member or its close; after
	// a member, a comma and a member, or its close.
	opened := len(stack) > 0
	for len(stack) > 0 {
		ws()
		if i >= n {
			return false, false
		}
		top := &stack[len(stack)-1]
		if c := data[i]; top.object && c == '}' || !top.object && c == ']' {
			i++
			keys = keys[:top.first]
			stack = stack[:len(stack)-1]
			opened = false
			continue
		}
		if !opened {
			if data[i] != ',' {
				return false, false
			}
			i++
			ws()
		}
		if top.object {
			if i >= n || data[i] != '"' {
				return false, false
			}
			start, end, valid, plain := str()
			if !valid || !plain || len(keys) == cap(keys) || len(keys)-top.first == maxKeys {
				return false, false
			}
			for _, k := range keys[top.first:] {
				if asciiEqualFold(data[k[0]:k[1]], data[start:end]) {
					return true, true
				}
			}
			keys = append(keys, [2]int{start, end})
			ws()
			if i >= n || data[i] != ':' {
				return false, false
			}
			i++
			ws()
		}
		depth := len(stack)
		if !value() {
			return false, false
		}
		opened = len(stack) > depth
	}
	ws()
	return false, i == n
}

// asciiEqualFold compares two ASCII strings ignoring case: for ASCII,
// what strings.EqualFold and foldKey see (the letters whose case partners
// lie outside ASCII, k and s, only meet them in non-ASCII keys, which
// scanBodyKeys leaves to the decoder).
func asciiEqualFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for j := range a {
		x, y := a[j], b[j]
		if x >= 'A' && x <= 'Z' {
			x += 'a' - 'A'
		}
		if y >= 'A' && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// duplicateKeyDecoded is duplicateKey for any text, token by token.
func duplicateKeyDecoded(data []byte) bool {
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
