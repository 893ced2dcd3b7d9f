package web

import (
	"bytes"
	"encoding/base64"
	"errors"
	"html/template"
	"image/png"
	"net/http"
	"net/url"
	"strings"

	"github.com/pquerna/otp"

	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/console"
)

type totpData struct {
	Challenge, First, Error string
}

// secondFactor answers a sign-in that waits for the operator's
// authenticator app with the page that asks for its code.
func (h *Handler) secondFactor(w http.ResponseWriter, r *http.Request, sf *console.SecondFactorError) {
	h.render(w, r, http.StatusOK, "totp", view{Title: "Authenticator app", Data: totpData{Challenge: sf.Challenge, First: sf.First}})
}

// totpPage is where a passkey sign-in that needs the second factor goes
// (console.js follows the location it is given). It changes nothing.
func (h *Handler) totpPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := totpData{Challenge: q.Get("challenge"), First: q.Get("first")}
	if d.Challenge == "" || !cleanText(d.Challenge) || len(d.Challenge) > 200 {
		http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
		return
	}
	h.render(w, r, http.StatusOK, "totp", view{Title: "Authenticator app", Data: d})
}

func (h *Handler) verifyTOTPSignIn(w http.ResponseWriter, r *http.Request) {
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	d := totpData{Challenge: f.text("challenge"), First: f.text("first")}
	a := audit.From(r.Context())
	cookie, sess, err := h.Console.VerifySecondFactor(r.Context(), d.Challenge, d.First, strings.TrimSpace(f.text("code")), a.IP, r.UserAgent(), client(r))
	if err != nil {
		h.refuseSignIn(w, r, err, func(status int, msg string) {
			d.Error = msg
			h.render(w, r, status, "totp", view{Title: "Authenticator app", Data: d})
		})
		return
	}
	h.startSession(w, r, cookie, sess)
}

type enrolData struct {
	ID, Secret string
	QR         template.URL // a data: URI of the otpauth QR code (img-src allows data:)
	Error      string
}

// enrolTOTP starts setting up an authenticator app: a QR code and the
// secret, shown on this answer; nothing is active until a code confirms it.
func (h *Handler) enrolTOTP(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionOf(r.Context())
	en, err := h.Console.EnrollTOTP(r.Context(), sess)
	if err != nil {
		h.accountFail(w, r, err)
		return
	}
	d := enrolData{ID: en.Enrollment.ID, Secret: en.Secret}
	if key, err := otp.NewKeyFromURL(en.ProvisioningURI); err == nil {
		if img, err := key.Image(220, 220); err == nil {
			var buf bytes.Buffer
			if png.Encode(&buf, img) == nil {
				d.QR = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()))
			}
		}
	}
	h.render(w, r, http.StatusOK, "enrol", view{Title: "Set up an authenticator app", Section: "account", Data: d})
}

func (h *Handler) confirmTOTP(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionOf(r.Context())
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	if err := h.Console.VerifyTOTP(r.Context(), sess, f.text("id"), strings.TrimSpace(f.text("code")), client(r)); err != nil {
		status, _, msg := h.Describe(r.Context(), err)
		if status >= 500 || status == http.StatusForbidden {
			h.accountFail(w, r, err)
			return
		}
		h.render(w, r, status, "enrol", view{Title: "Set up an authenticator app", Section: "account",
			Data: enrolData{ID: f.text("id"), Error: msg + " Scan the code again, or start over."}})
		return
	}
	back(w, r, "/console/account", "totp-added")
}

func (h *Handler) deleteTOTP(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionOf(r.Context())
	if !h.fresh(w, r) {
		return
	}
	if err := h.Console.DeleteTOTP(r.Context(), sess, r.PathValue("id")); err != nil {
		h.accountFail(w, r, err)
		return
	}
	back(w, r, "/console/account", "totp-removed")
}

// accountFail answers a refusal of an own-account change: a session that
// cannot make it yet (a link sign-in, or one too old for signin's step-up
// rule) is asked to sign in again.
func (h *Handler) accountFail(w http.ResponseWriter, r *http.Request, err error) {
	_, code, _ := h.Describe(r.Context(), err)
	if errors.Is(err, console.ErrNeedsCodeSignIn) || code == "step_up_required" || code == "reauthentication_required" {
		h.render(w, r, http.StatusForbidden, "reauth", view{Title: "Sign in again"})
		return
	}
	h.fail(w, r, err)
}

// totpLocation is where console.js sends a passkey sign-in that needs the
// second factor.
func totpLocation(sf *console.SecondFactorError) string {
	return "/console/signin/totp?" + url.Values{"challenge": {sf.Challenge}, "first": {sf.First}}.Encode()
}
