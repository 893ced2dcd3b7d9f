package gctune

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, scanned, headroom uint64
		want                    int
	}{
		{15 * mb, 15 * mb, 64 * mb, 426},   // goal 79 MB: the live heap plus the headroom
		{14 * mb, 16 * mb, 64 * mb, 400},   // stacks and globals count as the collector counts them
		{64 * mb, 64 * mb, 64 * mb, 100},   // from here on, the runtime's default
		{500 * mb, 500 * mb, 64 * mb, 100}, // never below it
		{0, 0, 64 * mb, 100},               // nothing read yet
		{32 * mb, 32 * mb, 128 * mb, 400},  // goal 160 MB
		{10 * mb, 10 * mb, 10*mb + 1, 100}, // just above what is scanned
		{10 * mb, 10 * mb, 0, 100},         // no headroom asked
		{mb / 4, mb / 4, 64 * mb, 1606},    // a tiny heap: the runtime's 4 MiB minimum × 16.06 = 64.25 MiB
		{0, 1, 64 * mb, 1600},              // the same bound, not millions of per cent
		{2 * mb, 3 * mb, 64 * mb, 1650},    // the minimum binds before the scan does
	} {
		if got := Percent(c.live, c.scanned, c.headroom); got != c.want {
			t.Errorf("Percent(%d, %d, %d MB) = %d, want %d", c.live, c.scanned, c.headroom/mb, got, c.want)
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
	// Stopped: later collections change nothing. A finalizer still armed
	// would run after one of these and report.
	for range 5 {
		runtime.GC()
		runtime.Gosched()
	}
	select {
	case p := <-got:
		t.Fatalf("a stopped tuner set the GC percent to %d", p)
	case <-time.After(100 * time.Millisecond):
	}
	if p := CurrentPercent(); p != before {
		t.Fatalf("a stopped tuner left the GC percent at %d", p)
	}
	h.Stop() // twice is fine
	var none *Handle
	none.Stop()
}

// TestHeapGoal: what the runtime makes of the percent is the live heap plus
// the headroom, neither more (stacks, globals and the runtime's minimum
// heap counted) nor much less.
func TestHeapGoal(t *testing.T) {
	const headroom = 64 << 20
	// A live heap large enough that the runtime's minimum does not bind,
	// so that the goal shows whether stacks and globals were counted.
	ballast := make([]byte, 24<<20)
	defer runtime.KeepAlive(ballast)
	got := observe(t)
	h := start(headroom)
	defer h.Stop()
	collectUntil(t, got, 2)
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	goal, live := s[0].Value.Uint64(), s[1].Value.Uint64()
	if goal > live+headroom+headroom/100 || goal < live+headroom*9/10 {
		t.Fatalf("heap goal %d MiB over a live heap of %.1f MiB; want about the live heap plus %d MiB",
			goal>>20, float64(live)/(1<<20), headroom>>20)
	}
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
