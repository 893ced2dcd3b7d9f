package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/webhook"
	"github.com/gatehouse-auth/gatehouse/internal/webhook/eventschema"
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

var createWebhookOp = operation{id: "createWebhook", method: "POST", path: "/v1/apps/{app_id}/webhooks", summary: "Create a webhook endpoint", tag: "Webhooks",
	auth: authApp, errors: []string{"webhook_limit_reached"},
	desc: "Adds a webhook endpoint: events of the app are POSTed to its https `url`, signed with HMAC-SHA256 (`X-Webhook-Signature: t=…,v1=…`). The response is the only one that shows the signing `secret`. `event_types` omitted or empty: every event. Retries follow `retry_limit` (0 to 10, default 3) with exponential backoff; a 4xx answer is not retried. 409 webhook_limit_reached when the app has as many endpoints as allowed. With the app's API secret, an API key or a workspace secret of an owner or admin.",
	req:  `{"webhook":{"url":"https://hooks.example.com/gatehouse","event_types":["user.created","verification.*"],"description":"CRM sync"}}`,
	resp: body(func(o *webhookOutput) {
		w := exWebhook
		w.Secret = "whsec_EXAMPLEnotARealSecretEXAMPLE000000"
		o.Body.Webhook = w
	})}

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

var listWebhooksOp = operation{id: "listWebhooks", method: "GET", path: "/v1/apps/{app_id}/webhooks", summary: "List webhook endpoints", tag: "Webhooks",
	auth: authApp,
	desc: "The app's webhook endpoints, without their secrets.",
	resp: body(func(o *webhooksOutput) { o.Body.Webhooks = []Webhook{exWebhook} })}

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

var getWebhookOp = operation{id: "getWebhook", method: "GET", path: "/v1/apps/{app_id}/webhooks/{id}", summary: "Get a webhook endpoint", tag: "Webhooks",
	auth: authApp, errors: []string{"webhook_not_found"},
	desc: "One webhook endpoint, without its secret. 404 webhook_not_found for an unknown id.",
	resp: body(func(o *webhookOutput) { o.Body.Webhook = exWebhook })}

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

var updateWebhookOp = operation{id: "updateWebhook", method: "PATCH", path: "/v1/apps/{app_id}/webhooks/{id}", summary: "Update a webhook endpoint", tag: "Webhooks",
	auth: authApp, errors: []string{"webhook_not_found"},
	desc: "Changes an endpoint's url, event types, retry limit, description, metadata or enabled flag; omitted fields keep their value. A disabled endpoint gets no new events. The secret does not change (see rotate_secret).",
	req:  `{"webhook":{"enabled":false}}`,
	resp: body(func(o *webhookOutput) { w := exWebhook; w.Enabled = false; o.Body.Webhook = w })}

func (s *Server) updateWebhook(ctx context.Context, in *webhookUpdateInput) (*webhookOutput, error) {
	e, err := s.Webhooks.Update(ctx, principalFrom(ctx), appFrom(ctx).ID, in.ID, in.Body.Webhook.input())
	if err != nil {
		return nil, err
	}
	return webhookResult(e), nil
}

var deleteWebhookOp = operation{id: "deleteWebhook", method: "DELETE", path: "/v1/apps/{app_id}/webhooks/{id}", summary: "Delete a webhook endpoint", tag: "Webhooks",
	auth: authApp, errors: []string{"webhook_not_found"},
	desc: "Deletes an endpoint: nothing more is sent to it.",
	resp: okBody}

