package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

func TestCreateValidation(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, envOptions{insertOnly: true})
		url := "http://127.0.0.1:9/hooks"
		tests := []struct {
			name      string
			in        webhook.Input
			wantField string // "" => accepted
			check     func(t *testing.T, ep webhook.Endpoint)
		}{
			{name: "defaults", in: webhook.Input{URL: &url}, check: func(t *testing.T, ep webhook.Endpoint) {
				if ep.RetryLimit != webhook.DefaultRetryLimit || !ep.Enabled || len(ep.EventTypes) != 0 || string(ep.Metadata) != "{}" {
					t.Errorf("defaults = retry %d enabled %v types %v metadata %s; want 3, true, none, {}",
						ep.RetryLimit, ep.Enabled, ep.EventTypes, ep.Metadata)
				}
			}},
			{name: "missing url", in: webhook.Input{}, wantField: "url"},
			{name: "https required in production", in: webhook.Input{URL: ptr("http://example.com/hooks")}, wantField: "url"},
			{name: "not http at all", in: webhook.Input{URL: ptr("ftp://127.0.0.1/")}, wantField: "url"},
			{name: "unknown event type", in: webhook.Input{URL: &url, EventTypes: &[]string{"user.created", "user.deleted"}}, wantField: "event_types"},
			{name: "pattern without dot", in: webhook.Input{URL: &url, EventTypes: &[]string{"verification*"}}, wantField: "event_types"},
			{name: "pattern matching nothing", in: webhook.Input{URL: &url, EventTypes: &[]string{"billing.*"}}, wantField: "event_types"},
			{name: "known types and patterns", in: webhook.Input{URL: &url, EventTypes: &[]string{"user.created", "verification.*", "*"}},
				check: func(t *testing.T, ep webhook.Endpoint) {
					if got := strings.Join(ep.EventTypes, ","); got != "user.created,verification.*,*" {
						t.Errorf("event types = %q; want %q", got, "user.created,verification.*,*")
					}
				}},
			{name: "retry_limit -1", in: webhook.Input{URL: &url, RetryLimit: ptr(-1)}, wantField: "retry_limit"},
			{name: "retry_limit 11", in: webhook.Input{URL: &url, RetryLimit: ptr(11)}, wantField: "retry_limit"},
			{name: "retry_limit 0", in: webhook.Input{URL: &url, RetryLimit: ptr(0)}, check: retryLimit(0)},
			{name: "retry_limit 10", in: webhook.Input{URL: &url, RetryLimit: ptr(10)}, check: retryLimit(10)},
			{name: "description 256", in: webhook.Input{URL: &url, Description: ptr(strings.Repeat("d", 256))}},
			{name: "description 257", in: webhook.Input{URL: &url, Description: ptr(strings.Repeat("d", 257))}, wantField: "description"},
			{name: "description 256 non-ASCII characters", in: webhook.Input{URL: &url, Description: ptr(strings.Repeat("é", 256))}},
			{name: "description 257 non-ASCII characters", in: webhook.Input{URL: &url, Description: ptr(strings.Repeat("é", 257))}, wantField: "description"},
			{name: "description with NUL", in: webhook.Input{URL: &url, Description: ptr("a\x00b")}, wantField: "description"},
			{name: "description not UTF-8", in: webhook.Input{URL: &url, Description: ptr("a\xffb")}, wantField: "description"},
			{name: "metadata value with NUL", in: webhook.Input{URL: &url, Metadata: map[string]any{"k": []any{"a\x00b"}}}, wantField: "metadata"},
			{name: "metadata key with NUL", in: webhook.Input{URL: &url, Metadata: map[string]any{"k": map[string]any{"a\x00": 1}}}, wantField: "metadata"},
			{name: "metadata with an escaped backslash-u", in: webhook.Input{URL: &url, Metadata: map[string]any{"k": `\u0000`}}},
			{name: "metadata 4 KiB", in: webhook.Input{URL: &url, Metadata: map[string]any{"k": strings.Repeat("m", 4096-8)}}},
			{name: "metadata over 4 KiB", in: webhook.Input{URL: &url, Metadata: map[string]any{"k": strings.Repeat("m", 4096)}}, wantField: "metadata"},
			{name: "disabled", in: webhook.Input{URL: &url, Enabled: ptr(false)}, check: func(t *testing.T, ep webhook.Endpoint) {
				if ep.Enabled {
					t.Errorf("enabled = true; want false")
				}
			}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				svc := e.svc
				if tt.name == "https required in production" {
					svc = webhook.NewService(db, e.sealer, webhook.Policy{}, e.emitter, nil)
				}
				ep, err := svc.Create(ctx, e.appID, tt.in)
				if tt.wantField != "" {
					inv, ok := asInvalid(err)
					if !ok || inv.Field != tt.wantField {
						t.Fatalf("Create = %v (%T); want *InvalidError on %q", err, err, tt.wantField)
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
					stored, err := e.svc.Get(ctx, e.appID, ep.ID)
					if err != nil {
						t.Fatalf("Get: %v", err)
					}
					tt.check(t, ep)
					tt.check(t, stored)
				}
			})
		}
		// Update validates the same way and leaves the endpoint unchanged on error.
		ep := e.endpoint(t, e.appID, url, nil)
		if _, err := e.svc.Update(ctx, e.appID, ep.ID, webhook.Input{RetryLimit: ptr(11)}); err == nil {
			t.Errorf("Update(retry_limit 11) = nil; want an error")
		}
		if got, _ := e.svc.Get(ctx, e.appID, ep.ID); got.RetryLimit != webhook.DefaultRetryLimit {
			t.Errorf("retry limit after a refused update = %d; want %d", got.RetryLimit, webhook.DefaultRetryLimit)
		}
	})
}

