package web

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"image/png"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pquerna/otp"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// The account page's own pages (templates/hosted_account_*.html), beside
// hosted.go's.
func init() {
	layout := template.Must(template.New("hosted_layout.html").Funcs(hostedFuncs).ParseFS(templateFiles, "templates/hosted_layout.html"))
	for _, name := range []string{"account_passkey", "account_totp", "account_codes", "account_contact", "account_stepup"} {
		hostedPages[name] = template.Must(template.Must(layout.Clone()).ParseFS(templateFiles, "templates/hosted_"+name+".html"))
	}
}

// The hosted account page (/account/{app_id}): the user of this browser's
// hosted session of the app sees their sessions and revokes them. The
// hosted session is a real session of the user in the app (signin's, as an
// API sign-in's), so it is listed, expires and is revoked like any: its
// cookie holds the session's id sealed with the server's key, and every
// request checks the session is live.

// hostedSessionValue is what the hosted session's cookie seals.
type hostedSessionValue struct {
	Session string `json:"s"`
}

func (h *Handler) setHostedSession(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) error {
	b, _ := json.Marshal(hostedSessionValue{Session: caller.Session.ID})
	sealed, err := h.Sealer.Seal(b, []byte("hosted-session:"+app.ID))
	if err != nil {
		return err
	}
	setCookie(w, r, hostedSessionCookie+app.ID, base64.RawURLEncoding.EncodeToString(sealed), caller.Session.ExpiresAt)
	return nil
}

// hostedCaller is the user of this browser's hosted session of app, when
// it has a live one.
func (h *Handler) hostedCaller(r *http.Request, app tenant.App) (signin.Caller, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(cookieValue(r, hostedSessionCookie+app.ID))
	if err != nil || len(raw) == 0 {
		return signin.Caller{}, false
	}
	b, err := h.Sealer.Open(raw, []byte("hosted-session:"+app.ID))
	var v hostedSessionValue
	if err != nil || json.Unmarshal(b, &v) != nil || v.Session == "" {
		return signin.Caller{}, false
	}
	caller := h.SignIn.HostedCaller
	if r.Context().Value(peekKey{}) != nil {
		caller = h.SignIn.HostedCallerPeek
	}
	c, err := caller(r.Context(), app, v.Session)
	if err != nil {
		if !errors.Is(err, signin.ErrUnauthenticated) {
			h.Log.ErrorContext(r.Context(), "hosted session", "app_id", app.ID, "err", err)
		}
		return signin.Caller{}, false
	}
	return c, true
}

func (h *Handler) accountCSRF(app tenant.App, caller signin.Caller) string {
	return h.Hasher.Hash("hosted-account-csrf", app.ID, caller.Session.ID)
}

// hostedAccountSession wraps an account page: without a hosted session a
// GET goes to the login page (coming back here), anything else is 401; a
// POST must carry the session's CSRF token.
func (h *Handler) hostedAccountSession(next func(http.ResponseWriter, *http.Request, tenant.App, signin.Caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		app, ok := h.hostedApp(w, r)
		if !ok {
			return
		}
		caller, ok := h.hostedCaller(r, app)
		if !ok {
			setCookie(w, r, hostedSessionCookie+app.ID, "", time.Time{})
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/login/"+app.ID+"?"+url.Values{"return": {"/account/" + app.ID}}.Encode(), http.StatusSeeOther)
				return
			}
			h.hostedPage(w, r, http.StatusUnauthorized, "error", hostedView{Title: "Signed out", App: app, Message: "You are signed out. Sign in again."})
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			f, err := parseForm(w, r)
			if err != nil {
				h.hostedFail(w, r, app, err)
				return
			}
			if !h.Hasher.Equal(f.text("csrf"), "hosted-account-csrf", app.ID, caller.Session.ID) {
				h.hostedPage(w, r, http.StatusForbidden, "error", hostedView{Title: "Refused", App: app,
					Message: "This form was not sent from your account page (its CSRF token is missing or wrong). Reload the page and try again."})
				return
			}
		}
		next(w, r, app, caller)
	}
}

// The account page shows the user's profile fields (those the app lets
// users edit), e-mail address and phone number, passkeys, authenticator
// apps and backup codes, linked social accounts and sessions. Every change
// is a POST carrying the hosted session's CSRF token and calls the same
// signin/appuser function as the API's route for the signed-in user, with
// the hosted session's caller: so the same rules decide, the API's step-up
// rule included (security R-MFA-2). Where that rule refuses, the page asks
// the user to confirm it is them (a step-up challenge bound to the hosted
// session, which makes the session's sign-in recent again) or to sign in
// again, and the user then repeats the change.

