package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// Magic links on the hosted sign-in page (docs/hosted-pages.md), for an
// e-mail address when the app's email_auth_type is magic (phone numbers
// always get a code, as in the API). The page sends the link through the
// API's own magic-link send (signin.SendHostedMagicLink: its limits, the
// same answer for nobody, the consent page and match number), keeps the
// link's poll handle in the sealed flow cookie, and shows "Check your
// e-mail" with the match number:
//
//   - Cross-device: the link opened elsewhere shows the consent page; once
//     approved there with the number, the waiting page's check
//     (signin.MagicLinkStatus, the API's status poll) collects the sign-in.
//     hosted.js asks /magic/status every few seconds, which only reads the
//     link's state (signin.GetChallenge by the poll handle), and submits the
//     check form when it is no longer pending; without JavaScript the person
//     presses "I've opened the link".
//   - Same device (or "Sign in here" on the consent page): the link's open
//     route sends the opener back here, to /magic/open, instead of to the
//     app's login page; that page posts the token (hosted.js submits it at
//     once, or the person presses Continue), signin.AuthenticateMagicLink
//     signs this browser in, and the sign-in goes on as after a code. Such a
//     link releases nothing to the poll handle, so the waiting tab finds the
//     browser signed in and offers to continue.

// magicFor reports whether the page sends identifier a magic link: an
// e-mail address, for an app whose email_auth_type is magic.
func magicFor(app tenant.App, identifier string) bool {
	if app.EmailAuthType != "magic" {
		return false
	}
	id, err := appuser.ParseIdentifier(identifier)
	return err == nil && id.Kind == appuser.KindEmail
}

// landingPath is where the link's opener lands here: /magic/open with the
// sign-in's return (the account page) or callback.
func landingPath(app tenant.App, ret, cb string) string {
	u := "/login/" + url.PathEscape(app.ID) + "/magic/open"
	if ret == "account" {
		u += "?" + url.Values{"return": {"/account/" + app.ID}}.Encode()
	} else if cb != "" {
		u += "?" + url.Values{"callback_url": {cb}}.Encode()
	}
	return u
}

// sendMagic sends the link and goes to the waiting page.
func (h *Handler) sendMagic(w http.ResponseWriter, r *http.Request, app tenant.App, pre string, fm *form, d loginData, ret, cb string) {
	start, known := time.Now(), h.known(r, app, d.Identifier)
	res, err := h.SignIn.SendHostedMagicLink(r.Context(), app, d.Identifier, landingPath(app, ret, cb), client(r))
	h.floor(r, start)
	if err != nil {
		h.refuseHosted(w, r, app, err, func(status int, msg string) { h.loginPage(w, r, app, pre, status, d, msg) })
		return
	}
	f := hostedFlow{Handle: res.ChallengeID, Identifier: d.Identifier, Step: "magic", Return: ret, Callback: cb,
		WebAuthn: fm.text("webauthn") == "1", Match: res.MatchNumber, Started: h.Now().Unix(), Known: known}
	if err := h.setFlow(w, r, app, pre, f); err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	http.Redirect(w, r, "/login/"+app.ID+"/magic", http.StatusSeeOther)
}

// magicData is the waiting page's.
type magicData struct {
	Identifier string
	Match      int
	Restart    string
}

func (h *Handler) magicPage(w http.ResponseWriter, r *http.Request, app tenant.App, f hostedFlow, status int, msg string) {
	h.hostedPage(w, r, status, "magic", hostedView{Title: "Check your e-mail", App: app, CSRF: h.loginCSRF(app, cookieValue(r, hostedPreCookie)),
		Message: msg, Data: magicData{Identifier: f.Identifier, Match: f.Match, Restart: restart(app, f)}})
}

// magicGone answers the waiting page of a browser whose pending link is
// gone: the link signed this browser in (another tab opened it), so on to
// where that sign-in stands, or it expired.
func (h *Handler) magicGone(w http.ResponseWriter, r *http.Request, app tenant.App) {
	for step, path := range map[string]string{"mfa": "/mfa", "register": "/register", "offer": "/passkey/add"} {
		if _, ok := h.flow(r, app, step); ok {
			http.Redirect(w, r, "/login/"+app.ID+path, http.StatusSeeOther)
			return
		}
	}
	if _, ok := h.hostedCaller(r, app); ok {
		// The login page offers "Continue as …".
		h.loginPage(w, r, app, h.preSession(w, r), http.StatusOK, loginData{}, "")
		return
	}
	h.expired(w, r, app)
}

// hostedMagicPage is the waiting page: "Check your e-mail".
func (h *Handler) hostedMagicPage(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	f, ok := h.flow(r, app, "magic")
	if !ok {
		h.magicGone(w, r, app)
		return
	}
	h.magicPage(w, r, app, f, http.StatusOK, "")
}

// hostedMagicStatus tells hosted.js whether the pending link is still
// pending (JSON; the page's CSRF token in X-CSRF-Token). It only reads:
// "done" means the check form has something to collect (or to refuse),
// "gone" that this browser has no pending link any more (reload). A link
// past its lifetime is "done" whether or not it was real, so the answers
// for an address that got nothing are the same.
func (h *Handler) hostedMagicStatus(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	if !h.statusCSRF(w, r, app) {
		return
	}
	f, ok := h.flow(r, app, "magic")
	if !ok {
		writeJSON(w, http.StatusOK, map[string]string{"state": "gone"})
		return
	}
	state := "pending"
	v, err := h.SignIn.GetChallenge(r.Context(), app, f.Handle)
	switch {
	case err != nil && !errors.Is(err, signin.ErrChallengeNotFound):
		h.jsonFail(w, r, err)
		return
	case err == nil && v.Status != "pending":
		state = "done"
	}
	if !h.Now().Before(time.Unix(f.Started, 0).Add(time.Duration(app.MagicLinkExpiration) * time.Second)) {
		state = "done"
	}
	writeJSON(w, http.StatusOK, map[string]string{"state": state})
}

