-- +goose NO TRANSACTION
-- +goose Up
-- The console's home page counts each app's sessions and its sign-ins of
-- the last seven days; without this index that reads every session of
-- every app. It holds every column the counts read, so they read the
-- index alone, and leads with the expression app_id || '' (the count queries say
-- so), not on app_id: a plain (app_id, created_at) index would also offer
-- itself to the queries of one user's sessions (app_id and app_user_id),
-- and a planner without statistics may take it there and read every
-- session of the app instead of the user's few. Built concurrently:
-- sign-ins go on while it is made.
CREATE INDEX CONCURRENTLY IF NOT EXISTS sessions_app_created ON sessions ((app_id || ''), created_at, expires_at, revoked_at, app_id);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS sessions_app_created;
