// Package storetest opens real, migrated, isolated stores for tests: a fresh
// SQLite file always, and a fresh PostgreSQL database (cloned from a migrated
// template) when GATEHOUSE_TEST_POSTGRES_URL is set.
package storetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver pgtestdb uses
	"github.com/peterldowns/pgtestdb"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// EnvPostgres names the variable that points the suites at a PostgreSQL server.
const EnvPostgres = "GATEHOUSE_TEST_POSTGRES_URL"

// Kinds lists the engines a suite should run on: SQLite always, PostgreSQL
// when EnvPostgres is set. In CI (CI=true) a missing EnvPostgres fails the
// test instead of silently skipping the PostgreSQL half.
func Kinds(t testing.TB) []string {
	t.Helper()
	kinds := []string{store.SQLite}
	if os.Getenv(EnvPostgres) != "" {
		kinds = append(kinds, store.Postgres)
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not set: the PostgreSQL suite cannot run (CI requires it)", EnvPostgres)
	}
	return kinds
}

// ForEach runs fn once per engine in Kinds, each as a subtest with its own store.
func ForEach(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	for _, kind := range Kinds(t) {
		t.Run(kind, func(t *testing.T) {
			fn(t, Open(t, kind))
		})
	}
}

// Open returns a migrated store of the given kind that only this test uses.
func Open(t testing.TB, kind string) *store.DB {
	t.Helper()
	ctx := context.Background()
	var target string
	switch kind {
	case store.SQLite:
		target = filepath.Join(t.TempDir(), "gatehouse.db")
	case store.Postgres:
		target = PostgresURL(t)
	default:
		t.Fatalf("unknown store kind %q", kind)
	}
	db, err := store.Open(ctx, kind, target, store.Options{MaxConns: 8, StrictTx: true})
	if err != nil {
		t.Fatalf("open %s store: %v", kind, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if kind == store.SQLite {
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate sqlite: %v", err)
		}
	}
	return db
}

// PostgresURL creates a fresh, migrated PostgreSQL database for this test and
// returns its URL. The test is skipped (or failed in CI) when EnvPostgres is unset.
func PostgresURL(t testing.TB) string {
	t.Helper()
	raw := os.Getenv(EnvPostgres)
	if raw == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: the PostgreSQL suite cannot run (CI requires it)", EnvPostgres)
		}
		t.Skipf("%s is not set: skipping the PostgreSQL suite", EnvPostgres)
	}
	conf := configFromURL(t, raw)
	return pgtestdb.Custom(t, conf, migrator{}).URL()
}

// EmptyPostgresURL creates a fresh PostgreSQL database with no tables at all,
// for tests of migration itself (such as replicas starting together).
func EmptyPostgresURL(t testing.TB) string {
	t.Helper()
	raw := os.Getenv(EnvPostgres)
	if raw == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: the PostgreSQL suite cannot run (CI requires it)", EnvPostgres)
		}
		t.Skipf("%s is not set: skipping the PostgreSQL suite", EnvPostgres)
	}
	return pgtestdb.Custom(t, configFromURL(t, raw), pgtestdb.NoopMigrator{}).URL()
}

func configFromURL(t testing.TB, raw string) pgtestdb.Config {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL", EnvPostgres)
	}
	pw, _ := u.User.Password()
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	return pgtestdb.Config{
		DriverName:                "pgx",
		Host:                      u.Hostname(),
		Port:                      port,
		User:                      u.User.Username(),
		Password:                  pw,
		Database:                  strings.TrimPrefix(u.Path, "/"),
		Options:                   u.RawQuery,
		ForceTerminateConnections: true,
	}
}

// migrator applies the store's PostgreSQL migrations (Gatehouse's and River's)
// to pgtestdb's template; the hash changes when either does.
type migrator struct{}

func (migrator) Hash() (string, error) {
	files, err := store.MigrationFiles()
	if err != nil {
		return "", err
	}
	river, err := store.RiverVersion()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "river %d\n", river)
	for _, path := range slices.Sorted(maps.Keys(files)) {
		if strings.HasPrefix(path, store.Postgres+"/") {
			h.Write([]byte(path))
			h.Write(files[path])
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func (migrator) Migrate(ctx context.Context, _ *sql.DB, conf pgtestdb.Config) error {
	db, err := store.Open(ctx, store.Postgres, conf.URL(), store.Options{MaxConns: 2})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Migrate(ctx)
}
