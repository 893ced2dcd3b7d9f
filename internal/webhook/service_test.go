package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{}, func(t *testing.T, e *env) {
		ctx := context.Background()
		// The same system with the production policy: https and public targets only.
		prod := newEnvOn(t, e.DB.Kind(), envOptions{settings: map[string]string{"GATEHOUSE_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "false"}})
		url := "http://127.0.0.1:9/hooks"
		tests := []struct {
			name       string
			production bool
			in         webhook.Input
			wantField  string // "" => accepted
			wantReason string // part of the reason
			wantUnsafe bool   // the error is also ErrUnsafeURL
			check      func(t *testing.T, ep webhook.Endpoint)
		}{
			{name: "defaults", in: webhook.Input{URL: &url}, check: func(t *testing.T, ep webhook.Endpoint) {
				if ep.RetryLimit != webhook.DefaultRetryLimit || !ep.Enabled || len(ep.EventTypes) != 0 || string(ep.Metadata) != "{}" {
					t.Errorf("defaults = retry %d enabled %v types %v metadata %s; want 3, true, none, {}",
						ep.RetryLimit, ep.Enabled, ep.EventTypes, ep.Metadata)
				}
			}},
			{name: "missing url", in: webhook.Input{}, wantField: "url", wantReason: "is required"},
			{name: "https required in production", production: true, in: webhook.Input{URL: ptr("http://example.com/hooks")},
				wantField: "url", wantReason: "must use https", wantUnsafe: true},
			{name: "loopback refused in production", production: true, in: webhook.Input{URL: ptr("https://127.0.0.1/hooks")},
				wantField: "url", wantReason: "refused: non-public address", wantUnsafe: true},
			{name: "not http at all", in: webhook.Input{URL: ptr("ftp://127.0.0.1/")}, wantField: "url", wantReason: "must use https", wantUnsafe: true},
			{name: "credentials in url", in: webhook.Input{URL: ptr("http://u:p@127.0.0.1:9/hooks")}, wantField: "url",
				wantReason: "must not contain credentials", wantUnsafe: true},
			{name: "unknown event type", in: webhook.Input{URL: &url, EventTypes: &[]string{"user.created", "user.deleted"}},
				wantField: "event_types", wantReason: `contains an unknown event type "user.deleted"`},
			{name: "pattern without dot", in: webhook.Input{URL: &url, EventTypes: &[]string{"verification*"}},
				wantField: "event_types", wantReason: "unknown event type"},
			{name: "pattern matching nothing", in: webhook.Input{URL: &url, EventTypes: &[]string{"billing.*"}},
				wantField: "event_types", wantReason: "unknown event type"},
			{name: "known types and patterns", in: webhook.Input{URL: &url, EventTypes: &[]string{"user.created", "verification.*", "*"}},
				check: func(t *testing.T, ep webhook.Endpoint) {
					if got := strings.Join(ep.EventTypes, ","); got != "user.created,verification.*,*" {
						t.Errorf("event types = %q; want %q", got, "user.created,verification.*,*")
					}
				}},
			{name: "retry_limit -1", in: webhook.Input{URL: &url, RetryLimit: ptr(-1)}, wantField: "retry_limit", wantReason: "must be between 0 and 10"},
			{name: "retry_limit 11", in: webhook.Input{URL: &url, RetryLimit: ptr(11)}, wantField: "retry_limit", wantReason: "must be between 0 and 10"},
			{name: "retry_limit 0", in: webhook.Input{URL: &url, RetryLimit: ptr(0)}, check: retryLimit(0)},
			{name: "retry_limit 10", in: webhook.Input{URL: &url, RetryLimit: ptr(10)}, check: retryLimit(10)},
			{name: "description 256", in: webhook.Input{URL: &url, Description: ptr(strings.Repeat("d", 256))}},
			{name: "description 257", in: webhook.Input{URL: &url, Description: ptr(strings.Repeat("d", 257))},
				wantField: "description", wantReason: "at most 256 characters"},
			{name: "description 256 non-ASCII characters", in: webhook.Input{URL: &url, Description: ptr(strings.Repeat("é", 256))}},
			{name: "description 257 non-ASCII characters", in: webhook.Input{URL: &url, Description: ptr(strings.Repeat("é", 257))},
				wantField: "description", wantReason: "at most 256 characters"},
			{name: "description with NUL", in: webhook.Input{URL: &url, Description: ptr("a\x00b")}, wantField: "description", wantReason: "without NUL"},
			{name: "description not UTF-8", in: webhook.Input{URL: &url, Description: ptr("a\xffb")}, wantField: "description", wantReason: "UTF-8"},
			{name: "metadata value with NUL", in: webhook.Input{URL: &url, Metadata: map[string]any{"k": []any{"a\x00b"}}},
				wantField: "metadata", wantReason: "must not contain NUL"},
			{name: "metadata key with NUL", in: webhook.Input{URL: &url, Metadata: map[string]any{"k": map[string]any{"a\x00": 1}}},
				wantField: "metadata", wantReason: "must not contain NUL"},
			{name: "metadata with an escaped backslash-u", in: webhook.Input{URL: &url, Metadata: map[string]any{"k": `\u0000`}}},
			{name: "metadata 4 KiB", in: webhook.Input{URL: &url, Metadata: map[string]any{"k": strings.Repeat("m", 4096-8)}}},
			{name: "metadata over 4 KiB", in: webhook.Input{URL: &url, Metadata: map[string]any{"k": strings.Repeat("m", 4096)}},
				wantField: "metadata", wantReason: "at most 4 KiB"},
			{name: "disabled", in: webhook.Input{URL: &url, Enabled: ptr(false)}, check: func(t *testing.T, ep webhook.Endpoint) {
				if ep.Enabled {
					t.Errorf("enabled = true; want false")
				}
			}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				sys := e
				if tt.production {
					sys = prod
				}
				p := sys.caller(t, sys.app.ID)
				list, err := sys.Webhooks.List(ctx, p, sys.app.ID)
				if err != nil {
					t.Fatal(err)
				}
				before := len(list)
				ep, err := sys.Webhooks.Create(ctx, p, sys.app.ID, tt.in)
				if tt.wantField != "" {
					checkInvalid(t, "Create", "create webhook: ", err, tt.wantField, tt.wantReason)
					if got := errors.Is(err, webhook.ErrUnsafeURL); got != tt.wantUnsafe {
						t.Errorf("errors.Is(%v, ErrUnsafeURL) = %v; want %v", err, got, tt.wantUnsafe)
					}
					if list, err := sys.Webhooks.List(ctx, p, sys.app.ID); err != nil || len(list) != before {
						t.Errorf("after a refused Create, List = %d endpoints, %v; want %d", len(list), err, before)
					}
					return
				}
				if err != nil {
					t.Fatalf("Create = %v; want nil", err)
				}
				if !strings.HasPrefix(ep.Secret, "whsec_") || len(ep.Secret) < 6+40 {
					t.Errorf("Create secret = %q; want whsec_ and 32 random bytes", ep.Secret)
				}
				if tt.check != nil {
					stored, err := sys.Webhooks.Get(ctx, p, sys.app.ID, ep.ID)
					if err != nil {
						t.Fatalf("Get: %v", err)
					}
					tt.check(t, ep)
					tt.check(t, stored)
				}
			})
		}
		// Update validates the same way and leaves the endpoint unchanged on error.
		ep := e.endpoint(t, e.app.ID, url, nil)
		p := e.caller(t, e.app.ID)
		_, err := e.Webhooks.Update(ctx, p, e.app.ID, ep.ID, webhook.Input{RetryLimit: ptr(11)})
		checkInvalid(t, "Update(retry_limit 11)", "update webhook: ", err, "retry_limit", "must be between 0 and 10")
		_, err = e.Webhooks.Update(ctx, p, e.app.ID, ep.ID, webhook.Input{URL: ptr("ftp://127.0.0.1/")})
		checkInvalid(t, "Update(ftp url)", "update webhook: ", err, "url", "must use https")
		if got, _ := e.Webhooks.Get(ctx, p, e.app.ID, ep.ID); got.RetryLimit != webhook.DefaultRetryLimit || got.URL != url {
			t.Errorf("after refused updates: retry limit %d, url %q; want %d, %q", got.RetryLimit, got.URL, webhook.DefaultRetryLimit, url)
		}
	})
}

