package tenant

import (
	"slices"
	"testing"
)

func TestParseCountries(t *testing.T) {
	got, err := parseCountries([]string{"us", " GB", "US"})
	if err != nil || !slices.Equal(got, []string{"US", "GB"}) {
		t.Errorf("parseCountries = %v, %v; want [US GB]", got, err)
	}
	for _, bad := range [][]string{{"XX"}, {"USA"}, {"*", "US"}, {"toolongforacode"}} {
		if _, err := parseCountries(bad); err == nil {
			t.Errorf("parseCountries(%q) = nil error", bad)
		}
	}
}
