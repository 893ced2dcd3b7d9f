package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// BenchmarkDeliveryThroughput emits b.N events, each in its own transaction,
// to one endpoint that answers 204, and measures until all are delivered.
func BenchmarkDeliveryThroughput(b *testing.B) {
	for _, kind := range storetest.Kinds(b) {
		b.Run(kind, func(b *testing.B) {
			db := storetest.Open(b, kind)
			e := newEnv(b, db, envOptions{})
			rc := newReceiver(b, nil)
			e.endpoint(b, e.appID, rc.url(), nil)
			data := map[string]any{"user": map[string]any{"id": "u-1", "email": "ada@example.com"}}
			ctx := context.Background()

			b.ResetTimer()
			start := time.Now()
			for range b.N {
				e.emit(b, e.appID, webhook.UserCreated, data)
			}
			eventuallyWithin(b, time.Duration(b.N)*time.Second+10*time.Second, "every delivery", func() bool {
				counts, err := db.CountDeliveriesByStatus(ctx, e.appID)
				if err != nil {
					b.Fatal(err)
				}
				return counts[store.DeliveryDelivered] == b.N
			})
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
			if n := rc.count(); n != b.N {
				b.Errorf("receiver got %d requests; want %d", n, b.N)
			}
		})
	}
}
