package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// Errors of endpoint management.
var (
	ErrEndpointNotFound = errors.New("webhook endpoint not found")
	ErrDeliveryNotFound = errors.New("webhook delivery not found")
	// ErrDeliveryInProgress refuses to redeliver a delivery that is still queued or being retried.
	ErrDeliveryInProgress = errors.New("webhook delivery still in progress")
	// ErrTooManyEndpoints refuses an endpoint beyond the app's limit
	// (webhooks.max_endpoints_per_app), which bounds one tenant's fan-out.
	ErrTooManyEndpoints = errors.New("too many webhook endpoints")
)

// Limits of endpoint settings (interface §4.14, §8; security R-X-6).
const (
	DefaultRetryLimit = 3
	MaxRetryLimit     = 10
	maxDescription    = 256
	maxMetadata       = 4 << 10
	// RotationOverlap is how long the previous secret keeps signing after a rotation.
	RotationOverlap = 24 * time.Hour
	secretPrefix    = "whsec_"
)

// Delivery is one event on its way to one endpoint.
type Delivery = store.WebhookDelivery

// Attempt is one HTTP attempt of a delivery.
type Attempt = store.WebhookAttempt

// Endpoint is an endpoint as the API shows it; Secret is set only by create and rotate.
type Endpoint struct {
	store.WebhookEndpoint
	Secret string
}

// Input creates or updates an endpoint; nil fields are left alone (on create: defaulted).
type Input struct {
	URL         *string
	EventTypes  *[]string
	RetryLimit  *int
	Description *string
	Metadata    map[string]any
	Enabled     *bool
}

// Service manages an app's webhook endpoints.
type Service struct {
	db           *store.DB
	sealer       *token.Sealer
	policy       Policy
	emitter      *Emitter
	now          store.Clock
	maxEndpoints int
	log          *slog.Logger
}

// DefaultMaxEndpoints is the endpoint limit of an app when NewService is given none.
const DefaultMaxEndpoints = 20

// Deps is what a Service needs.
type Deps struct {
	DB     *store.DB
	Sealer *token.Sealer
	Policy Policy
	// Events emits webhook.test; the services' other events go through their own.
	Events *Emitter
	Now    func() time.Time
	// MaxEndpoints is the most endpoints an app may have (0: DefaultMaxEndpoints).
	MaxEndpoints int
	// Log (nil: discarded) records secret rotations.
	Log *slog.Logger
}

// NewService returns a Service.
func NewService(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.MaxEndpoints <= 0 {
		d.MaxEndpoints = DefaultMaxEndpoints
	}
	return &Service{db: d.DB, sealer: d.Sealer, policy: d.Policy, emitter: d.Events, now: d.Now, maxEndpoints: d.MaxEndpoints, log: d.Log}
}

// clock is the time now as the store keeps it (store.Clock.Now).
func (s *Service) clock() time.Time { return s.now.Now() }

func newSecret() string { return secretPrefix + token.RandomString(32) }

// checkURL checks and normalises in.URL, if set. It may resolve the host,
// so it runs before any transaction.
func (s *Service) checkURL(ctx context.Context, in *Input) error {
	if in.URL == nil {
		return nil
	}
	u, err := s.policy.CheckURL(ctx, strings.TrimSpace(*in.URL))
	if err != nil {
		return err // an *errs.Invalid for the url field
	}
	in.URL = &u
	return nil
}

