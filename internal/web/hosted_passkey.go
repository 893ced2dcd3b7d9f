package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/passkey"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// Passkeys on the hosted sign-in page (docs/hosted-pages.md): sign-in by
// passkey (a button, and the browser's autofill: conditional UI), a
// passkey as the second factor, and the offer to add a passkey to this
// device after a sign-in by code. Each goes through signin exactly as the
// API's passkey routes do (BeginPasskeyLogin/FinishPasskeyLogin,
// VerifyChallenge, BeginDeviceRegistration/FinishDeviceRegistration): the
// same relying party of the app, counters, limits, events and MFA policy.
//
// static/hosted.js runs the browser's side. Options come from a POST
// (fetch, JSON, the login page's CSRF token in X-CSRF-Token); the answer
// goes back in an ordinary form POST, so that what follows (the second
// factor, the offer, the redirect to the app's callback, a refusal) is the
// same page-to-page flow as the code's.

// hostedScript and hostedAccountScript are the pages' scripts' addresses;
// the query changes with the content, since static files are cached for a
// year.
var (
	hostedScript        = versioned("hosted.js")
	hostedAccountScript = versioned("hosted_account.js")
)

func versioned(name string) string {
	b, err := staticFiles.ReadFile("static/" + name)
	if err != nil {
		panic("web: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return "/console/static/" + name + "?v=" + hex.EncodeToString(sum[:6])
}

// passkeyUI is what a page's passkey form needs: the app's WebAuthn
// origins (hosted.js offers passkeys only on a page served at one of them:
// the browser would refuse the app's RP id anywhere else), and the options
// of a second factor's ceremony.
type passkeyUI struct {
	Origins string // space-separated
	Options string // mfa: PublicKeyCredentialRequestOptionsJSON
}

// passkeysOn reports whether app can use passkeys at all: its RP id is a
// domain name over its origin, as signin's relying party requires (the
// API answers webauthn_unavailable otherwise).
func passkeysOn(app tenant.App) bool {
	return passkey.CheckRPID(passkey.RPIDFor(app.Origin, app.WebauthnRPID), []string{app.Origin}) == nil
}

// passkeysFor is the passkey form's data, nil when app has no passkeys.
func passkeysFor(app tenant.App, options string) *passkeyUI {
	if !passkeysOn(app) {
		return nil
	}
	return &passkeyUI{Origins: strings.Join(append([]string{app.Origin}, app.AllowedOrigins...), " "), Options: options}
}

// mfaMethodsFor are the second factors this page takes in flow f: a
// passkey too when the browser can use one here.
func mfaMethodsFor(app tenant.App, f hostedFlow) []string {
	if f.WebAuthn && passkeysOn(app) {
		return append(slices.Clone(hostedMFAMethods), signin.MethodPasskey)
	}
	return hostedMFAMethods
}

// mfaAnswer is the MFA form's answer: a code, or the passkey's credential.
func mfaAnswer(f hostedFlow, form *form) signin.VerifyInput {
	if f.Method == signin.MethodPasskey {
		return signin.VerifyInput{Credential: json.RawMessage(form.text("credential"))}
	}
	return signin.VerifyInput{Code: form.text("code")}
}

// passkeyTag binds a sign-in ceremony's challenge to this browser's
// pre-session: the answer must come back with it (security R-WA-1; signin
// also binds the ceremony to the client's address and user agent).
func (h *Handler) passkeyTag(app tenant.App, pre, challenge string) string {
	return h.Hasher.Hash("hosted-passkey", app.ID, pre, challenge)
}

// loginJSON checks a JSON request of the login pages: a JSON body and the
// pre-session's CSRF token in X-CSRF-Token. false: answered already.
func (h *Handler) loginJSON(w http.ResponseWriter, r *http.Request, app tenant.App) ([]byte, string, bool) {
	if !h.statusCSRF(w, r, app) {
		return nil, "", false
	}
	pre := cookieValue(r, hostedPreCookie)
	body, err := ceremonyBody(w, r)
	if err != nil {
		h.jsonFail(w, r, err)
		return nil, "", false
	}
	if !passkeysOn(app) {
		h.jsonFail(w, r, signin.ErrPasskeysUnavailable)
		return nil, "", false
	}
	return body, pre, true
}

// hostedJSONFail answers err as the API would, with Retry-After when rate limited.
func (h *Handler) hostedJSONFail(w http.ResponseWriter, r *http.Request, err error) {
	var rl *signin.RateLimitedError
	if errors.As(err, &rl) {
		w.Header().Set("Retry-After", strconv.Itoa(max(int(rl.RetryAfter.Round(time.Second)/time.Second), 1)))
	}
	h.jsonFail(w, r, err)
}

// hostedPasskeyBegin gives the login page a sign-in ceremony's options:
// discoverable (the button without an identifier, and the autofill), or
// for the identifier typed (the API's stand-ins for nobody).
func (h *Handler) hostedPasskeyBegin(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	body, pre, ok := h.loginJSON(w, r, app)
	if !ok {
		return
	}
	var in struct {
		Identifier string `json:"identifier"`
	}
	_ = json.Unmarshal(body, &in) // valid JSON; another shape names nobody
	if len(in.Identifier) > 320 {
		in.Identifier = ""
	}
	opts, err := h.SignIn.BeginPasskeyLogin(r.Context(), app, in.Identifier, client(r))
	if err != nil {
		h.hostedJSONFail(w, r, err)
		return
	}
	var o struct {
		Challenge string `json:"challenge"`
	}
	if err := json.Unmarshal(opts, &o); err != nil || o.Challenge == "" {
		h.jsonFail(w, r, errors.New("passkey options without a challenge"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"options": opts, "tag": h.passkeyTag(app, pre, o.Challenge)})
}

// hostedPasskeySignIn finishes a passkey sign-in (the form hosted.js
// submits): signin.FinishPasskeyLogin, then the second factor when the
// app's policy asks for one after this passkey, else signed in.
func (h *Handler) hostedPasskeySignIn(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	form, pre, ok := h.loginForm(w, r, app)
	if !ok {
		return
	}
	d := loginData{Return: form.text("return"), Callback: form.text("callback_url")}
	ret, cb, ok := h.target(w, r, app, d.Return, d.Callback)
	if !ok {
		return
	}
	show := func(status int, msg string) { h.loginPage(w, r, app, pre, status, d, msg) }
	if !passkeysOn(app) {
		show(http.StatusConflict, "This app cannot use passkeys. Sign in with a code.")
		return
	}
	cred := []byte(form.text("credential"))
	a, err := passkey.ParseAssertion(cred)
	if err != nil || !h.Hasher.Equal(form.text("tag"), "hosted-passkey", app.ID, pre, a.Challenge) {
		show(http.StatusBadRequest, "This passkey sign-in was not started on this page, or it has expired. Try again.")
		return
	}
	set, err := h.SignIn.FinishPasskeyLogin(r.Context(), app, cred, client(r))
	if err != nil {
		if errors.Is(err, signin.ErrPasskeyVerification) {
			show(http.StatusBadRequest, "That passkey did not sign you in (it may have been used already, or is not one of this app's). Try again, or sign in with a code.")
			return
		}
		h.refuseHosted(w, r, app, err, show)
		return
	}
	f := hostedFlow{Return: ret, Callback: cb, WebAuthn: true, UsedPasskey: true}
	if set.MFA != nil {
		h.secondStep(w, r, app, pre, f, set.MFA)
		return
	}
	h.signedIn(w, r, app, f, set)
}

// refusePasskeyMFA answers a refused passkey second factor. signin spent
// the challenge's ceremony, so another try needs new options: a new
// challenge by passkey (as switching method makes one), then the MFA page
// with the reason.
func (h *Handler) refusePasskeyMFA(w http.ResponseWriter, r *http.Request, app tenant.App, pre string, f hostedFlow, err error) {
	show := func(status int, msg string) { h.mfaPage(w, r, app, f, status, msg) }
	if !errors.Is(err, signin.ErrPasskeyVerification) && !errors.Is(err, signin.ErrInvalidCode) {
		h.refuseHosted(w, r, app, err, func(status int, msg string) {
			h.hostedPage(w, r, status, "error", hostedView{Title: "Second factor refused", App: app, Message: msg})
		})
		return
	}
	status, _, _ := h.Describe(r.Context(), err)
	ch, cerr := h.SignIn.CreateChallenge(r.Context(), app, signin.Requester{},
		signin.ChallengeRequest{Purpose: signin.PurposeMFA, Method: signin.MethodPasskey, AppUserID: f.Handle}, client(r))
	if cerr != nil {
		h.refuseHosted(w, r, app, cerr, func(status int, msg string) {
			h.hostedPage(w, r, status, "error", hostedView{Title: "Second factor refused", App: app,
				Message: "That passkey was not accepted, and this sign-in cannot try again. Start again."})
		})
		return
	}
	f.Challenge = ch.Token
	if err := h.setFlow(w, r, app, pre, f); err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	show(status, "That passkey was not accepted (it may not be one of yours for this app). Try again.")
}

// offerPasskey sends a browser that just signed in (its hosted session
// set) to the offer to add a passkey to this device, when the sign-in used
// no passkey, the browser can use one here (hosted.js said so: without
// JavaScript there is no offer) and the app has passkeys. false: no offer
// (the caller goes on to the app).
func (h *Handler) offerPasskey(w http.ResponseWriter, r *http.Request, app tenant.App, f hostedFlow, caller signin.Caller) bool {
	if !f.WebAuthn || f.UsedPasskey || !passkeysOn(app) {
		return false
	}
	if h.notNow(r, app, caller) {
		return false // this user said "Not now" in this browser lately
	}
	pre := cookieValue(r, hostedPreCookie)
	o := hostedFlow{Step: "offer", Handle: caller.User.ID, Identifier: contactOf(caller), Return: f.Return, Callback: f.Callback, WebAuthn: true}
	if pre == "" || h.setFlow(w, r, app, pre, o) != nil {
		return false
	}
	http.Redirect(w, r, "/login/"+app.ID+"/passkey/add", http.StatusSeeOther)
	return true
}

// offerData is the offer page's.
type offerData struct {
	Contact string
	Passkey *passkeyUI
}

func (h *Handler) offerPage(w http.ResponseWriter, r *http.Request, app tenant.App, f hostedFlow, status int, msg string) {
	h.hostedPage(w, r, status, "offer", hostedView{Title: "Add a passkey to this device", App: app, CSRF: h.loginCSRF(app, cookieValue(r, hostedPreCookie)),
		Message: msg, Data: offerData{Contact: f.Identifier, Passkey: passkeysFor(app, "")}})
}

// hostedPasskeyOffer asks whether to add a passkey to this device.
func (h *Handler) hostedPasskeyOffer(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	f, _, ok := h.signedInFlow(w, r, app, "offer")
	if !ok {
		return
	}
	h.offerPage(w, r, app, f, http.StatusOK, "")
}

// hostedPasskeyAddBegin gives the offer page a registration's options for
// the signed-in user (signin.BeginDeviceRegistration: the API's
// /devices/register, with its step-up rule, met by the sign-in just done).
func (h *Handler) hostedPasskeyAddBegin(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	if _, _, ok := h.loginJSON(w, r, app); !ok {
		return
	}
	f, ok := h.flow(r, app, "offer")
	caller, signedIn := h.hostedCaller(r, app)
	if !ok || !signedIn || caller.User.ID != f.Handle {
		h.jsonFail(w, r, signin.ErrUnauthenticated)
		return
	}
	opts, err := h.SignIn.BeginDeviceRegistration(r.Context(), app, caller)
	if err != nil {
		h.hostedJSONFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"options": opts.Options})
}

// hostedPasskeyAdd stores the new passkey (signin.FinishDeviceRegistration)
// and goes on to the app.
func (h *Handler) hostedPasskeyAdd(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	form, _, ok := h.loginForm(w, r, app)
	if !ok {
		return
	}
	f, caller, ok := h.signedInFlow(w, r, app, "offer")
	if !ok {
		return
	}
	if _, err := h.SignIn.FinishDeviceRegistration(r.Context(), app, caller, []byte(form.text("credential")), client(r)); err != nil {
		if errors.Is(err, signin.ErrPasskeyRegistration) {
			h.offerPage(w, r, app, f, http.StatusBadRequest, "The passkey was not added. Try again, or continue without one.")
			return
		}
		h.refuseHosted(w, r, app, err, func(status int, msg string) { h.offerPage(w, r, app, f, status, msg) })
		return
	}
	setCookie(w, r, hostedFlowCookie, "", time.Time{})
	h.finish(w, r, app, caller, f.Return, f.Callback)
}

// hostedPasskeySkip goes on to the app without a passkey ("Not now").
func (h *Handler) hostedPasskeySkip(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	if _, _, ok := h.loginForm(w, r, app); !ok {
		return
	}
	f, caller, ok := h.signedInFlow(w, r, app, "offer")
	if !ok {
		return
	}
	setCookie(w, r, hostedFlowCookie, "", time.Time{})
	// Remembered for this user in this browser: the offer asks again after
	// a while, or for another user (the account page adds one any time).
	until := strconv.FormatInt(h.Now().Add(noPasskeyFor).Unix(), 10)
	setCookie(w, r, hostedNoPasskeyCookie+app.ID, until+"."+h.Hasher.Hash("hosted-no-passkey", app.ID, caller.User.ID, until), h.Now().Add(noPasskeyFor))
	h.finish(w, r, app, caller, f.Return, f.Callback)
}

// noPasskeyFor is how long a "Not now" to the passkey offer holds.
const noPasskeyFor = 30 * 24 * time.Hour

// notNow tells whether this browser holds a "Not now" of caller's user,
// still in force (its end is in the cookie, under the server's key).
func (h *Handler) notNow(r *http.Request, app tenant.App, caller signin.Caller) bool {
	until, mac, ok := strings.Cut(cookieValue(r, hostedNoPasskeyCookie+app.ID), ".")
	end, err := strconv.ParseInt(until, 10, 64)
	return ok && err == nil && h.Now().Unix() < end && h.Hasher.Equal(mac, "hosted-no-passkey", app.ID, caller.User.ID, until)
}
