package server

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	sb strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.String()
}

// until polls cond (up to 10 s).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
	}
}

// TestDBWatchPassesWarningsOfAnUpDatabase: a warning of background work
// while the database answers is logged (after the probe), with its
// attributes; one while it does not is left out, and the outage has one
// line each way. Without a running watch (commands, tests without Serve),
// warnings pass at once.
func TestDBWatchPassesWarningsOfAnUpDatabase(t *testing.T) {
	var out syncBuffer
	log := slog.New(slog.NewJSONHandler(&out, nil))
	var down atomic.Bool
	var probes atomic.Int32
	w := newDBWatch(func(context.Context) error {
		probes.Add(1)
		if down.Load() {
			return errors.New("connection refused")
		}
		return nil
	}, log)
	var skew atomic.Int64 // how far the watch's clock is ahead
	w.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	bg := slog.New(w.filter(log.Handler())).With("component", "queue")

	bg.Warn("before the watch runs")
	if !strings.Contains(out.String(), "before the watch runs") {
		t.Fatalf("a warning without a running watch was not logged at once:\n%s", out.String())
	}

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx) }()
	defer func() { stop(); <-done }()
	until(t, "the watch runs", func() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.running })

	bg.Warn("a job appears to be stuck", "job_id", 7)
	until(t, "the warning is logged", func() bool {
		return strings.Contains(out.String(), `"msg":"a job appears to be stuck","component":"queue","job_id":7`)
	})
	if probes.Load() != 1 {
		t.Errorf("%d probes for one warning; want 1", probes.Load())
	}
	bg.Info("routine")
	until(t, "an info line is logged", func() bool { return strings.Contains(out.String(), "routine") })

	down.Store(true)
	skew.Add(int64(trustProbe)) // the last good probe is no longer trusted
	for range 50 {
		bg.Error("producer: Error fetching jobs", "err", "connection refused")
	}
	until(t, "the outage is logged", func() bool { return strings.Contains(out.String(), "database unreachable") })
	for range 50 {
		bg.Error("producer: Error fetching jobs", "err", "connection refused")
	}
	down.Store(false)
	until(t, "the end of the outage is logged", func() bool { return strings.Contains(out.String(), "database reachable again") })
	if n := strings.Count(out.String(), "Error fetching jobs"); n != 0 {
		t.Errorf("%d errors of the outage logged; want none:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), `"log_lines_left_out":100`) {
		t.Errorf("the end of the outage does not count the 100 lines left out:\n%s", out.String())
	}
}

// TestDBWatchRepeatWithinTrustProbes: just after a probe found the database
// up, a new warning passes at once, but the same warning again (a poll
// failing again: an outage that began right after the probe) is held for a
// probe, so the outage still gets its one line and no flood.
func TestDBWatchRepeatWithinTrustProbes(t *testing.T) {
	var out syncBuffer
	log := slog.New(slog.NewJSONHandler(&out, nil))
	var down atomic.Bool
	w := newDBWatch(func(context.Context) error {
		if down.Load() {
			return errors.New("connection refused")
		}
		return nil
	}, log)
	bg := slog.New(w.filter(log.Handler()))
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx) }()
	defer func() { stop(); <-done }()
	until(t, "the watch runs", func() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.running })

	bg.Warn("something unrelated")
	until(t, "the warning is logged", func() bool { return strings.Contains(out.String(), "something unrelated") })
	down.Store(true) // within the second the probe is trusted
	for range 50 {
		bg.Error("producer: Error fetching jobs")
	}
	until(t, "the outage is logged", func() bool { return strings.Contains(out.String(), "database unreachable") })
	if n := strings.Count(out.String(), "Error fetching jobs"); n > 1 {
		t.Errorf("%d errors of the outage logged; want at most the first:\n%s", n, out.String())
	}
}
