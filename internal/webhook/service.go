package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// Errors of endpoint management.
var (
	ErrEndpointNotFound = errors.New("webhook endpoint not found")
	ErrDeliveryNotFound = errors.New("webhook delivery not found")
	// ErrDeliveryInProgress refuses to redeliver a delivery that is still queued or being retried.
	ErrDeliveryInProgress = errors.New("webhook delivery still in progress")
)

// InvalidError is a request field that breaks a rule.
type InvalidError struct{ Field, Reason string }

func (e *InvalidError) Error() string { return e.Field + " " + e.Reason }

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
	db      *store.DB
	sealer  *token.Sealer
	policy  Policy
	emitter *Emitter
	now     func() time.Time
}

// NewService returns a Service.
func NewService(db *store.DB, sealer *token.Sealer, policy Policy, emitter *Emitter, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{db: db, sealer: sealer, policy: policy, emitter: emitter, now: now}
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Policy is the SSRF policy endpoints are checked against.
func (s *Service) Policy() Policy { return s.policy }

func newSecret() string { return secretPrefix + token.RandomString(32) }

// apply validates in onto ep.
func (s *Service) apply(ctx context.Context, ep *store.WebhookEndpoint, in Input) error {
	if in.URL != nil {
		u, err := s.policy.CheckURL(ctx, strings.TrimSpace(*in.URL))
		if err != nil {
			return &InvalidError{Field: "url", Reason: strings.TrimPrefix(strings.TrimPrefix(err.Error(), ErrUnsafeURL.Error()), ": ")}
		}
		ep.URL = u
	}
	if in.EventTypes != nil {
		types := []string{}
		for _, t := range *in.EventTypes {
			t = strings.TrimSpace(t)
			if !ValidPattern(t) {
				return &InvalidError{Field: "event_types", Reason: fmt.Sprintf("contains an unknown event type %q", truncate(t, 64))}
			}
			types = append(types, t)
		}
		ep.EventTypes = types
	}
	if in.RetryLimit != nil {
		if *in.RetryLimit < 0 || *in.RetryLimit > MaxRetryLimit {
			return &InvalidError{Field: "retry_limit", Reason: "must be between 0 and 10"}
		}
		ep.RetryLimit = *in.RetryLimit
	}
	if in.Description != nil {
		d := *in.Description
		// PostgreSQL text refuses NUL and invalid UTF-8: refuse them here as
		// bad input rather than fail in the database (and store them on SQLite).
		if !utf8.ValidString(d) || strings.ContainsRune(d, 0) {
			return &InvalidError{Field: "description", Reason: "must be UTF-8 text without NUL characters"}
		}
		if utf8.RuneCountInString(d) > maxDescription {
			return &InvalidError{Field: "description", Reason: "must be at most 256 characters"}
		}
		ep.Description = d
	}
	if in.Metadata != nil {
		b, err := json.Marshal(in.Metadata)
		if err != nil || len(b) > maxMetadata {
			return &InvalidError{Field: "metadata", Reason: "must be a JSON object of at most 4 KiB"}
		}
		// PostgreSQL jsonb refuses \u0000 in any key or string.
		var decoded any
		if err := json.Unmarshal(b, &decoded); err != nil || hasNUL(decoded) {
			return &InvalidError{Field: "metadata", Reason: "must not contain NUL characters"}
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

// Create adds an endpoint; the response is the only one that shows its secret.
func (s *Service) Create(ctx context.Context, appID string, in Input) (Endpoint, error) {
	if in.URL == nil {
		return Endpoint{}, &InvalidError{Field: "url", Reason: "is required"}
	}
	now := s.clock()
	ep := store.WebhookEndpoint{ID: uuid.Must(uuid.NewV7()).String(), AppID: appID, EventTypes: []string{},
		RetryLimit: DefaultRetryLimit, Metadata: []byte("{}"), Enabled: true, CreatedAt: now, UpdatedAt: now}
	if err := s.apply(ctx, &ep, in); err != nil {
		return Endpoint{}, err
	}
	secret := newSecret()
	sealed, err := s.sealer.Seal([]byte(secret), secretAD(ep.ID))
	if err != nil {
		return Endpoint{}, err
	}
	ep.SecretSealed = sealed
	if err := s.db.CreateWebhookEndpoint(ctx, ep); err != nil {
		return Endpoint{}, err
	}
	return Endpoint{WebhookEndpoint: ep, Secret: secret}, nil
}

// List returns an app's endpoints (never their secrets).
func (s *Service) List(ctx context.Context, appID string) ([]Endpoint, error) {
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

// Get returns one endpoint (never its secret).
func (s *Service) Get(ctx context.Context, appID, id string) (Endpoint, error) {
	ep, err := s.db.GetWebhookEndpoint(ctx, appID, id)
	if errors.Is(err, store.ErrNotFound) {
		return Endpoint{}, ErrEndpointNotFound
	}
	return Endpoint{WebhookEndpoint: ep}, err
}

// Update changes an endpoint's settings.
func (s *Service) Update(ctx context.Context, appID, id string, in Input) (Endpoint, error) {
	ep, err := s.Get(ctx, appID, id)
	if err != nil {
		return Endpoint{}, err
	}
	if err := s.apply(ctx, &ep.WebhookEndpoint, in); err != nil {
		return Endpoint{}, err
	}
	ep.UpdatedAt = s.clock()
	if err := s.db.UpdateWebhookEndpoint(ctx, ep.WebhookEndpoint); err != nil {
		return Endpoint{}, err
	}
	return ep, nil
}

// Delete removes an endpoint and its deliveries.
func (s *Service) Delete(ctx context.Context, appID, id string) error {
	err := s.db.DeleteWebhookEndpoint(ctx, appID, id)
	if errors.Is(err, store.ErrNotFound) {
		return ErrEndpointNotFound
	}
	return err
}

// RotateSecret gives the endpoint a new secret; for RotationOverlap the old
// one still signs too (one v1= each), so receivers can switch without loss.
func (s *Service) RotateSecret(ctx context.Context, appID, id string) (Endpoint, error) {
	ep, err := s.Get(ctx, appID, id)
	if err != nil {
		return Endpoint{}, err
	}
	secret := newSecret()
	sealed, err := s.sealer.Seal([]byte(secret), secretAD(ep.ID))
	if err != nil {
		return Endpoint{}, err
	}
	until := s.clock().Add(RotationOverlap)
	ep.PreviousSecretSealed, ep.PreviousExpiresAt, ep.SecretSealed = ep.SecretSealed, &until, sealed
	ep.UpdatedAt = s.clock()
	if err := s.db.UpdateWebhookEndpoint(ctx, ep.WebhookEndpoint); err != nil {
		return Endpoint{}, err
	}
	ep.Secret = secret
	return ep, nil
}

// Test sends a webhook.test event to this endpoint only (even if it is not subscribed to it).
func (s *Service) Test(ctx context.Context, appID, id string) (store.WebhookDelivery, error) {
	ep, err := s.Get(ctx, appID, id)
	if err != nil {
		return store.WebhookDelivery{}, err
	}
	var deliveryID string
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		ids, err := s.emitter.emitTo(ctx, tx, appID, WebhookTest, map[string]any{
			"message": "This is a test event.", "endpoint_id": ep.ID}, []store.WebhookEndpoint{ep.WebhookEndpoint})
		if len(ids) == 1 {
			deliveryID = ids[0]
		}
		return err
	})
	if err != nil {
		return store.WebhookDelivery{}, err
	}
	return s.db.GetDelivery(ctx, ep.ID, deliveryID)
}

// DeliveryPage is one page of an endpoint's deliveries with their attempts.
type DeliveryPage struct {
	Deliveries []store.WebhookDelivery
	Attempts   map[string][]store.WebhookAttempt
	Total      int
	Page       int
	PerPage    int
}

// Deliveries lists an endpoint's deliveries, newest first.
func (s *Service) Deliveries(ctx context.Context, appID, id string, page, perPage int) (DeliveryPage, error) {
	ep, err := s.Get(ctx, appID, id)
	if err != nil {
		return DeliveryPage{}, err
	}
	if page < 1 {
		page = 1
	}
	if perPage < 1 || perPage > 100 {
		perPage = 25
	}
	list, total, err := s.db.ListDeliveries(ctx, ep.ID, perPage, (page-1)*perPage)
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

// Redeliver queues a delivery again (same event, same id) with a fresh retry budget.
func (s *Service) Redeliver(ctx context.Context, appID, id, deliveryID string) (store.WebhookDelivery, error) {
	ep, err := s.Get(ctx, appID, id)
	if err != nil {
		return store.WebhookDelivery{}, err
	}
	d, err := s.db.GetDelivery(ctx, ep.ID, deliveryID)
	if errors.Is(err, store.ErrNotFound) {
		return d, ErrDeliveryNotFound
	}
	if err != nil {
		return d, err
	}
	if d.Status == store.DeliveryPending || d.Status == store.DeliveryProcessing || d.NextAttemptAt != nil {
		return d, ErrDeliveryInProgress
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.ResetDelivery(ctx, d.ID, ep.RetryLimit+1, s.clock()); err != nil {
			return err
		}
		return s.emitter.enqueue(ctx, tx, d.ID, ep.RetryLimit+1)
	})
	if err != nil {
		return d, err
	}
	return s.db.GetDelivery(ctx, ep.ID, d.ID)
}
