-- +goose Up
-- Social sign-in (docs/social-sign-in.md).
--
-- oauth_states: a sign-in sent to a provider and not yet back. The state
-- itself is never stored, only its keyed hash (the PKCE verifier and the
-- nonce are derived from it with the server's key, so they are not stored
-- either); binding_hash is the keyed hash of the browser's binding cookie.
-- A row is taken (deleted) by the one callback that uses it.
CREATE TABLE oauth_states (
    state_hash   TEXT PRIMARY KEY,
    app_id       TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    provider     TEXT NOT NULL,
    callback_url TEXT NOT NULL,
    binding_hash TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX oauth_states_expiry ON oauth_states (expires_at);

-- identities: a user's accounts at an app's providers. (app, provider,
-- subject) names one account; issuer is the provider's issuer when it was
-- linked, so an account of another issuer under a reused slug never signs
-- in as this user. Provider tokens are not stored.
CREATE TABLE identities (
    id           TEXT PRIMARY KEY,
    app_id       TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    app_user_id  TEXT NOT NULL REFERENCES app_users (id) ON DELETE CASCADE,
    provider     TEXT NOT NULL,
    issuer       TEXT NOT NULL,
    subject      TEXT NOT NULL,
    email        TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL,
    last_used_at TIMESTAMPTZ NOT NULL,
    UNIQUE (app_id, provider, subject)
);
CREATE INDEX identities_user ON identities (app_user_id);

-- +goose Down
DROP TABLE identities;
DROP TABLE oauth_states;
