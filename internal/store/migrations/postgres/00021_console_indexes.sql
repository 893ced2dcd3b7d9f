-- +goose NO TRANSACTION
-- +goose Up
-- The console's home page counts each app's sessions and its sign-ins of
-- the last seven days; without this index that reads every session of
-- every app. Built concurrently: sign-ins go on while it is made.
CREATE INDEX CONCURRENTLY IF NOT EXISTS sessions_app_created ON sessions (app_id, created_at);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS sessions_app_created;
