-- +goose Up
-- The console's name search: one row per word of a user's names (the
-- string values of user_meta keys that contain "name"), lower-case, so a
-- word's start is a range of the primary key however many users an app
-- has. The store writes them with user_meta (names.go). Byte order makes a
-- prefix one range whatever the database's collation.
CREATE TABLE app_user_names (
    app_id      TEXT NOT NULL,
    word        TEXT COLLATE "C" NOT NULL,
    app_user_id TEXT NOT NULL REFERENCES app_users (id) ON DELETE CASCADE,
    PRIMARY KEY (app_id, word, app_user_id)
);
CREATE INDEX app_user_names_user ON app_user_names (app_user_id, word);

-- One-off and catch-up work the server does after migrating: the users
-- written before this table (or by an older replica during a rolling
-- upgrade) get their rows from store.BackfillUserNames, which records when
-- it last began here.
CREATE TABLE backfills (
    name    TEXT PRIMARY KEY,
    done_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE backfills;
DROP TABLE app_user_names;
