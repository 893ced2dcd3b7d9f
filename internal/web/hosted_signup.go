package web

import (
	"errors"
	"fmt"
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
		pf := profileField{Key: f.FieldName, Label: f.Name}
		v, has := meta[f.FieldName]
		switch f.FieldType {
		case appuser.FieldBoolean:
			pf.Type = "checkbox"
			b, _ := v.(bool)
			pf.Checked = b
		case appuser.FieldText:
			pf.Type, pf.Multiline = "text", true
		case appuser.FieldInteger:
			pf.Type = "number"
		case appuser.FieldDate:
			pf.Type = "date"
		case appuser.FieldPhone:
			pf.Type = "tel"
		case appuser.FieldEmail:
			pf.Type = "email"
		case appuser.FieldURL:
			pf.Type = "url"
		default:
			pf.Type = "text"
		}
		if has && v != nil && f.FieldType != appuser.FieldBoolean {
			pf.Value = fmt.Sprint(v)
			if n, ok := v.(float64); ok && n == float64(int64(n)) {
				pf.Value = strconv.FormatInt(int64(n), 10)
			}
		}
		out = append(out, regField{profileField: pf, Required: f.Required && f.FieldType != appuser.FieldBoolean})
	}
	return out
}

// askRegistration sends a browser that just signed up (its user was made
// since its code or link was asked for) to the registration form, when
// the app has registration fields. false: nothing to ask (go on).
func (h *Handler) askRegistration(w http.ResponseWriter, r *http.Request, app tenant.App, f hostedFlow, caller signin.Caller) bool {
	if f.Known || f.Started == 0 || caller.User.CreatedAt.Unix() < f.Started {
		return false
	}
	if len(registrationFields(app, nil)) == 0 {
		return false
	}
	pre := cookieValue(r, hostedPreCookie)
	o := f
	o.Step, o.Handle, o.Identifier, o.Challenge, o.Method, o.Others, o.Expires = "register", caller.User.ID, contactOf(caller), "", "", nil, 0
	if pre == "" || h.setFlow(w, app, pre, o) != nil {
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

// registerFlow is the browser's pending registration and its signed-in
// user; false when it has none (answered already).
func (h *Handler) registerFlow(w http.ResponseWriter, r *http.Request, app tenant.App) (hostedFlow, signin.Caller, bool) {
	f, ok := h.flow(r, app, "register")
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
	f, caller, ok := h.registerFlow(w, r, app)
	if !ok {
		return
	}
	h.registerPage(w, r, app, f, registrationFields(app, h.Users.Decode(app, caller.User).Meta), http.StatusOK, "")
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
	f, caller, ok := h.registerFlow(w, r, app)
	if !ok {
		return
	}
	fields := registrationFields(app, nil)
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
	_, err := h.SignIn.RegisterMeta(r.Context(), app, caller, meta)
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
	if h.offerPasskey(w, r, app, f, caller) {
		return
	}
	setCookie(w, hostedFlowCookie, "", time.Time{})
	h.finish(w, r, app, caller, f.Return, f.Callback)
}
