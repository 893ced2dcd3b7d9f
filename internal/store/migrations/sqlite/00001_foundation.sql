-- +goose Up
CREATE TABLE workspaces (
    id                    TEXT PRIMARY KEY,
    name                  TEXT NOT NULL,
    slug                  TEXT NOT NULL UNIQUE,
    personal              BOOLEAN NOT NULL DEFAULT FALSE,
    settings              TEXT NOT NULL DEFAULT '{}',
    is_pro                BOOLEAN NOT NULL DEFAULT FALSE,
    public_signup         BOOLEAN NOT NULL DEFAULT TRUE,
    user_info_requirement TEXT NOT NULL DEFAULT 'none',
    logo_url              TEXT NOT NULL DEFAULT '',
    created_at            TIMESTAMP NOT NULL,
    updated_at            TIMESTAMP NOT NULL
);

CREATE TABLE workspace_members (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    email        TEXT NOT NULL,
    name         TEXT NOT NULL DEFAULT '',
    role         TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL,
    UNIQUE (workspace_id, email)
);

CREATE TABLE apps (
    id                    TEXT PRIMARY KEY,
    workspace_id          TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name                  TEXT NOT NULL,
    slug                  TEXT NOT NULL,
    origin                TEXT NOT NULL,
    allowed_origins       TEXT NOT NULL DEFAULT '[]',
    login_url             TEXT NOT NULL DEFAULT '',
    callback_url          TEXT NOT NULL DEFAULT '',
    logo                  TEXT NOT NULL DEFAULT '',
    logo_dark             TEXT NOT NULL DEFAULT '',
    public_signup         BOOLEAN NOT NULL DEFAULT TRUE,
    profile_management    BOOLEAN NOT NULL DEFAULT TRUE,
    service_branding      BOOLEAN NOT NULL DEFAULT TRUE,
    email_auth_type       TEXT NOT NULL DEFAULT 'magic',
    auto_refresh          BOOLEAN NOT NULL DEFAULT TRUE,
    access_expiration     INTEGER NOT NULL DEFAULT 900,
    refresh_expiration    INTEGER NOT NULL DEFAULT 604800,
    magic_link_expiration INTEGER NOT NULL DEFAULT 600,
    allowed_identifiers   TEXT NOT NULL DEFAULT '["email","phone"]',
    required_identifiers  TEXT NOT NULL DEFAULT '[]',
    user_meta_data_schema TEXT NOT NULL DEFAULT '[]',
    created_at            TIMESTAMP NOT NULL,
    updated_at            TIMESTAMP NOT NULL,
    UNIQUE (workspace_id, slug)
);

CREATE TABLE api_secrets (
    id           TEXT PRIMARY KEY,
    app_id       TEXT REFERENCES apps (id) ON DELETE CASCADE,
    workspace_id TEXT REFERENCES workspaces (id) ON DELETE CASCADE,
    member_id    TEXT REFERENCES workspace_members (id) ON DELETE CASCADE,
    name         TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMP NOT NULL,
    revoked_at   TIMESTAMP,
    CHECK ((app_id IS NULL) <> (workspace_id IS NULL))
);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    app_id       TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    nickname     TEXT NOT NULL,
    key_hash     TEXT NOT NULL UNIQUE,
    last4        TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    revoked_at   TIMESTAMP
);
CREATE INDEX api_keys_app ON api_keys (app_id, created_at);

CREATE TABLE signing_keys (
    id             TEXT PRIMARY KEY,
    alg            TEXT NOT NULL,
    private_sealed BLOB NOT NULL,
    status         TEXT NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    retired_at     TIMESTAMP,
    publish_until  TIMESTAMP
);

CREATE TABLE base_users (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    email        TEXT,
    phone        TEXT,
    created_at   TIMESTAMP NOT NULL,
    UNIQUE (workspace_id, email),
    UNIQUE (workspace_id, phone)
);

CREATE TABLE app_users (
    id               TEXT PRIMARY KEY,
    app_id           TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    user_id          TEXT NOT NULL REFERENCES base_users (id),
    status           TEXT NOT NULL,
    email            TEXT,
    phone            TEXT,
    email_verified   BOOLEAN NOT NULL DEFAULT FALSE,
    phone_verified   BOOLEAN NOT NULL DEFAULT FALSE,
    webauthn_enabled BOOLEAN NOT NULL DEFAULT FALSE,
    user_meta        TEXT NOT NULL DEFAULT '{}',
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL,
    last_used_at     TIMESTAMP,
    UNIQUE (app_id, email),
    UNIQUE (app_id, phone),
    UNIQUE (app_id, user_id)
);
CREATE INDEX app_users_app_created ON app_users (app_id, created_at, id);

CREATE TABLE invitations (
    id          TEXT PRIMARY KEY,
    app_id      TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    app_user_id TEXT NOT NULL REFERENCES app_users (id) ON DELETE CASCADE,
    token_hash  TEXT NOT NULL UNIQUE,
    expires_at  TIMESTAMP NOT NULL,
    used_at     TIMESTAMP,
    created_at  TIMESTAMP NOT NULL
);
CREATE INDEX invitations_user ON invitations (app_user_id);

CREATE TABLE outbox_messages (
    id         TEXT PRIMARY KEY,
    app_id     TEXT NOT NULL DEFAULT '',
    channel    TEXT NOT NULL,
    recipient  TEXT NOT NULL,
    subject    TEXT NOT NULL DEFAULT '',
    text_body  TEXT NOT NULL DEFAULT '',
    html_body  TEXT NOT NULL DEFAULT '',
    code       TEXT NOT NULL DEFAULT '',
    link       TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX outbox_messages_recipient ON outbox_messages (recipient, created_at);

CREATE TABLE server_state (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE server_state;
DROP TABLE outbox_messages;
DROP TABLE invitations;
DROP TABLE app_users;
DROP TABLE base_users;
DROP TABLE signing_keys;
DROP TABLE api_keys;
DROP TABLE api_secrets;
DROP TABLE apps;
DROP TABLE workspace_members;
DROP TABLE workspaces;
