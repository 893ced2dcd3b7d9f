package appuser

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseIdentifier(t *testing.T) {
	long := func(localLen, domainLabel int) string {
		return strings.Repeat("a", localLen) + "@" + strings.Repeat("b", domainLabel) + ".com"
	}
	// long(64, 63) + extra labels to reach exactly 254 characters.
	exactly254 := strings.Repeat("a", 64) + "@" + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 57) + ".com"
	if len(exactly254) != 254 {
		t.Fatalf("test setup: len(exactly254) = %d; want 254", len(exactly254))
	}
	tests := []struct {
		raw      string
		wantKind Kind
		want     string // empty: want ErrInvalidIdentifier
	}{
		// E-mail: accepted.
		{"alice@example.com", KindEmail, "alice@example.com"},
		{"Alice@Example.COM", KindEmail, "alice@example.com"},
		{"  bob@example.org \t\n", KindEmail, "bob@example.org"},
		{"first.last+tag@sub.example.co.uk", KindEmail, "first.last+tag@sub.example.co.uk"},
		{"o'brien@example.ie", KindEmail, "o'brien@example.ie"},
		{"x@my-host.example", KindEmail, "x@my-host.example"},
		{"user@xn--exmple-cua.com", KindEmail, "user@xn--exmple-cua.com"},
		{"1@2.io", KindEmail, "1@2.io"},
		{long(64, 63), KindEmail, long(64, 63)},
		{exactly254, KindEmail, exactly254},

		// E-mail: rejected.
		{"Alice <alice@example.com>", "", ""},
		{"<alice@example.com>", "", ""},
		{`"Alice" <alice@example.com>`, "", ""},
		{"alice@example.com (Alice)", "", ""},
		{"(Alice)alice@example.com", "", ""},
		{`"alice"@example.com`, "", ""},
		{`"al ice"@example.com`, "", ""},
		{"alice@@example.com", "", ""},
		{"alice@bob@example.com", "", ""},
		{"alice@example.com.", "", ""},
		{".alice@example.com", "", ""},
		{"alice.@example.com", "", ""},
		{"al..ice@example.com", "", ""},
		{"alice@example..com", "", ""},
		{"alice@.example.com", "", ""},
		{"alice@example", "", ""},
		{"alice@example.c", "", ""},
		{"alice@example.c0m_", "", ""},
		{"alice@exa_mple.com", "", ""},
		{"alice@-example.com", "", ""},
		{"alice@example-.com", "", ""},
		{"alice@[192.0.2.1]", "", ""},
		{"alice@exämple.com", "", ""},
		{"ålice@example.com", "", ""},
		{"alice@xn--exmple-cua.com\u00a0x", "", ""},
		{"al ice@example.com", "", ""},
		{"alice@exa mple.com", "", ""},
		{"alice@example.com, bob@example.com", "", ""},
		{"alice\x00@example.com", "", ""},
		{"@example.com", "", ""},
		{"alice@", "", ""},
		{"@", "", ""},
		{long(65, 10), "", ""},
		{long(10, 64), "", ""},
		{exactly254[:64] + "@e" + exactly254[65:], "", ""}, // 255 characters
		{strings.Repeat("a", 10000) + "@example.com", "", ""},

		// Phone: accepted.
		{"+14155552671", KindPhone, "+14155552671"},
		{"+1 415-555-2671", KindPhone, "+14155552671"},
		{"+1 (415) 555.2671", KindPhone, "+14155552671"},
		{"0044 20 7946 0018", KindPhone, "+442079460018"},
		{"+44 (20) 7946 0018", KindPhone, "+442079460018"},
		{"+44 (0)20 7946 0018", KindPhone, "+442079460018"},
		{"  +49 151 23456789  ", KindPhone, "+4915123456789"},
		{"+39 06 1234 5678", KindPhone, "+390612345678"},

		// Phone: rejected.
		{"", "", ""},
		{"   ", "", ""},
		{"12", "", ""},
		{"+1", "", ""},
		{"+", "", ""},
		{"00", "", ""},
		{"4155552671", "", ""},
		{"(415) 555-2671", "", ""},
		{"0 0 44 20 7946 0018", "", ""},
		{"+1 415 555 CALL", "", ""},
		{"+1-800-FLOWERS", "", ""},
		{"abc", "", ""},
		{"+999 123", "", ""},
		{"+1 415 555 2671 ext 2", "", ""},
		{"+1 415/555/2671", "", ""},
		{"++14155552671", "", ""},
		{"+1415555267", "", ""},
		{"+1 415 555 26712", "", ""},
		{"+14155552671" + strings.Repeat("1", 100), "", ""},
		{"+１４１５５５５２６７１", "", ""}, // full-width digits
	}
	for _, tt := range tests {
		got, err := ParseIdentifier(tt.raw)
		if tt.want == "" {
			if !errors.Is(err, ErrInvalidIdentifier) {
				t.Errorf("ParseIdentifier(%q) = %+v, %v; want ErrInvalidIdentifier", tt.raw, got, err)
			}
			continue
		}
		want := Identifier{Kind: tt.wantKind, Value: tt.want}
		if err != nil || got != want {
			t.Errorf("ParseIdentifier(%q) = %+v, %v; want %+v, nil", tt.raw, got, err, want)
		}
	}
}

