package appuser

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
)

// decodeMeta decodes a user_meta object as the API does (float64 numbers) or,
// with useNumber, as json.Number.
func decodeMeta(b []byte, useNumber bool) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	if useNumber {
		d.UseNumber()
	}
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// checkCleanValue reports what is wrong with a cleaned value of type t, if anything.
func checkCleanValue(t FieldType, v any) string {
	if v == nil {
		return ""
	}
	switch t {
	case FieldString, FieldText:
		s, ok := v.(string)
		limit := maxStringChars
		if t == FieldText {
			limit = maxTextChars
		}
		if !ok || utf8.RuneCountInString(s) > limit {
			return "not a string within the limit"
		}
	case FieldBoolean:
		if _, ok := v.(bool); !ok {
			return "not a bool"
		}
	case FieldInteger:
		n, ok := v.(int64)
		if !ok || n > maxSafeInteger || n < -maxSafeInteger {
			return "not an int64 within ±2^53"
		}
	case FieldDate:
		s, ok := v.(string)
		if !ok {
			return "not a string"
		}
		if d, err := time.Parse("2006-01-02", s); err != nil || d.Format("2006-01-02") != s {
			return "not YYYY-MM-DD"
		}
	case FieldEmail:
		s, ok := v.(string)
		if id, err := ParseEmail(s); !ok || err != nil || id.Value != s {
			return "not a normalised e-mail address"
		}
	case FieldPhone:
		s, ok := v.(string)
		if id, err := ParsePhone(s); !ok || err != nil || id.Value != s {
			return "not an E.164 number"
		}
	case FieldURL:
		s, ok := v.(string)
		if !ok || !validURL(s) || strings.TrimSpace(s) != s {
			return "not an http(s) URL"
		}
	default:
		return "of an unknown type"
	}
	return ""
}

