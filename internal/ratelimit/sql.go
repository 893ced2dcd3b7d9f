package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// SQL is a GCRA limiter whose buckets live in the database, shared by every
// replica.
type SQL struct {
	db  *store.DB
	now func() time.Time
}

// NewSQL is a limiter shared by replicas through the database
// (store.Queries.TakeRate). A nil now means time.Now.
func NewSQL(db *store.DB, now func() time.Time) *SQL {
	if now == nil {
		now = time.Now
	}
	return &SQL{db: db, now: now}
}

// Allow takes one event from key's bucket under rule r, in one round trip.
func (s *SQL) Allow(ctx context.Context, key string, r Rule) (Result, error) {
	if r.Disabled() {
		return Result{Allowed: true}, nil
	}
	interval, burst := r.window()
	ok, retryMs, err := s.db.TakeRate(ctx, key, s.now().UnixMilli(), interval, burst)
	if err != nil {
		// The key may hold an identifier (e-mail, phone); keep it out of errors.
		return Result{}, fmt.Errorf("ratelimit: allow: %w", err)
	}
	if ok {
		return Result{Allowed: true}, nil
	}
	return Result{RetryAfter: time.Duration(retryMs) * time.Millisecond}, nil
}

// Return gives back one event taken from key's bucket under rule r, in one
// statement.
func (s *SQL) Return(ctx context.Context, key string, r Rule) error {
	if r.Disabled() {
		return nil
	}
	interval, _ := r.window()
	if err := s.db.ReturnRate(ctx, key, interval); err != nil {
		return fmt.Errorf("ratelimit: return: %w", err)
	}
	return nil
}

// Prune deletes expired SQL buckets (call periodically).
func (s *SQL) Prune(ctx context.Context) error {
	if _, err := s.db.PruneRates(ctx, s.now().UnixMilli()); err != nil {
		return fmt.Errorf("ratelimit: prune: %w", err)
	}
	return nil
}
