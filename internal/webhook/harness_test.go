package webhook_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/gatehouse-auth/gatehouse/internal/queue"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Polling bounds for asynchronous outcomes.
const (
	pollEvery   = 20 * time.Millisecond
	pollTimeout = 10 * time.Second
)

// envOptions tunes newEnv.
type envOptions struct {
	// retryBase is the Worker's backoff base; zero means 20 ms.
	retryBase time.Duration
	// workerNow is the delivery worker's clock; nil means time.Now.
	workerNow func() time.Time
	// insertOnly builds a queue that enqueues but works nothing, for tests
	// that drive Worker.Work themselves.
	insertOnly bool
}

// env is a running webhook system on one store: the River queue works the
// webhooks queue with a real Worker until the test ends.
type env struct {
	db      *store.DB
	sealer  *token.Sealer
	policy  webhook.Policy
	worker  *webhook.Worker
	queue   *queue.Queue
	emitter *webhook.Emitter
	svc     *webhook.Service
	wsID    string
	appID   string
}

// newEnv migrates River's tables on db, starts the queue and creates the
// workspace and the app "Acme Shop".
func newEnv(tb testing.TB, db *store.DB, opts envOptions) *env {
	tb.Helper()
	ctx := context.Background()
	if opts.retryBase == 0 {
		opts.retryBase = 20 * time.Millisecond
	}
	if err := queue.Migrate(ctx, db, nil); err != nil {
		tb.Fatalf("queue.Migrate: %v", err)
	}
	sealer, err := token.NewSealer(randomKey(tb))
	if err != nil {
		tb.Fatalf("token.NewSealer: %v", err)
	}
	e := &env{db: db, sealer: sealer, policy: webhook.Policy{AllowPrivate: true}}
	e.worker = webhook.NewWorker(webhook.WorkerDeps{DB: db, Sealer: sealer, Policy: e.policy,
		RetryBase: opts.retryBase, Now: opts.workerNow})
	cfg := queue.Config{FetchPollInterval: 50 * time.Millisecond}
	if !opts.insertOnly {
		workers := river.NewWorkers()
		river.AddWorker(workers, e.worker)
		cfg.Workers, cfg.Queues = workers, map[string]int{webhook.QueueName: 8}
	}
	e.queue, err = queue.New(db, cfg)
	if err != nil {
		tb.Fatalf("queue.New: %v", err)
	}
	if !opts.insertOnly {
		if err := e.queue.Start(ctx); err != nil {
			tb.Fatalf("queue.Start: %v", err)
		}
		tb.Cleanup(func() {
			stopCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if err := e.queue.Stop(stopCtx); err != nil {
				tb.Errorf("queue.Stop: %v", err)
			}
		})
	}
	e.emitter = webhook.NewEmitter(e.queue, nil)
	e.svc = webhook.NewService(db, sealer, e.policy, e.emitter, nil)

	now := time.Now().UTC()
	e.wsID = uuid.NewString()
	if err := db.CreateWorkspace(ctx, store.Workspace{ID: e.wsID, Name: "Acme", Slug: "acme-" + e.wsID[:8],
		CreatedAt: now, UpdatedAt: now}); err != nil {
		tb.Fatalf("CreateWorkspace: %v", err)
	}
	e.appID = e.newApp(tb, "Acme Shop")
	return e
}

func randomKey(tb testing.TB) []byte {
	tb.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		tb.Fatal(err)
	}
	return key
}