// FuzzSchemaClean checks Clean on any JSON object: cleaned meta only holds
// declared keys with values of their type, every key is either kept or
// reported, and cleaning is idempotent, also after a JSON round trip (which is
// how cleaned meta is stored and read back).
func FuzzSchemaClean(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"first_name":"Ada","mobile":"+14155552671"}`, `{"age":42,"newsletter":true,"birthday":"1990-05-17"}`,
		`{"age":3.0}`, `{"age":1e2}`, `{"age":9007199254740993}`, `{"age":-9007199254740992}`, `{"age":1.5}`,
		`{"age":"42"}`, `{"age":null}`, `{"age":1e400}`, `{"birthday":"2024-02-30"}`, `{"birthday":"1990-05-17T23:30:00-05:00"}`,
		`{"birthday":" 1990-05-17 "}`, `{"birthday":"0000-01-01"}`, `{"work_email":" Ada@Example.COM "}`,
		`{"work_email":"a@b"}`, `{"mobile":"0044 20 7946 0018"}`, `{"mobile":"+1-800-FLOWERS"}`, `{"mobile":""}`,
		`{"website":"https://example.com/x?y=1"}`, `{"website":"javascript:alert(1)"}`, `{"website":"http:/x"}`,
		`{"website":"//example.com"}`, `{"first_name":null}`, `{"first_name":""}`, `{"first_name":"  "}`,
		`{"unknown":1}`, `{"is_admin":true,"first_name":"x"}`, `{"bio":["a"]}`, `{"newsletter":"true"}`,
		`{"first_name":{"a":1}}`, `{"first_name":"\u0000"}`, `{"first_name":"\ud800"}`, `{"__proto__":1}`,
		`{"First_Name":"x"}`, `{"first_name":"a","first_name":"b"}`,
	} {
		f.Add([]byte(s), false, false)
	}
	f.Add([]byte(`{"age":7}`), true, true)
	f.Add([]byte(`{"mobile":"+442079460018","first_name":"Ada"}`), true, false)
	schema := testSchema()
	types := map[string]FieldType{}
	for _, fd := range schema {
		types[fd.FieldName] = fd.FieldType
	}
	f.Fuzz(func(t *testing.T, data []byte, useNumber, requireAll bool) {
		meta, err := decodeMeta(data, useNumber)
		if err != nil || meta == nil {
			return
		}
		clean, problems, err := schema.Clean(meta, requireAll)
		if err != nil {
			if !errors.Is(err, ErrMetaTooLarge) || clean != nil || problems != nil {
				t.Fatalf("Clean(%s) = %v, %v, %v; want only ErrMetaTooLarge", data, clean, problems, err)
			}
			return
		}
		for k, v := range clean {
			typ, declared := types[k]
			if !declared {
				t.Fatalf("Clean(%s) kept undeclared key %q", data, k)
			}
			if _, bad := problems[k]; bad {
				t.Fatalf("Clean(%s): key %q both kept and refused", data, k)
			}
			if why := checkCleanValue(typ, v); why != "" {
				t.Fatalf("Clean(%s) kept %q = %#v (%T), which is %s", data, k, v, v, why)
			}
		}
		for k, msg := range problems {
			_, inMeta := meta[k]
			if !inMeta && !(requireAll && msg == msgRequired) || msg == "" {
				t.Fatalf("Clean(%s) reports %q: %q", data, k, msg)
			}
			if _, declared := types[k]; !declared && msg != msgUndeclared {
				t.Fatalf("Clean(%s) reports undeclared %q as %q", data, k, msg)
			}
		}
		for k := range meta {
			_, kept := clean[k]
			_, bad := problems[k]
			if !kept && !bad {
				t.Fatalf("Clean(%s) neither kept nor reported %q", data, k)
			}
		}
		if requireAll {
			for _, fd := range schema {
				_, bad := problems[fd.FieldName]
				if fd.Required && !bad && isBlank(clean[fd.FieldName]) {
					t.Fatalf("Clean(%s, requireAll) did not report required %q", data, fd.FieldName)
				}
			}
		}

		again, problems2, err := schema.Clean(clean, requireAll)
		if err != nil || !reflect.DeepEqual(again, clean) {
			t.Fatalf("Clean(Clean(%s)) = %#v, %v; want %#v", data, again, err, clean)
		}
		for k := range problems2 {
			if problems2[k] != msgRequired {
				t.Fatalf("Clean(Clean(%s)) refuses %q: %q", data, k, problems2[k])
			}
		}
		// Stored as JSON and read back, cleaned meta cleans to itself.
		b, err := json.Marshal(clean)
		if err != nil {
			t.Fatalf("json.Marshal(%#v): %v", clean, err)
		}
		for _, un := range []bool{false, true} {
			back, err := decodeMeta(b, un)
			if err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			again, problems, err := schema.Clean(back, false)
			if err != nil || problems != nil || !reflect.DeepEqual(again, clean) {
				t.Fatalf("Clean(%s) after a JSON round trip = %#v, %v, %v; want %#v", b, again, problems, err, clean)
			}
		}
		if schema.Complete(clean) != (len(schema.RequiredFields(clean)) == 0) {
			t.Fatalf("Complete and RequiredFields disagree on %#v", clean)
		}
	})
}

// FuzzValidateSchema checks that an accepted schema has valid, distinct field
// names and known types, and still validates after the JSON round trip that
// stores it with its app.
func FuzzValidateSchema(f *testing.F) {
	good, err := json.Marshal(testSchema())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	for _, s := range []string{
		`[]`, `null`, `[{"name":"A","field_name":"a","field_type":"string"}]`,
		`[{"name":"A","field_name":"a","field_type":"string"},{"name":"B","field_name":"a","field_type":"text"}]`,
		`[{"name":" ","field_name":"a","field_type":"string"}]`, `[{"name":"A","field_name":"A","field_type":"string"}]`,
		`[{"name":"A","field_name":"a\u0000","field_type":"string"}]`, `[{"name":"A","field_name":"a","field_type":"String"}]`,
		`[{"name":"A","field_name":"ſ","field_type":"string"}]`, `[{"name":"A","field_name":"a","field_type":"url","required":true}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Schema
		if json.Unmarshal(data, &s) != nil {
			return
		}
		if err := ValidateSchema(s); err != nil {
			var inv *errs.Invalid
			if !errors.As(err, &inv) || !strings.HasPrefix(inv.Field, "user_meta_data_schema[") {
				t.Fatalf("ValidateSchema(%s) error %v names no field", data, err)
			}
			return
		}
		if len(s) > MaxSchemaFields {
			t.Fatalf("ValidateSchema accepted %d fields", len(s))
		}
		seen := map[string]bool{}
		for _, fd := range s {
			if !fieldNameRe(fd.FieldName) || seen[fd.FieldName] || !fd.FieldType.valid() || strings.TrimSpace(fd.Name) == "" {
				t.Fatalf("ValidateSchema(%s) accepted field %+v", data, fd)
			}
			seen[fd.FieldName] = true
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Schema
		if err := json.Unmarshal(b, &back); err != nil || ValidateSchema(back) != nil || !reflect.DeepEqual(back, s) {
			t.Fatalf("schema %s does not survive its JSON round trip: %s", data, b)
		}
		// Every declared key with a null value cleans to "remove it".
		meta := map[string]any{}
		for _, fd := range s {
			meta[fd.FieldName] = nil
		}
		clean, problems, err := s.Clean(meta, false)
		if err != nil || problems != nil || len(clean) != len(s) {
			t.Fatalf("Clean(all null) under %s = %v, %v, %v", data, clean, problems, err)
		}
	})
}

