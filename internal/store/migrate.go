package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

// MigrationState is one migration and whether it has been applied.
type MigrationState struct {
	Version   int64     `json:"version"`
	Name      string    `json:"name"`
	Applied   bool      `json:"applied"`
	AppliedAt time.Time `json:"applied_at,omitzero"`
}

// Migrations returns the embedded migration files for an engine, for tools
// (such as the PostgreSQL test harness) that hash or apply them.
func Migrations(kind string) (fs.FS, error) {
	return fs.Sub(migrationFiles, "migrations/"+kind)
}

// provider builds the migration runner. On PostgreSQL it takes a session
// advisory lock, so replicas starting together migrate one at a time and the
// others wait, then find nothing left to do.
func (db *DB) provider() (*goose.Provider, func(), error) {
	fsys, err := Migrations(db.kind)
	if err != nil {
		return nil, nil, err
	}
	var sqlDB *sql.DB
	var opts []goose.ProviderOption
	cleanup := func() {}
	if db.pool != nil {
		sqlDB = stdlib.OpenDBFromPool(db.pool)
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

// Migrate applies every pending migration.
func (db *DB) Migrate(ctx context.Context) error {
	p, cleanup, err := db.provider()
	if err != nil {
		return err
	}
	defer cleanup()
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("store: migrate: %w", mapErr(err))
	}
	return nil
}

// MigrationStatus lists every known migration.
func (db *DB) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	p, cleanup, err := db.provider()
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
		m := MigrationState{Version: s.Source.Version, Name: s.Source.Path, Applied: s.State == goose.StateApplied}
		if m.Applied {
			m.AppliedAt = s.AppliedAt.UTC()
		}
		out = append(out, m)
	}
	return out, nil
}

// Pending reports whether migrations remain to be applied.
func (db *DB) Pending(ctx context.Context) (bool, error) {
	p, cleanup, err := db.provider()
	if err != nil {
		return false, err
	}
	defer cleanup()
	return p.HasPending(ctx)
}

// WithMigrationLock runs fn while holding the migration advisory lock on
// PostgreSQL, so replicas starting together apply other migrations (the job
// queue's own) one at a time. On SQLite it just runs fn.
func (db *DB) WithMigrationLock(ctx context.Context, fn func() error) error {
	if db.pool == nil {
		return fn()
	}
	conn, err := db.pool.Acquire(ctx)
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
