package webhookverify

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// deliveryBody is a realistic envelope as the server sends it.
const deliveryBody = `{"id":"0b9f6c1e-3c1d-4a43-9a53-2f3e0c6a1d55","created_at":"2023-11-14T22:13:20Z",` +
	`"event_type":"verification.email.verified","app_id":"5d7e2f4a-8c61-4b0e-9f3a-6a2b1c9d8e7f",` +
	`"data":{"verification_id":"c2a5e8f1-7b3d-4e6a-8c9f-1d2e3f4a5b6c"},"api_version":"v1"}`

// recorder is a next handler that remembers what it saw.
type recorder struct {
	called   bool
	body     []byte
	env      Envelope
	envFound bool
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.called = true
	rec.body, _ = io.ReadAll(r.Body)
	rec.env, rec.envFound = EnvelopeFrom(r.Context())
	w.WriteHeader(http.StatusNoContent)
}

func TestHandler(t *testing.T) {
	signedAt := testNow()
	tests := []struct {
		name     string
		header   string // "" sends no header
		body     string
		now      time.Time
		wantCode int
	}{
		{"good", Sign([]byte(deliveryBody), signedAt, testSecret), deliveryBody, signedAt, http.StatusNoContent},
		{"good during rotation", Sign([]byte(deliveryBody), signedAt, otherSecret, testSecret), deliveryBody, signedAt.Add(time.Minute), http.StatusNoContent},
		{"missing header", "", deliveryBody, signedAt, http.StatusBadRequest},
		{"malformed header", "t=abc,v1=00", deliveryBody, signedAt, http.StatusBadRequest},
		{"wrong secret", Sign([]byte(deliveryBody), signedAt, "whsec_wrong"), deliveryBody, signedAt, http.StatusBadRequest},
		{"tampered body", Sign([]byte(deliveryBody), signedAt, testSecret), strings.Replace(deliveryBody, "verified", "denied", 1), signedAt, http.StatusBadRequest},
		{"expired", Sign([]byte(deliveryBody), signedAt, testSecret), deliveryBody, signedAt.Add(301 * time.Second), http.StatusBadRequest},
		{"signed but not an envelope", Sign([]byte("[1,2]"), signedAt, testSecret), "[1,2]", signedAt, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			h := newHandler(rec, func() time.Time { return tt.now }, []string{testSecret})
			req := httptest.NewRequest(http.MethodPost, "/hooks/gatehouse", strings.NewReader(tt.body))
			if tt.header != "" {
				req.Header.Set(Header, tt.header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)

			if w.Code != tt.wantCode {
				t.Fatalf("status = %d (%q); want %d", w.Code, w.Body.String(), tt.wantCode)
			}
			if tt.wantCode != http.StatusNoContent {
				if rec.called {
					t.Errorf("next was called on a rejected delivery")
				}
				if strings.Contains(w.Body.String(), testSecret) {
					t.Errorf("response %q contains the secret", w.Body.String())
				}
				return
			}
			if !rec.called {
				t.Fatalf("next was not called")
			}
			if string(rec.body) != tt.body {
				t.Errorf("next read body %q; want %q", rec.body, tt.body)
			}
			if !rec.envFound {
				t.Fatalf("EnvelopeFrom(ctx) found nothing")
			}
			want := Envelope{
				ID:         "0b9f6c1e-3c1d-4a43-9a53-2f3e0c6a1d55",
				CreatedAt:  time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC),
				EventType:  "verification.email.verified",
				AppID:      "5d7e2f4a-8c61-4b0e-9f3a-6a2b1c9d8e7f",
				APIVersion: "v1",
			}
			got := rec.env
			if got.ID != want.ID || !got.CreatedAt.Equal(want.CreatedAt) || got.EventType != want.EventType ||
				got.AppID != want.AppID || got.APIVersion != want.APIVersion {
				t.Errorf("EnvelopeFrom(ctx) = %+v; want %+v", got, want)
			}
			if wantData := `{"verification_id":"c2a5e8f1-7b3d-4e6a-8c9f-1d2e3f4a5b6c"}`; string(got.Data) != wantData {
				t.Errorf("Envelope.Data = %s; want %s", got.Data, wantData)
			}
		})
	}
}

// TestHandlerRealClock goes through the exported Handler and a real server.
func TestHandlerRealClock(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(Handler(rec, "", testSecret))
	defer srv.Close()

	post := func(header string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(deliveryBody))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(Header, header)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if code := post(Sign([]byte(deliveryBody), time.Now().Add(-time.Hour), testSecret)); code != http.StatusBadRequest || rec.called {
		t.Errorf("hour-old delivery: status %d, next called %v; want 400, false", code, rec.called)
	}
	if code := post(Sign([]byte(deliveryBody), time.Now(), testSecret)); code != http.StatusNoContent || !rec.called {
		t.Errorf("fresh delivery: status %d, next called %v; want 204, true", code, rec.called)
	}
	if string(rec.body) != deliveryBody {
		t.Errorf("next read body %q; want %q", rec.body, deliveryBody)
	}
}

func TestHandlerBodyLimit(t *testing.T) {
	signedAt := testNow()
	// A valid envelope padded with spaces to exactly the limit, then one byte more.
	atLimit := deliveryBody + strings.Repeat(" ", maxBody-len(deliveryBody))
	tests := []struct {
		name     string
		body     string
		wantCode int
	}{
		{"exactly 1 MiB", atLimit, http.StatusNoContent},
		{"1 MiB + 1", atLimit + " ", http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			h := newHandler(rec, func() time.Time { return signedAt }, []string{testSecret})
			req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader([]byte(tt.body)))
			req.Header.Set(Header, Sign([]byte(tt.body), signedAt, testSecret))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tt.wantCode {
				t.Errorf("status = %d; want %d", w.Code, tt.wantCode)
			}
			if wantCalled := tt.wantCode == http.StatusNoContent; rec.called != wantCalled {
				t.Errorf("next called = %v; want %v", rec.called, wantCalled)
			}
			if rec.called && len(rec.body) != len(tt.body) {
				t.Errorf("next read %d bytes; want %d", len(rec.body), len(tt.body))
			}
		})
	}
}

func TestHandlerNeedsSecret(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
	}{
		{"none", nil},
		{"only empty", []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Handler(next, %q) did not panic", tt.secrets)
				}
			}()
			Handler(&recorder{}, tt.secrets...)
		})
	}
}

func TestEnvelopeFromEmptyContext(t *testing.T) {
	if env, ok := EnvelopeFrom(t.Context()); ok {
		t.Errorf("EnvelopeFrom(empty ctx) = %+v, true; want false", env)
	}
}
