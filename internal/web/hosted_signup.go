package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// Sign-up on the hosted sign-in page (docs/hosted-pages.md): a new address
// signs up by its code or link when the app has public_signup on, as with
// the API. Once it is verified, and the browser is signed in, the page asks
// for the app's registration fields (user_meta_data_schema fields with
// visible_registration; required ones required) and saves them under the
// API's sign-up rule (signin.RegisterMeta: what a sign-up request's
// user_meta may set), with the schema's reasons by the fields. Then the
// sign-in goes on (the offer of a passkey, the app's callback).

// regField is one registration field on the form.
type regField struct {
	profileField
	Required bool
}

// registrationFields are app's fields a person signing up fills in, with
// the user's values.
func registrationFields(app tenant.App, meta map[string]any) []regField {
	var out []regField
	for _, f := range appuser.SchemaOf(app) {
		if !f.VisibleRegistration {
			continue
		}
		pf := schemaInput(f, meta)
		out = append(out, regField{profileField: pf, Required: f.Required && f.FieldType != appuser.FieldBoolean})
	}
	return out
}

// blankRegistration are app's registration fields that meta leaves blank
// (a key missing, null or ""; a checkbox counts as answered once set):
// the required ones, and, with optional, the others too.
func blankRegistration(app tenant.App, meta map[string]any, optional bool) []regField {
	var out []regField
	for _, fd := range registrationFields(app, nil) {
		v, has := meta[fd.Key]
		if has && v != nil && v != "" {
			continue
		}
		if fd.Required || optional {
			out = append(out, fd)
		}
	}
	return out
}

// registrationDue reports whether the user still lacks a required
// registration field: then no sign-in of the page hands off (finish) until
// they are filled in.
func (h *Handler) registrationDue(app tenant.App, caller signin.Caller) bool {
	return len(blankRegistration(app, h.Users.Decode(app, caller.User).Meta, false)) > 0
}

// askRegistration sends a signed-in browser to the registration form when
// its user lacks a required registration field, or, for a user that was
// not there when the code or link was asked for (f.Known false), any
// registration field. false: nothing to ask (go on).
func (h *Handler) askRegistration(w http.ResponseWriter, r *http.Request, app tenant.App, f hostedFlow, caller signin.Caller) bool {
	if len(blankRegistration(app, h.Users.Decode(app, caller.User).Meta, !f.Known)) == 0 {
		return false
	}
	return h.toRegistration(w, r, app, f, caller)
}

// toRegistration sets the browser's flow at the registration step and sends
// it there; false when it could not (no pre-session: nothing answered).
func (h *Handler) toRegistration(w http.ResponseWriter, r *http.Request, app tenant.App, f hostedFlow, caller signin.Caller) bool {
	pre := cookieValue(r, hostedPreCookie)
	o := f
	o.Step, o.Handle, o.Identifier, o.Challenge, o.Method, o.Others, o.Expires = "register", caller.User.ID, contactOf(caller), "", "", nil, 0
	if pre == "" || h.setFlow(w, r, app, pre, o) != nil {
		return false
	}
	http.Redirect(w, r, "/login/"+app.ID+"/register", http.StatusSeeOther)
	return true
}

// known reports whether identifier is a user of app now, before its code
// or link is sent: kept sealed in the flow, it shows nothing until the
// code or link is verified (then a new user gets the registration form).
func (h *Handler) known(r *http.Request, app tenant.App, identifier string) bool {
	id, err := appuser.ParseIdentifier(identifier)
	if err != nil {
		return false
	}
	u, err := h.Users.Lookup(r.Context(), app, id.Value)
	return err != nil || u != nil // in doubt, ask nothing
}

// signedInFlow is the browser's pending step after its sign-in (the
// passkey offer, the registration fields) and its signed-in user, who must
// be the step's; false when it has none (answered already).
func (h *Handler) signedInFlow(w http.ResponseWriter, r *http.Request, app tenant.App, step string) (hostedFlow, signin.Caller, bool) {
	f, ok := h.flow(r, app, step)
	caller, signedIn := h.hostedCaller(r, app)
	if !ok || !signedIn || caller.User.ID != f.Handle {
		h.expired(w, r, app)
		return hostedFlow{}, signin.Caller{}, false
	}
	return f, caller, true
}

// registerData is the registration page's.
type registerData struct {
	Contact string
	Fields  []regField
}

func (h *Handler) registerPage(w http.ResponseWriter, r *http.Request, app tenant.App, f hostedFlow, fields []regField, status int, msg string) {
	h.hostedPage(w, r, status, "register", hostedView{Title: "Tell us about yourself", App: app, CSRF: h.loginCSRF(app, cookieValue(r, hostedPreCookie)),
		Message: msg, Data: registerData{Contact: f.Identifier, Fields: fields}})
}

// hostedRegisterPage asks for the app's registration fields.
func (h *Handler) hostedRegisterPage(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	f, caller, ok := h.signedInFlow(w, r, app, "register")
	if !ok {
		return
	}
	h.registerPage(w, r, app, f, blankRegistration(app, h.Users.Decode(app, caller.User).Meta, true), http.StatusOK, "")
}

// hostedRegister saves the registration fields (signin.RegisterMeta) and
// goes on: the offer of a passkey, or the app.
func (h *Handler) hostedRegister(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	fm, _, ok := h.loginForm(w, r, app)
	if !ok {
		return
	}
	f, caller, ok := h.signedInFlow(w, r, app, "register")
	if !ok {
		return
	}
	// Only fields still blank are taken: the form fills in what sign-up
	// asks, and never rewrites a value (a form sent again later included).
	fields := blankRegistration(app, h.Users.Decode(app, caller.User).Meta, true)
	meta := map[string]any{}
	missing := false
	for i, fd := range fields {
		name := "meta." + fd.Key
		if fd.Type == "checkbox" {
			meta[fd.Key] = fm.text(name) != ""
			fields[i].Checked = fm.text(name) != ""
			continue
		}
		v := strings.TrimSpace(fm.text(name))
		fields[i].Value = v
		switch {
		case v == "":
			if fd.Required {
				fields[i].Error, missing = "is required", true
			}
		case fd.Type == "number":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				meta[fd.Key] = n
			} else {
				meta[fd.Key] = v // refused by the schema: "must be an integer"
			}
		default:
			meta[fd.Key] = v
		}
	}
	if missing {
		h.registerPage(w, r, app, f, fields, http.StatusUnprocessableEntity, "Not saved: fill in the fields marked below.")
		return
	}
	saved, err := h.SignIn.RegisterMeta(r.Context(), app, caller, meta)
	var mi *appuser.MetaInvalidError
	if errors.As(err, &mi) {
		for i, fd := range fields {
			fields[i].Error = mi.Errors[fd.Key]
		}
		h.registerPage(w, r, app, f, fields, http.StatusUnprocessableEntity, "Not saved: check the fields marked below.")
		return
	}
	if err != nil {
		h.refuseHosted(w, r, app, err, func(status int, msg string) { h.registerPage(w, r, app, f, fields, status, msg) })
		return
	}
	caller.User = saved.AppUser // with its fields now filled in
	if h.offerPasskey(w, r, app, f, caller) {
		return
	}
	setCookie(w, r, hostedFlowCookie, "", time.Time{})
	h.finish(w, r, app, caller, f.Return, f.Callback)
}
