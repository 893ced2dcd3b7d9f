package console

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// The home page's counts (users, live sessions, sign-ins of the last seven
// days) read every session of an app: 50–130 ms at 100 000 users
// (docs/performance.md). So a page never waits for one: the counts are made
// by one background loop (RunCounts), a view shows the last ones it has and
// asks for new ones when they are older than ActivityTTL, and an app counted
// for the first time is shown as "counting" until they arrive (the page
// fetches them with htmx, or on its next load). One loop also bounds what
// operators' page views can cost the database: one count at a time.

// AppCounts are an app's figures on the console's home page.
type AppCounts = store.AppCounts

// Activity is an app's counts and when they were made; the zero value
// (At zero) means they are being made. Failed: the last count failed (the
// database answered an error or took longer than countTimeout); it is
// tried again when a view finds it older than ActivityTTL.
type Activity struct {
	AppCounts
	At     time.Time
	Failed bool
}

// Counted reports whether the counts are known.
func (a Activity) Counted() bool { return !a.At.IsZero() }

const (
	// countQueue bounds the apps waiting to be counted; a view that finds
	// it full asks again next time.
	countQueue = 256
	// countTimeout bounds one count.
	countTimeout = 30 * time.Second
	// maxCounted bounds the apps whose counts are kept (past it the
	// oldest-kept are dropped and counted again when viewed).
	maxCounted = 10000
)

type counter struct {
	queue chan string

	mu      sync.Mutex
	known   map[string]Activity
	pending map[string]chan struct{} // closed when that app's count ends
}

func newCounter() counter {
	return counter{queue: make(chan string, countQueue), known: map[string]Activity{}, pending: map[string]chan struct{}{}}
}

// ask queues appID's count unless it is queued already, and returns what
// closes when it ends (nil when the queue is full).
func (c *counter) ask(appID string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if done, ok := c.pending[appID]; ok {
		return done
	}
	done := make(chan struct{})
	select {
	case c.queue <- appID:
		c.pending[appID] = done
		return done
	default:
		return nil
	}
}

func (c *counter) get(appID string) Activity {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.known[appID]
}

// put keeps a count (or, with ok false, only ends the wait for it).
func (c *counter) put(appID string, a Activity, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		if _, had := c.known[appID]; !had && len(c.known) >= maxCounted {
			clear(c.known)
		}
		c.known[appID] = a
	}
	if done, ok := c.pending[appID]; ok {
		close(done)
		delete(c.pending, appID)
	}
}

// RunCounts makes the counts views ask for, one app at a time, until ctx
// ends. The server runs it with its other loops, logging to log.
func (s *Service) RunCounts(ctx context.Context, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case appID := <-s.counts.queue:
			cctx, cancel := context.WithTimeout(ctx, countTimeout)
			now := s.now.Now()
			c, err := s.db.CountAppActivity(cctx, appID, now, now.Add(-7*24*time.Hour))
			cancel()
			if err != nil && ctx.Err() != nil {
				s.counts.put(appID, Activity{}, false)
				return
			}
			// A failure is kept as one, so views do not ask again (which
			// would have the loop count it back to back) before ActivityTTL.
			if err != nil {
				log.Warn("console: an app's counts failed; shown as unavailable for a minute", "app_id", appID, "err", err)
			}
			s.counts.put(appID, Activity{AppCounts: c, At: now, Failed: err != nil}, true)
		}
	}
}

// AppActivity returns the counts of the apps in appIDs that a principal
// may read, waiting at most wait (and not past ctx) for those never
// counted; counts older than ActivityTTL are shown while new ones are
// made. An app whose counts are not there by then has a zero Activity.
func (s *Service) AppActivity(ctx context.Context, p access.Principal, appIDs []string, wait time.Duration) (map[string]Activity, error) {
	out := make(map[string]Activity, len(appIDs))
	var waits []<-chan struct{}
	now := s.now.Now()
	for _, id := range appIDs {
		if err := access.App(ctx, s.db.Queries, p, id, access.Read); err != nil {
			return nil, err
		}
		a := s.counts.get(id)
		out[id] = a
		if a.Counted() && now.Sub(a.At) < ActivityTTL {
			continue
		}
		if done := s.counts.ask(id); done != nil && !a.Counted() {
			waits = append(waits, done)
		}
	}
	if len(waits) == 0 {
		return out, nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for _, done := range waits {
		select {
		case <-done:
		case <-timer.C:
			return s.collect(out), nil
		case <-ctx.Done():
			return s.collect(out), nil
		}
	}
	return s.collect(out), nil
}

// collect fills in the counts that arrived while AppActivity waited.
func (s *Service) collect(out map[string]Activity) map[string]Activity {
	for id, a := range out {
		if !a.Counted() {
			out[id] = s.counts.get(id)
		}
	}
	return out
}
