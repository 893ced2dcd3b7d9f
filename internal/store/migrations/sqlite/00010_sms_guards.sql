-- +goose Up
-- SMS fraud guards (security R-RL-3). An app's own allowed countries (a JSON
-- array of ISO 3166-1 alpha-2 codes, '*' for every country; '' follows the
-- server's sms.allowed_countries) and its own daily SMS cap (0 follows
-- sms.daily_cap).
ALTER TABLE apps ADD COLUMN sms_allowed_countries TEXT NOT NULL DEFAULT '';
ALTER TABLE apps ADD COLUMN sms_daily_cap INTEGER NOT NULL DEFAULT 0;

-- The waits between SMS to one number of one app: the current run of sends
-- (since the last quiet period), the last send and the earliest next one,
-- all in unix ms. A row whose last send is older than the quiet period is
-- stale (a new run starts) and is pruned by the challenge-expiry sweep.
CREATE TABLE sms_number_sends (
    key      TEXT PRIMARY KEY,
    first_at INTEGER NOT NULL,
    last_at  INTEGER NOT NULL,
    sends    INTEGER NOT NULL,
    next_at  INTEGER NOT NULL
);
CREATE INDEX sms_number_sends_last ON sms_number_sends (last_at);

-- The caps' counters: SMS sent in the current fixed window (an app's UTC
-- day, an app's number prefix's hour), and whether the cap's alert was
-- raised in that window (once per window, whatever the replica).
CREATE TABLE sms_counters (
    key          TEXT PRIMARY KEY,
    window_start INTEGER NOT NULL,
    sends        INTEGER NOT NULL,
    alerted      BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX sms_counters_window ON sms_counters (window_start);

-- +goose Down
DROP TABLE sms_counters;
DROP TABLE sms_number_sends;
ALTER TABLE apps DROP COLUMN sms_daily_cap;
ALTER TABLE apps DROP COLUMN sms_allowed_countries;
