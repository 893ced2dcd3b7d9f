package signin

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// TokenSet is what a successful sign-in or refresh returns (interface §2.8).
type TokenSet struct {
	Access           string
	Refresh          string
	CSRF             string
	AccessExpiresAt  time.Time
	RefreshExpiresAt time.Time
	UserID           string
	KeyID            string // the kid of the key that signed the access token
	// MFA, when set, replaces the tokens: the sign-in waits for a second
	// factor (the other fields are empty).
	MFA *MFARequired
	// MFAEnrollmentRequired: the app requires MFA and this user has no
	// second factor yet; the app should send them to enrol one.
	MFAEnrollmentRequired bool
}

// AccessClaims are an access token's claims. The client SDK reads uuid and exp.
type AccessClaims struct {
	token.Claims
	UUID    string `json:"uuid"`
	AppID   string `json:"aid"`
	Session string `json:"sid"`
	// WorkspaceID is read by Scute's server SDKs (server-sdk-compat §2).
	WorkspaceID string `json:"wid"`
	AuthTime    int64  `json:"auth_time,omitempty"`
	// AMR lists the methods the user proved at auth_time (RFC 8176's claim,
	// with Gatehouse's method names: email_otp, sms_otp, magic_link, invite,
	// webauthn, totp, backup_code, push).
	AMR []string `json:"amr,omitempty"`
}

type refreshClaims struct {
	token.Claims
	Session string `json:"sid"`
}

// Sign-in methods recorded on sessions.
const (
	MethodOTP    = "otp"
	MethodMagic  = "magic"
	MethodInvite = "invite"
	// MethodWebauthn is a passkey sign-in.
	MethodWebauthn = "webauthn"
)

// factor is how a user has just proved who they are: the session method
// recorded (otp, magic, invite, webauthn), the method name the access
// token's amr lists (email_otp, sms_otp, magic_link, webauthn, push, …),
// the kind of what was proved (email, sms, passkey, push, or "" for a
// factor that is no channel) and, for a passkey, its credential id.
type factor struct {
	Session      string
	AMR          string
	Kind         string
	CredentialID string
	// Since, when set, is the auth_time of the session it opens (a push
	// vouches only as far as the approving session's own proof); else now.
	Since *time.Time
	// Until, when set, caps the session's lifetime (a hosted page's
	// hand-off lasts no longer than the hosted session it came from).
	Until *time.Time
}

// startSession creates a session for a user and its first tokens, inside tx.
// Every sign-in, whatever its method, comes through here (or, when it knows
// the user has no streak of wrong codes, newSession): a sign-in by any
// method ends that streak, and with it a lock of code entry.
func (s *Service) startSession(ctx context.Context, tx *store.Tx, app store.App, u store.AppUser, f factor, c Client) (TokenSet, error) {
	if err := tx.EndCodeFailureStreak(ctx, u.ID); err != nil {
		return TokenSet{}, err
	}
	return s.newSession(ctx, tx, app, u, f, c)
}

// newSession is where every first factor ends: when the app's MFA policy
// asks this user for a second factor it answers an MFA challenge and no
// tokens (mfaGate); otherwise it opens the session.
func (s *Service) newSession(ctx context.Context, tx *store.Tx, app store.App, u store.AppUser, f factor, c Client) (TokenSet, error) {
	gate, err := s.mfaGate(ctx, tx, app, u, f, c)
	if err != nil || gate.Required != nil {
		return TokenSet{MFA: gate.Required}, err
	}
	out, err := s.openSession(ctx, tx, app, u, f, []string{f.AMR}, c)
	out.MFAEnrollmentRequired = gate.EnrollmentRequired
	return out, err
}

