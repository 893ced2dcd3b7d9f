-- +goose Up
-- An invitation sent by SMS is a short link ({base_url}/m/{code}), as a
-- magic link sent by SMS is: the keyed hash of its code, and the invitation
-- token it stands for, sealed with the master key.
ALTER TABLE invitations ADD COLUMN short_hash TEXT;
ALTER TABLE invitations ADD COLUMN short_token_sealed TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX invitations_short_hash ON invitations (short_hash);

-- +goose Down
DROP INDEX invitations_short_hash;
ALTER TABLE invitations DROP COLUMN short_token_sealed;
ALTER TABLE invitations DROP COLUMN short_hash;
