package httpapi

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Webhook is an endpoint (interface §4.14). Secret appears only in the
// responses that create it or rotate it.
type Webhook struct {
	ID                string         `json:"id" doc:"The endpoint id."`
	URL               string         `json:"url" doc:"Where events are POSTed (https)."`
	EventTypes        []string       `json:"event_types" doc:"Subscribed event types; empty means every event. A prefix pattern such as verification.* is allowed."`
	RetryLimit        int            `json:"retry_limit" doc:"Retries after the first attempt, 0 to 10."`
	Description       string         `json:"description" doc:"A label."`
	Metadata          map[string]any `json:"metadata" doc:"The app's own data about the endpoint."`
	Enabled           bool           `json:"enabled" doc:"Disabled endpoints get no events."`
	Secret            string         `json:"secret,omitempty" doc:"The signing secret (whsec_...): the HMAC key exactly as shown. Returned only when created or rotated."`
	PreviousExpiresAt *time.Time     `json:"previous_secret_expires_at,omitempty" doc:"Until then the previous secret also signs (one v1= each)."`
	CreatedAt         time.Time      `json:"created_at" doc:"When it was created (RFC 3339)."`
	UpdatedAt         time.Time      `json:"updated_at" doc:"When it last changed (RFC 3339)."`
}

func webhookOut(e webhook.Endpoint) Webhook {
	meta := map[string]any{}
	_ = json.Unmarshal(e.Metadata, &meta)
	types := e.EventTypes
	if types == nil {
		types = []string{}
	}
	return Webhook{ID: e.ID, URL: e.URL, EventTypes: types, RetryLimit: e.RetryLimit, Description: e.Description,
		Metadata: meta, Enabled: e.Enabled, Secret: e.Secret, PreviousExpiresAt: e.PreviousExpiresAt,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
}

// WebhookBody creates or updates an endpoint; omitted fields keep their value (on create: their default).
type WebhookBody struct {
	URL         *string        `json:"url,omitempty" doc:"An https:// URL of a public host (required on create)."`
	EventTypes  *[]string      `json:"event_types,omitempty" doc:"Event types to subscribe to (a prefix pattern such as verification.* is allowed); empty or omitted: every event."`
	RetryLimit  *int           `json:"retry_limit,omitempty" doc:"Retries after the first attempt, 0 to 10 (default 3)." minimum:"0" maximum:"10"`
	Description *string        `json:"description,omitempty" maxLength:"256" doc:"A label."`
	Metadata    map[string]any `json:"metadata,omitempty" doc:"The app's own data about the endpoint, returned as given."`
	Enabled     *bool          `json:"enabled,omitempty" doc:"Default true."`
}

func (b WebhookBody) input() webhook.Input {
	return webhook.Input{URL: b.URL, EventTypes: b.EventTypes, RetryLimit: b.RetryLimit, Description: b.Description,
		Metadata: b.Metadata, Enabled: b.Enabled}
}

type webhookWriteInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Body  struct {
		Webhook WebhookBody `json:"webhook" doc:"The endpoint to create."`
	}
}

type webhookOutput struct {
	Body struct {
		Webhook Webhook `json:"webhook" doc:"The webhook endpoint."`
	}
}

func webhookResult(e webhook.Endpoint) *webhookOutput {
	out := &webhookOutput{}
	out.Body.Webhook = webhookOut(e)
	return out
}

func (s *Server) createWebhook(ctx context.Context, in *webhookWriteInput) (*webhookOutput, error) {
	e, err := s.Webhooks.Create(ctx, principalFrom(ctx), appFrom(ctx).ID, in.Body.Webhook.input())
	if err != nil {
		return nil, err
	}
	return webhookResult(e), nil
}

type webhooksOutput struct {
	Body struct {
		Webhooks []Webhook `json:"webhooks" doc:"The app's webhook endpoints."`
	}
}