// openSession creates the session and its first tokens, inside tx, with
// the methods (amr) the user proved, recording f's session method and
// passkey.
func (s *Service) openSession(ctx context.Context, tx *store.Tx, app store.App, u store.AppUser, f factor, amr []string, c Client) (TokenSet, error) {
	now := s.clock()
	authTime := now
	if f.Since != nil && f.Since.Before(now) {
		authTime = *f.Since
	}
	sess := store.Session{ID: newID(), AppID: app.ID, AppUserID: u.ID, Method: f.Session, UserAgent: truncate(c.UserAgent, 512),
		IP: c.IP, CreatedAt: now, LastActiveAt: now, ExpiresAt: now.Add(s.settings.SessionLifetime), CredentialID: f.CredentialID,
		AuthTime: &authTime, AMR: amr}
	if f.Until != nil && f.Until.Before(sess.ExpiresAt) {
		sess.ExpiresAt = *f.Until
	}
	refresh, rec, err := s.mintRefresh(app, sess, now)
	if err != nil {
		return TokenSet{}, err
	}
	// Deferred: the session goes out with the COMMIT (its ids are ours).
	if err := tx.Deferred(nil).CreateSessionWithRefresh(ctx, sess, rec); err != nil {
		return TokenSet{}, err
	}
	return s.tokenSet(app, sess, u, refresh, rec.ExpiresAt, now)
}

// rotateSessionTokens is sessionTokens for a live session: its unspent
// refresh tokens are spent into the new one, so the family stays one chain
// (a holder of an old one gets the new one within the grace window, and
// reuse after it is still detected).
func (s *Service) rotateSessionTokens(ctx context.Context, tx *store.Tx, app store.App, sess store.Session, u store.AppUser, now time.Time) (TokenSet, error) {
	next, rec, err := s.mintRefresh(app, sess, now)
	if err != nil {
		return TokenSet{}, err
	}
	if err := s.spendRefreshChain(ctx, tx, sess.ID, next, now); err != nil {
		return TokenSet{}, err
	}
	if err := tx.InsertRefreshToken(ctx, rec); err != nil {
		return TokenSet{}, err
	}
	return s.tokenSet(app, sess, u, next, rec.ExpiresAt, now)
}

// mintRefresh makes the next refresh token of a session's family: it expires
// after the app's refresh lifetime of idleness, and never after the session.
func (s *Service) mintRefresh(app store.App, sess store.Session, now time.Time) (string, store.RefreshToken, error) {
	exp := now.Add(time.Duration(app.RefreshExpiration) * time.Second)
	if exp.After(sess.ExpiresAt) {
		exp = sess.ExpiresAt
	}
	id := newID()
	tok, err := s.mac.Sign(token.TypeRefresh, refreshClaims{
		Claims:  token.Claims{Issuer: s.settings.Issuer, Subject: sess.AppUserID, Audience: token.Audience{app.ID}, IssuedAt: now.Unix(), Expiry: exp.Unix(), ID: id},
		Session: sess.ID,
	})
	if err != nil {
		return "", store.RefreshToken{}, err
	}
	return tok, store.RefreshToken{ID: id, SessionID: sess.ID, TokenHash: s.hasher.Hash("refresh", tok), CreatedAt: now, ExpiresAt: exp}, nil
}

// tokenSet mints an access token for a session, for the app's access
// lifetime, and assembles the set.
func (s *Service) tokenSet(app store.App, sess store.Session, u store.AppUser, refresh string, refreshExp, now time.Time) (TokenSet, error) {
	return s.tokenSetUntil(app, sess, u, refresh, refreshExp, now, now.Add(time.Duration(app.AccessExpiration)*time.Second))
}

// tokenSetUntil is tokenSet with an access token that expires at exp.
func (s *Service) tokenSetUntil(app store.App, sess store.Session, u store.AppUser, refresh string, refreshExp, now, exp time.Time) (TokenSet, error) {
	access, kid, err := s.keys.SignWith(s.accessAlg(app), token.TypeAccess, AccessClaims{
		Claims: token.Claims{Issuer: s.settings.Issuer, Subject: u.ID, Audience: token.Audience{app.ID}, IssuedAt: now.Unix(),
			Expiry: exp.Unix(), ID: newID()},
		UUID: u.ID, AppID: app.ID, WorkspaceID: app.WorkspaceID, Session: sess.ID, AuthTime: sess.Authenticated().Unix(), AMR: sess.AMR,
	})
	if err != nil {
		return TokenSet{}, err
	}
	return TokenSet{Access: access, Refresh: refresh, CSRF: token.RandomString(24), AccessExpiresAt: exp,
		RefreshExpiresAt: refreshExp, UserID: u.ID, KeyID: kid}, nil
}

