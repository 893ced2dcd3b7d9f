-- +goose Up
-- An app's own e-mail and SMS providers (interface §2.4). One row per
-- configured provider; slug names it within the app (today the provider
-- type: one slot per type). config holds the settings that are not secret
-- (JSON object of strings); secrets_sealed the secret ones, as a JSON object
-- sealed with the master key, bound to the app and the slug.
CREATE TABLE message_providers (
    app_id         TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    slug           TEXT NOT NULL,
    provider_type  TEXT NOT NULL,
    name           TEXT NOT NULL DEFAULT '',
    enabled        BOOLEAN NOT NULL DEFAULT FALSE,
    config         TEXT NOT NULL DEFAULT '{}',
    secrets_sealed BLOB,
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL,
    PRIMARY KEY (app_id, slug)
);

-- +goose Down
DROP TABLE message_providers;
