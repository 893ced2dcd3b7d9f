package webhook_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
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

// BenchmarkDeliveryBacklog queues b.N events for each of two apps with eight
// endpoints each (16·b.N deliveries) on a system that works no jobs, then
// starts a replica that does, and measures until every delivery is made: the
// rate at which a backlog drains, where the per-app and per-endpoint shares of
// the workers bind.
func BenchmarkDeliveryBacklog(b *testing.B) {
	for _, kind := range storetest.Kinds(b) {
		b.Run(kind, func(b *testing.B) {
			e := newEnvOn(b, kind, envOptions{})
			rc := newReceiver(b, nil)
			const endpoints = 8
			apps := []string{e.app.ID, e.newApp(b, "Beta Store").ID}
			for _, app := range apps {
				for i := range endpoints {
					e.endpoint(b, app, fmt.Sprintf("%s/%s/%d", rc.url(), app, i), nil)
				}
			}
			for i := range b.N {
				for _, app := range apps {
					e.createUser(b, app, appuser.CreateInput{Email: fmt.Sprintf("u%d@example.com", i)})
				}
			}
			want := b.N * endpoints * len(apps)
			ctx := context.Background()

			b.ResetTimer()
			start := time.Now()
			servertest.New(b, kind, servertest.Options{Peer: e.System, Serve: true, RealClock: true})
			eventuallyWithin(b, time.Duration(want)*time.Second+10*time.Second, "every delivery", func() bool {
				n := 0
				for _, app := range apps {
					counts, err := e.DB.CountDeliveriesByStatus(ctx, app)
					if err != nil {
						b.Fatal(err)
					}
					n += counts[store.DeliveryDelivered]
				}
				return n == want
			})
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(want)/elapsed.Seconds(), "deliveries/s")
			if n := rc.count(); n != want {
				b.Errorf("receiver got %d requests; want %d", n, want)
			}
		})
	}
}
