package webhook

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/gatehouse-auth/gatehouse/internal/queue"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// QueueName is the River queue deliveries run on.
const QueueName = "webhooks"

// Envelope is the body of every delivery (interface §6.1). It is serialised
// once; retries send the same bytes with the same id.
type Envelope struct {
	ID         string    `json:"id" doc:"The event's id, the same on every attempt: deduplicate on it."`
	CreatedAt  time.Time `json:"created_at" doc:"When the event happened."`
	EventType  string    `json:"event_type" doc:"The event type, which says what data holds."`
	AppID      string    `json:"app_id" doc:"The app the event is about."`
	Data       any       `json:"data" doc:"The event's data (a Payload)."`
	APIVersion string    `json:"api_version" enum:"v1" doc:"The version of this shape."`
}

// DeliverArgs is the job that makes one delivery.
type DeliverArgs struct {
	DeliveryID string `json:"delivery_id"`
}

// Kind names the job for River.
func (DeliverArgs) Kind() string { return "webhook_delivery" }

// Emitter records events and enqueues their deliveries inside the caller's
// transaction: the change and its events commit together or not at all.
// A nil *Emitter emits nothing.
type Emitter struct {
	queue *queue.Queue
	now   store.Clock
	quiet quietApps
}

// NewEmitter returns an Emitter that enqueues on q.
func NewEmitter(q *queue.Queue, now func() time.Time) *Emitter {
	return &Emitter{queue: q, now: now, quiet: quietApps{seen: map[string]time.Time{}}}
}

// quietApps remembers, for QuietFor, the apps found with no enabled
// endpoint: most apps have none, and every sign-in emits events, so the
// hot paths skip the read of the app's endpoints for them. Only that
// answer is kept (an app with endpoints reads them in the transaction, so
// a delivery never names an endpoint deleted meanwhile). It is forgotten
// when the app's endpoints change: at once on the replica that changed
// them (Forget, after the commit), within milliseconds on the others on
// PostgreSQL (a trigger notifies, Listen forgets), and after QuietFor at
// the latest (SQLite shared with a command-line process, a lost listener).
type quietApps struct {
	mu   sync.Mutex
	seen map[string]time.Time
	// gen grows with every Forget: a read that began before one does not
	// record its answer, which may predate the change.
	gen uint64
}

// EndpointsChannel is the PostgreSQL notification channel on which a
// trigger announces a change of an app's endpoints (the app id as payload).
const EndpointsChannel = "gatehouse_webhook_endpoints"

// QuietFor is how long an app found without endpoints is taken to have none.
const QuietFor = 2 * time.Second

// Forget drops what is remembered of appID's endpoints ("" for every app).
func (e *Emitter) Forget(appID string) {
	if e == nil {
		return
	}
	q := &e.quiet
	q.mu.Lock()
	defer q.mu.Unlock()
	q.gen++
	if appID == "" {
		clear(q.seen)
		return
	}
	delete(q.seen, appID)
}

// endpoints returns appID's enabled endpoints, read inside tx unless the
// app was found to have none within QuietFor.
func (e *Emitter) endpoints(ctx context.Context, tx *store.Tx, appID string) ([]store.WebhookEndpoint, error) {
	q := &e.quiet
	now := time.Now()
	q.mu.Lock()
	at, ok := q.seen[appID]
	gen := q.gen
	q.mu.Unlock()
	if ok && now.Sub(at) < QuietFor {
		return nil, nil
	}
	all, err := tx.ListWebhookEndpoints(ctx, appID)
	if err != nil {
		return nil, err
	}
	enabled := all[:0]
	for _, ep := range all {
		if ep.Enabled {
			enabled = append(enabled, ep)
		}
	}
	if len(enabled) == 0 {
		q.mu.Lock()
		if q.gen == gen {
			if len(q.seen) > 100_000 { // bounded: a server with that many apps starts over
				clear(q.seen)
			}
			q.seen[appID] = now
		}
		q.mu.Unlock()
	}
	return enabled, nil
}

