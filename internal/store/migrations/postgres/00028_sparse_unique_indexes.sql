-- +goose NO TRANSACTION
-- +goose Up
-- The unique keys on columns most rows leave NULL hold only the rows that
-- have a value: a challenge's poll handle and short link (a code sent to
-- sign in has neither), an app user's passkey handle (passkey users only). A NULL
-- entry never collides, so the same uniqueness, but each was written for
-- every code challenge and every user, on insert and on every update that
-- is not HOT: about six of the 35 index entries a code login wrote.
-- Built concurrently: sign-ins go on. A build cut off (a killed migration,
-- a timeout) leaves an invalid index that IF NOT EXISTS would take for
-- done: such leftovers are dropped first, and the old keys go only once all
-- three new ones are valid.
-- +goose StatementBegin
DO $$
DECLARE
    name text;
BEGIN
    FOREACH name IN ARRAY ARRAY['challenges_poll_hash_set', 'challenges_short_hash_set', 'app_users_webauthn_handle_set'] LOOP
        IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(name) AND NOT indisvalid) THEN
            EXECUTE format('DROP INDEX %I', name);
        END IF;
    END LOOP;
END $$;
-- +goose StatementEnd
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS challenges_poll_hash_set ON challenges (poll_hash) WHERE poll_hash IS NOT NULL;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS challenges_short_hash_set ON challenges (short_hash) WHERE short_hash IS NOT NULL;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS app_users_webauthn_handle_set ON app_users (webauthn_handle) WHERE webauthn_handle IS NOT NULL;
-- +goose StatementBegin
DO $$
BEGIN
    IF (SELECT count(*) FROM pg_index WHERE indisvalid AND indexrelid IN (to_regclass('challenges_poll_hash_set'),
            to_regclass('challenges_short_hash_set'), to_regclass('app_users_webauthn_handle_set'))) <> 3 THEN
        RAISE EXCEPTION 'the indexes of 00028_sparse_unique_indexes are not all valid: the old unique keys stay';
    END IF;
END $$;
-- +goose StatementEnd
-- A unique constraint's drop locks its table exclusively, once the
-- transactions under way on it end; every statement on the table queues
-- behind it meanwhile. So each try waits at most 200 ms (a long transaction,
-- a dump, would otherwise hold up every sign-in), lets go and tries again.
-- A plain index goes concurrently.
-- +goose StatementBegin
DO $$
BEGIN
    FOR attempt IN 1..150 LOOP
        BEGIN
            PERFORM set_config('lock_timeout', '200ms', true);
            ALTER TABLE challenges DROP CONSTRAINT IF EXISTS challenges_poll_hash_key;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_sleep(0.05 + random() * 0.2);
        END;
    END LOOP;
    RAISE EXCEPTION 'could not lock challenges in 150 tries (a long transaction holds it?): run the migration again';
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
DO $$
BEGIN
    FOR attempt IN 1..150 LOOP
        BEGIN
            PERFORM set_config('lock_timeout', '200ms', true);
            ALTER TABLE app_users DROP CONSTRAINT IF EXISTS app_users_webauthn_handle_key;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_sleep(0.05 + random() * 0.2);
        END;
    END LOOP;
    RAISE EXCEPTION 'could not lock app_users in 150 tries (a long transaction holds it?): run the migration again';
END $$;
-- +goose StatementEnd
DROP INDEX CONCURRENTLY IF EXISTS challenges_short_hash;

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    name text;
BEGIN
    FOREACH name IN ARRAY ARRAY['challenges_poll_hash_key', 'challenges_short_hash', 'app_users_webauthn_handle_key'] LOOP
        IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(name) AND NOT indisvalid) THEN
            EXECUTE format('DROP INDEX %I', name);
        END IF;
    END LOOP;
END $$;
-- +goose StatementEnd
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS challenges_poll_hash_key ON challenges (poll_hash);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS challenges_short_hash ON challenges (short_hash);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS app_users_webauthn_handle_key ON app_users (webauthn_handle);
ALTER TABLE challenges ADD CONSTRAINT challenges_poll_hash_key UNIQUE USING INDEX challenges_poll_hash_key;
ALTER TABLE app_users ADD CONSTRAINT app_users_webauthn_handle_key UNIQUE USING INDEX app_users_webauthn_handle_key;
DROP INDEX CONCURRENTLY IF EXISTS app_users_webauthn_handle_set;
DROP INDEX CONCURRENTLY IF EXISTS challenges_short_hash_set;
DROP INDEX CONCURRENTLY IF EXISTS challenges_poll_hash_set;
