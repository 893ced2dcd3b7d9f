// Package store is the only package that holds SQL. It runs the same
// statements on SQLite (the embedded default) and PostgreSQL; the few places
// where the engines differ are named in dialect.go.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Kinds of database.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Options tune Open. A zero duration means its default below.
type Options struct {
	// MaxConns bounds the PostgreSQL pool and the SQLite reader pool.
	MaxConns int
	// StatementTimeout is PostgreSQL's statement_timeout on every pooled
	// session: the longest one statement runs before it is cancelled.
	StatementTimeout time.Duration
	// LockTimeout is PostgreSQL's lock_timeout (the longest a statement
	// waits for a row or table lock) and SQLite's busy_timeout (the longest
	// a statement waits for another process's lock on the file).
	LockTimeout time.Duration
	// IdleInTransactionTimeout is PostgreSQL's
	// idle_in_transaction_session_timeout: a session that holds a
	// transaction open without running a statement this long is ended, its
	// locks released.
	IdleInTransactionTimeout time.Duration
	// StrictTx fails, with ErrSecondConnection, any statement or transaction
	// that a goroutine asks of the pool while it holds a transaction. The
	// test suites turn it on; production code never does that by design.
	StrictTx bool
	// OnStatement, when set, is called with every statement sent to
	// PostgreSQL (BEGIN and COMMIT included) and the context it runs
	// under; pipelined when it went out in the same round trip as the
	// statement before it. The tests count statements and round trips per
	// operation with it.
	OnStatement func(ctx context.Context, sql string, pipelined bool)
}

// The defaults of Options, which are also the defaults of the database.*
// settings of the same names.
const (
	DefaultStatementTimeout         = 10 * time.Second
	DefaultLockTimeout              = 5 * time.Second
	DefaultIdleInTransactionTimeout = 30 * time.Second
)

// DB is an open database. Reads outside a transaction use the read pool;
// writes and transactions use the write pool (one connection on SQLite, so
// writers queue in Go instead of failing with SQLITE_BUSY).
type DB struct {
	Queries
	kind    string
	dialect dialect

	pool *pgxpool.Pool // PostgreSQL

	writer *sql.DB // SQLite
	reader *sql.DB // SQLite
	rebind *rebinder

	holders *txHolders // strict mode only
}

// Open connects to the database. For SQLite, target is a file path (its
// directory is created); for PostgreSQL, a connection URL.
func Open(ctx context.Context, kind, target string, opts Options) (*DB, error) {
	if opts.MaxConns <= 0 {
		opts.MaxConns = 16
	}
	if opts.StatementTimeout <= 0 {
		opts.StatementTimeout = DefaultStatementTimeout
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.IdleInTransactionTimeout <= 0 {
		opts.IdleInTransactionTimeout = DefaultIdleInTransactionTimeout
	}
	switch kind {
	case SQLite:
		return openSQLite(ctx, target, opts)
	case Postgres:
		return openPostgres(ctx, target, opts)
	}
	return nil, fmt.Errorf("store: unknown database kind %q", kind)
}

func openSQLite(ctx context.Context, path string, opts Options) (*DB, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: create database directory: %w", err)
		}
	}
	// The busy timeout bounds a wait for another process's lock (the
	// command line's, say): this process's writers queue for the one
	// writer connection instead, bounded by their request's deadline.
	base := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(" + strconv.FormatInt(millis(opts.LockTimeout), 10) + ")" +
		"&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_time_format=sqlite"
	writer, err := sql.Open("sqlite", base+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxIdleTime(0)
	writer.SetConnMaxLifetime(0)
	reader, err := sql.Open("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		_ = writer.Close()
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	n := min(opts.MaxConns, 8)
	reader.SetMaxOpenConns(n)
	reader.SetMaxIdleConns(n)
	reader.SetConnMaxIdleTime(0)
	reader.SetConnMaxLifetime(0)
	// Creates the file and switches it to WAL before any reader opens it.
	if err := writer.PingContext(ctx); err != nil {
		_ = writer.Close()
		_ = reader.Close()
		return nil, fmt.Errorf("store: open sqlite %s: %w", path, mapErr(err))
	}
	db := &DB{kind: SQLite, dialect: sqliteDialect, writer: writer, reader: reader, rebind: &rebinder{}}
	db.Queries = Queries{
		r: sqlQuerier{c: reader, rebind: db.rebind},
		w: sqlQuerier{c: writer, rebind: db.rebind},
		d: &db.dialect,
	}
	db.strict(opts)
	return db, nil
}

func openPostgres(ctx context.Context, dsn string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parse error can echo the URL, password included; keep it out.
		return nil, errors.New("store: invalid PostgreSQL connection URL")
	}
	cfg.MaxConns = int32(opts.MaxConns)
	cfg.MinConns = 1
	cfg.MaxConnIdleTime = 5 * time.Minute
	cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	// Every session is bounded, so that no request, job or stuck client
	// holds a lock or a connection for long: the settings win over the
	// same parameters in the URL. Migrations lift the first two (migrate.go).
	maps.Copy(cfg.ConnConfig.RuntimeParams, map[string]string{
		"statement_timeout":                   strconv.FormatInt(millis(opts.StatementTimeout), 10),
		"lock_timeout":                        strconv.FormatInt(millis(opts.LockTimeout), 10),
		"idle_in_transaction_session_timeout": strconv.FormatInt(millis(opts.IdleInTransactionTimeout), 10),
	})
	if opts.OnStatement != nil {
		cfg.ConnConfig.Tracer = statementTracer(opts.OnStatement)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect postgres: %w", mapErr(err))
	}
	db := &DB{kind: Postgres, dialect: postgresDialect, pool: pool}
	q := pgxQuerier{c: pool}
	db.Queries = Queries{r: q, w: q, d: &db.dialect}
	db.strict(opts)
	return db, nil
}

