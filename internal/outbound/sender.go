package outbound

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// The Sender sends what Queue committed. The process that committed a
// message tries it at once (the direct try: no poll, no fetch, no wait for a
// worker), then deletes its row, a few rows per statement. The row is the
// fallback: it is due Lease after it was queued, so a message whose direct
// try never ended (the process stopped, the hand-off was full) is claimed by
// some replica's sweep then, and a failed try is put back with its backoff.
// Delivery is at least once: a process killed between a provider's answer
// and the row's delete sends that message again.

// Lease is how long a message that a process is trying (or is about to try
// directly) stays its own: the row is due again only after it. A try ends
// within AttemptTimeout, and a direct try is begun only within
// directWindow of the commit, so no other sweep takes it meanwhile.
const Lease = AttemptTimeout + directWindow + 5*time.Second

// directWindow bounds the wait in the hand-off: a message handed over
// longer ago than this is left for the sweep, whose claim comes after the
// lease.
const directWindow = 10 * time.Second

// FailedKept is how long a message given up is kept (with its last error)
// for the operator to see.
const FailedKept = 7 * 24 * time.Hour

// sweepBatch is how many due messages one claim takes.
const sweepBatch = 32

// deleteBatch and deleteDelay bound how sent messages' rows are deleted:
// together, at most deleteDelay after the first of them was sent.
const (
	deleteBatch = 128
	deleteDelay = 20 * time.Millisecond
)

// handoff is a committed message offered to this process's Sender.
type handoff struct {
	row store.QueuedMessage
	msg *courier.Message // nil: unseal row.Sealed
	at  time.Time        // when it was handed over (direct) or claimed (sweep)
	// supersedes is the message's Ref.Supersedes (direct hand-offs only).
	supersedes string
	// due is when a claimed row was due (sweep only).
	due time.Time
}

// Sender tries queued messages: directly, as their transactions commit in
// this process, and from its sweep of the due ones.
type Sender struct {
	db         *store.DB
	queue      *Queue
	sealer     *token.Sealer
	provider   courier.Provider
	challenges Challenges
	workers    int
	poll       time.Duration
	base, cap  time.Duration
	now        func() time.Time
	log        *slog.Logger

	wake   chan struct{}
	waited func(channel string, direct bool, d time.Duration)
}

// SenderDeps are the Sender's collaborators.
type SenderDeps struct {
	DB *store.DB
	// Queue is the queue whose direct hand-offs this Sender takes.
	Queue  *Queue
	Sealer *token.Sealer
	// Provider sends every message (a per-app router, say).
	Provider   courier.Provider
	Challenges Challenges
	// Workers bounds the tries in flight (messages.workers; 0 means 16).
	Workers int
	// Poll bounds how long the sweep sleeps before it looks for due
	// messages again (messages.poll_interval; 0 means 2 s): how late a
	// message another process left unsent is noticed once it is due.
	Poll time.Duration
	// RetryBase and RetryMax shape the backoff (0 means 2 s and 1 min).
	RetryBase, RetryMax time.Duration
	Now                 func() time.Time
	Log                 *slog.Logger
	// Waited, when set, hears how long each message waited before its
	// provider was called: direct (since queued) or by the sweep (since due).
	Waited func(channel string, direct bool, d time.Duration)
}

