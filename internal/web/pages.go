package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/console"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
)

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusNotFound, "error", view{Title: "Not found", Message: "There is no console page here."})
}

type signinData struct {
	Email, Handle, Error string
}

// signinPage asks for an operator's e-mail address (a code is sent), and
// says how to get a link from the command line.
func (h *Handler) signinPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "signin", view{Title: "Sign in", Data: signinData{}})
}

// client is the request's sign-in context, as signin reads it.
func client(r *http.Request) signin.Client {
	a := audit.From(r.Context())
	return signin.Client{IP: a.IP, UserAgent: r.UserAgent(), Languages: languages(r.Header.Get("Accept-Language"))}
}

func languages(h string) []string {
	var out []string
	for _, part := range strings.Split(h, ",") {
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if tag != "" && tag != "*" && len(out) < 5 {
			out = append(out, tag)
		}
	}
	return out
}

// sendCode e-mails a code to an operator's address (the same answer for
// any address, so the form tells nothing of who is an operator).
func (h *Handler) sendCode(w http.ResponseWriter, r *http.Request) {
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	email := f.text("email")
	start := time.Now()
	handle, err := h.Console.SendCode(r.Context(), email, client(r))
	h.floor(r, start)
	if err != nil {
		if msg, ok := invalid(err); ok {
			h.render(w, r, http.StatusBadRequest, "signin", view{Title: "Sign in", Data: signinData{Email: email, Error: strings.TrimPrefix(msg, "Not saved: ")}})
			return
		}
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "code", view{Title: "Enter your code", Data: signinData{Email: email, Handle: handle}})
}

