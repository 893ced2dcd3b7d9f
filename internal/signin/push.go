package signin

import (
	"context"
	"errors"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Push approval. A push challenge waits for the user's answer on a device
// they are already signed in on: that device's session lists it
// (PendingPush), and approves it by typing the number the requesting device
// shows (number matching), or denies it. The requesting device polls
// GET /challenges/{token} and, once approved, collects its result with
// POST /challenges/{token}/verify. Today the list is the only delivery; a
// Web Push (or APNs/FCM) sender would implement PushSender and be called
// when a push challenge is created, with no change to this flow.

// PushSender tells a user's devices that a push challenge waits. None is
// wired today: devices poll PendingPush.
type PushSender interface {
	NotifyPush(ctx context.Context, app store.App, ch store.Challenge) error
}

// notifyPush hands a new push challenge to the PushSender, if one is
// wired; a failure is logged: the devices still see it when they poll.
func (s *Service) notifyPush(ctx context.Context, app store.App, ch store.Challenge) {
	if s.push == nil {
		return
	}
	if err := s.push.NotifyPush(ctx, app, ch); err != nil {
		s.log.WarnContext(ctx, "push notification not sent", "app_id", app.ID, "challenge_id", ch.ID, "err", err)
	}
}

// PendingPushItem is one push challenge as the approving device sees it:
// what asks, from where, and until when; never the number or the token.
type PendingPushItem struct {
	ID          string
	Purpose     string
	Intent      string
	RequestedAt time.Time
	ExpiresAt   time.Time
	Browser, OS string
	IP          string
	Location    string
}

// PendingPush lists the push challenges waiting for the signed-in user,
// except those the caller's own session asked for.
func (s *Service) PendingPush(ctx context.Context, app store.App, caller Caller) (_ []PendingPushItem, err error) {
	defer errs.Wrap(&err, "list pending push challenges")
	list, err := s.db.PendingPushChallenges(ctx, app.ID, caller.User.ID, s.clock())
	if err != nil {
		return nil, err
	}
	out := []PendingPushItem{}
	for _, ch := range list {
		if ch.SessionID == caller.Session.ID {
			continue
		}
		browser, os := DescribeUserAgent(ch.UserAgent)
		out = append(out, PendingPushItem{ID: ch.ID, Purpose: ch.Purpose, Intent: ch.Intent, RequestedAt: ch.CreatedAt,
			ExpiresAt: ch.ExpiresAt, Browser: browser, OS: os, IP: ch.IP, Location: ch.Location})
	}
	return out, nil
}

// pushFor finds a pending push challenge of the caller's user that another
// session of theirs asked for. One no longer pending comes back with a
// *ChallengeClosedError saying why.
func (s *Service) pushFor(ctx context.Context, app store.App, caller Caller, id string) (store.Challenge, error) {
	ch, err := s.db.GetChallenge(ctx, app.ID, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (ch.AppUserID != caller.User.ID || ch.Method != MethodPush ||
		ch.SessionID == caller.Session.ID)) {
		return store.Challenge{}, ErrChallengeNotFound
	}
	if err != nil {
		return store.Challenge{}, err
	}
	if v := s.View(ch, "", s.clock()); v.Status != store.ChallengePending {
		return ch, &ChallengeClosedError{Status: v.Status}
	}
	return ch, nil
}

// ApprovePush approves a push challenge from another signed-in device of
// its user, who must type the number the requesting device shows. The
// number is a guess (guess.go), taken from the challenge's attempts before
// it is compared: a wrong one spends an attempt (the last fails the
// challenge), and once they are spent even the right one is refused.
func (s *Service) ApprovePush(ctx context.Context, app store.App, caller Caller, id string, number int) (_ ChallengeView, err error) {
	defer errs.Wrap(&err, "approve push")
	ch, err := s.pushFor(ctx, app, caller, id)
	var closed *ChallengeClosedError
	if errors.As(err, &closed) && closed.Status == store.ChallengeFailed {
		return ChallengeView{}, ErrTooManyAttempts // as the transaction below would say
	}
	if err != nil {
		return ChallengeView{}, err
	}
	now := s.clock()
	err = s.settle(ctx, func(tx *store.Tx, wrong *error) error {
		g, err := s.takeChallengeAttempt(ctx, tx, app, ch, Client{}, now)
		if err != nil {
			return err
		}
		ch = g.Challenge
		if number != ch.MatchNumber {
			*wrong = errs.Invalidf("match_number", "does not match the number on the requesting device")
			return s.wrongGuess(ctx, tx, app, g, ch.AppUserID, ch.Method, Client{}, now)
		}
		d := decodeData(ch)
		d.ApprovedBy = caller.Session.ID
		ch.Data = encodeData(d)
		won, err := tx.ApprovePush(ctx, ch.ID, ch.Data, now)
		if err != nil {
			return err
		}
		if !won {
			return &ChallengeClosedError{Status: store.ChallengeExpired}
		}
		return s.emitChallenge(ctx, tx, ch, challengeCompleted(ch, now, caller.Session.ID))
	})
	if err != nil {
		return ChallengeView{}, err
	}
	ch.Status, ch.CompletedAt = store.ChallengeCompleted, &now
	v := s.View(ch, "", now)
	v.MatchNumber = 0
	return v, nil
}

// DenyPush refuses a push challenge ("this was not me"): it is over. A
// step-up asked from one of the user's sessions ends that session too:
// its holder is not the user, and would otherwise ask again and again.
//
// A sign-in's second factor ends its sign-in: the denial closes whatever
// second factor the sign-in now waits for, which may have replaced this
// push since the user saw it (its device asked again, for a push or another
// factor, or cancelled it). Otherwise whoever holds the first factor could
// keep replacing the request the user is refusing. The answer is the
// challenge denied.
func (s *Service) DenyPush(ctx context.Context, app store.App, caller Caller, id string) (_ ChallengeView, err error) {
	defer errs.Wrap(&err, "deny push")
	ch, err := s.pushFor(ctx, app, caller, id)
	var closed *ChallengeClosedError
	replaced := errors.As(err, &closed) && closed.Status == store.ChallengeCancelled && ch.Purpose == PurposeMFA
	if err != nil && !replaced {
		return ChallengeView{}, err
	}
	now := s.clock()
	target := ch
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		deny := tx.DenyChallenge
		if ch.Purpose == PurposeMFA {
			// Serialised with a replacement (createChallenge takes the
			// same lock before it reads what it replaces).
			if err := tx.LockGuesses(ctx, ch.AppUserID); err != nil {
				return err
			}
			latest, err := tx.LatestMFAChallenge(ctx, app.ID, ch.AppUserID, now)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if err == nil && sameSignIn(latest, ch) {
				target, deny = latest, tx.DenyOpenChallenge
			} else if cur, err := tx.GetChallenge(ctx, app.ID, ch.ID); err != nil {
				return err
			} else if st := s.View(cur, "", now).Status; st != store.ChallengePending {
				// The sign-in ended meanwhile (completed, failed, denied,
				// expired) or a new one began: say how this push stands.
				return &ChallengeClosedError{Status: st}
			} // else still pending, though no longer its user's newest: denied as it is

		}
		won, err := deny(ctx, target.ID, now)
		if err != nil {
			return err
		}
		if !won {
			return &ChallengeClosedError{Status: store.ChallengeExpired}
		}
		if target.ID != ch.ID {
			// The push itself, should it still wait (it cannot once
			// replacements are serialised, but a refusal must not leave it).
			if won, err := tx.DenyChallenge(ctx, ch.ID, now); err != nil {
				return err
			} else if won {
				if err := s.emitChallenge(ctx, tx, ch, challengeFailed(ch, store.ChallengeDenied, "denied", &now, caller.Session.ID)); err != nil {
					return err
				}
			}
		}
		if ch.Purpose == PurposeStepUp && ch.SessionID != "" {
			if err := tx.RevokeSession(ctx, app.ID, ch.AppUserID, ch.SessionID, now); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return s.emitChallenge(ctx, tx, target, challengeFailed(target, store.ChallengeDenied, "denied", &now, caller.Session.ID))
	})
	if err != nil {
		return ChallengeView{}, err
	}
	switch {
	case ch.Purpose == PurposeStepUp && ch.SessionID != "":
		s.log.WarnContext(ctx, "push step-up denied by its user: the asking session is revoked", "app_id", app.ID, "user_id", ch.AppUserID,
			"challenge_id", ch.ID, "session_id", ch.SessionID)
	case target.ID != ch.ID:
		s.log.WarnContext(ctx, "push challenge denied by its user after its sign-in replaced it: the sign-in's current second factor is denied",
			"app_id", app.ID, "user_id", ch.AppUserID, "challenge_id", ch.ID, "denied_challenge_id", target.ID, "method", target.Method)
	default:
		s.log.WarnContext(ctx, "push challenge denied by its user", "app_id", app.ID, "user_id", ch.AppUserID, "challenge_id", ch.ID)
	}
	target.Status = store.ChallengeDenied
	v := s.View(target, "", now)
	v.MatchNumber = 0
	return v, nil
}

