package web

import (
	"net/http"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

type healthData struct {
	Messages  outbound.Health
	OldestAge string
	Endpoints []webhook.Endpoint
	Counts    map[string]map[string]int
}

// health is the app's delivery health: its part of the send queue and its
// webhook deliveries of the last week, by endpoint and status.
func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	p, a, v, ok := h.appPage(w, r, "Delivery health", "health")
	if !ok {
		return
	}
	now := h.Now()
	m, err := h.Outbound.Health(r.Context(), p, a, now)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	eps, err := h.Webhooks.List(r.Context(), p, a.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	counts, err := h.Webhooks.DeliveryCounts(r.Context(), p, a.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := healthData{Messages: m, Endpoints: eps, Counts: counts}
	if !m.Oldest.IsZero() {
		d.OldestAge = now.Sub(m.Oldest).Round(time.Second).String()
	}
	v.Data = d
	h.render(w, r, http.StatusOK, "health", v)
}
