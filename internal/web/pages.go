package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/console"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
)

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusNotFound, "error", view{Title: "Not found", Message: "There is no console page here."})
}

// signinPage says how to get a sign-in link.
func (h *Handler) signinPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "signin", view{Title: "Sign in"})
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
	f, err := parseForm(w, r)
	if err != nil {
		h.fail(w, r, err)
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
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: cookie, Path: "/", Secure: true, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Expires: sess.ExpiresAt})
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
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
}

func (h *Handler) account(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionOf(r.Context())
	list, err := h.Console.Sessions(r.Context(), sess)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "account", view{Title: "My account", Section: "account", Data: accountData{Sessions: list, Current: sess.ID}})
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
	"saved":          "Saved.",
	"app-created":    "App created.",
	"key-revoked":    "API key revoked.",
	"member-added":   "Member added.",
	"role-changed":   "Role changed.",
	"member-removed": "Member removed.",
	"revoked":        "Sessions revoked.",
	"test-sent":      "Test event queued: it appears below as a webhook.test delivery.",
	"redelivered":    "Queued again: the same event, with a fresh set of attempts.",
}

func noticeOf(r *http.Request) string { return notices[r.URL.Query().Get("notice")] }
