package store

import (
	"context"
	"time"
)

// MessageProvider is one of an app's own e-mail or SMS providers. Config is
// a JSON object of its settings that are not secret; SecretsSealed the
// secret ones, a JSON object sealed with the master key (nil when none).
type MessageProvider struct {
	AppID         string
	Slug          string
	Type          string
	Name          string
	Enabled       bool
	Config        []byte
	SecretsSealed []byte
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

const messageProviderColumns = `app_id, slug, provider_type, name, enabled, config, secrets_sealed, created_at, updated_at`

func scanMessageProvider(r row) (MessageProvider, error) {
	var p MessageProvider
	var config string
	err := r.Scan(&p.AppID, &p.Slug, &p.Type, &p.Name, &p.Enabled, &config, &p.SecretsSealed, &p.CreatedAt, &p.UpdatedAt)
	p.Config = []byte(config)
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return p, err
}

// ListMessageProviders returns an app's stored providers, by slug.
func (q Queries) ListMessageProviders(ctx context.Context, appID string) ([]MessageProvider, error) {
	rs, err := q.r.query(ctx, `SELECT `+messageProviderColumns+` FROM message_providers WHERE app_id = $1 ORDER BY slug`, appID)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanMessageProvider)
}

// PutMessageProvider inserts p, or replaces every field but created_at of
// the app's provider with p's slug.
func (q Queries) PutMessageProvider(ctx context.Context, p MessageProvider) error {
	return q.putProvider(ctx, "message_providers", p)
}

// putProvider is PutMessageProvider on table, which has its columns
// (message_providers, oauth_providers).
func (q Queries) putProvider(ctx context.Context, table string, p MessageProvider) error {
	_, err := q.w.exec(ctx, `INSERT INTO `+table+` (`+messageProviderColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (app_id, slug) DO UPDATE SET provider_type = excluded.provider_type, name = excluded.name,
			enabled = excluded.enabled, config = excluded.config, secrets_sealed = excluded.secrets_sealed,
			updated_at = excluded.updated_at`,
		p.AppID, p.Slug, p.Type, p.Name, p.Enabled, string(jsonOr(p.Config, "{}")), p.SecretsSealed, ts(p.CreatedAt), ts(p.UpdatedAt))
	return err
}
