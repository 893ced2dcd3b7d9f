package web

import (
	"encoding/csv"
	"net/http"

	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

type auditData struct {
	Entries               []tenant.AuditEntry
	Action, Actor, Target string
	AppID                 string
	Next                  string // the cursor of the next page
}

func auditFilter(r *http.Request) tenant.AuditFilter {
	q := r.URL.Query()
	return tenant.AuditFilter{AppID: q.Get("app_id"), Action: q.Get("action"), ActorID: q.Get("actor"), TargetID: q.Get("target_id"), Before: q.Get("cursor")}
}

// auditLog is GET /v1/workspaces/{id}/audit_log as a page (owners and admins).
func (h *Handler) auditLog(w http.ResponseWriter, r *http.Request) {
	p, v, ok := h.workspacePage(w, r, "Audit log", "audit")
	if !ok {
		return
	}
	f := auditFilter(r)
	f.Limit = tenant.DefaultAuditPage
	list, err := h.Tenants.AuditLog(r.Context(), p, v.Workspace.WorkspaceID, f)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := auditData{Entries: list, Action: f.Action, Actor: f.ActorID, Target: f.TargetID, AppID: f.AppID}
	if len(list) == f.Limit {
		d.Next = list[len(list)-1].ID
	}
	v.Data = d
	h.render(w, r, http.StatusOK, "audit", v)
}

// auditCSV exports the filtered log (up to 10 000 entries, newest first).
func (h *Handler) auditCSV(w http.ResponseWriter, r *http.Request) {
	p, v, ok := h.workspacePage(w, r, "Audit log", "audit")
	if !ok {
		return
	}
	f := auditFilter(r)
	f.Limit = tenant.MaxAuditPage
	var all []tenant.AuditEntry
	for len(all) < 10000 {
		list, err := h.Tenants.AuditLog(r.Context(), p, v.Workspace.WorkspaceID, f)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		all = append(all, list...)
		if len(list) < f.Limit {
			break
		}
		f.Before = list[len(list)-1].ID
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="audit-log.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"id", "time", "action", "app_id", "target_type", "target_id", "actor_kind", "actor_id", "member_id", "before", "after", "ip", "user_agent"})
	for _, e := range all {
		_ = cw.Write(safeCSV(e.ID, e.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), e.Action, e.AppID, e.TargetType, e.TargetID, e.ActorKind, e.ActorID,
			e.MemberID, string(e.Before), string(e.After), e.IP, e.UserAgent))
	}
	cw.Flush()
}

// safeCSV keeps a spreadsheet from reading a cell as a formula (CSV
// injection): a cell starting with = + - @ or a tab gets a leading quote.
func safeCSV(cells ...string) []string {
	for i, c := range cells {
		if c != "" && (c[0] == '=' || c[0] == '+' || c[0] == '-' || c[0] == '@' || c[0] == '\t' || c[0] == '\r') {
			cells[i] = "'" + c
		}
	}
	return cells
}