// accountHostedData is the account page's.
type accountHostedData struct {
	Contact  string
	Sessions []signin.Session
	Current  string
	// Profile: the fields the user may edit (visible_profile, with the
	// app's profile_management on), with what the user has or typed.
	Profile []profileField
	// Email, Phone: the user's; EmailChange, PhoneChange: the app signs
	// in with that kind, so the user may change it here.
	Email, Phone             string
	EmailChange, PhoneChange bool
	Passkeys                 []signin.Passkey
	// TwoStep: the section of authenticator apps and backup codes is shown
	// (the app asks for second factors, or the user has some).
	TwoStep     bool
	TOTP        []signin.MFAMethod
	BackupCodes int
	// Factors: the user's second factors (verified authenticator apps, and
	// passkeys when the app takes them as one), IsDefault marking the one
	// a sign-in asks for first; the page lets the user choose among two or
	// more.
	Factors    []signin.MFAMethod
	Identities []signin.Identity
	// Pending: push requests of the user's other devices waiting for an
	// answer here (hosted_push.go).
	Pending []signin.PendingPushItem
	// Recent: the session's sign-in (or step-up) is recent enough for the
	// changes that need one, until RecentUntil.
	Recent      bool
	RecentUntil time.Time
}

// profileField is one editable metadata field on the form.
type profileField struct {
	Key, Label, Type, Value, Error string
	Checked, Multiline             bool
}

var hostedNotices = map[string]string{
	"revoked":         "Session revoked: that device is signed out.",
	"profile":         "Profile saved.",
	"passkey-added":   "Passkey added.",
	"passkey-renamed": "Passkey renamed.",
	"passkey-removed": "Passkey removed: it no longer signs you in.",
	"totp-added":      "Authenticator app added: sign-ins will ask for its code.",
	"totp-removed":    "Authenticator app removed.",
	"unlinked":        "Account unlinked: it no longer signs you in here.",
	"contact":         "Saved: your new address is verified and in use.",
	"confirmed":       "Thank you, that is confirmed. Make your change now.",
	"push-approved":   "Approved: the other device goes on.",
	"push-denied":     "Denied: the other device gets nothing.",
	"mfa-default":     "Default second factor changed: sign-ins ask for it first.",
}

// reverifyMinutes is the app's window for changes that need a recent
// sign-in (signin's rule: mfa_reverify_minutes, at least 5).
func reverifyMinutes(app tenant.App) int { return max(app.MFAReverifyMinutes, 5) }

// schemaInput is the form input of one schema field, with meta's value:
// the input type its field type asks for (a checkbox for a boolean, a text
// area for text), integers without a decimal point.
func schemaInput(f appuser.MetaField, meta map[string]any) profileField {
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
	return pf
}

// profileFields are the fields of app's schema the user may edit, with the
// user's values.
func profileFields(app tenant.App, meta map[string]any) []profileField {
	if !app.ProfileManagement {
		return nil
	}
	var out []profileField
	for _, f := range appuser.SchemaOf(app) {
		if !f.VisibleProfile {
			continue
		}
		pf := schemaInput(f, meta)
		out = append(out, pf)
	}
	return out
}

// accountData reads what the account page shows.
func (h *Handler) accountData(r *http.Request, app tenant.App, caller signin.Caller) (accountHostedData, error) {
	ctx := r.Context()
	d := accountHostedData{Contact: contactOf(caller), Current: caller.Session.ID, Email: caller.User.Email, Phone: caller.User.Phone,
		EmailChange: slices.Contains(app.AllowedIdentifiers, "email"), PhoneChange: slices.Contains(app.AllowedIdentifiers, "phone")}
	var err error
	if d.Sessions, err = h.SignIn.ListSessions(ctx, app, caller); err != nil {
		return d, err
	}
	d.Profile = profileFields(app, h.Users.Decode(app, caller.User).Meta)
	if d.Passkeys, err = h.SignIn.ListPasskeys(ctx, app, caller); err != nil {
		return d, err
	}
	mfa, err := h.SignIn.MFAMethods(ctx, app, caller)
	if err != nil {
		return d, err
	}
	for _, m := range mfa.Methods {
		if m.Method == signin.MethodTOTP && m.Verified {
			d.TOTP = append(d.TOTP, m)
		}
		if m.Verified {
			d.Factors = append(d.Factors, m)
		}
	}
	d.BackupCodes = mfa.BackupCodesAvailable
	d.TwoStep = app.MFAPolicy.SecondFactor() || len(d.TOTP) > 0 || d.BackupCodes > 0
	if d.Identities, err = h.SignIn.UserIdentities(ctx, caller.User.ID); err != nil {
		return d, err
	}
	if d.Pending, err = h.SignIn.PendingPush(ctx, app, caller); err != nil {
		return d, err
	}
	d.RecentUntil = caller.Session.Authenticated().Add(time.Duration(reverifyMinutes(app)) * time.Minute)
	d.Recent = h.Now().Before(d.RecentUntil)
	return d, nil
}