// apply validates in onto ep; in.URL has passed checkURL.
func apply(ep *store.WebhookEndpoint, in Input) error {
	if in.URL != nil {
		ep.URL = *in.URL
	}
	if in.EventTypes != nil {
		types := []string{}
		for _, t := range *in.EventTypes {
			t = strings.TrimSpace(t)
			if !ValidPattern(t) {
				return errs.Invalidf("event_types", "contains an unknown event type %q", truncate(t, 64))
			}
			types = append(types, t)
		}
		ep.EventTypes = types
	}
	if in.RetryLimit != nil {
		if *in.RetryLimit < 0 || *in.RetryLimit > MaxRetryLimit {
			return errs.Invalidf("retry_limit", "must be between 0 and 10")
		}
		ep.RetryLimit = *in.RetryLimit
	}
	if in.Description != nil {
		d := *in.Description
		// PostgreSQL text refuses NUL and invalid UTF-8: refuse them here as
		// bad input rather than fail in the database (and store them on SQLite).
		if !utf8.ValidString(d) || strings.ContainsRune(d, 0) {
			return errs.Invalidf("description", "must be UTF-8 text without NUL characters")
		}
		if utf8.RuneCountInString(d) > maxDescription {
			return errs.Invalidf("description", "must be at most 256 characters")
		}
		ep.Description = d
	}
	if in.Metadata != nil {
		b, err := json.Marshal(in.Metadata)
		if err != nil || len(b) > maxMetadata {
			return errs.Invalidf("metadata", "must be a JSON object of at most 4 KiB")
		}
		// PostgreSQL jsonb refuses \u0000 in any key or string.
		var decoded any
		if err := json.Unmarshal(b, &decoded); err != nil || hasNUL(decoded) {
			return errs.Invalidf("metadata", "must not contain NUL characters")
		}
		ep.Metadata = b
	}
	if in.Enabled != nil {
		ep.Enabled = *in.Enabled
	}
	return nil
}

// hasNUL reports whether a decoded JSON value holds a NUL in any key or string.
func hasNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		return slices.ContainsFunc(v, hasNUL)
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) || hasNUL(e) {
				return true
			}
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Create adds an endpoint (Write access to the app); the response is the
// only one that shows its secret.
func (s *Service) Create(ctx context.Context, p access.Principal, appID string, in Input) (_ Endpoint, err error) {
	defer errs.Wrap(&err, "create webhook")
	if err := access.App(ctx, s.db.Queries, p, appID, access.Write); err != nil {
		return Endpoint{}, err
	}
	if in.URL == nil {
		return Endpoint{}, errs.Invalidf("url", "is required")
	}
	if err := s.checkURL(ctx, &in); err != nil {
		return Endpoint{}, err
	}
	now := s.clock()
	ep := store.WebhookEndpoint{ID: uuid.Must(uuid.NewV7()).String(), AppID: appID, EventTypes: []string{},
		RetryLimit: DefaultRetryLimit, Metadata: []byte("{}"), Enabled: true, CreatedAt: now, UpdatedAt: now}
	if err := apply(&ep, in); err != nil {
		return Endpoint{}, err
	}
	secret := newSecret()
	sealed, err := s.sealer.Seal([]byte(secret), secretAD(ep.ID))
	if err != nil {
		return Endpoint{}, err
	}
	ep.SecretSealed = sealed
	// The URL check resolves names, so it runs before the transaction; the
	// role is read again in the transaction that stores the endpoint.
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, appID, access.Write); err != nil {
			return err
		}
		// The app's row is locked (on PostgreSQL) so that concurrent
		// creates count one after the other.
		app, err := tx.LockApp(ctx, appID)
		if err != nil {
			return err
		}
		n, err := tx.CountWebhookEndpoints(ctx, appID)
		if err != nil {
			return err
		}
		if n >= s.maxEndpoints {
			return ErrTooManyEndpoints
		}
		tx.AfterCommit(func() { s.emitter.Forget(appID) })
		if err := tx.CreateWebhookEndpoint(ctx, ep); err != nil {
			return err
		}
		return audit.Record(ctx, tx.Queries, now, p, audit.Change{WorkspaceID: app.WorkspaceID, AppID: appID, Action: "webhook.created",
			TargetType: "webhook", TargetID: ep.ID, After: auditEndpoint(ep)})
	})
	if err != nil {
		return Endpoint{}, err
	}
	return Endpoint{WebhookEndpoint: ep, Secret: secret}, nil
}

