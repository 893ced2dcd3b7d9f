package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
	"github.com/gatehouse-auth/gatehouse/internal/webhook/eventschema"
	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

// TestPayloadIsStoredEventVerbatim checks that what a receiver gets is
// exactly the stored envelope, as the services emit it, with no secret in
// body or headers: not the endpoint's secret, nor the sign-in code, link or
// tokens the same flow produced. The system runs on its fake clock (no
// retries), so every timestamp in the payload is fixed.
func TestPayloadIsStoredEventVerbatim(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{serve: true, fakeClock: true}, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.setSchema(t, appuser.Schema{
			{ID: "plan", Name: "Plan", FieldName: "plan", FieldType: appuser.FieldString},
			{ID: "note", Name: "Note", FieldName: "note", FieldType: appuser.FieldText},
		})
		rc := newReceiver(t, nil)
		ep := e.endpoint(t, e.app.ID, rc.url(), nil)

		const email = "zoe@example.com"
		user := e.createUser(t, e.app.ID, appuser.CreateInput{Email: email, Meta: map[string]any{"plan": "pro", "note": "<b>&</b>"}})
		client := signin.Client{IP: "203.0.113.7", UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) Gecko/20100101 Firefox/126.0"}
		if _, err := e.SignIn.SendMagicLink(ctx, e.app, email, nil, false, client); err != nil {
			t.Fatalf("SendMagicLink: %v", err)
		}
		linkMsg, _ := e.Mail.Last(email)
		if _, err := e.SignIn.SendOTP(ctx, e.app, email, nil, client); err != nil {
			t.Fatalf("SendOTP: %v", err)
		}
		codeMsg, _ := e.Mail.Last(email)
		tokens, err := e.SignIn.VerifyOTP(ctx, e.app, user.ID, codeMsg.Code, client)
		if err != nil {
			t.Fatalf("VerifyOTP: %v", err)
		}
		link, err := url.Parse(linkMsg.Link)
		if err != nil || link.Query().Get("sct_magic") == "" || len(codeMsg.Code) != 6 {
			t.Fatalf("sent link %q (%v) and code %q; want a link with a token and a 6-digit code", linkMsg.Link, err, codeMsg.Code)
		}
		secrets := map[string]string{
			"endpoint secret": ep.Secret, "secret prefix": "whsec_", "code": codeMsg.Code, "link": linkMsg.Link,
			"link token": link.Query().Get("sct_magic"), "access token": tokens.Access, "refresh token": tokens.Refresh,
			"CSRF token": tokens.CSRF,
		}
		wantTypes := []string{webhook.UserCreated, webhook.Verification("email", webhook.OutcomeRequested), webhook.ChallengeCreated,
			webhook.Verification("email", webhook.OutcomeRequested), webhook.ChallengeCreated,
			webhook.Verification("email", webhook.OutcomeVerified), webhook.ChallengeCompleted}
		page := e.waitSettled(t, e.app.ID, ep.ID, len(wantTypes))

		stored := map[string][]byte{}
		for _, d := range page.Deliveries {
			work, err := e.DB.GetDeliveryWork(ctx, d.ID)
			if err != nil {
				t.Fatalf("GetDeliveryWork: %v", err)
			}
			stored[d.EventID] = work.Body
		}
		reqs := rc.requests()
		if len(reqs) != len(wantTypes) {
			t.Fatalf("receiver got %d requests; want %d", len(reqs), len(wantTypes))
		}
		var types []string
		for _, r := range reqs {
			env := envelope(t, r.body)
			types = append(types, env.EventType)
			if err := eventschema.Validate(r.body); err != nil {
				t.Errorf("the delivered body does not match the published schema: %v", err)
			}
			if want, ok := stored[env.ID]; !ok || !bytes.Equal(r.body, want) {
				t.Errorf("received body %s; want the stored event body %s byte for byte", r.body, want)
			}
			for what, secret := range secrets {
				if bytes.Contains(r.body, []byte(secret)) {
					t.Errorf("%s payload contains the %s", env.EventType, what)
				}
				for name, values := range r.header {
					if name != webhookverify.Header && strings.Contains(strings.Join(values, " "), secret) {
						t.Errorf("header %s carries the %s", name, what)
					}
				}
			}
			if env.EventType == webhook.UserCreated {
				if got, want := roundTrip(t, env.Data), roundTrip(t, appuser.EventData(user.AppUser, false)); !reflect.DeepEqual(got, want) {
					t.Errorf("user.created data = %v; want %v", got, want)
				}
			}
		}
		if !sameSet(types, wantTypes) {
			t.Errorf("received %v; want %v", types, wantTypes)
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
	t.Parallel()
	scripts := []receiverScript{
		{"node", filepath.Join("..", "..", "webhookverify", "testdata", "verify.mjs")},
		{"python3", filepath.Join("..", "..", "webhookverify", "testdata", "verify.py")},
	}
	// Real time: the scripts check the signature's age against their own clock.
	e := newEnvOn(t, store.SQLite, envOptions{serve: true})
	e.setSchema(t, appuser.Schema{{ID: "name", Name: "Name", FieldName: "name", FieldType: appuser.FieldString}})
	rc := newReceiver(t, nil)
	ep := e.endpoint(t, e.app.ID, rc.url(), nil)
	rotated, err := e.Webhooks.RotateSecret(context.Background(), e.caller(t, e.app.ID), e.app.ID, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.createUser(t, e.app.ID, appuser.CreateInput{Email: "zoe@example.com", Meta: map[string]any{"name": "Zoë – 東京 ✓"}})
	e.waitSettled(t, e.app.ID, ep.ID, 1)
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
			// A body changed in a few bytes fails.
			tampered := bytes.Replace(r.body, []byte("東京"), []byte("京都"), 1)
			if bytes.Equal(tampered, r.body) {
				t.Fatalf("body %s does not carry the user's name as sent", r.body)
			}
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
