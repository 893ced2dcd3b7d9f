package chaos

import (
	"context"
	"database/sql"
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/e2e/gatehousebin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// lastAttemptKills is how many times the one delivery is cut off: once more
// than the spare runs River once had beyond a delivery's own attempts (3),
// after which River discarded the job and left the delivery processing for
// good.
const lastAttemptKills = 4

// TestChaosLastAttemptKilledAgain kills the server during the only attempt a
// delivery is allowed (retry_limit 0), then during every attempt the
// restarts make after it, four times in a row. A crash-looping server must
// still deliver the event once it stays up: the delivery never stays
// processing (R-REL-2; checklist 70), where it could not even be redelivered.
func TestChaosLastAttemptKilledAgain(t *testing.T) {
	chaosKills(t)
	t.Parallel()
	for _, kind := range []string{store.SQLite, store.Postgres} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var dbURL string
			if kind == store.Postgres {
				dbURL = storetest.EmptyPostgresURL(t)
			}
			testLastAttemptKilledAgain(t, dbURL)
		})
	}
}

func testLastAttemptKilledAgain(t *testing.T, dbURL string) {
	dir := t.TempDir()
	env := environ(dbURL)
	rcv := newReceiver(t, 1)
	c := newCluster(t, bin, []string{"serve", "--dev", "--data-dir", dir, "--addr", "127.0.0.1:0"}, env)
	p := c.start()
	db := openDB(t, dbURL, dir)
	b := readBootstrap(t, dir)
	base, appID, secret := p.Base, b.AppID, b.APISecret
	st, body := call(t, "POST", base+"/v1/apps/"+appID+"/webhooks", "Bearer "+secret,
		map[string]any{"webhook": map[string]any{"url": rcv.url(lastTry), "retry_limit": 0, "event_types": []string{"user.created"}}})
	if st != http.StatusOK {
		t.Fatalf("create webhook = %d %v", st, body)
	}
	rcv.setSecret(lastTry, str(body, "webhook", "secret"))
	rcv.hold(true)
	if st, body := call(t, "POST", base+"/v1/"+appID+"/users", "Bearer "+secret, map[string]any{"identifier": "again@chaos.test"}); st != http.StatusOK {
		t.Fatalf("create user = %d %v", st, body)
	}

	for i := range lastAttemptKills {
		// The first attempt runs at once; each later one only once the job
		// cut off before it is rescued, webhooks.rescue_after after it began.
		deadline := time.Now().Add(3 * time.Minute)
		for n := 0; rcv.inFlight() == 0; n++ {
			if n%100 == 0 {
				// River gives up on a job whose runs were all cut off: the
				// delivery would stay processing for good.
				if jobs := jobStates(db); jobs["webhook_delivery discarded"] > 0 || time.Now().After(deadline) {
					t.Fatalf("after %d kills the delivery is not attempted again; queue jobs: %v", i, jobs)
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		c.kill(p)
		t.Logf("kill %d/%d: during the delivery's attempt", i+1, lastAttemptKills)
		for rcv.inFlight() > 0 {
			time.Sleep(10 * time.Millisecond) // the receiver notices its sender went away
		}
		if i == lastAttemptKills-1 {
			rcv.hold(false)
		}
		p = c.start()
	}

	var status string
	var attempts int
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := db.QueryRowContext(context.Background(), `SELECT status, attempts FROM webhook_deliveries`).Scan(&status, &attempts)
		if err != nil && err != sql.ErrNoRows {
			t.Fatal(err)
		}
		if status == "delivered" {
			break
		}
		if jobs := jobStates(db); jobs["webhook_delivery discarded"] > 0 || time.Now().After(deadline) {
			t.Fatalf("after the last restart the delivery stays %s after %d attempts; queue jobs: %v; log's end:\n%s",
				status, attempts, jobs, gatehousebin.Tail(p.Log(), 30))
		}
		time.Sleep(250 * time.Millisecond)
	}
	receipts, bad := rcv.receipts()
	if len(bad) != 0 {
		t.Errorf("the receiver refused requests: %v", bad)
	}
	if len(receipts[lastTry]) != 1 {
		t.Errorf("the receiver got %d events; want the one", len(receipts[lastTry]))
	}
	for id, list := range receipts[lastTry] {
		if !accepted(list) {
			t.Errorf("event %s never accepted (%d requests)", id, len(list))
		}
	}
	t.Logf("delivered after %d attempts (%d cut off)", attempts, lastAttemptKills)
	c.stop(p)
}