// List returns an app's endpoints (never their secrets); Read access.
func (s *Service) List(ctx context.Context, p access.Principal, appID string) (_ []Endpoint, err error) {
	defer errs.Wrap(&err, "list webhooks")
	if err := access.App(ctx, s.db.Queries, p, appID, access.Read); err != nil {
		return nil, err
	}
	eps, err := s.db.ListWebhookEndpoints(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := make([]Endpoint, 0, len(eps))
	for _, ep := range eps {
		out = append(out, Endpoint{WebhookEndpoint: ep})
	}
	return out, nil
}

// EventTypes lists the event types an endpoint of the app may subscribe to; Read access.
func (s *Service) EventTypes(ctx context.Context, p access.Principal, appID string) (_ []string, err error) {
	defer errs.Wrap(&err, "list event types")
	if err := access.App(ctx, s.db.Queries, p, appID, access.Read); err != nil {
		return nil, err
	}
	return EventTypes(), nil
}

// Get returns one endpoint (never its secret); Read access.
func (s *Service) Get(ctx context.Context, p access.Principal, appID, id string) (_ Endpoint, err error) {
	defer errs.Wrap(&err, "get webhook")
	if err := access.App(ctx, s.db.Queries, p, appID, access.Read); err != nil {
		return Endpoint{}, err
	}
	return get(ctx, s.db.Queries, appID, id)
}

func get(ctx context.Context, q store.Queries, appID, id string) (Endpoint, error) {
	ep, err := q.GetWebhookEndpoint(ctx, appID, id)
	if errors.Is(err, store.ErrNotFound) {
		return Endpoint{}, ErrEndpointNotFound
	}
	return Endpoint{WebhookEndpoint: ep}, err
}

// change runs fn on an endpoint in a transaction that first checks Write
// access, and stores what fn made of it.
func (s *Service) change(ctx context.Context, p access.Principal, appID, id, action string, fn func(ep *Endpoint) error) (Endpoint, error) {
	var ep Endpoint
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, appID, access.Write); err != nil {
			return err
		}
		var err error
		if ep, err = get(ctx, tx.Queries, appID, id); err != nil {
			return err
		}
		before := auditEndpoint(ep.WebhookEndpoint)
		if err := fn(&ep); err != nil {
			return err
		}
		ep.UpdatedAt = s.clock()
		tx.AfterCommit(func() { s.emitter.Forget(appID) })
		if err := tx.UpdateWebhookEndpoint(ctx, ep.WebhookEndpoint); err != nil {
			return err
		}
		return s.record(ctx, tx, p, appID, audit.Change{Action: action, TargetType: "webhook", TargetID: id, Before: before,
			After: auditEndpoint(ep.WebhookEndpoint)})
	})
	return ep, err
}

// Update changes an endpoint's settings; Write access.
func (s *Service) Update(ctx context.Context, p access.Principal, appID, id string, in Input) (_ Endpoint, err error) {
	defer errs.Wrap(&err, "update webhook")
	if err := access.App(ctx, s.db.Queries, p, appID, access.Write); err != nil {
		return Endpoint{}, err // before the URL is resolved for a caller who may not
	}
	if err := s.checkURL(ctx, &in); err != nil {
		return Endpoint{}, err
	}
	return s.change(ctx, p, appID, id, "webhook.updated", func(ep *Endpoint) error { return apply(&ep.WebhookEndpoint, in) })
}

// Delete removes an endpoint and its deliveries; Write access.
func (s *Service) Delete(ctx context.Context, p access.Principal, appID, id string) (err error) {
	defer errs.Wrap(&err, "delete webhook")
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, appID, access.Write); err != nil {
			return err
		}
		ep, err := get(ctx, tx.Queries, appID, id)
		if err != nil {
			return err
		}
		tx.AfterCommit(func() { s.emitter.Forget(appID) })
		err = tx.DeleteWebhookEndpoint(ctx, appID, id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrEndpointNotFound
		}
		if err != nil {
			return err
		}
		return s.record(ctx, tx, p, appID, audit.Change{Action: "webhook.deleted", TargetType: "webhook", TargetID: id,
			Before: auditEndpoint(ep.WebhookEndpoint)})
	})
}

// RotateSecret gives the endpoint a new secret (Write access); for
// RotationOverlap the old one still signs too (one v1= each), so receivers
// can switch without loss.
func (s *Service) RotateSecret(ctx context.Context, p access.Principal, appID, id string) (_ Endpoint, err error) {
	defer errs.Wrap(&err, "rotate webhook secret")
	secret := newSecret()
	ep, err := s.change(ctx, p, appID, id, "webhook.secret_rotated", func(ep *Endpoint) error {
		sealed, err := s.sealer.Seal([]byte(secret), secretAD(ep.ID))
		if err != nil {
			return err
		}
		until := s.clock().Add(RotationOverlap)
		ep.PreviousSecretSealed, ep.PreviousExpiresAt, ep.SecretSealed = ep.SecretSealed, &until, sealed
		return nil
	})
	if err != nil {
		return Endpoint{}, err
	}
	s.log.InfoContext(ctx, "webhook signing secret rotated", "app_id", appID, "endpoint_id", ep.ID,
		"previous_valid_until", ep.PreviousExpiresAt.Format(time.RFC3339))
	ep.Secret = secret
	return ep, nil
}