// accountPage answers the account page with status, an error line (msg)
// and the profile as typed (profile, when the profile form was refused).
func (h *Handler) accountPage(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller, status int, msg string, profile []profileField) {
	d, err := h.accountData(r, app, caller)
	if err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	if profile != nil {
		d.Profile = profile
	}
	notice := ""
	if status == http.StatusOK {
		notice = hostedNotices[r.URL.Query().Get("notice")]
	}
	h.hostedPage(w, r, status, "account", hostedView{Title: "Your account", App: app, CSRF: h.accountCSRF(app, caller),
		Message: msg, Notice: notice, Data: d})
}

func (h *Handler) hostedAccount(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	h.accountPage(w, r, app, caller, http.StatusOK, "", nil)
}

// accountDone goes back to the account page with a notice.
func accountDone(w http.ResponseWriter, r *http.Request, app tenant.App, notice string) {
	http.Redirect(w, r, "/account/"+app.ID+"?notice="+url.QueryEscape(notice), http.StatusSeeOther)
}

// accountRefuse answers a refused change: the step-up page when it needs
// a recent sign-in, else the account page with the API's status and a
// sentence (a failure of the server is the error page).
func (h *Handler) accountRefuse(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller, err error) {
	var su *signin.StepUpRequiredError
	if errors.As(err, &su) && su.Except != "" {
		// Recent, but only through the factor being removed: another way.
		h.stepUpPage(w, r, app, caller, http.StatusForbidden, stepUpData{Minutes: su.Minutes, Except: su.Except},
			"An authenticator app or a passkey cannot confirm its own removal. Confirm it's you another way, then remove it again.")
		return
	}
	if errors.As(err, &su) {
		h.stepUpPage(w, r, app, caller, http.StatusForbidden, stepUpData{Minutes: su.Minutes},
			hostedf("For your security, this change needs a sign-in in the last %s minutes. Confirm it's you, then make the change again.", su.Minutes))
		return
	}
	h.refuseHosted(w, r, app, err, func(status int, msg string) {
		if errors.Is(err, signin.ErrLastSignInMethod) {
			msg = "This is your only way to sign in. Add a passkey, or an e-mail address or phone number this app signs in with, before you unlink it."
		}
		h.accountPage(w, r, app, caller, status, msg, nil)
	})
}

// notYours answers an id that is none of the user's (another user's, or
// nobody's) as the API does: 404, with msg ("You have no such …").
func (h *Handler) notYours(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller, msg string) {
	h.accountPage(w, r, app, caller, http.StatusNotFound, msg, nil)
}

// Profile.

// hostedSaveProfile saves the profile form through the API's self-update
// (signin.UpdateMeta: PATCH /current_user/meta), so the same fields may be
// set and the same validation applies; its reasons show by the fields.
func (h *Handler) hostedSaveProfile(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	fields := profileFields(app, h.Users.Decode(app, caller.User).Meta)
	if len(fields) == 0 {
		h.accountPage(w, r, app, caller, http.StatusForbidden, "This app does not let you edit your profile here.", nil)
		return
	}
	pf := r.PostForm
	meta := map[string]any{}
	for i, f := range fields {
		name := "meta." + f.Key
		if f.Type == "checkbox" {
			if pf.Has(name + ".shown") {
				meta[f.Key] = pf.Has(name)
				fields[i].Checked = pf.Has(name)
			}
			continue
		}
		if !pf.Has(name) {
			continue
		}
		v := strings.TrimSpace(pf.Get(name))
		fields[i].Value = v
		switch {
		case v == "":
			meta[f.Key] = nil
		case f.Type == "number":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				meta[f.Key] = n
			} else {
				meta[f.Key] = v // refused by the schema: "must be an integer"
			}
		default:
			meta[f.Key] = v
		}
	}
	_, err := h.SignIn.UpdateMeta(r.Context(), app, caller, meta)
	var mi *appuser.MetaInvalidError
	if errors.As(err, &mi) {
		for i, f := range fields {
			fields[i].Error = mi.Errors[f.Key]
		}
		h.accountPage(w, r, app, caller, http.StatusUnprocessableEntity, "Not saved: check the fields marked below.", fields)
		return
	}
	if err != nil {
		h.accountRefuse(w, r, app, caller, err)
		return
	}
	accountDone(w, r, app, "profile")
}

