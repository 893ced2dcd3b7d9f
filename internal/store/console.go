package store

import (
	"context"
	"time"
)

// ConsoleLink is a single-use console sign-in link (console_links): only
// the keyed hash of its token is kept.
type ConsoleLink struct {
	TokenHash string
	Email     string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// CreateConsoleLink stores l.
func (q Queries) CreateConsoleLink(ctx context.Context, l ConsoleLink) error {
	_, err := q.w.exec(ctx, `INSERT INTO console_links (token_hash, email, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
		l.TokenHash, l.Email, ts(l.CreatedAt), ts(l.ExpiresAt))
	return err
}

// TakeConsoleLink deletes and returns the link with this hash: of two
// sign-ins with the same link, one gets it and the other ErrNotFound. An
// expired row is taken too (the caller refuses it).
func (q Queries) TakeConsoleLink(ctx context.Context, tokenHash string) (ConsoleLink, error) {
	var l ConsoleLink
	err := q.w.queryRow(ctx, `DELETE FROM console_links WHERE token_hash = $1 RETURNING token_hash, email, created_at, expires_at`, tokenHash).
		Scan(&l.TokenHash, &l.Email, &l.CreatedAt, &l.ExpiresAt)
	l.CreatedAt, l.ExpiresAt = l.CreatedAt.UTC(), l.ExpiresAt.UTC()
	return l, mapErr(err)
}

// ConsoleSession is a signed-in operator's browser (console_sessions).
type ConsoleSession struct {
	ID              string // keyed hash of the cookie's value
	Email           string
	Method          string // how the operator signed in: link, email_code, passkey
	AppSessionID    string // the built-in app's session a code or passkey sign-in made ("" after a link)
	IP, UserAgent   string
	CreatedAt       time.Time
	AuthenticatedAt time.Time
	LastSeenAt      time.Time
	ExpiresAt       time.Time
}

const consoleSessionColumns = `id, email, method, app_session_id, ip, user_agent, created_at, authenticated_at, last_seen_at, expires_at`

func scanConsoleSession(r row) (ConsoleSession, error) {
	var s ConsoleSession
	err := r.Scan(&s.ID, &s.Email, &s.Method, &s.AppSessionID, &s.IP, &s.UserAgent, &s.CreatedAt, &s.AuthenticatedAt, &s.LastSeenAt, &s.ExpiresAt)
	s.CreatedAt, s.AuthenticatedAt, s.LastSeenAt, s.ExpiresAt = s.CreatedAt.UTC(), s.AuthenticatedAt.UTC(), s.LastSeenAt.UTC(), s.ExpiresAt.UTC()
	return s, mapErr(err)
}

// CreateConsoleSession stores s.
func (q Queries) CreateConsoleSession(ctx context.Context, s ConsoleSession) error {
	_, err := q.w.exec(ctx, `INSERT INTO console_sessions (`+consoleSessionColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		s.ID, s.Email, s.Method, s.AppSessionID, s.IP, s.UserAgent, ts(s.CreatedAt), ts(s.AuthenticatedAt), ts(s.LastSeenAt), ts(s.ExpiresAt))
	return err
}

// GetConsoleSession returns the session with this id, or ErrNotFound.
func (q Queries) GetConsoleSession(ctx context.Context, id string) (ConsoleSession, error) {
	return scanConsoleSession(q.r.queryRow(ctx, `SELECT `+consoleSessionColumns+` FROM console_sessions WHERE id = $1`, id))
}

// ListConsoleSessions returns an operator's sessions that have not expired
// by t, most recently seen first.
func (q Queries) ListConsoleSessions(ctx context.Context, email string, t time.Time) ([]ConsoleSession, error) {
	rs, err := q.r.query(ctx, `SELECT `+consoleSessionColumns+` FROM console_sessions WHERE email = $1 AND expires_at > $2
		ORDER BY last_seen_at DESC, id`, email, ts(t))
	if err != nil {
		return nil, err
	}
	return collect(rs, scanConsoleSession)
}

// TouchConsoleSession records that the session was used at t.
func (q Queries) TouchConsoleSession(ctx context.Context, id string, t time.Time) error {
	n, err := q.w.exec(ctx, `UPDATE console_sessions SET last_seen_at = $2 WHERE id = $1`, id, ts(t))
	return affected(n, err)
}

// DeleteConsoleSession ends one of an operator's sessions and returns it.
func (q Queries) DeleteConsoleSession(ctx context.Context, email, id string) (ConsoleSession, error) {
	return scanConsoleSession(q.w.queryRow(ctx, `DELETE FROM console_sessions WHERE email = $1 AND id = $2 RETURNING `+consoleSessionColumns, email, id))
}

// PruneConsole deletes links and sessions that expired before t.
func (q Queries) PruneConsole(ctx context.Context, t time.Time) error {
	if _, err := q.w.exec(ctx, `DELETE FROM console_links WHERE expires_at < $1`, ts(t)); err != nil {
		return err
	}
	_, err := q.w.exec(ctx, `DELETE FROM console_sessions WHERE expires_at < $1`, ts(t))
	return err
}

// Membership is one workspace an e-mail address is a member of.
type Membership struct {
	Member
	WorkspaceName     string
	WorkspaceSettings []byte // the workspace's settings (JSON object)
}

// ListMemberships returns the workspaces email is a member of, by name.
func (q Queries) ListMemberships(ctx context.Context, email string) ([]Membership, error) {
	rs, err := q.r.query(ctx, `SELECT m.id, m.workspace_id, m.email, m.name, m.role, m.created_at, m.updated_at, w.name, w.settings
		FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id WHERE m.email = $1 ORDER BY w.name, w.id`, email)
	if err != nil {
		return nil, err
	}
	return collect(rs, func(r row) (Membership, error) {
		var m Membership
		err := r.Scan(&m.ID, &m.WorkspaceID, &m.Email, &m.Name, &m.Role, &m.CreatedAt, &m.UpdatedAt, &m.WorkspaceName, &m.WorkspaceSettings)
		m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
		return m, err
	})
}

// AppCounts are an app's figures on the console's home page.
type AppCounts struct {
	Users, ActiveSessions, SignIns7d int
}

// CountAppActivity counts an app's users, its sessions that have not
// expired by t, and the sessions created since since (its sign-ins). The
// sessions are found by the index on app_id || ” (00021_console_indexes).
func (q Queries) CountAppActivity(ctx context.Context, appID string, t, since time.Time) (AppCounts, error) {
	var c AppCounts
	// One pass over the app's sessions gives both of their counts.
	err := q.r.queryRow(ctx, `SELECT (SELECT COUNT(*) FROM app_users WHERE app_id = $1),
		COALESCE(SUM(CASE WHEN revoked_at IS NULL AND expires_at > $2 THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN created_at >= $3 THEN 1 ELSE 0 END), 0)
		FROM sessions WHERE app_id || '' = $1`, appID, ts(t), ts(since)).
		Scan(&c.Users, &c.ActiveSessions, &c.SignIns7d)
	return c, err
}
