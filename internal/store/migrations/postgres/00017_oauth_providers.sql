-- +goose Up
-- An app's social sign-in providers (docs/social-sign-in.md): Google,
-- Apple, Microsoft, GitHub or any OpenID provider. One row per provider;
-- slug names it within the app (several OpenID providers may sit side by
-- side). config holds the settings that are not secret (JSON object of
-- strings); secrets_sealed the secret ones (client secret, Apple's private
-- key), as a JSON object sealed with the master key, bound to the app and
-- the slug.
CREATE TABLE oauth_providers (
    app_id         TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    slug           TEXT NOT NULL,
    provider_type  TEXT NOT NULL,
    name           TEXT NOT NULL DEFAULT '',
    enabled        BOOLEAN NOT NULL DEFAULT FALSE,
    config         TEXT NOT NULL DEFAULT '{}',
    secrets_sealed BYTEA,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (app_id, slug)
);

-- +goose Down
DROP TABLE oauth_providers;
