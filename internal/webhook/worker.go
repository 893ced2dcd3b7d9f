package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

// Delivery limits (interface §8).
const (
	// AttemptTimeout bounds one attempt: connect, TLS, request and response.
	AttemptTimeout = 10 * time.Second
	// maxResponseRead is how much of a response is read; responseKept is how much is stored.
	maxResponseRead = 64 << 10
	responseKept    = 1 << 10
	// perEndpoint bounds concurrent attempts to one endpoint, so one slow
	// endpoint cannot occupy every worker.
	perEndpoint = 4
)

// Backoff is the wait before retry n (1-based): base × 4^(n−1), at most 24 h,
// with ±20 % jitter derived from the delivery id (so it is reproducible).
func Backoff(base time.Duration, deliveryID string, n int) time.Duration {
	d := base
	for i := 1; i < n && d < 24*time.Hour; i++ {
		d *= 4
	}
	d = min(d, 24*time.Hour)
	h := sha256.Sum256(fmt.Appendf(nil, "%s/%d", deliveryID, n))
	frac := float64(binary.BigEndian.Uint32(h[:4]))/float64(1<<32)*0.4 - 0.2
	return d + time.Duration(float64(d)*frac)
}

// Worker makes delivery attempts.
type Worker struct {
	river.WorkerDefaults[DeliverArgs]
	db        *store.DB
	sealer    *token.Sealer
	client    *http.Client
	retryBase time.Duration
	now       func() time.Time
	log       *slog.Logger
	gate      endpointGate
}

// WorkerDeps are the Worker's collaborators.
type WorkerDeps struct {
	DB        *store.DB
	Sealer    *token.Sealer
	Policy    Policy
	RetryBase time.Duration
	Now       func() time.Time
	Log       *slog.Logger
}

// NewWorker returns a delivery worker.
func NewWorker(d WorkerDeps) *Worker {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.RetryBase <= 0 {
		d.RetryBase = 5 * time.Second
	}
	return &Worker{db: d.DB, sealer: d.Sealer, client: d.Policy.Client(AttemptTimeout), retryBase: d.RetryBase,
		now: d.Now, log: d.Log, gate: endpointGate{n: map[string]int{}, free: make(chan struct{})}}
}

// Timeout is the attempt's deadline plus room for the database.
func (w *Worker) Timeout(*river.Job[DeliverArgs]) time.Duration {
	return AttemptTimeout + 5*time.Second
}

// NextRetry schedules the next attempt after a retryable failure.
func (w *Worker) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	return w.now().Add(Backoff(w.retryBase, job.Args.DeliveryID, job.Attempt))
}

// Work makes one attempt. 2xx delivers; 3xx and 4xx fail for good (redirects
// are not followed); 5xx, timeouts and connection or TLS errors are retried
// until the endpoint's retry limit is spent.
func (w *Worker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	work, err := w.db.GetDeliveryWork(ctx, job.Args.DeliveryID)
	if errors.Is(err, store.ErrNotFound) {
		return river.JobCancel(errors.New("delivery no longer exists"))
	}
	if err != nil {
		return err
	}
	if work.Delivery.Status == store.DeliveryDelivered {
		return nil // delivered before a crash kept River from recording it
	}
	if !w.gate.enter(ctx, work.Endpoint.ID, gateWait) {
		return river.JobSnooze(gateWait)
	}
	defer w.gate.leave(work.Endpoint.ID)

	now := w.now().UTC()
	if work.Delivery.Status == store.DeliveryProcessing && work.Delivery.Attempts > 0 {
		// The previous attempt never finished: its server stopped mid-flight.
		// Record it, so every attempt shows in the history.
		lost := store.WebhookAttempt{ID: uuid.Must(uuid.NewV7()).String(), DeliveryID: work.Delivery.ID,
			Attempt: work.Delivery.Attempts, StartedAt: work.Delivery.UpdatedAt, Error: "interrupted: the server stopped during the attempt"}
		err := w.db.Tx(context.WithoutCancel(ctx), func(tx *store.Tx) error {
			return tx.FinishDeliveryAttempt(context.WithoutCancel(ctx), lost, store.DeliveryProcessing, nil, now)
		})
		if err != nil {
			return err
		}
	}
	attempt, err := w.db.StartDeliveryAttempt(ctx, work.Delivery.ID, now)
	if err != nil {
		return err
	}
	rec := store.WebhookAttempt{ID: uuid.Must(uuid.NewV7()).String(), DeliveryID: work.Delivery.ID, Attempt: attempt, StartedAt: now}
	status, retry := w.attempt(ctx, work, &rec)
	rec.DurationMs = w.now().Sub(now).Milliseconds()

	var next *time.Time
	final := status == store.DeliveryDelivered || !retry || job.Attempt >= job.MaxAttempts || attempt >= work.Delivery.MaxAttempts
	if !final {
		t := w.now().Add(Backoff(w.retryBase, job.Args.DeliveryID, job.Attempt)).UTC()
		next = &t
	}
	// Recorded even when the attempt ran out of time or the queue is
	// stopping: otherwise the delivery would stay "processing" with no attempt.
	dbCtx := context.WithoutCancel(ctx)
	err = w.db.Tx(dbCtx, func(tx *store.Tx) error {
		return tx.FinishDeliveryAttempt(dbCtx, rec, status, next, w.now().UTC())
	})
	if err != nil {
		return err
	}
	switch {
	case status == store.DeliveryDelivered:
		return nil
	case final:
		return river.JobCancel(errors.New(rec.Error))
	}
	return errors.New(rec.Error)
}

