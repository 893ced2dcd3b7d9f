package httpapi

import (
	"context"
	"github.com/danielgtaylor/huma/v2"

	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// smsSettings fills the app view's SMS fraud-guard settings as they apply:
// the app's own, or the server's defaults.
func (s *Server) smsSettings(ctx context.Context, out *AppFull, a tenant.App) {
	out.SMSAllowedCountries, out.SMSAllowedCountriesDefault = nonNil(a.SMSAllowedCountries), a.SMSAllowedCountries == nil
	out.SMSDailyCap, out.SMSDailyCapDefault = a.SMSDailyCap, a.SMSDailyCap == 0
	if g := s.Outbound.SMS; g != nil {
		out.SMSAllowedCountries, out.SMSDailyCap = nonNil(g.AllowedCountries(ctx, a)), g.DailyCap(ctx, a)
	}
}

// smsGuardDoc tells, in an operation's description, how the SMS fraud
// guards refuse a code, link or invitation by SMS (the errors are in
// errors.go).
const smsGuardDoc = "\n\nTo a phone number, the SMS fraud guards answer first, before anything is stored or sent (no challenge, no event, no provider call): " +
	"400 `phone_country_not_allowed` (the number's country is not in the app's `sms_allowed_countries`), " +
	"400 `phone_type_not_allowed` (not a mobile line: landline, premium-rate, toll-free, shared-cost and the like), " +
	"429 `rate_limited` (the number's waits: three SMS in 10 minutes, then 1, 2, 4 … 32 minutes), " +
	"429 `sms_prefix_cap_reached` (the hourly cap of the number's prefix) and 429 `sms_daily_cap_reached` (the app's `sms_daily_cap`); " +
	"every 429 carries Retry-After. Test identities of an app that accepts them are exempt."

// smsGuarded adds smsGuardDoc to an operation that may send an SMS.
func smsGuarded(o huma.Operation) huma.Operation {
	if o.Description == "" {
		o.Description = o.Summary + "."
	}
	o.Description += smsGuardDoc
	return o
}
