package signin

import (
	"context"
	"errors"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Challenge methods and purposes.
const (
	MethodEmailOTP  = "email_otp"
	MethodSMSOTP    = "sms_otp"
	MethodMagicLink = "magic_link"

	PurposeAuthenticate = "authenticate"

	// codeAttempts is how many wrong codes fail a challenge.
	codeAttempts = 5
	codeDigits   = 6
)

// SendResult is what sending a code or a link returns. For an identifier
// that gets nothing (unknown with sign-up closed, or deactivated), the ids
// are random and the shape is the same, so the answer reveals nothing;
// MetaErrors depend on the request alone (RegistrationMeta).
type SendResult struct {
	ChallengeID string // one-time codes: the challenge id; magic links: the poll handle
	SentAt      time.Time
	UserID      string
	// Sent: the message was accepted for delivery (committed to the send
	// queue, or nothing to send); it says nothing of the provider, which a
	// worker calls afterwards. delivery_failed reports a message that never
	// arrived.
	Sent        bool
	MetaErrors  appuser.MetaErrors
	MatchNumber int // magic links: the number the requesting device shows, which the consent page asks for
}

// parseIdentifier normalises an identifier and checks the app accepts its kind.
func parseIdentifier(app store.App, raw string) (appuser.Identifier, error) {
	id, err := appuser.ParseIdentifier(raw)
	if err != nil {
		return id, err
	}
	for _, k := range app.AllowedIdentifiers {
		if k == string(id.Kind) {
			return id, nil
		}
	}
	return id, appuser.ErrIdentifierNotAllowed
}

func sendBuckets(app store.App, id appuser.Identifier, c Client, l Limits) []bucket {
	return []bucket{
		{key: "send:ip:" + c.IP, rule: l.SendPerIP},
		{key: "send:id:" + app.ID + ":" + id.Value, rule: l.SendPerIdentifier},
	}
}

// SendOTP sends a one-time code to an e-mail address or phone, creating the
// user when unknown (if the app allows public sign-up). A new code kills the
// user's previous one.
func (s *Service) SendOTP(ctx context.Context, app store.App, identifier string, meta map[string]any, c Client) (_ SendResult, err error) {
	defer errs.Wrap(&err, "send otp")
	r, err := s.resolve(ctx, app, identifier, meta, c)
	if err != nil {
		return SendResult{}, err
	}
	return s.sendTo(ctx, app, &r, func() (SendResult, error) {
		if r.User == nil { // nothing may be sent: answer as if it was
			return SendResult{ChallengeID: newID(), SentAt: s.clock(), UserID: newID(), Sent: true, MetaErrors: r.MetaErrors}, nil
		}
		return s.sendOTP(ctx, app, r, c)
	})
}

// sendOTP issues a code challenge for r, whose user is set.
func (s *Service) sendOTP(ctx context.Context, app store.App, r recipient, c Client) (SendResult, error) {
	method := MethodEmailOTP
	if r.ID.Kind == appuser.KindPhone {
		method = MethodSMSOTP
	}
	ch := s.newChallenge(app, r, method, codeAttempts, s.settings.CodeLifetime, c)
	code := s.newCode(app, r.ID.Value)
	ch.SecretHash = s.hasher.Hash("otp", ch.ID, code)
	msg := outbound.Request{Template: courier.TemplateLoginCode, To: r.ID.Value, Vars: courier.Vars{Code: code, ExpiresIn: s.settings.CodeLifetime},
		Langs: outbound.Languages(r.User.Meta, c.Languages)}
	sent, err := s.issue(ctx, app, r, ch, []string{MethodEmailOTP, MethodSMSOTP}, msg)
	if err != nil {
		return SendResult{}, err
	}
	return SendResult{ChallengeID: ch.ID, SentAt: ch.CreatedAt, UserID: r.User.ID, Sent: sent, MetaErrors: r.MetaErrors}, nil
}

// codeFailureWindow is the rolling window of the budget of wrong codes.
const codeFailureWindow = time.Hour

// VerifyOTP checks a one-time code for a user (the id the client SDK looked
// up) and, when it is right, starts a session. Each code is a guess taken
// before it is compared (guess.go): it spends one of the challenge's
// attempts, and wrong ones are recorded with their time and source (the
// client IP). Two limits span every challenge, so resending cannot buy more
// guesses: a budget of wrong codes per user and source in a rolling hour
// (ErrTooManyAttempts), so a stranger's guesses do not lock the owner out,
// and a lock after too many consecutive wrong codes from any source
// (ErrCodeEntryLocked), which stops code entry alone, until the user signs
// in another way, and tells the user once.
func (s *Service) VerifyOTP(ctx context.Context, app store.App, userID, code string, c Client) (set TokenSet, err error) {
	defer errs.Wrap(&err, "verify otp")
	method := "" // the challenge's, once found
	defer func() { s.countSignIn(method, set.MFA != nil, err) }()
	if err := s.allow(ctx, bucket{key: "verify:ip:" + c.IP, rule: s.limits.VerifyPerIP}); err != nil {
		return TokenSet{}, err
	}
	now := s.clock()
	var out TokenSet
	err = s.settle(ctx, func(tx *store.Tx, wrong *error) error {
		var u store.AppUser
		g, err := s.takeGuess(ctx, tx, userID, MethodEmailOTP, c, now, func(since time.Time) (g store.Guess, err error) {
			g, u, err = tx.TakeLatestCodeAttemptWithUser(ctx, app.ID, userID, c.IP, now, since)
			return g, err
		})
		if errors.Is(err, errNoAttempt) {
			ch, err := tx.LatestCodeChallenge(ctx, app.ID, userID)
			if err != nil {
				return notFoundAs(err, ErrInvalidCode)
			}
			method = ch.Method
			return noAttemptError(ch, now, func(string) error { return ErrInvalidCode })
		}
		if err != nil {
			return err
		}
		ch := g.Challenge
		method = ch.Method
		if !s.codeRight(app, ch, code) {
			*wrong = ErrInvalidCode
			return s.wrongGuess(ctx, tx, app, g, userID, ch.Method, c, now)
		}
		// The challenge's completion and the user's verified contact
		// (verifyContact, for this hot path): one statement on PostgreSQL,
		// deferred to go out with the session and the COMMIT, so a right
		// code costs two round trips in all. The take returned the user as
		// it stands, and Verified is what the statement makes of it.
		sms := channelOf(ch) == "sms"
		if u = u.Verified(!sms, sms, now); u.Status != store.StatusActive {
			return ErrInvalidCode // deactivated: nothing is written
		}
		if err := tx.Deferred(nil).CompleteAttemptAndMarkVerified(ctx, ch.ID, app.ID, ch.AppUserID, !sms, sms, now); err != nil {
			return err
		}
		if err := s.emitVerification(ctx, tx, ch, webhook.OutcomeVerified, &now, nil); err != nil {
			return err
		}
		if g.Streak > 0 { // the sign-in ends the streak; most have none to end
			if err := tx.EndCodeFailureStreak(ctx, userID); err != nil {
				return err
			}
		}
		out, err = s.newSession(ctx, tx, app, u, codeFactor(ch), c)
		return err
	})
	return out, err
}

// noticeCodeLocked queues inside tx, the lock's, a notice telling the user
// at the address the codes went to that code entry is locked and how to
// lift the lock. It holds no code or link.
func (s *Service) noticeCodeLocked(ctx context.Context, tx *store.Tx, app store.App, ch store.Challenge) error {
	id := appuser.Identifier{Kind: appuser.KindEmail, Value: ch.Recipient}
	if channelOf(ch) == "sms" {
		id.Kind = appuser.KindPhone
	}
	// In the user's own language: whoever typed the codes may not be them.
	var langs []string
	if u, err := tx.GetAppUser(ctx, app.ID, ch.AppUserID); err == nil {
		langs = userLanguages(u)
	}
	return s.queueNotice(ctx, tx, app, id, courier.TemplateCodeLocked, courier.Vars{}, langs)
}

func validCode(code string) bool {
	if len(code) != codeDigits {
		return false
	}
	for _, r := range code {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
