package ratelimit

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// benchKeys spreads the load over many buckets, as real traffic would.
func benchKeys() []string {
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "otp-send:ip:10.0." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256)
	}
	return keys
}

func benchAllow(b *testing.B, l Limiter) {
	ctx := context.Background()
	keys := benchKeys()
	r := Rule{100, time.Second}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1)) * 7919
		for pb.Next() {
			if _, err := l.Allow(ctx, keys[i%len(keys)], r); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

func BenchmarkMemoryAllow(b *testing.B) {
	benchAllow(b, NewMemory(nil))
}

func BenchmarkSQLAllow(b *testing.B) {
	for _, kind := range storetest.Kinds(b) {
		b.Run(kind, func(b *testing.B) {
			benchAllow(b, NewSQL(storetest.Open(b, kind), nil))
		})
	}
}