func (s *Server) deleteWebhook(ctx context.Context, in *appChildInput) (*okOutput, error) {
	if err := s.Webhooks.Delete(ctx, principalFrom(ctx), appFrom(ctx).ID, in.ID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

var rotateWebhookSecretOp = operation{id: "rotateWebhookSecret", method: "POST", path: "/v1/apps/{app_id}/webhooks/{id}/rotate_secret", summary: "Rotate the signing secret", tag: "Webhooks",
	auth: authApp, errors: []string{"webhook_not_found"},
	desc: "Gives the endpoint a new signing secret, returned this once. For 24 hours the previous secret signs too (one `v1=` each in the signature header), so a receiver can switch without losing events.",
	resp: body(func(o *webhookOutput) {
		w := exWebhook
		w.Secret, w.PreviousExpiresAt = "whsec_EXAMPLEnotARealSecretEXAMPLE000001", ptr(exT1.Add(24*time.Hour))
		o.Body.Webhook = w
	})}

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

var testWebhookOp = operation{id: "testWebhook", method: "POST", path: "/v1/apps/{app_id}/webhooks/{id}/test", summary: "Send a webhook.test event", tag: "Webhooks",
	auth: authApp, errors: []string{"webhook_not_found"},
	desc: "Sends a `webhook.test` event to this endpoint only (even if it is not subscribed to it) and answers the queued delivery; follow it in the deliveries list.",
	resp: body(func(o *deliveryOutput) {
		d := exDelivery
		d.EventType, d.Status, d.AttemptCount, d.DeliveredAt, d.Attempts = "webhook.test", "pending", 0, nil, []Attempt{}
		o.Body.Delivery = d
	})}

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

var listWebhookDeliveriesOp = operation{id: "listWebhookDeliveries", method: "GET", path: "/v1/apps/{app_id}/webhooks/{id}/deliveries", summary: "List a webhook endpoint's deliveries", tag: "Webhooks",
	auth: authApp, errors: []string{"webhook_not_found"},
	desc: "The endpoint's deliveries, newest first, each with its attempts (status, duration, the first KiB of the answer, error), a page at a time (`page`, `limit`: default 25, at most 100).",
	resp: body(func(o *deliveriesOutput) {
		o.Body.Deliveries, o.Body.TotalCount, o.Body.TotalPages, o.Body.CurrentPage, o.Body.PerPage = []Delivery{exDelivery}, 1, 1, 1, 25
	})}

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

var redeliverWebhookOp = operation{id: "redeliverWebhook", method: "POST", path: "/v1/apps/{app_id}/webhooks/{id}/deliveries/{delivery_id}/redeliver", summary: "Deliver an event again", tag: "Webhooks",
	auth: authApp, errors: []string{"webhook_not_found", "delivery_not_found", "delivery_in_progress"},
	desc: "Queues a finished delivery again: the same event, with the same envelope id, and a fresh retry budget. 409 delivery_in_progress while it is still queued or being retried.",
	resp: body(func(o *deliveryOutput) {
		d := exDelivery
		d.Status, d.DeliveredAt = "pending", nil
		o.Body.Delivery = d
	})}

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

var webhookEventTypesOp = operation{id: "webhookEventTypes", method: "GET", path: "/v1/apps/{app_id}/webhooks/event_types", summary: "List the webhook event types", tag: "Webhooks",
	auth: authApp,
	desc: "Every event type an endpoint may subscribe to (verification.{email,sms}.{outcome}, challenge.*, user.*, webhook.test and the others).",
	resp: `{"event_types":["challenge.completed","challenge.created","challenge.failed","user.created","user.updated","webhook.test"]}`}

func (s *Server) webhookEventTypes(ctx context.Context, _ *appIDInput) (*eventTypesOutput, error) {
	types, err := s.Webhooks.EventTypes(ctx, principalFrom(ctx), appFrom(ctx).ID)
	if err != nil {
		return nil, err
	}
	out := &eventTypesOutput{}
	out.Body.EventTypes = types
	return out, nil
}

var webhookEventSchemaOp = operation{id: "webhookEventSchema", method: "GET", path: eventschema.Path, summary: "JSON Schema of webhook events", tag: "Webhooks",
	contentType: "application/json",
	desc: "The JSON Schema (draft 2020-12) of every webhook delivery's body, generated from the server's code: " +
		"one definition per event type (the envelope, its event_type a const, and its typed data), their union under oneOf " +
		"with a discriminator on event_type. Public, the same for every app; cacheable for an hour. Feed it to a code " +
		"generator to get types for your receiver. The OpenAPI document carries the same schemas and lists each event under webhooks.",
	resp: `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"Gatehouse webhook events","description":"The body of every webhook delivery.",` +
		`"oneOf":[{"$ref":"#/$defs/WebhookTestEvent"}],"discriminator":{"propertyName":"event_type","mapping":{"webhook.test":"#/$defs/WebhookTestEvent"}},` +
		`"$defs":{"WebhookTestEvent":{"type":"object","properties":{"event_type":{"type":"string","const":"webhook.test"}}}}}`}

// eventSchema serves eventschema.Document.
func (s *Server) eventSchema(w http.ResponseWriter, _ *http.Request) {
	b := eventschema.Document()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}
