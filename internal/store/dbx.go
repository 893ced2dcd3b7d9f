package store

import (
	"context"
	"database/sql"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// querier is the one seam between the SQL in this package and the two engines:
// pgx on PostgreSQL (pool or transaction) and database/sql on SQLite.
type querier interface {
	exec(ctx context.Context, query string, args ...any) (int64, error)
	query(ctx context.Context, query string, args ...any) (rows, error)
	queryRow(ctx context.Context, query string, args ...any) row
}

type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

type row interface {
	Scan(dest ...any) error
}

// pgxConn is what pgxpool.Pool and pgx.Tx have in common.
type pgxConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

type pgxQuerier struct{ c pgxConn }

func (q pgxQuerier) exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.c.Exec(ctx, query, args...)
	if err != nil {
		return 0, mapErr(err)
	}
	return tag.RowsAffected(), nil
}

func (q pgxQuerier) query(ctx context.Context, query string, args ...any) (rows, error) {
	r, err := q.c.Query(ctx, query, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgxRows{r}, nil
}

func (q pgxQuerier) queryRow(ctx context.Context, query string, args ...any) row {
	return mappedRow{q.c.QueryRow(ctx, query, args...)}
}

type pgxRows struct{ pgx.Rows }

func (r pgxRows) Err() error { return mapErr(r.Rows.Err()) }

// sqlConn is what *sql.DB and *sql.Tx have in common.
type sqlConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// sqlQuerier runs statements on SQLite. Statements are written once with
// PostgreSQL's $N placeholders; SQLite reads $N as a *named* parameter whose
// index depends on order of appearance, so they are rebound to ?N.
type sqlQuerier struct {
	c      sqlConn
	rebind *rebinder
}

func (q sqlQuerier) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.c.ExecContext(ctx, q.rebind.do(query), args...)
	if err != nil {
		return 0, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n, mapErr(err)
}

func (q sqlQuerier) query(ctx context.Context, query string, args ...any) (rows, error) {
	r, err := q.c.QueryContext(ctx, q.rebind.do(query), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	return sqlRows{r}, nil
}

func (q sqlQuerier) queryRow(ctx context.Context, query string, args ...any) row {
	return mappedRow{q.c.QueryRowContext(ctx, q.rebind.do(query), args...)}
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close()     { _ = r.Rows.Close() }
func (r sqlRows) Err() error { return mapErr(r.Rows.Err()) }

type mappedRow struct{ r row }

func (m mappedRow) Scan(dest ...any) error { return mapErr(m.r.Scan(dest...)) }

// rebinder rewrites $N placeholders to ?N and caches the result per statement text.
type rebinder struct{ cache sync.Map }

func (b *rebinder) do(query string) string {
	if v, ok := b.cache.Load(query); ok {
		return v.(string)
	}
	var sb strings.Builder
	sb.Grow(len(query))
	for i := 0; i < len(query); i++ {
		c := query[i]
		if c == '$' && i+1 < len(query) && query[i+1] >= '0' && query[i+1] <= '9' {
			c = '?'
		}
		sb.WriteByte(c)
	}
	out := sb.String()
	b.cache.Store(query, out)
	return out
}
