// Package console keeps the operators' console sessions (docs/console.md):
// an operator is an e-mail address that is a member of one or more
// workspaces, signed in through a single-use link that only the command
// line issues, with idle and absolute timeouts and a re-authentication
// window for destructive actions. What an operator may do in a workspace is
// decided by access with that membership's role, read at each action.
package console

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// Lifetimes.
const (
	// LinkTTL is how long a sign-in link works.
	LinkTTL = 10 * time.Minute
	// IdleTimeout ends a session nobody used for this long.
	IdleTimeout = 30 * time.Minute
	// AbsoluteTimeout ends a session this long after sign-in, used or not.
	AbsoluteTimeout = 12 * time.Hour
	// ReauthWindow is how recent a sign-in must be for a destructive
	// action (deleting an app or a user, making or revoking keys, removing
	// a member).
	ReauthWindow = 10 * time.Minute
	// touchEvery bounds how often a session's last use is written: once a
	// minute is enough for a 30-minute idle timeout.
	touchEvery = time.Minute
)

// Token prefixes, so secret scanners can find leaked ones.
const (
	linkPrefix    = "ghl_"
	sessionPrefix = "ghs_"
)

// Errors.
var (
	// ErrNoMember: the e-mail address is no workspace's member, so no link is made.
	ErrNoMember = errors.New("no workspace has a member with this e-mail address")
	// ErrLinkInvalid is an unknown, used or expired sign-in link.
	ErrLinkInvalid = errors.New("this sign-in link is unknown, used or expired")
	// ErrSignedOut is a missing, unknown, ended or timed-out session.
	ErrSignedOut = errors.New("not signed in")
	// ErrNotMember: the operator is not a member of that workspace.
	ErrNotMember = errors.New("not a member of this workspace")
	// ErrSecondFactorRequired: the workspace requires its operators to sign
	// in with a second factor (RequireSecondFactor), and this session did not.
	ErrSecondFactorRequired = errors.New("this workspace requires a sign-in with a passkey or an authenticator app")
)

// Session is a signed-in operator.
type Session = store.ConsoleSession

// Membership is one workspace the operator is a member of.
type Membership = store.Membership

// Service keeps console links and sessions.
type Service struct {
	db      *store.DB
	hasher  *token.Hasher
	now     store.Clock
	baseURL string
	tenants *tenant.Service
	users   *appuser.Service
	signin  *signin.Service

	appMu sync.Mutex
	appID string // the built-in console app, once ensured (builtin.go)

	// counts keeps each app's home-page counts, made in the background
	// (activity.go): the home page of a workspace with large apps is read
	// often and counted seldom.
	counts counter
}

// ActivityTTL is how old the counts on the home page may be before a view
// has them made again (in the background: activity.go).
const ActivityTTL = time.Minute

// Deps are the Service's collaborators.
type Deps struct {
	DB      *store.DB
	Hasher  *token.Hasher
	Now     func() time.Time
	BaseURL string // the server's public address, for links
	// Operators sign in with e-mail codes through the same sign-in
	// machinery as any app's users: the users of a built-in app.
	Tenants *tenant.Service
	Users   *appuser.Service
	SignIn  *signin.Service
}

// New returns a Service.
func New(d Deps) *Service {
	now := store.Clock(d.Now)
	return &Service{db: d.DB, hasher: d.Hasher, now: now, baseURL: strings.TrimRight(d.BaseURL, "/"),
		tenants: d.Tenants, users: d.Users, signin: d.SignIn, counts: newCounter()}
}

