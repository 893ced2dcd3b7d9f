package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

// wantUserAgent is "<app_name>-Webhooks/1.0" for the app "Acme Shop": the
// space is not a token character, so the worker turns it into '-'.
const wantUserAgent = "Acme-Shop-Webhooks/1.0"

// envelope decodes a delivered body and checks it has exactly the fields of
// interface §6.1.
func envelope(t *testing.T, body []byte) webhook.Envelope {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", body, err)
	}
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"api_version", "app_id", "created_at", "data", "event_type", "id"}; !slices.Equal(keys, want) {
		t.Errorf("envelope fields = %v; want %v", keys, want)
	}
	var env webhook.Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("decode envelope: %v", err)
	}
	if _, err := uuid.Parse(env.ID); err != nil {
		t.Errorf("envelope id %q is not a uuid: %v", env.ID, err)
	}
	var created string
	if err := json.Unmarshal(fields["created_at"], &created); err != nil {
		t.Errorf("created_at %s is not a string: %v", fields["created_at"], err)
	} else if _, err := time.Parse(time.RFC3339Nano, created); err != nil {
		t.Errorf("created_at %q is not an RFC 3339 date-time: %v", created, err)
	}
	if env.APIVersion != "v1" {
		t.Errorf("api_version = %q; want %q", env.APIVersion, "v1")
	}
	return env
}

// roundTrip returns v as it reads after a JSON round trip.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEmitDeliversSignedEnvelope(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{serve: true}, func(t *testing.T, e *env) {
		rc := newReceiver(t, nil)
		ep := e.endpoint(t, e.app.ID, rc.url(), nil)
		u := e.createUser(t, e.app.ID, appuser.CreateInput{Email: "ada@example.com"})
		data := appuser.EventData(u.AppUser, false)

		page := e.waitSettled(t, e.app.ID, ep.ID, 1)
		d := page.Deliveries[0]
		if d.Status != store.DeliveryDelivered || d.Attempts != 1 || d.DeliveredAt == nil {
			t.Errorf("delivery = status %q, %d attempts, delivered_at %v; want delivered, 1 attempt, set", d.Status, d.Attempts, d.DeliveredAt)
		}
		if got := page.Attempts[d.ID]; len(got) != 1 || got[0].ResponseStatus == nil || *got[0].ResponseStatus != http.StatusNoContent {
			t.Errorf("attempts = %+v; want one with response status 204", got)
		}
		reqs := rc.requests()
		if len(reqs) != 1 {
			t.Fatalf("receiver got %d requests; want 1", len(reqs))
		}
		r := reqs[0]
		for name, want := range map[string]string{"Content-Type": "application/json", "User-Agent": wantUserAgent} {
			if got := r.header.Get(name); got != want {
				t.Errorf("header %s = %q; want %q", name, got, want)
			}
		}
		sig := r.header.Get(webhookverify.Header)
		if err := webhookverify.Verify(sig, r.body, time.Now(), 0, ep.Secret); err != nil {
			t.Errorf("Verify(%q) with the secret from Create = %v; want nil", sig, err)
		}
		if err := webhookverify.Verify(sig, r.body, time.Now(), 0, "whsec_wrong"); !errors.Is(err, webhookverify.ErrSignature) {
			t.Errorf("Verify with a wrong secret = %v; want ErrSignature", err)
		}
		// A receiver that re-serialises the JSON no longer matches: the raw bytes were signed.
		var decoded any
		_ = json.Unmarshal(r.body, &decoded)
		reencoded, _ := json.MarshalIndent(decoded, "", " ")
		if err := webhookverify.Verify(sig, reencoded, time.Now(), 0, ep.Secret); err == nil {
			t.Errorf("Verify of the re-serialised body = nil; want an error")
		}

		env := envelope(t, r.body)
		if env.EventType != webhook.UserCreated || env.AppID != e.app.ID || env.ID != d.EventID {
			t.Errorf("envelope = type %q app %q id %q; want %q, %q, %q", env.EventType, env.AppID, env.ID,
				webhook.UserCreated, e.app.ID, d.EventID)
		}
		if got, want := roundTrip(t, env.Data), roundTrip(t, data); !reflect.DeepEqual(got, want) {
			t.Errorf("envelope data = %v; want %v", got, want)
		}
	})
}

