package store

import (
	"context"
	"time"
)

// APISecret is the record behind a signed API secret (its JWT id). The JWT
// itself is never stored; revocation is this row's revoked_at.
type APISecret struct {
	ID          string
	AppID       string // set for an app secret
	WorkspaceID string // set for a workspace secret
	MemberID    string // the member a workspace secret acts for
	Name        string
	CreatedAt   time.Time
	RevokedAt   *time.Time
	// MemberRole is the member's current role (read with the secret), "" when none.
	MemberRole string
}

// CreateAPISecret inserts s.
func (q Queries) CreateAPISecret(ctx context.Context, s APISecret) error {
	_, err := q.w.exec(ctx, `INSERT INTO api_secrets (id, app_id, workspace_id, member_id, name, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, s.ID, nullString(s.AppID), nullString(s.WorkspaceID), nullString(s.MemberID), s.Name, ts(s.CreatedAt))
	return err
}

const secretSelect = `SELECT s.id, s.app_id, s.workspace_id, s.member_id, s.name, s.created_at, s.revoked_at, m.role
	FROM api_secrets s LEFT JOIN workspace_members m ON m.id = s.member_id`

func scanSecret(r row) (APISecret, error) {
	var s APISecret
	var app, ws, member, role *string
	err := r.Scan(&s.ID, &app, &ws, &member, &s.Name, &s.CreatedAt, &s.RevokedAt, &role)
	s.AppID, s.WorkspaceID, s.MemberID, s.MemberRole = deref(app), deref(ws), deref(member), deref(role)
	s.CreatedAt, s.RevokedAt = s.CreatedAt.UTC(), utcPtr(s.RevokedAt)
	return s, err
}

// GetAPISecret returns a secret with its member's current role, in one round trip.
func (q Queries) GetAPISecret(ctx context.Context, id string) (APISecret, error) {
	return scanSecret(q.r.queryRow(ctx, secretSelect+` WHERE s.id = $1`, id))
}

// ListAPISecrets lists the secrets of an app or of a workspace, oldest first.
func (q Queries) ListAPISecrets(ctx context.Context, appID, workspaceID string) ([]APISecret, error) {
	rs, err := q.r.query(ctx, secretSelect+` WHERE (s.app_id = $1 OR s.workspace_id = $2) ORDER BY s.created_at, s.id`, appID, workspaceID)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanSecret)
}

// RevokeAPISecret marks a secret revoked; revoking twice is not an error.
func (q Queries) RevokeAPISecret(ctx context.Context, id string, now time.Time) error {
	n, err := q.w.exec(ctx, `UPDATE api_secrets SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1`, id, ts(now))
	return affected(n, err)
}

// APIKey is an app's API key; only its keyed hash and last four characters are kept.
type APIKey struct {
	ID        string
	AppID     string
	Nickname  string
	KeyHash   string
	Last4     string
	CreatedAt time.Time
	RevokedAt *time.Time
}

const apiKeyColumns = `id, app_id, nickname, key_hash, last4, created_at, revoked_at`

func scanAPIKey(r row) (APIKey, error) {
	var k APIKey
	err := r.Scan(&k.ID, &k.AppID, &k.Nickname, &k.KeyHash, &k.Last4, &k.CreatedAt, &k.RevokedAt)
	k.CreatedAt, k.RevokedAt = k.CreatedAt.UTC(), utcPtr(k.RevokedAt)
	return k, err
}

// CreateAPIKey inserts k.
func (q Queries) CreateAPIKey(ctx context.Context, k APIKey) error {
	_, err := q.w.exec(ctx, `INSERT INTO api_keys (`+apiKeyColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		k.ID, k.AppID, k.Nickname, k.KeyHash, k.Last4, ts(k.CreatedAt), nullTime(k.RevokedAt))
	return err
}

// GetAPIKeyByHash finds a key by its keyed hash.
func (q Queries) GetAPIKeyByHash(ctx context.Context, hash string) (APIKey, error) {
	return scanAPIKey(q.r.queryRow(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE key_hash = $1`, hash))
}

// ListAPIKeys lists an app's keys, newest first.
func (q Queries) ListAPIKeys(ctx context.Context, appID string) ([]APIKey, error) {
	rs, err := q.r.query(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE app_id = $1 ORDER BY created_at DESC, id DESC`, appID)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanAPIKey)
}

// RevokeAPIKey marks an app's key revoked and returns it.
func (q Queries) RevokeAPIKey(ctx context.Context, appID, id string, now time.Time) (APIKey, error) {
	return scanAPIKey(q.w.queryRow(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3)
		WHERE app_id = $1 AND id = $2 RETURNING `+apiKeyColumns, appID, id, ts(now)))
}

// SigningKey is a token-signing key; the private key is sealed with the master key.
type SigningKey struct {
	ID            string // kid
	Alg           string
	PrivateSealed []byte
	Status        string // "active" or "retired"
	CreatedAt     time.Time
	RetiredAt     *time.Time
	PublishUntil  *time.Time // a retired key stays in the JWKS until then
}

// Signing-key statuses.
const (
	KeyActive  = "active"
	KeyRetired = "retired"
)

// InsertSigningKey stores a new key.
func (q Queries) InsertSigningKey(ctx context.Context, k SigningKey) error {
	_, err := q.w.exec(ctx, `INSERT INTO signing_keys (id, alg, private_sealed, status, created_at, retired_at, publish_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, k.ID, k.Alg, k.PrivateSealed, k.Status, ts(k.CreatedAt), nullTime(k.RetiredAt), nullTime(k.PublishUntil))
	return err
}

// ListSigningKeys returns every key, newest first.
func (q Queries) ListSigningKeys(ctx context.Context) ([]SigningKey, error) {
	rs, err := q.r.query(ctx, `SELECT id, alg, private_sealed, status, created_at, retired_at, publish_until
		FROM signing_keys ORDER BY created_at DESC, id DESC`)
	if err != nil {
		return nil, err
	}
	return collect(rs, func(r row) (SigningKey, error) {
		var k SigningKey
		err := r.Scan(&k.ID, &k.Alg, &k.PrivateSealed, &k.Status, &k.CreatedAt, &k.RetiredAt, &k.PublishUntil)
		k.CreatedAt, k.RetiredAt, k.PublishUntil = k.CreatedAt.UTC(), utcPtr(k.RetiredAt), utcPtr(k.PublishUntil)
		return k, err
	})
}

// RetireSigningKeys retires every active key of keep's algorithm other than keep.
func (q Queries) RetireSigningKeys(ctx context.Context, keep, alg string, now, publishUntil time.Time) error {
	_, err := q.w.exec(ctx, `UPDATE signing_keys SET status = 'retired', retired_at = $2, publish_until = $3
		WHERE status = 'active' AND alg = $4 AND id <> $1`, keep, ts(now), ts(publishUntil), alg)
	return err
}