// checkInvalid checks that err is an *errs.Invalid on field whose reason
// contains reason and does not repeat the field, wrapped with the operation.
func checkInvalid(t *testing.T, call, op string, err error, field, reason string) {
	t.Helper()
	inv, ok := asInvalid(err)
	if !ok || inv.Field != field {
		t.Errorf("%s = %v (%T); want *errs.Invalid on %q", call, err, err, field)
		return
	}
	if !strings.Contains(inv.Reason, reason) {
		t.Errorf("%s reason = %q; want it to contain %q", call, inv.Reason, reason)
	}
	if strings.HasPrefix(inv.Reason, field) || strings.Contains(err.Error(), field+" "+field) {
		t.Errorf("%s = %q (reason %q); want a reason that does not repeat %q", call, err, inv.Reason, field)
	}
	if !strings.HasPrefix(err.Error(), op) || !strings.HasSuffix(err.Error(), field+" "+inv.Reason) {
		t.Errorf("%s = %q; want %q... ending %q", call, err, op, field+" "+inv.Reason)
	}
}

func retryLimit(want int) func(*testing.T, webhook.Endpoint) {
	return func(t *testing.T, ep webhook.Endpoint) {
		if ep.RetryLimit != want {
			t.Errorf("retry limit = %d; want %d", ep.RetryLimit, want)
		}
	}
}