// TestEmitInRolledBackTransactionSendsNothing accepts an invitation on a
// replica that cannot sign tokens: appuser.AcceptInvitation emits
// user.updated in signin's transaction, then starting the session fails and
// the transaction rolls back, event and delivery job with it.
func TestEmitInRolledBackTransactionSendsNothing(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{serve: true}, func(t *testing.T, e *env) {
		ctx := context.Background()
		rc := newReceiver(t, nil)
		ep := e.endpoint(t, e.app.ID, rc.url(), func(in *webhook.Input) { in.EventTypes = &[]string{webhook.UserUpdated} })
		// The invitation's user.created is not for this endpoint.
		invited, _, err := e.Users.Invite(ctx, servertest.Operator, e.app, appuser.CreateInput{Email: "ivy@example.com"})
		if err != nil {
			t.Fatalf("Invite: %v", err)
		}
		tok := invitationToken(t, e)

		// Same public URL, hence the same token issuer, as the served system.
		peer := servertest.New(t, e.DB.Kind(), servertest.Options{Peer: e.System, RealClock: true,
			Settings: map[string]string{"GATEHOUSE_BASE_URL": e.Config.BaseURL}})
		sealer, _, err := token.FromMasterKey(peer.MasterKey)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := tenant.KeySource(peer.DB, sealer, time.Now, slog.New(slog.DiscardHandler))(ctx)
		if err != nil {
			t.Fatalf("load keys: %v", err)
		}
		peer.Keyring().Replace(nil, keys.Verify, keys.Published) // verifies the invitation, signs nothing
		client := signin.Client{IP: "203.0.113.7", UserAgent: "test"}
		_, err = peer.SignIn.ConfirmInvite(ctx, e.app, tok, nil, client)
		// The failure must come from signing, after the invitation was
		// accepted (and user.updated emitted), or this test proves nothing.
		if err == nil || errors.Is(err, signin.ErrMagicLinkNotFound) || !strings.Contains(err.Error(), "no signing key") {
			t.Fatalf("ConfirmInvite on a replica without a signing key = %v; want the signing failure after the invitation was accepted", err)
		}

		// The invitation is unspent (the transaction rolled back); accepting
		// it on the system commits a user.updated. Once that is delivered, the
		// queue has had every chance to send the rolled-back one.
		if _, err := e.SignIn.ConfirmInvite(ctx, e.app, tok, nil, client); err != nil {
			t.Fatalf("ConfirmInvite after the rollback = %v; want nil", err)
		}
		page := e.waitSettled(t, e.app.ID, ep.ID, 1)
		if got := page.Deliveries[0].EventType; got != webhook.UserUpdated {
			t.Errorf("only delivery is %q; want %q", got, webhook.UserUpdated)
		}
		reqs := rc.requests()
		if len(reqs) != 1 {
			t.Fatalf("receiver got %d requests; want 1 (the committed event only)", len(reqs))
		}
		env := envelope(t, reqs[0].body)
		user, _ := env.Data.(map[string]any)["user"].(map[string]any)
		if env.EventType != webhook.UserUpdated || user["id"] != invited.ID || user["status"] != store.StatusActive {
			t.Errorf("received %q for user %v (%v); want %q for %s, active", env.EventType, user["id"], user["status"],
				webhook.UserUpdated, invited.ID)
		}
	})
}

// invitationToken reads the token of the invitation last sent to ivy@example.com.
func invitationToken(t *testing.T, e *env) string {
	t.Helper()
	msg, ok := e.Mail.Last("ivy@example.com")
	if !ok {
		t.Fatalf("no invitation sent")
	}
	u, err := url.Parse(msg.Link)
	if err != nil {
		t.Fatalf("invitation link %q: %v", msg.Link, err)
	}
	tok := u.Query().Get("sct_magic")
	if tok == "" {
		t.Fatalf("invitation link %q carries no sct_magic", msg.Link)
	}
	return tok
}

