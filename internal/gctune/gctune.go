// Package gctune gives the Go garbage collector a floor of headroom. With
// the runtime's default (GOGC=100) a collection starts when the heap has
// grown by as much as survived the last one; Gatehouse keeps little alive
// (tens of MB) and allocates on every request, so under load it collected
// several times a second and spent about a tenth of its CPU doing so
// (docs/performance.md). After each collection the tuner sets the next
// goal to the live heap plus at least headroom bytes: above headroom of
// live heap it changes nothing (GOGC=100), below it the heap may grow by
// headroom before the next collection. The memory this can cost is
// headroom, whatever the load; GOMEMLIMIT, when set, still caps the heap.
//
// It re-arms itself from a finalizer, which runs once per collection: no
// goroutine and no timer, so an idle server does no work for it.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// Tuner is one running floor; Stop ends it.
type Tuner struct {
	headroom uint64
	before   int // the GC percent at Start, restored by Stop
	stopped  atomic.Bool
	mu       sync.Mutex // serialises adjust with Stop
	sample   []metrics.Sample
	// adjusted, when set (tests), receives each percent set after a collection.
	adjusted func(percent int)
}

// Start keeps at least headroom bytes of heap growth between collections.
// It returns nil, changing nothing, when headroom is 0 or when the GOGC
// environment variable is set (the operator chose the collector's pace).
func Start(headroom uint64) *Tuner {
	if _, set := os.LookupEnv("GOGC"); set || headroom == 0 {
		return nil
	}
	return start(headroom, nil)
}

func start(headroom uint64, adjusted func(int)) *Tuner {
	t := &Tuner{headroom: headroom, adjusted: adjusted, before: CurrentPercent(),
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.adjust()
	t.arm()
	return t
}

// sentinel is what the finalizer hangs on: one object per collection. It
// holds a pointer so that it is not a tiny allocation, whose finalizer
// may never run.
type sentinel struct{ t *Tuner }

func (t *Tuner) arm() {
	runtime.SetFinalizer(&sentinel{t: t}, func(s *sentinel) {
		if s.t.stopped.Load() {
			return
		}
		s.t.adjust()
		s.t.arm()
	})
}

// Percent is the GC percent that keeps headroom over a live heap of live
// bytes: never below 100, the runtime's default.
func Percent(live, headroom uint64) int {
	if live == 0 || headroom <= live {
		return 100
	}
	// Capped well below what overflows: a live heap of a few bytes (at
	// start-up) would otherwise ask for a percent in the millions, which
	// is harmless but meaningless.
	return int(min(headroom*100/live, 100_000))
}

func (t *Tuner) adjust() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Load() {
		return
	}
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	p := Percent(live, t.headroom)
	debug.SetGCPercent(p)
	if t.adjusted != nil {
		t.adjusted(p)
	}
}

// CurrentPercent is the GC percent in force (GOGC, or what was set since).
func CurrentPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	return int(s[0].Value.Uint64())
}

// Stop ends the floor and restores the GC percent found at Start. Safe on
// a nil Tuner.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Swap(true) {
		return
	}
	debug.SetGCPercent(t.before)
}
