package store

import (
	"context"
	"time"
)

// M2MClient is a machine-to-machine client of an app: its id is the OAuth
// client_id; only the keyed hash of its secret and the secret's last four
// characters are kept.
type M2MClient struct {
	ID          string
	AppID       string
	Name        string
	SecretHash  string
	SecretLast4 string
	Scopes      []string
	CreatedAt   time.Time
	LastUsedAt  *time.Time
	RevokedAt   *time.Time
}

const m2mClientColumns = `id, app_id, name, secret_hash, secret_last4, scopes, created_at, last_used_at, revoked_at`

func scanM2MClient(r row) (M2MClient, error) {
	var c M2MClient
	var scopes []byte
	err := r.Scan(&c.ID, &c.AppID, &c.Name, &c.SecretHash, &c.SecretLast4, &scopes, &c.CreatedAt, &c.LastUsedAt, &c.RevokedAt)
	c.Scopes = parseStrings(scopes)
	c.CreatedAt, c.LastUsedAt, c.RevokedAt = c.CreatedAt.UTC(), utcPtr(c.LastUsedAt), utcPtr(c.RevokedAt)
	return c, err
}

// CreateM2MClient inserts c.
func (q Queries) CreateM2MClient(ctx context.Context, c M2MClient) error {
	_, err := q.w.exec(ctx, `INSERT INTO m2m_clients (`+m2mClientColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		c.ID, c.AppID, c.Name, c.SecretHash, c.SecretLast4, jsonStrings(c.Scopes), ts(c.CreatedAt), nullTime(c.LastUsedAt), nullTime(c.RevokedAt))
	return err
}

// GetM2MClient returns an app's client by id.
func (q Queries) GetM2MClient(ctx context.Context, appID, id string) (M2MClient, error) {
	return scanM2MClient(q.r.queryRow(ctx, `SELECT `+m2mClientColumns+` FROM m2m_clients WHERE app_id = $1 AND id = $2`, appID, id))
}

// ListM2MClients lists an app's clients, revoked ones included, newest first.
func (q Queries) ListM2MClients(ctx context.Context, appID string) ([]M2MClient, error) {
	rs, err := q.r.query(ctx, `SELECT `+m2mClientColumns+` FROM m2m_clients WHERE app_id = $1 ORDER BY created_at DESC, id DESC`, appID)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanM2MClient)
}

// RevokeM2MClient marks an app's client revoked (revoking twice keeps the
// first time), ends its live sessions at now, and returns the client.
func (q Queries) RevokeM2MClient(ctx context.Context, appID, id string, now time.Time) (M2MClient, error) {
	c, err := scanM2MClient(q.w.queryRow(ctx, `UPDATE m2m_clients SET revoked_at = COALESCE(revoked_at, $3)
		WHERE app_id = $1 AND id = $2 RETURNING `+m2mClientColumns, appID, id, ts(now)))
	if err != nil {
		return c, err
	}
	_, err = q.w.exec(ctx, `UPDATE m2m_sessions SET revoked_at = $2 WHERE client_id = $1 AND revoked_at IS NULL`, id, ts(now))
	return c, err
}

// TouchM2MClient records a client's use.
func (q Queries) TouchM2MClient(ctx context.Context, id string, now time.Time) error {
	_, err := q.w.exec(ctx, `UPDATE m2m_clients SET last_used_at = $2 WHERE id = $1`, id, ts(now))
	return err
}

// M2MSession is one client_credentials grant; its tokens name it (sid) and
// are accepted while it is live.
type M2MSession struct {
	ID        string
	AppID     string
	ClientID  string
	Scopes    []string
	CreatedAt time.Time
	ExpiresAt time.Time
	RevokedAt *time.Time
	// ClientRevokedAt is the client's revoked_at, read with the session.
	ClientRevokedAt *time.Time
}

// CreateM2MSession inserts s.
func (q Queries) CreateM2MSession(ctx context.Context, s M2MSession) error {
	_, err := q.w.exec(ctx, `INSERT INTO m2m_sessions (id, app_id, client_id, scopes, created_at, expires_at, revoked_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, s.ID, s.AppID, s.ClientID, jsonStrings(s.Scopes), ts(s.CreatedAt), ts(s.ExpiresAt), nullTime(s.RevokedAt))
	return err
}

// GetM2MSession returns a session with its client's revocation, in one round trip.
func (q Queries) GetM2MSession(ctx context.Context, id string) (M2MSession, error) {
	var s M2MSession
	var scopes []byte
	err := q.r.queryRow(ctx, `SELECT s.id, s.app_id, s.client_id, s.scopes, s.created_at, s.expires_at, s.revoked_at, c.revoked_at
		FROM m2m_sessions s JOIN m2m_clients c ON c.id = s.client_id WHERE s.id = $1`, id).
		Scan(&s.ID, &s.AppID, &s.ClientID, &scopes, &s.CreatedAt, &s.ExpiresAt, &s.RevokedAt, &s.ClientRevokedAt)
	s.Scopes = parseStrings(scopes)
	s.CreatedAt, s.ExpiresAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC()
	s.RevokedAt, s.ClientRevokedAt = utcPtr(s.RevokedAt), utcPtr(s.ClientRevokedAt)
	return s, err
}

// RevokeM2MSession ends a session that is still live at now; ErrNotFound
// when there is none (unknown, revoked or expired), so of two revocations
// racing exactly one succeeds.
func (q Queries) RevokeM2MSession(ctx context.Context, id string, now time.Time) error {
	n, err := q.w.exec(ctx, `UPDATE m2m_sessions SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL AND expires_at > $2`, id, ts(now))
	return affected(n, err)
}

// PurgeM2MSessions deletes up to limit sessions expired at now, and returns
// how many it deleted.
func (q Queries) PurgeM2MSessions(ctx context.Context, now time.Time, limit int) (int64, error) {
	return q.w.exec(ctx, `DELETE FROM m2m_sessions WHERE id IN
		(SELECT id FROM m2m_sessions WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)`, ts(now), limit)
}
