-- +goose Up
-- The expiry index holds only pending challenges (as on PostgreSQL, where
-- a full one misled the planner): the expiry sweep is all that reads it.
CREATE INDEX IF NOT EXISTS challenges_pending_expiry ON challenges (expires_at) WHERE status = 'pending';
DROP INDEX IF EXISTS challenges_expiry;

-- +goose Down
CREATE INDEX IF NOT EXISTS challenges_expiry ON challenges (status, expires_at);
DROP INDEX IF EXISTS challenges_pending_expiry;
