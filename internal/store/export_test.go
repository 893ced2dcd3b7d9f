package store

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
)

// UserListPlans returns the engine's query plans for ListAppUsers's count
// and page statements under f, one line per plan node, after the engine has
// gathered statistics on app_users (ANALYZE). On PostgreSQL sequential scans
// are disabled, so that a plan on a test-sized table shows which index the
// planner picks rather than a scan of a table that fits in one page.
func (db *DB) UserListPlans(ctx context.Context, appID string, f UserFilter, limit, offset int) (count, page string, err error) {
	explain := func(q Queries, stmt string, args []any) (string, error) {
		prefix := "EXPLAIN "
		if db.kind == SQLite {
			prefix = "EXPLAIN QUERY PLAN "
		}
		rs, err := q.r.query(ctx, prefix+stmt, args...)
		if err != nil {
			return "", err
		}
		lines, err := collect(rs, func(r row) (string, error) {
			var line string
			if db.kind == SQLite {
				var id, parent, unused int
				err := r.Scan(&id, &parent, &unused, &line)
				return line, err
			}
			err := r.Scan(&line)
			return line, err
		})
		return strings.Join(lines, "\n"), err
	}
	err = db.Tx(ctx, func(tx *Tx) error {
		if _, err := tx.w.exec(ctx, "ANALYZE app_users"); err != nil {
			return err
		}
		if db.kind == Postgres {
			if _, err := tx.w.exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
				return err
			}
		}
		c, p, countArgs, pageArgs := tx.userStatements(appID, f, limit, offset)
		var err error
		if count, err = explain(tx.Queries, c, countArgs); err != nil {
			return err
		}
		page, err = explain(tx.Queries, p, pageArgs)
		return err
	})
	return count, page, err
}

// PrefixEnd is prefixEnd, for tests.
var PrefixEnd = prefixEnd

// BusyTimeouts reads SQLite's busy_timeout (milliseconds) on the writer and
// on a reader connection.
func (db *DB) BusyTimeouts(ctx context.Context) (writer, reader int, err error) {
	if err := db.writer.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&writer); err != nil {
		return 0, 0, err
	}
	err = db.reader.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&reader)
	return writer, reader, err
}

// TamperAuditLog tries to change and to delete every audit entry, as an
// intruder with the application's database role would; the table's
// triggers must refuse both.
func (db *DB) TamperAuditLog(ctx context.Context) (updateErr, deleteErr error) {
	_, updateErr = db.w.exec(ctx, "UPDATE audit_log SET action = 'nothing.happened'")
	_, deleteErr = db.w.exec(ctx, "DELETE FROM audit_log")
	return updateErr, deleteErr
}

// ForgetNames deletes every name row, as if the users had been written
// before 00024_user_names (for the backfill's test).
func (db *DB) ForgetNames(ctx context.Context) error {
	_, err := db.w.exec(ctx, `DELETE FROM app_user_names`)
	return err
}

// SetCommonWord sets how many name rows make a search broad, and returns
// what puts it back (tests run both ways of finding a page).
func SetCommonWord(n int) func() {
	old := commonWord
	commonWord = n
	return func() { commonWord = old }
}

// NoAutoAnalyze turns autovacuum (and with it autoanalyze) off for tables
// on PostgreSQL, so that they keep no statistics.
func (db *DB) NoAutoAnalyze(ctx context.Context, tables ...string) error {
	for _, t := range tables {
		if _, err := db.pool.Exec(ctx, "ALTER TABLE "+t+" SET (autovacuum_enabled = false)"); err != nil {
			return err
		}
	}
	return nil
}

// IndexEntriesRead runs fn in one transaction on PostgreSQL with every
// statement's plan made generic (plan_cache_mode force_generic_plan: the
// plan a connection usually settles on from a statement's sixth run) and returns the
// entries each index of tables returned meanwhile, by index name. The
// statements of setup run first, in the same transaction; the transaction
// is then rolled back, so that setup may drop indexes and constraints.
// The sequential scans of each of tables are counted too, under
// "seq scan: " and the table's name.
func (db *DB) IndexEntriesRead(ctx context.Context, tables, setup []string, fn func(tx *Tx) error) (map[string]int64, error) {
	read := map[string]int64{}
	errRollback := errors.New("roll back")
	err := db.Tx(ctx, func(tx *Tx) error {
		for _, stmt := range setup {
			if _, err := tx.w.exec(ctx, stmt); err != nil {
				return err
			}
		}
		// The counters are the connection's since it last reported them,
		// so what fn read is their difference.
		count := func(sign int64) error {
			rs, err := tx.w.query(ctx, `SELECT c.relname, pg_stat_get_xact_tuples_returned(c.oid) FROM pg_index i
				JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid::regclass::text = ANY($1)
				UNION ALL SELECT 'seq scan: ' || t, pg_stat_get_xact_numscans(t::regclass) FROM unnest($1::text[]) AS t`, tables)
			if err != nil {
				return err
			}
			defer rs.Close()
			for rs.Next() {
				var name string
				var n int64
				if err := rs.Scan(&name, &n); err != nil {
					return err
				}
				read[name] += sign * n
			}
			return rs.Err()
		}
		if _, err := tx.w.exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
			return err
		}
		if err := count(-1); err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			return err
		}
		if err := count(1); err != nil {
			return err
		}
		return errRollback
	})
	if errors.Is(err, errRollback) {
		err = nil
	}
	return read, err
}

// LockAppRowNoWait takes and releases at once an exclusive lock on app's
// row from a connection of its own (outside the pool, which a transaction
// under way must not borrow from), failing (lock_not_available) instead of
// waiting when a transaction holds any lock on the row, a foreign key
// check's shared key lock included. PostgreSQL only.
func (db *DB) LockAppRowNoWait(ctx context.Context, appID string) error {
	return db.LockRowNoWait(ctx, "apps", appID)
}

// LockRowNoWait is LockAppRowNoWait for the row of table whose id is id.
func (db *DB) LockRowNoWait(ctx context.Context, table, id string) error {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "SELECT 1 FROM "+table+" WHERE id = $1 FOR UPDATE NOWAIT", id)
	return err
}

// CountRows counts table's rows.
func (db *DB) CountRows(ctx context.Context, table string) (int, error) {
	var n int
	err := db.w.queryRow(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n)
	return n, err
}

// IndexDefs lists the definitions of table's indexes (PostgreSQL's
// pg_indexes.indexdef).
func (db *DB) IndexDefs(ctx context.Context, table string) ([]string, error) {
	rs, err := db.w.query(ctx, "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1", table)
	if err != nil {
		return nil, err
	}
	return collect(rs, func(r row) (string, error) {
		var def string
		return def, r.Scan(&def)
	})
}

// Updates reads PostgreSQL's count of rows of table updated, and of those
// heap-only (HOT: no new index entry), as this connection has them before
// reporting them to the statistics: current at once, and possibly holding
// earlier transactions' updates too, so compare a statement's before and
// after.
func (tx *Tx) Updates(ctx context.Context, table string) (all, hot int64, err error) {
	err = tx.w.queryRow(ctx, `SELECT pg_stat_get_xact_tuples_updated($1::regclass), pg_stat_get_xact_tuples_hot_updated($1::regclass)`,
		table).Scan(&all, &hot)
	return all, hot, err
}