func TestServerErrorIsRetriedWithGrowingGaps(t *testing.T) {
	t.Parallel()
	// Large enough that the queue's 500 ms poll cannot make the first gap
	// longer than the second.
	const base = 500 * time.Millisecond
	forEachEnv(t, envOptions{serve: true, retryBase: base}, func(t *testing.T, e *env) {
		answer := strings.Repeat("upstream exploded; ", 100) // longer than the 1 KiB kept
		rc := newReceiver(t, status(http.StatusInternalServerError, answer))
		ep := e.endpoint(t, e.app.ID, rc.url(), func(in *webhook.Input) { in.RetryLimit = ptr(2) })
		sentinelRc := newReceiver(t, nil)
		sentinel := e.endpoint(t, e.app.ID, sentinelRc.url(), nil)

		e.test(t, e.app.ID, ep.ID)
		page := e.waitSettled(t, e.app.ID, ep.ID, 1)
		d := page.Deliveries[0]
		if d.Status != store.DeliveryFailed || d.NextAttemptAt != nil || d.Attempts != 3 || d.MaxAttempts != 3 {
			t.Errorf("delivery = status %q, next %v, attempts %d of %d; want failed, nil, 3 of 3",
				d.Status, d.NextAttemptAt, d.Attempts, d.MaxAttempts)
		}
		if d.LastError != "endpoint answered 500" {
			t.Errorf("last error = %q; want %q", d.LastError, "endpoint answered 500")
		}
		attempts := page.Attempts[d.ID]
		if len(attempts) != 3 {
			t.Fatalf("%d attempts recorded; want 3", len(attempts))
		}
		for i, a := range attempts {
			if a.Attempt != i+1 || a.ResponseStatus == nil || *a.ResponseStatus != 500 || a.ResponseBody != answer[:1024] ||
				a.Error != "endpoint answered 500" {
				t.Errorf("attempt %d = #%d status %v body %d bytes error %q; want #%d, 500, the first 1024 bytes, %q",
					i, a.Attempt, a.ResponseStatus, len(a.ResponseBody), a.Error, i+1, "endpoint answered 500")
			}
		}

		// Nothing more is sent: a later event for another endpoint is
		// delivered, and the failing endpoint still has had three requests.
		e.test(t, e.app.ID, sentinel.ID)
		e.waitSettled(t, e.app.ID, sentinel.ID, 1)
		reqs := rc.requests()
		if len(reqs) != 3 {
			t.Fatalf("receiver got %d requests; want 3 (retry_limit 2 + 1)", len(reqs))
		}

		first := envelope(t, reqs[0].body)
		for i, r := range reqs {
			if !bytes.Equal(r.body, reqs[0].body) {
				t.Errorf("attempt %d body differs from attempt 1", i+1)
			}
			if env := envelope(t, r.body); env.ID != first.ID || !env.CreatedAt.Equal(first.CreatedAt) {
				t.Errorf("attempt %d envelope id %q created_at %v; want %q, %v", i+1, env.ID, env.CreatedAt, first.ID, first.CreatedAt)
			}
			sig := r.header.Get(webhookverify.Header)
			if err := webhookverify.Verify(sig, r.body, time.Now(), 0, ep.Secret); err != nil {
				t.Errorf("attempt %d: Verify(%q) = %v; want nil", i+1, sig, err)
			}
			// t is the time of this attempt, not of the first one.
			ts, err := strconv.ParseInt(tOf(sig), 10, 64)
			if skew := r.at.Unix() - ts; err != nil || skew < 0 || skew > 1 {
				t.Errorf("attempt %d: t=%s, received at %d; want t within a second before receipt", i+1, tOf(sig), r.at.Unix())
			}
		}
		gap1, gap2 := reqs[1].at.Sub(reqs[0].at), reqs[2].at.Sub(reqs[1].at)
		const slack = 5 * time.Millisecond // clock reads on either side of the database
		for n, gap := range []time.Duration{gap1, gap2} {
			if min := webhook.Backoff(base, d.ID, n+1); gap < min-slack {
				t.Errorf("gap before attempt %d = %v; want at least the backoff %v", n+2, gap, min)
			}
		}
		if gap2 <= gap1 {
			t.Errorf("gaps = %v then %v; want growing", gap1, gap2)
		}

		// Each failed attempt is one WARN line naming the endpoint, the event,
		// the attempt and the status, the last one saying it was final;
		// never the payload, the URL or the signing secret.
		retried := e.Logs.Lines(`"level":"WARN"`, "webhook delivery attempt failed", `"endpoint_id":"`+ep.ID+`"`)
		final := e.Logs.Lines(`"level":"WARN"`, "webhook delivery failed for good", `"endpoint_id":"`+ep.ID+`"`)
		if len(retried) != 2 || len(final) != 1 {
			t.Fatalf("log has %d retry lines and %d final lines for the endpoint; want 2 and 1:\n%s", len(retried), len(final), e.Logs.String())
		}
		for i, line := range append(retried, final...) {
			for _, want := range []string{`"event_id":"` + first.ID + `"`, `"event_type":"webhook.test"`, `"delivery_id":"` + d.ID + `"`,
				fmt.Sprintf(`"attempt":%d`, i+1), `"http_status":500`, `"error":"endpoint answered 500"`, `"app_id":"` + e.app.ID + `"`} {
				if !strings.Contains(line, want) {
					t.Errorf("log line %d %s lacks %s", i+1, line, want)
				}
			}
		}
		for _, secret := range []string{ep.Secret, rc.url(), "upstream exploded", string(reqs[0].body)} {
			if strings.Contains(e.Logs.String(), secret) {
				t.Errorf("log holds %q", secret)
			}
		}
	})
}

