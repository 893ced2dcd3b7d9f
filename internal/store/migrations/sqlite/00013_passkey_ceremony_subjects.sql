-- +goose Up
-- Whom a WebAuthn ceremony is for: a sign-in or registration ceremony names
-- its subject (a user, or the keyed hash of an identifier given stand-in
-- options), and one row per app, kind and subject means that starting a
-- ceremony replaces the subject's earlier one in the same statement.
-- Discoverable sign-ins have no subject; client_binding (a keyed hash of the
-- address and user agent that asked for one) ties them to that client.
ALTER TABLE passkey_ceremonies ADD COLUMN subject TEXT;
ALTER TABLE passkey_ceremonies ADD COLUMN client_binding TEXT;
CREATE UNIQUE INDEX passkey_ceremonies_subject ON passkey_ceremonies (app_id, kind, subject);

-- +goose Down
DROP INDEX passkey_ceremonies_subject;
ALTER TABLE passkey_ceremonies DROP COLUMN client_binding;
ALTER TABLE passkey_ceremonies DROP COLUMN subject;
