package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// Push approval on the hosted pages (signin/push.go). Asking: the sign-in's
// second factor and the account page's step-up can be a push; the page
// shows the match number and waits (hosted.js asks the status route every
// 4 seconds and submits "I've approved it" once the request is answered;
// without JavaScript the person presses it). Approving: the account page
// lists the requests waiting for the signed-in user (other than its own)
// and approves one with the number the asking device shows, or denies it;
// while it is open, hosted_account.js asks every 5 seconds how many wait
// and says when a new one comes.

// pushState is a waiting page's state for hosted.js: "pending" while the
// challenge waits, "done" once it is approved, denied or over (the form
// then collects the result or says why not).
func pushState(v signin.ChallengeView) string {
	if v.Status == "pending" {
		return "pending"
	}
	return "done"
}

// hostedMFAStatus tells hosted.js whether the sign-in's push waits still
// (JSON; the page's CSRF token in X-CSRF-Token; a read).
func (h *Handler) hostedMFAStatus(w http.ResponseWriter, r *http.Request) {
	app, ok := h.hostedApp(w, r)
	if !ok {
		return
	}
	if !h.statusCSRF(w, r, app) {
		return
	}
	f, ok := h.flow(r, app, "mfa")
	h.pushStatus(w, r, app, f.Challenge, ok && f.Method == signin.MethodPush)
}

// pushStatus answers a waiting page's poll for the push behind token
// (when found is true; else, and once the push is gone, "gone").
func (h *Handler) pushStatus(w http.ResponseWriter, r *http.Request, app tenant.App, token string, found bool) {
	if !found {
		writeJSON(w, http.StatusOK, map[string]string{"state": "gone"})
		return
	}
	v, err := h.SignIn.GetChallenge(r.Context(), app, token)
	if errors.Is(err, signin.ErrChallengeNotFound) {
		writeJSON(w, http.StatusOK, map[string]string{"state": "gone"})
		return
	}
	if err != nil {
		h.jsonFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"state": pushState(v)})
}

// statusCSRF checks a login page's script request (a poll, a passkey
// ceremony): the page's CSRF token in X-CSRF-Token, bound to this
// browser's pre-session. false: refused (403).
func (h *Handler) statusCSRF(w http.ResponseWriter, r *http.Request, app tenant.App) bool {
	pre := cookieValue(r, hostedPreCookie)
	if pre == "" || !h.Hasher.Equal(r.Header.Get("X-CSRF-Token"), "hosted-login-csrf", app.ID, pre) {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "This request was not sent from this browser's sign-in page. Reload the page and try again.", "code": "forbidden"})
		return false
	}
	return true
}

// pushRefusal is the sentence for a push that gave nothing: not answered
// yet, or over (denied, too many wrong numbers, expired). A sign-in's push
// that is over ends the sign-in (signin lets no new second factor follow
// it, so a denied request cannot be asked again and again); a step-up's
// can be asked again. ok false: not a push's refusal.
func pushRefusal(err error, signIn bool) (status int, msg string, over, ok bool) {
	var closed *signin.ChallengeClosedError
	then := " Ask again, or choose another way."
	if signIn {
		then = " Start again."
	}
	switch {
	case errors.Is(err, signin.ErrChallengePending):
		return http.StatusConflict, "Not approved yet. Approve the request on your other device, choosing the number shown here, then try again.", false, true
	case errors.Is(err, signin.ErrTooManyAttempts):
		return http.StatusUnprocessableEntity, "Too many wrong numbers were chosen on your other device, so this request has ended." + then, true, true
	case errors.As(err, &closed) && closed.Status == "denied":
		return http.StatusForbidden, "This request was denied on your other device: nothing was approved." + then, true, true
	case errors.As(err, &closed):
		return http.StatusGone, "This request has ended (it expired or was used)." + then, true, true
	case errors.Is(err, signin.ErrUnauthenticated):
		// Approved, but the approving session ended before the result was
		// collected: the approval no longer counts.
		return http.StatusGone, "The device that approved has signed out since, so its approval no longer counts." + then, true, true
	}
	return 0, "", false, false
}

// refusePushMFA answers a sign-in's push that gave nothing: the waiting
// page again while it waits, else the login page (the sign-in is over).
func (h *Handler) refusePushMFA(w http.ResponseWriter, r *http.Request, app tenant.App, pre string, f hostedFlow, err error) bool {
	status, msg, over, ok := pushRefusal(err, true)
	switch {
	case !ok:
		return false
	case isCollected(err):
		// Collected already, by this browser's other submit (the script's
		// and a click): signed in, when the browser now has the session.
		if caller, signedIn := h.hostedCaller(r, app); signedIn && caller.User.ID == f.Handle {
			h.finish(w, r, app, caller, f.Return, f.Callback)
			return true
		}
		setCookie(w, r, hostedFlowCookie, "", time.Time{})
		h.loginPage(w, r, app, pre, status, loginAgain(app, f), msg)
	case over:
		setCookie(w, r, hostedFlowCookie, "", time.Time{})
		h.loginPage(w, r, app, pre, status, loginAgain(app, f), msg)
	default:
		h.mfaPage(w, r, app, f, status, msg)
	}
	return true
}

