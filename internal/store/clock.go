package store

import "time"

// Clock is a service's injectable clock (its Deps.Now); nil is time.Now.
// The services read the time through it, so the fallback and the shape of
// "now" live here once.
type Clock func() time.Time

// Read is the time now as the clock gives it: for expiry checks and
// durations, which need no rounding.
func (c Clock) Read() time.Time {
	if c == nil {
		return time.Now()
	}
	return c()
}

// Now is the time now as the store keeps times: UTC, to the microsecond
// (PostgreSQL's precision), so a time a service writes reads back equal.
func (c Clock) Now() time.Time { return ts(c.Read()) }
