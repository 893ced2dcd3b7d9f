package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
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

// TestWorkResignsEveryAttempt drives Worker.Work directly under the system's
// fake clock, which the test steps, so that each attempt is seconds apart.
func TestWorkResignsEveryAttempt(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{}, func(t *testing.T, e *env) {
		ctx := context.Background()
		const base = 20 * time.Millisecond
		worker := e.newWorker(t, base, nil)
		rc := newReceiver(t, status(http.StatusServiceUnavailable, "busy"))
		ep := e.endpoint(t, e.app.ID, rc.url(), func(in *webhook.Input) { in.RetryLimit = ptr(2) })
		d := e.test(t, e.app.ID, ep.ID)

		var signedAt []time.Time
		for n := 1; n <= 3; n++ {
			at := e.Clock.Now()
			signedAt = append(signedAt, at)
			err := worker.Work(ctx, job(d.ID, n, 3))
			got := e.deliveries(t, e.app.ID, ep.ID).Deliveries[0]
			if n < 3 {
				if err == nil || isCancel(err) {
					t.Errorf("attempt %d: Work = %v; want a retryable error", n, err)
				}
				want := at.Add(webhook.Backoff(base, d.ID, n)).UTC().Truncate(time.Microsecond)
				if got.Status != store.DeliveryFailed || got.NextAttemptAt == nil || !got.NextAttemptAt.Equal(want) {
					t.Errorf("attempt %d: delivery = %q next %v; want failed next %v", n, got.Status, got.NextAttemptAt, want)
				}
				if next := worker.NextRetry(job(d.ID, n, 3)); !next.Equal(at.Add(webhook.Backoff(base, d.ID, n))) {
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
			e.Clock.Advance(7 * time.Second)
		}

		reqs := rc.requests()
		if len(reqs) != 3 {
			t.Fatalf("receiver got %d requests; want 3", len(reqs))
		}
		seen := map[string]bool{}
		for i, r := range reqs {
			sig := r.header.Get(webhookverify.Header)
			if !bytes.Equal(r.body, reqs[0].body) {
				t.Errorf("attempt %d body differs from attempt 1", i+1)
			}
			wantT := strconv.FormatInt(signedAt[i].Unix(), 10)
			if got := tOf(sig); got != wantT {
				t.Errorf("attempt %d: t = %s; want %s (the time of this attempt)", i+1, got, wantT)
			}
			for _, v := range v1s(sig) {
				if seen[v] {
					t.Errorf("attempt %d reuses signature %s", i+1, v)
				}
				seen[v] = true
			}
			if err := webhookverify.Verify(sig, r.body, signedAt[i], 0, ep.Secret); err != nil {
				t.Errorf("attempt %d: Verify = %v; want nil", i+1, err)
			}
		}
	})
}

// TestWorkTimeoutIsRecordedAndRetryable runs an attempt whose deadline
// passes while the receiver hangs: the attempt must still be recorded.
func TestWorkTimeoutIsRecordedAndRetryable(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{}, func(t *testing.T, e *env) {
		worker := e.newWorker(t, 20*time.Millisecond, nil)
		rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // until the client gives up
		})
		ep := e.endpoint(t, e.app.ID, rc.url(), nil)
		d := e.test(t, e.app.ID, ep.ID)

		// The same deadline path as AttemptTimeout, without waiting 10 s.
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		err := worker.Work(ctx, job(d.ID, 1, d.MaxAttempts))
		if err == nil || isCancel(err) {
			t.Errorf("Work = %v; want a retryable error", err)
		}
		page := e.deliveries(t, e.app.ID, ep.ID)
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
	t.Parallel()
	forEachEnv(t, envOptions{}, func(t *testing.T, e *env) {
		ctx := context.Background()
		p := e.caller(t, e.app.ID)
		worker := e.newWorker(t, 20*time.Millisecond, nil)
		rc := newReceiver(t, nil)
		ep := e.endpoint(t, e.app.ID, rc.url(), nil)
		d := e.test(t, e.app.ID, ep.ID)
		// Disabled after the event was queued: the attempt fails for good, unsent.
		if _, err := e.Webhooks.Update(ctx, p, e.app.ID, ep.ID, webhook.Input{Enabled: ptr(false)}); err != nil {
			t.Fatal(err)
		}
		if err := worker.Work(ctx, job(d.ID, 1, d.MaxAttempts)); !isCancel(err) {
			t.Errorf("Work on a disabled endpoint = %v; want a JobCancel error", err)
		}
		got := e.deliveries(t, e.app.ID, ep.ID).Deliveries[0]
		if got.Status != store.DeliveryFailed || got.NextAttemptAt != nil || got.LastError != "endpoint disabled" {
			t.Errorf("delivery = %q next %v error %q; want failed, nil, %q", got.Status, got.NextAttemptAt, got.LastError, "endpoint disabled")
		}
		if n := rc.count(); n != 0 {
			t.Errorf("receiver got %d requests; want 0", n)
		}
		// Deleted endpoint: its delivery is gone and the job is cancelled.
		if err := e.Webhooks.Delete(ctx, p, e.app.ID, ep.ID); err != nil {
			t.Fatal(err)
		}
		if err := worker.Work(ctx, job(d.ID, 1, d.MaxAttempts)); !isCancel(err) {
			t.Errorf("Work on a deleted delivery = %v; want a JobCancel error", err)
		}
	})
}

