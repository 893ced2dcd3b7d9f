-- +goose Up
-- Consent for cross-device magic links: how the poller's release was
-- decided (same_device, approved, denied, opener_only), the number both
-- devices show, and the requester's approximate place when a trusted proxy
-- said it.
ALTER TABLE challenges ADD COLUMN consent TEXT NOT NULL DEFAULT '';
ALTER TABLE challenges ADD COLUMN match_number INTEGER NOT NULL DEFAULT 0;
ALTER TABLE challenges ADD COLUMN location TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE challenges DROP COLUMN location;
ALTER TABLE challenges DROP COLUMN match_number;
ALTER TABLE challenges DROP COLUMN consent;
