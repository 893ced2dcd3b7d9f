package gctune

import (
	"runtime"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{15 * mb, 64 * mb, 426},   // goal 79 MB: the live heap plus the headroom
		{64 * mb, 64 * mb, 100},   // from here on, the runtime's default
		{500 * mb, 64 * mb, 100},  // never below it
		{0, 64 * mb, 100},         // nothing read yet
		{1, 64 * mb, 100_000},     // capped
		{32 * mb, 128 * mb, 400},  // goal 160 MB
		{10 * mb, 10*mb + 1, 100}, // just above the live heap
		{10 * mb, 0, 100},         // no headroom asked
	} {
		if got := Percent(c.live, c.headroom); got != c.want {
			t.Errorf("Percent(%d MB, %d MB) = %d, want %d", c.live/mb, c.headroom/mb, got, c.want)
		}
	}
}

// TestTunerFollowsCollections starts a tuner with a headroom far above this
// test binary's live heap: after a collection the percent in force must be
// the one the tuner computed, and Stop must restore the one found at start.
func TestTunerFollowsCollections(t *testing.T) {
	before := CurrentPercent()
	got := make(chan int, 64)
	tu := start(1<<30, func(p int) {
		select {
		case got <- p:
		default:
		}
	})
	<-got // start adjusts at once (to 100 if no collection has measured the live heap yet)
	// The finalizer runs after a collection and arms the next one: two
	// adjustments in a row show that it does.
	deadline := time.After(30 * time.Second)
	var again int
	for n := 0; n < 2; {
		runtime.GC()
		select {
		case again = <-got:
			n++
		case <-deadline:
			t.Fatalf("%d adjustments within 30 s of forced collections, want 2: the finalizer did not re-arm", n)
		default:
			runtime.Gosched()
		}
	}
	if again <= 100 || CurrentPercent() <= 100 {
		t.Fatalf("after a collection: adjusted to %d, in force %d; want both above 100", again, CurrentPercent())
	}
	tu.Stop()
	if p := CurrentPercent(); p != before {
		t.Fatalf("after Stop the GC percent is %d, want %d as before", p, before)
	}
	// Stopped: later collections change nothing.
	runtime.GC()
	runtime.GC()
	if p := CurrentPercent(); p != before {
		t.Fatalf("a stopped tuner still set the GC percent to %d", p)
	}
	tu.Stop() // twice is fine
	var nilTuner *Tuner
	nilTuner.Stop()
}

func TestStartRespectsGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	if tu := Start(64 << 20); tu != nil {
		tu.Stop()
		t.Fatal("Start tuned the collector although GOGC is set")
	}
	t.Setenv("GOGC", "")
	// Set but empty still counts as the operator's choice (the runtime reads it as 100).
	if tu := Start(64 << 20); tu != nil {
		tu.Stop()
		t.Fatal("Start tuned the collector although GOGC is set (empty)")
	}
}

func TestStartWithoutHeadroom(t *testing.T) {
	if tu := Start(0); tu != nil {
		tu.Stop()
		t.Fatal("a zero headroom started a tuner")
	}
}
