package outbound

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/queue"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// AttemptTimeout bounds one try of a message, the provider's answer
// included. It stays below the shortest rescue delay (webhooks.rescue_after,
// at least 16 s), so a message still being tried is never tried twice.
const AttemptTimeout = 15 * time.Second

// maxRetryAfter bounds how long a provider's Retry-After is honoured.
const maxRetryAfter = time.Hour

// Challenges is what the worker asks of the challenge a message belongs to
// (signin implements it).
type Challenges interface {
	// Deliverable reports whether the message for the challenge is still
	// worth sending: the challenge is pending, has not expired and still
	// has the secret of version.
	Deliverable(ctx context.Context, appID, challengeID, version string) (bool, error)
	// DeliveryFailed records inside tx that the challenge's message will not
	// arrive (verification.{channel}.delivery_failed).
	DeliveryFailed(ctx context.Context, tx *store.Tx, appID, challengeID string) error
}

// Worker sends message jobs.
type Worker struct {
	river.WorkerDefaults[Args]
	db         *store.DB
	sealer     *token.Sealer
	provider   courier.Provider
	challenges Challenges
	base, cap  time.Duration
	log        *slog.Logger
	// retryAfter holds, from a failed try until River asks NextRetry, how
	// long the provider asked to wait.
	retryAfter sync.Map // job id → time.Duration
}

// WorkerDeps are the Worker's collaborators.
type WorkerDeps struct {
	DB     *store.DB
	Sealer *token.Sealer
	// Provider sends every message (a per-app router, say).
	Provider   courier.Provider
	Challenges Challenges
	// RetryBase and RetryMax shape the backoff (messages.retry_base and
	// messages.retry_max); 0 means 2 s and 1 min.
	RetryBase, RetryMax time.Duration
	Log                 *slog.Logger
}

// NewWorker returns a message worker.
func NewWorker(d WorkerDeps) *Worker {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.RetryBase <= 0 {
		d.RetryBase = 2 * time.Second
	}
	if d.RetryMax < d.RetryBase {
		d.RetryMax = max(d.RetryBase, time.Minute)
	}
	return &Worker{db: d.DB, sealer: d.Sealer, provider: d.Provider, challenges: d.Challenges,
		base: d.RetryBase, cap: d.RetryMax, log: d.Log}
}

// Backoff is the wait before retry n (1-based): base × 2^(n−1), at most
// limit, with ±20 % jitter derived from the job id (so it is reproducible).
func Backoff(base, limit time.Duration, jobID int64, n int) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	h := sha256.Sum256(fmt.Appendf(nil, "message/%d/%d", jobID, n))
	frac := float64(binary.BigEndian.Uint32(h[:4]))/float64(1<<32)*0.4 - 0.2
	return d + time.Duration(float64(d)*frac)
}

// Timeout is one try's deadline plus room for the database.
func (w *Worker) Timeout(*river.Job[Args]) time.Duration { return AttemptTimeout }

// NextRetry schedules the next try after a temporary failure: the backoff,
// or later when the provider asked for it. River schedules in real time.
func (w *Worker) NextRetry(job *river.Job[Args]) time.Time {
	wait := Backoff(w.base, w.cap, job.ID, job.Attempt)
	if v, ok := w.retryAfter.LoadAndDelete(job.ID); ok {
		wait = max(wait, min(v.(time.Duration), maxRetryAfter))
	}
	return time.Now().Add(wait)
}

// Work tries to send one message. A message for a challenge that is no
// longer pending (completed, expired, replaced) is dropped unsent. A
// temporary failure is retried (River schedules it by NextRetry); a
// permanent one, or the last try, ends the job and, for a challenge,
// records delivery_failed in the same transaction that completes the job,
// so it fires exactly once.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	a := job.Args
	attrs := []any{"app_id", a.AppID, "message", a.What, "channel", a.Channel, "to", a.To, "job_id", job.ID, "attempt", job.Attempt}
	if a.ChallengeID != "" {
		// Every try, the first included, reads the challenge: a send
		// retried by the client (a double click, a cut connection) makes a
		// new challenge within milliseconds, and the older message, if it
		// went out last, would carry a code that no longer works.
		attrs = append(attrs, "challenge_id", a.ChallengeID)
		ok, err := w.challenges.Deliverable(ctx, a.AppID, a.ChallengeID, a.Version)
		if err != nil {
			return err
		}
		if !ok {
			w.log.InfoContext(ctx, "message not sent: its challenge is no longer pending", attrs...)
			return nil
		}
	}
	msg, err := open(w.sealer, a)
	if err != nil {
		w.log.ErrorContext(ctx, "message not sent: it cannot be unsealed", attrs...)
		return w.fail(ctx, job, attrs, "the message could not be unsealed")
	}
	sctx, cancel := context.WithTimeout(ctx, AttemptTimeout-time.Second)
	_, err = w.provider.Send(sctx, msg)
	cancel()
	if err == nil {
		w.log.DebugContext(ctx, "message sent", attrs...)
		return nil
	}
	reason := describe(err)
	temporary, after := courier.Temporary(err)
	if temporary && job.Attempt < job.MaxAttempts {
		if after > 0 {
			w.retryAfter.Store(job.ID, after)
		}
		w.log.WarnContext(ctx, "message send failed; a retry is scheduled", append(attrs, "err", reason)...)
		return errors.New(reason) // River keeps it with the attempt: no secret in it
	}
	return w.fail(ctx, job, append(attrs, "err", reason, "temporary", temporary), reason)
}

// fail ends the job for good: delivery_failed for its challenge and the
// job's completion commit together. The log line comes first, so that
// whoever sees the job completed finds it (if the commit fails, River
// tries the job again, and it may be logged again).
func (w *Worker) fail(ctx context.Context, job *river.Job[Args], attrs []any, reason string) error {
	w.log.ErrorContext(ctx, "message not delivered", attrs...)
	dbCtx := context.WithoutCancel(ctx)
	err := w.db.Tx(dbCtx, func(tx *store.Tx) error {
		if job.Args.ChallengeID != "" {
			if err := w.challenges.DeliveryFailed(dbCtx, tx, job.Args.AppID, job.Args.ChallengeID); err != nil {
				return err
			}
		}
		return queue.CompleteTx(dbCtx, tx, job)
	})
	if err != nil {
		return fmt.Errorf("record failed message: %w", err)
	}
	return nil
}

// describe names a provider failure for logs and the job's record without
// quoting the provider: its text may echo the message.
func describe(err error) string {
	var se *courier.SendError
	var netErr net.Error
	switch {
	case errors.As(err, &se):
		s := "provider " + se.Provider + " refused the message"
		if se.Status != 0 {
			s += fmt.Sprintf(" (status %d", se.Status)
			if se.Code != "" {
				s += ", code " + safeCode(se.Code)
			}
			s += ")"
		} else if se.Code != "" {
			s += " (code " + safeCode(se.Code) + ")"
		}
		return s
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return "the provider did not answer in time"
	case errors.Is(err, context.Canceled):
		return "the try was interrupted"
	}
	return "the provider did not accept the message"
}

// safeCode keeps a provider's error code only when it looks like one.
func safeCode(c string) string {
	if len(c) > 32 {
		return "?"
	}
	for _, r := range c {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == '-' || r == '.') {
			return "?"
		}
	}
	return c
}