func (s *Server) listWebhooks(ctx context.Context, _ *appIDInput) (*webhooksOutput, error) {
	list, err := s.Webhooks.List(ctx, principalFrom(ctx), appFrom(ctx).ID)
	if err != nil {
		return nil, err
	}
	out := &webhooksOutput{}
	out.Body.Webhooks = make([]Webhook, 0, len(list))
	for _, e := range list {
		out.Body.Webhooks = append(out.Body.Webhooks, webhookOut(e))
	}
	return out, nil
}

func (s *Server) getWebhook(ctx context.Context, in *appChildInput) (*webhookOutput, error) {
	e, err := s.Webhooks.Get(ctx, principalFrom(ctx), appFrom(ctx).ID, in.ID)
	if err != nil {
		return nil, err
	}
	return webhookResult(e), nil
}

type webhookUpdateInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	ID    string `path:"id" doc:"The endpoint id."`
	Body  struct {
		Webhook WebhookBody `json:"webhook" doc:"The fields to change; others keep their value."`
	}
}

func (s *Server) updateWebhook(ctx context.Context, in *webhookUpdateInput) (*webhookOutput, error) {
	e, err := s.Webhooks.Update(ctx, principalFrom(ctx), appFrom(ctx).ID, in.ID, in.Body.Webhook.input())
	if err != nil {
		return nil, err
	}
	return webhookResult(e), nil
}

