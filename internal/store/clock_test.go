package store_test

import (
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestClock: a nil clock is the system's; Now is UTC to the microsecond,
// Read as given.
func TestClock(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 30, 0, 123456789, time.FixedZone("CET", 3600))
	c := store.Clock(func() time.Time { return at })
	if got, want := c.Now(), time.Date(2026, 11, 28, 8, 30, 0, 123456000, time.UTC); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("Now() = %v; want %v in UTC", got, want)
	}
	if got := c.Read(); got != at {
		t.Errorf("Read() = %v; want %v as given", got, at)
	}
	var none store.Clock
	before := time.Now().Add(-time.Second)
	if got := none.Now(); got.Before(before) || got.Location() != time.UTC || got.Nanosecond()%1000 != 0 {
		t.Errorf("nil Clock Now() = %v; want the system's time, UTC, to the microsecond", got)
	}
}
