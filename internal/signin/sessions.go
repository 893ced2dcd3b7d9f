package signin

import (
	"context"
	"errors"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// ListSessions lists the caller's live sessions.
func (s *Service) ListSessions(ctx context.Context, app store.App, caller Caller) ([]store.Session, error) {
	return s.db.ListSessions(ctx, app.ID, caller.User.ID, s.clock())
}

// RevokeSession ends one of the caller's sessions.
func (s *Service) RevokeSession(ctx context.Context, app store.App, caller Caller, sessionID string) error {
	err := s.db.RevokeSession(ctx, app.ID, caller.User.ID, sessionID, s.clock())
	if errors.Is(err, store.ErrNotFound) {
		return ErrSessionNotFound
	}
	return err
}

// SignOut ends the caller's current session.
func (s *Service) SignOut(ctx context.Context, app store.App, caller Caller) error {
	return s.RevokeSession(ctx, app, caller, caller.Session.ID)
}

// UserSessions lists a user's live sessions (admin).
func (s *Service) UserSessions(ctx context.Context, app store.App, userID string) ([]store.Session, error) {
	if _, err := s.users.Get(ctx, app, userID); err != nil {
		return nil, err
	}
	return s.db.ListSessions(ctx, app.ID, userID, s.clock())
}

// RevokeUserSession ends one session of a user (admin).
func (s *Service) RevokeUserSession(ctx context.Context, app store.App, userID, sessionID string) error {
	if _, err := s.users.Get(ctx, app, userID); err != nil {
		return err
	}
	err := s.db.RevokeSession(ctx, app.ID, userID, sessionID, s.clock())
	if errors.Is(err, store.ErrNotFound) {
		return ErrSessionNotFound
	}
	return err
}

// UpdateMeta changes the caller's own metadata; keys outside the app's
// schema are refused.
func (s *Service) UpdateMeta(ctx context.Context, app store.App, caller Caller, meta map[string]any) (appuser.User, error) {
	return s.users.Update(ctx, app, caller.User.ID, appuser.UpdateInput{Meta: meta})
}

// LookupUser finds a user by e-mail or phone for an anonymous caller (the
// client SDK's existence check before signing in): nil when unknown. It is
// rate-limited per client IP, since it tells whether an account exists.
func (s *Service) LookupUser(ctx context.Context, app store.App, identifier string, c Client) (*appuser.User, error) {
	if err := s.allow(ctx, bucket{key: "lookup:ip:" + c.IP, rule: s.limits.LookupPerIP}); err != nil {
		return nil, err
	}
	return s.users.Lookup(ctx, app, identifier)
}
