package web

import (
	"net/http"

	"github.com/gatehouse-auth/gatehouse/internal/console"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

type membersData struct {
	Members []tenant.Member
	Error   string
	Me      string // the operator's member id
	// Strong: the workspace requires a second factor of its operators.
	Strong bool
}

func (h *Handler) members(w http.ResponseWriter, r *http.Request) {
	h.membersPage(w, r, http.StatusOK, "")
}

func (h *Handler) membersPage(w http.ResponseWriter, r *http.Request, status int, problem string) {
	p, v, ok := h.workspacePage(w, r, "Members", "members")
	if !ok {
		return
	}
	list, err := h.Tenants.ListMembers(r.Context(), p, v.Workspace.WorkspaceID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v.Data, v.Notice = membersData{Members: list, Error: problem, Me: v.Workspace.ID, Strong: console.Requires(*v.Workspace)}, noticeOf(r)
	h.render(w, r, status, "members", v)
}

func (h *Handler) addMember(w http.ResponseWriter, r *http.Request) {
	p, v, ok := h.workspacePage(w, r, "Members", "members")
	if !ok {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	_, err := h.Tenants.AddMember(r.Context(), p, v.Workspace.WorkspaceID, f.text("email"), f.text("name"), f.text("role"))
	h.done(w, r, err, "/console/w/"+v.Workspace.WorkspaceID+"/members", "member-added",
		func(msg string) { h.membersPage(w, r, http.StatusBadRequest, msg) })
}

func (h *Handler) changeRole(w http.ResponseWriter, r *http.Request) {
	p, v, ok := h.workspacePage(w, r, "Members", "members")
	if !ok {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	_, err := h.Tenants.ChangeMemberRole(r.Context(), p, v.Workspace.WorkspaceID, r.PathValue("member"), f.text("role"))
	h.done(w, r, err, "/console/w/"+v.Workspace.WorkspaceID+"/members", "role-changed",
		func(msg string) { h.membersPage(w, r, http.StatusBadRequest, msg) })
}

func (h *Handler) removeMember(w http.ResponseWriter, r *http.Request) {
	p, v, ok := h.workspacePage(w, r, "Members", "members")
	if !ok {
		return
	}
	if !h.fresh(w, r) {
		return
	}
	if err := h.Tenants.RemoveMember(r.Context(), p, v.Workspace.WorkspaceID, r.PathValue("member")); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/w/"+v.Workspace.WorkspaceID+"/members", "member-removed")
}

// requireSecondFactor turns the workspace's console.RequireSecondFactor
// setting on or off (a workspace.updated like the API's). Turning it on
// needs a strong sign-in itself, so nobody locks themselves out by accident.
func (h *Handler) requireSecondFactor(w http.ResponseWriter, r *http.Request) {
	p, v, ok := h.workspacePage(w, r, "Members", "members")
	if !ok {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	on := f.text("require") == "on"
	if sess, _ := sessionOf(r.Context()); on && !console.Strong(sess.Method) {
		h.membersPage(w, r, http.StatusBadRequest, "Not saved: sign in with a passkey or an authenticator app first, or the setting would shut you out.")
		return
	}
	var value any // nil removes the key
	if on {
		value = true
	}
	_, err := h.Tenants.UpdateWorkspace(r.Context(), p, v.Workspace.WorkspaceID, tenant.WorkspacePatch{Settings: map[string]any{console.RequireSecondFactor: value}})
	h.done(w, r, err, "/console/w/"+v.Workspace.WorkspaceID+"/members", "saved",
		func(msg string) { h.membersPage(w, r, http.StatusBadRequest, msg) })
}