// newApp creates another app in the env's workspace and returns its id.
func (e *env) newApp(tb testing.TB, name string) string {
	tb.Helper()
	now := time.Now().UTC()
	id := uuid.NewString()
	err := e.db.CreateApp(context.Background(), store.App{ID: id, WorkspaceID: e.wsID, Name: name, Slug: "app-" + id[:8],
		Origin: "https://shop.example.com", EmailAuthType: "magic", AccessExpiration: 900, RefreshExpiration: 604800,
		MagicLinkExpiration: 600, AllowedIdentifiers: []string{"email"}, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		tb.Fatalf("CreateApp: %v", err)
	}
	return id
}

// endpoint creates an endpoint of app at url; mod adjusts the input first.
func (e *env) endpoint(tb testing.TB, appID, url string, mod func(*webhook.Input)) webhook.Endpoint {
	tb.Helper()
	in := webhook.Input{URL: &url}
	if mod != nil {
		mod(&in)
	}
	ep, err := e.svc.Create(context.Background(), appID, in)
	if err != nil {
		tb.Fatalf("Create(%q): %v", url, err)
	}
	return ep
}

// emit emits one event in its own committed transaction.
func (e *env) emit(tb testing.TB, appID, eventType string, data any) {
	tb.Helper()
	err := e.db.Tx(context.Background(), func(tx *store.Tx) error {
		return e.emitter.Emit(context.Background(), tx, appID, eventType, data)
	})
	if err != nil {
		tb.Fatalf("Emit(%q): %v", eventType, err)
	}
}

// deliveries returns an endpoint's deliveries (newest first) with their attempts.
func (e *env) deliveries(tb testing.TB, appID, endpointID string) webhook.DeliveryPage {
	tb.Helper()
	page, err := e.svc.Deliveries(context.Background(), appID, endpointID, 1, 100)
	if err != nil {
		tb.Fatalf("Deliveries: %v", err)
	}
	return page
}

// settled reports whether d will not be attempted again.
func settled(d store.WebhookDelivery) bool {
	return d.Status == store.DeliveryDelivered || (d.Status == store.DeliveryFailed && d.NextAttemptAt == nil)
}

// waitSettled polls until the endpoint has n deliveries, all settled, and returns them.
func (e *env) waitSettled(tb testing.TB, appID, endpointID string, n int) webhook.DeliveryPage {
	tb.Helper()
	var page webhook.DeliveryPage
	eventually(tb, fmt.Sprintf("%d settled deliveries", n), func() bool {
		page = e.deliveries(tb, appID, endpointID)
		if len(page.Deliveries) != n {
			return false
		}
		for _, d := range page.Deliveries {
			if !settled(d) {
				return false
			}
		}
		return true
	})
	return page
}

// eventually polls cond every pollEvery until it holds, failing after pollTimeout.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	eventuallyWithin(tb, pollTimeout, what, cond)
}

func eventuallyWithin(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		<-tick.C
	}
}

// request is one request a receiver got.
type request struct {
	header http.Header
	body   []byte
	at     time.Time
}

// receiver is an httptest server that records every request and answers
// with handle (n is the 1-based request number).
type receiver struct {
	srv    *httptest.Server
	handle func(n int, w http.ResponseWriter, r *http.Request)
	mu     sync.Mutex
	reqs   []request
}

// newReceiver starts a receiver; a nil handle answers 204.
func newReceiver(tb testing.TB, handle func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	tb.Helper()
	if handle == nil {
		handle = func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }
	}
	rc := &receiver{handle: handle}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, request{header: r.Header.Clone(), body: body, at: time.Now()})
		n := len(rc.reqs)
		rc.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		rc.handle(n, w, r)
	}))
	tb.Cleanup(rc.srv.Close)
	return rc
}

// status answers every request with code and body.
func status(code int, body string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func (rc *receiver) url() string { return rc.srv.URL + "/hooks" }

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.reqs...)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.reqs)
}

// v1s returns the v1= signatures of a signature header.
func v1s(header string) []string {
	var out []string
	for _, part := range strings.Split(header, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "v1="); ok {
			out = append(out, v)
		}
	}
	return out
}

// tOf returns the t= value of a signature header.
func tOf(header string) string {
	for _, part := range strings.Split(header, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
			return v
		}
	}
	return ""
}

// asInvalid reports whether err is a *webhook.InvalidError and returns it.
func asInvalid(err error) (*webhook.InvalidError, bool) {
	var inv *webhook.InvalidError
	ok := errors.As(err, &inv)
	return inv, ok
}

func ptr[T any](v T) *T { return &v }
