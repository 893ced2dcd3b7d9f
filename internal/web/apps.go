package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/console"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

type appRow struct {
	Workspace string
	App       tenant.App
	Counts    console.Activity
}

const (
	// homeWait is how long the home page waits for counts never made
	// before showing "counting" (the counts read every session of an app:
	// docs/performance.md).
	homeWait = 20 * time.Millisecond
	// rowWait is how long the row that htmx fetches for a counting app
	// waits for them; past it, it answers the same row and asks again.
	rowWait = 5 * time.Second
)

// apps is the workspace's home: its apps with users, live sessions and
// sign-ins of the last seven days.
func (h *Handler) apps(w http.ResponseWriter, r *http.Request) {
	p, v, ok := h.workspacePage(w, r, "Apps", "apps")
	if !ok {
		return
	}
	list, err := h.Tenants.ListApps(r.Context(), p, v.Workspace.WorkspaceID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ids := make([]string, len(list))
	for i, a := range list {
		ids[i] = a.ID
	}
	counts, err := h.Console.AppActivity(r.Context(), p, ids, homeWait)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	rows := make([]appRow, 0, len(list))
	for _, a := range list {
		rows = append(rows, appRow{Workspace: a.WorkspaceID, App: a, Counts: counts[a.ID]})
	}
	v.Data, v.Notice = rows, noticeOf(r)
	h.render(w, r, http.StatusOK, "apps", v)
}

// appActivity is one app's row on the home page, which htmx fetches while
// the app's counts are being made.
func (h *Handler) appActivity(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Apps", "apps")
	if !ok {
		return
	}
	counts, err := h.Console.AppActivity(r.Context(), p, []string{a.ID}, rowWait)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.fragment(w, r, "app-row", appRow{Workspace: a.WorkspaceID, App: a, Counts: counts[a.ID]})
}

func (h *Handler) createApp(w http.ResponseWriter, r *http.Request) {
	p, _, ok := h.workspacePage(w, r, "Apps", "apps")
	if !ok {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	a, err := h.Tenants.CreateApp(r.Context(), p, r.PathValue("ws"), tenant.AppSettings{Name: f.textp("name"), Origin: f.textp("origin")})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID, "app-created")
}

// appPage starts a page of one app of the workspace.
func (h *Handler) appPage(w http.ResponseWriter, r *http.Request, title, section string) (access.Principal, tenant.App, view, bool) {
	p, v, ok := h.workspacePage(w, r, title, section)
	if !ok {
		return p, tenant.App{}, v, false
	}
	a, err := h.Tenants.WorkspaceApp(r.Context(), p, v.Workspace.WorkspaceID, r.PathValue("app"))
	if err != nil {
		h.fail(w, r, err)
		return p, a, v, false
	}
	v.AppID, v.AppName = a.ID, a.Name
	return p, a, v, true
}

type settingsData struct {
	App      tenant.App
	Error    string
	Flow     []step
	Brand    brandCard
	Fonts    []string
	Policies []tenant.MFAPolicy
	Methods  []string
	Algs     []string
}

func (h *Handler) settingsView(v view, a tenant.App, problem string) view {
	v.Data = settingsData{App: a, Error: problem, Flow: flowOf(a), Policies: tenant.MFAPolicies, Methods: tenant.MFAMethods,
		Algs: token.Algorithms, Brand: brandCardOf(a), Fonts: tenant.FontNames}
	return v
}

func (h *Handler) appSettings(w http.ResponseWriter, r *http.Request) {
	_, a, v, ok := h.appPage(w, r, "Settings", "settings")
	if !ok {
		return
	}
	v.Notice = noticeOf(r)
	h.render(w, r, http.StatusOK, "app", h.settingsView(v, a, ""))
}

// saveAppSettings is PATCH /v1/workspaces/{id}/apps/{app} from a form: the
// same method, validation, event and audit entry.
func (h *Handler) saveAppSettings(w http.ResponseWriter, r *http.Request) {
	p, a, v, ok := h.appPage(w, r, "Settings", "settings")
	if !ok {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	in := settingsFrom(f)
	if f.err != nil {
		msg, _ := invalid(f.err)
		h.render(w, r, http.StatusBadRequest, "app", h.settingsView(v, a, msg))
		return
	}
	if _, err := h.Tenants.UpdateApp(r.Context(), p, a.WorkspaceID, a.ID, in); err != nil {
		if msg, ok := invalid(err); ok {
			h.render(w, r, http.StatusBadRequest, "app", h.settingsView(v, a, msg))
			return
		}
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID, "saved")
}

// settingsFrom reads the settings form: a field not on the form is left
// as it is.
func settingsFrom(f *form) tenant.AppSettings {
	return tenant.AppSettings{
		Name: f.textp("name"), Origin: f.textp("origin"), AllowedOrigins: f.lines("allowed_origins"),
		LoginURL: f.textp("login_url"), CallbackURL: f.textp("callback_url"),
		AllowedIdentifiers: f.list("allowed_identifiers"), EmailAuthType: f.textp("email_auth_type"),
		PublicSignup: f.check("public_signup"), TestIdentities: f.check("test_identities"),
		MFAPolicy: f.textp("mfa_policy"), MFAMethodsAllowed: f.list("mfa_methods_allowed"),
		AccessExpiration: f.int64p("access_expiration"), RefreshExpiration: f.int64p("refresh_expiration"),
		MagicLinkExpiration: f.int64p("magic_link_expiration"), AccessTokenAlg: f.textp("access_token_alg"),
		Logo: f.textp("logo"), LogoDark: f.textp("logo_dark"), ServiceBranding: f.check("service_branding"),
		Branding: brandingFrom(f),
	}
}

// previewFlow is the preview of the sign-in flow for the form's values,
// not saved (htmx asks it on every change): nothing is written.
func (h *Handler) previewFlow(w http.ResponseWriter, r *http.Request) {
	_, a, _, ok := h.appPage(w, r, "Settings", "settings")
	if !ok {
		return
	}
	q := r.URL.Query()
	if _, ok := q["allowed_identifiers.shown"]; ok {
		a.AllowedIdentifiers = q["allowed_identifiers"]
	}
	if v := q.Get("email_auth_type"); v == "magic" || v == "otp" {
		a.EmailAuthType = v
	}
	if _, ok := q["public_signup.shown"]; ok {
		a.PublicSignup = q.Has("public_signup")
	}
	if v := tenant.MFAPolicy(q.Get("mfa_policy")); v.Valid() {
		a.MFAPolicy = v
	}
	if _, ok := q["mfa_methods_allowed.shown"]; ok {
		a.MFAMethodsAllowed = q["mfa_methods_allowed"]
	}
	a.AccessExpiration = seconds(q, "access_expiration", a.AccessExpiration)
	a.RefreshExpiration = seconds(q, "refresh_expiration", a.RefreshExpiration)
	a.MagicLinkExpiration = seconds(q, "magic_link_expiration", a.MagicLinkExpiration)
	if _, ok := q["service_branding.shown"]; ok {
		a.ServiceBranding = q.Has("service_branding")
	}
	if v := q.Get("name"); v != "" && len(v) <= 100 {
		a.Name = v
	}
	a.Branding = previewBranding(a.Branding, q)
	h.preview(w, r, a)
}

func seconds(q url.Values, k string, def int64) int64 {
	if n, err := strconv.ParseInt(q.Get(k), 10, 64); err == nil && n > 0 {
		return n
	}
	return def
}

// step is one step of the sign-in flow preview.
type step struct{ Title, Detail string }

// flowOf describes, step by step, what a user of the app goes through to
// sign in with these settings.
func flowOf(a tenant.App) []step {
	email, phone := slices.Contains(a.AllowedIdentifiers, "email"), slices.Contains(a.AllowedIdentifiers, "phone")
	var out []step
	switch {
	case email && phone:
		out = append(out, step{"Identify", "The user enters an e-mail address or a phone number."})
	case phone:
		out = append(out, step{"Identify", "The user enters a phone number."})
	default:
		out = append(out, step{"Identify", "The user enters an e-mail address."})
	}
	if a.PublicSignup {
		out = append(out, step{"New users", "An address not seen before signs up on the spot."})
	} else {
		out = append(out, step{"New users", "Only users you create, import or invite can sign in; anyone else is refused."})
	}
	out = append(out, step{"Passkey", "On a device with a passkey for the app, the user signs in with it, and skips the next step."})
	if email {
		if a.EmailAuthType == "otp" {
			out = append(out, step{"E-mail", "Gatehouse e-mails a one-time code; the user types it in."})
		} else {
			out = append(out, step{"E-mail", fmt.Sprintf("Gatehouse e-mails a link that works for %s; opened on another device, it asks \"Was this you?\" and for the number the first device shows.", duration(a.MagicLinkExpiration))})
		}
	}
	if phone {
		out = append(out, step{"Phone", "Gatehouse texts a one-time code; the user types it in."})
	}
	methods := a.MFAMethodsAllowed
	switch a.MFAPolicy {
	case tenant.MFAPolicyRequired:
		out = append(out, step{"Second factor", "Every user must pass a second factor (" + list(methods) + "), and sets one up at first sign-in."})
	case tenant.MFAPolicyOptional:
		out = append(out, step{"Second factor", "Users who set one up (" + list(methods) + ") are asked for it; others go straight in."})
	default:
		out = append(out, step{"Second factor", "None: the policy is off."})
	}
	out = append(out, step{"Signed in", fmt.Sprintf("The app gets an access token that lasts %s and a refresh token that lasts %s.", duration(a.AccessExpiration), duration(a.RefreshExpiration))})
	return out
}

func list(s []string) string {
	if len(s) == 0 {
		return "none allowed"
	}
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

func duration(sec int64) string {
	switch {
	case sec%86400 == 0:
		return plural(sec/86400, "day")
	case sec%3600 == 0:
		return plural(sec/3600, "hour")
	case sec%60 == 0:
		return plural(sec/60, "minute")
	}
	return plural(sec, "second")
}

func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.FormatInt(n, 10) + " " + unit + "s"
}

// deleteApp deletes an app and everything of it: it needs a recent sign-in
// and the app's name typed again.
func (h *Handler) deleteApp(w http.ResponseWriter, r *http.Request) {
	p, a, v, ok := h.appPage(w, r, "Settings", "settings")
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
	if f.text("confirm") != a.Name {
		h.render(w, r, http.StatusBadRequest, "app", h.settingsView(v, a, "Not deleted: type the app's name exactly to confirm."))
		return
	}
	if err := h.Tenants.DeleteApp(r.Context(), p, a.WorkspaceID, a.ID); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/w/"+a.WorkspaceID, "app-deleted")
}
