package appuser

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// FieldType is the type of a user_meta field, as named in the client SDK's schema.
type FieldType string

// FieldType values of a MetaField.
const (
	FieldString  FieldType = "string"
	FieldText    FieldType = "text"
	FieldBoolean FieldType = "boolean"
	FieldInteger FieldType = "integer"
	FieldDate    FieldType = "date"
	FieldPhone   FieldType = "phone"
	FieldEmail   FieldType = "email"
	FieldURL     FieldType = "url"
)

// valid reports whether t is one of the known field types.
func (t FieldType) valid() bool {
	switch t {
	case FieldString, FieldText, FieldBoolean, FieldInteger, FieldDate, FieldPhone, FieldEmail, FieldURL:
		return true
	}
	return false
}

// MetaField declares one user_meta key. Its JSON form is how a schema is
// stored with its app; the API's shape is httpapi's own.
type MetaField struct {
	ID                  string    `json:"id"`
	Name                string    `json:"name"`       // label shown to users
	FieldName           string    `json:"field_name"` // the user_meta key
	FieldType           FieldType `json:"field_type"`
	VisibleProfile      bool      `json:"visible_profile"`
	VisibleRegistration bool      `json:"visible_registration"`
	Required            bool      `json:"required"`
}

// Schema is an app's list of declared fields.
type Schema []MetaField

// schemas remembers decoded schemas by their stored JSON: every sign-in's
// answer reads its app's schema (a profile's required fields, what a user
// may write), and decoding it again each time was about 3 % of the server's
// CPU per code login (docs/performance.md). Keyed by content, an entry is
// never stale; at most maxSchemas are kept (then all are dropped).
var schemas = struct {
	sync.RWMutex
	m map[string]Schema
}{m: map[string]Schema{}}

const maxSchemas = 256

// SchemaOf decodes an app's user-metadata schema. The result is shared:
// read it, never write into it (it is clipped, so an append copies).
func SchemaOf(app store.App) Schema {
	schemas.RLock()
	sc, ok := schemas.m[string(app.MetaSchema)]
	schemas.RUnlock()
	if ok {
		return sc
	}
	_ = json.Unmarshal(app.MetaSchema, &sc) // written only by tenant after ValidateSchema
	sc = slices.Clip(sc)
	schemas.Lock()
	if len(schemas.m) >= maxSchemas {
		clear(schemas.m)
	}
	schemas.m[string(app.MetaSchema)] = sc
	schemas.Unlock()
	return sc
}

// Limits on schemas and on user_meta values.
const (
	// MaxSchemaFields is the most fields a schema may declare; it matches MaxMetaKeys so that a
	// fully filled-in meta always fits.
	MaxSchemaFields = 50
	// MaxMetaBytes is the largest user_meta accepted, measured as encoded JSON.
	MaxMetaBytes = 16 << 10
	// MaxMetaKeys is the most keys a user_meta may have.
	MaxMetaKeys = 50

	maxFieldNameLen = 64
	maxStringChars  = 1000
	maxTextChars    = 10000
	// maxSafeInteger is 2^53, the largest magnitude a float64 (and a JavaScript number) holds exactly.
	maxSafeInteger = 1 << 53
)

// ErrMetaTooLarge is returned when a user_meta has more than MaxMetaKeys keys or its JSON encoding is
// over MaxMetaBytes.
var ErrMetaTooLarge = errors.New("user_meta is too large")

// schemaField names field i of a schema the way an app's settings do, for errors.
func schemaField(i int) string { return fmt.Sprintf("user_meta_data_schema[%d]", i) }

// ValidateSchema checks a schema an operator submits. Every field needs a non-blank name, a
// field_name matching ^[a-z][a-z0-9_]{0,63}$ that no other field uses, and a known field_type; there
// may be at most MaxSchemaFields fields. The first problem is returned as an *errs.Invalid naming the
// field by its position (user_meta_data_schema[i]); when there are too many fields, the position is
// that of the first field over the limit.
func ValidateSchema(s Schema) error {
	if len(s) > MaxSchemaFields {
		return errs.Invalidf(schemaField(MaxSchemaFields), "is one too many (at most %d fields)", MaxSchemaFields)
	}
	seen := make(map[string]bool, len(s))
	for i, f := range s {
		switch {
		case !validFieldName(f.FieldName):
			return errs.Invalidf(schemaField(i), "field_name must start with a-z and contain only a-z, 0-9 and _ (at most 64 characters)")
		case seen[f.FieldName]:
			return errs.Invalidf(schemaField(i), "field_name %q is declared twice", f.FieldName)
		case !f.FieldType.valid():
			return errs.Invalidf(schemaField(i), "has an unknown field_type")
		case strings.TrimSpace(f.Name) == "":
			return errs.Invalidf(schemaField(i), "name is required")
		}
		seen[f.FieldName] = true
	}
	return nil
}

