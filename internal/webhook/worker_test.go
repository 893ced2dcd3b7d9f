package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

func TestBackoff(t *testing.T) {
	const base = 5 * time.Second
	tests := []struct {
		n       int
		nominal time.Duration
	}{
		{1, 5 * time.Second},
		{2, 20 * time.Second},
		{3, 80 * time.Second},
		{4, 320 * time.Second},
		{8, 24 * time.Hour}, // 5 s × 4^7 is past the cap
		{10, 24 * time.Hour},
		{1000, 24 * time.Hour},
	}
	for _, tt := range tests {
		for _, id := range []string{"d-1", "d-2", "d-3"} {
			got := webhook.Backoff(base, id, tt.n)
			lo, hi := tt.nominal*8/10, tt.nominal*12/10
			if got < lo || got > hi {
				t.Errorf("Backoff(%v, %q, %d) = %v; want within [%v, %v]", base, id, tt.n, got, lo, hi)
			}
			if again := webhook.Backoff(base, id, tt.n); again != got {
				t.Errorf("Backoff(%v, %q, %d) = %v, then %v; want the same", base, id, tt.n, got, again)
			}
		}
	}
	// The jitter really varies between deliveries.
	seen := map[time.Duration]bool{}
	for i := range 20 {
		seen[webhook.Backoff(base, fmt.Sprint("d-", i), 1)] = true
	}
	if len(seen) < 10 {
		t.Errorf("Backoff over 20 ids gave %d distinct values; want jitter", len(seen))
	}
}

// job builds the River job of attempt n of max for a delivery.
func job(deliveryID string, n, max int) *river.Job[webhook.DeliverArgs] {
	return &river.Job[webhook.DeliverArgs]{
		JobRow: &rivertype.JobRow{Attempt: n, MaxAttempts: max, Kind: webhook.DeliverArgs{}.Kind()},
		Args:   webhook.DeliverArgs{DeliveryID: deliveryID},
	}
}

func isCancel(err error) bool {
	var c *river.JobCancelError
	return errors.As(err, &c)
}

// TestWorkResignsEveryAttempt drives Worker.Work directly under a clock the
// test steps, so that each attempt is seconds apart.
func TestWorkResignsEveryAttempt(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		var clock atomic.Int64
		clock.Store(time.Now().Truncate(time.Second).UnixNano())
		now := func() time.Time { return time.Unix(0, clock.Load()) }
		const base = 20 * time.Millisecond
		e := newEnv(t, db, envOptions{insertOnly: true, workerNow: now, retryBase: base})
		rc := newReceiver(t, status(http.StatusServiceUnavailable, "busy"))
		ep := e.endpoint(t, e.appID, rc.url(), func(in *webhook.Input) { in.RetryLimit = ptr(2) })
		e.emit(t, e.appID, webhook.UserCreated, map[string]any{"user": map[string]any{"id": "u-1"}})
		d := e.deliveries(t, e.appID, ep.ID).Deliveries[0]

		for n := 1; n <= 3; n++ {
			at := now()
			err := e.worker.Work(ctx, job(d.ID, n, 3))
			got := e.deliveries(t, e.appID, ep.ID).Deliveries[0]
			if n < 3 {
				if err == nil || isCancel(err) {
					t.Errorf("attempt %d: Work = %v; want a retryable error", n, err)
				}
				want := at.Add(webhook.Backoff(base, d.ID, n)).UTC().Truncate(time.Microsecond)
				if got.Status != store.DeliveryFailed || got.NextAttemptAt == nil || !got.NextAttemptAt.Equal(want) {
					t.Errorf("attempt %d: delivery = %q next %v; want failed next %v", n, got.Status, got.NextAttemptAt, want)
				}
				if next := e.worker.NextRetry(job(d.ID, n, 3)); !next.Equal(at.Add(webhook.Backoff(base, d.ID, n))) {
					t.Errorf("attempt %d: NextRetry = %v; want %v", n, next, at.Add(webhook.Backoff(base, d.ID, n)))
				}
			} else {
				if !isCancel(err) {
					t.Errorf("last attempt: Work = %v; want a JobCancel error", err)
				}
				if got.Status != store.DeliveryFailed || got.NextAttemptAt != nil || got.Attempts != 3 {
					t.Errorf("last attempt: delivery = %q next %v attempts %d; want failed, nil, 3", got.Status, got.NextAttemptAt, got.Attempts)
				}
			}
			clock.Add(int64(7 * time.Second))
		}

		reqs := rc.requests()
		if len(reqs) != 3 {
			t.Fatalf("receiver got %d requests; want 3", len(reqs))
		}
		start := time.Unix(0, clock.Load()).Add(-21 * time.Second)
		seen := map[string]bool{}
		for i, r := range reqs {
			sig := r.header.Get(webhookverify.Header)
			if !bytes.Equal(r.body, reqs[0].body) {
				t.Errorf("attempt %d body differs from attempt 1", i+1)
			}
			wantT := strconv.FormatInt(start.Add(time.Duration(i)*7*time.Second).Unix(), 10)
			if got := tOf(sig); got != wantT {
				t.Errorf("attempt %d: t = %s; want %s (the time of this attempt)", i+1, got, wantT)
			}
			for _, v := range v1s(sig) {
				if seen[v] {
					t.Errorf("attempt %d reuses signature %s", i+1, v)
				}
				seen[v] = true
			}
			signedAt := start.Add(time.Duration(i) * 7 * time.Second)
			if err := webhookverify.Verify(sig, r.body, signedAt, 0, ep.Secret); err != nil {
				t.Errorf("attempt %d: Verify = %v; want nil", i+1, err)
			}
		}
	})
}

