package web

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

type usersData struct {
	Page            appuser.Page
	Q, Status, Sort string
	// The first and the next (older) page and the export, as "?query"
	// links (template.URL: a query string the template must not escape again).
	First, Next, ExportQuery template.URL
	Deeper                   bool // not the first page
	Statuses                 []string
	Names                    bool   // the app has name fields to search
	In                       string // "names" when they are searched
	More                     bool   // the count stopped past nameCountUpTo
}

// nameCountUpTo is where a name search's count stops ("more than 1000").
const nameCountUpTo = 1000

// userFilter reads the one search box: a pasted id finds that user; an
// e-mail address or phone number (or its start) searches them; with
// in=names, words search the app's name fields instead
// (appuser.SearchNames). The order is newest first unless
// sort=last_sign_in (anything else is the default).
func userFilter(q url.Values, app tenant.App) appuser.Filter {
	f := appuser.Filter{Status: q.Get("status")}
	if q.Get("sort") == appuser.SortLastSignIn {
		f.Sort = appuser.SortLastSignIn
	}
	s := q.Get("q")
	if q.Get("in") == "names" {
		// A common word may match much of a large app: the count stops
		// past nameCountUpTo.
		f.CountUpTo = nameCountUpTo
		return appuser.SearchNames(f, s, app)
	}
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
	f := userFilter(q, a)
	d := usersData{Q: q.Get("q"), Status: q.Get("status"), Sort: f.Sort, Statuses: []string{"active", "pending", "inactive", "imported"},
		Names: len(appuser.NameKeys(a)) > 0, In: q.Get("in")}
	if d.In != "names" {
		d.In = ""
	}
	// Keyset pages: "next" continues after the last user shown (after=id),
	// which costs the same however deep (docs/performance.md).
	if after := q.Get("after"); after != "" {
		u, err := h.Users.Get(r.Context(), p, a, after)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		f.After = &appuser.UserCursor{CreatedAt: u.CreatedAt, LastUsedAt: u.LastUsedAt, ID: u.ID}
		// By last sign-in the cursor is the time the page showed (at=),
		// not the user's current one: a sign-in since must not send the
		// next page back to the top.
		if at := q.Get("at"); at == "none" {
			f.After.LastUsedAt = nil
		} else if at != "" {
			t, err := time.Parse(time.RFC3339Nano, at)
			if err != nil {
				h.fail(w, r, errs.Invalidf("at", "is not a page cursor this list made"))
				return
			}
			f.After.LastUsedAt = &t
		}
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
	if d.In != "" {
		base.Set("in", d.In)
	}
	if d.Status != "" {
		base.Set("status", d.Status)
	}
	if d.Sort != "" {
		base.Set("sort", d.Sort)
	}
	d.ExportQuery = query(base)
	if len(pg.Users) > appuser.DefaultPerPage {
		pg.Users = pg.Users[:appuser.DefaultPerPage]
		next := url.Values{}
		for k, vs := range base {
			next[k] = vs
		}
		last := pg.Users[len(pg.Users)-1]
		next.Set("after", last.ID)
		if d.Sort == appuser.SortLastSignIn {
			next.Set("at", "none")
			if last.LastUsedAt != nil {
				next.Set("at", last.LastUsedAt.UTC().Format(time.RFC3339Nano))
			}
		}
		d.Next = query(next)
	}
	if d.Deeper {
		d.First = query(base)
	}
	d.Page = pg
	d.More = f.CountUpTo > 0 && pg.Total > f.CountUpTo
	v.Data = d
	h.render(w, r, http.StatusOK, "users", v)
}

// query is v as a link's "?query" ("?" alone for none), built by
// url.Values, so safe to place in an href as it is.
func query(v url.Values) template.URL {
	return template.URL("?" + v.Encode())
}

// usersCSV exports the filtered list (up to 10 000 users, in the list's order):
// id, e-mail, phone, status, signed up, last sign-in.
func (h *Handler) usersCSV(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Users", "users")
	if !ok {
		return
	}
	f := userFilter(r.URL.Query(), a)
	var rows []appuser.User
	// Keyset pages, each after the last row read: a user signing up or in
	// meanwhile shifts no later page (no row twice, none skipped for it).
	for len(rows) < 10000 {
		pg, err := h.Users.List(r.Context(), p, a, f, 1, appuser.MaxPerPage)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		rows = append(rows, pg.Users...)
		if len(pg.Users) < appuser.MaxPerPage {
			break
		}
		last := pg.Users[len(pg.Users)-1]
		f.After = &appuser.UserCursor{CreatedAt: last.CreatedAt, LastUsedAt: last.LastUsedAt, ID: last.ID}
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
	MFA        signin.UserMFA
	// SignIns is the recent sign-in history (live and ended sessions);
	// Changes the administrative changes made to the user (owners and
	// admins only: the audit log is theirs).
	SignIns []signin.Session
	Changes []tenant.AuditEntry
	Now     time.Time
	// The profile form: the app's declared metadata fields, and the values
	// shown (the user's, or what a refused save sent) with the reason.
	Fields             appuser.Schema
	Email, Phone, Meta string
	ProfileError       string
	Version            string // the user's version the form was made from (version)
}

// version is a user's version for the profile form: when its row last
// changed (sign-ins do not change it).
func version(u appuser.User) string { return u.UpdatedAt.UTC().Format(time.RFC3339Nano) }

// recentSignIns is how many sessions the user page's history shows.
const recentSignIns = 20

func (h *Handler) user(w http.ResponseWriter, r *http.Request) {
	p, a, v, ok := h.appPage(w, r, "User", "users")
	if !ok {
		return
	}
	d, err := h.userData(r, p, a, v)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.Email, d.Phone, d.Meta, d.Version = d.User.Email, d.User.Phone, metaText(d.User.Meta), version(d.User)
	v.Data, v.Notice = d, noticeOf(r)
	h.render(w, r, http.StatusOK, "user", v)
}

// userData reads everything the user page shows but the form's values.
func (h *Handler) userData(r *http.Request, p access.Principal, a tenant.App, v view) (userData, error) {
	ctx := r.Context()
	u, sessions, err := h.SignIn.UserWithSessions(ctx, p, a, r.PathValue("user"))
	if err != nil {
		return userData{}, err
	}
	d := userData{User: u, Sessions: sessions, Fields: appuser.SchemaOf(a), Now: h.Now()}
	if d.Passkeys, err = h.SignIn.UserPasskeys(ctx, p, a, u.ID); err != nil {
		return userData{}, err
	}
	if d.Identities, err = h.SignIn.UserIdentities(ctx, u.ID); err != nil { // the user was read with p's Read access above
		return userData{}, err
	}
	if d.MFA, err = h.SignIn.AdminUserMFA(ctx, p, a, u.ID); err != nil {
		return userData{}, err
	}
	if d.SignIns, err = h.SignIn.RecentSignIns(ctx, p, a, u.ID, recentSignIns); err != nil {
		return userData{}, err
	}
	if v.CanManage() {
		d.Changes, err = h.Tenants.AuditLog(ctx, p, a.WorkspaceID, tenant.AuditFilter{AppID: a.ID, TargetID: u.ID, Limit: 10})
		if err != nil {
			return userData{}, err
		}
	}
	return d, nil
}

// metaText is a user's metadata as the form shows it: indented JSON.
func metaText(m map[string]any) string {
	if len(m) == 0 {
		return "{}"
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "{}"
	}
	return string(b)
}

// saveProfile is PATCH /v1/{app}/users/{id} from the profile form: e-mail,
// phone and metadata. The metadata box holds the whole object; what is
// sent is only what the operator changed in it (a key left out is removed,
// as null does in the API), so keys nobody touched are never checked or
// rewritten. The form carries the user's version (updated_at): a user
// changed since the page was read is not overwritten (409). A new e-mail
// address or phone number redirects sign-in codes, so it needs a recent
// sign-in. Input the API refuses shows the form again with the reason.
func (h *Handler) saveProfile(w http.ResponseWriter, r *http.Request) {
	p, a, v, ok := h.appPage(w, r, "User", "users")
	if !ok {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	userID := r.PathValue("user")
	email, phone, metaIn := f.text("email"), f.text("phone"), f.text("meta")
	in := appuser.UpdateInput{Email: &email, Phone: &phone}
	var problem error
	cur, err := h.Users.Get(r.Context(), p, a, userID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if metaIn == "" {
		metaIn = "{}"
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(metaIn), &meta); err != nil || meta == nil {
		problem = errs.Invalidf("metadata", "must be a JSON object, such as {\"company\": \"Acme\"}")
	} else {
		patch := map[string]any{}
		for k := range cur.Meta {
			if _, kept := meta[k]; !kept {
				patch[k] = nil
			}
		}
		for k, val := range meta {
			if old, had := cur.Meta[k]; !had || !reflect.DeepEqual(old, val) {
				patch[k] = val
			}
		}
		if len(patch) > 0 {
			in.Meta = patch
		}
	}
	if email == cur.Email {
		in.Email = nil
	}
	if phone == cur.Phone {
		in.Phone = nil
	}
	if problem == nil && f.text("version") != version(cur) {
		d, err := h.userData(r, p, a, v)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		d.Email, d.Phone, d.Meta, d.Version = email, phone, metaIn, version(cur)
		d.ProfileError = "Not saved: this user changed since you opened the page (below, what you typed). Reload the page to see the changes, then edit again."
		v.Data = d
		h.render(w, r, http.StatusConflict, "user", v)
		return
	}
	if problem == nil && (in.Email != nil || in.Phone != nil) && !h.fresh(w, r) {
		return
	}
	if problem == nil {
		// Called with nothing changed too: the server checks the role.
		_, problem = h.Users.Update(r.Context(), p, a, userID, in)
		if problem == nil {
			back(w, r, h.userPath(a.ID, r), "profile-saved")
			return
		}
	}
	status, _, msg := h.Describe(r.Context(), problem)
	if status >= 500 || status == http.StatusForbidden || status == http.StatusNotFound || status == http.StatusUnauthorized {
		h.fail(w, r, problem)
		return
	}
	var bad *appuser.MetaInvalidError
	if iv, ok := invalid(problem); ok {
		msg = iv
	} else if errors.As(problem, &bad) {
		keys := slices.Sorted(maps.Keys(bad.Errors))
		for i, k := range keys {
			keys[i] = k + " " + bad.Errors[k]
		}
		msg = "Not saved: metadata " + strings.Join(keys, "; ") + "."
	} else {
		msg = "Not saved: " + msg
	}
	d, err := h.userData(r, p, a, v)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.Email, d.Phone, d.Meta, d.ProfileError, d.Version = email, phone, metaIn, msg, version(cur)
	v.Data = d
	h.render(w, r, status, "user", v)
}

// resetUserMFA is DELETE /v1/{app}/users/{id}/mfa: every authenticator app
// and backup code of the user goes. It needs a recent sign-in.
func (h *Handler) resetUserMFA(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "User", "users")
	if !ok {
		return
	}
	if !h.fresh(w, r) {
		return
	}
	if err := h.SignIn.ResetUserMFA(r.Context(), p, a, r.PathValue("user")); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, h.userPath(a.ID, r), "mfa-reset")
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
