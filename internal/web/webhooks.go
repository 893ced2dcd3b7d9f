package web

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

type webhooksData struct {
	Endpoints []webhook.Endpoint
	Events    []string
	Error     string
	// A secret just made (a new endpoint or a rotation): shown once, here.
	Secret, SecretFor string
}

func (h *Handler) webhooks(w http.ResponseWriter, r *http.Request) {
	h.webhooksPage(w, r, http.StatusOK, webhooksData{})
}

func (h *Handler) webhooksPage(w http.ResponseWriter, r *http.Request, status int, d webhooksData) {
	p, a, v, ok := h.appPage(w, r, "Webhooks", "webhooks")
	if !ok {
		return
	}
	list, err := h.Webhooks.List(r.Context(), p, a.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	events, err := h.Webhooks.EventTypes(r.Context(), p, a.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.Endpoints, d.Events = list, events
	v.Data, v.Notice = d, noticeOf(r)
	h.render(w, r, status, "webhooks", v)
}

// createWebhook adds an endpoint; its signing secret is shown on this
// answer only.
func (h *Handler) createWebhook(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Webhooks", "webhooks")
	if !ok {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	in := webhook.Input{URL: f.textp("url"), Description: f.textp("description")}
	if types := f.list("event_types"); types != nil && len(*types) > 0 {
		in.EventTypes = types
	}
	ep, err := h.Webhooks.Create(r.Context(), p, a.ID, in)
	if err != nil {
		if msg, ok := invalid(err); ok {
			h.webhooksPage(w, r, http.StatusBadRequest, webhooksData{Error: msg})
			return
		}
		h.fail(w, r, err)
		return
	}
	h.webhooksPage(w, r, http.StatusCreated, webhooksData{Secret: ep.Secret, SecretFor: ep.URL})
}

type endpointData struct {
	Endpoint   webhook.Endpoint
	Page       webhook.DeliveryPage
	Status     string
	Statuses   []string
	Prev, Next template.URL // "?query" links
	Secret     string       // after a rotation: shown once
}

func (h *Handler) webhookEndpoint(w http.ResponseWriter, r *http.Request) {
	h.endpointPage(w, r, "")
}

func (h *Handler) endpointPage(w http.ResponseWriter, r *http.Request, secret string) {
	p, a, v, ok := h.appPage(w, r, "Webhook", "webhooks")
	if !ok {
		return
	}
	ep, err := h.Webhooks.Get(r.Context(), p, a.ID, r.PathValue("ep"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	page, _ := strconv.Atoi(q.Get("page"))
	status := q.Get("status")
	pg, err := h.Webhooks.DeliveriesByStatus(r.Context(), p, a.ID, ep.ID, status, max(page, 1), 25)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := endpointData{Endpoint: ep, Page: pg, Status: status, Statuses: webhook.DeliveryStatuses, Secret: secret}
	link := func(n int) template.URL {
		u := url.Values{"page": {strconv.Itoa(n)}}
		if status != "" {
			u.Set("status", status)
		}
		return query(u)
	}
	if pg.Page > 1 {
		d.Prev = link(pg.Page - 1)
	}
	if pg.Page*pg.PerPage < pg.Total {
		d.Next = link(pg.Page + 1)
	}
	v.Data, v.Notice = d, noticeOf(r)
	h.render(w, r, http.StatusOK, "webhook", v)
}

// rotateWebhookSecret gives the endpoint a new secret (the old one signs
// too for webhook.RotationOverlap), shown on this answer only. Rotating a
// key needs a recent sign-in.
func (h *Handler) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Webhook", "webhooks")
	if !ok {
		return
	}
	if !h.fresh(w, r) {
		return
	}
	ep, err := h.Webhooks.RotateSecret(r.Context(), p, a.ID, r.PathValue("ep"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.endpointPage(w, r, ep.Secret)
}

func (h *Handler) testWebhook(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Webhook", "webhooks")
	if !ok {
		return
	}
	if _, err := h.Webhooks.Test(r.Context(), p, a.ID, r.PathValue("ep")); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID+"/webhooks/"+r.PathValue("ep"), "test-sent")
}

type deliveryData struct {
	Endpoint webhook.Endpoint
	Delivery webhook.Delivery
	Attempts []webhook.Attempt
	Body     string
}

func (h *Handler) webhookDelivery(w http.ResponseWriter, r *http.Request) {
	p, a, v, ok := h.appPage(w, r, "Webhook delivery", "webhooks")
	if !ok {
		return
	}
	ep, err := h.Webhooks.Get(r.Context(), p, a.ID, r.PathValue("ep"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d, attempts, body, err := h.Webhooks.DeliveryDetail(r.Context(), p, a.ID, ep.ID, r.PathValue("d"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(body)
	}
	v.Data, v.Notice = deliveryData{Endpoint: ep, Delivery: d, Attempts: attempts, Body: pretty.String()}, noticeOf(r)
	h.render(w, r, http.StatusOK, "delivery", v)
}

// redeliverWebhook queues the delivery again, as the API's redeliver does
// (the same event and id, a fresh retry budget); one still in progress is
// refused (409).
func (h *Handler) redeliverWebhook(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Webhook delivery", "webhooks")
	if !ok {
		return
	}
	if _, err := h.Webhooks.Redeliver(r.Context(), p, a.ID, r.PathValue("ep"), r.PathValue("d")); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID+"/webhooks/"+r.PathValue("ep")+"/deliveries/"+r.PathValue("d"), "redelivered")
}
