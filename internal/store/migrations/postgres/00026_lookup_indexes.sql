-- +goose NO TRANSACTION
-- +goose Up
-- A sign-in finds its user by address: the unique indexes that serve the
-- lookup now lead with the address, not with the app (or workspace). Led by
-- app_id, they were one of several (app_id, …) indexes a plan made before
-- the planner had statistics (a young table, or autovacuum off) could take
-- for the lookup, reading every user of the app for each sign-in (one plan
-- per connection, kept for the connection's life). The sign-in's statements
-- compare app_id in a form no index offers, so only these serve them. They
-- hold only the rows that have the address: an e-mail user writes no entry
-- for a phone it does not have. Same uniqueness as the constraints they
-- replace (NULLs never collide). Built concurrently: sign-ins go on.
--
-- A concurrent build cut off (a killed migration, a timeout) leaves an
-- invalid index that IF NOT EXISTS would take for done: drop such leftovers
-- first, and drop the old constraints only once all four are valid.
-- +goose StatementBegin
DO $$
DECLARE
    name text;
BEGIN
    FOREACH name IN ARRAY ARRAY['app_users_email_app', 'app_users_phone_app', 'base_users_email_workspace', 'base_users_phone_workspace'] LOOP
        IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(name) AND NOT indisvalid) THEN
            EXECUTE format('DROP INDEX %I', name);
        END IF;
    END LOOP;
END $$;
-- +goose StatementEnd
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS app_users_email_app ON app_users (email, app_id) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS app_users_phone_app ON app_users (phone, app_id) WHERE phone IS NOT NULL;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS base_users_email_workspace ON base_users (email, workspace_id) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS base_users_phone_workspace ON base_users (phone, workspace_id) WHERE phone IS NOT NULL;
-- +goose StatementBegin
DO $$
BEGIN
    IF (SELECT count(*) FROM pg_index WHERE indisvalid AND indexrelid IN (to_regclass('app_users_email_app'),
            to_regclass('app_users_phone_app'), to_regclass('base_users_email_workspace'), to_regclass('base_users_phone_workspace'))) <> 4 THEN
        RAISE EXCEPTION 'the address indexes of 00026_lookup_indexes are not all valid: the old unique constraints stay';
    END IF;
END $$;
-- +goose StatementEnd
ALTER TABLE app_users DROP CONSTRAINT IF EXISTS app_users_app_id_email_key, DROP CONSTRAINT IF EXISTS app_users_app_id_phone_key;
ALTER TABLE base_users DROP CONSTRAINT IF EXISTS base_users_workspace_id_email_key, DROP CONSTRAINT IF EXISTS base_users_workspace_id_phone_key;

-- +goose Down
-- The constraints come back on indexes built concurrently, then attached
-- (an invalid leftover of a build cut off is dropped first, as above).
-- +goose StatementBegin
DO $$
DECLARE
    name text;
BEGIN
    FOREACH name IN ARRAY ARRAY['app_users_app_id_email_key', 'app_users_app_id_phone_key', 'base_users_workspace_id_email_key', 'base_users_workspace_id_phone_key'] LOOP
        IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(name) AND NOT indisvalid) THEN
            EXECUTE format('DROP INDEX %I', name);
        END IF;
    END LOOP;
END $$;
-- +goose StatementEnd
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS app_users_app_id_email_key ON app_users (app_id, email);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS app_users_app_id_phone_key ON app_users (app_id, phone);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS base_users_workspace_id_email_key ON base_users (workspace_id, email);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS base_users_workspace_id_phone_key ON base_users (workspace_id, phone);
ALTER TABLE app_users ADD CONSTRAINT app_users_app_id_email_key UNIQUE USING INDEX app_users_app_id_email_key,
    ADD CONSTRAINT app_users_app_id_phone_key UNIQUE USING INDEX app_users_app_id_phone_key;
ALTER TABLE base_users ADD CONSTRAINT base_users_workspace_id_email_key UNIQUE USING INDEX base_users_workspace_id_email_key,
    ADD CONSTRAINT base_users_workspace_id_phone_key UNIQUE USING INDEX base_users_workspace_id_phone_key;
DROP INDEX CONCURRENTLY IF EXISTS base_users_phone_workspace;
DROP INDEX CONCURRENTLY IF EXISTS base_users_email_workspace;
DROP INDEX CONCURRENTLY IF EXISTS app_users_phone_app;
DROP INDEX CONCURRENTLY IF EXISTS app_users_email_app;