// NewSender returns a Sender; Run starts it.
func NewSender(d SenderDeps) *Sender {
	if d.Workers <= 0 {
		d.Workers = 16
	}
	if d.Poll <= 0 {
		d.Poll = 2 * time.Second
	}
	if d.RetryBase <= 0 {
		d.RetryBase = 2 * time.Second
	}
	if d.RetryMax < d.RetryBase {
		d.RetryMax = max(d.RetryBase, time.Minute)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Waited == nil {
		d.Waited = func(string, bool, time.Duration) {}
	}
	return &Sender{waited: d.Waited, db: d.DB, queue: d.Queue, sealer: d.Sealer, provider: d.Provider, challenges: d.Challenges,
		workers: d.Workers, poll: d.Poll, base: d.RetryBase, cap: d.RetryMax, now: d.Now, log: d.Log,
		wake: make(chan struct{}, 1)}
}

// Run sends until ctx ends, then lets the tries in flight finish (each
// within AttemptTimeout), makes the messages handed over but not yet tried
// due at once (another replica's sweep, or this process's next start, sends
// them), deletes the sent ones' rows, and returns.
func (s *Sender) Run(ctx context.Context) {
	if s.queue != nil {
		s.queue.senders.Add(1)
		defer s.queue.senders.Add(-1)
	}
	work, deletes := make(chan handoff), make(chan string, 4*deleteBatch)
	var workers, deleter sync.WaitGroup
	deleter.Go(func() { s.deleteSent(deletes) })
	for range s.workers {
		workers.Go(func() {
			for h := range work {
				s.try(h, deletes)
			}
		})
	}
	s.feed(ctx, work)
	close(work)
	workers.Wait()
	close(deletes)
	deleter.Wait()
	s.handBack()
}

// feed passes the direct hand-offs and the sweep's claims to the workers
// until ctx ends.
func (s *Sender) feed(ctx context.Context, work chan<- handoff) {
	var hand <-chan handoff
	if s.queue != nil {
		hand = s.queue.handoff
	}
	claimed := make(chan []handoff)
	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
		s.sweep(ctx, claimed)
	}()
	defer func() { <-sweepDone }()
	for {
		select {
		case <-ctx.Done():
			return
		case h := <-hand:
			select {
			case work <- h:
			case <-ctx.Done():
				return
			}
		case batch := <-claimed:
			for _, h := range batch {
				select {
				case work <- h:
				case <-ctx.Done():
					return
				}
			}
		}
	}
}

