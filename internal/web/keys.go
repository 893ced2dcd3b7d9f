package web

import (
	"net/http"

	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

type keysData struct {
	Keys []tenant.APIKey
	New  string // a key just made: shown once, here
	Nick string
}

func (h *Handler) keys(w http.ResponseWriter, r *http.Request) {
	p, a, v, ok := h.appPage(w, r, "API keys", "keys")
	if !ok {
		return
	}
	list, err := h.Tenants.ListAPIKeys(r.Context(), p, a.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v.Data, v.Notice = keysData{Keys: list}, noticeOf(r)
	h.render(w, r, http.StatusOK, "keys", v)
}

// createKey makes an API key and shows it on the answer itself, once: it
// is never stored, so no later page can show it again.
func (h *Handler) createKey(w http.ResponseWriter, r *http.Request) {
	p, a, v, ok := h.appPage(w, r, "API keys", "keys")
	if !ok {
		return
	}
	f, err := parseForm(w, r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !h.fresh(w, r) {
		return
	}
	key, rec, err := h.Tenants.CreateAPIKey(r.Context(), p, a.ID, f.text("nickname"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	list, err := h.Tenants.ListAPIKeys(r.Context(), p, a.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v.Data = keysData{Keys: list, New: key, Nick: rec.Nickname}
	h.render(w, r, http.StatusCreated, "keys", v)
}

func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "API keys", "keys")
	if !ok {
		return
	}
	if !h.fresh(w, r) {
		return
	}
	if _, err := h.Tenants.RevokeAPIKey(r.Context(), p, a.ID, r.PathValue("key")); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID+"/keys", "key-revoked")
}
