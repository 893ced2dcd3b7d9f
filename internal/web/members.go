package web

import (
	"net/http"

	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

type membersData struct {
	Members []tenant.Member
	Error   string
	Me      string // the operator's member id
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
	v.Data, v.Notice = membersData{Members: list, Error: problem, Me: v.Workspace.ID}, noticeOf(r)
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
