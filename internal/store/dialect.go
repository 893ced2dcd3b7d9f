package store

// dialect names the few statements and fragments that differ between the
// engines. Everything else in this package is written once.
type dialect struct {
	name string
	// gooseDialect is the migration library's name for the engine.
	gooseDialect string
	// caseInsensitiveLike is the operator for case-insensitive LIKE.
	caseInsensitiveLike string
	// forUpdate locks the selected rows until the transaction ends. SQLite
	// needs none: a write transaction there holds the database's one write lock.
	forUpdate string
}

var (
	sqliteDialect = dialect{
		name:                SQLite,
		gooseDialect:        "sqlite3",
		caseInsensitiveLike: "LIKE", // SQLite's LIKE folds ASCII case already
		forUpdate:           "",
	}
	postgresDialect = dialect{
		name:                Postgres,
		gooseDialect:        "postgres",
		caseInsensitiveLike: "ILIKE",
		forUpdate:           " FOR UPDATE",
	}
)
