package web

import (
	"encoding/csv"
	"html/template"
	"net/http"
	"net/url"
	"strconv"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
)

type usersData struct {
	Page      appuser.Page
	Q, Status string
	// The first and the next (older) page and the export, as "?query"
	// links (template.URL: a query string the template must not escape again).
	First, Next, ExportQuery template.URL
	Deeper                   bool // not the first page
	Statuses                 []string
}

// userFilter reads the one search box: a pasted id finds that user; an
// e-mail address or phone number (or its start) searches them.
func userFilter(q url.Values) appuser.Filter {
	f := appuser.Filter{Status: q.Get("status")}
	s := q.Get("q")
	if _, err := uuid.Parse(s); err == nil {
		f.ID = s
		return f
	}
	return appuser.Search(f, s)
}

func (h *Handler) users(w http.ResponseWriter, r *http.Request) {
	p, a, v, ok := h.appPage(w, r, "Users", "users")
	if !ok {
		return
	}
	q := r.URL.Query()
	f := userFilter(q)
	d := usersData{Q: q.Get("q"), Status: q.Get("status"), Statuses: []string{"active", "pending", "inactive", "imported"}}
	// Keyset pages: "older" continues after the last user shown (after=id),
	// which costs the same however deep (docs/performance.md).
	if after := q.Get("after"); after != "" {
		u, err := h.Users.Get(r.Context(), p, a, after)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		f.After = &appuser.UserCursor{CreatedAt: u.CreatedAt, ID: u.ID}
		d.Deeper = true
	}
	pg, err := h.Users.List(r.Context(), p, a, f, 1, appuser.DefaultPerPage+1)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	base := url.Values{}
	if d.Q != "" {
		base.Set("q", d.Q)
	}
	if d.Status != "" {
		base.Set("status", d.Status)
	}
	d.ExportQuery = query(base)
	if len(pg.Users) > appuser.DefaultPerPage {
		pg.Users = pg.Users[:appuser.DefaultPerPage]
		next := url.Values{}
		for k, vs := range base {
			next[k] = vs
		}
		next.Set("after", pg.Users[len(pg.Users)-1].ID)
		d.Next = query(next)
	}
	if d.Deeper {
		d.First = query(base)
	}
	d.Page = pg
	v.Data = d
	h.render(w, r, http.StatusOK, "users", v)
}

// query is v as a link's "?query" ("?" alone for none), built by
// url.Values, so safe to place in an href as it is.
func query(v url.Values) template.URL {
	return template.URL("?" + v.Encode())
}

// usersCSV exports the filtered list (up to 10 000 users, newest first):
// id, e-mail, phone, status, signed up, last sign-in.
func (h *Handler) usersCSV(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Users", "users")
	if !ok {
		return
	}
	f := userFilter(r.URL.Query())
	var rows []appuser.User
	for page := 1; len(rows) < 10000; page++ {
		pg, err := h.Users.List(r.Context(), p, a, f, page, appuser.MaxPerPage)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		rows = append(rows, pg.Users...)
		if page >= pg.TotalPages {
			break
		}
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="users.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"id", "email", "phone", "status", "email_verified", "phone_verified", "created_at", "last_sign_in_at"})
	for _, u := range rows {
		last := ""
		if u.LastUsedAt != nil {
			last = u.LastUsedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		_ = cw.Write(safeCSV(u.ID, u.Email, u.Phone, u.Status, strconv.FormatBool(u.EmailVerified), strconv.FormatBool(u.PhoneVerified),
			u.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), last))
	}
	cw.Flush()
}

type userData struct {
	User       appuser.User
	Sessions   []signin.Session
	Passkeys   []signin.Passkey
	Identities []signin.Identity
}

func (h *Handler) user(w http.ResponseWriter, r *http.Request) {
	p, a, v, ok := h.appPage(w, r, "User", "users")
	if !ok {
		return
	}
	u, sessions, err := h.SignIn.UserWithSessions(r.Context(), p, a, r.PathValue("user"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pks, err := h.SignIn.UserPasskeys(r.Context(), p, a, u.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ids, err := h.SignIn.UserIdentities(r.Context(), u.ID) // the user was read with p's Read access above
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v.Data, v.Notice = userData{User: u, Sessions: sessions, Passkeys: pks, Identities: ids}, noticeOf(r)
	h.render(w, r, http.StatusOK, "user", v)
}

// revokeUserSessions ends one session (form field session) or, without
// it, every live session of the user.
func (h *Handler) revokeUserSessions(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "User", "users")
	if !ok {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	userID := r.PathValue("user")
	ids := []string{f.text("session")}
	if ids[0] == "" {
		_, sessions, err := h.SignIn.UserWithSessions(r.Context(), p, a, userID)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		ids = ids[:0]
		for _, s := range sessions {
			ids = append(ids, s.ID)
		}
	}
	for _, id := range ids {
		if err := h.SignIn.RevokeUserSession(r.Context(), p, a, userID, id); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	back(w, r, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID+"/users/"+userID, "revoked")
}

func (h *Handler) userPath(a string, r *http.Request) string {
	return "/console/w/" + r.PathValue("ws") + "/apps/" + a + "/users/" + r.PathValue("user")
}

// setUserStatus activates or deactivates a user (form field status), as
// PATCH /v1/{app}/users/{id}/status does.
func (h *Handler) setUserStatus(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "User", "users")
	if !ok {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	if _, err := h.Users.SetStatus(r.Context(), p, a, r.PathValue("user"), f.text("status")); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, h.userPath(a.ID, r), "status-changed")
}

// deleteUser deletes a user for good: it needs a recent sign-in.
func (h *Handler) deleteUser(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "User", "users")
	if !ok {
		return
	}
	if !h.fresh(w, r) {
		return
	}
	if err := h.Users.Delete(r.Context(), p, a, r.PathValue("user")); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID+"/users", "user-deleted")
}

func (h *Handler) deleteUserPasskey(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "User", "users")
	if !ok {
		return
	}
	if err := h.SignIn.DeleteUserPasskey(r.Context(), p, a, r.PathValue("user"), r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, h.userPath(a.ID, r), "passkey-removed")
}

func (h *Handler) unlinkUserIdentity(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "User", "users")
	if !ok {
		return
	}
	if err := h.SignIn.AdminUnlinkIdentity(r.Context(), p, a, r.PathValue("user"), r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, h.userPath(a.ID, r), "identity-unlinked")
}
