package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// The schema has two parts, applied and reported together: Gatehouse's own
// tables (goose migrations embedded below, written once per engine) and the
// job queue's (River's migrations, which ship with the River module). Migrate
// applies both, so `gatehouse migrate up`, `serve` and the test harnesses all
// leave the same schema.

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

// Migration sets.
const (
	SetGatehouse = "gatehouse"
	SetRiver     = "river"
)

// MigrationState is one migration and whether it has been applied.
type MigrationState struct {
	Set       string // SetGatehouse or SetRiver
	Version   int64
	Name      string
	Applied   bool
	AppliedAt time.Time // zero when unknown (River does not report it)
}

// Migrations returns the embedded migration files for an engine, for tools
// (such as the PostgreSQL test harness) that hash or apply them.
func Migrations(kind string) (fs.FS, error) {
	return fs.Sub(migrationFiles, "migrations/"+kind)
}

// MigrationFiles returns every embedded migration file by its path
// ("postgres/00001_foundation.sql"), for tools that hash them.
func MigrationFiles() (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(migrationFiles, "migrations", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := migrationFiles.ReadFile(path)
		out[strings.TrimPrefix(path, "migrations/")] = b
		return err
	})
	return out, err
}

// RiverVersion is the newest River schema version this build applies on
// PostgreSQL, for tools that fingerprint the schema.
func RiverVersion() (int, error) {
	m, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	if err != nil {
		return 0, err
	}
	all := m.AllVersions()
	return all[len(all)-1].Version, nil
}

// provider builds the goose runner on pool (nil on SQLite). On PostgreSQL
// it takes a session advisory lock, so replicas starting together migrate
// one at a time and the others wait, then find nothing left to do.
func (db *DB) provider(pool *pgxpool.Pool) (*goose.Provider, func(), error) {
	fsys, err := Migrations(db.kind)
	if err != nil {
		return nil, nil, err
	}
	var sqlDB *sql.DB
	var opts []goose.ProviderOption
	cleanup := func() {}
	if pool != nil {
		sqlDB = stdlib.OpenDBFromPool(pool)
		cleanup = func() { _ = sqlDB.Close() }
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 600))
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	} else {
		sqlDB = db.writer
	}
	p, err := goose.NewProvider(goose.Dialect(db.dialect.gooseDialect), sqlDB, fsys, opts...)
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("store: migrations: %w", err)
	}
	return p, cleanup, nil
}

// migrationPool is a small pool of its own for applying migrations on
// PostgreSQL (nil on SQLite), closed by the function it returns. Its
// sessions are the store's without statement_timeout and lock_timeout: a
// migration may rightly run long (an index on a large table) and wait for
// the locks its DDL needs, and a replica waits for another's migration lock
// as long as that migration takes. ctx still bounds it all.
func (db *DB) migrationPool(ctx context.Context) (*pgxpool.Pool, func(), error) {
	if db.pool == nil {
		return nil, func() {}, nil
	}
	cfg := db.pool.Config()
	cfg.MinConns = 0
	cfg.MaxConns = 2 // one holds the queue's migration lock while River migrates on the other
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "0"
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "0"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("store: connect postgres: %w", mapErr(err))
	}
	return pool, pool.Close, nil
}

// river is the queue's migrator on this database (River's two drivers differ
// only in their transaction type); its chatter stays out of the log.
type river interface {
	Migrate(ctx context.Context, direction rivermigrate.Direction, opts *rivermigrate.MigrateOpts) (*rivermigrate.MigrateResult, error)
	ExistingVersions(ctx context.Context) ([]rivermigrate.Migration, error)
	AllVersions() []rivermigrate.Migration
}

func (db *DB) river(pool *pgxpool.Pool) (river, error) {
	cfg := &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)}
	if pool != nil {
		m, err := rivermigrate.New(riverpgxv5.New(pool), cfg)
		return m, err
	}
	m, err := rivermigrate.New[*sql.Tx](riversqlite.New(db.writer), cfg)
	return m, err
}

// Migrate applies every pending migration of both sets. River's run under
// the queue's advisory lock on PostgreSQL, like goose's under its own, both
// on the migration pool.
func (db *DB) Migrate(ctx context.Context) error {
	pool, closePool, err := db.migrationPool(ctx)
	if err != nil {
		return err
	}
	defer closePool()
	p, cleanup, err := db.provider(pool)
	if err != nil {
		return err
	}
	defer cleanup()
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("store: migrate: %w", mapErr(err))
	}
	r, err := db.river(pool)
	if err != nil {
		return fmt.Errorf("store: migrate river: %w", err)
	}
	return withMigrationLock(ctx, pool, func() error {
		if _, err := r.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("store: migrate river: %w", mapErr(err))
		}
		return nil
	})
}

// MigrationStatus lists every known migration of both sets, Gatehouse's first.
func (db *DB) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	p, cleanup, err := db.provider(db.pool)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: migration status: %w", mapErr(err))
	}
	out := make([]MigrationState, 0, len(st))
	for _, s := range st {
		m := MigrationState{Set: SetGatehouse, Version: s.Source.Version, Name: s.Source.Path, Applied: s.State == goose.StateApplied}
		if m.Applied {
			m.AppliedAt = s.AppliedAt.UTC()
		}
		out = append(out, m)
	}
	r, err := db.river(db.pool)
	if err != nil {
		return nil, fmt.Errorf("store: migration status: %w", err)
	}
	existing, err := r.ExistingVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: river migration status: %w", mapErr(err))
	}
	applied := make(map[int]bool, len(existing))
	for _, m := range existing {
		applied[m.Version] = true
	}
	for _, m := range r.AllVersions() {
		out = append(out, MigrationState{Set: SetRiver, Version: int64(m.Version), Name: "river/" + strconv.Itoa(m.Version) + "_" + m.Name,
			Applied: applied[m.Version]})
	}
	return out, nil
}

// Pending reports whether migrations of either set remain to be applied.
func (db *DB) Pending(ctx context.Context) (bool, error) {
	st, err := db.MigrationStatus(ctx)
	if err != nil {
		return false, err
	}
	for _, m := range st {
		if !m.Applied {
			return true, nil
		}
	}
	return false, nil
}

// withMigrationLock runs fn while holding the queue's migration advisory
// lock on PostgreSQL (taken on a session of pool, the migration pool, whose
// wait no lock_timeout cuts short), so replicas starting together apply
// River's migrations one at a time. On SQLite (pool nil) it just runs fn.
func withMigrationLock(ctx context.Context, pool *pgxpool.Pool, fn func() error) error {
	if pool == nil {
		return fn()
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return mapErr(err)
	}
	defer conn.Release()
	const key = 7204651011 // arbitrary, distinct from goose's
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(key)); err != nil {
		return mapErr(err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(key)) }()
	return fn()
}
