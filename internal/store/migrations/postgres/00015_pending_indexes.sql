-- +goose NO TRANSACTION
-- +goose Up
-- Indexes the planner could mistake for a short cut. With statistics that
-- saw few pending challenges (a young table, or one analysed at a quiet
-- moment), (status, expires_at) looked like the cheapest way to find one
-- user's pending challenge, so sending and verifying a code read every
-- pending challenge of every app; and (app_id, phone) looked like a way to
-- find a user by id, reading every user of the app. As partial indexes they
-- hold only what they are for (pending challenges; users who have a phone,
-- or an e-mail address), so their size, which the planner reads as it
-- plans, tells it what scanning them costs. Built concurrently: sign-ins
-- go on while they are made.
CREATE INDEX CONCURRENTLY IF NOT EXISTS challenges_pending_expiry ON challenges (expires_at) WHERE status = 'pending';
DROP INDEX CONCURRENTLY IF EXISTS challenges_expiry;
CREATE INDEX CONCURRENTLY IF NOT EXISTS app_users_email_prefix_set ON app_users (app_id, email COLLATE "C") WHERE email IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS app_users_email_prefix;
CREATE INDEX CONCURRENTLY IF NOT EXISTS app_users_phone_prefix_set ON app_users (app_id, phone COLLATE "C") WHERE phone IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS app_users_phone_prefix;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS challenges_expiry ON challenges (status, expires_at);
DROP INDEX CONCURRENTLY IF EXISTS challenges_pending_expiry;
CREATE INDEX CONCURRENTLY IF NOT EXISTS app_users_email_prefix ON app_users (app_id, email COLLATE "C");
DROP INDEX CONCURRENTLY IF EXISTS app_users_email_prefix_set;
CREATE INDEX CONCURRENTLY IF NOT EXISTS app_users_phone_prefix ON app_users (app_id, phone COLLATE "C");
DROP INDEX CONCURRENTLY IF EXISTS app_users_phone_prefix_set;