// Test sends a webhook.test event to this endpoint only, even if it is not
// subscribed to it; Write access.
func (s *Service) Test(ctx context.Context, p access.Principal, appID, id string) (_ Delivery, err error) {
	defer errs.Wrap(&err, "test webhook")
	var ep Endpoint
	var deliveryID string
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, appID, access.Write); err != nil {
			return err
		}
		var err error
		if ep, err = get(ctx, tx.Queries, appID, id); err != nil {
			return err
		}
		ids, err := s.emitter.emitTo(ctx, tx, appID, WebhookTest, WebhookTestData{
			Message: "This is a test event.", EndpointID: ep.ID}, []store.WebhookEndpoint{ep.WebhookEndpoint})
		if err != nil {
			return err
		}
		if len(ids) == 1 {
			deliveryID = ids[0]
		}
		return s.record(ctx, tx, p, appID, audit.Change{Action: "webhook.test_sent", TargetType: "webhook", TargetID: ep.ID,
			After: map[string]string{"delivery_id": deliveryID}})
	})
	if err != nil {
		return Delivery{}, err
	}
	return s.db.GetDelivery(ctx, ep.ID, deliveryID)
}

// DeliveryPage is one page of an endpoint's deliveries with their attempts.
type DeliveryPage struct {
	Deliveries []Delivery
	Attempts   map[string][]Attempt
	Total      int
	Page       int
	PerPage    int
}

// Deliveries lists an endpoint's deliveries, newest first; Read access.
func (s *Service) Deliveries(ctx context.Context, p access.Principal, appID, id string, page, perPage int) (_ DeliveryPage, err error) {
	return s.DeliveriesByStatus(ctx, p, appID, id, "", page, perPage)
}

// DeliveryStatuses are the statuses a delivery list may be filtered by.
var DeliveryStatuses = []string{store.DeliveryPending, store.DeliveryProcessing, store.DeliveryDelivered, store.DeliveryFailed}

// DeliveriesByStatus is Deliveries of the deliveries with this status
// ("" for all; another unknown status is invalid).
func (s *Service) DeliveriesByStatus(ctx context.Context, p access.Principal, appID, id, status string, page, perPage int) (_ DeliveryPage, err error) {
	defer errs.Wrap(&err, "list webhook deliveries")
	if status != "" && !slices.Contains(DeliveryStatuses, status) {
		return DeliveryPage{}, errs.Invalidf("status", "must be one of %s", strings.Join(DeliveryStatuses, ", "))
	}
	ep, err := s.Get(ctx, p, appID, id)
	if err != nil {
		return DeliveryPage{}, err
	}
	if page < 1 {
		page = 1
	}
	if perPage < 1 || perPage > 100 {
		perPage = 25
	}
	list, total, err := s.db.ListDeliveriesByStatus(ctx, ep.ID, status, perPage, (page-1)*perPage)
	if err != nil {
		return DeliveryPage{}, err
	}
	ids := make([]string, 0, len(list))
	for _, d := range list {
		ids = append(ids, d.ID)
	}
	attempts, err := s.db.ListAttempts(ctx, ids)
	if err != nil {
		return DeliveryPage{}, err
	}
	return DeliveryPage{Deliveries: list, Attempts: attempts, Total: total, Page: page, PerPage: perPage}, nil
}

// DeliveryCounts counts the deliveries to each of the app's endpoints in
// the last week, by status (endpoint id → status → count); Read access.
func (s *Service) DeliveryCounts(ctx context.Context, p access.Principal, appID string) (_ map[string]map[string]int, err error) {
	defer errs.Wrap(&err, "count webhook deliveries")
	if err := access.App(ctx, s.db.Queries, p, appID, access.Read); err != nil {
		return nil, err
	}
	return s.db.AppDeliveryCounts(ctx, appID, s.clock().Add(-7*24*time.Hour))
}

