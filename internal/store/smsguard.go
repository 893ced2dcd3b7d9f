package store

import (
	"context"
	"fmt"
)

// SMSNumberState is one number's row of sms_number_sends: the current run
// of sends, the last send and the earliest next one, in unix ms. The zero
// value is a number never sent to.
type SMSNumberState struct {
	FirstAt int64
	LastAt  int64
	Sends   int
	NextAt  int64
}

// LockSMSNumber reads key's state in tx, creating an empty row when there is
// none, and holds the row until tx ends: the upsert locks it on PostgreSQL
// (a concurrent send to the same number waits for this one's decision), and
// SQLite's write transaction holds its one write lock.
func (q Queries) LockSMSNumber(ctx context.Context, key string) (SMSNumberState, error) {
	var st SMSNumberState
	err := q.w.queryRow(ctx, `INSERT INTO sms_number_sends (key, first_at, last_at, sends, next_at) VALUES ($1, 0, 0, 0, 0)
		ON CONFLICT (key) DO UPDATE SET sends = sms_number_sends.sends
		RETURNING first_at, last_at, sends, next_at`, key).Scan(&st.FirstAt, &st.LastAt, &st.Sends, &st.NextAt)
	if err != nil {
		return st, fmt.Errorf("store: lock sms number: %w", err)
	}
	return st, nil
}

// SaveSMSNumber writes key's state (after LockSMSNumber in the same tx).
func (q Queries) SaveSMSNumber(ctx context.Context, key string, st SMSNumberState) error {
	_, err := q.w.exec(ctx, `UPDATE sms_number_sends SET first_at = $2, last_at = $3, sends = $4, next_at = $5 WHERE key = $1`,
		key, st.FirstAt, st.LastAt, st.Sends, st.NextAt)
	if err != nil {
		return fmt.Errorf("store: save sms number: %w", err)
	}
	return nil
}

// CountSMS adds one send to key's counter for the window starting at
// windowMs (a counter of an older window starts again at one) and returns
// the window's sends, this one included. In a transaction the row stays
// locked until it ends, so racing sends are counted one after another; a
// transaction that rolls back takes its send back.
func (q Queries) CountSMS(ctx context.Context, key string, windowMs int64) (int, error) {
	var n int
	// SET expressions see the row as it was before the update on both engines.
	err := q.w.queryRow(ctx, `INSERT INTO sms_counters (key, window_start, sends, alerted) VALUES ($1, CAST($2 AS BIGINT), 1, FALSE)
		ON CONFLICT (key) DO UPDATE SET
		  sends = CASE WHEN sms_counters.window_start = CAST($2 AS BIGINT) THEN sms_counters.sends + 1 ELSE 1 END,
		  alerted = CASE WHEN sms_counters.window_start = CAST($2 AS BIGINT) THEN sms_counters.alerted ELSE FALSE END,
		  window_start = CAST($2 AS BIGINT)
		RETURNING sends`, key, windowMs).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: count sms: %w", err)
	}
	return n, nil
}

// MarkSMSAlert records that key's cap tripped in the window starting at
// windowMs and reports whether this call was the first to: the alert is
// raised once per window, whichever replica sees the cap first.
func (q Queries) MarkSMSAlert(ctx context.Context, key string, windowMs int64) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE sms_counters SET alerted = TRUE
		WHERE key = $1 AND window_start = CAST($2 AS BIGINT) AND alerted = FALSE`, key, windowMs)
	if err != nil {
		return false, fmt.Errorf("store: mark sms alert: %w", err)
	}
	return n == 1, nil
}

// PruneSMS deletes the waits of numbers last sent to before numbersMs and
// the counters of windows that started before windowsMs.
func (q Queries) PruneSMS(ctx context.Context, numbersMs, windowsMs int64) error {
	if _, err := q.w.exec(ctx, `DELETE FROM sms_number_sends WHERE last_at < CAST($1 AS BIGINT)`, numbersMs); err != nil {
		return fmt.Errorf("store: prune sms numbers: %w", err)
	}
	if _, err := q.w.exec(ctx, `DELETE FROM sms_counters WHERE window_start < CAST($1 AS BIGINT)`, windowsMs); err != nil {
		return fmt.Errorf("store: prune sms counters: %w", err)
	}
	return nil
}