func random(prefix string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func normalise(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// CreateLink makes a single-use sign-in link for email, which must be a
// member of a workspace (an owner, for first run and break-glass, or any
// member the operator lets in). Only the operator at the command line may:
// the console never issues links over HTTP. The link is recorded
// (console.link_created) in the audit log of every workspace email is a
// member of; the token is not.
func (s *Service) CreateLink(ctx context.Context, p access.Principal, email string) (link string, expires time.Time, err error) {
	defer errs.Wrap(&err, "create console link")
	if err := access.OperatorOnly(p); err != nil {
		return "", time.Time{}, err
	}
	email = normalise(email)
	if email == "" {
		return "", time.Time{}, errs.Invalidf("email", "is required")
	}
	tok := random(linkPrefix)
	now := s.now.Now()
	expires = now.Add(LinkTTL)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		ms, err := tx.ListMemberships(ctx, email)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if err := audit.Record(ctx, tx.Queries, now, p, audit.Change{WorkspaceID: m.WorkspaceID, Action: "console.link_created",
				TargetType: "member", TargetID: m.ID, After: map[string]any{"email": email, "expires_at": expires}}); err != nil {
				return err
			}
		}
		if len(ms) == 0 {
			return ErrNoMember
		}
		return tx.CreateConsoleLink(ctx, store.ConsoleLink{TokenHash: s.hasher.Hash("console-link", tok), Email: email, CreatedAt: now, ExpiresAt: expires})
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return s.baseURL + "/console/link?" + url.Values{"token": {tok}}.Encode(), expires, nil
}

// SignInWithLink spends a link and starts a session for its operator,
// returning the session cookie's value. Of two sign-ins with one link, one
// succeeds. The operator must still be a member of some workspace.
func (s *Service) SignInWithLink(ctx context.Context, linkToken, ip, userAgent string) (cookie string, _ Session, err error) {
	defer errs.Wrap(&err, "console sign-in")
	if !strings.HasPrefix(linkToken, linkPrefix) || len(linkToken) > 100 {
		return "", Session{}, ErrLinkInvalid
	}
	now := s.now.Now()
	cookie = random(sessionPrefix)
	var sess Session
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		l, err := tx.TakeConsoleLink(ctx, s.hasher.Hash("console-link", linkToken))
		if errors.Is(err, store.ErrNotFound) {
			return ErrLinkInvalid
		}
		if err != nil {
			return err
		}
		if !now.Before(l.ExpiresAt) {
			return ErrLinkInvalid
		}
		ms, err := tx.ListMemberships(ctx, l.Email)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return ErrLinkInvalid
		}
		sess, err = s.start(ctx, tx, l.Email, "link", "", ip, userAgent, cookie, ms)
		return err
	})
	if err != nil {
		return "", Session{}, err
	}
	return cookie, sess, nil
}

// start stores a new session for email (whose memberships are ms) and
// records the sign-in in each workspace's audit log.
func (s *Service) start(ctx context.Context, tx *store.Tx, email, method, appSession, ip, userAgent, cookie string, ms []Membership) (Session, error) {
	if len(userAgent) > 512 {
		userAgent = userAgent[:512]
	}
	now := s.now.Now()
	if err := tx.PruneConsole(ctx, now); err != nil {
		return Session{}, err
	}
	sess := Session{ID: s.hasher.Hash("console-session", cookie), Email: email, Method: method, AppSessionID: appSession, IP: ip, UserAgent: userAgent,
		CreatedAt: now, AuthenticatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(AbsoluteTimeout)}
	if err := tx.CreateConsoleSession(ctx, sess); err != nil {
		return Session{}, err
	}
	for _, m := range ms {
		p := access.Principal{Kind: access.KindConsole, CredentialID: sess.ID, WorkspaceID: m.WorkspaceID, MemberID: m.ID}
		if err := audit.Record(ctx, tx.Queries, now, p, audit.Change{WorkspaceID: m.WorkspaceID, Action: "console.signed_in",
			TargetType: "member", TargetID: m.ID, After: map[string]any{"method": method}}); err != nil {
			return Session{}, err
		}
	}
	return sess, nil
}

// Authenticate returns the session a cookie's value stands for, when it
// has neither idled out nor passed its absolute end, and records its use.
func (s *Service) Authenticate(ctx context.Context, cookie string) (_ Session, err error) {
	defer errs.Wrap(&err, "console session")
	if !strings.HasPrefix(cookie, sessionPrefix) || len(cookie) > 100 {
		return Session{}, ErrSignedOut
	}
	sess, err := s.db.GetConsoleSession(ctx, s.hasher.Hash("console-session", cookie))
	if errors.Is(err, store.ErrNotFound) {
		return Session{}, ErrSignedOut
	}
	if err != nil {
		return Session{}, err
	}
	now := s.now.Now()
	if !now.Before(sess.ExpiresAt) || !now.Before(sess.LastSeenAt.Add(IdleTimeout)) {
		return Session{}, ErrSignedOut
	}
	if now.Sub(sess.LastSeenAt) >= touchEvery {
		if err := s.db.TouchConsoleSession(ctx, sess.ID, now); err != nil && !errors.Is(err, store.ErrNotFound) {
			return Session{}, err
		}
		sess.LastSeenAt = now
	}
	return sess, nil
}

