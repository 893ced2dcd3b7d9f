package httpapi

import "github.com/gatehouse-auth/gatehouse/internal/tenant"

// smsSettings fills the app view's SMS fraud-guard settings as they apply:
// the app's own, or the server's defaults.
func (s *Server) smsSettings(out *AppFull, a tenant.App) {
	out.SMSAllowedCountries, out.SMSAllowedCountriesDefault = nonNil(a.SMSAllowedCountries), a.SMSAllowedCountries == nil
	out.SMSDailyCap, out.SMSDailyCapDefault = a.SMSDailyCap, a.SMSDailyCap == 0
	if g := s.Users.SMSGuard(); g != nil {
		out.SMSAllowedCountries, out.SMSDailyCap = nonNil(g.AllowedCountries(a)), g.DailyCap(a)
	}
}