// accessAlg is the algorithm that signs app's access tokens.
func (s *Service) accessAlg(app store.App) string {
	switch {
	case app.AccessTokenAlg != "":
		return app.AccessTokenAlg
	case s.settings.AccessTokenAlg != "":
		return s.settings.AccessTokenAlg
	}
	return token.Algorithm
}

// Caller is the user behind a valid access token.
type Caller struct {
	Session store.Session
	User    store.AppUser
}

// Authenticate checks an access token for app: signature, type, issuer,
// audience and expiry, then (one round trip) that its session is live and
// its user active, so a revocation or deactivation applies on the very next
// request on every replica.
func (s *Service) Authenticate(ctx context.Context, app store.App, access string) (_ Caller, err error) {
	defer errs.Wrap(&err, "authenticate access token")
	caller, _, err := s.authenticate(ctx, app, access)
	return caller, err
}

// authenticate is Authenticate, also returning the token's claims.
func (s *Service) authenticate(ctx context.Context, app store.App, access string) (Caller, AccessClaims, error) {
	c, ok := s.verified.get(access)
	if !ok {
		if _, err := s.keys.Verify(access, token.TypeAccess, &c); err != nil {
			return Caller{}, c, ErrUnauthenticated
		}
		s.verified.put(access, c, s.now.Read())
	}
	now := s.now.Read()
	if err := c.Validate(s.settings.Issuer, app.ID, now, true); err != nil || c.Session == "" {
		return Caller{}, c, ErrUnauthenticated
	}
	sess, u, err := s.db.GetSessionWithUser(ctx, app.ID, c.Session)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Caller{}, c, ErrUnauthenticated
		}
		return Caller{}, c, err
	}
	if sess.RevokedAt != nil || !now.Before(sess.ExpiresAt) || u.ID != c.UUID || u.Status != store.StatusActive {
		return Caller{}, c, ErrUnauthenticated
	}
	if now.Sub(sess.LastActiveAt) > time.Minute {
		if err := s.db.TouchSession(ctx, sess.ID, s.clock(), time.Minute); err != nil {
			s.log.WarnContext(ctx, "record session activity", "err", err)
		}
	}
	return Caller{Session: sess, User: u}, c, nil
}

// SessionCaller is the caller of a live session of app, found by the
// session's id rather than an access token: for a service that keeps the
// id of a session it made instead of its tokens (the console, for its
// operators' passkeys). The same checks as Authenticate: the session live,
// the user active.
func (s *Service) SessionCaller(ctx context.Context, app store.App, sessionID string) (_ Caller, err error) {
	defer errs.Wrap(&err, "session caller")
	sess, u, err := s.db.GetSessionWithUser(ctx, app.ID, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return Caller{}, ErrUnauthenticated
	}
	if err != nil {
		return Caller{}, err
	}
	if sess.RevokedAt != nil || !s.now.Read().Before(sess.ExpiresAt) || u.Status != store.StatusActive {
		return Caller{}, ErrUnauthenticated
	}
	return Caller{Session: sess, User: u}, nil
}