// smsDown makes every SMS fail, as a provider outage would; e-mail goes to the recorder.
type smsDown struct{ courier.Provider }

func (s smsDown) Send(ctx context.Context, m courier.Message) (string, error) {
	if m.Channel == courier.ChannelSMS {
		return "", fmt.Errorf("%w: test: the SMS provider is down", courier.ErrDelivery)
	}
	return s.Provider.Send(ctx, m)
}

func TestEventTypeFilter(t *testing.T) {
	t.Parallel()
	opts := envOptions{serve: true, courier: func(p courier.Provider) courier.Provider { return smsDown{p} }}
	forEachEnv(t, opts, func(t *testing.T, e *env) {
		ctx := context.Background()
		type sub struct {
			name  string
			types []string
			off   bool
			rc    *receiver
			ep    webhook.Endpoint
			want  []string // event types it gets
		}
		emailRequested := webhook.Verification("email", webhook.OutcomeRequested)
		smsRequested := webhook.Verification("sms", webhook.OutcomeRequested)
		smsFailed := webhook.Verification("sms", webhook.OutcomeDeliveryFailed)
		all := []string{webhook.UserCreated, webhook.UserUpdated, emailRequested, smsRequested, smsFailed,
			webhook.ChallengeCreated, webhook.ChallengeCreated}
		subs := []*sub{
			{name: "user.created only", types: []string{webhook.UserCreated}, want: []string{webhook.UserCreated}},
			{name: "verification.*", types: []string{"verification.*"}, want: []string{emailRequested, smsRequested, smsFailed}},
			{name: "verification.email.*", types: []string{"verification.email.*"}, want: []string{emailRequested}},
			{name: "one verification type", types: []string{smsFailed}, want: []string{smsFailed}},
			{name: "all (omitted)", want: all},
			{name: "all (*)", types: []string{"*"}, want: all},
			{name: "disabled", off: true},
		}
		for _, s := range subs {
			s.rc = newReceiver(t, nil)
			s.ep = e.endpoint(t, e.app.ID, s.rc.url(), func(in *webhook.Input) {
				if s.types != nil {
					in.EventTypes = &s.types
				}
				in.Enabled = ptr(!s.off)
			})
		}
		// Each event from the service that emits it in production.
		u := e.createUser(t, e.app.ID, appuser.CreateInput{Email: "ada@example.com", Phone: "+14155552671"})
		e.touchUser(t, e.app.ID, u.ID)
		client := signin.Client{IP: "203.0.113.7", UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) Gecko/20100101 Firefox/126.0"}
		if r, err := e.SignIn.SendOTP(ctx, e.app, "ada@example.com", nil, client); err != nil || !r.Sent {
			t.Fatalf("SendOTP(e-mail) = sent %v, %v; want sent", r.Sent, err)
		}
		if r, err := e.SignIn.SendOTP(ctx, e.app, "+14155552671", nil, client); err != nil || !r.Sent {
			t.Fatalf("SendOTP(SMS) = sent %v, %v; want accepted for delivery (the SMS provider, down, is called afterwards)", r.Sent, err)
		}
		e.Mail.Settle() // the send queue gives up on the SMS: delivery_failed
		for _, s := range subs {
			t.Run(s.name, func(t *testing.T) {
				// Fan-out happens in the emitting transaction: the rows are there now.
				page := e.waitSettled(t, e.app.ID, s.ep.ID, len(s.want))
				var got []string
				for _, d := range page.Deliveries {
					got = append(got, d.EventType)
				}
				if !sameSet(got, s.want) {
					t.Errorf("deliveries = %v; want %v", got, s.want)
				}
				var received []string
				for _, r := range s.rc.requests() {
					received = append(received, envelope(t, r.body).EventType)
				}
				if !sameSet(received, s.want) {
					t.Errorf("received = %v; want %v", received, s.want)
				}
			})
		}
	})
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestRotateSecret runs the served system on its fake clock, so that the
// test can step past the overlap; no delivery here needs a retry.
func TestRotateSecret(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{serve: true, fakeClock: true}, func(t *testing.T, e *env) {
		ctx := context.Background()
		p := e.caller(t, e.app.ID)
		rc := newReceiver(t, nil)
		ep := e.endpoint(t, e.app.ID, rc.url(), nil)
		oldSecret := ep.Secret

		rotated, err := e.Webhooks.RotateSecret(ctx, p, e.app.ID, ep.ID)
		if err != nil {
			t.Fatalf("RotateSecret: %v", err)
		}
		newSecret := rotated.Secret
		if newSecret == "" || newSecret == oldSecret || !strings.HasPrefix(newSecret, "whsec_") {
			t.Fatalf("rotated secret = %q (old %q); want a new whsec_ secret", newSecret, oldSecret)
		}
		// The rotation is logged once, without either secret.
		if lines := e.Logs.Lines(`"level":"INFO"`, "webhook signing secret rotated", `"endpoint_id":"`+ep.ID+`"`, `"app_id":"`+e.app.ID+`"`); len(lines) != 1 {
			t.Errorf("rotation log lines = %v; want one:\n%s", lines, e.Logs.String())
		}
		if logs := e.Logs.String(); strings.Contains(logs, newSecret) || strings.Contains(logs, oldSecret) {
			t.Errorf("log holds a signing secret:\n%s", logs)
		}
		other := e.newApp(t, "Other")
		if _, err := e.Webhooks.RotateSecret(ctx, servertest.Operator, other.ID, ep.ID); !errors.Is(err, webhook.ErrEndpointNotFound) {
			t.Errorf("RotateSecret via another app = %v; want ErrEndpointNotFound", err)
		}

		// List and Get never show a secret, and what is stored is sealed.
		got, err := e.Webhooks.Get(ctx, p, e.app.ID, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		list, err := e.Webhooks.List(ctx, p, e.app.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 {
			t.Fatalf("List = %d endpoints; want 1", len(list))
		}
		for name, shown := range map[string]webhook.Endpoint{"Get": got, "List": list[0]} {
			if shown.Secret != "" {
				t.Errorf("%s shows secret %q; want none", name, shown.Secret)
			}
			for _, s := range []string{oldSecret, newSecret} {
				if bytes.Contains(shown.SecretSealed, []byte(s)) || bytes.Contains(shown.PreviousSecretSealed, []byte(s)) {
					t.Errorf("%s: a secret is stored in clear", name)
				}
			}
		}

		e.test(t, e.app.ID, ep.ID)
		e.waitSettled(t, e.app.ID, ep.ID, 1)
		now := e.Clock.Now()
		r := rc.requests()[0]
		sig := r.header.Get(webhookverify.Header)
		if got, want := tOf(sig), strconv.FormatInt(now.Unix(), 10); got != want {
			t.Errorf("t = %s; want %s (the system clock)", got, want)
		}
		sigs := v1s(sig)
		if len(sigs) != 2 {
			t.Fatalf("header %q has %d v1 values during the overlap; want 2", sig, len(sigs))
		}
		for i, want := range []string{newSecret, oldSecret} {
			one := "t=" + tOf(sig) + ",v1=" + sigs[i]
			if err := webhookverify.Verify(one, r.body, now, 0, want); err != nil {
				t.Errorf("v1 #%d does not verify with the %s secret: %v", i+1, []string{"new", "old"}[i], err)
			}
			if err := webhookverify.Verify(one, r.body, now, 0, []string{oldSecret, newSecret}[i]); err == nil {
				t.Errorf("v1 #%d also verifies with the other secret", i+1)
			}
		}
		for _, s := range []string{oldSecret, newSecret} {
			if err := webhookverify.Verify(sig, r.body, now, 0, s); err != nil {
				t.Errorf("full header does not verify with one secret: %v", err)
			}
		}

		// After the overlap only the new secret signs.
		e.Clock.Advance(webhook.RotationOverlap + time.Minute)
		e.test(t, e.app.ID, ep.ID)
		e.waitSettled(t, e.app.ID, ep.ID, 2)
		later := e.Clock.Now()
		r = rc.requests()[1]
		sig = r.header.Get(webhookverify.Header)
		if n := len(v1s(sig)); n != 1 {
			t.Errorf("header %q has %d v1 values after the overlap; want 1", sig, n)
		}
		if err := webhookverify.Verify(sig, r.body, later, 0, newSecret); err != nil {
			t.Errorf("after the overlap: Verify with the new secret = %v; want nil", err)
		}
		if err := webhookverify.Verify(sig, r.body, later, 0, oldSecret); err == nil {
			t.Errorf("after the overlap: Verify with the old secret = nil; want an error")
		}
	})
}

// TestServiceAccess checks that every Service method decides on the caller:
// an app's secret or API key manages its own endpoints only, a workspace
// member reads them, an admin or owner manages them, with the role read when
// the call is made.
func TestServiceAccess(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{}, func(t *testing.T, e *env) {
		ctx := context.Background()
		op := servertest.Operator
		appID := e.app.ID
		rc := newReceiver(t, nil)
		worker := e.newWorker(t, 20*time.Millisecond, nil)
		deliver := func(t *testing.T, d webhook.Delivery) {
			t.Helper()
			if err := worker.Work(ctx, job(d.ID, 1, d.MaxAttempts)); err != nil {
				t.Fatalf("Work(%s) = %v; want delivered", d.ID, err)
			}
		}
		apiKey := func(appID string) access.Principal {
			tok, _, err := e.Tenants.CreateAPIKey(ctx, op, appID, "tests")
			if err != nil {
				t.Fatalf("CreateAPIKey: %v", err)
			}
			return e.Principal(t, tok)
		}
		member := func(workspaceID, email, role string) (string, access.Principal) {
			m, err := e.Tenants.AddMember(ctx, op, workspaceID, email, "Mia", role)
			if err != nil {
				t.Fatalf("AddMember(%s, %s): %v", email, role, err)
			}
			return m.ID, e.Principal(t, e.WorkspaceSecret(t, workspaceID, m.ID))
		}
		otherApp := e.newApp(t, "Beta Store")
		otherWS, _ := e.Workspace(t, "Gamma")
		adminID, admin := member(e.ws.ID, "adam@acme.example", access.RoleAdmin)
		_, reader := member(e.ws.ID, "mel@acme.example", access.RoleMember)
		_, strangerAdmin := member(otherWS.ID, "gina@gamma.example", access.RoleAdmin)

		// The endpoint and the delivered delivery every refused call aims at.
		fixture, err := e.Webhooks.Create(ctx, op, appID, webhook.Input{URL: ptr(rc.url()), Description: ptr("fixture")})
		if err != nil {
			t.Fatal(err)
		}
		fd, err := e.Webhooks.Test(ctx, op, appID, fixture.ID)
		if err != nil {
			t.Fatal(err)
		}
		deliver(t, fd)

		methods := []struct {
			name  string
			write bool
			call  func(p access.Principal) error
		}{
			{"Create", true, func(p access.Principal) error {
				return errOf(e.Webhooks.Create(ctx, p, appID, webhook.Input{URL: ptr(rc.url())}))
			}},
			{"Create with invalid input", true, func(p access.Principal) error {
				// Access is decided first: a caller who may not learns nothing from validation.
				return errOf(e.Webhooks.Create(ctx, p, appID, webhook.Input{URL: ptr("ftp://127.0.0.1/")}))
			}},
			{"List", false, func(p access.Principal) error { return errOf(e.Webhooks.List(ctx, p, appID)) }},
			{"Get", false, func(p access.Principal) error { return errOf(e.Webhooks.Get(ctx, p, appID, fixture.ID)) }},
			{"Update", true, func(p access.Principal) error {
				return errOf(e.Webhooks.Update(ctx, p, appID, fixture.ID, webhook.Input{Description: ptr("changed")}))
			}},
			{"Update with invalid input", true, func(p access.Principal) error {
				return errOf(e.Webhooks.Update(ctx, p, appID, fixture.ID, webhook.Input{URL: ptr("ftp://127.0.0.1/")}))
			}},
			{"Delete", true, func(p access.Principal) error { return e.Webhooks.Delete(ctx, p, appID, fixture.ID) }},
			{"RotateSecret", true, func(p access.Principal) error { return errOf(e.Webhooks.RotateSecret(ctx, p, appID, fixture.ID)) }},
			{"Test", true, func(p access.Principal) error { return errOf(e.Webhooks.Test(ctx, p, appID, fixture.ID)) }},
			{"Deliveries", false, func(p access.Principal) error {
				return errOf(e.Webhooks.Deliveries(ctx, p, appID, fixture.ID, 1, 25))
			}},
			{"Redeliver", true, func(p access.Principal) error {
				return errOf(e.Webhooks.Redeliver(ctx, p, appID, fixture.ID, fd.ID))
			}},
			{"EventTypes", false, func(p access.Principal) error { return errOf(e.Webhooks.EventTypes(ctx, p, appID)) }},
		}

		refused := map[string]access.Principal{
			"another app's secret":          e.caller(t, otherApp.ID),
			"another app's API key":         apiKey(otherApp.ID),
			"an admin of another workspace": strangerAdmin,
		}
		for name, p := range refused {
			for _, m := range methods {
				if err := m.call(p); !errors.Is(err, access.ErrForbidden) {
					t.Errorf("%s as %s = %v; want access.ErrForbidden", m.name, name, err)
				}
			}
		}
		for _, m := range methods {
			err := m.call(reader)
			if m.write && !errors.Is(err, access.ErrForbidden) {
				t.Errorf("%s as a member = %v; want access.ErrForbidden", m.name, err)
			}
			if !m.write && err != nil {
				t.Errorf("%s as a member = %v; want nil", m.name, err)
			}
		}
		// Nothing the refused calls aimed at has changed.
		got, err := e.Webhooks.Get(ctx, op, appID, fixture.ID)
		if err != nil {
			t.Fatalf("Get of the fixture after refused calls: %v", err)
		}
		if got.Description != "fixture" || !bytes.Equal(got.SecretSealed, fixture.SecretSealed) || got.PreviousSecretSealed != nil {
			t.Errorf("fixture after refused calls = description %q, secret changed %v, previous %v; want unchanged",
				got.Description, !bytes.Equal(got.SecretSealed, fixture.SecretSealed), got.PreviousSecretSealed != nil)
		}
		if list, err := e.Webhooks.List(ctx, op, appID); err != nil || len(list) != 1 {
			t.Errorf("List after refused calls = %d endpoints, %v; want the fixture only", len(list), err)
		}
		page, err := e.Webhooks.Deliveries(ctx, op, appID, fixture.ID, 1, 25)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Deliveries) != 1 || page.Deliveries[0].Status != store.DeliveryDelivered || page.Deliveries[0].Attempts != 1 {
			t.Errorf("fixture deliveries after refused calls = %d, first %+v; want the one delivered delivery", len(page.Deliveries), page.Deliveries)
		}

		// Whoever may manage the app's endpoints goes through their whole life.
		allowed := map[string]access.Principal{
			"the app's secret":  e.caller(t, appID),
			"the app's API key": apiKey(appID),
			"the owner":         e.Principal(t, e.WorkspaceSecret(t, e.ws.ID, e.owner.ID)),
			"an admin":          admin,
			"the operator":      op,
		}
		for name, p := range allowed {
			t.Run(name, func(t *testing.T) {
				ep, err := e.Webhooks.Create(ctx, p, appID, webhook.Input{URL: ptr(rc.url())})
				if err != nil {
					t.Fatalf("Create: %v", err)
				}
				if list, err := e.Webhooks.List(ctx, p, appID); err != nil || !slices.ContainsFunc(list, func(l webhook.Endpoint) bool { return l.ID == ep.ID }) {
					t.Errorf("List = %d endpoints, %v; want one of them %s", len(list), err, ep.ID)
				}
				if got, err := e.Webhooks.Get(ctx, p, appID, ep.ID); err != nil || got.ID != ep.ID {
					t.Errorf("Get = %s, %v; want %s", got.ID, err, ep.ID)
				}
				if got, err := e.Webhooks.Update(ctx, p, appID, ep.ID, webhook.Input{Description: ptr(name)}); err != nil || got.Description != name {
					t.Errorf("Update = description %q, %v; want %q", got.Description, err, name)
				}
				if got, err := e.Webhooks.RotateSecret(ctx, p, appID, ep.ID); err != nil || got.Secret == "" || got.Secret == ep.Secret {
					t.Errorf("RotateSecret = secret %q, %v; want a new one", got.Secret, err)
				}
				d, err := e.Webhooks.Test(ctx, p, appID, ep.ID)
				if err != nil {
					t.Fatalf("Test: %v", err)
				}
				deliver(t, d)
				if page, err := e.Webhooks.Deliveries(ctx, p, appID, ep.ID, 1, 25); err != nil || len(page.Deliveries) != 1 ||
					page.Deliveries[0].Status != store.DeliveryDelivered {
					t.Errorf("Deliveries = %+v, %v; want the delivered test", page.Deliveries, err)
				}
				if got, err := e.Webhooks.Redeliver(ctx, p, appID, ep.ID, d.ID); err != nil || got.Status != store.DeliveryPending {
					t.Errorf("Redeliver = %q, %v; want pending", got.Status, err)
				}
				if types, err := e.Webhooks.EventTypes(ctx, p, appID); err != nil || !slices.Equal(types, webhook.EventTypes()) {
					t.Errorf("EventTypes = %v, %v; want %v", types, err, webhook.EventTypes())
				}
				if err := e.Webhooks.Delete(ctx, p, appID, ep.ID); err != nil {
					t.Errorf("Delete: %v", err)
				}
				if _, err := e.Webhooks.Get(ctx, op, appID, ep.ID); !errors.Is(err, webhook.ErrEndpointNotFound) {
					t.Errorf("Get after Delete = %v; want ErrEndpointNotFound", err)
				}
			})
		}

		// The role is read when the call is made: a demoted admin's secret
		// still reads, and changes nothing.
		if _, err := e.Tenants.ChangeMemberRole(ctx, op, e.ws.ID, adminID, access.RoleMember); err != nil {
			t.Fatalf("ChangeMemberRole: %v", err)
		}
		if _, err := e.Webhooks.Update(ctx, admin, appID, fixture.ID, webhook.Input{Description: ptr("demoted")}); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("Update by a demoted admin = %v; want access.ErrForbidden", err)
		}
		if _, err := e.Webhooks.Get(ctx, admin, appID, fixture.ID); err != nil {
			t.Errorf("Get by a demoted admin = %v; want nil", err)
		}
	})
}

