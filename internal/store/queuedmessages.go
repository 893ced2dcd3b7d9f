package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// QueuedMessage is a message of the send queue (queued_messages): sealed,
// so the row never holds a code or a link in clear.
type QueuedMessage struct {
	ID          string
	AppID       string
	ChallengeID string
	Version     string
	What        string
	Channel     string
	Recipient   string // masked
	Sealed      []byte
	// Attempts counts the tries begun, the direct one included.
	Attempts    int
	MaxAttempts int
	LastError   string
	// RunAt is when the row is due for a sweep: set past the time a try in
	// progress may take, so that nobody else takes it meanwhile.
	RunAt     time.Time
	CreatedAt time.Time
}

const queuedMessageCols = `id, app_id, challenge_id, version, what, channel, recipient, sealed, attempts, max_attempts, last_error, run_at, created_at`

// QueueMessage inserts m (inside the transaction of its cause).
func (q Queries) QueueMessage(ctx context.Context, m QueuedMessage) error {
	_, err := q.w.exec(ctx, `INSERT INTO queued_messages (`+queuedMessageCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		m.ID, m.AppID, m.ChallengeID, m.Version, m.What, m.Channel, m.Recipient, m.Sealed, m.Attempts, m.MaxAttempts,
		m.LastError, ts(m.RunAt), ts(m.CreatedAt))
	if err != nil {
		return fmt.Errorf("store: queue message: %w", err)
	}
	return nil
}

// ClaimDueMessages takes up to limit messages due at now for one more try
// each: their attempts grow by one and they are due again only at leaseEnd,
// in the same statement, so two replicas sweeping at once never take the
// same message (PostgreSQL skips the rows another sweep has locked; SQLite's
// one writer runs the statements one after the other).
func (q Queries) ClaimDueMessages(ctx context.Context, now, leaseEnd time.Time, limit int) ([]QueuedMessage, error) {
	skip := ""
	if q.d.name == Postgres {
		skip = " FOR UPDATE SKIP LOCKED"
	}
	rs, err := q.w.query(ctx, `UPDATE queued_messages SET attempts = attempts + 1, run_at = $2
		WHERE id IN (SELECT id FROM queued_messages WHERE run_at <= $1 AND failed_at IS NULL ORDER BY run_at LIMIT $3`+skip+`)
		RETURNING `+queuedMessageCols, ts(now), ts(leaseEnd), limit)
	if err != nil {
		return nil, fmt.Errorf("store: claim messages: %w", err)
	}
	return collect(rs, func(r row) (QueuedMessage, error) {
		var m QueuedMessage
		err := r.Scan(&m.ID, &m.AppID, &m.ChallengeID, &m.Version, &m.What, &m.Channel, &m.Recipient, &m.Sealed,
			&m.Attempts, &m.MaxAttempts, &m.LastError, &m.RunAt, &m.CreatedAt)
		m.RunAt, m.CreatedAt = m.RunAt.UTC(), m.CreatedAt.UTC()
		return m, err
	})
}

// RetryMessageAt makes message id due again at at, after a try that failed
// with reason (which must hold no secret).
func (q Queries) RetryMessageAt(ctx context.Context, id string, at time.Time, reason string) error {
	if _, err := q.w.exec(ctx, `UPDATE queued_messages SET run_at = $2, last_error = $3 WHERE id = $1`, id, ts(at), reason); err != nil {
		return fmt.Errorf("store: reschedule message: %w", err)
	}
	return nil
}

// MakeMessagesDue makes the messages ids due at now (a stopping process
// hands back those it will not try).
func (q Queries) MakeMessagesDue(ctx context.Context, ids []string, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	in, args := inList(ids, 2)
	if _, err := q.w.exec(ctx, `UPDATE queued_messages SET run_at = $1 WHERE id IN (`+in+`)`, append([]any{ts(now)}, args...)...); err != nil {
		return fmt.Errorf("store: hand messages back: %w", err)
	}
	return nil
}

// inList is "$first, $first+1, ..." for ids, with ids as arguments.
func inList(ids []string, first int) (string, []any) {
	marks := make([]string, len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		marks[i], args[i] = "$"+strconv.Itoa(first+i), id
	}
	return strings.Join(marks, ", "), args
}

