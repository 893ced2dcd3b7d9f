package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// rateT0 is an arbitrary fixed "now" in unix ms.
const rateT0 int64 = 1_795_000_000_000

func TestTakeRateConcurrentBurst(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		const interval, burst = 100, 500 // 1 per 100 ms, burst 5
		var allowed, refused atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 10*20)
		for range 10 {
			wg.Go(func() {
				for range 20 {
					ok, retry, err := db.TakeRate(ctx, "k", rateT0, interval, burst)
					if err != nil {
						errs <- err
						return
					}
					if ok {
						allowed.Add(1)
					} else {
						refused.Add(1)
						if retry != interval {
							t.Errorf("TakeRate refused with retryAfter = %d; want %d", retry, interval)
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("TakeRate: %v", err)
		}
		if got, want := allowed.Load(), int64(5); got != want {
			t.Fatalf("allowed = %d; want %d", got, want)
		}
		if got, want := refused.Load(), int64(195); got != want {
			t.Fatalf("refused = %d; want %d", got, want)
		}

		// One interval later exactly one more step fits.
		now := rateT0 + interval
		n := 0
		for range 10 {
			ok, _, err := db.TakeRate(ctx, "k", now, interval, burst)
			if err != nil {
				t.Fatalf("TakeRate: %v", err)
			}
			if ok {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("allowed after one interval = %d; want 1", n)
		}
	})
}

func TestTakeRateSequence(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		const interval, burst = 1000, 3000 // 1 per second, burst 3
		steps := []struct {
			key       string
			at        int64 // ms after rateT0
			wantOK    bool
			wantRetry int64
		}{
			{"a", 0, true, 0},
			{"a", 0, true, 0},
			{"a", 0, true, 0},
			{"a", 0, false, 1000},
			{"a", 0, false, 1000}, // a refusal does not push tat further
			{"b", 0, true, 0},     // buckets are independent
			{"a", 400, false, 600},
			{"a", 999, false, 1},
			{"a", 1000, true, 0},
			{"a", 1000, false, 1000},
			{"a", 2500, true, 0},
			{"a", 2500, false, 500},
			{"a", 3000, true, 0},
			{"a", 3000, false, 1000},
			{"a", 10_000, true, 0}, // idle long enough: a full burst again
			{"a", 10_000, true, 0},
			{"a", 10_000, true, 0},
			{"a", 10_000, false, 1000},
		}
		for i, s := range steps {
			ok, retry, err := db.TakeRate(ctx, s.key, rateT0+s.at, interval, burst)
			if err != nil {
				t.Fatalf("step %d: TakeRate: %v", i, err)
			}
			if ok != s.wantOK || retry != s.wantRetry {
				t.Fatalf("step %d: TakeRate(%q, +%d) = %v, %d; want %v, %d", i, s.key, s.at, ok, retry, s.wantOK, s.wantRetry)
			}
		}
	})
}

func TestTakeRateBadParams(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		for _, p := range [][2]int64{{0, 100}, {-1, 100}, {100, 99}, {100, 0}} {
			if _, _, err := db.TakeRate(ctx, "k", rateT0, p[0], p[1]); err == nil {
				t.Errorf("TakeRate(interval %d, burst %d) = nil error; want an error", p[0], p[1])
			}
		}
	})
}

func TestPruneRates(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		const interval, burst = 100, 200
		// "old": tat = t0+100, expires_at = t0+300.
		if _, _, err := db.TakeRate(ctx, "old", rateT0, interval, burst); err != nil {
			t.Fatalf("TakeRate: %v", err)
		}
		// "new": tat = t0+1100, expires_at = t0+1300.
		if _, _, err := db.TakeRate(ctx, "new", rateT0+1000, interval, burst); err != nil {
			t.Fatalf("TakeRate: %v", err)
		}
		// "refused": two allowed, then a refusal marks expires_at = tat+burst+1 = t0+401.
		for range 3 {
			if _, _, err := db.TakeRate(ctx, "refused", rateT0, interval, burst); err != nil {
				t.Fatalf("TakeRate: %v", err)
			}
		}

		steps := []struct {
			now  int64
			want int64
		}{
			{rateT0 + 300, 0}, // expires_at < now is strict
			{rateT0 + 301, 1}, // old
			{rateT0 + 401, 0},
			{rateT0 + 402, 1}, // refused
			{rateT0 + 1300, 0},
			{rateT0 + 1301, 1}, // new
			{rateT0 + 5000, 0},
		}
		for _, s := range steps {
			got, err := db.PruneRates(ctx, s.now)
			if err != nil {
				t.Fatalf("PruneRates: %v", err)
			}
			if got != s.want {
				t.Fatalf("PruneRates(t0+%d) = %d; want %d", s.now-rateT0, got, s.want)
			}
		}

		// A pruned key starts over with a full burst.
		for i := range 2 {
			ok, _, err := db.TakeRate(ctx, "old", rateT0, interval, burst)
			if err != nil {
				t.Fatalf("TakeRate: %v", err)
			}
			if !ok {
				t.Fatalf("TakeRate after prune, step %d = refused; want allowed", i)
			}
		}
	})
}