// TestEndpointLimit: an app has at most webhooks.max_endpoints_per_app
// endpoints, also when creates race (issue 8 finding 5: one tenant's fan-out
// is bounded); other apps are not affected and a deleted endpoint frees room.
func TestEndpointLimit(t *testing.T) {
	t.Parallel()
	const limit = 3
	o := envOptions{settings: map[string]string{"GATEHOUSE_WEBHOOKS_MAX_ENDPOINTS_PER_APP": strconv.Itoa(limit)}}
	forEachEnv(t, o, func(t *testing.T, e *env) {
		ctx := context.Background()
		url := "http://127.0.0.1:9/hooks"
		create := func(appID string) (webhook.Endpoint, error) {
			return e.Webhooks.Create(ctx, e.caller(t, appID), appID, webhook.Input{URL: &url})
		}

		// Twice the limit at once: exactly the limit is created.
		const tries = 2 * limit
		errc := make(chan error, tries)
		for range tries {
			go func() { _, err := create(e.app.ID); errc <- err }()
		}
		created := 0
		for range tries {
			switch err := <-errc; {
			case err == nil:
				created++
			case !errors.Is(err, webhook.ErrTooManyEndpoints):
				t.Errorf("Create beyond the limit = %v; want ErrTooManyEndpoints", err)
			}
		}
		eps := mustList(t, e, e.app.ID)
		if created != limit || len(eps) != limit {
			t.Fatalf("%d creates succeeded, %d endpoints listed; want %d", created, len(eps), limit)
		}

		other := e.newApp(t, "Beta Store")
		if _, err := create(other.ID); err != nil {
			t.Errorf("Create for another app = %v; want nil", err)
		}
		if err := e.Webhooks.Delete(ctx, e.caller(t, e.app.ID), e.app.ID, eps[0].ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := create(e.app.ID); err != nil {
			t.Errorf("Create after a delete = %v; want nil", err)
		}
		if _, err := create(e.app.ID); !errors.Is(err, webhook.ErrTooManyEndpoints) {
			t.Errorf("Create at the limit again = %v; want ErrTooManyEndpoints", err)
		}
	})
}
