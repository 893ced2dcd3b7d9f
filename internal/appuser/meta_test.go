package appuser

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

func testSchema() Schema {
	return Schema{
		{ID: "1", Name: "First name", FieldName: "first_name", FieldType: FieldString, Required: true},
		{ID: "2", Name: "Bio", FieldName: "bio", FieldType: FieldText},
		{ID: "3", Name: "Newsletter", FieldName: "newsletter", FieldType: FieldBoolean},
		{ID: "4", Name: "Age", FieldName: "age", FieldType: FieldInteger},
		{ID: "5", Name: "Birthday", FieldName: "birthday", FieldType: FieldDate},
		{ID: "6", Name: "Mobile", FieldName: "mobile", FieldType: FieldPhone, Required: true},
		{ID: "7", Name: "Work e-mail", FieldName: "work_email", FieldType: FieldEmail},
		{ID: "8", Name: "Website", FieldName: "website", FieldType: FieldURL},
	}
}

func TestValidateSchema(t *testing.T) {
	field := func(name string, typ FieldType) MetaField {
		return MetaField{Name: "Label", FieldName: name, FieldType: typ}
	}
	many := make(Schema, MaxSchemaFields+1)
	for i := range many {
		many[i] = field("f"+strings.Repeat("x", i), FieldString)
	}
	tests := []struct {
		name      string
		schema    Schema
		wantIndex int // -1: valid
	}{
		{"empty", nil, -1},
		{"all types", testSchema(), -1},
		{"longest name", Schema{field("a"+strings.Repeat("_", 63), FieldString)}, -1},
		{"digits and underscores", Schema{field("a1_b2", FieldInteger)}, -1},
		{"exactly the limit", many[:MaxSchemaFields], -1},
		{"too many fields", many, MaxSchemaFields},
		{"empty field name", Schema{field("ok", FieldString), field("", FieldString)}, 1},
		{"upper case", Schema{field("First", FieldString)}, 0},
		{"leading digit", Schema{field("1st", FieldString)}, 0},
		{"leading underscore", Schema{field("_x", FieldString)}, 0},
		{"dash", Schema{field("first-name", FieldString)}, 0},
		{"space", Schema{field("first name", FieldString)}, 0},
		{"non-ASCII", Schema{field("prénom", FieldString)}, 0},
		{"65 characters", Schema{field("a"+strings.Repeat("b", 64), FieldString)}, 0},
		{"duplicate", Schema{field("a", FieldString), field("b", FieldDate), field("a", FieldText)}, 2},
		{"unknown type", Schema{field("a", "number")}, 0},
		{"empty type", Schema{field("a", "")}, 0},
		{"type case matters", Schema{field("a", "String")}, 0},
		{"no name", Schema{field("a", FieldString), {FieldName: "b", FieldType: FieldString}}, 1},
		{"blank name", Schema{{Name: "  ", FieldName: "b", FieldType: FieldString}}, 0},
	}
	for _, tt := range tests {
		err := ValidateSchema(tt.schema)
		if tt.wantIndex < 0 {
			if err != nil {
				t.Errorf("%s: ValidateSchema = %v; want nil", tt.name, err)
			}
			continue
		}
		var inv *errs.Invalid
		if !errors.As(err, &inv) {
			t.Errorf("%s: ValidateSchema = %v; want an *errs.Invalid", tt.name, err)
			continue
		}
		if want := fmt.Sprintf("user_meta_data_schema[%d]", tt.wantIndex); inv.Field != want || inv.Reason == "" || strings.Contains(inv.Error(), "\n") {
			t.Errorf("%s: ValidateSchema = %#v (%q); want field %s and a one-line reason", tt.name, inv, inv.Error(), want)
		}
	}
}

