package signin

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/sendqueue"
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

// verificationData is a verification event's data (interface §6.4). It never
// holds the code or the link.
func verificationData(ch store.Challenge, confirmedAt *time.Time, extra map[string]any) map[string]any {
	channel := channelOf(ch)
	browser, os := DescribeUserAgent(ch.UserAgent)
	meta := map[string]any{"delivery_method": channel, "ticket_id": ch.ID, "method": ch.Method, "user_id": ch.AppUserID}
	if channel == "email" {
		meta["contact_email"] = ch.Recipient
	} else {
		meta["contact_phone"] = ch.Recipient
	}
	timing := map[string]any{"sent_at": ch.CreatedAt, "opened_at": nil, "confirmed_at": nil, "time_to_verify_seconds": nil}
	if confirmedAt != nil {
		timing["opened_at"], timing["confirmed_at"] = *confirmedAt, *confirmedAt
		timing["time_to_verify_seconds"] = int(confirmedAt.Sub(ch.CreatedAt).Seconds())
	}
	d := map[string]any{
		"verification_id": ch.ID,
		"intent":          verificationIntent(ch),
		"meta_data":       meta,
		"timing":          timing,
		"device":          map[string]any{"os": os, "browser": browser},
		"ip_address":      ch.IP,
	}
	for k, v := range extra {
		d[k] = v
	}
	return markTest(d, ch)
}

// markTest adds "test": true to the data of an event about ch when its user
// is a test user (challengeData.Test), as every event about a test
// identity carries.
func markTest(d map[string]any, ch store.Challenge) map[string]any {
	if decodeData(ch).Test {
		d["test"] = true
	}
	return d
}

// emitVerification emits verification.{channel}.{outcome} for a code or
// link challenge, with the challenge event the outcome means (created,
// completed or failed) in the same write.
func (s *Service) emitVerification(ctx context.Context, tx *store.Tx, ch store.Challenge, outcome string, confirmedAt *time.Time, extra map[string]any) error {
	return s.events.EmitMany(ctx, tx, ch.AppID, verificationEvents(ch, outcome, confirmedAt, extra)...)
}

// verificationEvents are the events emitVerification emits.
func verificationEvents(ch store.Challenge, outcome string, confirmedAt *time.Time, extra map[string]any) []webhook.Event {
	events := []webhook.Event{{Type: webhook.Verification(channelOf(ch), outcome),
		Build: func() any { return verificationData(ch, confirmedAt, extra) }}}
	switch outcome {
	case webhook.OutcomeRequested:
		events = append(events, challengeEvent(ch, webhook.ChallengeCreated, store.ChallengePending, nil))
	case webhook.OutcomeVerified:
		events = append(events, challengeEvent(ch, webhook.ChallengeCompleted, store.ChallengeCompleted, map[string]any{"completed_at": confirmedAt}))
	case webhook.OutcomeFailed:
		events = append(events, challengeEvent(ch, webhook.ChallengeFailed, store.ChallengeFailed, map[string]any{"reason": "too_many_attempts"}))
	case webhook.OutcomeExpired:
		events = append(events, challengeEvent(ch, webhook.ChallengeFailed, store.ChallengeExpired, map[string]any{"reason": "expired"}))
	case webhook.OutcomeDenied:
		events = append(events, challengeEvent(ch, webhook.ChallengeFailed, store.ChallengeDenied, map[string]any{"reason": "denied"}))
	}
	return events
}

// challengeEvent is a challenge.* event: what the challenge is, for whom,
// from where, and its status (never its code, token or link); its data is
// made only if an endpoint subscribes.
func challengeEvent(ch store.Challenge, typ, status string, extra map[string]any) webhook.Event {
	return webhook.Event{Type: typ, Build: func() any { return challengeEventData(ch, status, extra) }}
}

func challengeEventData(ch store.Challenge, status string, extra map[string]any) map[string]any {
	browser, os := DescribeUserAgent(ch.UserAgent)
	d := map[string]any{
		"challenge_id": ch.ID, "purpose": ch.Purpose, "method": ch.Method, "user_id": ch.AppUserID,
		"intent": ch.Intent, "status": status, "ip_address": ch.IP, "device": map[string]any{"os": os, "browser": browser},
		"created_at": ch.CreatedAt, "expires_at": ch.ExpiresAt,
	}
	cd := decodeData(ch)
	if cd.Custom != nil {
		d["data"] = cd.Custom
	}
	if cd.Test {
		d["test"] = true
	}
	for k, v := range extra {
		d[k] = v
	}
	return d
}

// emitChallenge emits one challenge.* event, with events of the same change.
func (s *Service) emitChallenge(ctx context.Context, tx *store.Tx, ch store.Challenge, typ, status string, extra map[string]any, more ...webhook.Event) error {
	return s.events.EmitMany(ctx, tx, ch.AppID, append([]webhook.Event{challengeEvent(ch, typ, status, extra)}, more...)...)
}

// afterWrongAnswer emits what a wrong answer to ch means, inside the
// transaction that spent the attempt: auth.login.failed for a sign-in, and
// when it was the last attempt (status failed) challenge.failed, with
// verification.{channel}.failed for a code.
func (s *Service) afterWrongAnswer(ctx context.Context, tx *store.Tx, ch store.Challenge, status, reason string, now time.Time) error {
	var events []webhook.Event
	if ch.Purpose == PurposeAuthenticate || ch.Purpose == PurposeMFA {
		events = append(events, webhook.Event{Type: webhook.AuthLoginFailed, Data: markTest(map[string]any{
			"user_id": ch.AppUserID, "method": ch.Method, "verification_id": ch.ID, "reason": reason, "ip_address": ch.IP,
			"purpose": ch.Purpose}, ch)})
	}
	if status == store.ChallengeFailed {
		if delivered(ch.Method) {
			events = append(events, webhook.Event{Type: webhook.Verification(channelOf(ch), webhook.OutcomeFailed),
				Data: verificationData(ch, nil, map[string]any{"attempts": codeAttempts})})
		}
		events = append(events, challengeEvent(ch, webhook.ChallengeFailed, store.ChallengeFailed,
			map[string]any{"reason": "too_many_attempts", "failed_at": now}))
	}
	return s.events.EmitMany(ctx, tx, ch.AppID, events...)
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
	return s.events.Emit(ctx, tx, ch.AppID, webhook.AuthLoginFailed, markTest(map[string]any{
		"user_id": ch.AppUserID, "method": ch.Method, "verification_id": ch.ID, "reason": reason, "ip_address": ch.IP,
	}, ch))
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
		(version == "" || sendqueue.Fingerprint(ch.SecretHash) == version), nil
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
	return s.emitVerification(ctx, tx, ch, webhook.OutcomeDeliveryFailed, nil,
		map[string]any{"error": "the message provider did not accept the message", "channel": channelOf(ch)})
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
	// So are the SMS guard's waits of quiet numbers and its ended windows.
	if err := s.users.PruneSMSGuard(ctx); err != nil {
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
					if err := s.emitChallenge(ctx, tx, ch, webhook.ChallengeFailed, store.ChallengeExpired, map[string]any{"reason": "expired"}); err != nil {
						return err
					}
					continue
				}
				if err := s.emitVerification(ctx, tx, ch, webhook.OutcomeExpired, nil, map[string]any{"was_opened": false}); err != nil {
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
