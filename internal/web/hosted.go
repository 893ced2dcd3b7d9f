package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/social"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// The apps' hosted pages (docs/hosted-pages.md, issue 27): /login/{app_id}
// signs a user of the app in with an e-mailed or texted code, through the
// same signin calls as the API (its rate limits, attempts and answers for
// unknown people), and ends on the app's callback with the single-use
// token a social sign-in gives (sct_magic, sct_sk=true), which the client
// SDK turns into the app's session (PATCH /magic_links/authenticate).
// The sign-in also leaves a hosted session, a real session of the user in
// the app, in a __Host- cookie, with which /account/{app_id} lists and
// revokes the user's sessions.
//
// The pages share the console's foundation (html/template, per-request
// nonces, forms read by form.go, Go's cross-origin protection, no change on
// GET) with their own layout, and their own headers: frame-ancestors is the
// app's origins. State is never the client's to choose: the pending sign-in
// (whose code, which MFA challenge, where to return) is sealed in a cookie
// with the server's key, bound to the browser's pre-session cookie.

// Cookies. All are __Host- (Secure, Path=/, no Domain) and HttpOnly.
//
// SameSite=Lax, not Strict: people arrive at /login/{app} and
// /account/{app} by a link from the app, a cross-site top-level navigation,
// on which Strict cookies are not sent; the account page would not see its
// session, and the login page would mint a new pre-session and break
// another tab's sign-in. Lax sends them on that GET only: no cross-site POST,
// frame or fetch carries them, and every state change is a POST that must
// also pass Go's cross-origin protection and carry a CSRF token derived
// from the cookie. A page framed by the app is a third-party context where
// Lax cookies are not sent: there they are None and Partitioned (framed).
const (
	hostedPreCookie  = "__Host-gatehouse_pre"
	hostedFlowCookie = "__Host-gatehouse_signin"
	// hostedSessionCookie + the app's id: one hosted session per app.
	hostedSessionCookie = "__Host-gatehouse_app_"
	// hostedNoPasskeyCookie + the app's id: "Not now" to the offer of a
	// passkey (hosted_passkey.go), for one user, remembered a while.
	hostedNoPasskeyCookie = "__Host-gatehouse_nopk_"
)

// hostedFlowTTL bounds a pending sign-in: longer than a code lives, shorter
// than an MFA challenge's code and the code together could make useful.
const hostedFlowTTL = 15 * time.Minute

// hostedPath reports whether a path is the hosted pages'.
func hostedPath(p string) bool {
	return strings.HasPrefix(p, "/login/") || strings.HasPrefix(p, "/account/")
}

// hostedView is what every hosted page gets.
type hostedView struct {
	Title, Nonce, CSRF string
	App                tenant.App // zero on a page of no app (unknown app)
	Message            string     // an error line (role=alert)
	Notice             string     // what a form did
	Script             string     // the pages' script (hosted_passkey.go), set by hostedPage
	AccountScript      string     // the account pages' script, set by hostedPage
	Data               any

	// Set by hostedPage: the page's language (hostedtext.go) and the app's
	// branding (hosted_branding.go).
	Lang  string
	Brand template.CSS
}

var hostedFuncs = func() template.FuncMap {
	f := maps.Clone(funcs)
	f["t"] = tr // hostedtext.go
	f["device"] = func(ua string) string {
		browser, os := signin.DescribeUserAgent(ua)
		if os != "" {
			browser += " on " + os
		}
		return browser
	}
	return f
}()

// hostedPages are the hosted_*.html pages, each inside hosted_layout.html.
var hostedPages = func() map[string]*template.Template {
	layout := template.Must(template.New("hosted_layout.html").Funcs(hostedFuncs).ParseFS(templateFiles, "templates/hosted_layout.html"))
	out := map[string]*template.Template{}
	for _, name := range []string{"login", "code", "mfa", "account", "error", "offer", "magic", "landing", "register"} {
		out[name] = template.Must(template.Must(layout.Clone()).ParseFS(templateFiles, "templates/hosted_"+name+".html"))
	}
	return out
}()

// serveHosted sets the hosted pages' headers with a new nonce (frame-ancestors
// 'none' until the page's app is known: hostedApp), refuses cross-origin
// state changes, and routes.
func (h *Handler) serveHosted(w http.ResponseWriter, r *http.Request) {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	nonce := base64.RawURLEncoding.EncodeToString(b)
	hd := w.Header()
	setHostedCSP(hd, nonce, nil)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
	r = r.WithContext(context.WithValue(r.Context(), keyNonce, nonce))
	if err := h.cop.Check(r); err != nil {
		h.hostedPage(w, r, http.StatusForbidden, "error", hostedView{Title: "Refused",
			Message: "This request came from another site and was refused."})
		return
	}
	h.mux.ServeHTTP(w, r)
}

