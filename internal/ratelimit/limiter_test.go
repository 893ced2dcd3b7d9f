package ratelimit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// Both backends implement Limiter.
var (
	_ Limiter = (*Memory)(nil)
	_ Limiter = (*SQL)(nil)
)

// t0 has a sub-millisecond part on purpose: backends must truncate alike.
var t0 = time.Date(2026, 11, 21, 8, 30, 15, 123456789, time.UTC)

// testClock is an injectable clock that only moves when told.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// backend is one limiter under test, with a way to count stored buckets.
type backend struct {
	l       Limiter
	buckets func(t *testing.T) int64
}

// forEachBackend runs fn against Memory and against SQL on every engine,
// each with its own clock set to t0.
func forEachBackend(t *testing.T, fn func(t *testing.T, clock *testClock, b backend)) {
	t.Run("memory", func(t *testing.T) {
		clock := &testClock{t: t0}
		m := NewMemory(clock.Now)
		fn(t, clock, backend{l: m, buckets: func(*testing.T) int64 { return int64(m.len()) }})
	})
	t.Run("sql", func(t *testing.T) {
		storetest.ForEach(t, func(t *testing.T, db *store.DB) {
			clock := &testClock{t: t0}
			count := func(t *testing.T) int64 {
				// Pruning everything counts the rows; only used at the end of a test.
				n, err := db.PruneRates(context.Background(), math.MaxInt64)
				if err != nil {
					t.Fatalf("PruneRates: %v", err)
				}
				return n
			}
			fn(t, clock, backend{l: NewSQL(db, clock.Now), buckets: count})
		})
	})
}

func TestAllowSequence(t *testing.T) {
	r3 := Rule{3, 3 * time.Second} // interval 1 s, burst 3
	r7 := Rule{7, time.Second}     // interval 143 ms, burst window 1001 ms
	steps := []struct {
		at        time.Duration // since t0
		key       string
		r         Rule
		want      bool
		wantRetry time.Duration
	}{
		{0, "a", r3, true, 0},
		{0, "a", r3, true, 0},
		{0, "a", r3, true, 0},
		{0, "a", r3, false, time.Second},
		{0, "a", r3, false, time.Second}, // a refusal does not push the bucket further
		{0, "a", Rule{}, true, 0},        // disabled: always allowed, nothing taken
		{0, "a", r3, false, time.Second},
		{0, "b", r3, true, 0}, // keys are independent
		{400 * time.Millisecond, "a", r3, false, 600 * time.Millisecond},
		{999 * time.Millisecond, "a", r3, false, time.Millisecond},
		{time.Second, "a", r3, true, 0},
		{time.Second, "a", r3, false, time.Second},
		{2500 * time.Millisecond, "a", r3, true, 0},
		{2500 * time.Millisecond, "a", r3, false, 500 * time.Millisecond},
		{10 * time.Second, "a", r3, true, 0}, // idle long enough: a full burst again
		{10 * time.Second, "a", r3, true, 0},
		// A stricter rule on the same bucket sees what the looser one used.
		{10 * time.Second, "a", Rule{1, 10 * time.Second}, false, 2 * time.Second},
		{10 * time.Second, "a", r3, true, 0},
		{10 * time.Second, "a", r3, false, time.Second},
		{10 * time.Second, "c", r7, true, 0},
		{10 * time.Second, "c", r7, true, 0},
		{10 * time.Second, "c", r7, true, 0},
		{10 * time.Second, "c", r7, true, 0},
		{10 * time.Second, "c", r7, true, 0},
		{10 * time.Second, "c", r7, true, 0},
		{10 * time.Second, "c", r7, true, 0},
		{10 * time.Second, "c", r7, false, 143 * time.Millisecond},
		{10*time.Second + 142*time.Millisecond, "c", r7, false, time.Millisecond},
		{10*time.Second + 143*time.Millisecond, "c", r7, true, 0},
		{10*time.Second + 143*time.Millisecond, "off-only", Rule{}, true, 0},
		{time.Hour, "off-only", Rule{}, true, 0},
	}
	forEachBackend(t, func(t *testing.T, clock *testClock, b backend) {
		ctx := context.Background()
		for i, s := range steps {
			clock.Set(t0.Add(s.at))
			got, err := b.l.Allow(ctx, s.key, s.r)
			if err != nil {
				t.Fatalf("step %d: Allow: %v", i, err)
			}
			if want := (Result{Allowed: s.want, RetryAfter: s.wantRetry}); got != want {
				t.Fatalf("step %d: Allow(%q, %v) at t0+%v = %+v; want %+v", i, s.key, s.r, s.at, got, want)
			}
		}
		// Only a, b and c were ever limited: a disabled rule stores nothing.
		if got := b.buckets(t); got != 3 {
			t.Fatalf("buckets stored = %d; want 3", got)
		}
	})
}

