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

	"github.com/gatehouse-auth/gatehouse/internal/metrics"
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
	// endpoint cannot occupy every worker (nor every slot of its app).
	perEndpoint = 4
	// defaultPerApp is the app share of a Worker built without one.
	defaultPerApp = 8
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
	now       store.Clock
	log       *slog.Logger
	gate      *gate
	metrics   *metrics.Metrics
}

// WorkerDeps are the Worker's collaborators.
type WorkerDeps struct {
	DB        *store.DB
	Sealer    *token.Sealer
	Policy    Policy
	RetryBase time.Duration
	Now       func() time.Time
	Log       *slog.Logger
	// PerApp is the most attempts of one app in flight in this process
	// (webhooks.workers_per_app resolved); 0 means 8.
	PerApp int
	// Metrics counts the attempts by result and times them; nil counts nothing.
	Metrics *metrics.Metrics
}

// NewWorker returns a delivery worker.
func NewWorker(d WorkerDeps) *Worker {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.RetryBase <= 0 {
		d.RetryBase = 5 * time.Second
	}
	if d.PerApp <= 0 {
		d.PerApp = defaultPerApp
	}
	return &Worker{db: d.DB, sealer: d.Sealer, client: d.Policy.Client(AttemptTimeout), retryBase: d.RetryBase,
		now: d.Now, log: d.Log, gate: newGate(d.PerApp, perEndpoint), metrics: d.Metrics}
}

// Timeout is the attempt's deadline plus room for the database.
func (w *Worker) Timeout(*river.Job[DeliverArgs]) time.Duration {
	return AttemptTimeout + 5*time.Second
}

