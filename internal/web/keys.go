package web

import (
	"net/http"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/machine"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// The app's credentials: API keys, API secrets and M2M clients, each
// shown once on the answer that makes it (none is stored), each revocable.

type keysData struct {
	Keys    []tenant.APIKey
	Secrets []tenant.APISecret
	Clients []machine.Client
	// New is a credential just made, shown once here: NewKind says which.
	New, NewKind, Nick, ClientID string
}

func (h *Handler) credentials(w http.ResponseWriter, r *http.Request, p access.Principal, a tenant.App, d *keysData) error {
	var err error
	if d.Keys, err = h.Tenants.ListAPIKeys(r.Context(), p, a.ID); err != nil {
		return err
	}
	if d.Secrets, err = h.Tenants.ListSecrets(r.Context(), p, a.ID, ""); err != nil {
		return err
	}
	d.Clients, err = h.Machines.ListClients(r.Context(), p, a)
	return err
}

func (h *Handler) keys(w http.ResponseWriter, r *http.Request) {
	h.keysPage(w, r, http.StatusOK, keysData{})
}

func (h *Handler) keysPage(w http.ResponseWriter, r *http.Request, status int, d keysData) {
	p, a, v, ok := h.appPage(w, r, "Credentials", "keys")
	if !ok {
		return
	}
	if err := h.credentials(w, r, p, a, &d); err != nil {
		h.fail(w, r, err)
		return
	}
	v.Data, v.Notice = d, noticeOf(r)
	h.render(w, r, status, "keys", v)
}

// createCredential makes an API key, an API secret or an M2M client (form
// field kind) after a recent sign-in, and shows it on this answer only.
func (h *Handler) createCredential(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Credentials", "keys")
	if !ok {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	if !h.fresh(w, r) {
		return
	}
	d := keysData{NewKind: f.text("kind"), Nick: f.text("nickname")}
	var err error
	switch d.NewKind {
	case "secret":
		d.New, _, err = h.Tenants.CreateAppSecret(r.Context(), p, a.ID, d.Nick)
	case "m2m":
		var c machine.Client
		d.New, c, err = h.Machines.CreateClient(r.Context(), p, a, machine.ClientInput{Name: d.Nick})
		d.ClientID = c.ID
	case "key", "": // the form's first choice
		d.NewKind = "key"
		d.New, _, err = h.Tenants.CreateAPIKey(r.Context(), p, a.ID, d.Nick)
	default:
		err = errs.Invalidf("kind", "must be key, secret or m2m")
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.keysPage(w, r, http.StatusCreated, d)
}

// revokeCredential revokes an API key, API secret or M2M client (path
// kind) after a recent sign-in.
func (h *Handler) revokeCredential(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Credentials", "keys")
	if !ok {
		return
	}
	if !h.fresh(w, r) {
		return
	}
	id := r.PathValue("id")
	var err error
	switch r.PathValue("kind") {
	case "keys":
		_, err = h.Tenants.RevokeAPIKey(r.Context(), p, a.ID, id)
	case "secrets":
		err = h.revokeAppSecret(r, p, a, id)
	case "m2m":
		_, err = h.Machines.RevokeClient(r.Context(), p, a, id)
	default:
		h.notFound(w, r)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID+"/keys", "key-revoked")
}

// revokeAppSecret revokes one of this app's secrets (not a workspace
// secret, whatever id the form names).
func (h *Handler) revokeAppSecret(r *http.Request, p access.Principal, a tenant.App, id string) error {
	list, err := h.Tenants.ListSecrets(r.Context(), p, a.ID, "")
	if err != nil {
		return err
	}
	for _, s := range list {
		if s.ID == id {
			return h.Tenants.RevokeSecret(r.Context(), p, id)
		}
	}
	return tenant.ErrSecretNotFound
}