func TestCleanValues(t *testing.T) {
	const bad = "\x00bad" // marker: want an error message for this key
	tests := []struct {
		key  string
		in   any
		want any // bad: rejected
	}{
		// string and text
		{"first_name", "Ada", "Ada"},
		{"first_name", "  Ada ", "  Ada "},
		{"first_name", strings.Repeat("é", 1000), strings.Repeat("é", 1000)},
		{"first_name", strings.Repeat("é", 1001), bad},
		{"first_name", 3.0, bad},
		{"first_name", true, bad},
		{"first_name", map[string]any{"a": "b"}, bad},
		{"first_name", []any{"a"}, bad},
		{"bio", strings.Repeat("x", 10000), strings.Repeat("x", 10000)},
		{"bio", strings.Repeat("x", 10001), bad},
		{"bio", "", ""},
		{"bio", json.Number("1"), bad},

		// boolean
		{"newsletter", true, true},
		{"newsletter", false, false},
		{"newsletter", "true", bad},
		{"newsletter", 1.0, bad},

		// integer
		{"age", 3.0, int64(3)},
		{"age", -42.0, int64(-42)},
		{"age", 0.0, int64(0)},
		{"age", 3.5, bad},
		{"age", float64(1 << 53), int64(1 << 53)},
		{"age", -float64(1 << 53), int64(-1 << 53)},
		{"age", float64(1<<53) * 2, bad},
		{"age", 1e300, bad},
		{"age", json.Number("7"), int64(7)},
		{"age", json.Number("-7"), int64(-7)},
		{"age", json.Number("3.0"), int64(3)},
		{"age", json.Number("3e2"), int64(300)},
		{"age", json.Number("3.5"), bad},
		{"age", json.Number("9007199254740993"), bad},
		{"age", json.Number("99999999999999999999"), bad},
		{"age", int64(12), int64(12)},
		{"age", 12, int64(12)},
		{"age", int64(1<<53 + 1), bad},
		{"age", "3", bad},
		{"age", true, bad},

		// date
		{"birthday", "1990-07-15", "1990-07-15"},
		{"birthday", " 1990-07-15 ", "1990-07-15"},
		{"birthday", "1990-07-15T23:30:00-05:00", "1990-07-15"},
		{"birthday", "1990-07-15T00:30:00+09:00", "1990-07-15"},
		{"birthday", "1990-07-15T12:00:00Z", "1990-07-15"},
		{"birthday", "1990-07-15T12:00:00.123Z", "1990-07-15"},
		{"birthday", "1990-02-30", bad},
		{"birthday", "1990-7-15", bad},
		{"birthday", "15/07/1990", bad},
		{"birthday", "1990-07-15T12:00:00", bad},
		{"birthday", "yesterday", bad},
		{"birthday", 19900715.0, bad},
		{"birthday", "", nil},

		// phone
		{"mobile", "+1 415-555-2671", "+14155552671"},
		{"mobile", "0044 20 7946 0018", "+442079460018"},
		{"mobile", "4155552671", bad},
		{"mobile", "+999 123", bad},
		{"mobile", 14155552671.0, bad},
		{"mobile", "   ", nil},

		// email
		{"work_email", "Ada@Example.COM", "ada@example.com"},
		{"work_email", "Ada <ada@example.com>", bad},
		{"work_email", "+14155552671", bad},
		{"work_email", false, bad},

		// url
		{"website", "https://example.com/a?b=c", "https://example.com/a?b=c"},
		{"website", "http://example.com", "http://example.com"},
		{"website", "HTTPS://example.com", "HTTPS://example.com"},
		{"website", " https://example.com ", "https://example.com"},
		{"website", "https://[2001:db8::1]:8443/", "https://[2001:db8::1]:8443/"},
		{"website", "ftp://example.com", bad},
		{"website", "javascript:alert(1)", bad},
		{"website", "https:example.com", bad},
		{"website", "https://", bad},
		{"website", "https://:443/", bad},
		{"website", "//example.com", bad},
		{"website", "/relative/path", bad},
		{"website", "example.com", bad},
		{"website", "https://exa mple.com", bad},
		{"website", 1.0, bad},

		// nil removes any declared key
		{"first_name", nil, nil},
		{"age", nil, nil},
		{"website", nil, nil},

		// undeclared
		{"last_name", "Lovelace", bad},
		{"First_Name", "Ada", bad},
		{"", "x", bad},
		{"nothing", nil, bad},
	}
	s := testSchema()
	for _, tt := range tests {
		clean, errs, err := s.Clean(map[string]any{tt.key: tt.in}, false)
		if err != nil {
			t.Errorf("Clean({%q: %#v}) error = %v; want nil", tt.key, tt.in, err)
			continue
		}
		got, accepted := clean[tt.key]
		msg, rejected := errs[tt.key]
		if tt.want == bad {
			if accepted || !rejected || msg == "" {
				t.Errorf("Clean({%q: %#v}) = %#v, %v; want %q rejected with a message", tt.key, tt.in, clean, errs, tt.key)
			}
			continue
		}
		if !accepted || rejected || got != tt.want {
			t.Errorf("Clean({%q: %#v}) = %#v, %v; want {%q: %#v} and no errors", tt.key, tt.in, clean, errs, tt.key, tt.want)
		}
		if errs != nil {
			t.Errorf("Clean({%q: %#v}) errs = %#v; want nil when nothing is rejected", tt.key, tt.in, errs)
		}
	}
}

