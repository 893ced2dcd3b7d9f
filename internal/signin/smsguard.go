package signin

import (
	"context"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// The SMS fraud guards (security R-RL-3, outbound.Guard) stand in front of
// every code and link that goes by SMS: /otps/login and magic links to a
// phone (resolve), sign-in challenges (createSignIn), the other challenges
// with sms_otp (mfa, step_up, verify_contact, change_identifier,
// verify_identity, custom) and their resends. Each asks once, after the
// request's own rate limits and before anything is stored or sent, so a
// refused send leaves no challenge, no event and no provider call.
// Notices to a user's own number (code entry locked, a changed identifier or
// second factor) are not guarded: nobody can ask for them in bulk, and
// holding one back would hide a change to the account.

// guardSMS asks the guard before a code or link goes to id, when id is a
// phone number.
func (s *Service) guardSMS(ctx context.Context, app store.App, id appuser.Identifier) error {
	if id.Kind != appuser.KindPhone {
		return nil
	}
	return s.out.Guard(ctx, app, id.Value)
}

// guardChallengeSMS asks the guard before ch's code goes out by SMS.
func (s *Service) guardChallengeSMS(ctx context.Context, app store.App, ch store.Challenge) error {
	if ch.Method != MethodSMSOTP {
		return nil
	}
	return s.out.Guard(ctx, app, ch.Recipient)
}

// checkSMS refuses, before a sign-in challenge looks anyone up, a phone
// number the app can never text (country, line type) when method would
// text it: the answer is then the same whether or not the number has an
// account, with enumeration_protection too.
func (s *Service) checkSMS(ctx context.Context, app store.App, id appuser.Identifier, method string) error {
	if id.Kind != appuser.KindPhone || (method != MethodSMSOTP && method != MethodMagicLink) {
		return nil
	}
	return s.out.Check(ctx, app, id.Value)
}
