-- +goose NO TRANSACTION
-- +goose Up
-- Every sign-in writes the user's last_used_at. While an index held that
-- column (00022, for the console's order by last sign-in) no such write
-- could be a heap-only (HOT) update: each one added an entry to every
-- index of app_users (six for a user with an e-mail address), about a
-- tenth of a code login's CPU. Without the index the write stays on the
-- row's page when the page has room. The console's order by last sign-in
-- now reads the app's users and sorts them.
DROP INDEX CONCURRENTLY IF EXISTS app_users_app_last_used;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS app_users_app_last_used ON app_users (app_id, last_used_at, id);
