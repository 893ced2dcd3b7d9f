package signin

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/passkey"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// errWrongFactor is a TOTP or backup code that did not match (or was used
// already), found inside the completing transaction, which it rolls back.
var errWrongFactor = errors.New("wrong factor")

// VerifyChallenge answers a challenge (POST /challenges/{token}/verify):
// a code, a TOTP or backup code, a passkey answer, or, for a push, nothing
// (it collects an approved push once). Wrong answers spend the challenge's
// attempts; the last one fails it, and later answers, right or wrong, get
// ErrTooManyAttempts.
func (s *Service) VerifyChallenge(ctx context.Context, app store.App, tok string, in VerifyInput, c Client) (_ VerifyResult, err error) {
	defer errs.Wrap(&err, "verify challenge")
	if err := s.allow(ctx, bucket{key: "verify:ip:" + c.IP, rule: s.limits.VerifyPerIP}); err != nil {
		return VerifyResult{}, err
	}
	now := s.clock()
	ch, err := s.challengeByToken(ctx, app, tok)
	if err != nil {
		_, err = s.decoyOr(tok, err, now, func(*ChallengeView) error { return ErrInvalidCode }) // every code is wrong
		return VerifyResult{}, err
	}
	if ch.Method == MethodPush {
		return s.collectPush(ctx, app, ch, tok, c, now)
	}
	switch v := s.View(ch, tok, now); {
	case v.Status == store.ChallengeFailed:
		return VerifyResult{}, ErrTooManyAttempts
	case v.Status != store.ChallengePending:
		return VerifyResult{}, &ChallengeClosedError{Status: v.Status}
	case ch.Method == MethodMagicLink:
		return VerifyResult{}, errs.Invalidf("method", "is answered by opening the magic link, not here: poll POST /magic_links/status with this token")
	case v.DeliveryRequired:
		return VerifyResult{}, errs.Invalidf("code", "has not been sent yet: POST /challenges/{token}/resend sends it")
	}
	code := normalizeCode(in.Code)
	var out VerifyResult
	switch ch.Method {
	case MethodEmailOTP, MethodSMSOTP:
		if !s.codeRight(app, ch, code) {
			return VerifyResult{}, s.wrongCode(ctx, app, ch, c, now)
		}
		err = s.db.Tx(ctx, func(tx *store.Tx) error {
			won, err := tx.CompleteCode(ctx, ch.ID, ch.SecretHash, now)
			if err != nil || !won {
				return orInvalid(err, won)
			}
			if _, err := s.rightCode(ctx, tx, ch.AppUserID, c, now); err != nil {
				return err
			}
			out, err = s.complete(ctx, tx, app, ch, tok, c, now, "", true)
			return err
		})
	case MethodTOTP, MethodBackupCode:
		out, err = s.verifyFactorCode(ctx, app, ch, tok, code, c, now)
	case MethodPasskey:
		out, err = s.verifyPasskey(ctx, app, ch, tok, in, c, now)
	}
	return out, err
}

func orInvalid(err error, won bool) error {
	if err == nil && !won {
		return ErrInvalidCode
	}
	return err
}

// normalizeCode drops the spaces and dashes people type into codes, and
// upper-cases backup codes.
func normalizeCode(code string) string {
	return strings.ToUpper(strings.NewReplacer(" ", "", "-", "", "\t", "").Replace(strings.TrimSpace(code)))
}