// TestWorkRecordsInterruptedAttempt is a server that stopped during a
// delivery's last attempt: the rerun records the lost attempt and decides
// finality from the delivery's own count, not from River's.
func TestWorkRecordsInterruptedAttempt(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{}, func(t *testing.T, e *env) {
		ctx := context.Background()
		worker := e.newWorker(t, 20*time.Millisecond, nil)
		rc := newReceiver(t, status(http.StatusInternalServerError, "down"))
		ep := e.endpoint(t, e.app.ID, rc.url(), func(in *webhook.Input) { in.RetryLimit = ptr(0) })
		d := e.test(t, e.app.ID, ep.ID)
		if d.MaxAttempts != 1 {
			t.Fatalf("delivery max attempts = %d; want 1 (retry_limit 0)", d.MaxAttempts)
		}
		// Attempt 1 starts, and the server dies before it is recorded.
		if _, err := e.DB.StartDeliveryAttempt(ctx, d.ID, e.Clock.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		e.Clock.Advance(time.Minute)
		// River runs the job again (its run 2; River allows far more).
		err := worker.Work(ctx, job(d.ID, 2, 1000))
		if !isCancel(err) {
			t.Errorf("Work after an interrupted last attempt = %v; want a JobCancel error (final)", err)
		}
		page := e.deliveries(t, e.app.ID, ep.ID)
		got := page.Deliveries[0]
		if got.Status != store.DeliveryFailed || got.NextAttemptAt != nil {
			t.Errorf("delivery = %q next %v; want failed, nil", got.Status, got.NextAttemptAt)
		}
		var attempts []string
		for _, a := range page.Attempts[d.ID] {
			attempts = append(attempts, fmt.Sprintf("#%d %s", a.Attempt, a.Error))
		}
		want := []string{"#1 interrupted: the server stopped during the attempt", "#2 endpoint answered 500"}
		if !slices.Equal(attempts, want) {
			t.Errorf("attempts = %q; want %q", attempts, want)
		}
		if n := rc.count(); n != 1 {
			t.Errorf("receiver got %d requests; want 1", n)
		}
	})
}

// noHosts is a resolver that knows no name (NXDOMAIN), as a target whose
// DNS record was removed after the endpoint was saved.
type noHosts struct{}

func (noHosts) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.9.9.9:53", IsNotFound: true}
}

// TestWorkClassifiesTransportFailures checks that a failed attempt is
// recorded by the kind of error (its type), in words that name no address,
// and is retried.
func TestWorkClassifiesTransportFailures(t *testing.T) {
	t.Parallel()
	forEachEnv(t, envOptions{}, func(t *testing.T, e *env) {
		ctx := context.Background()
		plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
		t.Cleanup(plain.Close)
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		refusedAddr := closed.Addr().String()
		_ = closed.Close()
		_, plainPort, _ := net.SplitHostPort(plain.Listener.Addr().String())

		tests := []struct {
			name   string
			url    string
			policy *webhook.Policy
			want   string
		}{
			// A plain-HTTP server behind an https:// URL.
			{"TLS handshake", "https://" + plain.Listener.Addr().String() + "/hooks", nil, "TLS handshake failed"},
			// Resolved when saved (the system's resolver), gone at delivery.
			{"unresolvable host", "http://localhost:" + plainPort + "/hooks",
				&webhook.Policy{AllowPrivate: true, Resolver: noHosts{}}, "host not found"},
			{"connection refused", "http://" + refusedAddr + "/hooks", nil, "connection failed"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				worker := e.newWorker(t, 20*time.Millisecond, tt.policy)
				ep := e.endpoint(t, e.app.ID, tt.url, nil)
				d := e.test(t, e.app.ID, ep.ID)
				err := worker.Work(ctx, job(d.ID, 1, d.MaxAttempts))
				if err == nil || isCancel(err) {
					t.Errorf("Work = %v; want a retryable error", err)
				}
				page := e.deliveries(t, e.app.ID, ep.ID)
				got := page.Deliveries[0]
				if got.Status != store.DeliveryFailed || got.NextAttemptAt == nil || got.LastError != tt.want {
					t.Errorf("delivery = %q next %v error %q; want failed, a next attempt, %q", got.Status, got.NextAttemptAt, got.LastError, tt.want)
				}
				a := page.Attempts[got.ID]
				if len(a) != 1 || a[0].Error != tt.want || a[0].ResponseStatus != nil {
					t.Fatalf("attempts = %+v; want one %q without a status", a, tt.want)
				}
				for _, leak := range []string{"127.0.0.1", "10.9.9.9", "no such host", "tls:", "refused"} {
					if strings.Contains(a[0].Error, leak) {
						t.Errorf("recorded error %q names %q", a[0].Error, leak)
					}
				}
			})
		}
	})
}