func TestParseEmailAndPhoneApplyOneRule(t *testing.T) {
	tests := []struct {
		name  string
		parse func(string) (Identifier, error)
		raw   string
		want  Identifier // zero: want ErrInvalidIdentifier
	}{
		{"ParseEmail", ParseEmail, " Alice@Example.com ", Identifier{KindEmail, "alice@example.com"}},
		{"ParseEmail", ParseEmail, "+14155552671", Identifier{}},
		{"ParseEmail", ParseEmail, "", Identifier{}},
		{"ParseEmail", ParseEmail, "alice", Identifier{}},
		{"ParsePhone", ParsePhone, " +1 415-555-2671 ", Identifier{KindPhone, "+14155552671"}},
		{"ParsePhone", ParsePhone, "alice@example.com", Identifier{}},
		{"ParsePhone", ParsePhone, "+1@415555.2671", Identifier{}},
		{"ParsePhone", ParsePhone, "", Identifier{}},
	}
	for _, tt := range tests {
		got, err := tt.parse(tt.raw)
		if tt.want == (Identifier{}) {
			if !errors.Is(err, ErrInvalidIdentifier) {
				t.Errorf("%s(%q) = %+v, %v; want ErrInvalidIdentifier", tt.name, tt.raw, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s(%q) = %+v, %v; want %+v, nil", tt.name, tt.raw, got, err, tt.want)
		}
	}
}

// The reason must not repeat the input: identifiers are personal data and errors end up in logs.
func TestParseIdentifierErrorDoesNotEchoInput(t *testing.T) {
	for _, raw := range []string{"Secret Person <secretperson@example.com>", "secretperson@example", "+999 5551234", "+1 555 SECRET"} {
		_, err := ParseIdentifier(raw)
		if err == nil {
			t.Fatalf("ParseIdentifier(%q) succeeded; want an error", raw)
		}
		for _, part := range []string{"secretperson", "5551234", "SECRET"} {
			if strings.Contains(err.Error(), part) {
				t.Errorf("ParseIdentifier(%q) error %q contains %q", raw, err, part)
			}
		}
	}
}

func FuzzParseIdentifier(f *testing.F) {
	for _, s := range []string{
		"alice@example.com", "Alice@Example.COM", "Alice <alice@example.com>", `"a b"@example.com`,
		"alice@example.com.", "a@b@c.de", "alice@exämple.com", "alice@[192.0.2.1]", "alice@example.com (x)",
		"+1 415-555-2671", "0044 20 7946 0018", "+44 (20) 7946 0018", "+39 06 1234 5678", "12", "+1",
		"4155552671", "+1-800-FLOWERS", "+999 123", "", " ", "@", "+", "00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		id, err := ParseIdentifier(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidIdentifier) {
				t.Fatalf("ParseIdentifier(%q) error %v does not wrap ErrInvalidIdentifier", raw, err)
			}
			if id != (Identifier{}) {
				t.Fatalf("ParseIdentifier(%q) = %+v with error %v; want the zero Identifier", raw, id, err)
			}
			return
		}
		if id.Kind != KindEmail && id.Kind != KindPhone {
			t.Fatalf("ParseIdentifier(%q).Kind = %q; want email or phone", raw, id.Kind)
		}
		again, err := ParseIdentifier(id.Value)
		if err != nil || again != id {
			t.Fatalf("ParseIdentifier(%q) = %+v, %v; want %+v (from raw %q)", id.Value, again, err, id, raw)
		}
	})
}

func ExampleParseIdentifier() {
	for _, raw := range []string{"Alice@Example.COM", "+1 (415) 555-2671", "0044 20 7946 0018", "Alice <alice@example.com>"} {
		id, err := ParseIdentifier(raw)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(id.Kind, id.Value)
	}
	// Output:
	// email alice@example.com
	// phone +14155552671
	// phone +442079460018
	// invalid identifier: e-mail address must be a bare address
}