// verifyFactorCode checks a TOTP or backup code. A consecutive-failure
// lock of its own (per method) keeps it apart from the lock of e-mail and
// SMS code entry: a user locked out of codes keeps these (security R-RL-6).
func (s *Service) verifyFactorCode(ctx context.Context, app store.App, ch store.Challenge, tok, code string, c Client, now time.Time) (VerifyResult, error) {
	if s.limits.CodeLockAfter > 0 {
		n, err := s.db.FactorFailures(ctx, ch.AppUserID, ch.Method)
		if err != nil {
			return VerifyResult{}, err
		}
		if n >= s.limits.CodeLockAfter {
			return VerifyResult{}, ErrFactorLocked
		}
	}
	var enrollment string
	var step int64
	if ch.Method == MethodTOTP {
		var ok bool
		enrollment, step, ok = s.matchEnrollment(ctx, ch.AppUserID, code, now)
		if !ok {
			return VerifyResult{}, s.wrongFactor(ctx, app, ch, c, now)
		}
	}
	var out VerifyResult
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := s.recordUsedFactor(ctx, tx, &ch, enrollment); err != nil {
			return err
		}
		won, err := tx.CompleteChallenge(ctx, ch.ID, now, "")
		if err != nil || !won {
			return orInvalid(err, won)
		}
		if ch.Method == MethodTOTP {
			// Atomic: a code at or below the step last accepted is a replay.
			if won, err = tx.UseTOTPStep(ctx, enrollment, step, now); err != nil || !won {
				return orWrong(err, won)
			}
		} else {
			if won, err = tx.UseBackupCode(ctx, ch.AppUserID, s.backupHash(ch.AppUserID, code), now); err != nil || !won {
				return orWrong(err, won)
			}
			left, err := tx.UnusedBackupCodes(ctx, ch.AppUserID)
			if err != nil {
				return err
			}
			out.RemainingBackupCodes = &left
		}
		// A right code from a source that spent the hour's budget is refused too.
		if err := s.codeLimits(ctx, tx, ch.AppUserID, c.IP, now, 0, 0); err != nil {
			return err
		}
		left := out.RemainingBackupCodes
		out, err = s.complete(ctx, tx, app, ch, tok, c, now, "", true)
		out.RemainingBackupCodes = left
		if err != nil || left == nil {
			return err
		}
		u, err := tx.GetAppUser(ctx, app.ID, ch.AppUserID)
		if err != nil {
			return err
		}
		return s.securityNotice(ctx, tx, app, u, courier.Notice{Kind: courier.NoticeBackupCodeUsed, Detail: strconv.Itoa(*left)})
	})
	if errors.Is(err, errWrongFactor) {
		if ch.Method == MethodTOTP {
			s.log.WarnContext(ctx, "totp code refused: its time step was used already (replay)", "app_id", app.ID,
				"user_id", ch.AppUserID, "challenge_id", ch.ID)
		}
		return VerifyResult{}, s.wrongFactor(ctx, app, ch, c, now)
	}
	if err == nil && out.RemainingBackupCodes != nil {
		s.log.InfoContext(ctx, "backup code used", "app_id", app.ID, "user_id", ch.AppUserID, "remaining", *out.RemainingBackupCodes)
	}
	return out, err
}

// recordUsedFactor notes on a pending challenge which authenticator app or
// passkey answered it (id "" for none), before it completes.
func (s *Service) recordUsedFactor(ctx context.Context, tx *store.Tx, ch *store.Challenge, id string) error {
	if id == "" {
		return nil
	}
	d := decodeData(*ch)
	d.UsedFactor = id
	ch.Data = encodeData(d)
	err := tx.SetChallengeData(ctx, ch.ID, ch.Data)
	if errors.Is(err, store.ErrNotFound) {
		return ErrInvalidCode // no longer pending
	}
	return err
}

func orWrong(err error, won bool) error {
	if err == nil && !won {
		return errWrongFactor
	}
	return err
}

// matchEnrollment finds the user's verified TOTP enrolment that code is
// the code of, within ±1 step, and the step it matched.
func (s *Service) matchEnrollment(ctx context.Context, userID, code string, now time.Time) (string, int64, bool) {
	list, err := s.db.ListTOTP(ctx, userID)
	if err != nil {
		s.log.ErrorContext(ctx, "list totp enrollments", "err", err)
		return "", 0, false
	}
	for _, e := range list {
		if !e.Verified {
			continue
		}
		secret, err := s.openTOTP(e)
		if err != nil {
			s.log.ErrorContext(ctx, "open totp secret", "enrollment_id", e.ID, "err", err)
			continue
		}
		if step, ok := matchTOTP(secret, code, now); ok && step > e.LastUsedStep {
			return e.ID, step, true
		}
	}
	return "", 0, false
}

// wrongFactor records a wrong TOTP or backup code (or a wrong passkey
// answer): one attempt of the challenge, one more in the method's streak.
func (s *Service) wrongFactor(ctx context.Context, app store.App, ch store.Challenge, c Client, now time.Time) error {
	var status string
	var streak int
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		if _, status, err = tx.FailAttempt(ctx, ch.ID, now); err != nil {
			return err
		}
		if ch.Method == MethodTOTP || ch.Method == MethodBackupCode {
			if streak, err = tx.RecordFactorFailure(ctx, ch.AppUserID, ch.Method, now); err != nil {
				return err
			}
			// The hourly budget of wrong codes per user and source spans
			// e-mail and SMS codes, TOTP and backup codes (security R-OTP-5,
			// R-TOTP-4, R-BC-3); the streak above is the method's own.
			if err := tx.InsertCodeFailure(ctx, store.CodeFailure{ID: newID(), AppID: app.ID, AppUserID: ch.AppUserID,
				Method: ch.Method, Source: c.IP, At: now}); err != nil {
				return err
			}
			if err := s.codeLimits(ctx, tx, ch.AppUserID, c.IP, now, 0, 1); err != nil {
				return err
			}
		}
		return s.afterWrongAnswer(ctx, tx, ch, status, "invalid_code", now)
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ErrInvalidCode
	case err != nil:
		return err
	case s.limits.CodeLockAfter > 0 && streak == s.limits.CodeLockAfter:
		s.log.WarnContext(ctx, "second factor locked after consecutive wrong codes", "app_id", app.ID,
			"user_id", ch.AppUserID, "method", ch.Method)
		return ErrFactorLocked
	case status == store.ChallengeFailed:
		s.log.WarnContext(ctx, "challenge failed", "app_id", app.ID, "challenge_id", ch.ID, "purpose", ch.Purpose)
		return ErrTooManyAttempts
	}
	return ErrInvalidCode
}