// TestWorkTimeoutIsRecordedAndRetryable runs an attempt whose deadline
// passes while the receiver hangs: the attempt must still be recorded.
func TestWorkTimeoutIsRecordedAndRetryable(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, envOptions{insertOnly: true})
		rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // until the client gives up
		})
		ep := e.endpoint(t, e.appID, rc.url(), nil)
		e.emit(t, e.appID, webhook.UserCreated, map[string]any{})
		d := e.deliveries(t, e.appID, ep.ID).Deliveries[0]

		// The same deadline path as AttemptTimeout, without waiting 10 s.
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		err := e.worker.Work(ctx, job(d.ID, 1, d.MaxAttempts))
		if err == nil || isCancel(err) {
			t.Errorf("Work = %v; want a retryable error", err)
		}
		page := e.deliveries(t, e.appID, ep.ID)
		got := page.Deliveries[0]
		want := fmt.Sprintf("timed out after %s", webhook.AttemptTimeout)
		if got.Status != store.DeliveryFailed || got.NextAttemptAt == nil || got.LastError != want {
			t.Errorf("delivery = %q next %v error %q; want failed, a next attempt, %q", got.Status, got.NextAttemptAt, got.LastError, want)
		}
		if a := page.Attempts[got.ID]; len(a) != 1 || a[0].Error != want || a[0].ResponseStatus != nil {
			t.Errorf("attempts = %+v; want one timed out without a status", a)
		}
	})
}

func TestWorkDisabledAndMissing(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, envOptions{insertOnly: true})
		rc := newReceiver(t, nil)
		ep := e.endpoint(t, e.appID, rc.url(), nil)
		e.emit(t, e.appID, webhook.UserCreated, map[string]any{})
		d := e.deliveries(t, e.appID, ep.ID).Deliveries[0]
		// Disabled after the event was queued: the attempt fails for good, unsent.
		if _, err := e.svc.Update(ctx, e.appID, ep.ID, webhook.Input{Enabled: ptr(false)}); err != nil {
			t.Fatal(err)
		}
		if err := e.worker.Work(ctx, job(d.ID, 1, d.MaxAttempts)); !isCancel(err) {
			t.Errorf("Work on a disabled endpoint = %v; want a JobCancel error", err)
		}
		got := e.deliveries(t, e.appID, ep.ID).Deliveries[0]
		if got.Status != store.DeliveryFailed || got.NextAttemptAt != nil || got.LastError != "endpoint disabled" {
			t.Errorf("delivery = %q next %v error %q; want failed, nil, %q", got.Status, got.NextAttemptAt, got.LastError, "endpoint disabled")
		}
		if n := rc.count(); n != 0 {
			t.Errorf("receiver got %d requests; want 0", n)
		}
		// Deleted endpoint: its delivery is gone and the job is cancelled.
		if err := e.svc.Delete(ctx, e.appID, ep.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.worker.Work(ctx, job(d.ID, 1, d.MaxAttempts)); !isCancel(err) {
			t.Errorf("Work on a deleted delivery = %v; want a JobCancel error", err)
		}
	})
}