// floor waits until SendMinTime has passed since start (or the request
// ends), so the answer's timing tells nothing of the address.
func (h *Handler) floor(r *http.Request, start time.Time) {
	wait := h.SendMinTime - time.Since(start)
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// verifyCode checks the code and starts a session with a new id; a session
// this browser had (re-authentication) ends.
func (h *Handler) verifyCode(w http.ResponseWriter, r *http.Request) {
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	d := signinData{Email: f.text("email"), Handle: f.text("handle")}
	a := audit.From(r.Context())
	cookie, sess, err := h.Console.VerifyCode(r.Context(), d.Handle, strings.TrimSpace(f.text("code")), a.IP, r.UserAgent(), client(r))
	var sf *console.SecondFactorError
	if errors.As(err, &sf) {
		h.secondFactor(w, r, sf)
		return
	}
	if err != nil {
		h.refuseSignIn(w, r, err, func(status int, msg string) {
			d.Error = msg
			h.render(w, r, status, "code", view{Title: "Enter your code", Data: d})
		})
		return
	}
	h.startSession(w, r, cookie, sess)
}

// refuseSignIn answers a refused sign-in step with the API's status and
// message on the step's own page (show), so the operator can try again;
// a failure of the server is the error page.
func (h *Handler) refuseSignIn(w http.ResponseWriter, r *http.Request, err error, show func(status int, msg string)) {
	status, _, msg := h.Describe(r.Context(), err)
	if errors.Is(err, console.ErrCodeRefused) {
		status, msg = http.StatusForbidden, err.Error()
	}
	if status >= 500 {
		h.fail(w, r, err)
		return
	}
	show(status, msg)
}

// startSession sets the new session and goes to the console.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, cookie string, sess console.Session) {
	h.replaceSession(w, r, cookie, sess)
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

// replaceSession ends the session this browser had, if any, and sets the new one.
func (h *Handler) replaceSession(w http.ResponseWriter, r *http.Request, cookie string, sess console.Session) {
	if old, err := r.Cookie(CookieName); err == nil {
		if prev, err := h.Console.Authenticate(r.Context(), old.Value); err == nil && prev.ID != sess.ID {
			_ = h.Console.SignOut(r.Context(), prev)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: cookie, Path: "/", Secure: true, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Expires: sess.ExpiresAt})
}

// linkPage is where a sign-in link lands. Opening it changes nothing (a
// link preview or a scanner must not spend it): it shows a button that
// POSTs the token.
func (h *Handler) linkPage(w http.ResponseWriter, r *http.Request) {
	tok := r.URL.Query().Get("token")
	if !strings.HasPrefix(tok, "ghl_") || len(tok) > 100 || !cleanText(tok) {
		h.render(w, r, http.StatusNotFound, "link", view{Title: "Sign in", Message: console.ErrLinkInvalid.Error() + "."})
		return
	}
	h.render(w, r, http.StatusOK, "link", view{Title: "Sign in", Data: tok})
}

// linkSignIn spends the link and starts a session with a new id, in a
// __Host- cookie.
func (h *Handler) linkSignIn(w http.ResponseWriter, r *http.Request) {
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	a := audit.From(r.Context())
	cookie, sess, err := h.Console.SignInWithLink(r.Context(), f.text("token"), a.IP, r.UserAgent())
	if errors.Is(err, console.ErrLinkInvalid) {
		h.render(w, r, http.StatusNotFound, "link", view{Title: "Sign in", Message: err.Error() + "."})
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.startSession(w, r, cookie, sess)
}

func (h *Handler) signOut(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionOf(r.Context())
	if err := h.Console.SignOut(r.Context(), sess); err != nil {
		h.fail(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
}

// home lists the operator's workspaces; with one, it opens it.
func (h *Handler) home(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionOf(r.Context())
	ms, err := h.Console.Memberships(r.Context(), sess)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if len(ms) == 1 {
		http.Redirect(w, r, "/console/w/"+ms[0].WorkspaceID, http.StatusSeeOther)
		return
	}
	h.render(w, r, http.StatusOK, "home", view{Title: "Workspaces", Memberships: ms})
}

type accountData struct {
	Sessions []console.Session
	Current  string
	Passkeys []console.Passkey
	TOTP     []signin.MFAMethod
	// CanAddPasskey: the session signed in with a code or a passkey.
	CanAddPasskey bool
}

func (h *Handler) account(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionOf(r.Context())
	list, err := h.Console.Sessions(r.Context(), sess)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pks, err := h.Console.Passkeys(r.Context(), sess)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	totp, err := h.Console.TOTP(r.Context(), sess)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "account", view{Title: "My account", Section: "account", Notice: noticeOf(r),
		Data: accountData{Sessions: list, Current: sess.ID, Passkeys: pks, TOTP: totp, CanAddPasskey: sess.AppSessionID != ""}})
}

func (h *Handler) revokeOwnSession(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionOf(r.Context())
	if err := h.Console.RevokeSession(r.Context(), sess, r.PathValue("id")); err != nil {
		if errors.Is(err, console.ErrSignedOut) {
			h.render(w, r, http.StatusNotFound, "error", view{Title: "Not found", Message: "No such session of yours."})
			return
		}
		h.fail(w, r, err)
		return
	}
	if r.PathValue("id") == sess.ID {
		http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/console/account", http.StatusSeeOther)
}

// workspacePage starts a page of one workspace: the operator's principal
// there and the view with the workspace set. false: answered already.
func (h *Handler) workspacePage(w http.ResponseWriter, r *http.Request, title, section string) (access.Principal, view, bool) {
	p, m, err := h.principal(r)
	if err != nil {
		h.fail(w, r, err)
		return p, view{}, false
	}
	return p, view{Title: title, Section: section, Workspace: &m}, true
}

// invalid reports whether err is input the operator can correct on the
// form, with the sentence to show.
func invalid(err error) (string, bool) {
	var iv *errs.Invalid
	if errors.As(err, &iv) {
		return "Not saved: " + iv.Field + " " + iv.Reason + ".", true
	}
	return "", false
}

// done answers a form's action that failed with err, or went through:
// nil goes back to path with notice; input the operator can correct shows
// the form again with the reason (retry, a 400 page); anything else is the
// error page.
func (h *Handler) done(w http.ResponseWriter, r *http.Request, err error, path, notice string, retry func(msg string)) {
	if err == nil {
		back(w, r, path, notice)
		return
	}
	if msg, ok := invalid(err); ok {
		retry(msg)
		return
	}
	h.fail(w, r, err)
}

// back redirects to the page a form came from (PRG), with a notice.
func back(w http.ResponseWriter, r *http.Request, path, notice string) {
	if notice != "" {
		path += "?notice=" + notice
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// notices are the lines a redirect may ask a page to show: by key, so a
// link cannot make the console say anything else.
var notices = map[string]string{
	"saved":             "Saved.",
	"app-created":       "App created.",
	"key-revoked":       "API key revoked.",
	"member-added":      "Member added.",
	"role-changed":      "Role changed.",
	"member-removed":    "Member removed.",
	"revoked":           "Sessions revoked.",
	"test-sent":         "Test event queued: it appears below as a webhook.test delivery.",
	"redelivered":       "Queued again: the same event, with a fresh set of attempts.",
	"passkey-added":     "Passkey added: sign in with it next time.",
	"passkey-removed":   "Passkey removed.",
	"profile-saved":     "Profile saved.",
	"mfa-reset":         "Authenticator apps and backup codes removed (passkeys stay); the user was told.",
	"status-changed":    "Status changed.",
	"user-deleted":      "User deleted.",
	"identity-unlinked": "Identity unlinked.",
}

func noticeOf(r *http.Request) string { return notices[r.URL.Query().Get("notice")] }
