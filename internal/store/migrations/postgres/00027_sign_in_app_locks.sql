-- +goose NO TRANSACTION
-- +goose Up
-- A sign-in's challenge and session no longer check their app against apps.
-- Each such check takes a shared key lock on the app's row, the one row every
-- concurrent sign-in of the app locks too: PostgreSQL records the holders as
-- a multixact, remade with all of them on each new lock (about two per code
-- login at 16 clients), and the lock is WAL-logged on the app's row. Both
-- checks are redundant: a challenge and a session belong to an app user
-- (app_user_id, NOT NULL, a foreign key that cascades), the app user to the
-- app (app_users_app_id_fkey, still there), so an app's deletion removes
-- them through its users as before; app_id is written from the user's app.
--
-- Dropping a key locks both tables, and sign-ins under way lock them in
-- either order (a sign-up: apps, then challenges; a verify: challenges, then
-- apps): waiting could deadlock with one, which PostgreSQL might resolve by
-- failing the sign-in. So each try waits at most 200 ms (under
-- deadlock_timeout, so the migration gives way to a sign-in that began
-- waiting after it; one that had already waited most of a second for
-- another lock could still lose), then lets go of everything and tries
-- again; one table per transaction.
-- +goose StatementBegin
DO $$
BEGIN
    FOR attempt IN 1..150 LOOP
        BEGIN
            PERFORM set_config('lock_timeout', '200ms', true);
            ALTER TABLE challenges DROP CONSTRAINT IF EXISTS challenges_app_id_fkey;
            RETURN;
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            PERFORM pg_sleep(0.05 + random() * 0.2);
        END;
    END LOOP;
    RAISE EXCEPTION 'could not lock challenges and apps in 150 tries (sign-ins kept them busy): run the migration again';
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
DO $$
BEGIN
    FOR attempt IN 1..150 LOOP
        BEGIN
            PERFORM set_config('lock_timeout', '200ms', true);
            ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_app_id_fkey;
            RETURN;
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            PERFORM pg_sleep(0.05 + random() * 0.2);
        END;
    END LOOP;
    RAISE EXCEPTION 'could not lock sessions and apps in 150 tries (sign-ins kept them busy): run the migration again';
END $$;
-- +goose StatementEnd

-- +goose Down
-- NOT VALID, then validated in a transaction of its own: the check of the
-- existing rows does not keep sign-ins waiting.
ALTER TABLE challenges ADD CONSTRAINT challenges_app_id_fkey FOREIGN KEY (app_id) REFERENCES apps (id) ON DELETE CASCADE NOT VALID;
ALTER TABLE challenges VALIDATE CONSTRAINT challenges_app_id_fkey;
ALTER TABLE sessions ADD CONSTRAINT sessions_app_id_fkey FOREIGN KEY (app_id) REFERENCES apps (id) ON DELETE CASCADE NOT VALID;
ALTER TABLE sessions VALIDATE CONSTRAINT sessions_app_id_fkey;
