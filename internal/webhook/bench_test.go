package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// BenchmarkDeliveryThroughput sends b.N test events, each in its own
// transaction, to one endpoint that answers 204 through the served system,
// and measures until all are delivered.
func BenchmarkDeliveryThroughput(b *testing.B) {
	for _, kind := range storetest.Kinds(b) {
		b.Run(kind, func(b *testing.B) {
			e := newEnvOn(b, kind, envOptions{serve: true})
			rc := newReceiver(b, nil)
			ep := e.endpoint(b, e.app.ID, rc.url(), nil)
			ctx := context.Background()

			b.ResetTimer()
			start := time.Now()
			for range b.N {
				e.test(b, e.app.ID, ep.ID)
			}
			eventuallyWithin(b, time.Duration(b.N)*time.Second+10*time.Second, "every delivery", func() bool {
				counts, err := e.DB.CountDeliveriesByStatus(ctx, e.app.ID)
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
