package appuser

import (
	"context"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// guardInvitation asks the SMS guard (outbound.Service.Guard) before an
// invitation that will go by SMS (the invitee has a phone number and no
// e-mail address), once the caller may invite: a refused invitation stores
// no user and sends nothing.
func (s *Service) guardInvitation(ctx context.Context, p access.Principal, app store.App, in CreateInput) error {
	email, phone, err := contacts(app, in)
	if err != nil || email != "" || phone == "" {
		return nil // the transaction reports a bad request as it always has
	}
	if err := access.App(ctx, s.db.Queries, p, app.ID, access.Write); err != nil {
		return err
	}
	return s.outbound.Guard(ctx, app, phone)
}
