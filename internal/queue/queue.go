// Package queue runs durable background jobs (webhook deliveries, expiry
// sweeps) with River on either database. Jobs are inserted in the same
// transaction as the change that causes them, so both commit or neither.
// River's schema is migrated with the store's (store.DB.Migrate).
//
// A Queue built without workers only inserts: the services that enqueue jobs
// hold one, and the workers (which need those services) get their own, built
// after them, so nothing is wired after construction.
package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Config tunes the queue.
type Config struct {
	Workers  *river.Workers
	Periodic []*river.PeriodicJob
	Log      *slog.Logger
	// Queues maps queue names to their worker counts; nil means insert-only.
	Queues map[string]int
	// PollIntervals sets, for some queues, how often they look for jobs
	// (FetchPollInterval by default).
	PollIntervals map[string]time.Duration
	// FetchPollInterval bounds how late a job scheduled for a moment is picked up.
	FetchPollInterval time.Duration
	// RescueAfter is when a job left running by a crashed process is retried.
	RescueAfter time.Duration
	// Rescue names the queues whose jobs Rescue makes available again once
	// they have run for RescueAfter: their workers' deadlines are shorter.
	Rescue []string
}

// RescueEvery is how often the server calls Rescue: a job a stopped process
// left running is tried again at most this long after RescueAfter.
const RescueEvery = 2 * time.Second

// Queue inserts and works jobs. The two River clients differ only in their
// transaction type; exactly one is set.
type Queue struct {
	pg *river.Client[pgx.Tx]
	sq *river.Client[*sql.Tx]

	db          *store.DB
	rescue      []string
	rescueAfter time.Duration
}

// New builds a queue on db. With no Queues in cfg it can insert jobs but works none.
func New(db *store.DB, cfg Config) (*Queue, error) {
	rc := &river.Config{
		Workers:              cfg.Workers,
		PeriodicJobs:         cfg.Periodic,
		Logger:               cfg.Log,
		FetchPollInterval:    cfg.FetchPollInterval,
		RescueStuckJobsAfter: cfg.RescueAfter,
		JobTimeout:           -1, // each worker sets its own
	}
	if rc.FetchPollInterval == 0 {
		// On PostgreSQL River is woken by LISTEN/NOTIFY when a job is
		// inserted, so its polls are only the fallback: idle, a replica
		// asks the database next to nothing. SQLite has no notifications.
		rc.FetchPollInterval = 500 * time.Millisecond
		if db.Pool() != nil {
			rc.FetchPollInterval = 2 * time.Second
		}
	}
	if rc.FetchCooldown == 0 || rc.FetchCooldown > rc.FetchPollInterval {
		rc.FetchCooldown = min(100*time.Millisecond, rc.FetchPollInterval)
	}
	if rc.RescueStuckJobsAfter == 0 {
		rc.RescueStuckJobsAfter = time.Minute
	}
	rescueAfter := rc.RescueStuckJobsAfter
	if len(cfg.Rescue) > 0 {
		// River's own rescue (on its leader, every 30 s) stays behind Rescue
		// for the jobs it leaves: those on their last attempt, which River
		// discards. Were both to rescue at the same age, River could put
		// back a job Rescue had just handed to a worker.
		rc.RescueStuckJobsAfter *= 2
	}
	if len(cfg.Queues) > 0 {
		rc.Queues = map[string]river.QueueConfig{}
		for name, n := range cfg.Queues {
			qc := river.QueueConfig{MaxWorkers: n}
			if d := cfg.PollIntervals[name]; d > 0 {
				qc.FetchPollInterval, qc.FetchCooldown = d, min(d, rc.FetchCooldown)
			}
			rc.Queues[name] = qc
		}
	}
	q := &Queue{db: db, rescue: cfg.Rescue, rescueAfter: rescueAfter}
	var err error
	if db.Pool() != nil {
		q.pg, err = river.NewClient(riverpgxv5.New(db.Pool()), rc)
	} else {
		// SQLite: River shares the single write connection, which is what
		// keeps it free of SQLITE_BUSY; it polls instead of listening.
		rc.PollOnly = true
		q.sq, err = river.NewClient(riversqlite.New(db.Writer()), rc)
	}
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	return q, nil
}

// Rescue makes the jobs of the Rescue queues that a stopped process left
// running (running for longer than RescueAfter) available again, and reports
// how many. Any replica may call it at any time.
func (q *Queue) Rescue(ctx context.Context) (int, error) {
	total := 0
	for _, name := range q.rescue {
		n, err := q.db.RescueJobs(ctx, name, q.rescueAfter, "interrupted: the process working the job stopped")
		if err != nil {
			return total, err
		}
		total += int(n)
	}
	return total, nil
}

// InsertTx enqueues a job inside tx: it runs only if tx commits.
func (q *Queue) InsertTx(ctx context.Context, tx *store.Tx, args river.JobArgs, opts *river.InsertOpts) error {
	if q.pg == nil {
		_, err := q.sq.InsertTx(ctx, tx.SQLTx(), args, opts)
		return err
	}
	pg, err := tx.PgxTx(ctx)
	if err != nil {
		return err
	}
	_, err = q.pg.InsertTx(ctx, pg, args, opts)
	return err
}

// Start begins working jobs until Stop.
func (q *Queue) Start(ctx context.Context) error {
	if q.pg != nil {
		return q.pg.Start(ctx)
	}
	return q.sq.Start(ctx)
}

// Stop stops fetching jobs and waits for running ones until ctx ends, then
// cancels what is left (a cancelled delivery is retried after restart).
func (q *Queue) Stop(ctx context.Context) error {
	stop, cancel := q.sq.Stop, q.sq.StopAndCancel
	if q.pg != nil {
		stop, cancel = q.pg.Stop, q.pg.StopAndCancel
	}
	err := stop(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		cctx, done := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer done()
		err = cancel(cctx)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// CompleteTx marks job, which the calling worker is running, completed inside
// tx: the job's outcome and the worker's own writes commit together, so a
// job whose outcome was recorded is never worked again.
func CompleteTx[T river.JobArgs](ctx context.Context, tx *store.Tx, job *river.Job[T]) error {
	pg, err := tx.PgxTx(ctx)
	switch {
	case err != nil:
		return err
	case pg != nil:
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, pg, job)
	default:
		_, err = river.JobCompleteTx[*riversqlite.Driver](ctx, tx.SQLTx(), job)
	}
	return err
}

// Unfinished counts the jobs of kind that may still run: waiting, running,
// or scheduled for a retry (at most limit of them are counted).
func (q *Queue) Unfinished(ctx context.Context, kind string, limit int) (int, error) {
	params := river.NewJobListParams().Kinds(kind).First(limit).States(rivertype.JobStateAvailable,
		rivertype.JobStatePending, rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled)
	var res *river.JobListResult
	var err error
	if q.pg != nil {
		res, err = q.pg.JobList(ctx, params)
	} else {
		res, err = q.sq.JobList(ctx, params)
	}
	if err != nil {
		return 0, err
	}
	return len(res.Jobs), nil
}