// verifyPasskey checks a passkey answer to a challenge's ceremony.
func (s *Service) verifyPasskey(ctx context.Context, app store.App, ch store.Challenge, tok string, in VerifyInput, c Client, now time.Time) (VerifyResult, error) {
	if len(in.Credential) == 0 {
		return VerifyResult{}, errs.Invalidf("credential", "is required: the PublicKeyCredential from navigator.credentials.get")
	}
	a, err := passkey.ParseAssertion(in.Credential)
	if err != nil {
		return VerifyResult{}, &PasskeyError{Kind: ErrPasskeyVerification, Detail: "malformed answer"}
	}
	d := decodeData(ch)
	if s.hasher.Hash("webauthn-challenge", a.Challenge) != d.WebauthnChallenge {
		_ = s.wrongFactor(ctx, app, ch, c, now)
		return VerifyResult{}, &PasskeyError{Kind: ErrPasskeyVerification, Detail: "the answer is for another challenge"}
	}
	cer, ok, err := s.takeCeremony(ctx, app, a.Challenge, store.CeremonyChallenge)
	if err != nil {
		return VerifyResult{}, err
	}
	if !ok {
		return VerifyResult{}, &PasskeyError{Kind: ErrPasskeyVerification, Detail: "unknown, used or expired ceremony"}
	}
	chk, err := s.checkAssertion(ctx, app, cer, a, c)
	if err != nil {
		_ = s.wrongFactor(ctx, app, ch, c, now)
		return VerifyResult{}, err
	}
	var out VerifyResult
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := s.recordUsedFactor(ctx, tx, &ch, chk.pk.ID); err != nil {
			return err
		}
		won, err := tx.CompleteChallenge(ctx, ch.ID, now, "")
		if err != nil || !won {
			return orInvalid(err, won)
		}
		if err := recordPasskeyUse(ctx, tx, chk, now, c); err != nil {
			return err
		}
		out, err = s.complete(ctx, tx, app, ch, tok, c, now, chk.pk.CredentialID, true)
		return err
	})
	if errors.Is(err, errConcurrentUse) {
		return VerifyResult{}, &PasskeyError{Kind: ErrPasskeyVerification, Detail: "the passkey was used concurrently"}
	}
	return out, err
}