// Passkeys.

type passkeyPageData struct {
	Options string // PublicKeyCredentialCreationOptionsJSON, for hosted_account.js
}

// hostedBeginPasskey starts adding a passkey (signin.BeginDeviceRegistration,
// POST /devices/register: its step-up rule) and answers the page whose
// script asks the browser for it.
func (h *Handler) hostedBeginPasskey(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	opts, err := h.SignIn.BeginDeviceRegistration(r.Context(), app, caller)
	if err != nil {
		h.accountRefuse(w, r, app, caller, err)
		return
	}
	h.hostedPage(w, r, http.StatusOK, "account_passkey", hostedView{Title: "Add a passkey", App: app, CSRF: h.accountCSRF(app, caller),
		Data: passkeyPageData{Options: string(opts.Options)}})
}

// hostedFinishPasskey stores the passkey the browser made
// (signin.FinishDeviceRegistration, POST /devices/finalize).
func (h *Handler) hostedFinishPasskey(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	cred := r.PostForm.Get("credential")
	if strings.TrimSpace(cred) == "" || !json.Valid([]byte(cred)) {
		h.accountPage(w, r, app, caller, http.StatusBadRequest, "No passkey was made: your browser sent no answer. Try again.", nil)
		return
	}
	if _, err := h.SignIn.FinishDeviceRegistration(r.Context(), app, caller, []byte(cred), client(r)); err != nil {
		h.accountRefuse(w, r, app, caller, err)
		return
	}
	accountDone(w, r, app, "passkey-added")
}

// ownPasskey reports whether id is one of the user's passkeys.
func (h *Handler) ownPasskey(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller, id string) bool {
	list, err := h.SignIn.ListPasskeys(r.Context(), app, caller)
	if err != nil {
		h.hostedFail(w, r, app, err)
		return false
	}
	if !slices.ContainsFunc(list, func(p signin.Passkey) bool { return p.ID == id }) {
		h.notYours(w, r, app, caller, "You have no such passkey.")
		return false
	}
	return true
}

// hostedRenamePasskey renames one (signin.RenamePasskey, PATCH /devices/{id}).
func (h *Handler) hostedRenamePasskey(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	if _, err := h.SignIn.RenamePasskey(r.Context(), app, caller, r.PathValue("id"), r.PostForm.Get("name")); err != nil {
		h.accountRefuse(w, r, app, caller, err)
		return
	}
	accountDone(w, r, app, "passkey-renamed")
}

// hostedDeletePasskey removes one through signin.DeleteMFAMethod (DELETE
// /mfa/methods/{id}): a recent sign-in or step-up, not by this passkey
// itself (security R-WA-5, R-MFA-2).
func (h *Handler) hostedDeletePasskey(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	id := r.PathValue("id")
	if !h.ownPasskey(w, r, app, caller, id) {
		return
	}
	if err := h.SignIn.DeleteMFAMethod(r.Context(), app, caller, id, ""); err != nil {
		h.accountRefuse(w, r, app, caller, err)
		return
	}
	accountDone(w, r, app, "passkey-removed")
}

// Authenticator apps (TOTP) and backup codes.

type totpPageData struct {
	ID, Name, Secret, URI string
	QR                    template.URL // a data: URI (img-src allows data:)
}

// hostedEnrolTOTP starts adding an authenticator app (signin.EnrollTOTP,
// POST /mfa/enroll: its step-up rule): the secret and QR code are shown on
// this answer only; nothing is active until a code confirms it.
func (h *Handler) hostedEnrolTOTP(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	en, err := h.SignIn.EnrollTOTP(r.Context(), app, caller, r.PostForm.Get("name"), "")
	if err != nil {
		h.accountRefuse(w, r, app, caller, err)
		return
	}
	d := totpPageData{ID: en.Enrollment.ID, Name: en.Enrollment.Name, Secret: en.Secret, URI: en.ProvisioningURI}
	if key, err := otp.NewKeyFromURL(en.ProvisioningURI); err == nil {
		if img, err := key.Image(200, 200); err == nil {
			var buf bytes.Buffer
			if png.Encode(&buf, img) == nil {
				d.QR = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()))
			}
		}
	}
	h.hostedPage(w, r, http.StatusOK, "account_totp", hostedView{Title: "Add an authenticator app", App: app, CSRF: h.accountCSRF(app, caller), Data: d})
}

