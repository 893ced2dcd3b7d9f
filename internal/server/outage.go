package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// dbWatch keeps a database outage to two log lines: a WARN when background
// work (the job queue, the job rescue, the signing-key reload) fails, or a
// request fails because the database is unavailable, and a probe finds that
// the database does not answer, and an INFO when it answers again (requests
// that run out of time meanwhile are left out too: whileDown). In between, that work's warnings and errors, which would repeat
// with every poll (the messages queue polls every few milliseconds) and
// every request, are left out of the log and counted (log_lines_left_out
// on the INFO line). /metrics still counts every failed request.
//
// A warning that comes while the database is thought up is held until a
// probe decides: passed on if the database answers (it was about something
// else), left out if not. The probe runs on the watch's own goroutine, never
// in the logging call: the caller may hold the connection the probe needs
// (SQLite has one writer).
type dbWatch struct {
	probe func(context.Context) error
	log   *slog.Logger
	kick  chan struct{}
	now   func() time.Time // real time: the outage is the operator's

	mu      sync.Mutex
	running bool // run is watching; otherwise every record passes
	state   watchState
	since   time.Time       // when the outage began
	okAt    time.Time       // when a probe last found the database up
	trusted map[string]bool // messages passed on since okAt, trusting that probe
	held    []heldRecord
	left    int // records left out during this outage (or overflowing held)
}

type watchState int

const (
	dbUp watchState = iota
	dbSuspect
	dbDown
)

type heldRecord struct {
	next slog.Handler
	ctx  context.Context
	r    slog.Record
}

const (
	// probeTimeout bounds one probe: a database that takes longer to begin
	// a transaction is as good as down for background work.
	probeTimeout = 3 * time.Second
	// probeEvery is how often a probe looks whether the database is back.
	probeEvery = time.Second
	// trustProbe is how long a probe that found the database up is trusted:
	// warnings within it pass at once (a burst of unrelated errors probes
	// at most once a second).
	trustProbe = time.Second
	// maxHeld bounds the records held while a probe decides.
	maxHeld = 100
)

func newDBWatch(probe func(context.Context) error, log *slog.Logger) *dbWatch {
	return &dbWatch{probe: probe, log: log, kick: make(chan struct{}, 1), now: time.Now}
}

// filter wraps h: its warnings and errors go through the watch.
func (w *dbWatch) filter(h slog.Handler) slog.Handler { return outageFilter{h, w} }

// whileDown wraps h: its warnings and errors are left out (and counted)
// while the watch knows the database is down, and pass at once otherwise;
// they never start a probe. For failures that are no sign of an outage by
// themselves (a request that ran out of time: contention, a slow
// statement) but repeat with every request during one.
func (w *dbWatch) whileDown(h slog.Handler) slog.Handler { return downFilter{h, w} }

// run watches until ctx ends: it probes when a warning comes while the
// database is thought up, and every probeEvery while it is down.
func (w *dbWatch) run(ctx context.Context) {
	w.mu.Lock()
	w.running = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.running = false
		held := w.held
		w.held = nil
		if w.state == dbSuspect {
			w.state = dbUp
		}
		w.mu.Unlock()
		pass(held)
	}()
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		case <-t.C:
			w.mu.Lock()
			down := w.state == dbDown
			w.mu.Unlock()
			if !down {
				continue
			}
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := w.probe(pctx)
		if err != nil && pctx.Err() != nil {
			err = fmt.Errorf("no transaction could begin within %s", probeTimeout)
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		w.verdict(err)
	}
}

// verdict records what a probe found and logs a change.
func (w *dbWatch) verdict(err error) {
	w.mu.Lock()
	held := w.held
	w.held = nil
	prev, since, left := w.state, w.since, w.left
	if err == nil {
		w.state, w.okAt, w.left, w.trusted = dbUp, w.now(), 0, map[string]bool{}
	} else if prev != dbDown {
		w.state, w.since = dbDown, w.now()
		w.left += len(held)
	}
	w.mu.Unlock()
	switch {
	case err == nil && prev == dbDown:
		w.log.Info("database reachable again; background jobs resume",
			"unreachable_for", w.now().Sub(since).Round(time.Second).String(), "log_lines_left_out", left)
	case err == nil:
		pass(held)
		if left > 0 {
			w.log.Warn("background work logged more warnings than were kept while the database was checked", "left_out", left)
		}
	case prev != dbDown:
		w.log.Warn("database unreachable: requests that need it fail with 503, background jobs wait and retry; their errors are left out of the log until it answers again",
			"err", err)
	}
}

// hold reports whether the watch takes the record (held or left out)
// instead of it being logged now.
func (w *dbWatch) hold(next slog.Handler, ctx context.Context, r slog.Record) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.running {
		return false
	}
	switch w.state {
	case dbDown:
		w.left++
		return true
	case dbUp:
		// Within trustProbe a warning passes at once, but one that repeats
		// (a poll failing again) asks for a probe: an outage that begins
		// just after a probe found the database up is not let through.
		if w.now().Sub(w.okAt) < trustProbe && !w.trusted[r.Message] {
			if w.trusted == nil {
				w.trusted = map[string]bool{}
			}
			w.trusted[r.Message] = true
			return false
		}
		w.state = dbSuspect
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	if len(w.held) < maxHeld {
		w.held = append(w.held, heldRecord{next, ctx, r.Clone()})
	} else {
		w.left++
	}
	return true
}

func pass(held []heldRecord) {
	for _, h := range held {
		_ = h.next.Handle(h.ctx, h.r)
	}
}

// outageFilter sends the warnings and errors of background work through a
// dbWatch.
type outageFilter struct {
	next slog.Handler
	w    *dbWatch
}

func (f outageFilter) Enabled(ctx context.Context, l slog.Level) bool { return f.next.Enabled(ctx, l) }

func (f outageFilter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && f.w.hold(f.next, ctx, r) {
		return nil
	}
	return f.next.Handle(ctx, r)
}

func (f outageFilter) WithAttrs(a []slog.Attr) slog.Handler {
	return outageFilter{f.next.WithAttrs(a), f.w}
}

func (f outageFilter) WithGroup(n string) slog.Handler {
	return outageFilter{f.next.WithGroup(n), f.w}
}

// downFilter leaves out warnings and errors while the database is down.
type downFilter struct {
	next slog.Handler
	w    *dbWatch
}

func (f downFilter) Enabled(ctx context.Context, l slog.Level) bool { return f.next.Enabled(ctx, l) }

func (f downFilter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		f.w.mu.Lock()
		down := f.w.running && f.w.state == dbDown
		if down {
			f.w.left++
		}
		f.w.mu.Unlock()
		if down {
			return nil
		}
	}
	return f.next.Handle(ctx, r)
}

func (f downFilter) WithAttrs(a []slog.Attr) slog.Handler {
	return downFilter{f.next.WithAttrs(a), f.w}
}

func (f downFilter) WithGroup(n string) slog.Handler { return downFilter{f.next.WithGroup(n), f.w} }
