// Package ttlcache keeps per-app values (an app, its providers, its message
// overrides) for a moment, so the hot paths do not read them on every
// request. A change made through this process forgets the key at once;
// another replica's change is seen within the TTL.
package ttlcache

import (
	"sync"
	"time"
)

// maxEntries bounds a cache: past it, everything is dropped and read again.
const maxEntries = 10000

// Cache maps keys to values of type V, each fresh for TTL after it was put.
type Cache[V any] struct {
	ttl time.Duration
	now func() time.Time
	mu  sync.Mutex
	m   map[string]entry[V]
	// gen counts forgets: a value read while one happened may be older
	// than the change that caused it, so it is not kept.
	gen uint64
}

type entry[V any] struct {
	v  V
	at time.Time
}

// New returns an empty cache whose values are fresh for ttl by now.
func New[V any](ttl time.Duration, now func() time.Time) *Cache[V] {
	if now == nil {
		now = time.Now
	}
	return &Cache[V]{ttl: ttl, now: now, m: map[string]entry[V]{}}
}

// Get returns key's value, whether there is one (ok, fresh or not), whether
// it is fresh, and the generation to Put a new read with.
func (c *Cache[V]) Get(key string) (v V, ok, fresh bool, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	return e.v, ok, ok && c.now().Sub(e.at) < c.ttl, c.gen
}

// Put keeps v for key, read at generation gen, unless a key was forgotten
// since (the read may predate that change).
func (c *Cache[V]) Put(key string, v V, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.m) >= maxEntries {
		clear(c.m)
	}
	c.m[key] = entry[V]{v: v, at: c.now()}
}

// Forget drops key, and refuses the Puts of reads begun before.
func (c *Cache[V]) Forget(key string) {
	c.mu.Lock()
	delete(c.m, key)
	c.gen++
	c.mu.Unlock()
}