// originRe is an origin as tenant stores them, and nothing a CSP could
// read otherwise (no space, quote, semicolon or comma).
var originRe = regexp.MustCompile(`^https?://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$`)

// frameOrigins are the origins that may frame app's pages: its origin and
// allowed origins.
func frameOrigins(app *tenant.App) []string {
	if app == nil {
		return nil
	}
	var out []string
	for _, o := range append([]string{app.Origin}, app.AllowedOrigins...) {
		if originRe.MatchString(o) && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// setHostedCSP sets the Content-Security-Policy of a hosted page: scripts
// and styles by nonce only, images from here, https (the app's logo) and
// data, forms to here and (the redirect at the end of a sign-in) the app's
// origins, framing by the app's origins only (none without one).
func setHostedCSP(hd http.Header, nonce string, app *tenant.App) {
	origins := frameOrigins(app)
	frame, forms := "'none'", "'self'"
	if len(origins) > 0 {
		frame = strings.Join(origins, " ")
		forms += " " + frame
	}
	if app != nil {
		if cb, err := social.CallbackFor(*app, ""); err == nil {
			if u, err := url.Parse(cb); err == nil && originRe.MatchString(u.Scheme+"://"+u.Host) && !slices.Contains(origins, u.Scheme+"://"+u.Host) {
				forms += " " + u.Scheme + "://" + u.Host
			}
		}
	}
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+
		"'; img-src 'self' https: data:; connect-src 'self'; form-action "+forms+"; frame-ancestors "+frame+"; base-uri 'none'")
	if len(origins) > 0 {
		hd.Del("X-Frame-Options") // frame-ancestors says who may; X-Frame-Options cannot name several
	} else {
		hd.Set("X-Frame-Options", "DENY")
	}
}

// hostedPage writes a hosted page with status, inside the hosted layout.
func (h *Handler) hostedPage(w http.ResponseWriter, r *http.Request, status int, name string, v hostedView) {
	v.Nonce, v.Script, v.AccountScript = nonceOf(r.Context()), hostedScript, hostedAccountScript
	v.Lang, v.Brand = h.hostedLangOf(r, v.App), brandCSS(v.App)
	t, ok := hostedPages[name]
	if !ok {
		panic("web: no hosted page " + name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "hosted_layout.html", v); err != nil {
		h.Log.ErrorContext(r.Context(), "hosted page failed to render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (h *Handler) hostedNotFound(w http.ResponseWriter, r *http.Request) {
	h.hostedPage(w, r, http.StatusNotFound, "error", hostedView{Title: "Not found", Message: "There is no page here."})
}

// hostedFail answers err on the error page with the API's status and message.
func (h *Handler) hostedFail(w http.ResponseWriter, r *http.Request, app tenant.App, err error) {
	status, _, msg := h.Describe(r.Context(), err)
	h.hostedPage(w, r, status, "error", hostedView{Title: http.StatusText(status), App: app, Message: msg})
}

// hostedApp reads the page's app and sets its frame-ancestors; an unknown
// app is a 404 page. false: answered already.
func (h *Handler) hostedApp(w http.ResponseWriter, r *http.Request) (tenant.App, bool) {
	app, err := h.Tenants.App(r.Context(), r.PathValue("app_id"))
	if errors.Is(err, tenant.ErrAppNotFound) {
		h.hostedPage(w, r, http.StatusNotFound, "error", hostedView{Title: "Not found", Message: "There is no app here."})
		return app, false
	}
	if err != nil {
		h.hostedFail(w, r, tenant.App{}, err)
		return app, false
	}
	setHostedCSP(w.Header(), nonceOf(r.Context()), &app)
	return app, true
}

// setCookie sets a __Host- cookie (see the cookies' comment for SameSite):
// Lax, or for a page the app frames, None and Partitioned.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, expires time.Time) {
	c := &http.Cookie{Name: name, Value: value, Path: "/", Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode}
	if framed(r) {
		c.SameSite, c.Partitioned = http.SameSiteNoneMode, true
	}
	if value == "" {
		c.MaxAge = -1
	} else if !expires.IsZero() {
		c.Expires = expires
	}
	http.SetCookie(w, c)
}

// framed tells a request of a page loaded in a frame of another site (a
// navigation whose destination is a frame: the frame's first page and its
// forms). Its cookies are SameSite=None and Partitioned (CHIPS): such a
// frame is a third-party context, where Lax cookies are never sent, and a
// partitioned cookie is kept apart for each top-level site, so the app's
// frame and this site's own pages never share one. Only the app's origins
// may frame the pages (frame-ancestors); every state change still needs
// Go's cross-origin check and the form's CSRF token, as at the top level.
//
// A frame of the same site (auth.shop.example in shop.example) gets the
// Lax cookies, which browsers send there: its first request says
// same-site, and the pre-session cookie it then holds is untagged. Only
// a pre-session made in a frame of another site carries framedPre, so
// the frame's later requests (which say same-origin) are told apart.
func framed(r *http.Request) bool {
	if d := r.Header.Get("Sec-Fetch-Dest"); d != "iframe" && d != "frame" {
		return false
	}
	if pre := cookieValue(r, hostedPreCookie); pre != "" {
		return strings.HasPrefix(pre, framedPre)
	}
	return r.Header.Get("Sec-Fetch-Site") == "cross-site"
}

// framedPre starts a pre-session made in a frame of another site (a
// character base64url never uses).
const framedPre = "~"

func cookieValue(r *http.Request, name string) string {
	c, err := r.Cookie(name)
	if err != nil || len(c.Value) > 4096 {
		return ""
	}
	return c.Value
}

// preSession is the browser's pre-session value, set now when it has none:
// the login forms' CSRF tokens and the pending sign-in are bound to it.
func (h *Handler) preSession(w http.ResponseWriter, r *http.Request) string {
	if v := cookieValue(r, hostedPreCookie); len(v) == 43 || (len(v) == 44 && strings.HasPrefix(v, framedPre)) {
		return v
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	if framed(r) {
		v = framedPre + v
	}
	setCookie(w, r, hostedPreCookie, v, time.Time{}) // for the browser's session
	return v
}

func (h *Handler) loginCSRF(app tenant.App, pre string) string {
	return h.Hasher.Hash("hosted-login-csrf", app.ID, pre)
}

// loginForm reads a login form, which must carry the CSRF token of the
// browser's pre-session. false: answered already.
func (h *Handler) loginForm(w http.ResponseWriter, r *http.Request, app tenant.App) (*form, string, bool) {
	pre := cookieValue(r, hostedPreCookie)
	f, err := parseForm(w, r)
	if err != nil {
		h.hostedFail(w, r, app, err)
		return nil, "", false
	}
	if pre == "" || !h.Hasher.Equal(f.text("csrf"), "hosted-login-csrf", app.ID, pre) {
		h.hostedPage(w, r, http.StatusForbidden, "error", hostedView{Title: "Refused", App: app,
			Message: "This form was not sent from this browser's sign-in page (its CSRF token is missing or wrong, or cookies are off). Go back, reload the page and try again."})
		return nil, "", false
	}
	return f, pre, true
}

// hostedFlow is a pending sign-in, sealed in hostedFlowCookie.
type hostedFlow struct {
	App         string   `json:"a"`
	Bind        string   `json:"b"` // the pre-session's hash
	Handle      string   `json:"h"` // the user id SendOTP gave (random for nobody)
	Identifier  string   `json:"i"`
	Step        string   `json:"s"`            // code, magic, mfa, register (hosted_signup.go) or offer (hosted_passkey.go)
	Challenge   string   `json:"c,omitempty"`  // mfa: the challenge's token
	Method      string   `json:"m,omitempty"`  // mfa: totp, backup_code or webauthn
	Others      []string `json:"o,omitempty"`  // mfa: the other methods this page takes
	Return      string   `json:"r,omitempty"`  // "account": back to /account/{app_id}
	Callback    string   `json:"cb,omitempty"` // the app's callback (CallbackFor's)
	WebAuthn    bool     `json:"w,omitempty"`  // the browser can use passkeys here (hosted.js said so)
	UsedPasskey bool     `json:"pk,omitempty"` // a passkey signed in or answered the second factor
	Match       int      `json:"n,omitempty"`  // magic: the match number the consent page asks for (hosted_magic.go)
	Started     int64    `json:"st,omitempty"` // when the code or link was asked for: a user made since signed up (hosted_signup.go)
	Known       bool     `json:"k,omitempty"`  // the address had a user when the code or link was asked for (hosted_signup.go)
	Expires     int64    `json:"e"`
}

func (h *Handler) setFlow(w http.ResponseWriter, r *http.Request, app tenant.App, pre string, f hostedFlow) error {
	f.App, f.Bind = app.ID, h.Hasher.Hash("hosted-flow-bind", pre)
	if f.Expires == 0 {
		f.Expires = h.Now().Add(hostedFlowTTL).Unix()
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	sealed, err := h.Sealer.Seal(b, []byte("hosted-flow:"+app.ID))
	if err != nil {
		return err
	}
	setCookie(w, r, hostedFlowCookie, base64.RawURLEncoding.EncodeToString(sealed), time.Unix(f.Expires, 0))
	return nil
}

// flow opens the browser's pending sign-in of app at step; false when it
// has none (or one of another app, browser or step, or expired).
func (h *Handler) flow(r *http.Request, app tenant.App, step string) (hostedFlow, bool) {
	var f hostedFlow
	pre := cookieValue(r, hostedPreCookie)
	raw, err := base64.RawURLEncoding.DecodeString(cookieValue(r, hostedFlowCookie))
	if pre == "" || err != nil || len(raw) == 0 {
		return f, false
	}
	b, err := h.Sealer.Open(raw, []byte("hosted-flow:"+app.ID))
	if err != nil || json.Unmarshal(b, &f) != nil {
		return hostedFlow{}, false
	}
	if f.App != app.ID || !h.Hasher.Equal(f.Bind, "hosted-flow-bind", pre) || f.Step != step || !h.Now().Before(time.Unix(f.Expires, 0)) {
		return hostedFlow{}, false
	}
	return f, true
}

// stepPost reads a POST of a sign-in's step: the app, the form (CSRF
// checked), the pre-session and the browser's pending flow at that step.
// false: answered already (refused, or the flow expired).
func (h *Handler) stepPost(w http.ResponseWriter, r *http.Request, step string) (tenant.App, *form, string, hostedFlow, bool) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return app, nil, "", hostedFlow{}, false
	}
	fm, pre, ok := h.loginForm(w, r, app)
	if !ok {
		return app, nil, "", hostedFlow{}, false
	}
	f, ok := h.flow(r, app, step)
	if !ok {
		h.expired(w, r, app)
		return app, nil, "", hostedFlow{}, false
	}
	return app, fm, pre, f, true
}

// target is where a sign-in of app ends: back to the account page (ret
// "/account/{app_id}") or the app's callback (callback, when one of the
// app's, or the app's own). false: refused (answered already).
func (h *Handler) target(w http.ResponseWriter, r *http.Request, app tenant.App, ret, callback string) (string, string, bool) {
	if ret != "" {
		if ret != "/account/"+app.ID {
			h.hostedPage(w, r, http.StatusBadRequest, "error", hostedView{Title: "Refused", App: app, Message: "The return address is not one of this app's pages."})
			return "", "", false
		}
		return "account", "", true
	}
	cb, err := social.CallbackFor(app, callback)
	if err != nil {
		h.hostedPage(w, r, http.StatusBadRequest, "error", hostedView{Title: "Refused", App: app,
			Message: "This app has no callback URL set up, or callback_url is not one of its addresses."})
		return "", "", false
	}
	return "", cb, true
}

// loginData is the login page's.
type loginData struct {
	Identifier, Return, Callback string
	Label, Type                  string // the identifier field's
	// SignedIn is the user of this browser's hosted session, when it has one.
	SignedIn string
	Passkey  *passkeyUI     // nil: no passkeys here (hosted_passkey.go)
	Social   []socialButton // the app's providers (hosted_social.go)
	Magic    bool           // e-mail addresses get a magic link (hosted_magic.go)
}

func identifierField(app tenant.App) (label, typ string) {
	email, phone := slices.Contains(app.AllowedIdentifiers, "email"), slices.Contains(app.AllowedIdentifiers, "phone")
	switch {
	case email && phone:
		return "E-mail address or phone number", "text"
	case phone:
		return "Phone number", "tel"
	}
	return "E-mail address", "email"
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request, app tenant.App, pre string, status int, d loginData, msg string) {
	d.Label, d.Type = identifierField(app)
	if caller, ok := h.hostedCaller(r, app); ok {
		d.SignedIn = contactOf(caller)
	}
	d.Passkey, d.Social = passkeysFor(app, ""), h.socialButtons(r, app, d)
	d.Magic = app.EmailAuthType == "magic" && slices.Contains(app.AllowedIdentifiers, "email")
	h.hostedPage(w, r, status, "login", hostedView{Title: "Sign in", App: app, CSRF: h.loginCSRF(app, pre), Message: msg, Data: d})
}

func contactOf(c signin.Caller) string {
	if c.User.Email != "" {
		return c.User.Email
	}
	return c.User.Phone
}

// hostedLogin asks for the user's e-mail address or phone number.
func (h *Handler) hostedLogin(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if _, _, ok := h.target(w, r, app, q.Get("return"), q.Get("callback_url")); !ok {
		return
	}
	pre := h.preSession(w, r)
	h.loginPage(w, r, app, pre, http.StatusOK, loginData{Return: q.Get("return"), Callback: q.Get("callback_url")}, "")
}

// hostedSend sends a code (signin.SendOTP: its limits, and the same answer
// for nobody) and goes to the code form.
func (h *Handler) hostedSend(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	f, pre, ok := h.loginForm(w, r, app)
	if !ok {
		return
	}
	d := loginData{Identifier: f.text("identifier"), Return: f.text("return"), Callback: f.text("callback_url")}
	ret, cb, ok := h.target(w, r, app, d.Return, d.Callback)
	if !ok {
		return
	}
	if magicFor(app, d.Identifier) {
		h.sendMagic(w, r, app, pre, f, d, ret, cb)
		return
	}
	start, known := time.Now(), h.known(r, app, d.Identifier)
	res, err := h.SignIn.SendOTP(r.Context(), app, d.Identifier, nil, client(r))
	h.floor(r, start)
	if err != nil {
		h.refuseHosted(w, r, app, err, func(status int, msg string) { h.loginPage(w, r, app, pre, status, d, msg) })
		return
	}
	if err := h.setFlow(w, r, app, pre, hostedFlow{Handle: res.UserID, Identifier: d.Identifier, Step: "code", Return: ret, Callback: cb,
		WebAuthn: f.text("webauthn") == "1", Started: h.Now().Unix(), Known: known}); err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	http.Redirect(w, r, "/login/"+app.ID+"/code", http.StatusSeeOther)
}

// refuseHosted answers a refused sign-in step on the step's own page (show)
// with a sentence for the person, and the status the API answers; a
// failure of the server is the error page.
func (h *Handler) refuseHosted(w http.ResponseWriter, r *http.Request, app tenant.App, err error, show func(status int, msg string)) {
	status, _, msg := h.Describe(r.Context(), err)
	var rl *signin.RateLimitedError
	switch {
	case status >= 500:
		h.hostedFail(w, r, app, err)
		return
	case errors.As(err, &rl):
		secs := max(int(rl.RetryAfter.Round(time.Second)/time.Second), 1)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		msg = hostedf("Too many attempts. Wait %s seconds, then try again.", secs)
	case errors.Is(err, signin.ErrTooManyAttempts):
		// The API's "request a new code later" reads as if a new code had
		// to wait; usually it does not (the code's own attempts are spent).
		msg = "Too many wrong codes: this code no longer works. Ask for a new one. (After many wrong codes from your network, new ones are refused for up to an hour.)"
	case errors.Is(err, signin.ErrInvalidCode):
		msg = "That code is not right, or it has expired. Check it and try again, or ask for a new code."
	default:
		if iv, ok := invalid(err); ok {
			msg = strings.TrimPrefix(iv, "Not saved: ")
		}
	}
	show(status, msg)
}

// codeData is the code and MFA pages'.
type codeData struct {
	Identifier string
	Method     string     // mfa: totp or backup_code
	Others     []string   // mfa: the methods to switch to
	Restart    string     // the login page, with the sign-in's return or callback
	Passkey    *passkeyUI // mfa by passkey: the challenge's options
	// mfa by push (hosted_push.go): the number the approving device asks
	// for, while the request waits.
	Match   int
	Pending bool
	// mfa by e-mail or SMS: the code was not sent yet (a send limit).
	NotSent bool
}

func restart(app tenant.App, f hostedFlow) string {
	u := "/login/" + app.ID
	if f.Return == "account" {
		u += "?" + url.Values{"return": {"/account/" + app.ID}}.Encode()
	} else if f.Callback != "" {
		u += "?" + url.Values{"callback_url": {f.Callback}}.Encode()
	}
	return u
}

// expired answers a step without its pending sign-in: the login page again.
func (h *Handler) expired(w http.ResponseWriter, r *http.Request, app tenant.App) {
	h.loginPage(w, r, app, h.preSession(w, r), http.StatusBadRequest, loginData{},
		"This sign-in has expired or was started in another browser. Start again.")
}

func (h *Handler) hostedCodePage(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	f, ok := h.flow(r, app, "code")
	if !ok {
		h.expired(w, r, app)
		return
	}
	h.hostedPage(w, r, http.StatusOK, "code", hostedView{Title: "Enter your code", App: app, CSRF: h.loginCSRF(app, cookieValue(r, hostedPreCookie)),
		Data: codeData{Identifier: f.Identifier, Restart: restart(app, f)}})
}

// hostedVerify checks the code (signin.VerifyOTP: one attempt taken before
// it is compared, the user's budgets); right, the sign-in ends or goes on
// to its second factor.
func (h *Handler) hostedVerify(w http.ResponseWriter, r *http.Request) {
	app, form, pre, f, ok := h.stepPost(w, r, "code")
	if !ok {
		return
	}
	set, err := h.SignIn.VerifyOTP(r.Context(), app, f.Handle, form.text("code"), client(r))
	if err != nil {
		h.refuseHosted(w, r, app, err, func(status int, msg string) {
			h.hostedPage(w, r, status, "code", hostedView{Title: "Enter your code", App: app, CSRF: h.loginCSRF(app, pre), Message: msg,
				Data: codeData{Identifier: f.Identifier, Restart: restart(app, f)}})
		})
		return
	}
	if set.MFA != nil {
		h.secondStep(w, r, app, pre, f, set.MFA)
		return
	}
	h.signedIn(w, r, app, f, set)
}

// hostedMFAMethods are the second factors this page takes without
// JavaScript; mfaMethodsFor adds a passkey where the browser can use one.
var hostedMFAMethods = []string{signin.MethodTOTP, signin.MethodPush, signin.MethodEmailOTP, signin.MethodSMSOTP, signin.MethodBackupCode}

// secondStep goes on to the sign-in's second factor: the challenge's, when
// this page takes it, else one it takes that the user has (a new
// challenge); with none, it refuses.
func (h *Handler) secondStep(w http.ResponseWriter, r *http.Request, app tenant.App, pre string, f hostedFlow, mfa *signin.MFARequired) {
	var others []string
	takes := mfaMethodsFor(app, f)
	for _, m := range mfa.AvailableMethods {
		if slices.Contains(takes, m) {
			others = append(others, m)
		}
	}
	ch := mfa.Challenge
	if !slices.Contains(takes, ch.Method) {
		if len(others) == 0 {
			msg := "This app asks you for a second factor that this page cannot take. Sign in in the app itself."
			if slices.Contains(mfa.AvailableMethods, signin.MethodPasskey) {
				msg = "This app asks you for your passkey as a second factor, which needs JavaScript and a browser that supports passkeys. Sign in in the app itself, or in another browser."
			}
			h.hostedPage(w, r, http.StatusForbidden, "error", hostedView{Title: "Second factor needed", App: app, Message: msg})
			return
		}
		var err error
		ch, err = h.SignIn.CreateChallenge(r.Context(), app, signin.Requester{},
			signin.ChallengeRequest{Purpose: signin.PurposeMFA, Method: others[0], AppUserID: mfa.AppUserID}, client(r))
		if err != nil {
			h.refuseHosted(w, r, app, err, func(status int, msg string) {
				h.hostedPage(w, r, status, "error", hostedView{Title: "Second factor needed", App: app, Message: msg})
			})
			return
		}
	}
	sendErr := h.deliverMFA(r, app, ch)
	var limited *signin.RateLimitedError
	if sendErr != nil && !errors.As(sendErr, &limited) {
		h.refuseHosted(w, r, app, sendErr, func(status int, msg string) {
			h.hostedPage(w, r, status, "error", hostedView{Title: "Second factor needed", App: app, Message: msg})
		})
		return
	}
	f.Step, f.Handle, f.Challenge, f.Method, f.Expires = "mfa", mfa.AppUserID, ch.Token, ch.Method, 0
	f.Others = slices.DeleteFunc(others, func(m string) bool { return m == ch.Method })
	if err := h.setFlow(w, r, app, pre, f); err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	if sendErr != nil {
		// The code could not be sent yet (a send limit): the step's page
		// says how long to wait, and its "Send a new code" sends it then.
		h.refuseHosted(w, r, app, sendErr, func(status int, msg string) { h.mfaPage(w, r, app, f, status, msg) })
		return
	}
	http.Redirect(w, r, "/login/"+app.ID+"/mfa", http.StatusSeeOther)
}

func (h *Handler) mfaPage(w http.ResponseWriter, r *http.Request, app tenant.App, f hostedFlow, status int, msg string) {
	title := "Enter the code from your authenticator app"
	d := codeData{Identifier: f.Identifier, Method: f.Method, Others: f.Others, Restart: restart(app, f)}
	switch f.Method {
	case signin.MethodBackupCode:
		title = "Enter a backup code"
	case signin.MethodEmailOTP, signin.MethodSMSOTP:
		title = "Enter the code we e-mailed you"
		if f.Method == signin.MethodSMSOTP {
			title = "Enter the code we texted you"
		}
		ch, err := h.SignIn.GetChallenge(r.Context(), app, f.Challenge)
		if err != nil && !errors.Is(err, signin.ErrChallengeNotFound) {
			h.hostedFail(w, r, app, err)
			return
		}
		d.NotSent = err == nil && ch.DeliveryRequired
	case signin.MethodPasskey:
		title = "Use your passkey"
		ch, err := h.SignIn.GetChallenge(r.Context(), app, f.Challenge)
		if err != nil {
			h.hostedFail(w, r, app, err)
			return
		}
		d.Passkey = passkeysFor(app, string(ch.WebauthnOptions))
	case signin.MethodPush:
		title = "Approve on your other device"
		ch, err := h.SignIn.GetChallenge(r.Context(), app, f.Challenge)
		if err != nil && !errors.Is(err, signin.ErrChallengeNotFound) {
			h.hostedFail(w, r, app, err)
			return
		}
		d.Match, d.Pending = ch.MatchNumber, err == nil && ch.Status == "pending"
	}
	notice := ""
	if status == http.StatusOK && r.URL.Query().Get("sent") == "1" {
		notice = "A new code is on its way."
	}
	h.hostedPage(w, r, status, "mfa", hostedView{Title: title, App: app, CSRF: h.loginCSRF(app, cookieValue(r, hostedPreCookie)), Message: msg,
		Notice: notice, Data: d})
}

func (h *Handler) hostedMFAPage(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	f, ok := h.flow(r, app, "mfa")
	if !ok {
		h.expired(w, r, app)
		return
	}
	h.mfaPage(w, r, app, f, http.StatusOK, "")
}

// hostedVerifyMFA answers the second factor's challenge
// (signin.VerifyChallenge); right, the sign-in ends.
func (h *Handler) hostedVerifyMFA(w http.ResponseWriter, r *http.Request) {
	app, form, pre, f, ok := h.stepPost(w, r, "mfa")
	if !ok {
		return
	}
	h.answerMFA(w, r, app, pre, f, mfaAnswer(f, form))
}

// answerMFA verifies the second factor's answer: right, the sign-in ends.
func (h *Handler) answerMFA(w http.ResponseWriter, r *http.Request, app tenant.App, pre string, f hostedFlow, in signin.VerifyInput) {
	res, err := h.SignIn.VerifyChallenge(r.Context(), app, f.Challenge, in, client(r))
	if err == nil && (res.Tokens == nil || res.Tokens.MFA != nil) {
		err = signin.ErrInvalidCode
	}
	if err != nil {
		if f.Method == signin.MethodPasskey {
			h.refusePasskeyMFA(w, r, app, pre, f, err)
			return
		}
		if f.Method == signin.MethodPush && h.refusePushMFA(w, r, app, pre, f, err) {
			return
		}
		h.refuseHosted(w, r, app, err, func(status int, msg string) { h.mfaPage(w, r, app, f, status, msg) })
		return
	}
	f.UsedPasskey = f.UsedPasskey || f.Method == signin.MethodPasskey
	h.signedIn(w, r, app, f, *res.Tokens)
}

// hostedSwitchMFA asks for another of the second factors this page takes.
func (h *Handler) hostedSwitchMFA(w http.ResponseWriter, r *http.Request) {
	app, form, pre, f, ok := h.stepPost(w, r, "mfa")
	if !ok {
		return
	}
	method := form.text("method")
	if !slices.Contains(f.Others, method) {
		h.mfaPage(w, r, app, f, http.StatusBadRequest, "That method is not one this sign-in may use.")
		return
	}
	ch, err := h.SignIn.CreateChallenge(r.Context(), app, signin.Requester{},
		signin.ChallengeRequest{Purpose: signin.PurposeMFA, Method: method, AppUserID: f.Handle}, client(r))
	if err == nil {
		err = h.deliverMFA(r, app, ch)
	}
	if err != nil {
		h.refuseHosted(w, r, app, err, func(status int, msg string) { h.mfaPage(w, r, app, f, status, msg) })
		return
	}
	f.Others = append(slices.DeleteFunc(f.Others, func(m string) bool { return m == method }), f.Method)
	f.Challenge, f.Method = ch.Token, ch.Method
	if err := h.setFlow(w, r, app, pre, f); err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	http.Redirect(w, r, "/login/"+app.ID+"/mfa", http.StatusSeeOther)
}

// deliverMFA sends the code of a second factor's challenge by e-mail or
// SMS that the sign-in picked but did not send yet (as the API's POST
// /challenges/{token}/resend does for delivery_required).
func (h *Handler) deliverMFA(r *http.Request, app tenant.App, ch signin.ChallengeView) error {
	if !ch.DeliveryRequired {
		return nil
	}
	_, err := h.SignIn.ResendChallenge(r.Context(), app, ch.Token, client(r))
	return err
}

// hostedResendMFA sends a new code for a second factor by e-mail or SMS
// (signin.ResendChallenge, as POST /challenges/{token}/resend: its limits;
// the old code dies, the attempts left stay).
func (h *Handler) hostedResendMFA(w http.ResponseWriter, r *http.Request) {
	app, _, _, f, ok := h.stepPost(w, r, "mfa")
	if !ok {
		return
	}
	if f.Method != signin.MethodEmailOTP && f.Method != signin.MethodSMSOTP {
		h.mfaPage(w, r, app, f, http.StatusBadRequest, "This second factor sends no code.")
		return
	}
	if _, err := h.SignIn.ResendChallenge(r.Context(), app, f.Challenge, client(r)); err != nil {
		h.refuseHosted(w, r, app, err, func(status int, msg string) { h.mfaPage(w, r, app, f, status, msg) })
		return
	}
	http.Redirect(w, r, "/login/"+app.ID+"/mfa?sent=1", http.StatusSeeOther)
}

// signedIn ends a sign-in: the hosted session's cookie (a previous one of
// this browser for the app ends), then the account page or the app's
// callback with a hand-off token.
func (h *Handler) signedIn(w http.ResponseWriter, r *http.Request, app tenant.App, f hostedFlow, set signin.TokenSet) {
	ctx := r.Context()
	caller, err := h.SignIn.Authenticate(ctx, app, set.Access)
	if err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	if old, ok := h.hostedCaller(r, app); ok && old.Session.ID != caller.Session.ID {
		_ = h.SignIn.SignOut(ctx, app, old)
	}
	if err := h.setHostedSession(w, r, app, caller); err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	if h.askRegistration(w, r, app, f, caller) {
		return
	}
	if h.offerPasskey(w, r, app, f, caller) {
		return
	}
	setCookie(w, r, hostedFlowCookie, "", time.Time{})
	h.finish(w, r, app, caller, f.Return, f.Callback)
}

// finish sends a signed-in browser on: to the account page, or to the
// app's callback with a single-use token for the app's own session.
func (h *Handler) finish(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller, ret, callback string) {
	// A required registration field still blank: no hand-off (nor the
	// account page) until it is filled in, however the browser came here.
	if h.registrationDue(app, caller) {
		if !h.toRegistration(w, r, app, hostedFlow{Return: ret, Callback: callback, Known: true}, caller) {
			h.hostedPage(w, r, http.StatusBadRequest, "error", hostedView{Title: "Sign in", App: app,
				Message: "This sign-in has expired or was started in another browser. Start again."})
		}
		return
	}
	if ret == "account" {
		http.Redirect(w, r, "/account/"+app.ID, http.StatusSeeOther)
		return
	}
	tok, err := h.SignIn.HandOff(r.Context(), app, caller, client(r))
	if err != nil {
		h.refuseHosted(w, r, app, err, func(status int, msg string) {
			h.hostedPage(w, r, status, "error", hostedView{Title: "Sign in", App: app, Message: msg})
		})
		return
	}
	u, err := url.Parse(callback)
	if err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	q := u.Query()
	// As a social sign-in's return: sct_magic for @scute/core 1.2.2,
	// sct_oauth where newer builds read it, sct_sk to sign in at once.
	q.Set("sct_magic", tok)
	q.Set("sct_oauth", tok)
	q.Set("sct_sk", "true")
	u.RawQuery = q.Encode()
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// hostedContinue signs the app in as the user of this browser's hosted
// session, without a new code (the login page's "Continue as").
func (h *Handler) hostedContinue(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	f, _, ok := h.loginForm(w, r, app)
	if !ok {
		return
	}
	ret, cb, ok := h.target(w, r, app, f.text("return"), f.text("callback_url"))
	if !ok {
		return
	}
	caller, ok := h.hostedCaller(r, app)
	if !ok {
		h.loginPage(w, r, app, cookieValue(r, hostedPreCookie), http.StatusUnauthorized, loginData{Return: f.text("return"), Callback: f.text("callback_url")},
			"You are signed out here. Sign in again.")
		return
	}
	h.finish(w, r, app, caller, ret, cb)
}
