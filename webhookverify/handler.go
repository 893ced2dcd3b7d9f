package webhookverify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// maxBody is the largest body Handler reads; deliveries are far smaller.
const maxBody = 1 << 20

// Envelope is the JSON body of a delivery. ID stays the same on every retry of an event, so
// receivers use it to drop duplicates.
type Envelope struct {
	ID         string          `json:"id"`
	CreatedAt  time.Time       `json:"created_at"`
	EventType  string          `json:"event_type"`
	AppID      string          `json:"app_id"`
	Data       json.RawMessage `json:"data"`
	APIVersion string          `json:"api_version"`
}

// envelopeKey is the context key for the Envelope that Handler stores.
type envelopeKey struct{}

// Handler wraps next: it reads the raw body (at most 1 MiB), verifies the signature with
// secrets, DefaultTolerance and time.Now, and answers 400 without calling next when the check
// fails (413 when the body is larger than 1 MiB). Otherwise it restores the body, so next can
// read it in full, and puts the parsed Envelope in the request context (see EnvelopeFrom).
// Handler panics when no secret is non-empty: that is a configuration error which would
// otherwise reject every delivery.
func Handler(next http.Handler, secrets ...string) http.Handler {
	return newHandler(next, time.Now, secrets)
}

// EnvelopeFrom returns the Envelope that Handler stored in ctx.
func EnvelopeFrom(ctx context.Context) (Envelope, bool) {
	env, ok := ctx.Value(envelopeKey{}).(Envelope)
	return env, ok
}

// newHandler is Handler with an injectable clock.
func newHandler(next http.Handler, now func() time.Time, secrets []string) http.Handler {
	if next == nil {
		panic("webhookverify: Handler with nil next")
	}
	usable := make([]string, 0, len(secrets))
	for _, s := range secrets {
		if s != "" {
			usable = append(usable, s)
		}
	}
	if len(usable) == 0 {
		panic("webhookverify: Handler needs at least one non-empty secret")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read one byte past the limit to tell "exactly 1 MiB" from "too large".
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			http.Error(w, "webhookverify: cannot read body", http.StatusBadRequest)
			return
		}
		if len(body) > maxBody {
			http.Error(w, "webhookverify: body larger than 1 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		// The reasons carry no secret and end up in the sender's delivery log, where they
		// help the endpoint owner tell a wrong secret from a skewed clock.
		if err := Verify(r.Header.Get(Header), body, now(), DefaultTolerance, usable...); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var env Envelope
		if err := json.Unmarshal(body, &env); err != nil {
			http.Error(w, "webhookverify: body is not a delivery envelope", http.StatusBadRequest)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), envelopeKey{}, env))
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}
