package signin

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Every answer that could be guessed (an e-mail or SMS code, a TOTP or
// backup code, a push's match number, a passkey's answer to a challenge) is
// judged in one transaction that first takes the guess from every budget
// that limits it, and only then compares (security R-REL-1):
//
//  1. LockGuesses makes the guesses at one user's answers wait for each
//     other, whatever challenge they answer;
//  2. TakeAttempt spends one of the challenge's attempts and reads the
//     user's record of wrong answers as every earlier guess left it;
//  3. a guess that finds a budget spent (no attempt left, the hour's wrong
//     codes from its source, the streak that locks a method) is refused
//     without comparing, and the transaction rolls back: it spent nothing;
//  4. otherwise the answer is compared, and the verdict recorded before
//     commit: a wrong answer joins the budgets (the last attempt fails the
//     challenge), a right one completes the challenge and gets its attempt
//     back.
//
// So N parallel guesses are compared at most as often as the budgets allow,
// and the right answer sent after them is refused once they are spent. A
// compared wrong answer is always ErrInvalidCode (422 invalid_code); a
// refusal before comparing is ErrTooManyAttempts, ErrCodeEntryLocked or
// ErrFactorLocked (429). Nothing in the transaction asks the pool for a
// second connection (the tests' store refuses it): a guess holding the
// user's lock never waits for one.

// errNoAttempt is a guess at a challenge that has no attempt to take: the
// caller reads why (failed, expired, completed, superseded).
var errNoAttempt = errors.New("no attempt to take")

// codeMethod reports whether method is an e-mail or SMS code, whose wrong
// answers add to the user's code streak; counted reports whether a method's
// wrong answers spend the hourly budget at all (TOTP and backup codes do,
// with a streak of their own; a push's number and a passkey's answer spend
// only the challenge's attempts).
func codeMethod(method string) bool { return method == MethodEmailOTP || method == MethodSMSOTP }

func counted(method string) bool {
	return codeMethod(method) || method == MethodTOTP || method == MethodBackupCode
}

// takeGuess locks userID's guesses and takes one with take (an attempt of
// a challenge, or only the record of wrong answers), refusing it when a
// budget of method is spent. errNoAttempt: take found no attempt, and no
// lock or budget of the user's explains it better.
func (s *Service) takeGuess(ctx context.Context, tx *store.Tx, userID, method string, c Client, now time.Time,
	take func(since time.Time) (store.Guess, error)) (store.Guess, error) {
	// Deferred: the lock goes out with the take, one round trip for both;
	// a user that does not exist has no attempt to take either.
	if err := tx.Deferred(nil).LockGuesses(ctx, userID); err != nil {
		return store.Guess{}, notFoundAs(err, errNoAttempt)
	}
	since := now.Add(-codeFailureWindow)
	g, err := take(since)
	if errors.Is(err, store.ErrNotFound) {
		// A locked user hears of the lock rather than of one spent challenge.
		if g, err = tx.GuessState(ctx, userID, method, c.IP, since); err != nil {
			return g, err
		}
		return g, cmp.Or(s.overBudget(g, method), errNoAttempt)
	}
	if err != nil {
		return g, err
	}
	if g.Challenge.Method != "" {
		method = g.Challenge.Method
	}
	return g, s.overBudget(g, method)
}

// overBudget is the refusal of a guess at method whose user's record g
// shows a lock or the source's hourly budget spent; nil when it may be
// compared.
func (s *Service) overBudget(g store.Guess, method string) error {
	lock := s.limits.CodeLockAfter
	switch {
	case codeMethod(method) && lock > 0 && g.Streak >= lock:
		return ErrCodeEntryLocked
	case (method == MethodTOTP || method == MethodBackupCode) && lock > 0 && g.FactorStreak >= lock:
		return ErrFactorLocked
	case counted(method) && s.limits.CodeFailuresPerHour > 0 && g.FromSource >= s.limits.CodeFailuresPerHour:
		return ErrTooManyAttempts
	}
	return nil
}

// takeAttempt is takeGuess on a challenge the caller has read.
func (s *Service) takeAttempt(ctx context.Context, tx *store.Tx, ch store.Challenge, c Client, now time.Time) (store.Guess, error) {
	return s.takeGuess(ctx, tx, ch.AppUserID, ch.Method, c, now, func(since time.Time) (store.Guess, error) {
		return tx.TakeAttempt(ctx, ch.ID, ch.AppUserID, ch.Method, c.IP, now, since)
	})
}

// noAttemptError is what a guess at ch that found no attempt to take is
// told, ch as read again inside the transaction: a challenge that failed
// (or whose attempts a concurrent guess has just spent) is
// ErrTooManyAttempts, any other closed one closed.
func noAttemptError(ch store.Challenge, now time.Time, closed func(status string) error) error {
	switch {
	case ch.Status == store.ChallengeFailed || (ch.Status == store.ChallengePending && ch.RemainingAttempts <= 0):
		return ErrTooManyAttempts
	case ch.Status == store.ChallengePending && !now.Before(ch.ExpiresAt):
		return closed(store.ChallengeExpired)
	}
	return closed(ch.Status)
}

// wrongGuess records, in the guess's transaction, that g's answer was
// wrong: the challenge fails if that was its last attempt, a counted
// method's wrong answer joins the hourly budget and its streak (the code
// streak telling the user once when it locks code entry), with the events
// of a wrong answer. The caller commits and answers ErrInvalidCode.
func (s *Service) wrongGuess(ctx context.Context, tx *store.Tx, app store.App, g store.Guess, userID, method string, c Client, now time.Time) error {
	ch := g.Challenge
	if ch.ID != "" && ch.RemainingAttempts <= 0 {
		if err := tx.FailSpentChallenge(ctx, ch.ID); err != nil {
			return err
		}
		ch.Status = store.ChallengeFailed
		s.log.WarnContext(ctx, "challenge failed after its last wrong answer", "app_id", app.ID, "challenge_id", ch.ID,
			"purpose", ch.Purpose, "method", ch.Method)
	}
	lock := s.limits.CodeLockAfter
	failure := store.CodeFailure{ID: newID(), AppID: app.ID, AppUserID: userID, Method: method, Source: c.IP, At: now}
	switch {
	case codeMethod(method):
		streak, err := tx.RecordCodeFailure(ctx, failure)
		if err != nil {
			return err
		}
		if lock > 0 && streak == lock {
			s.log.WarnContext(ctx, "sign-in by code locked after consecutive wrong codes", "app_id", app.ID,
				"user_id", userID, "failures", lock)
			if err := s.noticeCodeLocked(ctx, tx, app, ch); err != nil {
				return err
			}
		}
	case counted(method):
		streak, err := tx.RecordFactorFailure(ctx, userID, method, now)
		if err != nil {
			return err
		}
		if err := tx.InsertCodeFailure(ctx, failure); err != nil {
			return err
		}
		if lock > 0 && streak == lock {
			s.log.WarnContext(ctx, "second factor locked after consecutive wrong codes", "app_id", app.ID,
				"user_id", userID, "method", method)
		}
	}
	if ch.ID == "" {
		return nil
	}
	return s.afterWrongAnswer(ctx, tx, ch, ch.Status, "invalid_code", now)
}

// settle commits the verdict of a guess: the transaction fn ran commits
// when fn returns nil or a wrong answer's refusal (wrong, set by fn, whose
// verdict it recorded), and rolls back on any other error (a refusal before
// comparing spent nothing).
func (s *Service) settle(ctx context.Context, fn func(tx *store.Tx, wrong *error) error) error {
	var wrong error
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		wrong = nil
		return fn(tx, &wrong)
	})
	if err != nil {
		return err
	}
	return wrong
}
