// Package gctune gives the Go garbage collector a floor of headroom. With
// the runtime's default (GOGC=100) a collection starts when the heap has
// grown by as much as the collector had to scan after the last one;
// Gatehouse keeps little alive (tens of MB) and allocates on every request,
// so under load it collected several times a second (docs/performance.md).
// After each collection the tuner sets the next goal to at least headroom
// bytes above the live heap: once what the collector scans (live heap,
// goroutine stacks, globals) exceeds headroom it changes nothing (GOGC=100);
// below that the heap may grow by headroom before the next collection.
// GOMEMLIMIT, when set, still caps the heap.
//
// It re-arms itself from a finalizer, which runs once per collection: no
// goroutine and no timer, so an idle server does no work for it.
//
// The GC percent belongs to the whole process, so there is one tuner per
// process: Start while one runs shares it (tests start several servers in
// one process), and the percent found before the first Start comes back
// when the last one Stops.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Handle is one Start's share of the process's tuner; Stop releases it.
type Handle struct {
	once sync.Once
}

var (
	mu       sync.Mutex // guards the fields below and serialises adjust with stop
	users    int        // Handles not yet stopped
	running  *tuner
	observer func(percent int) // tests: receives each percent set
)

type tuner struct {
	headroom uint64
	before   int // the GC percent before the first Start
	stopped  bool
	sample   []metrics.Sample
}

// Start keeps at least headroom bytes of heap growth between collections.
// It returns nil, changing nothing, when headroom is 0 or when the GOGC
// environment variable is set (the operator chose the collector's pace).
// While a tuner runs, Start shares it (the larger headroom applies).
func Start(headroom uint64) *Handle {
	if _, set := os.LookupEnv("GOGC"); set || headroom == 0 {
		return nil
	}
	return start(headroom)
}

func start(headroom uint64) *Handle {
	mu.Lock()
	users++
	t := running
	if t == nil {
		t = &tuner{headroom: headroom, before: CurrentPercent(), sample: []metrics.Sample{
			{Name: "/gc/heap/live:bytes"}, // first: adjustLocked reads it as the live heap
			{Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}}
		running = t
		defer t.arm()
	}
	t.headroom = max(t.headroom, headroom)
	t.adjustLocked()
	mu.Unlock()
	return &Handle{}
}

// Stop releases this share; the last one ends the tuner and restores the
// GC percent found before the first Start. Safe on a nil Handle and twice.
func (h *Handle) Stop() {
	if h == nil {
		return
	}
	h.once.Do(func() {
		mu.Lock()
		defer mu.Unlock()
		if users--; users > 0 || running == nil {
			return
		}
		running.stopped = true
		debug.SetGCPercent(running.before)
		running = nil
	})
}

// sentinel is what the finalizer hangs on: one object per collection. It
// holds a pointer so that it is not a tiny allocation, whose finalizer
// may never run.
type sentinel struct{ t *tuner }

func (t *tuner) arm() {
	runtime.SetFinalizer(&sentinel{t: t}, func(s *sentinel) {
		mu.Lock()
		defer mu.Unlock()
		if s.t.stopped {
			return
		}
		s.t.adjustLocked()
		s.t.arm()
	})
}

// Percent is the GC percent that keeps headroom between a live heap of
// live bytes and the next goal, given what the collector scans (scanned:
// the live heap plus goroutine stacks and globals; the goal is live +
// scanned × percent/100). Never below 100, the runtime's default, and never
// so high that the runtime's minimum heap (4 MiB × percent/100, which a
// goal never goes under) passes live + headroom, as it would over the tiny
// heap of a starting or idle process.
func Percent(live, scanned, headroom uint64) int {
	if scanned == 0 || headroom <= scanned {
		return 100
	}
	const minHeap = 4 << 20 // the runtime's heap minimum at GOGC=100
	return int(max(min(headroom*100/scanned, (live+headroom)*100/minHeap), 100))
}

func (t *tuner) adjustLocked() {
	metrics.Read(t.sample)
	var live, scanned uint64
	for i, s := range t.sample {
		if s.Value.Kind() == metrics.KindUint64 {
			scanned += s.Value.Uint64()
			if i == 0 {
				live = s.Value.Uint64()
			}
		}
	}
	p := Percent(live, scanned, t.headroom)
	debug.SetGCPercent(p)
	if observer != nil {
		observer(p)
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