// Refresh rotates a refresh token: the caller gets a new access and refresh
// token, and the old refresh token is spent. Reusing a spent token within the
// grace window returns the same successor (the client SDK retries, and tabs
// race); after it, reuse revokes the whole session.
//
// A refresh token is authenticated by its row, found by the token's keyed
// hash: only tokens this server issued have one. Its MAC is checked first
// (token.MAC.Forged), so that an altered token costs no lookup; the row's
// expiry, session and app decide.
func (s *Service) Refresh(ctx context.Context, app store.App, refresh string) (_ TokenSet, err error) {
	defer errs.Wrap(&err, "refresh")
	reused := false
	defer func() { s.metrics.Refresh(refreshResult(err, reused)) }()
	if token.Peek(refresh) != token.TypeRefresh || s.mac.Forged(refresh) {
		return TokenSet{}, ErrUnauthenticated
	}
	now := s.clock()
	rt, sess, u, err := s.db.GetRefreshFamily(ctx, s.hasher.Hash("refresh", refresh))
	if err != nil {
		return TokenSet{}, unauthenticated(err)
	}
	if sess.AppID != app.ID || sess.RevokedAt != nil || !now.Before(sess.ExpiresAt) || !now.Before(rt.ExpiresAt) || u.Status != store.StatusActive {
		return TokenSet{}, ErrUnauthenticated
	}
	if rt.UsedAt == nil {
		next, rec, err := s.mintRefresh(app, sess, now)
		if err != nil {
			return TokenSet{}, err
		}
		sealed, err := s.sealer.Seal([]byte(next), []byte("refresh-successor:"+rt.ID))
		if err != nil {
			return TokenSet{}, err
		}
		// Spending the token and storing its successor is one atomic step;
		// of concurrent requests exactly one wins it.
		won, err := s.db.RotateRefreshToken(ctx, rt.ID, now, sealed, rec)
		if err != nil {
			return TokenSet{}, err
		}
		if won {
			return s.tokenSet(app, sess, u, next, rec.ExpiresAt, now)
		}
		// Another request rotated it first: read what it left.
		if rt, err = s.db.GetRefreshToken(ctx, rt.ID); err != nil {
			return TokenSet{}, err
		}
	}
	// With no grace window any reuse revokes, even one at the same instant
	// (a fake or coarse clock, or racing requests).
	if rt.UsedAt != nil && s.settings.RefreshGrace > 0 && now.Sub(*rt.UsedAt) <= s.settings.RefreshGrace && rt.SuccessorSealed != nil {
		next, err := s.sealer.Open(rt.SuccessorSealed, []byte("refresh-successor:"+rt.ID))
		if err != nil {
			return TokenSet{}, err
		}
		// Only the immediate predecessor is forgiven: once the successor has
		// itself been used, presenting this token is reuse.
		succ, err := s.db.GetRefreshByHash(ctx, s.hasher.Hash("refresh", string(next)))
		if err != nil {
			return TokenSet{}, err
		}
		if succ.UsedAt == nil {
			return s.tokenSet(app, sess, u, string(next), succ.ExpiresAt, now)
		}
	}
	// A spent token outside the grace window: someone holds a copy.
	if err := s.db.RevokeSession(ctx, app.ID, "", sess.ID, now); err != nil {
		return TokenSet{}, err
	}
	reused = true
	s.log.WarnContext(ctx, "refresh token reused; session revoked", "app_id", app.ID, "session_id", sess.ID)
	return TokenSet{}, ErrUnauthenticated
}

// RotateAccess exchanges a valid access token for a token set of the same
// session. What it gives depends on who asks (client-compat A14):
//
//   - Anyone holding only the access token (p nil) gets a new access token
//     that expires when the presented one does, and no refresh token: a
//     stolen access token cannot be turned into a longer-lived credential,
//     however often it is exchanged.
//   - The app's backend (p, with Write access to the app: an API secret, an
//     API key, or an admin's workspace secret) gets a full set, as if the
//     session's current refresh token had been presented to Refresh: that
//     token is spent, with the new one as its successor, so the session keeps
//     one refresh chain. Its previous holder gets the same successor within
//     the grace window, and presenting it after that is reuse, which revokes
//     the session. The refresh token never outlives the session.
func (s *Service) RotateAccess(ctx context.Context, p *access.Principal, app store.App, accessToken string) (_ TokenSet, err error) {
	defer errs.Wrap(&err, "rotate access token")
	caller, claims, err := s.authenticate(ctx, app, accessToken)
	if err != nil {
		return TokenSet{}, err
	}
	now := s.clock()
	if p == nil {
		return s.tokenSetUntil(app, caller.Session, caller.User, "", time.Time{}, now, time.Unix(claims.Expiry, 0).UTC())
	}
	var out TokenSet
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, *p, app.ID, access.Write); err != nil {
			return err
		}
		out, err = s.rotateSessionTokens(ctx, tx, app, caller.Session, caller.User, now)
		return err
	})
	return out, err
}