// DeliveryDetail is one delivery with its attempts, oldest first, and the
// event's body as it was sent (a payload holds no secret); Read access.
func (s *Service) DeliveryDetail(ctx context.Context, p access.Principal, appID, id, deliveryID string) (_ Delivery, _ []Attempt, body []byte, err error) {
	defer errs.Wrap(&err, "read webhook delivery")
	ep, err := s.Get(ctx, p, appID, id)
	if err != nil {
		return Delivery{}, nil, nil, err
	}
	d, err := s.db.GetDelivery(ctx, ep.ID, deliveryID)
	if errors.Is(err, store.ErrNotFound) {
		return Delivery{}, nil, nil, ErrDeliveryNotFound
	}
	if err != nil {
		return Delivery{}, nil, nil, err
	}
	attempts, err := s.db.ListAttempts(ctx, []string{d.ID})
	if err != nil {
		return Delivery{}, nil, nil, err
	}
	if body, err = s.db.GetEventBody(ctx, appID, d.EventID); err != nil {
		return Delivery{}, nil, nil, err
	}
	return d, attempts[d.ID], body, nil
}

// Redeliver queues a delivery again (same event, same id) with a fresh retry
// budget; Write access.
func (s *Service) Redeliver(ctx context.Context, p access.Principal, appID, id, deliveryID string) (_ Delivery, err error) {
	defer errs.Wrap(&err, "redeliver webhook")
	var ep Endpoint
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, appID, access.Write); err != nil {
			return err
		}
		var err error
		if ep, err = get(ctx, tx.Queries, appID, id); err != nil {
			return err
		}
		d, err := tx.GetDelivery(ctx, ep.ID, deliveryID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrDeliveryNotFound
		}
		if err != nil {
			return err
		}
		if d.Status == store.DeliveryPending || d.Status == store.DeliveryProcessing || d.NextAttemptAt != nil {
			return ErrDeliveryInProgress
		}
		if err := tx.ResetDelivery(ctx, d.ID, ep.RetryLimit+1, s.clock()); err != nil {
			return err
		}
		if err := s.record(ctx, tx, p, appID, audit.Change{Action: "webhook.redelivered", TargetType: "webhook_delivery", TargetID: d.ID,
			Before: map[string]string{"status": d.Status, "endpoint_id": ep.ID, "event_id": d.EventID}}); err != nil {
			return err
		}
		return s.emitter.enqueue(ctx, tx, d.ID)
	})
	if err != nil {
		return Delivery{}, err
	}
	return s.db.GetDelivery(ctx, ep.ID, deliveryID)
}

// record appends p's audit entry for c, a change of appID's endpoints,
// inside tx.
func (s *Service) record(ctx context.Context, tx *store.Tx, p access.Principal, appID string, c audit.Change) error {
	app, err := tx.GetApp(ctx, appID)
	if err != nil {
		return err
	}
	c.WorkspaceID, c.AppID = app.WorkspaceID, appID
	return audit.Record(ctx, tx.Queries, s.clock(), p, c)
}

// endpointRecord is an endpoint as the audit log keeps it: never its
// secrets (a rotation shows as the old secret's new end of validity).
type endpointRecord struct {
	URL                    string          `json:"url"`
	Description            string          `json:"description"`
	EventTypes             []string        `json:"event_types"`
	RetryLimit             int             `json:"retry_limit"`
	Metadata               json.RawMessage `json:"metadata"`
	Enabled                bool            `json:"enabled"`
	PreviousSecretValidTil *time.Time      `json:"previous_secret_valid_until"`
}

func auditEndpoint(ep store.WebhookEndpoint) endpointRecord {
	meta := json.RawMessage(ep.Metadata)
	if !json.Valid(meta) {
		meta = json.RawMessage("{}")
	}
	return endpointRecord{URL: ep.URL, Description: ep.Description, EventTypes: ep.EventTypes, RetryLimit: ep.RetryLimit,
		Metadata: meta, Enabled: ep.Enabled, PreviousSecretValidTil: ep.PreviousExpiresAt}
}
