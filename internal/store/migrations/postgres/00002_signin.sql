-- +goose Up
-- A challenge is one attempt to prove control of an identifier: a one-time
-- code or a magic link. Secrets are stored only as keyed hashes.
CREATE TABLE challenges (
    id                 TEXT PRIMARY KEY,
    app_id             TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    app_user_id        TEXT NOT NULL REFERENCES app_users (id) ON DELETE CASCADE,
    purpose            TEXT NOT NULL,
    method             TEXT NOT NULL,
    recipient          TEXT NOT NULL,
    status             TEXT NOT NULL,
    secret_hash        TEXT NOT NULL UNIQUE,
    poll_hash          TEXT UNIQUE,
    remaining_attempts INTEGER NOT NULL,
    webauthn_enabled   BOOLEAN NOT NULL DEFAULT FALSE,
    ip                 TEXT NOT NULL DEFAULT '',
    user_agent         TEXT NOT NULL DEFAULT '',
    created_at         TIMESTAMPTZ NOT NULL,
    expires_at         TIMESTAMPTZ NOT NULL,
    completed_at       TIMESTAMPTZ,
    collected_at       TIMESTAMPTZ
);
CREATE INDEX challenges_user ON challenges (app_user_id, status, created_at);
CREATE INDEX challenges_expiry ON challenges (status, expires_at);

-- A session is one signed-in device; its refresh tokens form one family.
CREATE TABLE sessions (
    id             TEXT PRIMARY KEY,
    app_id         TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    app_user_id    TEXT NOT NULL REFERENCES app_users (id) ON DELETE CASCADE,
    method         TEXT NOT NULL,
    user_agent     TEXT NOT NULL DEFAULT '',
    ip             TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL,
    last_active_at TIMESTAMPTZ NOT NULL,
    expires_at     TIMESTAMPTZ NOT NULL,
    revoked_at     TIMESTAMPTZ
);
CREATE INDEX sessions_user ON sessions (app_user_id, created_at);

CREATE TABLE refresh_tokens (
    id               TEXT PRIMARY KEY,
    session_id       TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    token_hash       TEXT NOT NULL UNIQUE,
    created_at       TIMESTAMPTZ NOT NULL,
    expires_at       TIMESTAMPTZ NOT NULL,
    used_at          TIMESTAMPTZ,
    successor_sealed BYTEA
);
CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id);

-- GCRA buckets shared by every replica; losing them in a crash only resets limits.
CREATE UNLOGGED TABLE rate_limits (
    key        TEXT PRIMARY KEY,
    tat        BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX rate_limits_expiry ON rate_limits (expires_at);

-- +goose Down
DROP TABLE rate_limits;
DROP TABLE refresh_tokens;
DROP TABLE sessions;
DROP TABLE challenges;
