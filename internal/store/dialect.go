package store

// dialect names the few statements and fragments that differ between the
// engines. Everything else in this package is written once.
type dialect struct {
	name string
	// gooseDialect is the migration library's name for the engine.
	gooseDialect string
	// rotateRefresh spends a refresh token and inserts its successor in one
	// statement (PostgreSQL's data-modifying CTE); SQLite has no such CTE and
	// runs the two statements in a transaction instead (see RotateRefreshToken).
	rotateRefresh string
	// forUpdate locks the selected rows against change until the transaction
	// ends. It is PostgreSQL's FOR NO KEY UPDATE, which, unlike FOR UPDATE,
	// does not block inserts of rows that reference the locked one (a foreign
	// key check takes FOR KEY SHARE): locking a workspace must not stop its apps
	// and users being created, or a role read FOR SHARE and a member change
	// could deadlock. SQLite needs none: a write transaction there holds the
	// database's one write lock.
	forUpdate string
	// forShare locks the selected rows against change (not against other
	// readers) until the transaction ends; SQLite needs none, as above.
	forShare string
	// byteOrder follows a text column in a range condition so that it
	// compares byte by byte, which makes a prefix one contiguous range and
	// matches the prefix indexes (PostgreSQL's app_users_email_prefix_set and
	// app_users_phone_prefix_set, on COLLATE "C"). SQLite's default BINARY
	// collation already compares bytes, and its UNIQUE (app_id, email) and
	// (app_id, phone) indexes serve the range.
	byteOrder string
	// unindexed follows app_id (or workspace_id) where a statement finds one
	// user by id or address, so that no index offers that comparison: only
	// the primary key or the address's unique index (PostgreSQL's 00026)
	// serves the statement. PostgreSQL keeps one plan per statement and
	// connection, and one made before the planner had statistics (a young
	// table, autovacuum off) may take any of the app's (app_id, …) indexes
	// for it and then read every user of the app on every sign-in. A lookup
	// by address so reads that address's rows in every app of the server (a
	// handful) and keeps the app's one. SQLite plans a unique match first,
	// and its address indexes lead with app_id.
	unindexed string
	// rescueJobs makes running jobs of queue $2 attempted more than $1
	// seconds ago available at once, appending River's attempt error ($3) to
	// their errors (see RescueJobs). River keeps times, arrays and JSON
	// differently on each engine.
	rescueJobs string
}

// forShareOf is forShare limited to one table of a join (PostgreSQL refuses
// to lock the nullable side of an outer join, and there is no need to lock more).
func (d *dialect) forShareOf(table string) string {
	if d.forShare == "" {
		return ""
	}
	return d.forShare + " OF " + table
}

var (
	sqliteDialect = dialect{
		name:         SQLite,
		gooseDialect: "sqlite3",
		forUpdate:    "",
		rescueJobs: `UPDATE river_job SET state = 'available', scheduled_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
			errors = jsonb(json_insert(json(coalesce(errors, jsonb('[]'))), '$[#]', json_object(
				'at', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'attempt', attempt, 'error', $3, 'trace', '')))
		WHERE state = 'running' AND queue = $2 AND attempt < max_attempts
			AND attempted_at < strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || $1 || ' seconds')`,
	}
	postgresDialect = dialect{
		name:         Postgres,
		gooseDialect: "postgres",
		forUpdate:    " FOR NO KEY UPDATE",
		forShare:     " FOR SHARE",
		byteOrder:    ` COLLATE "C"`,
		unindexed:    ` || ''`,
		rescueJobs: `UPDATE river_job SET state = 'available', scheduled_at = now(),
			errors = array_append(errors, jsonb_build_object('at', now(), 'attempt', attempt, 'error', $3::text, 'trace', ''))
		WHERE state = 'running' AND queue = $2 AND attempt < max_attempts
			AND attempted_at < now() - make_interval(secs => $1)`,
		rotateRefresh: `WITH spent AS (
			UPDATE refresh_tokens SET used_at = $2, successor_sealed = $3 WHERE id = $1 AND used_at IS NULL
			RETURNING session_id)
		INSERT INTO refresh_tokens (id, session_id, token_hash, created_at, expires_at)
		SELECT $4, session_id, $5, $6, $7 FROM spent RETURNING id`,
	}
)