// hostedConfirmTOTP confirms it with a code (signin.VerifyEnrollment, POST
// /mfa/enroll/verify). A wrong code asks again, without the secret.
func (h *Handler) hostedConfirmTOTP(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	id := r.PostForm.Get("enrollment_id")
	if _, err := h.SignIn.VerifyEnrollment(r.Context(), app, caller, id, r.PostForm.Get("code"), client(r)); err != nil {
		if errors.Is(err, signin.ErrMFAMethodNotFound) {
			h.notYours(w, r, app, caller, "You have no such authenticator app waiting to be confirmed.")
			return
		}
		h.refuseHosted(w, r, app, err, func(status int, msg string) {
			h.hostedPage(w, r, status, "account_totp", hostedView{Title: "Add an authenticator app", App: app, CSRF: h.accountCSRF(app, caller),
				Message: msg, Data: totpPageData{ID: id}})
		})
		return
	}
	accountDone(w, r, app, "totp-added")
}

// hostedDeleteTOTP removes an authenticator app (signin.DeleteMFAMethod,
// DELETE /mfa/methods/{id}: a recent sign-in or step-up by another factor).
func (h *Handler) hostedDeleteTOTP(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	id := r.PathValue("id")
	mfa, err := h.SignIn.MFAMethods(r.Context(), app, caller)
	if err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	if !slices.ContainsFunc(mfa.Methods, func(m signin.MFAMethod) bool { return m.Method == signin.MethodTOTP && m.ID == id }) {
		h.notYours(w, r, app, caller, "You have no such authenticator app.")
		return
	}
	if err := h.SignIn.DeleteMFAMethod(r.Context(), app, caller, id, ""); err != nil {
		h.accountRefuse(w, r, app, caller, err)
		return
	}
	accountDone(w, r, app, "totp-removed")
}

// hostedDefaultMFA makes one of the user's second factors (an
// authenticator app, or a passkey when the app takes them as one) the
// default, which a sign-in asks for first (signin.SetDefaultMFAMethod, as
// PATCH /mfa/methods/{id} {is_default: true}: like the API, it needs no
// recent sign-in). An id that is none of the user's second factors (an
// unconfirmed authenticator app, another user's) is a 404.
func (h *Handler) hostedDefaultMFA(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	if _, err := h.SignIn.SetDefaultMFAMethod(r.Context(), app, caller, r.PathValue("id")); err != nil {
		if errors.Is(err, signin.ErrMFAMethodNotFound) {
			h.notYours(w, r, app, caller, "You have no such second factor.")
			return
		}
		h.accountRefuse(w, r, app, caller, err)
		return
	}
	accountDone(w, r, app, "mfa-default")
}

// hostedBackupCodes makes a new set of backup codes (signin.NewBackupCodes,
// POST /mfa/backup-codes: its step-up rule), shown on this answer only.
func (h *Handler) hostedBackupCodes(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	codes, err := h.SignIn.NewBackupCodes(r.Context(), app, caller, "")
	if err != nil {
		h.accountRefuse(w, r, app, caller, err)
		return
	}
	h.hostedPage(w, r, http.StatusOK, "account_codes", hostedView{Title: "Your backup codes", App: app, Data: codes})
}

// Social accounts.

// hostedUnlink unlinks a social account (signin.UnlinkIdentity, DELETE
// /identities/{id}: a recent sign-in or step-up, and never the last way in).
func (h *Handler) hostedUnlink(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	id := r.PathValue("id")
	ids, err := h.SignIn.UserIdentities(r.Context(), caller.User.ID)
	if err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	if !slices.ContainsFunc(ids, func(i signin.Identity) bool { return i.ID == id }) {
		h.notYours(w, r, app, caller, "You have no such linked account.")
		return
	}
	if err := h.SignIn.UnlinkIdentity(r.Context(), app, caller, id, ""); err != nil {
		h.accountRefuse(w, r, app, caller, err)
		return
	}
	accountDone(w, r, app, "unlinked")
}

// Challenges the page started (a step-up, a new address's code): their
// bearer token goes into the next form sealed with the server's key and
// bound to the app, the hosted session and the purpose, so the page never
// shows it and no other session or form can use it.

