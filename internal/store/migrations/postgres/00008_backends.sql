-- +goose Up
-- The algorithm an app's access tokens are signed with ('' follows the
-- server default), and whether the app accepts test identities (addresses
-- and numbers that are never sent anything and take one fixed code).
ALTER TABLE apps ADD COLUMN access_token_alg TEXT NOT NULL DEFAULT '';
ALTER TABLE apps ADD COLUMN test_identities BOOLEAN NOT NULL DEFAULT FALSE;

-- User search by prefix of e-mail or phone (GET /v1/{app}/users?q=) is a
-- range scan on these indexes. Byte order ("C") makes a prefix one
-- contiguous range whatever the database's collation.
CREATE INDEX app_users_email_prefix ON app_users (app_id, email COLLATE "C");
CREATE INDEX app_users_phone_prefix ON app_users (app_id, phone COLLATE "C");

-- Machine-to-machine clients: a client id (the row id) and a secret stored
-- as a keyed hash, the scopes it may ask for.
CREATE TABLE m2m_clients (
    id           TEXT PRIMARY KEY,
    app_id       TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    secret_hash  TEXT NOT NULL UNIQUE,
    secret_last4 TEXT NOT NULL,
    scopes       TEXT NOT NULL DEFAULT '[]',
    created_at   TIMESTAMPTZ NOT NULL,
    last_used_at TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ
);
CREATE INDEX m2m_clients_app ON m2m_clients (app_id, created_at);

-- One row per client_credentials grant: its tokens carry the id (sid) and
-- are accepted only while the row is live.
CREATE TABLE m2m_sessions (
    id         TEXT PRIMARY KEY,
    app_id     TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    client_id  TEXT NOT NULL REFERENCES m2m_clients (id) ON DELETE CASCADE,
    scopes     TEXT NOT NULL DEFAULT '[]',
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ
);
CREATE INDEX m2m_sessions_client ON m2m_sessions (client_id, expires_at);
CREATE INDEX m2m_sessions_expiry ON m2m_sessions (expires_at);

-- +goose Down
DROP TABLE m2m_sessions;
DROP TABLE m2m_clients;
DROP INDEX app_users_phone_prefix;
DROP INDEX app_users_email_prefix;
ALTER TABLE apps DROP COLUMN test_identities;
ALTER TABLE apps DROP COLUMN access_token_alg;
