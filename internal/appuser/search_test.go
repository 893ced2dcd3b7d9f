package appuser_test

import (
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
)

func TestSearch(t *testing.T) {
	for _, tc := range []struct {
		q            string
		email, phone string
	}{
		{"", "", ""},
		{"   ", "", ""},
		{"Ann", "ann", ""},
		{"  ANN@Example.COM ", "ann@example.com", ""},
		{"ann+x", "ann+x", ""},
		{"a%b_c", "a%b_c", ""},
		{"\u212a", "\u212a", ""}, // the Kelvin sign stays: it is no "k"
		{"É", "É", ""},
		{"+1 (415) 555-26.71", "", "+14155552671"},
		{"+1415", "", "+1415"},
		{"1415", "", "+1415"},
		{"415 555", "", "+415555"},
		{"0044 20", "", "+4420"},
		{"+", "", "+"},
		{"0", "", "+0"},
		{"123abc", "123abc", ""},
		{"1@example.com", "1@example.com", ""},
		{"+x", "+x", ""},
		{"+1 415 ext 2", "+1 415 ext 2", ""},
		{"(415) 555", "(415) 555", ""}, // must start with + or a digit
	} {
		f := appuser.Search(appuser.Filter{Status: appuser.StatusActive}, tc.q)
		if f.EmailPrefix != tc.email || f.PhonePrefix != tc.phone || f.Status != appuser.StatusActive || f.Email != "" || f.Phone != "" {
			t.Errorf("Search(%q) = %+v; want email prefix %q, phone prefix %q, status kept", tc.q, f, tc.email, tc.phone)
		}
	}
}
