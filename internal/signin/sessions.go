package signin

import (
	"context"
	"errors"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
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
	_, sessions, err := s.userWithSessions(ctx, p, app, userID)
	return sessions, err
}

// UserWithSessions reads a user with the user's live sessions, newest first,
// for an administrator (Read access): the server SDKs' users.get, whose
// session ids RevokeUserSession takes.
func (s *Service) UserWithSessions(ctx context.Context, p access.Principal, app store.App, userID string) (_ appuser.User, _ []Session, err error) {
	defer errs.Wrap(&err, "get user with sessions")
	return s.userWithSessions(ctx, p, app, userID)
}

func (s *Service) userWithSessions(ctx context.Context, p access.Principal, app store.App, userID string) (appuser.User, []Session, error) {
	u, err := s.users.Get(ctx, p, app, userID)
	if err != nil {
		return appuser.User{}, nil, err
	}
	sessions, err := s.db.ListSessions(ctx, app.ID, userID, s.clock())
	if err != nil {
		return appuser.User{}, nil, err
	}
	return u, sessions, nil
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
		now := s.clock()
		if err := sessionNotFound(tx.RevokeSession(ctx, app.ID, userID, sessionID, now)); err != nil {
			return err
		}
		return audit.Record(ctx, tx.Queries, now, p, audit.Change{WorkspaceID: app.WorkspaceID, AppID: app.ID,
			Action: "session.revoked", TargetType: "session", TargetID: sessionID, Before: map[string]string{"user_id": userID}})
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

// RegisterMeta sets the caller's own registration fields (those with
// visible_registration) just after they signed up, as the user_meta of a
// sign-up request would have: the hosted sign-in page's sign-up form.
func (s *Service) RegisterMeta(ctx context.Context, app store.App, caller Caller, meta map[string]any) (appuser.User, error) {
	return s.users.UpdateOwnRegistrationMeta(ctx, app, caller.User.ID, meta)
}

// LookupQuery asks for one user: by e-mail or phone (Identifier), or by id.
type LookupQuery struct {
	Identifier string
	UserID     string
}

// LookupUser finds a user by e-mail or phone, or by id, for the client SDK's
// checks before signing in: nil when unknown (or when the identifier cannot
// be valid). An app's backend (p, with Read access to the app) sees the user
// whole. An anonymous caller (p nil) is rate-limited per client IP, one
// budget for both kinds of lookup, since the answer tells whether an account
// exists; and sees it redacted (appuser.User.Redacted): only the contact it
// supplied, or, by id, both masked.
func (s *Service) LookupUser(ctx context.Context, p *access.Principal, app store.App, q LookupQuery, c Client) (*appuser.User, error) {
	// appuser names the operation in its errors; a refusal here is typed.
	if p != nil {
		if err := access.App(ctx, s.db.Queries, *p, app.ID, access.Read); err != nil {
			return nil, err
		}
	} else if err := s.allowLookup(ctx, c); err != nil {
		return nil, err
	}
	var u *appuser.User
	var supplied appuser.Kind
	var err error
	if q.Identifier != "" {
		id, perr := appuser.ParseIdentifier(q.Identifier)
		if perr != nil {
			return nil, nil
		}
		supplied = id.Kind
		u, err = s.users.Lookup(ctx, app, id.Value)
	} else {
		u, err = s.users.LookupByID(ctx, app, q.UserID)
	}
	if err != nil || u == nil || p != nil {
		return u, err
	}
	r := u.Redacted(supplied)
	return &r, nil
}

// MetaComplete reports whether a user has filled in every metadata field the
// app requires, for the client SDK while signing in; rate-limited as the
// anonymous lookups are, with their budget.
func (s *Service) MetaComplete(ctx context.Context, app store.App, userID string, c Client) (bool, error) {
	if err := s.allowLookup(ctx, c); err != nil {
		return false, err
	}
	return s.users.MetaComplete(ctx, app, userID)
}

func (s *Service) allowLookup(ctx context.Context, c Client) error {
	return s.allow(ctx, bucket{key: "lookup:ip:" + c.IP, rule: s.limits.LookupPerIP})
}
