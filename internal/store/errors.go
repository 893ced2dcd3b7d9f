package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
)

// Errors the store returns; callers test them with errors.Is.
var (
	ErrNotFound = errors.New("store: not found")
	ErrConflict = errors.New("store: conflict")
	// ErrUnavailable is errs.ErrUnavailable: an outage travels unchanged
	// through every layer to the one error table.
	ErrUnavailable = errs.ErrUnavailable
	// ErrTimeout is errs.ErrTimeout: a statement, a lock wait or an idle
	// transaction ran past its bound (database.statement_timeout,
	// database.lock_timeout, database.idle_in_transaction_session_timeout;
	// SQLite's busy timeout).
	ErrTimeout = errs.ErrTimeout
)

// mapErr turns driver errors into the store's sentinel errors, keeping the
// original for logs.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505":
			return fmt.Errorf("%w: %s", ErrConflict, pgErr.ConstraintName)
		case refusing(pgErr.Code):
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		case timedOut(pgErr.Code):
			return fmt.Errorf("%w: %v", ErrTimeout, err)
		}
		return err
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		switch sqErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %v", ErrConflict, err)
		case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL:
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		// Still locked when the busy timeout ended (another process held
		// the write lock): the same as a PostgreSQL lock wait that timed
		// out. The low byte is the primary code of an extended one.
		if c := sqErr.Code() & 0xff; c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED {
			return fmt.Errorf("%w: %v", ErrTimeout, err)
		}
		return err
	}
	// A connection cut mid-statement reads an unexpected EOF; one found
	// closed is pgconn.ErrConnClosed: the database went away, as with a
	// network error.
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || errors.As(err, &netErr) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return err
}

// refusing reports whether a PostgreSQL error (by its SQLSTATE) means the
// server is refusing work rather than that the statement is wrong: an outage
// like an unreachable database, which a client should retry later. Class 08
// (connection exception), class 53 (insufficient resources: too many
// connections, out of memory, disk full), 55000 (object not in prerequisite
// state, e.g. a server still recovering) and 57P0x (operator intervention:
// admin or crash shutdown, cannot connect now, database dropped, idle
// session timeout).
func refusing(code string) bool {
	return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "53") || code == "55000" || strings.HasPrefix(code, "57P0")
}

// timedOut reports whether a PostgreSQL error is one of the bounds the store
// sets on its sessions: 57014 (query_canceled: statement_timeout, or an
// operator's pg_cancel_backend), 55P03 (lock_not_available: lock_timeout)
// and 25P03 (idle_in_transaction_session_timeout, which also ends the
// session).
func timedOut(code string) bool {
	return code == "57014" || code == "55P03" || code == "25P03"
}
