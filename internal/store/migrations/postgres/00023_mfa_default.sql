-- +goose Up
-- The second factor a user chose as their default (PATCH
-- /v1/auth/{app_id}/mfa/methods/{id} {is_default: true}): an authenticator
-- app's or a passkey's id. Without a row, or when the chosen one is gone,
-- the user's first verified second factor is the default.
CREATE TABLE mfa_defaults (
    app_user_id TEXT PRIMARY KEY REFERENCES app_users (id) ON DELETE CASCADE,
    method_id   TEXT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE mfa_defaults;
