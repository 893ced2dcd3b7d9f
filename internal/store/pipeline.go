package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgPipe is a PostgreSQL transaction that spends fewer round trips than
// one statement each: BEGIN goes out with the transaction's first
// statement, and the writes queued by Tx.Deferred go out with the next
// statement or with COMMIT, all in one pipelined batch. On loopback a round
// trip costs both processes a system call and a wake-up, more than most of
// the statements on the hot paths (docs/performance.md).
type pgPipe struct {
	conn    *pgxpool.Conn
	tx      pgx.Tx // once BEGIN was sent
	pending []pendingExec
}

// pendingExec is a deferred write and what its error becomes.
type pendingExec struct {
	sql       string
	args      []any
	translate func(error) error
}

// ErrCommitRolledBack is a COMMIT that PostgreSQL answered with ROLLBACK:
// an earlier statement of the transaction had failed.
var ErrCommitRolledBack = errors.New("store: the transaction was rolled back at commit")

// batch sends what is pending (BEGIN first when not yet sent) followed by
// query, when not empty, as one batch. The batch's results are read up to
// query's, which the caller reads; a pending write's failure is returned
// (translated) and the batch closed.
func (p *pgPipe) batch(ctx context.Context, query string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	begin := p.tx == nil
	if begin {
		b.BeginTx(pgx.TxOptions{})
	}
	pending := p.pending
	p.pending = nil
	for _, e := range pending {
		b.Queue(e.sql, e.args...)
	}
	if query != "" {
		b.Queue(query, args...)
	}
	br := p.conn.Conn().SendBatch(ctx, b)
	if begin {
		p.tx = br.Tx()
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, mapErr(err)
		}
	}
	if err := execPending(br, pending); err != nil {
		return nil, err
	}
	return br, nil
}

// execPending reads the results of pending, the next statements of br: the
// first failure, translated, closes br and is returned.
func execPending(br pgx.BatchResults, pending []pendingExec) error {
	for _, e := range pending {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			err = mapErr(err)
			if e.translate != nil {
				err = e.translate(err)
			}
			return err
		}
	}
	return nil
}

// direct reports whether a statement can run on the transaction as is.
func (p *pgPipe) direct() bool { return p.tx != nil && len(p.pending) == 0 }

func (p *pgPipe) exec(ctx context.Context, query string, args ...any) (int64, error) {
	if p.direct() {
		return pgxQuerier{c: p.tx}.exec(ctx, query, args...)
	}
	br, err := p.batch(ctx, query, args)
	if err != nil {
		return 0, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, mapErr(err)
	}
	return tag.RowsAffected(), nil
}

func (p *pgPipe) query(ctx context.Context, query string, args ...any) (rows, error) {
	if p.direct() {
		return pgxQuerier{c: p.tx}.query(ctx, query, args...)
	}
	br, err := p.batch(ctx, query, args)
	if err != nil {
		return nil, err
	}
	r, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, mapErr(err)
	}
	return &batchRows{pgxRows: pgxRows{r}, br: br}, nil
}

func (p *pgPipe) queryRow(ctx context.Context, query string, args ...any) row {
	if p.direct() {
		return pgxQuerier{c: p.tx}.queryRow(ctx, query, args...)
	}
	br, err := p.batch(ctx, query, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{r: br.QueryRow(), br: br}
}

// flush sends what is pending, for code that uses the pgx transaction itself.
func (p *pgPipe) flush(ctx context.Context) error {
	if p.direct() {
		return nil
	}
	br, err := p.batch(ctx, "", nil)
	if err != nil {
		return err
	}
	return mapErr(br.Close())
}

// commit sends what is pending with COMMIT. Nothing sent, nothing to commit.
// A transaction that only queued writes (nothing sent before, nothing read)
// sends them without BEGIN and COMMIT: PostgreSQL runs the statements up to
// a batch's Sync as one implicit transaction, committed at the Sync and
// rolled back whole when one of them fails, so it is the same transaction
// with two statements fewer for the server to run (a send's, on the hot
// path).
func (p *pgPipe) commit(ctx context.Context) error {
	if p.tx == nil {
		if len(p.pending) == 0 {
			return nil
		}
		return p.implicit(ctx)
	}
	br, err := p.batch(ctx, "commit", nil)
	if err != nil {
		return err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return mapErr(err)
	}
	if tag.String() == "ROLLBACK" {
		return ErrCommitRolledBack
	}
	return nil
}

// implicit sends the pending writes as one batch with no transaction
// statements; each write's error comes back translated, as from batch.
func (p *pgPipe) implicit(ctx context.Context) error {
	pending := p.pending
	p.pending = nil
	b := &pgx.Batch{}
	for _, e := range pending {
		b.Queue(e.sql, e.args...)
	}
	br := p.conn.Conn().SendBatch(ctx, b)
	if err := execPending(br, pending); err != nil {
		return err
	}
	return mapErr(br.Close())
}

// rollback ends the transaction, if begun, and gives the connection back
// (closed instead when it is not idle after all).
func (p *pgPipe) rollback(ctx context.Context) {
	p.pending = nil
	if pc := p.conn.Conn().PgConn(); p.tx != nil && !pc.IsClosed() && pc.TxStatus() != 'I' {
		_, _ = p.conn.Conn().Exec(ctx, "rollback")
	}
}

// deferred is a querier whose exec queues its statement on the pipe
// instead of sending it; reads are sent at once, with what is queued.
type deferred struct {
	p         *pgPipe
	translate func(error) error
}

func (d deferred) exec(_ context.Context, query string, args ...any) (int64, error) {
	d.p.pending = append(d.p.pending, pendingExec{sql: query, args: args, translate: d.translate})
	return 1, nil
}

func (d deferred) query(ctx context.Context, query string, args ...any) (rows, error) {
	return d.p.query(ctx, query, args...)
}

func (d deferred) queryRow(ctx context.Context, query string, args ...any) row {
	return d.p.queryRow(ctx, query, args...)
}

// translating is a querier whose errors pass through translate, for
// Tx.Deferred where nothing is deferred (SQLite).
type translating struct {
	q         querier
	translate func(error) error
}

func (t translating) exec(ctx context.Context, query string, args ...any) (int64, error) {
	n, err := t.q.exec(ctx, query, args...)
	if err != nil {
		err = t.translate(err)
	}
	return n, err
}

func (t translating) query(ctx context.Context, query string, args ...any) (rows, error) {
	return t.q.query(ctx, query, args...)
}

func (t translating) queryRow(ctx context.Context, query string, args ...any) row {
	return t.q.queryRow(ctx, query, args...)
}

// batchRows closes the batch with the rows.
type batchRows struct {
	pgxRows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.pgxRows.Close()
	r.err = r.br.Close()
}

func (r *batchRows) Err() error {
	if err := r.pgxRows.Err(); err != nil {
		return err
	}
	return mapErr(r.err)
}

// batchRow closes the batch once scanned.
type batchRow struct {
	r  pgx.Row
	br pgx.BatchResults
}

func (b batchRow) Scan(dest ...any) error {
	err := b.r.Scan(dest...)
	if cerr := b.br.Close(); err == nil {
		err = cerr
	}
	return mapErr(err)
}
