package signin

import (
	"context"
	"errors"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// A user's second factors and sign-in history, for an administrator: what
// support staff look at when a user is locked out, and the reset they do.

// UserMFA is a user's second factors as an administrator sees them: the
// authenticator apps (never their secrets) and how many backup codes are
// left. Passkeys are listed on their own (UserPasskeys).
type UserMFA struct {
	TOTP        []store.TOTPEnrollment
	BackupCodes int
}

// AdminUserMFA reads a user's second factors (Read access).
func (s *Service) AdminUserMFA(ctx context.Context, p access.Principal, app store.App, userID string) (_ UserMFA, err error) {
	defer errs.Wrap(&err, "read user mfa")
	if err := access.App(ctx, s.db.Queries, p, app.ID, access.Read); err != nil {
		return UserMFA{}, err
	}
	if _, err := s.db.GetAppUser(ctx, app.ID, userID); errors.Is(err, store.ErrNotFound) {
		return UserMFA{}, appuser.ErrUserNotFound
	} else if err != nil {
		return UserMFA{}, err
	}
	list, err := s.db.ListTOTP(ctx, userID)
	if err != nil {
		return UserMFA{}, err
	}
	st, err := s.db.GetMFAState(ctx, userID)
	if err != nil {
		return UserMFA{}, err
	}
	for i := range list {
		list[i].SecretSealed = nil // not the reader's to hold
	}
	return UserMFA{TOTP: list, BackupCodes: st.BackupCodes}, nil
}

// ResetUserMFA removes every authenticator app and backup code of a user
// for an administrator (Write access): the way back in for a user who lost
// their phone. Passkeys stay (they are removed one by one). The user's
// failed-code streaks and a sign-in's pending MFA step end with it; the user
// is told by a security notice (mfa_reset), webhooks get user.updated
// (mfa_method_removed) per verified authenticator app and one for the
// backup codes, and the audit log user.mfa_reset. With nothing to remove it
// does nothing. If the app requires a second factor, the user enrols a new
// one at their next sign-in.
func (s *Service) ResetUserMFA(ctx context.Context, p access.Principal, app store.App, userID string) (err error) {
	defer errs.Wrap(&err, "reset user mfa")
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, app.ID, access.Write); err != nil {
			return err
		}
		// The user's row is locked first, as for any change of how they sign
		// in: an enrolment confirmed meanwhile waits, then stays.
		u, err := tx.LockAppUser(ctx, app.ID, userID)
		if errors.Is(err, store.ErrNotFound) {
			return appuser.ErrUserNotFound
		}
		if err != nil {
			return err
		}
		codes, err := tx.UnusedBackupCodes(ctx, userID)
		if err != nil {
			return err
		}
		removed, err := tx.DeleteUserTOTP(ctx, userID)
		if err != nil {
			return err
		}
		if err := tx.ReplaceBackupCodes(ctx, app.ID, userID, nil, nil, s.clock()); err != nil {
			return err
		}
		if len(removed) == 0 && codes == 0 {
			return nil
		}
		if err := tx.EndAllFactorFailures(ctx, userID); err != nil {
			return err
		}
		// The pending second step of a sign-in may ask for a factor that is
		// gone: it ends, and that sign-in starts again.
		if err := tx.CancelPurpose(ctx, userID, PurposeMFA); err != nil {
			return err
		}
		verified := 0
		var events []webhook.Event
		removedEvent := func(method, id string) webhook.Event {
			return webhook.Event{Type: webhook.UserUpdated, Build: func() webhook.Payload {
				return s.mfaEventData(app, u, "mfa_method_removed", method, id)
			}}
		}
		for _, e := range removed {
			if e.Verified { // an unfinished enrolment was never announced
				verified++
				events = append(events, removedEvent(MethodTOTP, e.ID))
			}
		}
		if codes > 0 {
			events = append(events, removedEvent(MethodBackupCode, ""))
		}
		if err := s.events.EmitMany(ctx, tx, app.ID, events...); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx.Queries, s.clock(), p, audit.Change{WorkspaceID: app.WorkspaceID, AppID: app.ID,
			Action: "user.mfa_reset", TargetType: "user", TargetID: userID,
			Before: map[string]int{"authenticator_apps": verified, "backup_codes": codes},
			After:  map[string]int{"authenticator_apps": 0, "backup_codes": 0}}); err != nil {
			return err
		}
		if verified == 0 && codes == 0 {
			return nil // only an unfinished enrolment went
		}
		return s.securityNotice(ctx, tx, app, u, courier.Notice{Kind: courier.NoticeMFAReset})
	})
}

// RecentSignIns lists a user's last sessions, live or ended, newest first
// (Read access): when, how, from where, and how each ended.
func (s *Service) RecentSignIns(ctx context.Context, p access.Principal, app store.App, userID string, limit int) (_ []Session, err error) {
	defer errs.Wrap(&err, "list recent sign-ins")
	if err := access.App(ctx, s.db.Queries, p, app.ID, access.Read); err != nil {
		return nil, err
	}
	return s.db.RecentSessions(ctx, app.ID, userID, limit)
}
