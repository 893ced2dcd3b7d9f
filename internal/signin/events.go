package signin

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// channelOf is the verification channel of a challenge: "email" or "sms".
func channelOf(ch store.Challenge) string {
	if ch.Method == MethodSMSOTP || (ch.Recipient != "" && ch.Recipient[0] == '+') {
		return "sms"
	}
	return "email"
}

// verificationData is what every verification event of ch carries
// (interface §6.4). It never holds the code or the link.
func verificationData(ch store.Challenge, confirmedAt *time.Time) webhook.VerificationData {
	channel := channelOf(ch)
	browser, os := DescribeUserAgent(ch.UserAgent)
	meta := webhook.VerificationMeta{DeliveryMethod: channel, TicketID: ch.ID, Method: ch.Method, UserID: ch.AppUserID}
	if recipient := ch.Recipient; channel == "email" {
		meta.ContactEmail = &recipient
	} else {
		meta.ContactPhone = &recipient
	}
	timing := webhook.VerificationTiming{SentAt: ch.CreatedAt}
	if confirmedAt != nil {
		at, seconds := *confirmedAt, int(confirmedAt.Sub(ch.CreatedAt).Seconds())
		timing.OpenedAt, timing.ConfirmedAt, timing.TimeToVerifySeconds = &at, &at, &seconds
	}
	return webhook.VerificationData{VerificationID: ch.ID, Intent: verificationIntent(ch), MetaData: meta, Timing: timing,
		Device: webhook.EventDevice{OS: os, Browser: browser}, IPAddress: ch.IP, Test: decodeData(ch).Test}
}

// consent is how the recipient answered a magic link's consent page, for
// the verified or denied event it causes.
type consent struct {
	denialReason string // empty: approved
	by           webhook.DecidedBy
}

// emitVerification emits verification.{channel}.{outcome} for a code or
// link challenge, with the challenge event the outcome means (created,
// completed or failed) in the same write. c is the consent page's answer
// that caused it, if any.
func (s *Service) emitVerification(ctx context.Context, tx *store.Tx, ch store.Challenge, outcome string, confirmedAt *time.Time, c *consent) error {
	return s.events.EmitMany(ctx, tx, ch.AppID, verificationEvents(ch, outcome, confirmedAt, c)...)
}

// verificationEvents are the events emitVerification emits.
func verificationEvents(ch store.Challenge, outcome string, confirmedAt *time.Time, c *consent) []webhook.Event {
	events := []webhook.Event{{Type: webhook.Verification(channelOf(ch), outcome),
		Build: func() webhook.Payload { return verificationPayload(ch, outcome, confirmedAt, c) }}}
	switch outcome {
	case webhook.OutcomeRequested:
		events = append(events, challengeCreated(ch, ""))
	case webhook.OutcomeVerified:
		events = append(events, challengeCompleted(ch, *confirmedAt, ""))
	case webhook.OutcomeFailed:
		events = append(events, challengeFailed(ch, store.ChallengeFailed, "too_many_attempts", nil, ""))
	case webhook.OutcomeExpired:
		events = append(events, challengeFailed(ch, store.ChallengeExpired, "expired", nil, ""))
	case webhook.OutcomeDenied:
		events = append(events, challengeFailed(ch, store.ChallengeDenied, "denied", nil, ""))
	}
	return events
}

// verificationPayload is the data of verification.{channel}.{outcome}: what
// every verification event carries and what its outcome adds.
func verificationPayload(ch store.Challenge, outcome string, confirmedAt *time.Time, c *consent) webhook.Payload {
	v := verificationData(ch, confirmedAt)
	switch outcome {
	case webhook.OutcomeVerified:
		d := webhook.VerificationVerifiedData{VerificationData: v}
		if c != nil {
			d.ConsentDecision, d.DecidedBy = "approved", &c.by
		}
		return d
	case webhook.OutcomeDenied:
		return webhook.VerificationDeniedData{VerificationData: v, ConsentDecision: "denied", DenialReason: c.denialReason, DecidedBy: c.by}
	case webhook.OutcomeExpired:
		return webhook.VerificationExpiredData{VerificationData: v, WasOpened: false}
	case webhook.OutcomeFailed:
		return webhook.VerificationFailedData{VerificationData: v, Attempts: codeAttempts}
	case webhook.OutcomeDeliveryFailed:
		return webhook.VerificationDeliveryFailedData{VerificationData: v,
			Error: "the message provider did not accept the message", Channel: channelOf(ch)}
	}
	return webhook.VerificationRequestedData{VerificationData: v}
}

