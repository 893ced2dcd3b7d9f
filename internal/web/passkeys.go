package web

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/console"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
)

// Passkeys are the one part of the console that needs JavaScript
// (static/console.js calls WebAuthn): its four JSON actions are here.

// maxCeremony bounds a WebAuthn answer's body.
const maxCeremony = 64 << 10

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// jsonFail answers err as the API would: status, code and message.
func (h *Handler) jsonFail(w http.ResponseWriter, r *http.Request, err error) {
	status, code, msg := h.Describe(r.Context(), err)
	switch {
	case errors.Is(err, console.ErrNeedsCodeSignIn):
		status, code, msg = http.StatusForbidden, "reauthentication_required", err.Error()
	case errors.Is(err, console.ErrCodeRefused):
		status, code, msg = http.StatusForbidden, "forbidden", err.Error()
	}
	writeJSON(w, status, map[string]string{"error": msg, "code": code})
}

// ceremonyBody reads a JSON body (a WebAuthn answer).
func ceremonyBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return nil, errs.Invalidf("body", "must be JSON (application/json)")
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCeremony))
	if err != nil || !json.Valid(b) {
		return nil, errs.Invalidf("body", "is not a readable JSON document")
	}
	return b, nil
}

// beginPasskeySignIn gives the browser a discoverable sign-in's options.
func (h *Handler) beginPasskeySignIn(w http.ResponseWriter, r *http.Request) {
	opts, err := h.Console.BeginPasskeySignIn(r.Context(), client(r))
	if err != nil {
		h.jsonFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, opts)
}

// finishPasskeySignIn checks the browser's answer and starts a session
// (the cookie is set on this answer; the page then goes to the console).
func (h *Handler) finishPasskeySignIn(w http.ResponseWriter, r *http.Request) {
	body, err := ceremonyBody(w, r)
	if err != nil {
		h.jsonFail(w, r, err)
		return
	}
	a := audit.From(r.Context())
	cookie, sess, err := h.Console.FinishPasskeySignIn(r.Context(), body, a.IP, r.UserAgent(), client(r))
	var sf *console.SecondFactorError
	if errors.As(err, &sf) {
		writeJSON(w, http.StatusOK, map[string]string{"location": totpLocation(sf)})
		return
	}
	if err != nil {
		h.jsonFail(w, r, err)
		return
	}
	h.replaceSession(w, r, cookie, sess)
	writeJSON(w, http.StatusOK, map[string]string{"location": "/console/"})
}

func (h *Handler) beginPasskeyRegistration(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionOf(r.Context())
	opts, err := h.Console.BeginPasskeyRegistration(r.Context(), sess)
	if err != nil {
		h.jsonFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, opts)
}

func (h *Handler) finishPasskeyRegistration(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionOf(r.Context())
	body, err := ceremonyBody(w, r)
	if err != nil {
		h.jsonFail(w, r, err)
		return
	}
	pk, err := h.Console.FinishPasskeyRegistration(r.Context(), sess, body, client(r))
	if err != nil {
		h.jsonFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": pk.ID, "name": pk.Name, "location": "/console/account?notice=passkey-added"})
}

func (h *Handler) deletePasskey(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionOf(r.Context())
	if err := h.Console.DeletePasskey(r.Context(), sess, r.PathValue("id")); err != nil {
		if errors.Is(err, console.ErrNeedsCodeSignIn) {
			h.render(w, r, http.StatusForbidden, "reauth", view{Title: "Sign in again"})
			return
		}
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/account", "passkey-removed")
}
