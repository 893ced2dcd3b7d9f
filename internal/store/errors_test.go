package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestMapErrRefusingPostgres: a PostgreSQL server that refuses work (SQLSTATE
// class 08, 53, 55000 and 57P0x), whether it says so on a statement or while
// a connection is opened, is ErrUnavailable, the outage that answers 503,
// like an unreachable database; other errors are not.
func TestMapErrRefusingPostgres(t *testing.T) {
	refused := []string{
		"08000", "08001", "08003", "08004", "08006", "08P01", // connection exceptions
		"53000", "53100", "53200", "53300", "53400", // insufficient resources (53300: too many connections)
		"55000",                                     // object not in prerequisite state
		"57P01", "57P02", "57P03", "57P04", "57P05", // admin/crash shutdown, cannot connect now, …
	}
	for _, code := range refused {
		pgErr := &pgconn.PgError{Severity: "FATAL", Code: code, Message: "refused"}
		if err := mapErr(pgErr); !errors.Is(err, ErrUnavailable) {
			t.Errorf("mapErr(SQLSTATE %s) = %v; want ErrUnavailable", code, err)
		}
		wrapped := fmt.Errorf("failed to connect to `user=gatehouse database=gatehouse`: %w", pgErr)
		if err := mapErr(wrapped); !errors.Is(err, ErrUnavailable) {
			t.Errorf("mapErr(connect: SQLSTATE %s) = %v; want ErrUnavailable", code, err)
		}
	}
	for _, code := range []string{"23503", "42P01", "40001", "55P03", "57014", "22001", "0A000", "54000"} {
		if err := mapErr(&pgconn.PgError{Code: code, Message: "statement error"}); errors.Is(err, ErrUnavailable) {
			t.Errorf("mapErr(SQLSTATE %s) = %v; want an error other than ErrUnavailable", code, err)
		}
	}
	if err := mapErr(&pgconn.PgError{Code: "23505", ConstraintName: "users_email_key"}); !errors.Is(err, ErrConflict) {
		t.Errorf("mapErr(23505) = %v; want ErrConflict", err)
	}
}

// TestMapErrTimeouts: PostgreSQL's answers to the bounds the store sets on
// its sessions (statement_timeout, lock_timeout,
// idle_in_transaction_session_timeout) are ErrTimeout, not an outage and not
// a bug; a context that ended stays itself.
func TestMapErrTimeouts(t *testing.T) {
	for _, code := range []string{"57014", "55P03", "25P03"} {
		err := mapErr(fmt.Errorf("exec: %w", &pgconn.PgError{Severity: "ERROR", Code: code, Message: "timed out"}))
		if !errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnavailable) {
			t.Errorf("mapErr(SQLSTATE %s) = %v; want ErrTimeout", code, err)
		}
	}
	for _, err := range []error{context.DeadlineExceeded, context.Canceled} {
		if got := mapErr(fmt.Errorf("query: %w", err)); !errors.Is(got, err) || errors.Is(got, ErrTimeout) {
			t.Errorf("mapErr(%v) = %v; want it unchanged", err, got)
		}
	}
}

// TestMapErrLostConnection: a connection cut mid-statement (pgx reads an
// unexpected EOF) or found closed is the database going away, ErrUnavailable
// (503), not a bug (500): the outage test met both when it cut PostgreSQL
// off under requests.
func TestMapErrLostConnection(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("get app: %w", io.ErrUnexpectedEOF),
		fmt.Errorf("begin: %w", pgconn.ErrConnClosed),
		io.EOF,
	} {
		if got := mapErr(err); !errors.Is(got, ErrUnavailable) {
			t.Errorf("mapErr(%v) = %v; want ErrUnavailable", err, got)
		}
	}
	if got := mapErr(errors.New("syntax error")); errors.Is(got, ErrUnavailable) {
		t.Errorf("mapErr(syntax error) = %v; want an error other than ErrUnavailable", got)
	}
}