// complete does what a passed challenge is for, inside the transaction
// that completed it, and emits challenge.completed (with the verification
// event for a code): a sign-in, the second factor's session, a step-up, a
// verified contact, a changed identifier, or nothing more (custom and
// verify_identity: the event is the app's callback). announce false skips
// challenge.completed (a push's fired at its approval).
func (s *Service) complete(ctx context.Context, tx *store.Tx, app store.App, ch store.Challenge, tok string, c Client, now time.Time, credentialID string, announce bool) (VerifyResult, error) {
	ch.Status, ch.CompletedAt = store.ChallengeCompleted, &now
	out := VerifyResult{Challenge: s.View(ch, tok, now)}
	u, err := tx.GetAppUser(ctx, app.ID, ch.AppUserID)
	if err != nil {
		return out, notFound(err)
	}
	if u.Status == store.StatusInactive {
		return out, ErrInvalidCode
	}
	code := ch.Method == MethodEmailOTP || ch.Method == MethodSMSOTP
	// A challenge a session started ends with that session.
	var sess store.Session
	if ch.SessionID != "" {
		if sess, err = liveSession(ctx, tx, app, ch.SessionID, now); err != nil {
			return out, err
		}
	}
	// A push proves only that someone holds another session of the user:
	// what it opens or freshens is no fresher than that session's own proof.
	var since *time.Time
	if ch.Method == MethodPush {
		approver, err := liveSession(ctx, tx, app, decodeData(ch).ApprovedBy, now)
		if err != nil {
			return out, err
		}
		at := approver.Authenticated()
		since = &at
	}
	if ch.Purpose == PurposeMFA || ch.Purpose == PurposeStepUp {
		// A second factor passed, by any method, lifts a lock of wrong TOTP
		// or backup codes: the user is back in control.
		if err := tx.EndAllFactorFailures(ctx, u.ID); err != nil {
			return out, err
		}
	}
	switch ch.Purpose {
	case PurposeAuthenticate:
		f := factor{Session: ch.Method, AMR: ch.Method, Kind: ch.Method, Since: since}
		switch ch.Method {
		case MethodEmailOTP, MethodSMSOTP:
			if u, err = s.verifyContact(ctx, tx, app, ch, now, ErrInvalidCode, nil); err != nil {
				return out, err
			}
			f = codeFactor(ch)
		case MethodPasskey:
			if err := s.users.RecordSignIn(ctx, tx, app, u.ID); err != nil {
				return out, err
			}
			f = passkeyFactor(credentialID)
		}
		set, err := s.startSession(ctx, tx, app, u, f, c)
		if err != nil {
			return out, err
		}
		out.Tokens = &set
		if code {
			return out, nil // verifyContact emitted challenge.completed with the verification
		}
	case PurposeMFA:
		d := decodeData(ch)
		if code {
			if err := s.emitVerification(ctx, tx, ch, webhook.OutcomeVerified, &now, nil); err != nil {
				return out, err
			}
		}
		set, err := s.openSession(ctx, tx, app, u, factor{Session: d.FirstSession, CredentialID: d.FirstCredential, Since: since},
			[]string{d.FirstAMR, ch.Method}, c)
		if err != nil {
			return out, err
		}
		out.Tokens = &set
		if err := tx.EndCodeFailureStreak(ctx, u.ID); err != nil {
			return out, err
		}
		if code {
			return out, nil
		}
	case PurposeStepUp:
		if ch.SessionID != "" {
			at, amr := now, []string{ch.Method}
			if since != nil && since.Before(now) {
				at = *since
			}
			if err := tx.StepUpSession(ctx, sess.ID, at, amr, decodeData(ch).UsedFactor); err != nil {
				return out, err
			}
			sess.AuthTime, sess.AMR = &at, amr
			// A new pair, and the session's old refresh token spent into it,
			// so the family stays one chain and reuse is still detected.
			set, err := s.rotateSessionTokens(ctx, tx, app, sess, u, now)
			if err != nil {
				return out, err
			}
			out.Tokens = &set
		}
	case PurposeVerifyContact:
		sms := ch.Method == MethodSMSOTP
		if (sms && ch.Recipient != u.Phone) || (!sms && ch.Recipient != u.Email) {
			// The address changed since the code was sent: the code proves the old one.
			return out, errs.Invalidf("code", "was sent to an address the user no longer has")
		}
		if _, err := s.users.MarkVerified(ctx, tx, app, u.ID, !sms, sms); err != nil {
			return out, err
		}
	case PurposeChangeIdentifier:
		changed, before, err := s.users.ChangeIdentifier(ctx, tx, app, u.ID, decodeData(ch).NewIdentifier)
		if errors.Is(err, appuser.ErrUserExists) {
			return out, ErrIdentifierTaken // taken since the challenge began
		}
		if err != nil {
			return out, err
		}
		out.User = &changed
		if err := s.noticeIdentifierChanged(ctx, tx, app, before, changed); err != nil {
			return out, err
		}
	}
	switch {
	case code:
		return out, s.emitVerification(ctx, tx, ch, webhook.OutcomeVerified, &now, nil)
	case !announce:
		return out, nil
	}
	return out, s.emitChallenge(ctx, tx, ch, webhook.ChallengeCompleted, store.ChallengeCompleted, map[string]any{"completed_at": now})
}

// liveSession reads a session of app that is neither revoked nor expired.
func liveSession(ctx context.Context, tx *store.Tx, app store.App, id string, now time.Time) (store.Session, error) {
	if id == "" {
		return store.Session{}, ErrUnauthenticated
	}
	sess, _, err := tx.GetSessionWithUser(ctx, app.ID, id)
	if err != nil {
		return store.Session{}, notFoundAs(err, ErrUnauthenticated)
	}
	if sess.RevokedAt != nil || !now.Before(sess.ExpiresAt) {
		return store.Session{}, ErrUnauthenticated
	}
	return sess, nil
}
