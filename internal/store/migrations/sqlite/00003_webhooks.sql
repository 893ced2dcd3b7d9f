-- +goose Up
CREATE TABLE webhook_endpoints (
    id                     TEXT PRIMARY KEY,
    app_id                 TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    url                    TEXT NOT NULL,
    description            TEXT NOT NULL DEFAULT '',
    event_types            TEXT NOT NULL DEFAULT '[]',
    retry_limit            INTEGER NOT NULL,
    metadata               TEXT NOT NULL DEFAULT '{}',
    enabled                BOOLEAN NOT NULL,
    secret_sealed          BLOB NOT NULL,
    previous_secret_sealed BLOB,
    previous_expires_at    TIMESTAMP,
    created_at             TIMESTAMP NOT NULL,
    updated_at             TIMESTAMP NOT NULL
);
CREATE INDEX webhook_endpoints_app ON webhook_endpoints (app_id, created_at);

-- The envelope is serialised once and stored as sent, so every attempt to
-- every endpoint signs and sends the same bytes with the same id.
CREATE TABLE webhook_events (
    id         TEXT PRIMARY KEY,
    app_id     TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    event_type TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id        TEXT NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    event_type      TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    max_attempts    INTEGER NOT NULL,
    next_attempt_at TIMESTAMP,
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL,
    delivered_at    TIMESTAMP
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at);

CREATE TABLE webhook_attempts (
    id              TEXT PRIMARY KEY,
    delivery_id     TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt         INTEGER NOT NULL,
    started_at      TIMESTAMP NOT NULL,
    duration_ms     INTEGER NOT NULL,
    response_status INTEGER,
    response_body   TEXT NOT NULL DEFAULT '',
    error           TEXT NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempt);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_events;
DROP TABLE webhook_endpoints;
