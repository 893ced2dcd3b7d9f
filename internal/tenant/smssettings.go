package tenant

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nyaruka/phonenumbers"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
)

// MaxSMSDailyCap bounds an app's own sms_daily_cap.
const MaxSMSDailyCap = 10_000_000

// applySMS validates and copies the app's SMS fraud-guard settings:
// sms_allowed_countries, ISO 3166-1 alpha-2 codes (any case), ["*"] for
// every country, [] for none, ["default"] to follow the server's
// sms.allowed_countries; sms_daily_cap, 1 to MaxSMSDailyCap, 0 to follow
// the server's sms.daily_cap.
func applySMS(a *App, in AppSettings) error {
	if in.SMSAllowedCountries != nil {
		list := *in.SMSAllowedCountries
		if len(list) == 1 && list[0] == "default" {
			a.SMSAllowedCountries = nil
		} else {
			if len(list) > 250 {
				return errs.Invalidf("sms_allowed_countries", "must list at most 250 countries")
			}
			out, err := parseCountries(list)
			if err != nil {
				return errs.Invalidf("sms_allowed_countries", "is not valid: %s; list ISO 3166-1 alpha-2 codes such as US or GB, [\"*\"] for every country, or [\"default\"] for the server's list", err.Error())
			}
			a.SMSAllowedCountries = out
		}
	}
	if in.SMSDailyCap != nil {
		if *in.SMSDailyCap < 0 || *in.SMSDailyCap > MaxSMSDailyCap {
			return errs.Invalidf("sms_daily_cap", "must be between 1 and %d, or 0 for the server's sms.daily_cap", MaxSMSDailyCap)
		}
		a.SMSDailyCap = *in.SMSDailyCap
	}
	return nil
}

// parseCountries normalises a list of allowed countries: ISO 3166-1
// alpha-2 codes of regions with phone numbers (upper-cased, deduplicated)
// or "*" alone for every country.
func parseCountries(in []string) ([]string, error) {
	out := []string{}
	for _, c := range in {
		c = strings.ToUpper(strings.TrimSpace(c))
		switch {
		case c == "*":
		case len(c) > 8:
			return nil, errors.New("a code is not two letters")
		case len(c) != 2 || phonenumbers.GetCountryCodeForRegion(c) == 0:
			return nil, fmt.Errorf("%q is not an ISO 3166-1 alpha-2 country code with phone numbers", c)
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if slices.Contains(out, "*") && len(out) > 1 {
		return nil, errors.New(`"*" (every country) stands alone`)
	}
	return out, nil
}