// attempt signs and sends the envelope once and classifies the outcome. The
// recorded error never includes a resolved address or a dial error's text.
func (w *Worker) attempt(ctx context.Context, work store.DeliveryWork, rec *store.WebhookAttempt) (status string, retry bool) {
	if !work.Endpoint.Enabled {
		rec.Error = "endpoint disabled"
		return store.DeliveryFailed, false
	}
	secrets, err := w.secrets(work.Endpoint)
	if err != nil {
		rec.Error = "signing secret unavailable"
		return store.DeliveryFailed, false
	}
	ctx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, work.Endpoint.URL, bytes.NewReader(work.Body))
	if err != nil {
		rec.Error = "invalid endpoint url"
		return store.DeliveryFailed, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent(work.AppName))
	// A fresh timestamp on every attempt; one v1= per valid secret.
	req.Header.Set(webhookverify.Header, webhookverify.Sign(work.Body, w.now(), secrets...))
	resp, err := w.client.Do(req)
	if err != nil {
		rec.Error = describe(err)
		return store.DeliveryFailed, true
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseRead))
	code := resp.StatusCode
	rec.ResponseStatus = &code
	rec.ResponseBody = excerpt(raw)
	switch {
	case code >= 200 && code <= 299:
		return store.DeliveryDelivered, false
	case code >= 300 && code <= 399:
		rec.Error = fmt.Sprintf("redirect (%d) not followed", code)
		return store.DeliveryFailed, false
	case code >= 400 && code <= 499:
		rec.Error = fmt.Sprintf("endpoint answered %d", code)
		return store.DeliveryFailed, false
	}
	rec.Error = fmt.Sprintf("endpoint answered %d", code)
	return store.DeliveryFailed, true
}

// secrets opens the endpoint's signing secret and, during a rotation, the previous one.
func (w *Worker) secrets(ep store.WebhookEndpoint) ([]string, error) {
	cur, err := w.sealer.Open(ep.SecretSealed, secretAD(ep.ID))
	if err != nil {
		return nil, err
	}
	out := []string{string(cur)}
	if ep.PreviousSecretSealed != nil && ep.PreviousExpiresAt != nil && w.now().Before(*ep.PreviousExpiresAt) {
		if prev, err := w.sealer.Open(ep.PreviousSecretSealed, secretAD(ep.ID)); err == nil {
			out = append(out, string(prev))
		}
	}
	return out, nil
}

func secretAD(endpointID string) []byte { return []byte("webhook-secret:" + endpointID) }

func userAgent(appName string) string {
	name := strings.Map(func(r rune) rune {
		if r < 0x21 || r > 0x7e || r == '/' || r == '(' || r == ')' {
			return '-'
		}
		return r
	}, appName)
	if name == "" {
		name = "Gatehouse"
	}
	return name + "-Webhooks/1.0"
}

// describe names a transport failure without revealing internal addresses.
func describe(err error) string {
	var netErr net.Error
	switch {
	case IsRefused(err):
		return "refused: non-public address"
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return fmt.Sprintf("timed out after %s", AttemptTimeout)
	case errors.As(err, new(handshakeError)):
		return "TLS handshake failed"
	case errors.Is(err, errHostNotFound):
		return "host not found"
	}
	return "connection failed"
}

// excerpt keeps the first KiB of a response, cut on a UTF-8 boundary.
func excerpt(b []byte) string {
	// PostgreSQL text cannot hold NUL: storing one would fail the attempt's
	// record and leave the delivery in "processing" while River re-sends it.
	b = bytes.ReplaceAll(b, []byte{0}, []byte("\uFFFD"))
	if len(b) > responseKept {
		b = b[:responseKept]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
	}
	if !utf8.Valid(b) {
		return ""
	}
	return string(b)
}

// gateWait is how long a job waits for its endpoint's slot before going back
// to the queue, so a busy endpoint is drained steadily without one endpoint
// occupying every worker.
const gateWait = 250 * time.Millisecond

// endpointGate counts attempts in flight per endpoint (per process).
type endpointGate struct {
	mu   sync.Mutex
	n    map[string]int
	free chan struct{} // signalled when any slot is released
}

func (g *endpointGate) enter(ctx context.Context, id string, wait time.Duration) bool {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		if g.n[id] < perEndpoint {
			g.n[id]++
			g.mu.Unlock()
			return true
		}
		free := g.free
		g.mu.Unlock()
		select {
		case <-free:
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (g *endpointGate) leave(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n[id]--; g.n[id] <= 0 {
		delete(g.n, id)
	}
	close(g.free) // wake every waiter; each re-checks its own endpoint
	g.free = make(chan struct{})
}