// NextRetry schedules the next attempt after a retryable failure.
func (w *Worker) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	return w.now.Read().Add(Backoff(w.retryBase, job.Args.DeliveryID, job.Attempt))
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
	// An app or endpoint at its share waits in the queue: a snooze spends
	// no attempt, of River's or of the delivery's.
	if ok, retryIn := w.gate.enter(ctx, work.Endpoint.AppID, work.Endpoint.ID); !ok {
		return river.JobSnooze(retryIn)
	}
	defer w.gate.leave(work.Endpoint.AppID, work.Endpoint.ID)

	now := w.now.Read().UTC()
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
	started := time.Now() // real time, for the latency metric
	status, retry := w.attempt(ctx, work, &rec)
	took := time.Since(started)
	rec.DurationMs = w.now.Read().Sub(now).Milliseconds()

	var next *time.Time
	final := status == store.DeliveryDelivered || !retry || job.Attempt >= job.MaxAttempts || attempt >= work.Delivery.MaxAttempts
	if !final {
		t := w.now.Read().Add(Backoff(w.retryBase, job.Args.DeliveryID, job.Attempt)).UTC()
		next = &t
	}
	// Recorded even when the attempt ran out of time or the queue is
	// stopping: otherwise the delivery would stay "processing" with no attempt.
	dbCtx := context.WithoutCancel(ctx)
	err = w.db.Tx(dbCtx, func(tx *store.Tx) error {
		return tx.FinishDeliveryAttempt(dbCtx, rec, status, next, w.now.Read().UTC())
	})
	if err != nil {
		return err
	}
	switch {
	case status == store.DeliveryDelivered:
		w.metrics.Delivery(metrics.DeliveryDelivered, took)
	case final:
		w.metrics.Delivery(metrics.DeliveryFailed, took)
	default:
		w.metrics.Delivery(metrics.DeliveryRetry, took)
	}
	if status != store.DeliveryDelivered {
		w.logFailure(ctx, work, rec, final, next)
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
	req.Header.Set(webhookverify.Header, webhookverify.Sign(work.Body, w.now.Read(), secrets...))
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

// logFailure writes one WARN line per failed attempt: which endpoint,
// event and attempt, the HTTP status or the class of failure (rec.Error,
// which never holds an address), and whether it will be retried. Never the
// payload, the signing secret or the endpoint's URL, whose query may hold a
// token of the receiver's.
func (w *Worker) logFailure(ctx context.Context, work store.DeliveryWork, rec store.WebhookAttempt, final bool, next *time.Time) {
	attrs := []any{"app_id", work.Endpoint.AppID, "endpoint_id", work.Endpoint.ID, "delivery_id", work.Delivery.ID,
		"event_id", work.Delivery.EventID, "event_type", work.Delivery.EventType, "attempt", rec.Attempt, "error", rec.Error}
	if rec.ResponseStatus != nil {
		attrs = append(attrs, "http_status", *rec.ResponseStatus)
	}
	if final {
		w.log.WarnContext(ctx, "webhook delivery failed for good: no more attempts", attrs...)
		return
	}
	w.log.WarnContext(ctx, "webhook delivery attempt failed; a retry is scheduled", append(attrs, "next_attempt_at", next.Format(time.RFC3339))...)
}

// secrets opens the endpoint's signing secret and, during a rotation, the previous one.
func (w *Worker) secrets(ep store.WebhookEndpoint) ([]string, error) {
	cur, err := w.sealer.Open(ep.SecretSealed, secretAD(ep.ID))
	if err != nil {
		return nil, err
	}
	out := []string{string(cur)}
	if ep.PreviousSecretSealed != nil && ep.PreviousExpiresAt != nil && w.now.Read().Before(*ep.PreviousExpiresAt) {
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

// gateWait is the longest a job waits in process for its app's or endpoint's
// slot, and only while that app or endpoint is releasing slots: a busy fast
// endpoint is drained from memory, while a job of a stuck one goes back to the
// queue at once and leaves its worker to other apps.
const gateWait = 250 * time.Millisecond

// gate shares this process's delivery workers fairly (R-WH-7): at most perApp
// attempts of one app and perEndpoint of one endpoint are in flight at once.
type gate struct {
	perApp, perEndpoint int
	wait                time.Duration // gateWait; tests lengthen it

	mu        sync.Mutex
	apps      map[string]*slots
	endpoints map[string]*slots
	free      chan struct{} // closed and replaced whenever a slot is released
}

// slots are one app's or endpoint's attempts in flight. moved is when it last
// released one (or took its first), so a full one that has not moved for a
// while is stuck on slow attempts.
type slots struct {
	n     int
	moved time.Time
}

func newGate(perApp, perEndpoint int) *gate {
	return &gate{perApp: perApp, perEndpoint: perEndpoint, wait: gateWait, apps: map[string]*slots{},
		endpoints: map[string]*slots{}, free: make(chan struct{})}
}

// enter takes a slot of app and of endpoint. When it cannot, it returns false
// and how long the job should wait in the queue: about as long as the full
// app or endpoint has been stuck (gateWait to AttemptTimeout), so a stuck
// tenant's backlog is fetched less and less often rather than in a loop. It
// waits (up to gateWait) only while the full one is releasing slots.
func (g *gate) enter(ctx context.Context, app, endpoint string) (ok bool, retryIn time.Duration) {
	deadline := time.NewTimer(g.wait)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		a, e := g.apps[app], g.endpoints[endpoint]
		if count(a) < g.perApp && count(e) < g.perEndpoint {
			now := time.Now()
			take(g.apps, app, a, now)
			take(g.endpoints, endpoint, e, now)
			g.mu.Unlock()
			return true, 0
		}
		var stuck time.Duration
		if count(a) >= g.perApp {
			stuck = time.Since(a.moved)
		}
		if count(e) >= g.perEndpoint {
			stuck = max(stuck, time.Since(e.moved))
		}
		free := g.free
		g.mu.Unlock()
		retryIn = min(max(stuck, g.wait), AttemptTimeout)
		if stuck >= g.wait {
			return false, retryIn
		}
		select {
		case <-free:
		case <-deadline.C:
			return false, retryIn
		case <-ctx.Done():
			return false, retryIn
		}
	}
}

func count(s *slots) int {
	if s == nil {
		return 0
	}
	return s.n
}

func take(m map[string]*slots, key string, s *slots, now time.Time) {
	if s == nil {
		s = &slots{moved: now}
		m[key] = s
	}
	s.n++
}

// leave releases the slots enter took.
func (g *gate) leave(app, endpoint string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	release(g.apps, app, now)
	release(g.endpoints, endpoint, now)
	close(g.free) // wake every waiter; each re-checks its own app and endpoint
	g.free = make(chan struct{})
}

func release(m map[string]*slots, key string, now time.Time) {
	s := m[key]
	if s.n--; s.n <= 0 {
		delete(m, key)
		return
	}
	s.moved = now
}
