package ratelimit

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestMemoryBounded(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{t: t0}
	m := NewMemory(clock.Now)
	m.shardCap = 8
	limit := 8 * memShards

	// A bucket that is throttling someone: its expiry is two hours away.
	victim := Rule{1, time.Hour}
	if res, _ := m.Allow(ctx, "victim", victim); !res.Allowed {
		t.Fatalf("first Allow(victim) = %+v; want allowed", res)
	}
	// A flood of fresh keys, each soon to expire, must not reset it.
	for i := range 20 * limit {
		if res, _ := m.Allow(ctx, fmt.Sprintf("flood-%d", i), Rule{1, time.Second}); !res.Allowed {
			t.Fatalf("Allow(flood-%d) = %+v; want allowed", i, res)
		}
		if n := m.len(); n > limit {
			t.Fatalf("after %d keys len = %d; want <= %d", i+1, n, limit)
		}
	}
	res, _ := m.Allow(ctx, "victim", victim)
	if want := (Result{RetryAfter: time.Hour}); res != want {
		t.Fatalf("Allow(victim) after flood = %+v; want %+v", res, want)
	}
}

func TestMakeRoom(t *testing.T) {
	const now = 1_000_000
	tests := []struct {
		name     string
		expires  map[string]int64 // key -> expires (ms)
		capacity int
		want     []string
	}{
		{
			name:     "expired go first, live ones stay",
			expires:  map[string]int64{"x1": now - 1, "x2": now - 500, "x3": now - 10_000, "l1": now, "l2": now + 1, "l3": now + 50, "l4": now + 9, "l5": now + 7},
			capacity: 8,
			want:     []string{"l1", "l2", "l3", "l4", "l5"},
		},
		{
			name:     "all live: the soonest to expire go, down to three quarters",
			expires:  map[string]int64{"a": now + 8, "b": now + 1, "c": now + 7, "d": now + 2, "e": now + 6, "f": now + 3, "g": now + 5, "h": now + 4},
			capacity: 8,
			want:     []string{"a", "c", "e", "f", "g", "h"},
		},
		{
			name:     "few expired: still frees a quarter",
			expires:  map[string]int64{"x": now - 1, "a": now + 8, "b": now + 1, "c": now + 7, "d": now + 2, "e": now + 6, "f": now + 3, "g": now + 5},
			capacity: 8,
			want:     []string{"a", "c", "e", "f", "g", "d"},
		},
	}
	for _, tt := range tests {
		sh := &memShard{buckets: map[string]memBucket{}}
		for k, e := range tt.expires {
			sh.buckets[k] = memBucket{tat: e - 1000, expires: e}
		}
		sh.makeRoom(now, tt.capacity)
		var got []string
		for k := range sh.buckets {
			got = append(got, k)
		}
		slices.Sort(got)
		want := slices.Clone(tt.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: makeRoom left %v; want %v", tt.name, got, want)
		}
	}
}
