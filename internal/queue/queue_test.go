package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/gatehouse-auth/gatehouse/internal/queue"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

type probeArgs struct{}

func (probeArgs) Kind() string { return "rescue_probe" }

type probeWorker struct {
	river.WorkerDefaults[probeArgs]
	done chan *river.Job[probeArgs]
}

func (w *probeWorker) Work(_ context.Context, job *river.Job[probeArgs]) error {
	w.done <- job
	return nil
}

// TestRescue: jobs a stopped process left running are made available again
// once they have run for RescueAfter, with an error saying why, and a worker
// then takes them; jobs younger than that, of another queue, or on their
// last attempt are left alone; a second rescue finds nothing.
func TestRescue(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		const after = 20 * time.Second
		ins, err := queue.New(db, queue.Config{RescueAfter: after, Rescue: []string{"rescued"}})
		if err != nil {
			t.Fatal(err)
		}
		// The jobs, told apart by priority; a dead process was working each
		// (attempt, seconds since it began).
		jobs := []struct {
			queue            string
			attempt, ageSecs int
			rescued          bool
		}{
			1: {"rescued", 1, 60, true},
			2: {"rescued", 1, 5, false},  // not yet rescue_after old
			3: {"other", 1, 60, false},   // a queue not rescued
			4: {"rescued", 3, 60, false}, // its last attempt: River's to discard
		}
		for prio := 1; prio < len(jobs); prio++ {
			j := jobs[prio]
			if err := db.Tx(ctx, func(tx *store.Tx) error {
				return ins.InsertTx(ctx, tx, probeArgs{}, &river.InsertOpts{Queue: j.queue, Priority: prio, MaxAttempts: 3})
			}); err != nil {
				t.Fatal(err)
			}
			leaveRunning(t, db, prio, j.attempt, j.ageSecs)
		}

		n, err := ins.Rescue(ctx)
		if err != nil || n != 1 {
			t.Fatalf("Rescue = %d, %v; want 1", n, err)
		}
		for prio := 1; prio < len(jobs); prio++ {
			want := "running"
			if jobs[prio].rescued {
				want = "available"
			}
			if got := state(t, db, prio); got != want {
				t.Errorf("job %d (%+v) is %s after the rescue; want %s", prio, jobs[prio], got, want)
			}
		}
		if n, err := ins.Rescue(ctx); err != nil || n != 0 {
			t.Errorf("second Rescue = %d, %v; want 0", n, err)
		}

		// A worker takes the rescued job at once and sees why it runs again.
		w := &probeWorker{done: make(chan *river.Job[probeArgs], 4)}
		workers := river.NewWorkers()
		river.AddWorker(workers, w)
		q, err := queue.New(db, queue.Config{Workers: workers, RescueAfter: after, Rescue: []string{"rescued"},
			Queues: map[string]int{"rescued": 1}, FetchPollInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_ = q.Stop(sctx)
		}()
		select {
		case job := <-w.done:
			if job.Priority != 1 || job.Attempt != 2 || len(job.Errors) != 1 || job.Errors[0].Attempt != 1 ||
				job.Errors[0].Error != "interrupted: the process working the job stopped" || job.Errors[0].At.IsZero() {
				t.Errorf("rescued job = priority %d, attempt %d, errors %+v; want priority 1, attempt 2, one error for attempt 1 saying why",
					job.Priority, job.Attempt, job.Errors)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the rescued job was not worked within 30 s; it is %s", state(t, db, 1))
		}
	})
}

// leaveRunning puts the job of priority prio in the state a process killed
// while working it leaves: running, on attempt, begun ageSecs ago.
func leaveRunning(t *testing.T, db *store.DB, prio, attempt, ageSecs int) {
	t.Helper()
	ctx := context.Background()
	var err error
	if p := db.Pool(); p != nil {
		_, err = p.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = $2,
			attempted_at = now() - make_interval(secs => $3), attempted_by = ARRAY['dead-client'] WHERE priority = $1`, prio, attempt, ageSecs)
	} else {
		_, err = db.Writer().ExecContext(ctx, `UPDATE river_job SET state = 'running', attempt = ?2,
			attempted_at = strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ?3 || ' seconds'), attempted_by = jsonb('["dead-client"]')
			WHERE priority = ?1`, prio, attempt, ageSecs)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func state(t *testing.T, db *store.DB, prio int) string {
	t.Helper()
	ctx := context.Background()
	var s string
	var err error
	if p := db.Pool(); p != nil {
		err = p.QueryRow(ctx, `SELECT state FROM river_job WHERE priority = $1`, prio).Scan(&s)
	} else {
		err = db.Writer().QueryRowContext(ctx, `SELECT state FROM river_job WHERE priority = ?1`, prio).Scan(&s)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}
