package signin

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
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
		"intent":          "login",
		"meta_data":       meta,
		"timing":          timing,
		"device":          map[string]any{"os": os, "browser": browser},
		"ip_address":      ch.IP,
	}
	for k, v := range extra {
		d[k] = v
	}
	return d
}

// emitVerification emits verification.{channel}.{outcome} for a challenge.
func (s *Service) emitVerification(ctx context.Context, tx *store.Tx, ch store.Challenge, outcome string, confirmedAt *time.Time, extra map[string]any) error {
	return s.events.Emit(ctx, tx, ch.AppID, webhook.Verification(channelOf(ch), outcome), verificationData(ch, confirmedAt, extra))
}

// emitLoginFailed emits auth.login.failed.
func (s *Service) emitLoginFailed(ctx context.Context, tx *store.Tx, ch store.Challenge, reason string) error {
	return s.events.Emit(ctx, tx, ch.AppID, webhook.AuthLoginFailed, map[string]any{
		"user_id": ch.AppUserID, "method": ch.Method, "verification_id": ch.ID, "reason": reason, "ip_address": ch.IP,
	})
}

// deliveryFailed records that a code or link could not be handed to the provider.
func (s *Service) deliveryFailed(ctx context.Context, ch store.Challenge) {
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		return s.emitVerification(ctx, tx, ch, webhook.OutcomeDeliveryFailed, nil,
			map[string]any{"error": "the message provider did not accept the message", "channel": channelOf(ch)})
	})
	if err != nil {
		s.log.ErrorContext(ctx, "record delivery failure", "challenge_id", ch.ID, "err", err)
	}
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
