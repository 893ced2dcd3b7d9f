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
ALTER TABLE challenges DROP CONSTRAINT IF EXISTS challenges_app_id_fkey;
ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_app_id_fkey;

-- +goose Down
-- NOT VALID, then validated: the check of the existing rows does not keep
-- sign-ins waiting.
ALTER TABLE challenges ADD CONSTRAINT challenges_app_id_fkey FOREIGN KEY (app_id) REFERENCES apps (id) ON DELETE CASCADE NOT VALID;
ALTER TABLE challenges VALIDATE CONSTRAINT challenges_app_id_fkey;
ALTER TABLE sessions ADD CONSTRAINT sessions_app_id_fkey FOREIGN KEY (app_id) REFERENCES apps (id) ON DELETE CASCADE NOT VALID;
ALTER TABLE sessions VALIDATE CONSTRAINT sessions_app_id_fkey;
