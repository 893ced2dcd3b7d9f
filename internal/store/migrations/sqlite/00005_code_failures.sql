-- +goose Up
-- Every wrong one-time code, by attempt time, user, method and source (the
-- client IP): the rolling hourly budget of wrong codes is counted per user
-- and source from these rows. Rows older than the window are pruned by the
-- challenge-expiry sweep.
CREATE TABLE code_failures (
    id          TEXT PRIMARY KEY,
    app_id      TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    app_user_id TEXT NOT NULL REFERENCES app_users (id) ON DELETE CASCADE,
    method      TEXT NOT NULL,
    source      TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL
);
CREATE INDEX code_failures_source ON code_failures (app_user_id, source, created_at);
CREATE INDEX code_failures_age ON code_failures (created_at);

-- A user's wrong codes since their last successful sign-in, from every
-- source. At the lock threshold code entry locks for that user until they
-- sign in another way, which deletes the row.
CREATE TABLE code_failure_streaks (
    app_user_id TEXT PRIMARY KEY REFERENCES app_users (id) ON DELETE CASCADE,
    failures    INTEGER NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE code_failure_streaks;
DROP TABLE code_failures;
