package web

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
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
	Error      string       // a refused change, with the API's reason
	// Form is the edit form: the endpoint's settings, or what a refused
	// change sent; Events are the event types it offers (the API's list
	// but webhook.test, and any pattern the endpoint has, such as
	// verification.*).
	Form   webhookForm
	Events []string
	// drafted: Form is what a refused change sent.
	drafted bool
}

// webhookForm is the edit form's fields.
type webhookForm struct {
	URL, Description, RetryLimit string
	Enabled, AllEvents           bool
	EventTypes                   []string
}

func formOf(ep webhook.Endpoint) webhookForm {
	return webhookForm{URL: ep.URL, Description: ep.Description, RetryLimit: strconv.Itoa(ep.RetryLimit), Enabled: ep.Enabled,
		AllEvents: len(ep.EventTypes) == 0, EventTypes: ep.EventTypes}
}

func (h *Handler) webhookEndpoint(w http.ResponseWriter, r *http.Request) {
	h.endpointPage(w, r, http.StatusOK, endpointData{})
}

// endpointPage shows an endpoint with d's secret, error and form (a zero
// form: the endpoint's own settings).
func (h *Handler) endpointPage(w http.ResponseWriter, r *http.Request, status int, d endpointData) {
	p, a, v, ok := h.appPage(w, r, "Webhook", "webhooks")
	if !ok {
		return
	}
	ep, err := h.Webhooks.Get(r.Context(), p, a.ID, r.PathValue("ep"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	events, err := h.Webhooks.EventTypes(r.Context(), p, a.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	page, _ := strconv.Atoi(q.Get("page"))
	filter := q.Get("status")
	pg, err := h.Webhooks.DeliveriesByStatus(r.Context(), p, a.ID, ep.ID, filter, max(page, 1), 25)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.Endpoint, d.Page, d.Status, d.Statuses = ep, pg, filter, webhook.DeliveryStatuses
	if !d.drafted {
		d.Form = formOf(ep)
	}
	// webhook.test goes to the endpoint tested, whatever its events: it is
	// not offered (an endpoint that has it keeps it, below).
	d.Events = slices.DeleteFunc(events, func(t string) bool { return t == webhook.WebhookTest })
	for _, t := range append(slices.Clone(ep.EventTypes), d.Form.EventTypes...) {
		if !slices.Contains(d.Events, t) {
			d.Events = append(d.Events, t)
		}
	}
	link := func(n int) template.URL {
		u := url.Values{"page": {strconv.Itoa(n)}}
		if filter != "" {
			u.Set("status", filter)
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
	h.render(w, r, status, "webhook", v)
}

// updateWebhook changes an endpoint's URL, events, retries, description
// and enabled flag, as PATCH /v1/apps/{app_id}/webhooks/{id} does (one
// webhook.updated audit entry with before and after). "Only the ticked
// events" with none ticked is refused: an empty list means every event.
func (h *Handler) updateWebhook(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Webhook", "webhooks")
	if !ok {
		return
	}
	// It can send the app's users' data elsewhere (a new URL) or let a new
	// provider sign them in: a recent sign-in, as for deleting.
	if !h.fresh(w, r) {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	in := webhook.Input{URL: f.textp("url"), Description: f.textp("description"), Enabled: f.check("enabled")}
	if n := f.int64p("retry_limit"); n != nil && f.err == nil {
		in.RetryLimit = new(int)
		*in.RetryLimit = int(max(min(*n, 1<<20), -1)) // out of range either way: the service says which range
	}
	draft := webhookForm{URL: f.text("url"), Description: f.text("description"), RetryLimit: f.text("retry_limit"),
		Enabled: f.has("enabled"), AllEvents: f.text("events") != "some"}
	err := f.err
	switch mode := f.text("events"); mode {
	case "all":
		in.EventTypes = &[]string{}
	case "some":
		types := []string{}
		for _, t := range f.r.PostForm["event_types"] {
			if t = strings.TrimSpace(t); t != "" {
				types = append(types, t)
			}
		}
		in.EventTypes, draft.EventTypes = &types, types
		if len(types) == 0 && err == nil {
			err = errs.Invalidf("event_types", "must name at least one event: tick one, or choose every event")
		}
	case "":
	default:
		if err == nil {
			err = errs.Invalidf("events", "must be all or some")
		}
	}
	if err == nil {
		_, err = h.Webhooks.Update(r.Context(), p, a.ID, r.PathValue("ep"), in)
	}
	h.done(w, r, err, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID+"/webhooks/"+r.PathValue("ep"), "saved", func(msg string) {
		h.endpointPage(w, r, http.StatusBadRequest, endpointData{Error: msg, Form: draft, drafted: true})
	})
}

// deleteWebhook deletes an endpoint with its deliveries, as DELETE
// /v1/apps/{app_id}/webhooks/{id} does. It needs a recent sign-in and the
// box ticked.
func (h *Handler) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Webhook", "webhooks")
	if !ok {
		return
	}
	if !h.fresh(w, r) {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	if !f.has("confirm") {
		h.endpointPage(w, r, http.StatusBadRequest, endpointData{Error: "Not deleted: tick the box to confirm."})
		return
	}
	err := h.Webhooks.Delete(r.Context(), p, a.ID, r.PathValue("ep"))
	h.done(w, r, err, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID+"/webhooks", "webhook-deleted",
		func(msg string) { h.endpointPage(w, r, http.StatusBadRequest, endpointData{Error: msg}) })
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
	h.endpointPage(w, r, http.StatusOK, endpointData{Secret: ep.Secret})
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
