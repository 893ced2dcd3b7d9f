package ratelimit

import (
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"time"
)

const (
	// memShards spreads keys over independent locks so that parallel
	// requests on different keys rarely wait for each other.
	memShards = 64
	// memMaxEntries bounds the buckets kept in memory (about 100k in all).
	memMaxEntries = 100_000
)

// Memory is an in-process GCRA limiter for a single node.
type Memory struct {
	now      func() time.Time
	seed     maphash.Seed
	shardCap int
	shards   [memShards]memShard
}

type memShard struct {
	mu      sync.Mutex
	buckets map[string]memBucket
}

// memBucket mirrors a rate_limits row: the theoretical arrival time and when
// the bucket may be forgotten, both in unix ms.
type memBucket struct {
	tat, expires int64
}

// NewMemory is an in-process GCRA limiter (single node): a sharded map with
// mutexes, cleaned of expired buckets lazily (bounded memory: cap the map, e.g.
// prune when > 100k entries). A nil now means time.Now.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	m := &Memory{now: now, seed: maphash.MakeSeed(), shardCap: (memMaxEntries + memShards - 1) / memShards}
	for i := range m.shards {
		m.shards[i].buckets = make(map[string]memBucket)
	}
	return m
}

// Allow takes one event from key's bucket under rule r. It never fails.
func (m *Memory) Allow(_ context.Context, key string, r Rule) (Result, error) {
	if r.Disabled() {
		return Result{Allowed: true}, nil
	}
	interval, burst := r.window()
	now := m.now().UnixMilli()
	sh := &m.shards[maphash.String(m.seed, key)%memShards]

	sh.mu.Lock()
	defer sh.mu.Unlock()
	b, found := sh.buckets[key]
	// The same arithmetic as store.TakeRate, so both backends agree.
	base := max(b.tat, now)
	if base+interval-now > burst {
		return Result{RetryAfter: time.Duration(b.tat+interval-burst-now) * time.Millisecond}, nil
	}
	if !found && len(sh.buckets) >= m.shardCap {
		sh.makeRoom(now, m.shardCap)
	}
	tat := base + interval
	sh.buckets[key] = memBucket{tat: tat, expires: tat + burst}
	return Result{Allowed: true}, nil
}

// Return gives back one event taken from key's bucket under rule r. It
// never fails.
func (m *Memory) Return(_ context.Context, key string, r Rule) error {
	if r.Disabled() {
		return nil
	}
	interval, _ := r.window()
	sh := &m.shards[maphash.String(m.seed, key)%memShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if b, ok := sh.buckets[key]; ok {
		// As store.ReturnRate: a tat below now counts as now.
		b.tat -= interval
		sh.buckets[key] = b
	}
	return nil
}

// makeRoom runs when a full shard needs a new bucket. It drops expired
// buckets; if that frees less than a quarter of the shard, it also drops the
// buckets that expire soonest. Those are the nearest to full anyway, so
// dropping them loosens limits the least, while a bucket that is throttling
// someone (far-off expiry) survives a flood of fresh keys. Freeing a quarter
// each time keeps the cost of these sweeps amortised per insert.
func (sh *memShard) makeRoom(now int64, capacity int) {
	for k, b := range sh.buckets {
		if b.expires < now {
			delete(sh.buckets, k)
		}
	}
	target := capacity * 3 / 4
	if len(sh.buckets) <= target {
		return
	}
	type entry struct {
		key     string
		expires int64
	}
	all := make([]entry, 0, len(sh.buckets))
	for k, b := range sh.buckets {
		all = append(all, entry{k, b.expires})
	}
	slices.SortFunc(all, func(a, b entry) int {
		switch {
		case a.expires < b.expires:
			return -1
		case a.expires > b.expires:
			return 1
		}
		return 0
	})
	for _, e := range all[:len(all)-target] {
		delete(sh.buckets, e.key)
	}
}

// len counts the buckets held, for tests.
func (m *Memory) len() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += len(sh.buckets)
		sh.mu.Unlock()
	}
	return n
}
