-- +goose Up
-- Passkeys (WebAuthn credentials). The credential column holds what the
-- verifier needs (public key, flags, counter, AAGUID) as the library's JSON;
-- the other columns are what lists show and queries need. A credential id is
-- unique across the server: the same id twice is a cloned or replayed
-- registration, never a second user's passkey.
CREATE TABLE passkeys (
    id                       TEXT PRIMARY KEY,
    app_id                   TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    app_user_id              TEXT NOT NULL REFERENCES app_users (id) ON DELETE CASCADE,
    credential_id            TEXT NOT NULL UNIQUE,
    credential               JSONB NOT NULL,
    name                     TEXT NOT NULL,
    aaguid                   TEXT NOT NULL DEFAULT '',
    attestation_format       TEXT NOT NULL DEFAULT '',
    authenticator_attachment TEXT NOT NULL DEFAULT '',
    transports               JSONB NOT NULL DEFAULT '[]',
    backup_eligible          BOOLEAN NOT NULL DEFAULT FALSE,
    backed_up                BOOLEAN NOT NULL DEFAULT FALSE,
    sign_count               BIGINT NOT NULL DEFAULT 0,
    suspended_at             TIMESTAMPTZ,
    user_agent               TEXT NOT NULL DEFAULT '',
    created_at               TIMESTAMPTZ NOT NULL,
    updated_at               TIMESTAMPTZ NOT NULL,
    last_used_at             TIMESTAMPTZ,
    last_used_ip             TEXT NOT NULL DEFAULT ''
);
CREATE INDEX passkeys_user ON passkeys (app_user_id, created_at);

-- A WebAuthn ceremony between its options and its answer: any replica can
-- finish what another began. Found by the challenge the browser signs over
-- (its keyed hash), deleted by the statement that reads it, so a ceremony
-- is finished at most once.
CREATE TABLE passkey_ceremonies (
    id             TEXT PRIMARY KEY,
    app_id         TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    app_user_id    TEXT REFERENCES app_users (id) ON DELETE CASCADE,
    kind           TEXT NOT NULL,
    challenge_hash TEXT NOT NULL UNIQUE,
    session        JSONB NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    expires_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX passkey_ceremonies_expiry ON passkey_ceremonies (expires_at);

-- The WebAuthn user handle (64 random bytes, no personal data), made at a
-- user's first registration; and the attachments of the user's passkeys,
-- kept beside webauthn_enabled so reading a user stays one query.
ALTER TABLE app_users ADD COLUMN webauthn_handle BYTEA UNIQUE;
ALTER TABLE app_users ADD COLUMN webauthn_types TEXT NOT NULL DEFAULT '';

-- The passkey a session signed in with, if any (the client SDK's credential_id).
ALTER TABLE sessions ADD COLUMN credential_id TEXT NOT NULL DEFAULT '';

-- Per-app WebAuthn settings: RP id ('' = the origin's host), user
-- verification and attestation conveyance.
ALTER TABLE apps ADD COLUMN webauthn_rp_id TEXT NOT NULL DEFAULT '';
ALTER TABLE apps ADD COLUMN webauthn_user_verification TEXT NOT NULL DEFAULT 'required';
ALTER TABLE apps ADD COLUMN webauthn_attestation TEXT NOT NULL DEFAULT 'none';

-- +goose Down
ALTER TABLE apps DROP COLUMN webauthn_attestation;
ALTER TABLE apps DROP COLUMN webauthn_user_verification;
ALTER TABLE apps DROP COLUMN webauthn_rp_id;
ALTER TABLE sessions DROP COLUMN credential_id;
ALTER TABLE app_users DROP COLUMN webauthn_types;
ALTER TABLE app_users DROP COLUMN webauthn_handle;
DROP TABLE passkey_ceremonies;
DROP TABLE passkeys;