// DeleteQueuedMessages forgets the messages ids (sent, or given up).
func (q Queries) DeleteQueuedMessages(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	in, args := inList(ids, 1)
	if _, err := q.w.exec(ctx, `DELETE FROM queued_messages WHERE id IN (`+in+`)`, args...); err != nil {
		return fmt.Errorf("store: delete messages: %w", err)
	}
	return nil
}

// NextMessageDue is when the earliest queued message is due; ok is false
// when none is queued.
func (q Queries) NextMessageDue(ctx context.Context) (at time.Time, ok bool, err error) {
	// ORDER BY, not min(): SQLite gives an aggregate no column type, and
	// the time would come back as text.
	err = q.r.queryRow(ctx, `SELECT run_at FROM queued_messages WHERE failed_at IS NULL ORDER BY run_at LIMIT 1`).Scan(&at)
	if errors.Is(err, ErrNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("store: next message due: %w", err)
	}
	return at.UTC(), true, nil
}

// GiveUpMessage marks message id failed for good with reason: kept for the
// operator until PurgeFailedMessages, never claimed again.
func (q Queries) GiveUpMessage(ctx context.Context, id, reason string, now time.Time) error {
	if _, err := q.w.exec(ctx, `UPDATE queued_messages SET failed_at = $2, last_error = $3 WHERE id = $1`, id, ts(now), reason); err != nil {
		return fmt.Errorf("store: give message up: %w", err)
	}
	return nil
}

// PurgeFailedMessages deletes the messages given up before before.
func (q Queries) PurgeFailedMessages(ctx context.Context, before time.Time) (int64, error) {
	n, err := q.w.exec(ctx, `DELETE FROM queued_messages WHERE failed_at < $1`, ts(before))
	if err != nil {
		return 0, fmt.Errorf("store: purge failed messages: %w", err)
	}
	return n, nil
}

// MessageBacklog counts the queued messages (sent ones are deleted, failed
// ones not counted) and
// tells when the oldest was queued (zero when none is).
func (q Queries) MessageBacklog(ctx context.Context) (n int, oldest time.Time, err error) {
	err = q.r.queryRow(ctx, `SELECT (SELECT count(*) FROM queued_messages WHERE failed_at IS NULL), created_at
		FROM queued_messages WHERE failed_at IS NULL ORDER BY created_at LIMIT 1`).Scan(&n, &oldest)
	if errors.Is(err, ErrNotFound) {
		return 0, time.Time{}, nil
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("store: message backlog: %w", err)
	}
	return n, oldest.UTC(), nil
}

// FailedMessage is a message the send queue gave up on (kept a week).
type FailedMessage struct {
	What, Channel, Recipient, LastError string // Recipient is masked
	Attempts                            int
	CreatedAt, FailedAt                 time.Time
}

// AppMessageHealth counts an app's messages still waiting (with the oldest
// one's time, zero when none) and returns its messages given up on since
// since, newest first, at most limit.
func (q Queries) AppMessageHealth(ctx context.Context, appID string, since time.Time, limit int) (waiting int, oldest time.Time, failed []FailedMessage, err error) {
	var first *time.Time
	if err = q.r.queryRow(ctx, `SELECT COUNT(*), MIN(created_at) FROM queued_messages WHERE app_id = $1 AND failed_at IS NULL`, appID).
		Scan(&waiting, &first); err != nil {
		return 0, time.Time{}, nil, err
	}
	if first != nil {
		oldest = first.UTC()
	}
	rs, err := q.r.query(ctx, `SELECT what, channel, recipient, last_error, attempts, created_at, failed_at FROM queued_messages
		WHERE app_id = $1 AND failed_at >= $2 ORDER BY failed_at DESC, id LIMIT $3`, appID, ts(since), limit)
	if err != nil {
		return 0, time.Time{}, nil, err
	}
	failed, err = collect(rs, func(r row) (FailedMessage, error) {
		var m FailedMessage
		err := r.Scan(&m.What, &m.Channel, &m.Recipient, &m.LastError, &m.Attempts, &m.CreatedAt, &m.FailedAt)
		m.CreatedAt, m.FailedAt = m.CreatedAt.UTC(), m.FailedAt.UTC()
		return m, err
	})
	return waiting, oldest, failed, err
}
