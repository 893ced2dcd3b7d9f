package store

import (
	"context"
	"time"
)

// OutboxMessage is a message kept by the development outbox instead of being sent.
type OutboxMessage struct {
	ID        string
	AppID     string
	Channel   string
	Recipient string
	Subject   string
	Text      string
	HTML      string
	Code      string
	Link      string
	CreatedAt time.Time
}

// InsertOutboxMessage stores m.
func (q Queries) InsertOutboxMessage(ctx context.Context, m OutboxMessage) error {
	_, err := q.w.exec(ctx, `INSERT INTO outbox_messages (id, app_id, channel, recipient, subject, text_body, html_body, code, link, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, m.ID, m.AppID, m.Channel, m.Recipient, m.Subject, m.Text, m.HTML,
		m.Code, m.Link, ts(m.CreatedAt))
	return err
}

// ListOutboxMessages returns the newest messages, for one recipient when to is set.
func (q Queries) ListOutboxMessages(ctx context.Context, to string, limit int) ([]OutboxMessage, error) {
	// Two statements, not "$1 = '' OR recipient = $1": with the OR, SQLite
	// scans and sorts the whole table on every read instead of using the
	// recipient index (test tools poll this while waiting for a message).
	const cols = `SELECT id, app_id, channel, recipient, subject, text_body, html_body, code, link, created_at FROM outbox_messages `
	query, args := cols+`ORDER BY created_at DESC, id DESC LIMIT $1`, []any{limit}
	if to != "" {
		query, args = cols+`WHERE recipient = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, []any{to, limit}
	}
	rs, err := q.r.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return collect(rs, func(r row) (OutboxMessage, error) {
		var m OutboxMessage
		err := r.Scan(&m.ID, &m.AppID, &m.Channel, &m.Recipient, &m.Subject, &m.Text, &m.HTML, &m.Code, &m.Link, &m.CreatedAt)
		m.CreatedAt = m.CreatedAt.UTC()
		return m, err
	})
}

// GetState reads a server-wide value (such as the dev bootstrap record).
func (q Queries) GetState(ctx context.Context, key string) (string, error) {
	var v string
	err := q.r.queryRow(ctx, `SELECT value FROM server_state WHERE key = $1`, key).Scan(&v)
	return v, err
}

// PutState writes a server-wide value.
func (q Queries) PutState(ctx context.Context, key, value string, now time.Time) error {
	_, err := q.w.exec(ctx, `INSERT INTO server_state (key, value, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, key, value, ts(now))
	return err
}