// Fresh reports whether the session's sign-in is recent enough for a
// destructive action.
func (s *Service) Fresh(sess Session) bool {
	return s.now.Read().Before(sess.AuthenticatedAt.Add(ReauthWindow))
}

// CSRFToken is the session's anti-forgery token: derived from the session
// with the server's key, so it is never stored and differs per session.
func (s *Service) CSRFToken(sess Session) string {
	return s.hasher.Hash("console-csrf", sess.ID)
}

// CheckCSRF reports in constant time whether t is the session's token.
func (s *Service) CheckCSRF(sess Session, t string) bool {
	return t != "" && s.hasher.Equal(t, "console-csrf", sess.ID)
}

// SignOut ends a session.
func (s *Service) SignOut(ctx context.Context, sess Session) error {
	err := s.end(ctx, sess.Email, sess.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// end deletes one of email's sessions, and ends the built-in app's session
// it held.
func (s *Service) end(ctx context.Context, email, id string) error {
	gone, err := s.db.DeleteConsoleSession(ctx, email, id)
	if err != nil || gone.AppSessionID == "" {
		return err
	}
	a, err := s.app(ctx)
	if err != nil {
		return err
	}
	caller, err := s.signin.SessionCaller(ctx, a, gone.AppSessionID)
	if errors.Is(err, signin.ErrUnauthenticated) {
		return nil // ended already
	}
	if err != nil {
		return err
	}
	return s.signin.SignOut(ctx, a, caller)
}

// Sessions lists the operator's sessions that have not ended.
func (s *Service) Sessions(ctx context.Context, sess Session) ([]Session, error) {
	all, err := s.db.ListConsoleSessions(ctx, sess.Email, s.now.Now())
	if err != nil {
		return nil, err
	}
	now := s.now.Read()
	out := all[:0]
	for _, x := range all {
		if now.Before(x.LastSeenAt.Add(IdleTimeout)) {
			out = append(out, x)
		}
	}
	return out, nil
}

// RevokeSession ends one of the operator's own sessions, by id.
func (s *Service) RevokeSession(ctx context.Context, sess Session, id string) error {
	err := s.end(ctx, sess.Email, id)
	if errors.Is(err, store.ErrNotFound) {
		return ErrSignedOut
	}
	return err
}

// Memberships lists the workspaces the operator is a member of.
func (s *Service) Memberships(ctx context.Context, sess Session) ([]Membership, error) {
	return s.db.ListMemberships(ctx, sess.Email)
}

// RequireSecondFactor is the workspace setting (a key of its settings
// object, true to turn it on) that admits only console sessions signed in
// with a strong method: a passkey (user verification required), a code or
// passkey followed by an authenticator app, or a link from the command line
// (which already holds every right on the server).
const RequireSecondFactor = "console_require_second_factor"

// Requires reports whether m's workspace requires a second factor.
func Requires(m Membership) bool {
	var set map[string]any
	_ = json.Unmarshal(m.WorkspaceSettings, &set)
	on, _ := set[RequireSecondFactor].(bool)
	return on
}

// Strong reports whether a session's sign-in method satisfies Requires.
func Strong(method string) bool {
	return method == "passkey" || method == "link" || strings.HasSuffix(method, "+totp")
}

// Principal is the operator acting in one workspace, for its membership
// there; ErrNotMember when it has none (any more), ErrSecondFactorRequired
// when the workspace requires what this session's sign-in was not.
func (s *Service) Principal(ctx context.Context, sess Session, workspaceID string) (access.Principal, Membership, error) {
	ms, err := s.db.ListMemberships(ctx, sess.Email)
	if err != nil {
		return access.Principal{}, Membership{}, err
	}
	for _, m := range ms {
		if m.WorkspaceID == workspaceID {
			if Requires(m) && !Strong(sess.Method) {
				return access.Principal{}, m, ErrSecondFactorRequired
			}
			return access.Principal{Kind: access.KindConsole, CredentialID: sess.ID, WorkspaceID: workspaceID, MemberID: m.ID}, m, nil
		}
	}
	return access.Principal{}, Membership{}, ErrNotMember
}

// Prune deletes expired links and sessions.
func (s *Service) Prune(ctx context.Context) error { return s.db.PruneConsole(ctx, s.now.Now()) }