// fieldNameRe is ^[a-z][a-z0-9_]{0,63}$ spelled out with the standard library's help.
func fieldNameRe(s string) bool {
	if len(s) < 1 || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == ""
}

// FuzzNormalisers checks the e-mail and phone normalisers that user_meta and
// sign-in use: a normalised value is a fixed point, and ParseIdentifier reads
// it as the same kind and value, so one person cannot hold two spellings.
func FuzzNormalisers(f *testing.F) {
	for _, s := range []string{
		"alice@example.com", " Alice@Example.COM ", "alice@example.com.", "a@b.co", "\"a\"@example.com",
		"alice@xn--exmple-cua.com", "+1 415-555-2671", "0044 20 7946 0018", "+44 (20) 7946 0018", "+1",
		"00", "+999 123", "+4915123456789", "+ 1 (415) 555 2671", "alice+tag@example.com", "a@b@example.com",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if id, err := ParseEmail(raw); err == nil {
			if id.Kind != KindEmail || id.Value != strings.ToLower(id.Value) || len(id.Value) > maxEmailLen {
				t.Fatalf("ParseEmail(%q) = %+v", raw, id)
			}
			if again, err := ParseEmail(id.Value); err != nil || again != id {
				t.Fatalf("ParseEmail(%q) = %+v, %v; want %+v", id.Value, again, err, id)
			}
			if byID, err := ParseIdentifier(raw); err != nil || byID != id {
				t.Fatalf("ParseIdentifier(%q) = %+v, %v; ParseEmail gives %+v", raw, byID, err, id)
			}
		} else if !errors.Is(err, ErrInvalidIdentifier) {
			t.Fatalf("ParseEmail(%q) error %v does not wrap ErrInvalidIdentifier", raw, err)
		}
		if id, err := ParsePhone(raw); err == nil {
			if id.Kind != KindPhone || !strings.HasPrefix(id.Value, "+") || strings.Trim(id.Value[1:], "0123456789") != "" ||
				len(id.Value) > 1+maxE164Digits {
				t.Fatalf("ParsePhone(%q) = %+v", raw, id)
			}
			if again, err := ParsePhone(id.Value); err != nil || again != id {
				t.Fatalf("ParsePhone(%q) = %+v, %v; want %+v", id.Value, again, err, id)
			}
			if byID, err := ParseIdentifier(id.Value); err != nil || byID != id {
				t.Fatalf("ParseIdentifier(%q) = %+v, %v; ParsePhone gives %+v", id.Value, byID, err, id)
			}
		} else if !errors.Is(err, ErrInvalidIdentifier) {
			t.Fatalf("ParsePhone(%q) error %v does not wrap ErrInvalidIdentifier", raw, err)
		}
	})
}
