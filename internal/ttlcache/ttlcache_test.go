package ttlcache

import (
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	c := New[string](2*time.Second, func() time.Time { return now })

	if _, ok, fresh, _ := c.Get("a"); ok || fresh {
		t.Fatal("empty cache has a value")
	}
	_, _, _, gen := c.Get("a")
	c.Put("a", "one", gen)
	if v, ok, fresh, _ := c.Get("a"); v != "one" || !ok || !fresh {
		t.Errorf("Get after Put = %q, %v, %v; want one, fresh", v, ok, fresh)
	}
	now = now.Add(2 * time.Second)
	if v, ok, fresh, _ := c.Get("a"); v != "one" || !ok || fresh {
		t.Errorf("Get after the TTL = %q, %v, %v; want the stale value, not fresh", v, ok, fresh)
	}

	// A read begun before a Forget is not kept: it may predate the change.
	_, _, _, gen = c.Get("b")
	c.Forget("a")
	c.Put("b", "old", gen)
	if _, ok, _, _ := c.Get("b"); ok {
		t.Error("Put with a generation from before a Forget was kept")
	}
	if _, ok, _, _ := c.Get("a"); ok {
		t.Error("Forget kept the value")
	}
	_, _, _, gen = c.Get("b")
	c.Put("b", "new", gen)
	if v, _, fresh, _ := c.Get("b"); v != "new" || !fresh {
		t.Errorf("Get(b) = %q, %v; want new, fresh", v, fresh)
	}
}

func TestCacheBounded(t *testing.T) {
	c := New[int](time.Minute, nil)
	for i := range maxEntries + 5 {
		_, _, _, gen := c.Get("k")
		c.Put(string(rune('a'+i%26))+itoa(i), i, gen)
	}
	if n := len(c.m); n > maxEntries {
		t.Errorf("%d entries; want at most %d", n, maxEntries)
	}
}

func itoa(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		if i /= 10; i == 0 {
			return string(b)
		}
	}
}
