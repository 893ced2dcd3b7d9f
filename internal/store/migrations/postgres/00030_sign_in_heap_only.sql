-- +goose NO TRANSACTION
-- +goose Up
-- Every sign-in writes the user's last_used_at. While an index held that
-- column (00022, for the console's order by last sign-in) no such write
-- could be a heap-only (HOT) update: each one added an entry to every
-- index of app_users (six for a user with an e-mail address), a few per
-- cent of a code login's CPU. Without the index the write stays on the
-- row's page when the page has room. The console's order by last sign-in
-- now sorts the app's users. Dropped concurrently: sign-ins go on.
DROP INDEX CONCURRENTLY IF EXISTS app_users_app_last_used;

-- +goose Down
-- A concurrent build cut off leaves an invalid index that IF NOT EXISTS
-- would take for done: drop such a leftover first, as 00026 does.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('app_users_app_last_used') AND NOT indisvalid) THEN
        DROP INDEX app_users_app_last_used;
    END IF;
END $$;
-- +goose StatementEnd
CREATE INDEX CONCURRENTLY IF NOT EXISTS app_users_app_last_used ON app_users (app_id, last_used_at, id);
