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

-- +goose Down
DROP TABLE queued_messages;
