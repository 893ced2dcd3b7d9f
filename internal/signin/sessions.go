package signin

import (
	"context"
	"errors"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Session is one signed-in device of a user.
type Session = store.Session

// ListSessions lists the caller's live sessions.
func (s *Service) ListSessions(ctx context.Context, app store.App, caller Caller) (_ []Session, err error) {
	defer errs.Wrap(&err, "list sessions")
	return s.db.ListSessions(ctx, app.ID, caller.User.ID, s.clock())
}

// RevokeSession ends one of the caller's sessions.
func (s *Service) RevokeSession(ctx context.Context, app store.App, caller Caller, sessionID string) (err error) {
	defer errs.Wrap(&err, "revoke session")
	return sessionNotFound(s.db.RevokeSession(ctx, app.ID, caller.User.ID, sessionID, s.clock()))
}

// SignOut ends the caller's current session.
func (s *Service) SignOut(ctx context.Context, app store.App, caller Caller) (err error) {
	defer errs.Wrap(&err, "sign out")
	return sessionNotFound(s.db.RevokeSession(ctx, app.ID, caller.User.ID, caller.Session.ID, s.clock()))
}

// UserSessions lists a user's live sessions for an administrator (Read access).
func (s *Service) UserSessions(ctx context.Context, p access.Principal, app store.App, userID string) (_ []Session, err error) {
	defer errs.Wrap(&err, "list user sessions")
	if _, err := s.users.Get(ctx, p, app, userID); err != nil {
		return nil, err
	}
	return s.db.ListSessions(ctx, app.ID, userID, s.clock())
}

// RevokeUserSession ends one session of a user for an administrator (Write access).
func (s *Service) RevokeUserSession(ctx context.Context, p access.Principal, app store.App, userID, sessionID string) (err error) {
	defer errs.Wrap(&err, "revoke user session")
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, app.ID, access.Write); err != nil {
			return err
		}
		if _, err := tx.GetAppUser(ctx, app.ID, userID); errors.Is(err, store.ErrNotFound) {
			return appuser.ErrUserNotFound
		} else if err != nil {
			return err
		}
		return sessionNotFound(tx.RevokeSession(ctx, app.ID, userID, sessionID, s.clock()))
	})
}

func sessionNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return ErrSessionNotFound
	}
	return err
}

// UpdateMeta changes the caller's own metadata; keys outside the app's
// schema are refused. (appuser names the operation in its errors.)
func (s *Service) UpdateMeta(ctx context.Context, app store.App, caller Caller, meta map[string]any) (appuser.User, error) {
	return s.users.UpdateOwnMeta(ctx, app, caller.User.ID, meta)
}

// LookupUser finds a user by e-mail or phone for an anonymous caller (the
// client SDK's existence check before signing in): nil when unknown. It is
// rate-limited per client IP, since it tells whether an account exists.
func (s *Service) LookupUser(ctx context.Context, app store.App, identifier string, c Client) (*appuser.User, error) {
	// appuser names the operation in its errors; a refusal here is typed.
	if err := s.allow(ctx, bucket{key: "lookup:ip:" + c.IP, rule: s.limits.LookupPerIP}); err != nil {
		return nil, err
	}
	return s.users.Lookup(ctx, app, identifier)
}
