-- +goose Up
-- The audit log of administrative actions (docs/audit-log.md), API and
-- console alike: who (the credential, and the member it acts for), what
-- (action and target), the change (before and after, JSON, secrets never
-- written: the caller redacts), from where (address, user agent) and when.
-- id is a UUIDv7: entries list by id, newest first, and page by it.
-- Append-only: no foreign key (an entry outlives its app or workspace), and
-- updates and deletes are refused.
CREATE TABLE audit_log (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    app_id       TEXT NOT NULL DEFAULT '',
    actor_kind   TEXT NOT NULL,
    actor_id     TEXT NOT NULL DEFAULT '',
    member_id    TEXT NOT NULL DEFAULT '',
    action       TEXT NOT NULL,
    target_type  TEXT NOT NULL,
    target_id    TEXT NOT NULL,
    before_state TEXT,
    after_state  TEXT,
    ip           TEXT NOT NULL DEFAULT '',
    user_agent   TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX audit_log_workspace ON audit_log (workspace_id, id);

-- +goose StatementBegin
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

-- +goose Down
DROP TABLE audit_log;
DROP FUNCTION audit_log_append_only();
