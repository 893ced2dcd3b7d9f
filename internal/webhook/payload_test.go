package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

// TestPayloadIsStoredEventVerbatim checks that what a receiver gets is
// exactly the stored envelope, built from data as the emitting services
// build it, with no secret in body or headers.
func TestPayloadIsStoredEventVerbatim(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, envOptions{})
		rc := newReceiver(t, nil)
		ep := e.endpoint(t, e.appID, rc.url(), nil)

		now := time.Now().UTC().Truncate(time.Microsecond)
		user := store.AppUser{ID: uuid.NewString(), AppID: e.appID, UserID: uuid.NewString(), Status: store.StatusActive,
			Email: "zoë@example.com", EmailVerified: true, Meta: []byte(`{"plan":"pro","note":"<b>&</b>"}`),
			CreatedAt: now, UpdatedAt: now}
		// As internal/signin builds a verification event: ids, timing and
		// device, never the code or the link (which exist only here).
		const code, link = "493817", "https://shop.example.com/magic?token=mlt_s3cr3t"
		verification := map[string]any{
			"verification_id": uuid.NewString(), "intent": "login",
			"meta_data":  map[string]any{"delivery_method": "email", "contact_email": user.Email, "ticket_id": uuid.NewString()},
			"timing":     map[string]any{"sent_at": now, "opened_at": nil, "confirmed_at": nil, "time_to_verify_seconds": nil},
			"device":     map[string]any{"os": "macOS", "browser": "Firefox"},
			"ip_address": "203.0.113.7",
		}
		events := []struct {
			typ  string
			data any
		}{
			{webhook.UserCreated, appuser.EventData(user)},
			{webhook.Verification("email", webhook.OutcomeRequested), verification},
		}
		for _, ev := range events {
			e.emit(t, e.appID, ev.typ, ev.data)
		}
		page := e.waitSettled(t, e.appID, ep.ID, len(events))

		stored := map[string][]byte{}
		for _, d := range page.Deliveries {
			work, err := db.GetDeliveryWork(ctx, d.ID)
			if err != nil {
				t.Fatalf("GetDeliveryWork: %v", err)
			}
			stored[d.EventID] = work.Body
		}
		reqs := rc.requests()
		if len(reqs) != len(events) {
			t.Fatalf("receiver got %d requests; want %d", len(reqs), len(events))
		}
		for _, r := range reqs {
			env := envelope(t, r.body)
			if want, ok := stored[env.ID]; !ok || !bytes.Equal(r.body, want) {
				t.Errorf("received body %s; want the stored event body %s byte for byte", r.body, want)
			}
			for _, secret := range []string{ep.Secret, "whsec_", code, link, "mlt_"} {
				if bytes.Contains(r.body, []byte(secret)) {
					t.Errorf("%s payload contains a secret value", env.EventType)
				}
				for name, values := range r.header {
					if name != webhookverify.Header && strings.Contains(strings.Join(values, " "), secret) {
						t.Errorf("header %s carries a secret value", name)
					}
				}
			}
			if env.EventType == webhook.UserCreated {
				if got, want := roundTrip(t, env.Data), roundTrip(t, appuser.EventData(user)); !reflect.DeepEqual(got, want) {
					t.Errorf("user.created data = %v; want %v", got, want)
				}
			}
		}
	})
}

// receiverScript is one of the receiver examples shipped in webhookverify/testdata.
type receiverScript struct {
	interpreter, file string
}

// TestReceiverScriptsVerifyRealDelivery feeds one real delivery, raw header
// and raw body as received, to the Node and Python receiver examples.
func TestReceiverScriptsVerifyRealDelivery(t *testing.T) {
	scripts := []receiverScript{
		{"node", filepath.Join("..", "..", "webhookverify", "testdata", "verify.mjs")},
		{"python3", filepath.Join("..", "..", "webhookverify", "testdata", "verify.py")},
	}
	db := storetest.Open(t, store.SQLite)
	e := newEnv(t, db, envOptions{})
	rc := newReceiver(t, nil)
	ep := e.endpoint(t, e.appID, rc.url(), nil)
	rotated, err := e.svc.RotateSecret(context.Background(), e.appID, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.emit(t, e.appID, webhook.UserUpdated, map[string]any{"user": map[string]any{"name": "Zoë – 東京 ✓", "id": "u-1"}})
	e.waitSettled(t, e.appID, ep.ID, 1)
	r := rc.requests()[0]
	header := r.header.Get(webhookverify.Header)

	for _, s := range scripts {
		t.Run(s.interpreter, func(t *testing.T) {
			bin, err := exec.LookPath(s.interpreter)
			if err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s not found; CI must have it: %v", s.interpreter, err)
				}
				t.Skipf("%s not found, skipping (a failure when CI=true)", s.interpreter)
			}
			tests := []struct {
				name    string
				secrets string
				want    string
			}{
				{"secret from create", ep.Secret, "ok"},
				{"rotated secret", rotated.Secret, "ok"},
				{"both", ep.Secret + "," + rotated.Secret, "ok"},
				{"wrong secret", "whsec_wrong", "fail"},
			}
			for _, tt := range tests {
				if got := runReceiverScript(t, bin, s.file, header, r.body, tt.secrets); got != tt.want {
					t.Errorf("%s %s with %s = %q; want %q", s.interpreter, filepath.Base(s.file), tt.name, got, tt.want)
				}
			}
			// A body changed by one byte fails.
			tampered := bytes.Replace(r.body, []byte("u-1"), []byte("u-2"), 1)
			if got := runReceiverScript(t, bin, s.file, header, tampered, ep.Secret); got != "fail" {
				t.Errorf("%s with a tampered body = %q; want %q", s.interpreter, got, "fail")
			}
		})
	}
}

// runReceiverScript runs a script with {"header","body"} on stdin and returns
// the first word it prints ("ok" or "fail").
func runReceiverScript(t *testing.T, bin, file, header string, body []byte, secrets string) string {
	t.Helper()
	input, err := json.Marshal(map[string]string{"header": header, "body": string(body)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, file, secrets)
	cmd.Stdin = bytes.NewReader(input)
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running %s %s: %v", bin, file, err)
	}
	word, _, _ := strings.Cut(strings.TrimSpace(string(out)), ":")
	if (word == "ok") != (err == nil) {
		t.Errorf("%s printed %q but exited with %v", file, out, err)
	}
	return word
}