// challengeBase is what every challenge.* event of ch carries: what the
// challenge is, for whom, from where, and its status (never its code, token
// or link).
func challengeBase(ch store.Challenge, status string) webhook.ChallengeData {
	browser, os := DescribeUserAgent(ch.UserAgent)
	cd := decodeData(ch)
	return webhook.ChallengeData{ChallengeID: ch.ID, Purpose: ch.Purpose, Method: ch.Method, UserID: ch.AppUserID,
		Intent: ch.Intent, Status: status, IPAddress: ch.IP, Device: webhook.EventDevice{OS: os, Browser: browser},
		CreatedAt: ch.CreatedAt, ExpiresAt: ch.ExpiresAt, Data: cd.Custom, Test: cd.Test, Provider: cd.Provider}
}

// challengeCreated, challengeCompleted and challengeFailed are the
// challenge.* events of ch; their data is made only if an endpoint
// subscribes. firstFactor names a sign-in's first factor; approvedBy and
// deniedBy the session that answered a push.
func challengeCreated(ch store.Challenge, firstFactor string) webhook.Event {
	return webhook.Event{Type: webhook.ChallengeCreated, Build: func() webhook.Payload {
		return webhook.ChallengeCreatedData{ChallengeData: challengeBase(ch, store.ChallengePending), FirstFactor: firstFactor}
	}}
}

func challengeCompleted(ch store.Challenge, at time.Time, approvedBy string) webhook.Event {
	return webhook.Event{Type: webhook.ChallengeCompleted, Build: func() webhook.Payload {
		return webhook.ChallengeCompletedData{ChallengeData: challengeBase(ch, store.ChallengeCompleted), CompletedAt: at, ApprovedBySession: approvedBy}
	}}
}

func challengeFailed(ch store.Challenge, status, reason string, failedAt *time.Time, deniedBy string) webhook.Event {
	return webhook.Event{Type: webhook.ChallengeFailed, Build: func() webhook.Payload {
		return webhook.ChallengeFailedData{ChallengeData: challengeBase(ch, status), Reason: reason, FailedAt: failedAt, DeniedBySession: deniedBy}
	}}
}

// emitChallenge emits one challenge.* event of ch.
func (s *Service) emitChallenge(ctx context.Context, tx *store.Tx, ch store.Challenge, ev webhook.Event) error {
	return s.events.EmitMany(ctx, tx, ch.AppID, ev)
}

// afterWrongAnswer emits what a wrong answer to ch means, inside the
// transaction that spent the attempt: auth.login.failed for a sign-in, and
// when it was the last attempt (status failed) challenge.failed, with
// verification.{channel}.failed for a code.
func (s *Service) afterWrongAnswer(ctx context.Context, tx *store.Tx, ch store.Challenge, status, reason string, now time.Time) error {
	var events []webhook.Event
	if ch.Purpose == PurposeAuthenticate || ch.Purpose == PurposeMFA {
		d := loginFailed(ch, reason)
		d.Purpose = ch.Purpose
		events = append(events, webhook.Event{Type: webhook.AuthLoginFailed, Data: d})
	}
	if status == store.ChallengeFailed {
		if delivered(ch.Method) {
			events = append(events, webhook.Event{Type: webhook.Verification(channelOf(ch), webhook.OutcomeFailed),
				Data: verificationPayload(ch, webhook.OutcomeFailed, nil, nil)})
		}
		events = append(events, challengeFailed(ch, store.ChallengeFailed, "too_many_attempts", &now, ""))
	}
	return s.events.EmitMany(ctx, tx, ch.AppID, events...)
}

// loginFailed is auth.login.failed's data for a wrong answer to ch.
func loginFailed(ch store.Challenge, reason string) webhook.LoginFailedData {
	return webhook.LoginFailedData{UserID: ch.AppUserID, Method: ch.Method, VerificationID: ch.ID, Reason: reason,
		IPAddress: ch.IP, Test: decodeData(ch).Test}
}

