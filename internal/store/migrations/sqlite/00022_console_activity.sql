-- +goose Up
-- The console lists an app's users by last sign-in (most recent first,
-- then those who never signed in) in keyset pages: this index serves both
-- parts, the signed-in ones read backwards from a (last_used_at, id)
-- cursor and the never-signed-in ones (NULLs, kept together) by id.
CREATE INDEX IF NOT EXISTS app_users_app_last_used ON app_users (app_id, last_used_at, id);
-- A user's page shows the administrative changes made to them (entries
-- whose target is the user), newest first, without reading the workspace's
-- whole log.
CREATE INDEX IF NOT EXISTS audit_log_target ON audit_log (workspace_id, target_id, id);

-- +goose Down
DROP INDEX IF EXISTS audit_log_target;
DROP INDEX IF EXISTS app_users_app_last_used;