func TestFinalAndRecoveredOutcomes(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{serve: true}, func(t *testing.T, e *env) {
		created := func(in *webhook.Input) { in.EventTypes = &[]string{webhook.UserCreated} }

		badRequest := newReceiver(t, status(http.StatusBadRequest, `{"error":"nope"}`))
		epBad := e.endpoint(t, e.app.ID, badRequest.url(), created)

		elsewhere := newReceiver(t, nil)
		redirect := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.url(), http.StatusMovedPermanently)
		})
		epRedirect := e.endpoint(t, e.app.ID, redirect.url(), created)

		flaky := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
			if n == 1 {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		epFlaky := e.endpoint(t, e.app.ID, flaky.url(), created)

		sentinelRc := newReceiver(t, nil)
		sentinel := e.endpoint(t, e.app.ID, sentinelRc.url(), func(in *webhook.Input) { in.EventTypes = &[]string{webhook.WebhookTest} })

		e.createUser(t, e.app.ID, appuser.CreateInput{Email: "ada@example.com"})
		got := map[string]webhook.DeliveryPage{}
		for _, ep := range []webhook.Endpoint{epBad, epRedirect, epFlaky} {
			got[ep.ID] = e.waitSettled(t, e.app.ID, ep.ID, 1)
		}
		e.test(t, e.app.ID, sentinel.ID)
		e.waitSettled(t, e.app.ID, sentinel.ID, 1)

		// Each endpoint has its own delivery of the one event.
		eventID := got[epBad.ID].Deliveries[0].EventID
		tests := []struct {
			name         string
			ep           webhook.Endpoint
			rc           *receiver
			wantStatus   string
			wantAttempts int
			wantCodes    []int
			wantError    string
		}{
			{"400 is final", epBad, badRequest, store.DeliveryFailed, 1, []int{400}, "endpoint answered 400"},
			{"301 is not followed", epRedirect, redirect, store.DeliveryFailed, 1, []int{301}, "redirect"},
			{"200 after 500", epFlaky, flaky, store.DeliveryDelivered, 2, []int{500, 200}, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				page := got[tt.ep.ID]
				d := page.Deliveries[0]
				if d.Status != tt.wantStatus || d.Attempts != tt.wantAttempts || d.EventID != eventID {
					t.Errorf("delivery = %q after %d attempts (event %s); want %q after %d (event %s)",
						d.Status, d.Attempts, d.EventID, tt.wantStatus, tt.wantAttempts, eventID)
				}
				if !strings.Contains(d.LastError, tt.wantError) {
					t.Errorf("last error = %q; want it to contain %q", d.LastError, tt.wantError)
				}
				var codes []int
				for _, a := range page.Attempts[d.ID] {
					if a.ResponseStatus != nil {
						codes = append(codes, *a.ResponseStatus)
					}
				}
				if !slices.Equal(codes, tt.wantCodes) {
					t.Errorf("attempt statuses = %v; want %v", codes, tt.wantCodes)
				}
				if n := tt.rc.count(); n != tt.wantAttempts {
					t.Errorf("receiver got %d requests; want %d", n, tt.wantAttempts)
				}
			})
		}
		if n := elsewhere.count(); n != 0 {
			t.Errorf("redirect target got %d requests; want 0", n)
		}
	})
}