// sweep claims due messages and sleeps until the next is due (at most
// Poll), or until a failed try scheduled a retry.
func (s *Sender) sweep(ctx context.Context, claimed chan<- []handoff) {
	var purged time.Time
	for {
		// One cheap read when nothing is due (an idle server): the claim
		// runs only when a message is.
		now := s.now()
		next, ok, err := s.db.NextMessageDue(ctx)
		if err == nil && ok && !next.After(now) {
			var rows []store.QueuedMessage
			rows, err = s.db.ClaimDueMessages(ctx, now, now.Add(Lease), sweepBatch)
			if err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "send queue: due messages not claimed", "err", err)
			}
			if len(rows) > 0 {
				batch := make([]handoff, len(rows))
				for i, r := range rows {
					batch[i] = handoff{row: r, at: now, due: next}
				}
				select {
				case claimed <- batch:
				case <-ctx.Done():
					return
				}
				continue // what is due next, now that these are leased
			}
			// None claimed (another replica's sweep holds them, or the
			// database failed): look again after the shortest wait.
			ok, next = err == nil, now
		}
		if now.Sub(purged) > time.Hour {
			if _, err := s.db.PurgeFailedMessages(ctx, now.Add(-FailedKept)); err == nil {
				purged = now
			}
		}
		wait := s.poll
		if err == nil && ok {
			wait = min(max(next.Sub(now), 5*time.Millisecond), s.poll)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// try sends one message and records the outcome.
func (s *Sender) try(h handoff, deletes chan<- string) {
	ctx := context.Background()
	r := h.row
	attrs := []any{"app_id", r.AppID, "message", r.What, "channel", r.Channel, "to", r.Recipient, "message_id", r.ID, "attempt", r.Attempts}
	if h.supersedes != "" && s.queue != nil {
		defer s.queue.newest.CompareAndDelete(h.supersedes, r.ChallengeID)
	}
	if s.now().Sub(h.at) > directWindow {
		// Waited too long for a worker: the lease may be near its end, so
		// the row's next claim tries it instead.
		return
	}
	switch {
	case h.supersedes != "" && s.queue != nil:
		// A direct try of a message whose challenge this process has just
		// committed: it is pending unless a newer one of the same kind,
		// committed here since, superseded it (a send retried by the
		// client: a double click, a cut connection).
		attrs = append(attrs, "challenge_id", r.ChallengeID)
		if v, ok := s.queue.newest.Load(h.supersedes); ok && v != r.ChallengeID {
			s.log.InfoContext(ctx, "message not sent: its challenge is no longer pending", attrs...)
			deletes <- r.ID
			return
		}
	case r.ChallengeID != "":
		// Any other try reads the challenge: it may have been answered,
		// replaced or have expired since (or, for a message left by a
		// stopped process, superseded by one sent through another).
		attrs = append(attrs, "challenge_id", r.ChallengeID)
		ok, err := s.challenges.Deliverable(ctx, r.AppID, r.ChallengeID, r.Version)
		if err != nil {
			s.retry(ctx, r, attrs, "the challenge could not be read", 0)
			return
		}
		if !ok {
			s.log.InfoContext(ctx, "message not sent: its challenge is no longer pending", attrs...)
			deletes <- r.ID
			return
		}
	}
	msg := h.msg
	if msg == nil {
		m, err := openRow(s.sealer, r)
		if err != nil {
			s.log.ErrorContext(ctx, "message not sent: it cannot be unsealed", attrs...)
			s.fail(ctx, r, attrs, "the message could not be unsealed")
			return
		}
		msg = &m
	}
	if h.msg != nil {
		s.waited(r.Channel, true, s.now().Sub(r.CreatedAt))
	} else {
		s.waited(r.Channel, false, s.now().Sub(h.due))
	}
	sctx, cancel := context.WithTimeout(ctx, AttemptTimeout-time.Second)
	_, err := s.provider.Send(sctx, *msg)
	cancel()
	if err == nil {
		s.log.DebugContext(ctx, "message sent", attrs...)
		deletes <- r.ID
		return
	}
	reason := describe(err)
	temporary, after := courier.Temporary(err)
	if temporary && r.Attempts < r.MaxAttempts {
		s.retry(ctx, r, attrs, reason, after)
		return
	}
	s.fail(ctx, r, append(attrs, "err", reason, "temporary", temporary), reason)
}

// retry makes r due again after its backoff (or later, when the provider
// asked for it). Should that fail, the lease still ends and the row is
// claimed then.
func (s *Sender) retry(ctx context.Context, r store.QueuedMessage, attrs []any, reason string, after time.Duration) {
	wait := Backoff(s.base, s.cap, int64(hashID(r.ID)), r.Attempts)
	wait = max(wait, min(after, maxRetryAfter))
	s.log.WarnContext(ctx, "message send failed; a retry is scheduled", append(attrs, "err", reason, "retry_in", wait.String())...)
	if err := s.db.RetryMessageAt(ctx, r.ID, s.now().Add(wait), reason); err != nil {
		s.log.WarnContext(ctx, "send queue: retry not scheduled; the message is tried again when its lease ends", append(attrs, "err", err)...)
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// fail gives the message up: delivery_failed for its challenge and the
// row's mark commit together, so it fires once. The log line comes first.
// The row stays a week (FailedKept) with its last error.
func (s *Sender) fail(ctx context.Context, r store.QueuedMessage, attrs []any, reason string) {
	s.log.ErrorContext(ctx, "message not delivered", attrs...)
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if r.ChallengeID != "" {
			if err := s.challenges.DeliveryFailed(ctx, tx, r.AppID, r.ChallengeID); err != nil {
				return err
			}
		}
		return tx.GiveUpMessage(ctx, r.ID, reason, time.Now())
	})
	if err != nil {
		s.log.WarnContext(ctx, "send queue: failed message not recorded; it is tried again when its lease ends", append(attrs, "err", err)...)
	}
}

// deleteSent deletes the rows of sent messages, many per statement, until
// deletes is closed. A delete that fails is tried again with the next
// batch; rows never deleted are sent again when their lease ends.
func (s *Sender) deleteSent(deletes <-chan string) {
	var ids []string
	var timer <-chan time.Time
	flush := func() {
		if len(ids) == 0 {
			return
		}
		if err := s.db.DeleteQueuedMessages(context.Background(), ids); err != nil {
			s.log.Warn("send queue: sent messages' rows not deleted; retried with the next ones", "count", len(ids), "err", err)
			if len(ids) > 4*deleteBatch {
				ids = ids[len(ids)-4*deleteBatch:]
			}
			return
		}
		ids = ids[:0]
	}
	for {
		select {
		case id, ok := <-deletes:
			if !ok {
				flush()
				return
			}
			ids = append(ids, id)
			if len(ids) >= deleteBatch {
				flush()
				timer = nil
			} else if timer == nil {
				timer = time.After(deleteDelay)
			}
		case <-timer:
			flush()
			timer = nil
		}
	}
}

// handBack makes the messages still waiting in the hand-off due at once, so
// that a replica stopping (an upgrade, a scale-down) leaves them to the
// others' next sweep instead of the end of their lease.
func (s *Sender) handBack() {
	if s.queue == nil {
		return
	}
	var ids []string
	for {
		select {
		case h := <-s.queue.handoff:
			ids = append(ids, h.row.ID)
			continue
		default:
		}
		break
	}
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.db.MakeMessagesDue(ctx, ids, s.now()); err != nil {
		s.log.Warn("send queue: messages not handed back; they are sent when their lease ends", "count", len(ids), "err", err)
	}
}

// hashID folds a message id into the number Backoff derives its jitter from.
func hashID(id string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return h.Sum32()
}