// sameSignIn: b is a's sign-in's second factor, or a is b's. A second
// factor that replaces another keeps its sign-in's deadline to the
// microsecond and must come from the same device, so the deadline and the
// device name the sign-in.
func sameSignIn(a, b store.Challenge) bool {
	return a.Purpose == PurposeMFA && b.Purpose == PurposeMFA && a.ExpiresAt.Equal(b.ExpiresAt) && a.IP == b.IP && a.UserAgent == b.UserAgent
}

// collectPush hands an approved push challenge's result to the requester,
// once: 409 challenge_pending before the approval.
func (s *Service) collectPush(ctx context.Context, app store.App, ch store.Challenge, tok string, c Client, now time.Time) (VerifyResult, error) {
	v := s.View(ch, tok, now)
	switch {
	case v.Status == store.ChallengePending:
		return VerifyResult{}, ErrChallengePending
	case v.Status == store.ChallengeFailed:
		return VerifyResult{}, ErrTooManyAttempts
	case v.Status != store.ChallengeCompleted || ch.CollectedAt != nil:
		if v.Status == store.ChallengeCompleted {
			v.Status = "collected"
		}
		return VerifyResult{}, &ChallengeClosedError{Status: v.Status}
	}
	var out VerifyResult
	if ch.SessionID == "" && ch.Purpose != PurposeAuthenticate && ch.Purpose != PurposeMFA {
		// A backend's push (step-up, custom, verify_identity) hands nothing
		// out: reading its result spends nothing, so a step-up's token still
		// authorises one sensitive change afterwards.
		err := s.db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			out, err = s.complete(ctx, tx, app, ch, tok, c, now, "", false)
			return err
		})
		return out, err
	}
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		won, err := tx.ConsumeChallenge(ctx, ch.ID, now)
		if err != nil {
			return err
		}
		if !won {
			return &ChallengeClosedError{Status: "collected"}
		}
		out, err = s.complete(ctx, tx, app, ch, tok, c, now, "", false) // its challenge.completed fired at approval
		return err
	})
	return out, err
}