// statementTracer calls itself with every statement pgx sends, alone or
// in a batch (Options.OnStatement).
type statementTracer func(ctx context.Context, sql string, pipelined bool)

// batchStart marks a batch's context, to tell its first statement from the rest.
type batchStart struct{ first bool }

func (f statementTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	f(ctx, d.SQL, false)
	return ctx
}

func (statementTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (statementTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return context.WithValue(ctx, batchStart{}, &batchStart{first: true})
}

func (f statementTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	b, _ := ctx.Value(batchStart{}).(*batchStart)
	f(ctx, d.SQL, b != nil && !b.first)
	if b != nil {
		b.first = false
	}
}

func (statementTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// millis is d in whole milliseconds, at least 1: PostgreSQL and SQLite read
// their timeouts in milliseconds, and 0 would mean none (or, for SQLite's
// busy timeout, no wait at all).
func millis(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// strict wraps the pool's queriers when opts ask for strict mode.
func (db *DB) strict(opts Options) {
	if !opts.StrictTx {
		return
	}
	db.holders = &txHolders{held: map[uint64]bool{}}
	db.r = strictQuerier{q: db.r, h: db.holders}
	db.w = strictQuerier{q: db.w, h: db.holders}
}

// Kind reports SQLite or Postgres.
func (db *DB) Kind() string { return db.kind }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if db.pool != nil {
		return mapErr(db.pool.Ping(ctx))
	}
	if err := db.reader.PingContext(ctx); err != nil {
		return mapErr(err)
	}
	var one int
	return db.r.queryRow(ctx, "SELECT 1").Scan(&one)
}

// PoolStats is one connection pool's use, as /metrics reports it.
type PoolStats struct {
	// Pool names it: "main" on PostgreSQL, "writer" or "reader" on SQLite.
	Pool string
	// Max is the most connections it opens; Open are open now, InUse of
	// them lent out, Idle waiting.
	Max, Open, InUse, Idle int
	// Waits counts the requests for a connection that found none free, and
	// WaitTime is how long they waited in all, since the pool opened.
	Waits    int64
	WaitTime time.Duration
}

// PoolStats reads the connection pools' counters (no statement runs): one
// pool on PostgreSQL, the writer and the reader on SQLite.
func (db *DB) PoolStats() []PoolStats {
	if db.pool != nil {
		st := db.pool.Stat()
		return []PoolStats{{Pool: "main", Max: int(st.MaxConns()), Open: int(st.TotalConns()), InUse: int(st.AcquiredConns()),
			Idle: int(st.IdleConns()), Waits: st.EmptyAcquireCount(), WaitTime: st.EmptyAcquireWaitTime()}}
	}
	out := make([]PoolStats, 0, 2)
	for _, p := range []struct {
		name string
		db   *sql.DB
	}{{"writer", db.writer}, {"reader", db.reader}} {
		st := p.db.Stats()
		out = append(out, PoolStats{Pool: p.name, Max: st.MaxOpenConnections, Open: st.OpenConnections, InUse: st.InUse,
			Idle: st.Idle, Waits: st.WaitCount, WaitTime: st.WaitDuration})
	}
	return out
}

// Close releases every connection.
func (db *DB) Close() error {
	if db.pool != nil {
		db.pool.Close()
		return nil
	}
	return errors.Join(db.reader.Close(), db.writer.Close())
}

// Listen calls onNotify with the payload of every notification on channel
// until ctx ends (PostgreSQL's LISTEN, on a connection of its own, not one
// of the pool's); listening(true) once it listens, listening(false) when
// the connection is lost, after which it connects again (1 s, doubling up
// to 30 s). Notifications sent while it was not listening are lost: a
// caller forgets what they would have told it when listening(true) comes.
// On SQLite it returns at once: there is nobody else to hear from.
func (db *DB) Listen(ctx context.Context, channel string, onNotify func(payload string), listening func(bool)) {
	if db.pool == nil {
		return
	}
	wait := time.Second
	for ctx.Err() == nil {
		if db.listen(ctx, channel, onNotify, listening) {
			wait = time.Second
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// listen is one connection of Listen; it reports whether it listened.
func (db *DB) listen(ctx context.Context, channel string, onNotify func(string), listening func(bool)) bool {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return false
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return false
	}
	listening(true)
	defer listening(false)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true
		}
		onNotify(n.Payload)
	}
}

// Probe runs a statement that reads nothing, to see that the database
// answers (inside a transaction: that it can begin and commit one).
func (q Queries) Probe(ctx context.Context) error {
	var one int
	return q.w.queryRow(ctx, "SELECT 1").Scan(&one)
}

// Pool returns the PostgreSQL pool (nil on SQLite), for the job queue.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Writer returns the SQLite write pool (nil on PostgreSQL), for the job queue.
// Never use it while holding a transaction from Tx: it has one connection.
func (db *DB) Writer() *sql.DB { return db.writer }

// Tx is a transaction. Its Queries read and write inside it.
type Tx struct {
	Queries
	pipe  *pgPipe
	sqlTx *sql.Tx
	after []func()
}

// PgxTx returns the PostgreSQL transaction (nil on SQLite), for code that
// runs its own statements on it (the job queue), once what Deferred queued
// has been sent.
func (tx *Tx) PgxTx(ctx context.Context) (pgx.Tx, error) {
	if tx.pipe == nil {
		return nil, nil
	}
	if err := tx.pipe.flush(ctx); err != nil {
		return nil, err
	}
	return tx.pipe.tx, nil
}

// SQLTx returns the SQLite transaction (nil on PostgreSQL).
func (tx *Tx) SQLTx() *sql.Tx { return tx.sqlTx }

// Deferred returns tx's statements with their writes deferred on
// PostgreSQL: each one goes out with the transaction's next statement or
// with its COMMIT, in the same round trip, and its error (through
// translate, when not nil) comes back from there. Use it only for writes
// whose answer nobody reads (the count of rows it reports is always 1);
// reads through it are sent at once. On SQLite, where a statement costs no
// round trip, they run at once.
func (tx *Tx) Deferred(translate func(error) error) Queries {
	q := tx.Queries
	switch {
	case tx.pipe != nil:
		q.w = deferred{p: tx.pipe, translate: translate}
	case translate != nil:
		q.w = translating{q: q.w, translate: translate}
	}
	return q
}

// Tx runs fn in a transaction: committed when fn returns nil, rolled back
// otherwise. What fn asked to run after the commit (Tx.AfterCommit) runs
// once the commit succeeded and the connection is back in the pool.
func (db *DB) Tx(ctx context.Context, fn func(tx *Tx) error) error {
	var after []func()
	err := db.runTx(ctx, func(tx *Tx) error {
		err := fn(tx)
		after = tx.after
		return err
	})
	if err != nil {
		return err
	}
	for _, f := range after {
		f()
	}
	return nil
}

// AfterCommit asks for f to run once tx has committed (never when it rolls
// back), in the goroutine that ran the transaction: f must be quick (hand
// work to another goroutine), as the caller waits for it.
func (tx *Tx) AfterCommit(f func()) { tx.after = append(tx.after, f) }

func (db *DB) runTx(ctx context.Context, fn func(tx *Tx) error) (err error) {
	leave, err := db.holders.enter("a transaction inside a transaction")
	if err != nil {
		return err
	}
	defer leave()
	tx := &Tx{}
	if db.pool != nil {
		conn, acqErr := db.pool.Acquire(ctx)
		if acqErr != nil {
			return mapErr(acqErr)
		}
		p := &pgPipe{conn: conn}
		tx.pipe = p
		tx.Queries = Queries{r: p, w: p, d: &db.dialect, tx: true}
		defer func() {
			if rec := recover(); rec != nil {
				p.rollback(context.WithoutCancel(ctx))
				conn.Release()
				panic(rec)
			}
			if err == nil {
				err = p.commit(ctx)
			}
			if err != nil {
				p.rollback(context.WithoutCancel(ctx))
			}
			conn.Release()
		}()
		return fn(tx)
	}
	stx, beginErr := db.writer.BeginTx(ctx, nil)
	if beginErr != nil {
		return mapErr(beginErr)
	}
	tx.sqlTx = stx
	q := sqlQuerier{c: stx, rebind: db.rebind}
	tx.Queries = Queries{r: q, w: q, d: &db.dialect, tx: true}
	defer func() {
		if p := recover(); p != nil {
			_ = stx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = stx.Rollback()
			return
		}
		err = mapErr(stx.Commit())
	}()
	return fn(tx)
}

// Queries holds every statement. On a DB, reads go to r and writes to w; in
// a Tx both are the transaction.
type Queries struct {
	r, w querier
	d    *dialect
	tx   bool // the statements run in a transaction
}

// locking returns clause (a row-locking suffix) inside a transaction, and ""
// outside one, where a lock would end with the statement anyway.
func (q Queries) locking(clause string) string {
	if q.tx {
		return clause
	}
	return ""
}

// now is the time the store writes: UTC, at the microsecond precision both
// engines keep, so values round-trip exactly.
func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