func TestCleanMessages(t *testing.T) {
	s := testSchema()
	in := map[string]any{"extra": 1.0, "newsletter": "yes", "first_name": "Ada"}
	clean, errs, err := s.Clean(in, false)
	if err != nil {
		t.Fatalf("Clean error = %v; want nil", err)
	}
	wantErrs := MetaErrors{"extra": "is not a declared field", "newsletter": "must be a boolean"}
	if !reflect.DeepEqual(errs, wantErrs) {
		t.Errorf("Clean errs = %#v; want %#v", errs, wantErrs)
	}
	wantClean := map[string]any{"first_name": "Ada"}
	if !reflect.DeepEqual(clean, wantClean) {
		t.Errorf("Clean clean = %#v; want %#v", clean, wantClean)
	}
}

func TestCleanRequireAll(t *testing.T) {
	s := testSchema() // first_name and mobile are required
	tests := []struct {
		name     string
		in       map[string]any
		wantErrs MetaErrors
	}{
		{"all present", map[string]any{"first_name": "Ada", "mobile": "+14155552671"}, nil},
		{"nil meta", nil, MetaErrors{"first_name": "is required", "mobile": "is required"}},
		{"one missing", map[string]any{"first_name": "Ada", "age": 3.0}, MetaErrors{"mobile": "is required"}},
		{"nil value", map[string]any{"first_name": nil, "mobile": "+14155552671"}, MetaErrors{"first_name": "is required"}},
		{"empty string", map[string]any{"first_name": "", "mobile": "+14155552671"}, MetaErrors{"first_name": "is required"}},
		{"blank string", map[string]any{"first_name": " \t", "mobile": " "}, MetaErrors{"first_name": "is required", "mobile": "is required"}},
		{"wrong type keeps its message", map[string]any{"first_name": 1.0, "mobile": "+14155552671"}, MetaErrors{"first_name": "must be a string"}},
		{"invalid phone keeps its message", map[string]any{"first_name": "Ada", "mobile": "12"}, MetaErrors{"mobile": "must be a phone number in international format"}},
	}
	for _, tt := range tests {
		clean, errs, err := s.Clean(tt.in, true)
		if err != nil {
			t.Errorf("%s: Clean error = %v; want nil", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(errs, tt.wantErrs) {
			t.Errorf("%s: Clean errs = %#v; want %#v", tt.name, errs, tt.wantErrs)
		}
		for k := range errs {
			if _, ok := clean[k]; ok {
				t.Errorf("%s: Clean key %q is both accepted and rejected", tt.name, k)
			}
		}
		// Without requireAll the same input reports no "is required".
		_, errs, _ = s.Clean(tt.in, false)
		for k, msg := range errs {
			if msg == "is required" {
				t.Errorf("%s: Clean(requireAll=false) errs[%q] = %q; want no required check", tt.name, k, msg)
			}
		}
	}
}

func TestCleanSizeLimits(t *testing.T) {
	// A schema large enough that only the limits can reject.
	var s Schema
	for i := range MaxMetaKeys + 1 {
		s = append(s, MetaField{Name: "F", FieldName: "f" + strings.Repeat("x", i), FieldType: FieldText})
	}
	keys := func(n int) map[string]any {
		m := make(map[string]any, n)
		for i := range n {
			m[s[i].FieldName] = "v"
		}
		return m
	}
	// JSON of {"f":"<n x's>"} is n+8 bytes.
	sized := func(n int) map[string]any { return map[string]any{"f": strings.Repeat("x", n-8)} }
	if b, _ := json.Marshal(sized(MaxMetaBytes)); len(b) != MaxMetaBytes {
		t.Fatalf("test setup: len(sized(MaxMetaBytes)) = %d; want %d", len(b), MaxMetaBytes)
	}
	tests := []struct {
		name    string
		in      map[string]any
		tooBig  bool
		schema  Schema
		wantErr bool
	}{
		{"max keys", keys(MaxMetaKeys), false, s, false},
		{"too many keys", keys(MaxMetaKeys + 1), true, s, true},
		{"too many undeclared keys", keys(MaxMetaKeys + 1), true, nil, true},
		{"max bytes", sized(MaxMetaBytes), false, s, false},
		{"one byte over", sized(MaxMetaBytes + 1), true, s, true},
		{"large undeclared", map[string]any{"zzz": strings.Repeat("x", 1<<20)}, true, nil, true},
		{"large nested", map[string]any{"f": []any{strings.Repeat("x", MaxMetaBytes)}}, true, s, true},
	}
	for _, tt := range tests {
		clean, errs, err := tt.schema.Clean(tt.in, false)
		if tt.tooBig {
			if !errors.Is(err, ErrMetaTooLarge) || clean != nil || errs != nil {
				t.Errorf("%s: Clean = %v, %v, %v; want nil, nil, ErrMetaTooLarge", tt.name, len(clean), errs, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Clean error = %v; want nil", tt.name, err)
		}
	}
}

// Values that JSON cannot carry never reach Clean from a decoder, and Clean refuses them while
// measuring the size, so the integer rules for them are checked directly.
func TestToIntegerNonFinite(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), math.Inf(-1), json.Number("abc"), json.Number("NaN"), json.Number("Inf")} {
		if n, ok := toInteger(v); ok {
			t.Errorf("toInteger(%#v) = %d, true; want false", v, n)
		}
	}
}

func TestCleanUnencodable(t *testing.T) {
	_, _, err := testSchema().Clean(map[string]any{"first_name": make(chan int)}, false)
	if err == nil || errors.Is(err, ErrMetaTooLarge) {
		t.Errorf("Clean(chan) error = %v; want an encoding error", err)
	}
}

// Clean's output must clean again to itself, so a stored meta can be merged with a patch and
// re-checked.
func TestCleanIdempotent(t *testing.T) {
	s := testSchema()
	in := map[string]any{
		"first_name": "Ada", "bio": "long", "newsletter": true, "age": json.Number("36.0"),
		"birthday": "1815-12-10T10:00:00+00:00", "mobile": "0044 20 7946 0018",
		"work_email": "Ada@Example.com", "website": "https://example.com", "removed": nil,
	}
	delete(in, "removed")
	once, errs, err := s.Clean(in, true)
	if err != nil || errs != nil {
		t.Fatalf("Clean(in) = %v, %v; want no errors", errs, err)
	}
	twice, errs, err := s.Clean(once, true)
	if err != nil || errs != nil || !reflect.DeepEqual(twice, once) {
		t.Errorf("Clean(Clean(in)) = %#v, %v, %v; want %#v", twice, errs, err, once)
	}
}

func TestCleanDecodedJSON(t *testing.T) {
	body := `{"first_name":"Ada","age":36,"newsletter":false,"bio":null,"birthday":"1815-12-10"}`
	want := map[string]any{"first_name": "Ada", "age": int64(36), "newsletter": false, "bio": nil, "birthday": "1815-12-10"}
	for _, useNumber := range []bool{false, true} {
		dec := json.NewDecoder(strings.NewReader(body))
		if useNumber {
			dec.UseNumber()
		}
		var meta map[string]any
		if err := dec.Decode(&meta); err != nil {
			t.Fatal(err)
		}
		clean, errs, err := testSchema().Clean(meta, false)
		if err != nil || errs != nil || !reflect.DeepEqual(clean, want) {
			t.Errorf("UseNumber=%v: Clean = %#v, %v, %v; want %#v", useNumber, clean, errs, err, want)
		}
	}
}

func TestCompleteAndRequiredFields(t *testing.T) {
	s := testSchema() // first_name and mobile are required, in that order
	tests := []struct {
		name string
		meta map[string]any
		want []RequiredField
	}{
		{"nil meta", nil, []RequiredField{{"first_name", true}, {"mobile", true}}},
		{"all present", map[string]any{"first_name": "Ada", "mobile": "+14155552671"}, []RequiredField{}},
		{"extra keys ignored", map[string]any{"first_name": "Ada", "mobile": "+14155552671", "x": nil}, []RequiredField{}},
		{"one missing", map[string]any{"first_name": "Ada"}, []RequiredField{{"mobile", true}}},
		{"nil value", map[string]any{"first_name": nil, "mobile": "+14155552671"}, []RequiredField{{"first_name", true}}},
		{"blank string", map[string]any{"first_name": " ", "mobile": ""}, []RequiredField{{"first_name", true}, {"mobile", true}}},
		{"false and zero count as values", map[string]any{"first_name": false, "mobile": int64(0)}, []RequiredField{}},
	}
	for _, tt := range tests {
		got := s.RequiredFields(tt.meta)
		if got == nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: RequiredFields = %#v; want %#v", tt.name, got, tt.want)
		}
		if complete, want := s.Complete(tt.meta), len(tt.want) == 0; complete != want {
			t.Errorf("%s: Complete = %v; want %v", tt.name, complete, want)
		}
	}
	if got := Schema(nil).RequiredFields(nil); got == nil || len(got) != 0 {
		t.Errorf("Schema(nil).RequiredFields(nil) = %#v; want an empty, non-nil slice", got)
	}
	if b, _ := json.Marshal(Schema(nil).RequiredFields(nil)); string(b) != "[]" {
		t.Errorf("json of empty RequiredFields = %s; want []", b)
	}
	if !Schema(nil).Complete(nil) {
		t.Errorf("Schema(nil).Complete(nil) = false; want true")
	}
}

func TestMetaFieldJSON(t *testing.T) {
	const in = `{"id":"9","name":"Age","field_name":"age","field_type":"integer","visible_profile":true,"visible_registration":false,"required":true}`
	var f MetaField
	if err := json.Unmarshal([]byte(in), &f); err != nil {
		t.Fatal(err)
	}
	want := MetaField{ID: "9", Name: "Age", FieldName: "age", FieldType: FieldInteger, VisibleProfile: true, Required: true}
	if f != want {
		t.Errorf("json.Unmarshal(%s) = %+v; want %+v", in, f, want)
	}
	out, err := json.Marshal(f)
	if err != nil || string(out) != in {
		t.Errorf("json.Marshal(%+v) = %s, %v; want %s", f, out, err, in)
	}
}

// TestSchemaOfRemembers: a schema is decoded once per stored JSON, callers
// get what that JSON says (a changed schema is decoded anew), an append to
// one caller's result cannot reach another's, and the memo stays bounded.
func TestSchemaOfRemembers(t *testing.T) {
	raw, err := json.Marshal(testSchema())
	if err != nil {
		t.Fatal(err)
	}
	app := store.App{MetaSchema: raw}
	first := SchemaOf(app)
	if !reflect.DeepEqual(first, testSchema()) {
		t.Fatalf("SchemaOf = %+v; want %+v", first, testSchema())
	}
	// Three fields: decoding leaves room for a fourth, which Clip removes.
	three := store.App{MetaSchema: []byte(`[{"field_name":"x","field_type":"string"},{"field_name":"y","field_type":"string"},{"field_name":"z","field_type":"string"}]`)}
	a := append(SchemaOf(three), MetaField{FieldName: "a"})
	b := append(SchemaOf(three), MetaField{FieldName: "b"})
	if a[len(a)-1].FieldName != "a" || b[len(b)-1].FieldName != "b" {
		t.Errorf("two callers' appends share an array: %q, %q", a[len(a)-1].FieldName, b[len(b)-1].FieldName)
	}
	again := SchemaOf(store.App{MetaSchema: append([]byte(nil), raw...)})
	if &again[0] != &first[0] {
		t.Errorf("the same JSON was decoded again; want the remembered schema")
	}

	changed := append(testSchema(), MetaField{ID: "9", Name: "Team", FieldName: "team", FieldType: FieldString})
	raw2, _ := json.Marshal(changed)
	if got := SchemaOf(store.App{MetaSchema: raw2}); !reflect.DeepEqual(got, changed) {
		t.Errorf("a changed schema: SchemaOf = %+v; want %+v", got, changed)
	}
	if got := SchemaOf(store.App{}); len(got) != 0 {
		t.Errorf("no schema: SchemaOf = %+v; want none", got)
	}

	for i := range maxSchemas * 2 {
		SchemaOf(store.App{MetaSchema: fmt.Appendf(nil, `[{"field_name":"f%d","field_type":"string"}]`, i)})
	}
	schemas.RLock()
	n := len(schemas.m)
	schemas.RUnlock()
	if n > maxSchemas {
		t.Errorf("%d schemas remembered; want at most %d", n, maxSchemas)
	}
}
