package appuser

import (
	"context"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// GuardSMS lets one SMS to number (E.164) go for app, or refuses it with
// smsguard's errors (country, line type, the number's waits, the caps),
// counting it when it goes. Every code, link and invitation by SMS asks
// here first, before anything is stored or sent, so a refused send costs
// nothing. A test identity of app is never sent anything and passes.
func (s *Service) GuardSMS(ctx context.Context, app store.App, number string) error {
	if s.sms == nil || s.tests.Of(app, number) {
		return nil
	}
	return s.sms.Take(ctx, app, number)
}

// CheckSMS refuses a number app may never send SMS to (country, line type),
// reading and counting nothing: for callers that must answer alike whether
// or not the number has an account, before they look it up.
func (s *Service) CheckSMS(ctx context.Context, app store.App, number string) error {
	if s.sms == nil || s.tests.Of(app, number) {
		return nil
	}
	return s.sms.Check(ctx, app, number)
}

// SMSGuard is the guard behind GuardSMS (nil when there is none), for the
// app settings it resolves (allowed countries, daily cap).
func (s *Service) SMSGuard() *outbound.Guard { return s.sms }

// PruneSMSGuard forgets the guard's state that no longer counts.
func (s *Service) PruneSMSGuard(ctx context.Context) error {
	if s.sms == nil {
		return nil
	}
	return s.sms.Prune(ctx)
}

// guardInvitation asks GuardSMS before an invitation that will go by SMS
// (the invitee has a phone number and no e-mail address), once the caller
// may invite: a refused invitation stores no user and sends nothing.
func (s *Service) guardInvitation(ctx context.Context, p access.Principal, app store.App, in CreateInput) error {
	email, phone, err := contacts(app, in)
	if err != nil || email != "" || phone == "" {
		return nil // the transaction reports a bad request as it always has
	}
	if err := access.App(ctx, s.db.Queries, p, app.ID, access.Write); err != nil {
		return err
	}
	return s.GuardSMS(ctx, app, phone)
}