type accountChallenge struct {
	Token      string `json:"t"`
	Method     string `json:"m"`
	Identifier string `json:"i,omitempty"` // change_identifier: the new address
}

func challengeAAD(app tenant.App, caller signin.Caller, purpose string) []byte {
	return []byte("hosted-account-challenge:" + app.ID + ":" + caller.Session.ID + ":" + purpose)
}

func (h *Handler) sealChallenge(app tenant.App, caller signin.Caller, purpose string, c accountChallenge) (string, error) {
	b, _ := json.Marshal(c)
	sealed, err := h.Sealer.Seal(b, challengeAAD(app, caller, purpose))
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sealed), nil
}

func (h *Handler) openChallenge(app tenant.App, caller signin.Caller, purpose, v string) (accountChallenge, bool) {
	var c accountChallenge
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(raw) == 0 {
		return c, false
	}
	b, err := h.Sealer.Open(raw, challengeAAD(app, caller, purpose))
	if err != nil || json.Unmarshal(b, &c) != nil || c.Token == "" {
		return accountChallenge{}, false
	}
	return c, true
}

// E-mail address and phone number.

type contactPageData struct {
	Challenge, Identifier, Kind string
}

// hostedChangeContact starts changing the e-mail address or phone number
// as the API does (POST /challenges {purpose: change_identifier}: a recent
// sign-in, an address of the app's kinds nobody has): a code goes to the
// new address, and the page asks for it.
func (h *Handler) hostedChangeContact(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	kind, identifier := r.PostForm.Get("kind"), strings.TrimSpace(r.PostForm.Get("identifier"))
	method := signin.MethodEmailOTP
	switch kind {
	case "email":
	case "phone":
		method = signin.MethodSMSOTP
	default:
		h.accountPage(w, r, app, caller, http.StatusBadRequest, "Choose an e-mail address or a phone number to change.", nil)
		return
	}
	if !slices.Contains(app.AllowedIdentifiers, kind) {
		h.accountPage(w, r, app, caller, http.StatusBadRequest, "This app does not sign in with that kind of address.", nil)
		return
	}
	start := time.Now()
	ch, err := h.SignIn.CreateChallenge(r.Context(), app, signin.Requester{Caller: &caller},
		signin.ChallengeRequest{Purpose: signin.PurposeChangeIdentifier, Method: method, Identifier: identifier, Intent: "change_" + kind}, client(r))
	h.floor(r, start)
	if err != nil {
		h.accountRefuse(w, r, app, caller, err)
		return
	}
	sealed, err := h.sealChallenge(app, caller, signin.PurposeChangeIdentifier, accountChallenge{Token: ch.Token, Method: method, Identifier: identifier})
	if err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	h.hostedPage(w, r, http.StatusOK, "account_contact", hostedView{Title: "Enter your code", App: app, CSRF: h.accountCSRF(app, caller),
		Data: contactPageData{Challenge: sealed, Identifier: identifier, Kind: kind}})
}

// hostedVerifyContact checks the code sent to the new address
// (signin.VerifyChallenge): right, the address is the user's.
func (h *Handler) hostedVerifyContact(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	sealed := r.PostForm.Get("challenge")
	c, ok := h.openChallenge(app, caller, signin.PurposeChangeIdentifier, sealed)
	if !ok {
		h.accountPage(w, r, app, caller, http.StatusBadRequest, "This change has expired or was started elsewhere. Start again.", nil)
		return
	}
	_, err := h.SignIn.VerifyChallenge(r.Context(), app, c.Token, signin.VerifyInput{Code: r.PostForm.Get("code")}, client(r))
	if err != nil {
		kind := "email"
		if c.Method == signin.MethodSMSOTP {
			kind = "phone"
		}
		h.refuseHosted(w, r, app, err, func(status int, msg string) {
			h.hostedPage(w, r, status, "account_contact", hostedView{Title: "Enter your code", App: app, CSRF: h.accountCSRF(app, caller),
				Message: msg, Data: contactPageData{Challenge: sealed, Identifier: c.Identifier, Kind: kind}})
		})
		return
	}
	accountDone(w, r, app, "contact")
}

// Step-up: confirming it is the user before a change that needs a recent
// sign-in.

// stepUpMethod is a way to confirm it is the user; its Label is a
// hostedText key (or a hostedf message).
type stepUpMethod struct{ Method, Label string }