func retryLimit(want int) func(*testing.T, webhook.Endpoint) {
	return func(t *testing.T, ep webhook.Endpoint) {
		if ep.RetryLimit != want {
			t.Errorf("retry limit = %d; want %d", ep.RetryLimit, want)
		}
	}
}

func TestEventTypeFilter(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, envOptions{})
		type sub struct {
			name  string
			types []string
			off   bool
			rc    *receiver
			ep    webhook.Endpoint
			want  []string // event types it gets
		}
		verified := webhook.Verification("email", webhook.OutcomeRequested)
		smsFailed := webhook.Verification("sms", webhook.OutcomeDeliveryFailed)
		subs := []*sub{
			{name: "user.created only", types: []string{webhook.UserCreated}, want: []string{webhook.UserCreated}},
			{name: "verification.*", types: []string{"verification.*"}, want: []string{verified, smsFailed}},
			{name: "verification.email.*", types: []string{"verification.email.*"}, want: []string{verified}},
			{name: "all (omitted)", want: []string{webhook.UserCreated, webhook.UserUpdated, verified, smsFailed}},
			{name: "all (*)", types: []string{"*"}, want: []string{webhook.UserCreated, webhook.UserUpdated, verified, smsFailed}},
			{name: "disabled", off: true},
		}
		for _, s := range subs {
			s.rc = newReceiver(t, nil)
			s.ep = e.endpoint(t, e.appID, s.rc.url(), func(in *webhook.Input) {
				if s.types != nil {
					in.EventTypes = &s.types
				}
				in.Enabled = ptr(!s.off)
			})
		}
		for _, typ := range []string{webhook.UserCreated, webhook.UserUpdated, verified, smsFailed} {
			e.emit(t, e.appID, typ, map[string]any{"type": typ})
		}
		for _, s := range subs {
			t.Run(s.name, func(t *testing.T) {
				// Fan-out happens in the emitting transaction: the rows are there now.
				page := e.waitSettled(t, e.appID, s.ep.ID, len(s.want))
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

func TestRotateSecret(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		// The worker's clock can jump past the overlap.
		var skew atomic.Int64
		workerNow := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		e := newEnv(t, db, envOptions{workerNow: workerNow})
		rc := newReceiver(t, nil)
		ep := e.endpoint(t, e.appID, rc.url(), nil)
		oldSecret := ep.Secret

		rotated, err := e.svc.RotateSecret(ctx, e.appID, ep.ID)
		if err != nil {
			t.Fatalf("RotateSecret: %v", err)
		}
		newSecret := rotated.Secret
		if newSecret == "" || newSecret == oldSecret || !strings.HasPrefix(newSecret, "whsec_") {
			t.Fatalf("rotated secret = %q (old %q); want a new whsec_ secret", newSecret, oldSecret)
		}
		if _, err := e.svc.RotateSecret(ctx, e.newApp(t, "Other"), ep.ID); !errors.Is(err, webhook.ErrEndpointNotFound) {
			t.Errorf("RotateSecret via another app = %v; want ErrEndpointNotFound", err)
		}

		// List and Get never show a secret, and what is stored is sealed.
		got, err := e.svc.Get(ctx, e.appID, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		list, err := e.svc.List(ctx, e.appID)
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

		e.emit(t, e.appID, webhook.UserCreated, map[string]any{})
		e.waitSettled(t, e.appID, ep.ID, 1)
		r := rc.requests()[0]
		sig := r.header.Get(webhookverify.Header)
		sigs := v1s(sig)
		if len(sigs) != 2 {
			t.Fatalf("header %q has %d v1 values during the overlap; want 2", sig, len(sigs))
		}
		for i, want := range []string{newSecret, oldSecret} {
			one := "t=" + tOf(sig) + ",v1=" + sigs[i]
			if err := webhookverify.Verify(one, r.body, time.Now(), 0, want); err != nil {
				t.Errorf("v1 #%d does not verify with the %s secret: %v", i+1, []string{"new", "old"}[i], err)
			}
			if err := webhookverify.Verify(one, r.body, time.Now(), 0, []string{oldSecret, newSecret}[i]); err == nil {
				t.Errorf("v1 #%d also verifies with the other secret", i+1)
			}
		}
		for _, s := range []string{oldSecret, newSecret} {
			if err := webhookverify.Verify(sig, r.body, time.Now(), 0, s); err != nil {
				t.Errorf("full header does not verify with one secret: %v", err)
			}
		}

		// After the overlap only the new secret signs.
		skew.Store(int64(webhook.RotationOverlap + time.Minute))
		e.emit(t, e.appID, webhook.UserUpdated, map[string]any{})
		e.waitSettled(t, e.appID, ep.ID, 2)
		r = rc.requests()[1]
		sig = r.header.Get(webhookverify.Header)
		later := workerNow()
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
