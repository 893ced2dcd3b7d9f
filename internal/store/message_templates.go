package store

import (
	"context"
	"time"
)

// MessageTemplate is an app's own version of one message for one channel
// and locale. SMS templates have only Text.
type MessageTemplate struct {
	AppID     string
	Name      string
	Channel   string
	Locale    string
	Subject   string
	Text      string
	HTML      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

const messageTemplateColumns = `app_id, name, channel, locale, subject, body_text, body_html, created_at, updated_at`

func scanMessageTemplate(r row) (MessageTemplate, error) {
	var m MessageTemplate
	err := r.Scan(&m.AppID, &m.Name, &m.Channel, &m.Locale, &m.Subject, &m.Text, &m.HTML, &m.CreatedAt, &m.UpdatedAt)
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return m, err
}

// ListMessageTemplates returns an app's templates by name, channel and locale.
func (q Queries) ListMessageTemplates(ctx context.Context, appID string) ([]MessageTemplate, error) {
	rs, err := q.r.query(ctx, `SELECT `+messageTemplateColumns+` FROM message_templates WHERE app_id = $1
		ORDER BY name, channel, locale`, appID)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanMessageTemplate)
}

// PutMessageTemplate creates or replaces the app's template for m's name,
// channel and locale; a replaced one keeps its CreatedAt. It returns the row
// as stored.
func (q Queries) PutMessageTemplate(ctx context.Context, m MessageTemplate) (MessageTemplate, error) {
	return scanMessageTemplate(q.w.queryRow(ctx, `INSERT INTO message_templates (`+messageTemplateColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
		ON CONFLICT (app_id, name, channel, locale) DO UPDATE SET subject = excluded.subject,
			body_text = excluded.body_text, body_html = excluded.body_html, updated_at = excluded.updated_at
		RETURNING `+messageTemplateColumns, m.AppID, m.Name, m.Channel, m.Locale, m.Subject, m.Text, m.HTML, ts(m.UpdatedAt)))
}

// DeleteMessageTemplate removes one template of an app; ErrNotFound when there is none.
func (q Queries) DeleteMessageTemplate(ctx context.Context, appID, name, channel, locale string) error {
	n, err := q.w.exec(ctx, `DELETE FROM message_templates WHERE app_id = $1 AND name = $2 AND channel = $3 AND locale = $4`,
		appID, name, channel, locale)
	return affected(n, err)
}

// GetChallengeByShortLink finds a magic-link challenge by the keyed hash of
// its short link's code, with the sealed token the link stands for.
func (q Queries) GetChallengeByShortLink(ctx context.Context, hash string) (Challenge, string, error) {
	var sealed string
	c, err := scanChallenge(extraScan{q.r.queryRow(ctx, `SELECT `+challengeColumns+`, short_token_sealed FROM challenges
		WHERE short_hash = $1`, hash), []any{&sealed}})
	return c, sealed, err
}

// extraScan scans a row with more columns than a scan function knows: the
// extra ones, at the end, into extra.
type extraScan struct {
	row
	extra []any
}

func (e extraScan) Scan(dest ...any) error { return e.row.Scan(append(dest, e.extra...)...) }