// isCollected tells a push whose result was handed out already.
func isCollected(err error) bool {
	var closed *signin.ChallengeClosedError
	return errors.As(err, &closed) && closed.Status == "collected"
}

// Approving, on the account page.

// hostedApprovePush approves a request waiting for the user
// (signin.ApprovePush, as POST /push/{id}/approve): the number is a guess,
// its attempt taken before it is compared.
func (h *Handler) hostedApprovePush(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	n, err := strconv.Atoi(strings.TrimSpace(r.PostForm.Get("match_number")))
	if err != nil || n < 0 {
		h.accountPage(w, r, app, caller, http.StatusBadRequest, "Type the number the other device shows.", nil)
		return
	}
	_, err = h.SignIn.ApprovePush(r.Context(), app, caller, r.PathValue("id"), n)
	if err != nil {
		h.refusePushAnswer(w, r, app, caller, err)
		return
	}
	accountDone(w, r, app, "push-approved")
}

// hostedDenyPush refuses a request ("this was not me").
func (h *Handler) hostedDenyPush(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	if _, err := h.SignIn.DenyPush(r.Context(), app, caller, r.PathValue("id")); err != nil {
		h.refusePushAnswer(w, r, app, caller, err)
		return
	}
	accountDone(w, r, app, "push-denied")
}

// hostedPushStatus tells hosted_account.js how many requests wait for the
// user's approval (JSON {"pending": N}, as the account page would list
// them; the form's csrf; a read), so that the page can say when a new one
// comes.
func (h *Handler) hostedPushStatus(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	list, err := h.SignIn.PendingPush(r.Context(), app, caller)
	if err != nil {
		h.jsonFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"pending": len(list)})
}

func (h *Handler) refusePushAnswer(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller, err error) {
	var closed *signin.ChallengeClosedError
	switch {
	case errors.Is(err, signin.ErrChallengeNotFound), errors.As(err, &closed):
		h.accountPage(w, r, app, caller, http.StatusNotFound, "This request is no longer waiting: it was answered, it expired, or it is not yours.", nil)
	case errors.Is(err, signin.ErrTooManyAttempts):
		h.accountPage(w, r, app, caller, http.StatusUnprocessableEntity, "Too many wrong numbers: this request has ended and nothing was approved.", nil)
	default:
		if _, ok := invalid(err); ok {
			h.accountPage(w, r, app, caller, http.StatusUnprocessableEntity, "That is not the number the other device shows. Check it and try again; if that device shows no number, deny the request.", nil)
			return
		}
		h.accountRefuse(w, r, app, caller, err)
	}
}

// peekKey marks a request of a page's background poll (the account page's
// push status): it reads the hosted session without counting as its use
// (signin.HostedCallerPeek), so an open page does not keep the session
// from idling out.
type peekKey struct{}

func peek(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		next(w, r.WithContext(context.WithValue(r.Context(), peekKey{}, true)))
	}
}

// Step-up by push.

// hostedStepUpStatus tells hosted.js whether the step-up's push waits
// still (the form's fields: csrf and the sealed challenge; a read).
func (h *Handler) hostedStepUpStatus(w http.ResponseWriter, r *http.Request, app tenant.App, caller signin.Caller) {
	c, ok := h.openChallenge(app, caller, signin.PurposeStepUp, r.PostForm.Get("challenge"))
	h.pushStatus(w, r, app, c.Token, ok && c.Method == signin.MethodPush)
}

// recentDevices counts the user's other live sessions whose sign-in is
// recent enough to confirm it is the user by a push (an approval is no
// fresher than the approving session's own sign-in).
func (h *Handler) recentDevices(app tenant.App, list []signin.Session, current string) int {
	window := time.Duration(reverifyMinutes(app)) * time.Minute
	n := 0
	for _, s := range list {
		if s.ID != current && h.Now().Before(s.Authenticated().Add(window)) {
			n++
		}
	}
	return n
}

// recentNow tells whether the browser's hosted session (read again) is
// recent enough for the changes that need a recent sign-in.
func (h *Handler) recentNow(r *http.Request, app tenant.App) bool {
	c, ok := h.hostedCaller(r, app)
	return ok && h.Now().Before(c.Session.Authenticated().Add(time.Duration(reverifyMinutes(app))*time.Minute))
}
