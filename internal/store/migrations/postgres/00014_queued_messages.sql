-- +goose Up
-- The send queue's own table (issue 24): a message is inserted in the
-- transaction of the challenge or change that causes it and sent by the
-- process that committed it right after the commit; the row is the durable
-- fallback, due at run_at, which any replica's sweep claims (SKIP LOCKED)
-- when the direct send did not finish. Messages queued as River jobs by an
-- earlier release are still worked by River until none is left.
CREATE TABLE queued_messages (
    id TEXT PRIMARY KEY,
    app_id TEXT NOT NULL,
    challenge_id TEXT NOT NULL DEFAULT '',
    version TEXT NOT NULL DEFAULT '',
    what TEXT NOT NULL,
    channel TEXT NOT NULL,
    recipient TEXT NOT NULL,
    sealed BYTEA NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    last_error TEXT NOT NULL DEFAULT '',
    run_at TIMESTAMPTZ NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    -- A message given up (a permanent refusal, its last try) is kept a
    -- week for the operator, with its last error, and never claimed again.
    failed_at TIMESTAMPTZ
);
CREATE INDEX queued_messages_run_at ON queued_messages (run_at);

-- Every change of an app's webhook endpoints notifies the replicas (LISTEN
-- gatehouse_webhook_endpoints, the app id as payload) when it commits: they
-- remember which apps have no endpoint, and forget it at once.
-- +goose StatementBegin
CREATE FUNCTION gatehouse_webhook_endpoints_notify() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('gatehouse_webhook_endpoints', OLD.app_id);
    ELSE
        PERFORM pg_notify('gatehouse_webhook_endpoints', NEW.app_id);
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
-- +goose StatementEnd
CREATE TRIGGER webhook_endpoints_notify AFTER INSERT OR UPDATE OR DELETE ON webhook_endpoints
    FOR EACH ROW EXECUTE FUNCTION gatehouse_webhook_endpoints_notify();

-- +goose Down
DROP TRIGGER webhook_endpoints_notify ON webhook_endpoints;
DROP FUNCTION gatehouse_webhook_endpoints_notify();
DROP TABLE queued_messages;
