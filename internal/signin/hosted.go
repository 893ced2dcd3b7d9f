package signin

import (
	"context"
	"errors"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// The hosted sign-in pages' hand-off (docs/hosted-pages.md): a user who
// signed in on Gatehouse's own page for an app (/login/{app_id}) holds a
// session there, and the browser goes back to the app with the same
// single-use, 2-minute token a social sign-in gives (sct_magic), which the
// client SDK turns into the app's own session with PATCH
// /magic_links/authenticate. The app's session proves what the hosted one
// proved (its method, amr and auth_time): the hosted sign-in already went
// through the app's MFA policy, so the hand-off asks for nothing more.

// MethodHosted is the hand-off's challenge method.
const MethodHosted = "hosted"

// HandOff returns the token the app's callback gets (sct_magic) for the
// user of caller, whose session is the hosted page's. The token opens a
// session of its own, once, while the hosted session is live.
func (s *Service) HandOff(ctx context.Context, app store.App, caller Caller, c Client) (tok string, err error) {
	defer errs.Wrap(&err, "hosted sign-in hand-off")
	u := caller.User
	if u.Status != store.StatusActive {
		return "", ErrUnauthenticated
	}
	// Each hand-off stores a challenge and emits an event: a browser that
	// presses "Continue as" in a loop gets the budget of a user's
	// challenges, per hosted session.
	if err := s.allow(ctx, bucket{key: "handoff:" + caller.Session.ID, rule: s.limits.ChallengePerUser}); err != nil {
		return "", err
	}
	now := s.clock()
	ch := store.Challenge{ID: newID(), AppID: app.ID, AppUserID: u.ID, Purpose: PurposeAuthenticate, Method: MethodHosted,
		Status: store.ChallengePending, RemainingAttempts: 1, IP: c.IP, UserAgent: truncate(c.UserAgent, 512),
		CreatedAt: now, ExpiresAt: now.Add(oauthTokenTTL), SessionID: caller.Session.ID,
		Data: encodeData(challengeData{Test: s.users.TestIdentities().User(app, u)})}
	tok, err = s.keys.Sign(token.TypeMagic, magicClaims{
		Claims: token.Claims{Issuer: s.settings.Issuer, Subject: u.ID, Audience: token.Audience{app.ID}, IssuedAt: now.Unix(),
			Expiry: ch.ExpiresAt.Unix(), ID: ch.ID},
		UUID: u.ID, UserStatus: u.Status, Email: u.Email, Phone: u.Phone, Purpose: "magic_link",
	})
	if err != nil {
		return "", err
	}
	ch.SecretHash = s.hasher.Hash("magic", tok)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		// As a social sign-in's: no earlier token is superseded (each is
		// single use and lives two minutes).
		if err := tx.CreateChallenge(ctx, ch); err != nil {
			return err
		}
		return s.emitChallenge(ctx, tx, ch, challengeCreated(ch, ""))
	})
	if err != nil {
		return "", err
	}
	return tok, nil
}

// signInHostedChallenge opens the app's session of a hand-off's token,
// inside tx (the one that completed the challenge): while the hosted
// session it came from is live and the user active, a new session with
// that session's method, amr and auth_time.
func (s *Service) signInHostedChallenge(ctx context.Context, tx *store.Tx, app store.App, ch store.Challenge, now time.Time, c Client) (TokenSet, error) {
	hosted, err := liveSession(ctx, tx, app, ch.SessionID, now)
	if errors.Is(err, ErrUnauthenticated) {
		return TokenSet{}, ErrMagicLinkNotFound
	}
	if err != nil {
		return TokenSet{}, err
	}
	u, err := tx.GetAppUser(ctx, app.ID, ch.AppUserID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (u.Status != store.StatusActive || hosted.AppUserID != u.ID)) {
		return TokenSet{}, ErrMagicLinkNotFound
	}
	if err != nil {
		return TokenSet{}, err
	}
	if err := s.emitChallenge(ctx, tx, ch, challengeCompleted(ch, now, "")); err != nil {
		return TokenSet{}, err
	}
	since, until := hosted.Authenticated(), hosted.ExpiresAt
	return s.openSession(ctx, tx, app, u, factor{Session: hosted.Method, CredentialID: hosted.CredentialID, Since: &since, Until: &until},
		hosted.AMR, c)
}

// hostedTouchEvery is how often a hosted session's use is written down.
const hostedTouchEvery = time.Minute

// HostedCaller is the caller of a hosted page's session (its cookie names
// it): live, and used within the app's refresh lifetime (the idle limit an
// app's own sessions have through their refresh tokens, which the hosted
// session keeps none of). Each use is recorded, at most once a minute.
func (s *Service) HostedCaller(ctx context.Context, app store.App, sessionID string) (Caller, error) {
	return s.hostedCaller(ctx, app, sessionID, true)
}

// HostedCallerPeek is HostedCaller for a page's background reads (a poll
// while the page is open): they do not count as use, so a page left open
// does not keep its session from idling out.
func (s *Service) HostedCallerPeek(ctx context.Context, app store.App, sessionID string) (Caller, error) {
	return s.hostedCaller(ctx, app, sessionID, false)
}

func (s *Service) hostedCaller(ctx context.Context, app store.App, sessionID string, touch bool) (Caller, error) {
	c, err := s.SessionCaller(ctx, app, sessionID)
	if err != nil {
		return Caller{}, err
	}
	now := s.clock()
	if idle := time.Duration(app.RefreshExpiration) * time.Second; idle > 0 && !now.Before(c.Session.LastActiveAt.Add(idle)) {
		return Caller{}, ErrUnauthenticated
	}
	if !touch {
		return c, nil
	}
	if err := s.db.TouchSession(ctx, c.Session.ID, now, hostedTouchEvery); err != nil {
		return Caller{}, err
	}
	return c, nil
}
