-- +goose Up
-- The operators' console (docs/console.md). An operator is an e-mail
-- address that is a member of one or more workspaces; what it may do in a
-- workspace is that membership's role, read at each action.
--
-- console_links: single-use sign-in links that `gatehouse console link`
-- prints (never issued over HTTP). Only the keyed hash of the link's token
-- is kept; the row is taken (deleted) by the one sign-in that uses it.
CREATE TABLE console_links (
    token_hash TEXT PRIMARY KEY,
    email      TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
CREATE INDEX console_links_expiry ON console_links (expires_at);

-- console_sessions: a signed-in operator's browser. id is the keyed hash of
-- the session cookie's value (the value itself is never stored).
-- authenticated_at is when the operator last proved who they are (the
-- re-authentication window for destructive actions); last_seen_at drives
-- the idle timeout and expires_at is the absolute one.
CREATE TABLE console_sessions (
    id               TEXT PRIMARY KEY,
    email            TEXT NOT NULL,
    method           TEXT NOT NULL,
    app_session_id   TEXT NOT NULL DEFAULT '',
    ip               TEXT NOT NULL DEFAULT '',
    user_agent       TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMP NOT NULL,
    authenticated_at TIMESTAMP NOT NULL,
    last_seen_at     TIMESTAMP NOT NULL,
    expires_at       TIMESTAMP NOT NULL
);
CREATE INDEX console_sessions_email ON console_sessions (email);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
CREATE INDEX workspace_members_email ON workspace_members (email);

-- +goose Down
DROP INDEX workspace_members_email;
DROP TABLE console_sessions;
DROP TABLE console_links;
