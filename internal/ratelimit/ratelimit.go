// Package ratelimit limits how often an event may happen per key, with the
// generic cell rate algorithm (GCRA): a bucket of Limit events that refills
// evenly over Period, stored as one "theoretical arrival time" per key.
//
// Two backends give identical answers for the same sequence of calls:
//
//   - Memory keeps buckets in this process. Use it on a single node (the
//     embedded SQLite setup, or one replica): it costs no database work.
//   - SQL keeps buckets in the rate_limits table, one upsert per call. Use it
//     when several replicas share PostgreSQL, so that every replica sees the
//     same count (security.md R-RL-1); call Prune periodically.
//
// Callers build the keys ("otp-send:ip:1.2.3.4") and keep separate buckets
// per identifier and per client IP; a refusal maps to HTTP 429 with a coarse
// Retry-After from RetryAfterSeconds.
package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxLimit bounds Rule.Limit in ParseRule, far above any sane rule, so that
// the burst window cannot overflow.
const maxLimit = 1_000_000_000

// Rule is a limit: Limit events per Period, all of which may come at once
// (burst = Limit). The zero Rule is disabled.
type Rule struct {
	Limit  int
	Period time.Duration
}

// ParseRule parses "5/10m", "30/1h", "1/1s" (a count, a slash and a Go
// duration of whole milliseconds); "off" or "0" disables (Rule{} with
// Disabled()==true).
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") || s == "0" {
		return Rule{}, nil
	}
	count, period, ok := strings.Cut(s, "/")
	if !ok {
		return Rule{}, fmt.Errorf("ratelimit: parse rule %q: want LIMIT/PERIOD such as 5/10m, or off", s)
	}
	limit, err := strconv.Atoi(strings.TrimSpace(count))
	if err != nil {
		return Rule{}, fmt.Errorf("ratelimit: parse rule %q: limit: %w", s, err)
	}
	if limit < 1 || limit > maxLimit {
		// A limit of 0 would block every request; "off" says what is meant.
		return Rule{}, fmt.Errorf("ratelimit: parse rule %q: limit must be 1..%d (use off to disable)", s, maxLimit)
	}
	d, err := time.ParseDuration(strings.TrimSpace(period))
	if err != nil {
		return Rule{}, fmt.Errorf("ratelimit: parse rule %q: period: %w", s, err)
	}
	if d < time.Millisecond || d%time.Millisecond != 0 {
		// Buckets are kept in whole milliseconds on every backend.
		return Rule{}, fmt.Errorf("ratelimit: parse rule %q: period must be a positive whole number of milliseconds", s)
	}
	return Rule{Limit: limit, Period: d}, nil
}

// Disabled reports whether r lets everything through.
func (r Rule) Disabled() bool { return r.Limit <= 0 || r.Period <= 0 }

// String formats r the way ParseRule reads it.
func (r Rule) String() string {
	if r.Disabled() {
		return "off"
	}
	p := r.Period
	var ps string
	switch {
	case p%time.Hour == 0:
		ps = strconv.FormatInt(int64(p/time.Hour), 10) + "h"
	case p%time.Minute == 0:
		ps = strconv.FormatInt(int64(p/time.Minute), 10) + "m"
	case p%time.Second == 0:
		ps = strconv.FormatInt(int64(p/time.Second), 10) + "s"
	default:
		ps = p.String()
	}
	return strconv.Itoa(r.Limit) + "/" + ps
}

// window returns the emission interval and burst window in ms. The interval
// is rounded up so that rounding never lets more than Limit events through
// per Period; both backends use these same numbers.
func (r Rule) window() (intervalMs, burstMs int64) {
	limit := int64(r.Limit)
	interval := max((r.Period.Milliseconds()+limit-1)/limit, 1)
	return interval, interval * limit
}

// Result of one step.
type Result struct {
	Allowed bool
	// RetryAfter is how long until the next event would be allowed; zero when allowed.
	RetryAfter time.Duration
}

// Limiter takes one event from a named bucket. Keys are built by callers
// (e.g. "otp-send:ip:1.2.3.4").
type Limiter interface {
	Allow(ctx context.Context, key string, r Rule) (Result, error)
	// Return gives back an event Allow took: a budget of failures takes
	// one before each attempt is judged (so parallel attempts cannot
	// overspend it) and returns it when the attempt succeeds.
	Return(ctx context.Context, key string, r Rule) error
}

// RetryAfterSeconds rounds up to whole seconds, at least 1, for the
// Retry-After header (coarse, as the security bar asks).
func RetryAfterSeconds(d time.Duration) int {
	s := d / time.Second
	if d%time.Second > 0 {
		s++
	}
	return int(max(s, 1))
}
