package store

import (
	"context"
	"time"
)

// OAuthState is a social sign-in sent to a provider and not yet back
// (oauth_states): only keyed hashes of the state and of the browser's
// binding are kept.
type OAuthState struct {
	StateHash   string
	AppID       string
	Provider    string
	CallbackURL string
	BindingHash string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// CreateOAuthState stores s.
func (q Queries) CreateOAuthState(ctx context.Context, s OAuthState) error {
	_, err := q.w.exec(ctx, `INSERT INTO oauth_states (state_hash, app_id, provider, callback_url, binding_hash, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		s.StateHash, s.AppID, s.Provider, s.CallbackURL, s.BindingHash, ts(s.CreatedAt), ts(s.ExpiresAt))
	return err
}

// TakeOAuthState deletes and returns the app's state with this hash: of
// two callbacks carrying the same state, one gets it and the other
// ErrNotFound. An expired row is taken too (the caller refuses it).
func (q Queries) TakeOAuthState(ctx context.Context, appID, stateHash string) (OAuthState, error) {
	var s OAuthState
	err := q.w.queryRow(ctx, `DELETE FROM oauth_states WHERE state_hash = $1 AND app_id = $2
		RETURNING state_hash, app_id, provider, callback_url, binding_hash, created_at, expires_at`, stateHash, appID).
		Scan(&s.StateHash, &s.AppID, &s.Provider, &s.CallbackURL, &s.BindingHash, &s.CreatedAt, &s.ExpiresAt)
	s.CreatedAt, s.ExpiresAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC()
	return s, mapErr(err)
}

// PruneOAuthStates deletes states that expired before t.
func (q Queries) PruneOAuthStates(ctx context.Context, t time.Time) error {
	_, err := q.w.exec(ctx, `DELETE FROM oauth_states WHERE expires_at < $1`, ts(t))
	return err
}

// Identity is a user's account at one of the app's social sign-in
// providers (identities).
type Identity struct {
	ID         string
	AppID      string
	AppUserID  string
	Provider   string // the provider's slug
	Issuer     string
	Subject    string
	Email      string
	CreatedAt  time.Time
	LastUsedAt time.Time
}

const identityColumns = `id, app_id, app_user_id, provider, issuer, subject, email, created_at, last_used_at`

func scanIdentity(r row) (Identity, error) {
	var i Identity
	err := r.Scan(&i.ID, &i.AppID, &i.AppUserID, &i.Provider, &i.Issuer, &i.Subject, &i.Email, &i.CreatedAt, &i.LastUsedAt)
	i.CreatedAt, i.LastUsedAt = i.CreatedAt.UTC(), i.LastUsedAt.UTC()
	return i, mapErr(err)
}

// GetIdentity returns the app's identity of provider and subject, or ErrNotFound.
func (q Queries) GetIdentity(ctx context.Context, appID, provider, subject string) (Identity, error) {
	return scanIdentity(q.r.queryRow(ctx, `SELECT `+identityColumns+` FROM identities
		WHERE app_id = $1 AND provider = $2 AND subject = $3`, appID, provider, subject))
}

// ListIdentities returns a user's identities, oldest first.
func (q Queries) ListIdentities(ctx context.Context, appUserID string) ([]Identity, error) {
	rs, err := q.r.query(ctx, `SELECT `+identityColumns+` FROM identities WHERE app_user_id = $1 ORDER BY created_at, id`, appUserID)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanIdentity)
}

// CreateIdentity stores i; ErrConflict when the app already has an
// identity of that provider and subject (linked meanwhile).
func (q Queries) CreateIdentity(ctx context.Context, i Identity) error {
	_, err := q.w.exec(ctx, `INSERT INTO identities (`+identityColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		i.ID, i.AppID, i.AppUserID, i.Provider, i.Issuer, i.Subject, i.Email, ts(i.CreatedAt), ts(i.LastUsedAt))
	return err
}

// TouchIdentity records a sign-in with an identity, and the e-mail
// address the provider gave this time.
func (q Queries) TouchIdentity(ctx context.Context, id, email string, at time.Time) error {
	return affected(q.w.exec(ctx, `UPDATE identities SET last_used_at = $2, email = $3 WHERE id = $1`, id, ts(at), email))
}

// DeleteIdentity deletes one of a user's identities; ErrNotFound when the
// user has none by that id.
func (q Queries) DeleteIdentity(ctx context.Context, appUserID, id string) error {
	return affected(q.w.exec(ctx, `DELETE FROM identities WHERE app_user_id = $1 AND id = $2`, appUserID, id))
}
