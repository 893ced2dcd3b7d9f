package store

import (
	"context"
	"errors"
	"fmt"
)

// takeRateSQL is one GCRA step as a single upsert (stack.md §3.6).
// $1 key, $2 now, $3 emission interval, $4 burst window, all in ms.
//
// base is max(tat, now), written as CASE because GREATEST/MAX differ between
// the engines. The step is allowed when base + interval - now <= burst; only
// then does tat advance. SET expressions see the row as it was before the
// update on both engines, so tat and expires_at agree on the decision.
//
// Neither engine can portably RETURN the row as it was before the update, so
// a refusal is marked in expires_at: an allowed step stores tat + burst, a
// refused one tat + burst + 1. The extra millisecond only delays pruning.
// A new key is always allowed, because the caller guarantees burst >= interval.
const takeRateSQL = `INSERT INTO rate_limits (key, tat, expires_at)
VALUES ($1, CAST($2 AS BIGINT) + CAST($3 AS BIGINT), CAST($2 AS BIGINT) + CAST($3 AS BIGINT) + CAST($4 AS BIGINT))
ON CONFLICT (key) DO UPDATE SET
  tat = CASE
    WHEN (CASE WHEN rate_limits.tat > CAST($2 AS BIGINT) THEN rate_limits.tat ELSE CAST($2 AS BIGINT) END)
         + CAST($3 AS BIGINT) - CAST($2 AS BIGINT) <= CAST($4 AS BIGINT)
    THEN (CASE WHEN rate_limits.tat > CAST($2 AS BIGINT) THEN rate_limits.tat ELSE CAST($2 AS BIGINT) END)
         + CAST($3 AS BIGINT)
    ELSE rate_limits.tat END,
  expires_at = CASE
    WHEN (CASE WHEN rate_limits.tat > CAST($2 AS BIGINT) THEN rate_limits.tat ELSE CAST($2 AS BIGINT) END)
         + CAST($3 AS BIGINT) - CAST($2 AS BIGINT) <= CAST($4 AS BIGINT)
    THEN (CASE WHEN rate_limits.tat > CAST($2 AS BIGINT) THEN rate_limits.tat ELSE CAST($2 AS BIGINT) END)
         + CAST($3 AS BIGINT) + CAST($4 AS BIGINT)
    ELSE rate_limits.tat + CAST($4 AS BIGINT) + 1 END
RETURNING tat, expires_at`

// TakeRate runs one GCRA step for key in a single round trip (the upsert in
// stack.md §3.6, adapted to also set expires_at = new tat + burst window, in
// ms since the epoch).
// nowMs: now in unix ms; intervalMs: emission interval (period / limit);
// burstMs: burst window (= burst * intervalMs).
// It returns allowed and, when refused, how long until the next request
// would be allowed (ms, >0).
func (q Queries) TakeRate(ctx context.Context, key string, nowMs, intervalMs, burstMs int64) (allowed bool, retryAfterMs int64, err error) {
	if intervalMs <= 0 || burstMs < intervalMs {
		// With burst < interval a new key would be let in by the INSERT branch
		// although no step can ever fit; refuse such parameters outright.
		return false, 0, errors.New("store: take rate: need 0 < interval <= burst")
	}
	var tat, expiresAt int64
	if err := q.w.queryRow(ctx, takeRateSQL, key, nowMs, intervalMs, burstMs).Scan(&tat, &expiresAt); err != nil {
		return false, 0, fmt.Errorf("store: take rate: %w", err)
	}
	if expiresAt == tat+burstMs {
		return true, 0, nil
	}
	// The next step fits once max(tat, t) + interval - t <= burst, that is at
	// t = tat + interval - burst; refused means that is still in the future.
	return false, tat + intervalMs - burstMs - nowMs, nil
}

// ReturnRate gives back one step of intervalMs taken from key's bucket (an
// attempt that turned out to be allowed free). A tat moved below now counts
// as now, as in takeRateSQL; a bucket pruned meanwhile is full anyway.
func (q Queries) ReturnRate(ctx context.Context, key string, intervalMs int64) error {
	if _, err := q.w.exec(ctx, `UPDATE rate_limits SET tat = tat - CAST($2 AS BIGINT) WHERE key = $1`, key, intervalMs); err != nil {
		return fmt.Errorf("store: return rate: %w", err)
	}
	return nil
}

// PruneRates deletes buckets whose expires_at < nowMs; returns how many.
func (q Queries) PruneRates(ctx context.Context, nowMs int64) (int64, error) {
	n, err := q.w.exec(ctx, `DELETE FROM rate_limits WHERE expires_at < CAST($1 AS BIGINT)`, nowMs)
	if err != nil {
		return 0, fmt.Errorf("store: prune rates: %w", err)
	}
	return n, nil
}
