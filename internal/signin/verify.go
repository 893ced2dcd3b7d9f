package signin

import (
	"cmp"
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

// VerifyChallenge answers a challenge (POST /challenges/{token}/verify):
// a code, a TOTP or backup code, a passkey answer, or, for a push, nothing
// (it collects an approved push once). Each answer is a guess taken from the
// challenge's attempts (and, for codes, the user's budgets) before it is
// compared (guess.go); the last wrong one fails the challenge, and later
// answers, right or wrong, get ErrTooManyAttempts.
func (s *Service) VerifyChallenge(ctx context.Context, app store.App, tok string, in VerifyInput, c Client) (res VerifyResult, err error) {
	defer errs.Wrap(&err, "verify challenge")
	// A sign-in's factors count (authenticate and mfa); other purposes
	// (step-up, verifying a contact) are no sign-in.
	method, signIn := "", true
	defer func() {
		if signIn {
			s.countSignIn(method, res.Tokens != nil && res.Tokens.MFA != nil, err)
		}
	}()
	if err := s.allow(ctx, bucket{key: "verify:ip:" + c.IP, rule: s.limits.VerifyPerIP}); err != nil {
		return VerifyResult{}, err
	}
	now := s.clock()
	ch, err := s.challengeByToken(ctx, app, tok)
	if err != nil {
		_, err = s.decoyOr(tok, err, now, func(*ChallengeView) error { return ErrInvalidCode }) // every code is wrong
		return VerifyResult{}, err
	}
	method, signIn = ch.Method, ch.Purpose == PurposeAuthenticate || ch.Purpose == PurposeMFA
	if ch.Method == MethodPush {
		return s.collectPush(ctx, app, ch, tok, c, now)
	}
	// Refusals that need no guess: the transaction checks again.
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
	if ch.Method == MethodPasskey {
		return s.verifyPasskey(ctx, app, ch, tok, in, c, now)
	}
	code := normalizeCode(in.Code)
	var out VerifyResult
	err = s.settle(ctx, func(tx *store.Tx, wrong *error) error {
		g, err := s.takeChallengeAttempt(ctx, tx, app, ch, c, now)
		if err != nil {
			return err
		}
		ch := g.Challenge // as the take found it: a resend since may have changed the code
		var answer factorAnswer
		switch ch.Method {
		case MethodEmailOTP, MethodSMSOTP:
			answer.right = s.codeRight(app, ch, code)
		case MethodTOTP:
			answer, err = s.answerTOTP(ctx, tx, ch.AppUserID, code, now)
		case MethodBackupCode:
			answer, err = s.answerBackupCode(ctx, tx, ch.AppUserID, code, now)
		}
		if err != nil {
			return err
		}
		if !answer.right {
			*wrong = cmp.Or(answer.refusal, ErrInvalidCode)
			return s.wrongGuess(ctx, tx, app, g, ch.AppUserID, ch.Method, c, now)
		}
		if err := s.recordUsedFactor(ctx, tx, &ch, answer.factor); err != nil {
			return err
		}
		if won, err := tx.CompleteAttempt(ctx, ch.ID, now, ""); err != nil || !won {
			return orInvalid(err, won)
		}
		if out, err = s.complete(ctx, tx, app, ch, tok, c, now, "", true); err != nil {
			return err
		}
		if ch.Method != MethodBackupCode {
			return nil
		}
		out.RemainingBackupCodes = &answer.backupLeft
		u, err := tx.GetAppUser(ctx, app.ID, ch.AppUserID)
		if err != nil {
			return err
		}
		return s.securityNotice(ctx, tx, app, u, courier.Notice{Kind: courier.NoticeBackupCodeUsed, Detail: strconv.Itoa(answer.backupLeft)})
	})
	if err == nil && out.RemainingBackupCodes != nil {
		s.log.InfoContext(ctx, "backup code used", "app_id", app.ID, "user_id", ch.AppUserID, "remaining", *out.RemainingBackupCodes)
	}
	return out, err
}

// takeChallengeAttempt takes a guess at ch (guess.go); a challenge with no
// attempt left is told why, as it stands now.
func (s *Service) takeChallengeAttempt(ctx context.Context, tx *store.Tx, app store.App, ch store.Challenge, c Client, now time.Time) (store.Guess, error) {
	g, err := s.takeAttempt(ctx, tx, ch, c, now)
	if !errors.Is(err, errNoAttempt) {
		return g, err
	}
	if ch, err = tx.GetChallenge(ctx, app.ID, ch.ID); err != nil {
		return g, notFoundAs(err, ErrChallengeNotFound)
	}
	return g, noAttemptError(ch, now, func(status string) error { return &ChallengeClosedError{Status: status} })
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

// factorAnswer is the verdict on a second factor's code, reached inside the
// guess's transaction: right (with the authenticator app it came from, or
// the backup codes left), or wrong with the refusal to give (ErrCodeUsed
// for a TOTP code whose time step was used already; else ErrInvalidCode).
type factorAnswer struct {
	right      bool
	factor     string // the TOTP enrolment that matched
	backupLeft int
	refusal    error
}

// answerTOTP compares code with the user's verified authenticator apps,
// within ±1 step, and spends the step it matched: a code at or below the
// step last accepted is a replay (security R-TOTP-3).
func (s *Service) answerTOTP(ctx context.Context, tx *store.Tx, userID, code string, now time.Time) (factorAnswer, error) {
	list, err := tx.ListTOTP(ctx, userID)
	if err != nil {
		return factorAnswer{}, err
	}
	replay := false
	for _, e := range list {
		if !e.Verified {
			continue
		}
		secret, err := s.openTOTP(e)
		if err != nil {
			s.log.ErrorContext(ctx, "open totp secret", "enrollment_id", e.ID, "err", err)
			continue
		}
		step, ok := matchTOTP(secret, code, now)
		if !ok {
			continue
		}
		if step <= e.LastUsedStep {
			replay = true
			continue
		}
		// The guess holds the user's lock, so nothing else can spend the step meanwhile.
		won, err := tx.UseTOTPStep(ctx, e.ID, step, now)
		if err != nil {
			return factorAnswer{}, err
		}
		if won {
			return factorAnswer{right: true, factor: e.ID}, nil
		}
		replay = true
	}
	if replay {
		s.log.WarnContext(ctx, "totp code refused: its time step was used already (replay)", "user_id", userID)
		return factorAnswer{refusal: ErrCodeUsed}, nil
	}
	return factorAnswer{}, nil
}

// answerBackupCode spends the user's unused backup code equal to code
// (found by its keyed hash: the comparison is the spend), and counts the
// ones left.
func (s *Service) answerBackupCode(ctx context.Context, tx *store.Tx, userID, code string, now time.Time) (factorAnswer, error) {
	won, err := tx.UseBackupCode(ctx, userID, s.backupHash(userID, code), now)
	if err != nil || !won {
		return factorAnswer{}, err
	}
	left, err := tx.UnusedBackupCodes(ctx, userID)
	return factorAnswer{right: true, backupLeft: left}, err
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

// wrongAnswer records a wrong answer to ch that was judged outside a
// transaction (a passkey's): it takes the attempt it spends and records
// the wrong answer in one transaction, refusing as a guess would.
func (s *Service) wrongAnswer(ctx context.Context, app store.App, ch store.Challenge, c Client, now time.Time) error {
	return s.settle(ctx, func(tx *store.Tx, wrong *error) error {
		g, err := s.takeChallengeAttempt(ctx, tx, app, ch, c, now)
		if err != nil {
			return err
		}
		*wrong = ErrInvalidCode
		return s.wrongGuess(ctx, tx, app, g, ch.AppUserID, ch.Method, c, now)
	})
}

// verifyPasskey checks a passkey answer to a challenge's ceremony. The
// ceremony is taken (deleted) before the assertion is checked, so each
// challenge's one ceremony is checked at most once; a wrong answer then
// spends one of the challenge's attempts as any wrong answer does.
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
		if err := s.wrongAnswer(ctx, app, ch, c, now); !errors.Is(err, ErrInvalidCode) {
			return VerifyResult{}, err
		}
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
		if werr := s.wrongAnswer(ctx, app, ch, c, now); !errors.Is(werr, ErrInvalidCode) {
			return VerifyResult{}, werr
		}
		return VerifyResult{}, err
	}
	var out VerifyResult
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := s.takeChallengeAttempt(ctx, tx, app, ch, c, now); err != nil {
			return err
		}
		if err := s.recordUsedFactor(ctx, tx, &ch, chk.pk.ID); err != nil {
			return err
		}
		won, err := tx.CompleteAttempt(ctx, ch.ID, now, "")
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
			if cur := sess.Authenticated(); cur.After(at) {
				// A push approved on a device signed in long ago never
				// makes this session's proof older than it was.
				at = cur
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
	return out, s.emitChallenge(ctx, tx, ch, challengeCompleted(ch, now, ""))
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