func TestConnectionFailureIsRetried(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{serve: true}, func(t *testing.T, e *env) {
		rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("Hijack: %v", err)
				return
			}
			_ = conn.Close()
		})
		ep := e.endpoint(t, e.app.ID, rc.url(), func(in *webhook.Input) { in.RetryLimit = ptr(1) })
		e.test(t, e.app.ID, ep.ID)

		page := e.waitSettled(t, e.app.ID, ep.ID, 1)
		d := page.Deliveries[0]
		if d.Status != store.DeliveryFailed || d.Attempts != 2 || d.LastError != "connection failed" {
			t.Errorf("delivery = %q after %d attempts, error %q; want failed after 2, %q", d.Status, d.Attempts, d.LastError, "connection failed")
		}
		for _, a := range page.Attempts[d.ID] {
			if a.ResponseStatus != nil || a.Error != "connection failed" {
				t.Errorf("attempt %d = status %v error %q; want no status, %q", a.Attempt, a.ResponseStatus, a.Error, "connection failed")
			}
		}
		if n := rc.count(); n != 2 {
			t.Errorf("receiver got %d requests; want 2", n)
		}
	})
}

func TestTestAndRedeliver(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{serve: true}, func(t *testing.T, e *env) {
		ctx := context.Background()
		p := e.caller(t, e.app.ID)
		rc := newReceiver(t, nil)
		// Not subscribed to webhook.test: Test sends it anyway.
		ep := e.endpoint(t, e.app.ID, rc.url(), func(in *webhook.Input) { in.EventTypes = &[]string{webhook.UserCreated} })

		d, err := e.Webhooks.Test(ctx, p, e.app.ID, ep.ID)
		if err != nil {
			t.Fatalf("Test: %v", err)
		}
		if d.EventType != webhook.WebhookTest || d.EndpointID != ep.ID {
			t.Errorf("Test delivery = %q to %s; want %q to %s", d.EventType, d.EndpointID, webhook.WebhookTest, ep.ID)
		}
		page := e.waitSettled(t, e.app.ID, ep.ID, 1)
		if got := page.Deliveries[0]; got.ID != d.ID || got.Status != store.DeliveryDelivered {
			t.Fatalf("delivery %s is %q; want %s delivered", got.ID, got.Status, d.ID)
		}
		first := rc.requests()[0]
		env := envelope(t, first.body)
		data, _ := env.Data.(map[string]any)
		if env.EventType != webhook.WebhookTest || data["endpoint_id"] != ep.ID {
			t.Errorf("test event = %q with data %v; want %q for endpoint %s", env.EventType, env.Data, webhook.WebhookTest, ep.ID)
		}

		again, err := e.Webhooks.Redeliver(ctx, p, e.app.ID, ep.ID, d.ID)
		if err != nil {
			t.Fatalf("Redeliver: %v", err)
		}
		if again.Status != store.DeliveryPending || again.Attempts != 0 || again.DeliveredAt != nil {
			t.Errorf("redelivered = %q, %d attempts, delivered_at %v; want pending, 0, nil", again.Status, again.Attempts, again.DeliveredAt)
		}
		eventually(t, "the redelivery", func() bool {
			page := e.deliveries(t, e.app.ID, ep.ID)
			return rc.count() == 2 && len(page.Deliveries) == 1 && page.Deliveries[0].Status == store.DeliveryDelivered
		})
		second := rc.requests()[1]
		if !bytes.Equal(second.body, first.body) {
			t.Errorf("redelivered body = %s; want the same envelope %s", second.body, first.body)
		}
		if err := webhookverify.Verify(second.header.Get(webhookverify.Header), second.body, time.Now(), 0, ep.Secret); err != nil {
			t.Errorf("redelivery signature: %v", err)
		}

		// An endpoint belongs to its app: addressed through another app (by
		// someone who may act on both) it is not found.
		other := e.newApp(t, "Other Shop")
		op := servertest.Operator
		for name, err := range map[string]error{
			"Test of an unknown endpoint":      errOf(e.Webhooks.Test(ctx, p, e.app.ID, uuid.NewString())),
			"Test of another app's endpoint":   errOf(e.Webhooks.Test(ctx, op, other.ID, ep.ID)),
			"Redeliver via another app":        errOf(e.Webhooks.Redeliver(ctx, op, other.ID, ep.ID, d.ID)),
			"Redeliver of an unknown delivery": errOf(e.Webhooks.Redeliver(ctx, p, e.app.ID, ep.ID, uuid.NewString())),
		} {
			want := webhook.ErrEndpointNotFound
			if strings.Contains(name, "unknown delivery") {
				want = webhook.ErrDeliveryNotFound
			}
			if !errors.Is(err, want) {
				t.Errorf("%s = %v; want %v", name, err, want)
			}
		}
	})
}

