package store

import "context"

// OAuthProvider is one of an app's social sign-in providers: the same
// shape as a message provider (config plain, secrets sealed), in its own
// table (oauth_providers).
type OAuthProvider = MessageProvider

// ListOAuthProviders returns an app's social sign-in providers, by slug.
func (q Queries) ListOAuthProviders(ctx context.Context, appID string) ([]OAuthProvider, error) {
	rs, err := q.r.query(ctx, `SELECT `+messageProviderColumns+` FROM oauth_providers WHERE app_id = $1 ORDER BY slug`, appID)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanMessageProvider)
}

// GetOAuthProvider returns one of an app's social sign-in providers or ErrNotFound.
func (q Queries) GetOAuthProvider(ctx context.Context, appID, slug string) (OAuthProvider, error) {
	return scanMessageProvider(q.r.queryRow(ctx, `SELECT `+messageProviderColumns+` FROM oauth_providers
		WHERE app_id = $1 AND slug = $2`, appID, slug))
}

// PutOAuthProvider inserts p, or replaces every field but created_at of
// the app's provider with p's slug.
func (q Queries) PutOAuthProvider(ctx context.Context, p OAuthProvider) error {
	return q.putProvider(ctx, "oauth_providers", p)
}

// DeleteOAuthProvider deletes one of an app's social sign-in providers;
// ErrNotFound when there is none by that slug.
func (q Queries) DeleteOAuthProvider(ctx context.Context, appID, slug string) error {
	n, err := q.w.exec(ctx, `DELETE FROM oauth_providers WHERE app_id = $1 AND slug = $2`, appID, slug)
	if err == nil && n == 0 {
		err = ErrNotFound
	}
	return err
}
