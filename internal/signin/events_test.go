package signin_test

import (
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/gatehouse-auth/gatehouse/internal/queue"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// TestEvents checks that sign-in emits its webhook events where things
// happen, in the transactions of the changes: requested and verified for
// codes and links, auth.login.failed for wrong codes and spent links, failed
// for the fifth wrong code, expired from the sweep.
func TestEvents(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		if err := queue.Migrate(ctx, db, nil); err != nil {
			t.Fatalf("queue.Migrate: %v", err)
		}
		workers := river.NewWorkers()
		river.AddWorker(workers, webhook.NewWorker(webhook.WorkerDeps{DB: db}))
		q, err := queue.New(db, queue.Config{Workers: workers}) // insert-only: nothing is sent
		if err != nil {
			t.Fatal(err)
		}
		emitter := webhook.NewEmitter(q, nil)
		e := newEnv(t, db, func(c *config) { c.events = emitter })

		key, err := token.DeriveKey(make([]byte, 32), "seal")
		if err != nil {
			t.Fatal(err)
		}
		sealer, err := token.NewSealer(key)
		if err != nil {
			t.Fatal(err)
		}
		hooks := webhook.NewService(db, sealer, webhook.Policy{AllowPrivate: true}, emitter, nil)
		url := "http://127.0.0.1:9/hook"
		ep, err := hooks.Create(ctx, e.app.ID, webhook.Input{URL: &url})
		if err != nil {
			t.Fatalf("Create endpoint: %v", err)
		}

		// A magic link, opened, then opened again.
		_, tok := e.sendLink(t, "link@example.com", false)
		if _, err := e.svc.AuthenticateMagicLink(e.ctx, e.app, tok, e.client); err != nil {
			t.Fatalf("AuthenticateMagicLink: %v", err)
		}
		if _, err := e.svc.AuthenticateMagicLink(e.ctx, e.app, tok, e.client); err == nil {
			t.Fatal("a spent link signed in again")
		}
		// Five wrong codes fail a challenge.
		res, _ := e.sendCode(t, "codes@example.com")
		for range 5 {
			_, _ = e.svc.VerifyOTP(e.ctx, e.app, res.UserID, "000000", e.client)
		}
		// A code nobody enters expires.
		e.sendCode(t, "late@example.com")
		e.clock.Advance(11 * time.Minute)
		if err := e.svc.ExpireChallenges(e.ctx); err != nil {
			t.Fatalf("ExpireChallenges: %v", err)
		}

		page, err := hooks.Deliveries(ctx, e.app.ID, ep.ID, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, d := range page.Deliveries {
			got[d.EventType]++
		}
		want := map[string]int{
			webhook.UserCreated: 3,
			webhook.Verification("email", webhook.OutcomeRequested): 3,
			webhook.Verification("email", webhook.OutcomeVerified):  1,
			webhook.Verification("email", webhook.OutcomeFailed):    1,
			webhook.Verification("email", webhook.OutcomeExpired):   1,
			webhook.AuthLoginFailed:                                 6, // five wrong codes and one spent link
		}
		for typ, n := range want {
			if got[typ] != n {
				t.Errorf("%s events = %d; want %d (all: %v)", typ, got[typ], n, got)
			}
		}
	})
}
