package web

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

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

func (h *Handler) setHostedSession(w http.ResponseWriter, app tenant.App, caller signin.Caller) error {
	b, _ := json.Marshal(hostedSessionValue{Session: caller.Session.ID})
	sealed, err := h.Sealer.Seal(b, []byte("hosted-session:"+app.ID))
	if err != nil {
		return err
	}
	setCookie(w, hostedSessionCookie+app.ID, base64.RawURLEncoding.EncodeToString(sealed), caller.Session.ExpiresAt)
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
	c, err := h.SignIn.SessionCaller(r.Context(), app, v.Session)
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
			setCookie(w, hostedSessionCookie+app.ID, "", time.Time{})
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

type accountHostedData struct {
	Contact  string
	Sessions []signin.Session
	Current  string
}

var hostedNotices = map[string]string{
	"revoked": "Session revoked: that device is signed out.",
}

func (h *Handler) hostedAccount(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	list, err := h.SignIn.ListSessions(r.Context(), app, caller)
	if err != nil {
		h.hostedFail(w, r, app, err)
		return
	}
	h.hostedPage(w, r, http.StatusOK, "account", hostedView{Title: "Your account", App: app, CSRF: h.accountCSRF(app, caller),
		Notice: hostedNotices[r.URL.Query().Get("notice")],
		Data:   accountHostedData{Contact: contactOf(caller), Sessions: list, Current: caller.Session.ID}})
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
		setCookie(w, hostedSessionCookie+app.ID, "", time.Time{})
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
	setCookie(w, hostedSessionCookie+app.ID, "", time.Time{})
	http.Redirect(w, r, "/login/"+app.ID+"?"+url.Values{"return": {"/account/" + app.ID}}.Encode(), http.StatusSeeOther)
}