// spendRefreshChain spends, in tx, every unspent refresh token of a session,
// each with next sealed as its successor (as Refresh leaves it), so that next
// becomes the session's only live refresh token. A concurrent Refresh or
// rotate_access may spend one first and add its own successor: the
// conditional update makes one of the two win each token, the loser waits
// for the winner's commit, and the loop reads again (a new statement sees
// what was committed) until a read finds no unspent token. Then no other
// live token can appear: any other writer must first spend one of those
// this transaction holds.
func (s *Service) spendRefreshChain(ctx context.Context, tx *store.Tx, sessionID, next string, now time.Time) error {
	for range 8 {
		ids, err := tx.UnspentRefreshTokens(ctx, sessionID)
		if err != nil || len(ids) == 0 {
			return err
		}
		for _, id := range ids {
			sealed, err := s.sealer.Seal([]byte(next), []byte("refresh-successor:"+id))
			if err != nil {
				return err
			}
			if _, err := tx.UseRefreshToken(ctx, id, now, sealed); err != nil {
				return err
			}
		}
	}
	return errors.New("refresh tokens of the session keep changing")
}

// VerifyRefresh reports whether a refresh token is valid and unspent, without using it.
func (s *Service) VerifyRefresh(ctx context.Context, app store.App, refresh string) (err error) {
	defer errs.Wrap(&err, "verify refresh token")
	if token.Peek(refresh) != token.TypeRefresh || s.mac.Forged(refresh) {
		return ErrUnauthenticated
	}
	now := s.clock()
	rt, sess, u, err := s.db.GetRefreshFamily(ctx, s.hasher.Hash("refresh", refresh))
	if err != nil {
		return unauthenticated(err)
	}
	if sess.AppID != app.ID || sess.RevokedAt != nil || !now.Before(sess.ExpiresAt) || !now.Before(rt.ExpiresAt) ||
		rt.UsedAt != nil || u.Status != store.StatusActive {
		return ErrUnauthenticated
	}
	return nil
}

func unauthenticated(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnauthenticated
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// verifiedTokens remembers access tokens whose signature checked out, so a
// token used many times costs one ECDSA verification. Claims are still
// validated (expiry, audience, issuer) and the session and user re-read on
// every use; only the signature check is skipped. Keyed by the token's
// SHA-256, in two generations: a new one starts every verifiedTokensAge or
// when the current one is full, and the one before it is dropped, so memory
// stays bounded and steady (a token still in use after that is verified
// once more) instead of growing to the bound and being emptied at once.
type verifiedTokens struct {
	mu        sync.RWMutex
	cur, prev map[[32]byte]AccessClaims
	since     time.Time // cur's start
}

const (
	verifiedTokensMax = 20000 // per generation
	verifiedTokensAge = 5 * time.Minute
)

func (v *verifiedTokens) get(tok string) (AccessClaims, bool) {
	k := sha256.Sum256([]byte(tok))
	v.mu.RLock()
	c, ok := v.cur[k]
	if !ok {
		c, ok = v.prev[k]
	}
	v.mu.RUnlock()
	return c, ok
}

func (v *verifiedTokens) put(tok string, c AccessClaims, now time.Time) {
	k := sha256.Sum256([]byte(tok))
	v.mu.Lock()
	if v.cur == nil || len(v.cur) >= verifiedTokensMax || now.Sub(v.since) >= verifiedTokensAge || now.Before(v.since) {
		v.prev, v.cur, v.since = v.cur, make(map[[32]byte]AccessClaims, 1024), now
	}
	v.cur[k] = c
	v.mu.Unlock()
}

// size is the number of tokens remembered, for the tests.
func (v *verifiedTokens) size() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return len(v.cur) + len(v.prev)
}