func errOf[T any](_ T, err error) error { return err }

func TestSlowEndpointDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{serve: true}, func(t *testing.T, e *env) {
		release := make(chan struct{})
		blocked := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusNoContent)
		})
		// Registered after the system and the receiver, so it runs first and
		// lets both shut down.
		released := false
		t.Cleanup(func() {
			if !released {
				close(release)
			}
		})
		epA := e.endpoint(t, e.app.ID, blocked.url(), nil)
		appB := e.newApp(t, "Beta Store")
		fast := newReceiver(t, nil)
		epB := e.endpoint(t, appB.ID, fast.url(), nil)

		const queued = 20
		for range queued {
			e.test(t, e.app.ID, epA.ID)
		}
		eventually(t, "endpoint A to be busy", func() bool { return blocked.count() > 0 })

		start := time.Now()
		e.test(t, appB.ID, epB.ID)
		// The queue polls every 500 ms on SQLite: well within the bound.
		eventuallyWithin(t, 2*time.Second, "app B's delivery while A is blocked", func() bool {
			page := e.deliveries(t, appB.ID, epB.ID)
			return len(page.Deliveries) == 1 && page.Deliveries[0].Status == store.DeliveryDelivered
		})
		t.Logf("app B delivered in %v with endpoint A blocked", time.Since(start))
		counts, err := e.DB.CountDeliveriesByStatus(context.Background(), e.app.ID)
		if err != nil {
			t.Fatal(err)
		}
		if counts[store.DeliveryDelivered] != 0 {
			t.Errorf("endpoint A has %d delivered while its receiver is blocked; want 0", counts[store.DeliveryDelivered])
		}

		close(release)
		released = true
		page := e.waitSettled(t, e.app.ID, epA.ID, queued)
		for _, d := range page.Deliveries {
			if d.Status != store.DeliveryDelivered {
				t.Errorf("endpoint A delivery %s = %q (%s); want delivered", d.ID, d.Status, d.LastError)
			}
		}
	})
}

func TestResponseBodyIsStoredSafely(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{serve: true}, func(t *testing.T, e *env) {
		tests := []struct {
			name, answer, want string
		}{
			{"NUL byte", "ok\x00done", "ok\uFFFDdone"},
			{"invalid UTF-8", "ok\xff", ""},
			{"multi-byte rune cut at 1 KiB", strings.Repeat("a", 1023) + "é", strings.Repeat("a", 1023)},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				rc := newReceiver(t, status(http.StatusOK, tt.answer))
				ep := e.endpoint(t, e.app.ID, rc.url(), nil)
				e.test(t, e.app.ID, ep.ID)
				page := e.waitSettled(t, e.app.ID, ep.ID, 1)
				d := page.Deliveries[0]
				if d.Status != store.DeliveryDelivered || d.Attempts != 1 {
					t.Errorf("delivery = %q after %d attempts (%s); want delivered after 1", d.Status, d.Attempts, d.LastError)
				}
				if a := page.Attempts[d.ID]; len(a) != 1 || a[0].ResponseBody != tt.want {
					t.Errorf("attempts = %+v; want one with response body %q", a, tt.want)
				}
			})
		}
	})
}

func TestRedeliverKeepsAttemptHistoryInOrder(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{serve: true}, func(t *testing.T, e *env) {
		ctx := context.Background()
		rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
			if n == 1 {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		ep := e.endpoint(t, e.app.ID, rc.url(), nil)
		e.test(t, e.app.ID, ep.ID)
		d := e.waitSettled(t, e.app.ID, ep.ID, 1).Deliveries[0]
		if _, err := e.Webhooks.Redeliver(ctx, e.caller(t, e.app.ID), e.app.ID, ep.ID, d.ID); err != nil {
			t.Fatalf("Redeliver: %v", err)
		}
		eventually(t, "the redelivery", func() bool { return rc.count() == 3 })
		page := e.waitSettled(t, e.app.ID, ep.ID, 1)
		var got []string
		for i, a := range page.Attempts[d.ID] {
			got = append(got, fmt.Sprintf("#%d:%d", a.Attempt, *a.ResponseStatus))
			if i > 0 && a.StartedAt.Before(page.Attempts[d.ID][i-1].StartedAt) {
				t.Errorf("attempt %d started before the one listed before it", i)
			}
		}
		if want := []string{"#1:502", "#2:200", "#1:200"}; !slices.Equal(got, want) {
			t.Errorf("attempts = %v; want %v (oldest first)", got, want)
		}
	})
}

