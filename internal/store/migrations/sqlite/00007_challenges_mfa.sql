-- +goose Up
-- Challenges become a resource (interface §2.6): a bearer token (its keyed
-- hash lives in poll_hash, which magic links already use for their polling
-- handle, so one lookup serves both), an intent, a JSON data object (the
-- first factor of an MFA sign-in, the new identifier of a change, a passkey
-- ceremony), the session a step-up or a push belongs to, and the time its
-- result was handed out.
ALTER TABLE challenges ADD COLUMN intent TEXT NOT NULL DEFAULT '';
ALTER TABLE challenges ADD COLUMN data TEXT NOT NULL DEFAULT '{}';
ALTER TABLE challenges ADD COLUMN session_id TEXT NOT NULL DEFAULT '';

-- When a session last proved who its user is (sign-in or step-up) and with
-- which methods: the access token's auth_time and amr; and the authenticator
-- app or passkey of its last step-up, which that step-up may not remove.
ALTER TABLE sessions ADD COLUMN auth_time TIMESTAMP;
ALTER TABLE sessions ADD COLUMN amr TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN step_up_factor TEXT NOT NULL DEFAULT '';

-- Per-app MFA policy and the enumeration switch of POST /challenges.
ALTER TABLE apps ADD COLUMN mfa_policy TEXT NOT NULL DEFAULT 'off';
ALTER TABLE apps ADD COLUMN mfa_methods_allowed TEXT NOT NULL DEFAULT '["totp","backup_code","webauthn"]';
ALTER TABLE apps ADD COLUMN mfa_reverify_minutes INTEGER NOT NULL DEFAULT 10;
ALTER TABLE apps ADD COLUMN enumeration_protection BOOLEAN NOT NULL DEFAULT FALSE;

-- TOTP authenticators. The secret is sealed (AES-GCM under the master key);
-- last_used_step refuses a code at or below the step last accepted, so a
-- code works once.
CREATE TABLE totp_enrollments (
    id             TEXT PRIMARY KEY,
    app_id         TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    app_user_id    TEXT NOT NULL REFERENCES app_users (id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    secret_sealed  BLOB NOT NULL,
    verified       BOOLEAN NOT NULL DEFAULT FALSE,
    last_used_step BIGINT NOT NULL DEFAULT 0,
    created_at     TIMESTAMP NOT NULL,
    verified_at    TIMESTAMP,
    last_used_at   TIMESTAMP
);
CREATE INDEX totp_enrollments_user ON totp_enrollments (app_user_id, created_at);

-- Backup codes, as keyed hashes; a new set replaces the old one.
CREATE TABLE backup_codes (
    id          TEXT PRIMARY KEY,
    app_id      TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    app_user_id TEXT NOT NULL REFERENCES app_users (id) ON DELETE CASCADE,
    code_hash   TEXT NOT NULL UNIQUE,
    created_at  TIMESTAMP NOT NULL,
    used_at     TIMESTAMP
);
CREATE INDEX backup_codes_user ON backup_codes (app_user_id);

-- Wrong TOTP and backup codes since the user's last success: their own
-- streak, so a lock of e-mail/SMS code entry never blocks them.
CREATE TABLE factor_failure_streaks (
    app_user_id TEXT NOT NULL REFERENCES app_users (id) ON DELETE CASCADE,
    method      TEXT NOT NULL,
    failures    INTEGER NOT NULL,
    updated_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (app_user_id, method)
);