// validFieldName reports whether name matches ^[a-z][a-z0-9_]{0,63}$.
func validFieldName(name string) bool {
	if name == "" || len(name) > maxFieldNameLen || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// field returns the declaration of key, if any.
func (s Schema) field(key string) (MetaField, bool) {
	for _, f := range s {
		if f.FieldName == key {
			return f, true
		}
	}
	return MetaField{}, false
}

// MetaErrors maps a user_meta key to a short, human message such as "is not a declared field",
// "must be a boolean" or "is required".
type MetaErrors map[string]string

// Messages used in MetaErrors.
const (
	msgUndeclared = "is not a declared field"
	msgRequired   = "is required"
)

// Clean checks meta, as decoded from JSON (values string, float64 or json.Number, bool, nil, map or
// []any), against the schema.
//
// It returns the accepted keys with normalised values in clean and the rejected keys with reasons in
// errs; a key is never in both. Normalisation: integer becomes int64 (it must be integral and within
// ±2^53; int and int64 are accepted too, so Clean's own output cleans again unchanged), email is
// lower-cased by ParseEmail, phone becomes E.164 by ParsePhone, date becomes "YYYY-MM-DD" (from
// "YYYY-MM-DD" or RFC 3339, which keeps the date as written in its own offset), url must be absolute
// http or https with a host; string (≤1,000 characters) and text (≤10,000) must be strings and
// boolean a bool. A nil value for a declared key means "remove it" and is kept as nil in clean so
// that a PATCH can delete the key; a blank string for a date, phone, email or url field is treated
// the same way, because forms send "" for fields left empty.
//
// When requireAll is true, every Required field that is missing, nil or a blank string is reported as
// "is required". errs is nil when there is nothing to report. A meta over MaxMetaKeys keys or
// MaxMetaBytes of JSON returns ErrMetaTooLarge and nothing else.
func (s Schema) Clean(meta map[string]any, requireAll bool) (clean map[string]any, errs MetaErrors, err error) {
	if len(meta) > MaxMetaKeys {
		return nil, nil, fmt.Errorf("%w: more than %d keys", ErrMetaTooLarge, MaxMetaKeys)
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, nil, fmt.Errorf("encode user_meta: %w", err)
	}
	if len(b) > MaxMetaBytes {
		return nil, nil, fmt.Errorf("%w: more than %d bytes", ErrMetaTooLarge, MaxMetaBytes)
	}

	clean = make(map[string]any, len(meta))
	reject := func(key, msg string) {
		if errs == nil {
			errs = make(MetaErrors)
		}
		errs[key] = msg
		delete(clean, key)
	}
	for key, v := range meta {
		f, ok := s.field(key)
		if !ok {
			reject(key, msgUndeclared)
			continue
		}
		nv, msg := cleanValue(f.FieldType, v)
		if msg != "" {
			reject(key, msg)
			continue
		}
		clean[key] = nv
	}
	if requireAll {
		for _, f := range s {
			if !f.Required {
				continue
			}
			if _, bad := errs[f.FieldName]; bad {
				continue // keep the more specific message
			}
			if isBlank(clean[f.FieldName]) {
				reject(f.FieldName, msgRequired)
			}
		}
	}
	return clean, errs, nil
}

// cleanValue normalises one value of type t. It returns a message when v is not acceptable.
func cleanValue(t FieldType, v any) (any, string) {
	if v == nil {
		return nil, ""
	}
	switch t {
	case FieldString:
		return cleanString(v, maxStringChars)
	case FieldText:
		return cleanString(v, maxTextChars)
	case FieldBoolean:
		if b, ok := v.(bool); ok {
			return b, ""
		}
		return nil, "must be a boolean"
	case FieldInteger:
		if n, ok := toInteger(v); ok {
			return n, ""
		}
		return nil, "must be an integer"
	}

	// The remaining types are strings with a syntax; blank means "remove".
	str, ok := v.(string)
	if !ok {
		return nil, "must be a string"
	}
	str = strings.TrimSpace(str)
	if str == "" {
		return nil, ""
	}
	switch t {
	case FieldDate:
		if d, ok := toDate(str); ok {
			return d, ""
		}
		return nil, "must be a date (YYYY-MM-DD)"
	case FieldEmail:
		id, err := ParseEmail(str)
		if err != nil {
			return nil, "must be an e-mail address"
		}
		return id.Value, ""
	case FieldPhone:
		id, err := ParsePhone(str)
		if err != nil {
			return nil, "must be a phone number in international format"
		}
		return id.Value, ""
	case FieldURL:
		if validURL(str) {
			return str, ""
		}
		return nil, "must be an http or https URL"
	}
	// Only reachable with a schema that skipped ValidateSchema.
	return nil, "has an unknown field type"
}

func cleanString(v any, maxChars int) (any, string) {
	str, ok := v.(string)
	if !ok {
		return nil, "must be a string"
	}
	if utf8.RuneCountInString(str) > maxChars {
		return nil, fmt.Sprintf("must be at most %d characters", maxChars)
	}
	return str, ""
}

// toInteger accepts integral numbers within ±2^53, the range JavaScript clients can represent.
func toInteger(v any) (int64, bool) {
	inRange := func(n int64) bool { return n >= -maxSafeInteger && n <= maxSafeInteger }
	switch n := v.(type) {
	case int:
		return int64(n), inRange(int64(n))
	case int64:
		return n, inRange(n)
	case float64:
		return floatToInteger(n)
	case json.Number:
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i, inRange(i)
		}
		// Forms such as "3.0" or "3e2" are integral too.
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return 0, false
		}
		return floatToInteger(f)
	}
	return 0, false
}

