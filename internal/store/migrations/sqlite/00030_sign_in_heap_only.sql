-- +goose Up
-- Nothing changes on SQLite: it has no heap-only updates to lose, and its
-- update of a user's row rewrites only the indexes whose columns changed,
-- so app_users_app_last_used costs a sign-in one index entry and keeps the
-- console's order by last sign-in a range read. (PostgreSQL drops it; see
-- its 00030.)
SELECT 1;

-- +goose Down
SELECT 1;