// TestBackendsAgree replays one random sequence on Memory and on SQL side by
// side and compares every result.
func TestBackendsAgree(t *testing.T) {
	rules := []Rule{{3, 3 * time.Second}, {7, time.Second}, {1, 2 * time.Second}, {5, time.Minute}, {}}
	keys := []string{"k1", "k2", "k3", "k4", "k5"}
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := &testClock{t: t0}
		mem, sql := NewMemory(clock.Now), NewSQL(db, clock.Now)
		rng := rand.New(rand.NewPCG(1, 2))
		now := t0
		refused := 0
		for i := range 2000 {
			if rng.IntN(3) == 0 {
				now = now.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
				clock.Set(now)
			}
			key, r := keys[rng.IntN(len(keys))], rules[rng.IntN(len(rules))]
			gotMem, err := mem.Allow(ctx, key, r)
			if err != nil {
				t.Fatalf("step %d: Memory.Allow: %v", i, err)
			}
			gotSQL, err := sql.Allow(ctx, key, r)
			if err != nil {
				t.Fatalf("step %d: SQL.Allow: %v", i, err)
			}
			if gotMem != gotSQL {
				t.Fatalf("step %d: Allow(%q, %v): Memory = %+v; SQL = %+v", i, key, r, gotMem, gotSQL)
			}
			if !gotMem.Allowed {
				refused++
			}
		}
		// The sequence must exercise both outcomes to mean anything.
		if refused < 100 || refused > 1900 {
			t.Fatalf("refused %d of 2000; want a mix", refused)
		}
	})
}

func TestAllowConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, clock *testClock, b backend) {
		ctx := context.Background()
		r := Rule{5, time.Minute}
		var allowed atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 50)
		for range 50 {
			wg.Go(func() {
				res, err := b.l.Allow(ctx, "otp-send:ip:192.0.2.1", r)
				if err != nil {
					errs <- err
					return
				}
				if res.Allowed {
					allowed.Add(1)
				} else if res.RetryAfter != 12*time.Second {
					errs <- fmt.Errorf("refused with RetryAfter = %v; want 12s", res.RetryAfter)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got := allowed.Load(); got != 5 {
			t.Fatalf("allowed = %d of 50; want 5", got)
		}
	})
}

func TestSQLPrune(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := &testClock{t: t0}
		l := NewSQL(db, clock.Now)
		for _, key := range []string{"short", "long"} {
			r := Rule{1, time.Second}
			if key == "long" {
				r = Rule{1, time.Hour}
			}
			if _, err := l.Allow(ctx, key, r); err != nil {
				t.Fatalf("Allow: %v", err)
			}
		}
		// "short" expires at t0 + 1 s (tat) + 1 s (burst); "long" two hours on.
		clock.Set(t0.Add(3 * time.Second))
		if err := l.Prune(ctx); err != nil {
			t.Fatalf("Prune: %v", err)
		}
		n, err := db.PruneRates(ctx, math.MaxInt64)
		if err != nil {
			t.Fatalf("PruneRates: %v", err)
		}
		if n != 1 {
			t.Fatalf("buckets left after Prune = %d; want 1", n)
		}
	})
}

// TestReturn: an event given back can be taken again, on both backends
// alike; giving back never makes room beyond a full bucket once time has
// passed, and a key never taken or a disabled rule is left alone.
func TestReturn(t *testing.T) {
	r3 := Rule{3, 3 * time.Second} // interval 1 s, burst 3
	forEachBackend(t, func(t *testing.T, clock *testClock, b backend) {
		ctx := context.Background()
		allow := func(step string, want bool) {
			t.Helper()
			got, err := b.l.Allow(ctx, "k", r3)
			if err != nil || got.Allowed != want {
				t.Fatalf("%s: Allow = %+v, %v; want allowed %v", step, got, err, want)
			}
		}
		give := func(key string, r Rule) {
			t.Helper()
			if err := b.l.Return(ctx, key, r); err != nil {
				t.Fatalf("Return(%q): %v", key, err)
			}
		}
		for i := range 3 {
			allow(fmt.Sprint("take ", i+1), true)
		}
		allow("4th", false)
		give("k", r3)
		allow("after one given back", true)
		allow("again", false)
		give("k", r3)
		give("k", r3)
		allow("after two given back", true)
		allow("after two given back, 2nd", true)
		allow("after two given back, 3rd", false)
		give("never-taken", r3)
		give("k", Rule{})
		allow("a disabled rule gives nothing back", false)

		// Long idle: the bucket is full; giving back adds no room above it.
		clock.Set(t0.Add(time.Hour))
		give("k", r3)
		for i := range 3 {
			allow(fmt.Sprint("full again, take ", i+1), true)
		}
		allow("full again, 4th", false)
	})
}
