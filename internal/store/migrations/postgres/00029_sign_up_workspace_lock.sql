-- +goose NO TRANSACTION
-- +goose Up
-- A sign-up's new person (base_users) no longer checks its workspace against
-- workspaces. The check takes a shared key lock on the workspace's row, a row
-- every concurrent sign-up of every app in the workspace locks too, so
-- PostgreSQL remakes the row's multixact with all current holders on each
-- sign-up and WAL-logs the lock (as 00027 found for the app's row). The key
-- is redundant: a person is only ever inserted in the transaction that
-- inserts its first app user, whose key to apps (app_users_app_id_fkey,
-- still there) locks the app's row, and the app belongs to the workspace
-- (apps_workspace_id_fkey); workspace_id is written from that app. People
-- are never deleted, and no workspace is either: a command that deletes a
-- workspace must delete its people itself, after its apps.
--
-- Dropping the key locks base_users and workspaces; each try waits at most
-- 200 ms and gives way, as in 00027.
-- +goose StatementBegin
DO $$
BEGIN
    FOR attempt IN 1..150 LOOP
        BEGIN
            PERFORM set_config('lock_timeout', '200ms', true);
            ALTER TABLE base_users DROP CONSTRAINT IF EXISTS base_users_workspace_id_fkey;
            RETURN;
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            PERFORM pg_sleep(0.05 + random() * 0.2);
        END;
    END LOOP;
    RAISE EXCEPTION 'could not lock base_users and workspaces in 150 tries (sign-ups kept them busy): run the migration again';
END $$;
-- +goose StatementEnd

-- +goose Down
-- NOT VALID, then validated in a transaction of its own: the check of the
-- existing rows does not keep sign-ups waiting.
ALTER TABLE base_users ADD CONSTRAINT base_users_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces (id) ON DELETE CASCADE NOT VALID;
ALTER TABLE base_users VALIDATE CONSTRAINT base_users_workspace_id_fkey;