func (s *Server) deleteWebhook(ctx context.Context, in *appChildInput) (*okOutput, error) {
	if err := s.Webhooks.Delete(ctx, principalFrom(ctx), appFrom(ctx).ID, in.ID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

func (s *Server) rotateWebhookSecret(ctx context.Context, in *appChildInput) (*webhookOutput, error) {
	e, err := s.Webhooks.RotateSecret(ctx, principalFrom(ctx), appFrom(ctx).ID, in.ID)
	if err != nil {
		return nil, err
	}
	return webhookResult(e), nil
}

// Delivery is one event on its way to one endpoint, with its attempts.
type Delivery struct {
	ID            string     `json:"id" doc:"The delivery id."`
	EventID       string     `json:"event_id" doc:"The envelope id: the same on every retry."`
	EventType     string     `json:"event_type" doc:"The event delivered."`
	Status        string     `json:"status" enum:"pending,processing,delivered,failed" doc:"pending (waiting for its next attempt), processing, delivered (a 2xx answer) or failed (retries spent, or a 4xx)."`
	AttemptCount  int        `json:"attempt_count" doc:"Attempts made."`
	MaxAttempts   int        `json:"max_attempts" doc:"Attempts allowed: 1 plus the endpoint's retry_limit."`
	NextAttemptAt *time.Time `json:"next_attempt_at" doc:"When a failed delivery is retried; null when it will not be."`
	LastError     string     `json:"last_error" doc:"Why the last attempt failed; empty when none did."`
	CreatedAt     time.Time  `json:"created_at" doc:"When it was created (RFC 3339)."`
	UpdatedAt     time.Time  `json:"updated_at" doc:"When it last changed (RFC 3339)."`
	DeliveredAt   *time.Time `json:"delivered_at" doc:"When a 2xx answer came; null until then."`
	Attempts      []Attempt  `json:"attempts" doc:"Every attempt, oldest first."`
}

// Attempt is one HTTP attempt of a delivery.
type Attempt struct {
	Attempt        int       `json:"attempt" doc:"The attempt number, from 1."`
	StartedAt      time.Time `json:"started_at" doc:"When it started (RFC 3339)."`
	DurationMs     int64     `json:"duration_ms" doc:"How long it took, in milliseconds."`
	ResponseStatus *int      `json:"response_status" doc:"The endpoint's HTTP status; null when no answer came."`
	ResponseBody   string    `json:"response_body" doc:"The first KiB of the response body."`
	Error          string    `json:"error" doc:"Why it failed (timeout, connection refused, status); empty on success."`
}

func deliveryOut(d webhook.Delivery, attempts []webhook.Attempt) Delivery {
	out := Delivery{ID: d.ID, EventID: d.EventID, EventType: d.EventType, Status: d.Status, AttemptCount: d.Attempts,
		MaxAttempts: d.MaxAttempts, NextAttemptAt: d.NextAttemptAt, LastError: d.LastError, CreatedAt: d.CreatedAt,
		UpdatedAt: d.UpdatedAt, DeliveredAt: d.DeliveredAt, Attempts: make([]Attempt, 0, len(attempts))}
	for _, a := range attempts {
		out.Attempts = append(out.Attempts, Attempt{Attempt: a.Attempt, StartedAt: a.StartedAt, DurationMs: a.DurationMs,
			ResponseStatus: a.ResponseStatus, ResponseBody: a.ResponseBody, Error: a.Error})
	}
	return out
}

type deliveryOutput struct {
	Body struct {
		Delivery Delivery `json:"delivery" doc:"The delivery."`
	}
}

func (s *Server) testWebhook(ctx context.Context, in *appChildInput) (*deliveryOutput, error) {
	d, err := s.Webhooks.Test(ctx, principalFrom(ctx), appFrom(ctx).ID, in.ID)
	if err != nil {
		return nil, err
	}
	out := &deliveryOutput{}
	out.Body.Delivery = deliveryOut(d, nil)
	return out, nil
}

type deliveriesInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	ID    string `path:"id" doc:"The endpoint id."`
	Page  string `query:"page" doc:"1-based page (default 1)."`
	Limit string `query:"limit" doc:"Deliveries per page (default 25, at most 100)."`
}

type deliveriesOutput struct {
	Body struct {
		Deliveries  []Delivery `json:"deliveries" doc:"The deliveries of this page, newest first."`
		TotalCount  int        `json:"total_count" doc:"Matches over all pages."`
		TotalPages  int        `json:"total_pages" doc:"Pages of per_page items."`
		CurrentPage int        `json:"current_page" doc:"This page (1-based)."`
		PerPage     int        `json:"per_page" doc:"Items per page."`
	}
}

func (s *Server) listDeliveries(ctx context.Context, in *deliveriesInput) (*deliveriesOutput, error) {
	page, err := intParam("page", in.Page)
	if err != nil {
		return nil, err
	}
	limit, err := intParam("limit", in.Limit)
	if err != nil {
		return nil, err
	}
	p, err := s.Webhooks.Deliveries(ctx, principalFrom(ctx), appFrom(ctx).ID, in.ID, page, limit)
	if err != nil {
		return nil, err
	}
	out := &deliveriesOutput{}
	b := &out.Body
	b.Deliveries = make([]Delivery, 0, len(p.Deliveries))
	for _, d := range p.Deliveries {
		b.Deliveries = append(b.Deliveries, deliveryOut(d, p.Attempts[d.ID]))
	}
	b.TotalCount, b.CurrentPage, b.PerPage = p.Total, p.Page, p.PerPage
	b.TotalPages = (p.Total + p.PerPage - 1) / p.PerPage
	return out, nil
}

type redeliverInput struct {
	AppID      string `path:"app_id" doc:"The app id."`
	ID         string `path:"id" doc:"The endpoint id."`
	DeliveryID string `path:"delivery_id" doc:"The delivery id."`
}

func (s *Server) redeliver(ctx context.Context, in *redeliverInput) (*deliveryOutput, error) {
	d, err := s.Webhooks.Redeliver(ctx, principalFrom(ctx), appFrom(ctx).ID, in.ID, in.DeliveryID)
	if err != nil {
		return nil, err
	}
	out := &deliveryOutput{}
	out.Body.Delivery = deliveryOut(d, nil)
	return out, nil
}

type eventTypesOutput struct {
	Body struct {
		EventTypes []string `json:"event_types" doc:"Every event type an endpoint may subscribe to."`
	}
}

func (s *Server) webhookEventTypes(ctx context.Context, _ *appIDInput) (*eventTypesOutput, error) {
	types, err := s.Webhooks.EventTypes(ctx, principalFrom(ctx), appFrom(ctx).ID)
	if err != nil {
		return nil, err
	}
	out := &eventTypesOutput{}
	out.Body.EventTypes = types
	return out, nil
}