// loginAgain is the login page's data for starting flow f again.
func loginAgain(app tenant.App, f hostedFlow) loginData {
	d := loginData{Callback: f.Callback}
	if f.Return == "account" {
		d.Return, d.Callback = "/account/"+app.ID, ""
	}
	return d
}

// hostedMagicCheck collects the pending link's sign-in
// (signin.MagicLinkStatus, as the client SDK's poll): still pending, the
// waiting page again; approved on another device, signed in (or on to the
// second factor).
func (h *Handler) hostedMagicCheck(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	_, pre, ok := h.loginForm(w, r, app)
	if !ok {
		return
	}
	f, ok := h.flow(r, app, "magic")
	if !ok {
		h.magicGone(w, r, app)
		return
	}
	set, err := h.SignIn.MagicLinkStatus(r.Context(), app, f.Handle, client(r))
	switch {
	case errors.Is(err, signin.ErrMagicLinkPending):
		h.magicPage(w, r, app, f, http.StatusConflict, "The link has not been opened yet. Open it from the e-mail, on this or another device, then try again.")
		return
	case errors.Is(err, signin.ErrMagicLinkDenied):
		setCookie(w, r, hostedFlowCookie, "", time.Time{})
		h.loginPage(w, r, app, pre, http.StatusForbidden, loginAgain(app, f),
			"This sign-in was denied on the device that opened the link (or the number chosen there was not this one). Ask for a new link.")
		return
	case errors.Is(err, signin.ErrMagicLinkNotFound):
		if _, ok := h.hostedCaller(r, app); ok {
			h.magicGone(w, r, app)
			return
		}
		setCookie(w, r, hostedFlowCookie, "", time.Time{})
		h.loginPage(w, r, app, pre, http.StatusNotFound, loginAgain(app, f),
			"This link has expired, or it was used on another device. Ask for a new link.")
		return
	case err != nil:
		h.refuseHosted(w, r, app, err, func(status int, msg string) { h.magicPage(w, r, app, f, status, msg) })
		return
	}
	if set.MFA != nil {
		h.secondStep(w, r, app, pre, f, set.MFA)
		return
	}
	h.signedIn(w, r, app, f, set)
}

// landingData is the landing page's.
type landingData struct {
	Token, Return, Callback string
	Passkey                 *passkeyUI // where hosted.js may say this browser can use passkeys
}

// hostedMagicLanding is where a link asked for on this page lands, on the
// device that asked (or after "Sign in here" on the consent page). Opening
// it changes nothing: its form, which the person submits, signs in (only
// with a link the hosted page asked for).
func (h *Handler) hostedMagicLanding(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if _, _, ok := h.target(w, r, app, q.Get("return"), q.Get("callback_url")); !ok {
		return
	}
	tok := strings.TrimSpace(q.Get("sct_magic"))
	pre := h.preSession(w, r)
	if tok == "" || len(tok) > 4096 {
		h.loginPage(w, r, app, pre, http.StatusNotFound, loginData{Return: q.Get("return"), Callback: q.Get("callback_url")},
			"This link is not complete. Open it from the e-mail again, or ask for a new one.")
		return
	}
	w.Header().Set("Referrer-Policy", "no-referrer") // the address carries the token
	h.hostedPage(w, r, http.StatusOK, "landing", hostedView{Title: "Signing you in", App: app, CSRF: h.loginCSRF(app, pre),
		Data: landingData{Token: tok, Return: q.Get("return"), Callback: q.Get("callback_url"), Passkey: passkeysFor(app, "")}})
}

// hostedMagicOpen signs in with the link (signin.AuthenticateHostedMagicLink:
// the API's PATCH /magic_links/authenticate for links this page asked for
// only): then the second factor, or signed in.
func (h *Handler) hostedMagicOpen(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	fm, pre, ok := h.loginForm(w, r, app)
	if !ok {
		return
	}
	d := loginData{Return: fm.text("return"), Callback: fm.text("callback_url")}
	ret, cb, ok := h.target(w, r, app, d.Return, d.Callback)
	if !ok {
		return
	}
	set, err := h.SignIn.AuthenticateHostedMagicLink(r.Context(), app, strings.TrimSpace(fm.text("sct_magic")), client(r))
	if err != nil {
		if errors.Is(err, signin.ErrMagicLinkNotFound) {
			h.loginPage(w, r, app, pre, http.StatusNotFound, d, "This link has expired or was used already. Ask for a new link.")
			return
		}
		h.refuseHosted(w, r, app, err, func(status int, msg string) { h.loginPage(w, r, app, pre, status, d, msg) })
		return
	}
	// Known: a link opened in another browser than the one that asked is
	// taken for an existing user's (only required registration fields are
	// asked); the asking browser's flow knows better.
	f := hostedFlow{Return: ret, Callback: cb, WebAuthn: fm.text("webauthn") == "1", Known: true,
		Started: h.Now().Add(-time.Duration(app.MagicLinkExpiration) * time.Second).Unix()}
	if asked, ok := h.flow(r, app, "magic"); ok { // this browser's waiting page asked for it
		f.Identifier, f.Started, f.Known = asked.Identifier, asked.Started, asked.Known
		f.WebAuthn = f.WebAuthn || asked.WebAuthn
	}
	if set.MFA != nil {
		h.secondStep(w, r, app, pre, f, set.MFA)
		return
	}
	h.signedIn(w, r, app, f, set)
}