type stepUpData struct {
	Minutes int
	Except  string // a method that cannot confirm this change (signin.StepUpRequiredError's)
	Methods []stepUpMethod
	Login   string // sign in again, and come back here
	// With a challenge started: its method, sealed token, where the code
	// went, and (a passkey) the request options for hosted_account.js.
	Method, Challenge, SentTo, Options string
	// A push: the number the approving device asks for, while it waits.
	Match   int
	Pending bool
}

// stepUpMethods are the ways this user can confirm it is them, by
// signin's step-up rule (the methods of a step_up challenge the user has
// set up), best first.
func (h *Handler) stepUpMethods(r *http.Request, app tenant.App, caller signin.Caller) ([]stepUpMethod, error) {
	mfa, err := h.SignIn.MFAMethods(r.Context(), app, caller)
	if err != nil {
		return nil, err
	}
	pks, err := h.SignIn.ListPasskeys(r.Context(), app, caller)
	if err != nil {
		return nil, err
	}
	var out []stepUpMethod
	if slices.Contains(mfa.Kinds, signin.MethodTOTP) {
		out = append(out, stepUpMethod{signin.MethodTOTP, "A code from your authenticator app"})
	}
	if slices.ContainsFunc(pks, func(p signin.Passkey) bool { return p.SuspendedAt == nil }) {
		out = append(out, stepUpMethod{signin.MethodPasskey, "Your passkey"})
	}
	sessions, err := h.SignIn.ListSessions(r.Context(), app, caller)
	if err != nil {
		return nil, err
	}
	if h.recentDevices(app, sessions, caller.Session.ID) > 0 {
		out = append(out, stepUpMethod{signin.MethodPush, "Approve on another device where you're signed in"})
	}
	if caller.User.Email != "" {
		out = append(out, stepUpMethod{signin.MethodEmailOTP, hostedf("A code by e-mail to %s", caller.User.Email)})
	}
	if caller.User.Phone != "" {
		out = append(out, stepUpMethod{signin.MethodSMSOTP, hostedf("A code by text message to %s", caller.User.Phone)})
	}
	if mfa.BackupCodesAvailable > 0 {
		out = append(out, stepUpMethod{signin.MethodBackupCode, "One of your backup codes"})
	}
	return out, nil
}

func (h *Handler) stepUpPage(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller, status int, d stepUpData, msg string) {
	if d.Minutes == 0 {
		d.Minutes = reverifyMinutes(app)
	}
	methods, err := h.stepUpMethods(r, app, caller)
	if err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	d.Methods = slices.DeleteFunc(methods, func(m stepUpMethod) bool { return m.Method == d.Except })
	d.Login = "/login/" + app.ID + "?" + url.Values{"return": {"/account/" + app.ID}}.Encode()
	h.hostedPage(w, r, status, "account_stepup", hostedView{Title: "Confirm it's you", App: app, CSRF: h.accountCSRF(app, caller), Message: msg, Data: d})
}

// hostedStepUpPage shows the ways to confirm it is the user (it changes
// nothing).
func (h *Handler) hostedStepUpPage(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	h.stepUpPage(w, r, app, caller, http.StatusOK, stepUpData{}, "")
}

// hostedStepUp starts a step-up challenge by the chosen method, bound to
// the hosted session (POST /challenges {purpose: step_up} with the user's
// session): a code is sent, or the page asks for the code or passkey.
func (h *Handler) hostedStepUp(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	method := r.PostForm.Get("method")
	start := time.Now()
	ch, err := h.SignIn.CreateChallenge(r.Context(), app, signin.Requester{Caller: &caller},
		signin.ChallengeRequest{Purpose: signin.PurposeStepUp, Method: method, Intent: "account_change"}, client(r))
	if method == signin.MethodEmailOTP || method == signin.MethodSMSOTP {
		h.floor(r, start)
	}
	if err != nil {
		h.refuseHosted(w, r, app, err, func(status int, msg string) { h.stepUpPage(w, r, app, caller, status, stepUpData{}, msg) })
		return
	}
	sealed, err := h.sealChallenge(app, caller, signin.PurposeStepUp, accountChallenge{Token: ch.Token, Method: ch.Method})
	if err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	h.stepUpAsk(w, r, app, caller, http.StatusOK, sealed, ch.Method, string(ch.WebauthnOptions), "")
}