func floatToInteger(f float64) (int64, bool) {
	// The range check comes first: it also rejects NaN and ±Inf.
	if !(f >= -maxSafeInteger && f <= maxSafeInteger) || f != math.Trunc(f) {
		return 0, false
	}
	return int64(f), true
}

// toDate accepts "YYYY-MM-DD" or an RFC 3339 timestamp and returns "YYYY-MM-DD".
func toDate(s string) (string, bool) {
	const layout = "2006-01-02"
	if t, err := time.Parse(layout, s); err == nil {
		return t.Format(layout), true
	}
	// The date as written, in the timestamp's own offset: converting to UTC would move dates of
	// birth entered near midnight.
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.Format(layout), true
	}
	return "", false
}

// validURL reports whether s is an absolute http or https URL with a host.
func validURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	return (u.Scheme == "http" || u.Scheme == "https") && u.Opaque == "" && u.Hostname() != ""
}

// isBlank reports whether v counts as "not filled in": absent, nil or a blank string.
func isBlank(v any) bool {
	if v == nil {
		return true
	}
	s, ok := v.(string)
	return ok && strings.TrimSpace(s) == ""
}

// Complete reports whether meta has a non-blank value for every Required field. It drives the SDK's
// `{meta: bool}` state.
func (s Schema) Complete(meta map[string]any) bool {
	for _, f := range s {
		if f.Required && isBlank(meta[f.FieldName]) {
			return false
		}
	}
	return true
}

// RequiredField is one entry of the SDK's required_fields list.
type RequiredField struct {
	Field    string
	Required bool
}

// RequiredFields lists, in schema order, the Required fields that are missing, nil or blank in meta,
// as the SDK's required_fields wants them: Field is the user_meta key and Required is true. The SDK
// shows its registration form when the list is non-empty. The result is never nil.
func (s Schema) RequiredFields(meta map[string]any) []RequiredField {
	out := []RequiredField{}
	for _, f := range s {
		if f.Required && isBlank(meta[f.FieldName]) {
			out = append(out, RequiredField{Field: f.FieldName, Required: true})
		}
	}
	return out
}