// TestSlowTenantDoesNotStallOtherApps reproduces issue 8 finding 5 (R-WH-7,
// check 68): app X has ten endpoints whose receiver holds every request until
// the test releases it, and X's events are queued before app Y's. Y's
// deliveries must all arrive while every request to X is still held: none of
// X's attempts may have ended (timed out) first, which is how Y got through
// before, after X's attempts ran out their 10 s.
func TestSlowTenantDoesNotStallOtherApps(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{serve: true}, func(t *testing.T, e *env) {
		release := make(chan struct{})
		var ended atomic.Int32 // X's requests that ended before the release
		held := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
				ended.Add(1)
			}
			w.WriteHeader(http.StatusNoContent)
		})
		released := false
		t.Cleanup(func() {
			if !released {
				close(release)
			}
		})
		const slowEndpoints, slowEvents = 10, 5
		for i := range slowEndpoints {
			e.endpoint(t, e.app.ID, fmt.Sprintf("%s/%d", held.url(), i), nil)
		}
		appY := e.newApp(t, "Beta Store")
		fast := newReceiver(t, nil)
		epsY := []webhook.Endpoint{e.endpoint(t, appY.ID, fast.url()+"/1", nil), e.endpoint(t, appY.ID, fast.url()+"/2", nil)}

		for i := range slowEvents {
			e.createUser(t, e.app.ID, appuser.CreateInput{Email: fmt.Sprintf("x%d@example.com", i)})
		}
		// X holds as many attempts as it may (its share of the workers).
		share := max(1, e.Config.Webhooks.Workers/4)
		eventually(t, "app X's attempts to be held", func() bool { return held.count() >= share })

		const fastEvents = 5
		for i := range fastEvents {
			e.createUser(t, appY.ID, appuser.CreateInput{Email: fmt.Sprintf("y%d@example.com", i)})
		}
		want := fastEvents * len(epsY)
		eventually(t, "app Y's deliveries", func() bool {
			if n := ended.Load(); n > 0 {
				t.Fatalf("%d of app X's attempts ended before app Y's %d deliveries arrived (%d did): Y waited for X's timeouts",
					n, want, fast.count())
			}
			return fast.count() >= want
		})
		if n := held.count(); n > share {
			t.Errorf("app X has %d attempts in flight; want at most its share %d", n, share)
		}
		counts, err := e.DB.CountDeliveriesByStatus(context.Background(), e.app.ID)
		if err != nil {
			t.Fatal(err)
		}
		if counts[store.DeliveryDelivered] != 0 {
			t.Errorf("app X has %d delivered while its receiver holds every request; want 0", counts[store.DeliveryDelivered])
		}

		// Released, every delivery of X arrives once: waiting for a share
		// spent no attempt and sent nothing twice.
		close(release)
		released = true
		for _, ep := range mustList(t, e, e.app.ID) {
			page := e.waitSettled(t, e.app.ID, ep.ID, slowEvents)
			for _, d := range page.Deliveries {
				if d.Status != store.DeliveryDelivered || d.Attempts != 1 {
					t.Errorf("app X delivery %s = %q after %d attempts (%s); want delivered after 1", d.ID, d.Status, d.Attempts, d.LastError)
				}
			}
		}
		if n := held.count(); n != slowEndpoints*slowEvents {
			t.Errorf("app X's receiver got %d requests; want %d", n, slowEndpoints*slowEvents)
		}
		for _, ep := range epsY {
			for _, d := range e.waitSettled(t, appY.ID, ep.ID, fastEvents).Deliveries {
				if d.Status != store.DeliveryDelivered {
					t.Errorf("app Y delivery %s = %q; want delivered", d.ID, d.Status)
				}
			}
		}
	})
}

// mustList lists an app's endpoints.
func mustList(t *testing.T, e *env, appID string) []webhook.Endpoint {
	t.Helper()
	eps, err := e.Webhooks.List(context.Background(), e.caller(t, appID), appID)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return eps
}