// stepUpPush fills a push's number and state from the challenge (a read).
func (h *Handler) stepUpPush(r *http.Request, app tenant.App, token string, d *stepUpData) error {
	v, err := h.SignIn.GetChallenge(r.Context(), app, token)
	if errors.Is(err, signin.ErrChallengeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	d.Match, d.Pending = v.MatchNumber, v.Status == "pending"
	return nil
}

// stepUpAsk asks for the answer to a started step-up.
func (h *Handler) stepUpAsk(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller, status int, sealed, method, options, msg string) {
	d := stepUpData{Minutes: reverifyMinutes(app), Method: method, Challenge: sealed, Options: options,
		Login: "/login/" + app.ID + "?" + url.Values{"return": {"/account/" + app.ID}}.Encode()}
	switch method {
	case signin.MethodEmailOTP:
		d.SentTo = caller.User.Email
	case signin.MethodSMSOTP:
		d.SentTo = caller.User.Phone
	case signin.MethodPush:
		if c, ok := h.openChallenge(app, caller, signin.PurposeStepUp, sealed); ok {
			if err := h.stepUpPush(r, app, c.Token, &d); err != nil {
				h.hostedFail(w, r, app, err)
				return
			}
		}
	}
	h.hostedPage(w, r, status, "account_stepup", hostedView{Title: "Confirm it's you", App: app, CSRF: h.accountCSRF(app, caller), Message: msg, Data: d})
}

// hostedVerifyStepUp answers the step-up (signin.VerifyChallenge): right,
// the hosted session's sign-in is recent again, and the user goes back to
// make the change.
func (h *Handler) hostedVerifyStepUp(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	sealed := r.PostForm.Get("challenge")
	c, ok := h.openChallenge(app, caller, signin.PurposeStepUp, sealed)
	if !ok {
		h.stepUpPage(w, r, app, caller, http.StatusBadRequest, stepUpData{}, "This confirmation has expired or was started elsewhere. Start again.")
		return
	}
	in := signin.VerifyInput{Code: r.PostForm.Get("code")}
	if cred := r.PostForm.Get("credential"); cred != "" {
		if !json.Valid([]byte(cred)) {
			h.stepUpAsk(w, r, app, caller, http.StatusBadRequest, sealed, c.Method, "", "Your browser sent no readable answer. Start again.")
			return
		}
		in = signin.VerifyInput{Credential: json.RawMessage(cred)}
	}
	res, err := h.SignIn.VerifyChallenge(r.Context(), app, c.Token, in, client(r))
	if err == nil && res.Challenge.Status != "completed" {
		err = signin.ErrInvalidCode
	}
	if err == nil && c.Method == signin.MethodPush && !h.recentNow(r, app) {
		// An approval counts no fresher than the approving device's own
		// sign-in: one signed in too long ago confirms nothing.
		h.stepUpPage(w, r, app, caller, http.StatusForbidden, stepUpData{},
			"The device that approved signed in too long ago to confirm it's you. Confirm it another way.")
		return
	}
	if status, msg, _, ok := pushRefusal(err, false); ok && c.Method == signin.MethodPush {
		h.stepUpAsk(w, r, app, caller, status, sealed, c.Method, "", msg)
		return
	}
	if err != nil {
		h.refuseHosted(w, r, app, err, func(status int, msg string) {
			h.stepUpAsk(w, r, app, caller, status, sealed, c.Method, "", msg)
		})
		return
	}
	accountDone(w, r, app, "confirmed")
}

// hostedRevoke ends one of the user's sessions; the current one signs this
// browser out.
func (h *Handler) hostedRevoke(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	id := r.PathValue("id")
	err := h.SignIn.RevokeSession(r.Context(), app, caller, id)
	if errors.Is(err, signin.ErrSessionNotFound) {
		h.hostedPage(w, r, http.StatusNotFound, "error", hostedView{Title: "Not found", App: app, Message: "You have no such session."})
		return
	}
	if err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	if id == caller.Session.ID {
		setCookie(w, r, hostedSessionCookie+app.ID, "", time.Time{})
		http.Redirect(w, r, "/login/"+app.ID+"?"+url.Values{"return": {"/account/" + app.ID}}.Encode(), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/account/"+app.ID+"?notice=revoked", http.StatusSeeOther)
}

// hostedSignOut ends this browser's hosted session.
func (h *Handler) hostedSignOut(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	if err := h.SignIn.SignOut(r.Context(), app, caller); err != nil && !errors.Is(err, signin.ErrSessionNotFound) {
		h.hostedFail(w, r, app, err)
		return
	}
	setCookie(w, r, hostedSessionCookie+app.ID, "", time.Time{})
	http.Redirect(w, r, "/login/"+app.ID+"?"+url.Values{"return": {"/account/" + app.ID}}.Encode(), http.StatusSeeOther)
}
