package gctune

import (
	"runtime"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		scanned, headroom uint64
		want              int
	}{
		{15 * mb, 64 * mb, 426},   // goal 79 MB: the live heap plus the headroom
		{64 * mb, 64 * mb, 100},   // from here on, the runtime's default
		{500 * mb, 64 * mb, 100},  // never below it
		{0, 64 * mb, 100},         // nothing read yet
		{1, 64 * mb, 100_000},     // capped
		{32 * mb, 128 * mb, 400},  // goal 160 MB
		{10 * mb, 10*mb + 1, 100}, // just above what is scanned
		{10 * mb, 0, 100},         // no headroom asked
	} {
		if got := Percent(c.scanned, c.headroom); got != c.want {
			t.Errorf("Percent(%d MB, %d MB) = %d, want %d", c.scanned/mb, c.headroom/mb, got, c.want)
		}
	}
}

// observe sends each percent the tuner sets to the channel it returns.
func observe(t *testing.T) <-chan int {
	got := make(chan int, 64)
	mu.Lock()
	observer = func(p int) {
		select {
		case got <- p:
		default:
		}
	}
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		observer = nil
		mu.Unlock()
	})
	return got
}

// collectUntil forces collections until n percents were set (the finalizer
// runs after a collection and arms the next one).
func collectUntil(t *testing.T, got <-chan int, n int) int {
	t.Helper()
	deadline := time.After(30 * time.Second)
	var last int
	for i := 0; i < n; {
		runtime.GC()
		select {
		case last = <-got:
			i++
		case <-deadline:
			t.Fatalf("%d adjustments within 30 s of forced collections, want %d: the finalizer did not re-arm", i, n)
		default:
			runtime.Gosched()
		}
	}
	return last
}

// TestTunerFollowsCollections starts a tuner with a headroom far above this
// test binary's heap: after collections the percent in force must be the
// one the tuner computed, and Stop must restore the one found at start.
func TestTunerFollowsCollections(t *testing.T) {
	before := CurrentPercent()
	got := observe(t)
	h := start(1 << 30)
	<-got // start adjusts at once (to 100 if no collection has measured the heap yet)
	// Two adjustments in a row show that the finalizer re-arms.
	if p := collectUntil(t, got, 2); p <= 100 || CurrentPercent() != p {
		t.Fatalf("after collections: adjusted to %d, in force %d; want the same, above 100", p, CurrentPercent())
	}
	h.Stop()
	if p := CurrentPercent(); p != before {
		t.Fatalf("after Stop the GC percent is %d, want %d as before", p, before)
	}
	// Stopped: later collections change nothing.
	runtime.GC()
	runtime.GC()
	if p := CurrentPercent(); p != before {
		t.Fatalf("a stopped tuner still set the GC percent to %d", p)
	}
	h.Stop() // twice is fine
	var none *Handle
	none.Stop()
}

// TestOverlappingStarts: two servers in one process (as tests run them)
// share the tuner; the first to stop leaves it running for the other, and
// the last restores the percent found before the first started, whatever
// the order.
func TestOverlappingStarts(t *testing.T) {
	before := CurrentPercent()
	got := observe(t)
	a := start(1 << 30)
	b := start(1 << 20) // the larger headroom stays
	collectUntil(t, got, 1)
	tuned := CurrentPercent()
	if tuned <= 100 {
		t.Fatalf("two tuners set %d %%, want far above 100", tuned)
	}
	a.Stop()
	a.Stop() // a second Stop of the same share must not end the other's
	if p := collectUntil(t, got, 1); p <= 100 || CurrentPercent() <= 100 {
		t.Fatalf("after the first of two stopped: %d %% in force, want the tuner still running", CurrentPercent())
	}
	b.Stop()
	if p := CurrentPercent(); p != before {
		t.Fatalf("after both stopped the GC percent is %d, want %d as before the first started", p, before)
	}
	// Again, the other way round, after a restart.
	c := start(1 << 30)
	d := start(1 << 30)
	d.Stop()
	c.Stop()
	if p := CurrentPercent(); p != before {
		t.Fatalf("after a second pair the GC percent is %d, want %d", p, before)
	}
}

func TestStartRespectsGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	if h := Start(64 << 20); h != nil {
		h.Stop()
		t.Fatal("Start tuned the collector although GOGC is set")
	}
	t.Setenv("GOGC", "")
	// Set but empty still counts as the operator's choice (the runtime reads it as 100).
	if h := Start(64 << 20); h != nil {
		h.Stop()
		t.Fatal("Start tuned the collector although GOGC is set (empty)")
	}
}

func TestStartWithoutHeadroom(t *testing.T) {
	if h := Start(0); h != nil {
		h.Stop()
		t.Fatal("a zero headroom started a tuner")
	}
}