// Emit records an event of app and fans it out to every enabled endpoint
// subscribed to its type.
func (e *Emitter) Emit(ctx context.Context, tx *store.Tx, appID, eventType string, data Payload) error {
	if e == nil {
		return nil
	}
	endpoints, err := e.endpoints(ctx, tx, appID)
	if err != nil {
		return err
	}
	var targets []store.WebhookEndpoint
	for _, ep := range endpoints {
		if subscribed(ep.EventTypes, eventType) {
			targets = append(targets, ep)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	_, err = e.emitTo(ctx, tx, appID, eventType, data, targets)
	return err
}

// Event is one event for EmitMany. Build, when set instead of Data, makes
// the data only if an endpoint subscribes: most apps have none, and the
// sign-in paths should not pay for payloads nobody receives.
type Event struct {
	Type  string
	Data  Payload
	Build func() Payload
}

// EmitMany records several events of one change with one read of the app's
// endpoints, in order: a sign-in's verification and challenge events cost
// what one did.
func (e *Emitter) EmitMany(ctx context.Context, tx *store.Tx, appID string, events ...Event) error {
	if e == nil || len(events) == 0 {
		return nil
	}
	endpoints, err := e.endpoints(ctx, tx, appID)
	if err != nil {
		return err
	}
	for _, ev := range events {
		var targets []store.WebhookEndpoint
		for _, ep := range endpoints {
			if subscribed(ep.EventTypes, ev.Type) {
				targets = append(targets, ep)
			}
		}
		if len(targets) == 0 {
			continue
		}
		if ev.Build != nil {
			ev.Data = ev.Build()
		}
		if _, err := e.emitTo(ctx, tx, appID, ev.Type, ev.Data, targets); err != nil {
			return err
		}
	}
	return nil
}

// emitTo records one event and a delivery to each of targets; it returns the delivery ids.
func (e *Emitter) emitTo(ctx context.Context, tx *store.Tx, appID, eventType string, data Payload, targets []store.WebhookEndpoint) ([]string, error) {
	now := e.now.Now()
	env := Envelope{ID: uuid.NewString(), CreatedAt: now, EventType: eventType, AppID: appID, Data: data, APIVersion: "v1"}
	if data == nil {
		env.Data = struct{}{} // data is always an object (interface §6.1)
	}
	body, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	if err := tx.InsertWebhookEvent(ctx, store.WebhookEvent{ID: env.ID, AppID: appID, EventType: eventType, Body: body, CreatedAt: now}); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(targets))
	for _, ep := range targets {
		d := store.WebhookDelivery{ID: uuid.Must(uuid.NewV7()).String(), EndpointID: ep.ID, EventID: env.ID, EventType: eventType,
			Status: store.DeliveryPending, MaxAttempts: ep.RetryLimit + 1, CreatedAt: now, UpdatedAt: now}
		if err := tx.InsertWebhookDelivery(ctx, d); err != nil {
			return nil, err
		}
		if err := e.enqueue(ctx, tx, d.ID); err != nil {
			return nil, err
		}
		ids = append(ids, d.ID)
	}
	return ids, nil
}

// jobMaxAttempts is how many runs River allows a delivery job. When a run
// is cut off by a crash, River's rescuer retries the job only while it has
// runs left and otherwise discards it without calling the worker, which
// would leave the delivery "processing" for good, where it cannot even be
// redelivered. A crash-looping server can cut off any number of runs, so the
// cap is far beyond a delivery's own attempts (at most 11): the worker alone
// decides when a delivery is final, from the delivery's attempt count, and
// the cap only ends a job that keeps failing before it can attempt anything
// (its backoff reaches 24 h long before).
const jobMaxAttempts = 1000

func (e *Emitter) enqueue(ctx context.Context, tx *store.Tx, deliveryID string) error {
	return e.queue.InsertTx(ctx, tx, DeliverArgs{DeliveryID: deliveryID},
		&river.InsertOpts{Queue: QueueName, MaxAttempts: jobMaxAttempts})
}