// verificationIntent is a verification event's intent: the app's own, or
// what the purpose means.
func verificationIntent(ch store.Challenge) string {
	switch {
	case ch.Intent != "":
		return ch.Intent
	case ch.Purpose == "" || ch.Purpose == PurposeAuthenticate:
		return "login"
	}
	return ch.Purpose
}

// emitLoginFailed emits auth.login.failed.
func (s *Service) emitLoginFailed(ctx context.Context, tx *store.Tx, ch store.Challenge, reason string) error {
	return s.events.Emit(ctx, tx, ch.AppID, webhook.AuthLoginFailed, loginFailed(ch, reason))
}

// Deliverable reports whether the send queue should still send the message
// of a challenge: it is pending, unexpired and still has the secret the
// message carries (a resend replaces it). Nothing else is worth sending.
func (s *Service) Deliverable(ctx context.Context, appID, challengeID, version string) (bool, error) {
	ch, err := s.db.GetChallenge(ctx, appID, challengeID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return ch.Status == store.ChallengePending && s.clock().Before(ch.ExpiresAt) &&
		(version == "" || outbound.Fingerprint(ch.SecretHash) == version), nil
}

// DeliveryFailed records, inside the send queue's tx, that a challenge's
// code or link could not be handed to the provider: verification.{channel}.
// delivery_failed, with a generic error (never the provider's text).
func (s *Service) DeliveryFailed(ctx context.Context, tx *store.Tx, appID, challengeID string) error {
	ch, err := tx.GetChallenge(ctx, appID, challengeID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.emitVerification(ctx, tx, ch, webhook.OutcomeDeliveryFailed, nil, nil)
}

// ExpireChallenges closes every pending challenge whose time ran out and
// emits verification.{channel}.expired for each, in the same transaction, so
// the event fires even when a link is never opened and survives restarts.
// It also deletes the records of wrong codes that have left the window of
// the hourly budget.
func (s *Service) ExpireChallenges(ctx context.Context) (err error) {
	defer errs.Wrap(&err, "expire challenges")
	// Wrong codes older than the budget's window no longer count.
	if err := s.db.PruneCodeFailures(ctx, s.clock().Add(-codeFailureWindow)); err != nil {
		return err
	}
	// Passkey ceremonies nobody finished in time are only clutter.
	if err := s.prunePasskeyCeremonies(ctx); err != nil {
		return err
	}
	// And social sign-ins that never came back from their provider.
	if err := s.db.PruneOAuthStates(ctx, s.clock()); err != nil {
		return err
	}
	// So are the SMS guard's waits of quiet numbers and its ended windows.
	if err := s.out.Prune(ctx); err != nil {
		return err
	}
	const batch = 200
	for {
		var n int
		err := s.db.Tx(ctx, func(tx *store.Tx) error {
			expired, err := tx.ExpireChallenges(ctx, s.clock(), batch)
			if err != nil {
				return err
			}
			n = len(expired)
			for _, ch := range expired {
				if !delivered(ch.Method) || decodeData(ch).Undelivered { // nothing was sent: no verification event
					if err := s.emitChallenge(ctx, tx, ch, challengeFailed(ch, store.ChallengeExpired, "expired", nil, "")); err != nil {
						return err
					}
					continue
				}
				if err := s.emitVerification(ctx, tx, ch, webhook.OutcomeExpired, nil, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || n < batch {
			return err
		}
	}
}

// ExpiryArgs is the periodic job that expires challenges.
type ExpiryArgs struct{}

// Kind names the job for River.
func (ExpiryArgs) Kind() string { return "challenge_expiry" }

// ExpiryWorker runs ExpireChallenges.
type ExpiryWorker struct {
	river.WorkerDefaults[ExpiryArgs]
	s *Service
}

// NewExpiryWorker returns the worker of the expiry sweep.
func NewExpiryWorker(s *Service) *ExpiryWorker { return &ExpiryWorker{s: s} }

// Work expires what is due.
func (w *ExpiryWorker) Work(ctx context.Context, _ *river.Job[ExpiryArgs]) error {
	return w.s.ExpireChallenges(ctx)
}

// ExpiryJob runs the sweep every interval on the elected leader.
func ExpiryJob(interval time.Duration, queue string) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval), func() (river.JobArgs, *river.InsertOpts) {
		return ExpiryArgs{}, &river.InsertOpts{Queue: queue, MaxAttempts: 3}
	}, &river.PeriodicJobOpts{RunOnStart: true})
}
