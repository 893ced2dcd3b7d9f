package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// migrationRow is one entry of `gatehouse migrate up|status`.
type migrationRow struct {
	Set       string `json:"set"`
	Version   int64  `json:"version"`
	Name      string `json:"name"`
	Applied   bool   `json:"applied"`
	AppliedAt string `json:"applied_at"`
}

// migrations runs `gatehouse migrate args...` and returns its list, checking
// the fields of every row: set, version, name and applied always, applied_at
// exactly when an applied Gatehouse migration (River does not record it).
func migrations(t *testing.T, environ []string, args ...string) []migrationRow {
	t.Helper()
	out := runJSON(t, environ, append([]string{"migrate"}, args...)...)
	checkFields(t, "migrate "+strings.Join(args, " "), out, "migrations")
	raw, _ := json.Marshal(out["migrations"])
	var rows []migrationRow
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatalf("migrate %s: %v", strings.Join(args, " "), err)
	}
	for i, m := range list(t, out, "migrations") {
		want := []string{"set", "version", "name", "applied"}
		if rows[i].Set == store.SetGatehouse && rows[i].Applied {
			want = append(want, "applied_at")
			checkTime(t, "applied_at of "+rows[i].Name, rows[i].AppliedAt)
		}
		checkFields(t, "migrate "+strings.Join(args, " ")+" row "+strconv.Itoa(i), m, want...)
	}
	return rows
}

// wantMigrations is every migration this build knows for kind, in the order
// the commands list them: Gatehouse's embedded files, then River's versions.
func wantMigrations(t *testing.T, kind string) []migrationRow {
	t.Helper()
	fsys, err := store.Migrations(kind)
	if err != nil {
		t.Fatal(err)
	}
	files, err := fs.Glob(fsys, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("embedded %s migrations = %v, %v", kind, files, err)
	}
	var out []migrationRow
	for _, f := range files {
		v, err := strconv.ParseInt(strings.SplitN(f, "_", 2)[0], 10, 64)
		if err != nil {
			t.Fatalf("migration file %s: %v", f, err)
		}
		out = append(out, migrationRow{Set: store.SetGatehouse, Version: v, Name: f})
	}
	river, err := store.RiverVersion()
	if err != nil || river < 1 {
		t.Fatalf("RiverVersion = %d, %v", river, err)
	}
	for v := 1; v <= river; v++ {
		out = append(out, migrationRow{Set: store.SetRiver, Version: int64(v)})
	}
	return out
}

// checkMigrations fails unless rows list exactly the migrations in want
// (River's names are River's own, so only their prefix is checked), each
// applied or not as applied says.
func checkMigrations(t *testing.T, what string, rows, want []migrationRow, applied bool) {
	t.Helper()
	if len(rows) != len(want) {
		t.Fatalf("%s lists %d migrations; want %d: %+v", what, len(rows), len(want), rows)
	}
	for i, m := range rows {
		w := want[i]
		nameOK := m.Name == w.Name
		if w.Set == store.SetRiver {
			nameOK = strings.HasPrefix(m.Name, "river/"+strconv.FormatInt(w.Version, 10)+"_")
		}
		if m.Set != w.Set || m.Version != w.Version || !nameOK {
			t.Errorf("%s [%d] = %+v; want set %s version %d (%s)", what, i, m, w.Set, w.Version, w.Name)
		}
		if m.Applied != applied || (!applied && m.AppliedAt != "") {
			t.Errorf("%s [%d] = %+v; want applied %v", what, i, m, applied)
		}
	}
}

// TestMigrateThenServe is the production order of operations on a new
// database of each engine: `migrate status` shows everything pending, an
// operator command refuses the unmigrated schema, `migrate up` applies both
// sets (Gatehouse's and River's), `migrate status` agrees, and `serve` then
// starts and becomes ready without changing the schema.
func TestMigrateThenServe(t *testing.T) {
	forEachEngine(t, func(t *testing.T, kind string, dbEnv []string) {
		env := append([]string{"GATEHOUSE_MASTER_KEY=" + newMasterKey(t)}, dbEnv...)
		want := wantMigrations(t, kind)

		empty := migrations(t, env, "status")
		checkMigrations(t, "migrate status on an empty database", empty, want, false)

		// Operator commands need a current schema and say how to get one.
		code, out, errb := gatehouse(t, env, "workspaces", "list")
		if code != 1 || out != "" {
			t.Errorf("workspaces list on an unmigrated database: exit %d, stdout %q; want 1 and nothing", code, out)
		}
		if strings.Count(strings.TrimSpace(errb), "\n") != 0 || !strings.Contains(errb, "run `gatehouse migrate up`") {
			t.Errorf("workspaces list on an unmigrated database: stderr %q; want one line telling to run `gatehouse migrate up`", errb)
		}
		if got := migrations(t, env, "status"); !reflect.DeepEqual(got, empty) {
			t.Errorf("after the refused command, migrate status = %+v; want it unchanged: %+v", got, empty)
		}

		up := migrations(t, env, "up")
		checkMigrations(t, "migrate up", up, want, true)
		for _, m := range up {
			if m.Set == store.SetGatehouse {
				if at, _ := time.Parse(time.RFC3339Nano, m.AppliedAt); time.Since(at) > time.Hour || time.Until(at) > time.Minute {
					t.Errorf("migrate up: %s applied_at %s; want just now", m.Name, m.AppliedAt)
				}
			}
		}
		status := migrations(t, env, "status")
		if !reflect.DeepEqual(status, up) {
			t.Errorf("migrate status = %+v; want what migrate up printed: %+v", status, up)
		}
		if again := migrations(t, env, "up"); !reflect.DeepEqual(again, up) {
			t.Errorf("second migrate up = %+v; want nothing applied again: %+v", again, up)
		}

		// Serve: had it anything left to apply, a migration would turn from
		// not applied to applied, or its applied_at would move, and the
		// migration tables themselves would gain rows.
		ledger := schemaLedger(t, kind, dbEnv)
		srv := serveInProcess(t, env, "serve", "--addr", "127.0.0.1:0")
		if code := srv.stop(); code != 0 {
			t.Errorf("serve exit = %d; want 0; log:\n%s", code, srv.logs.String())
		}
		if got := migrations(t, env, "status"); !reflect.DeepEqual(got, up) {
			t.Errorf("migrate status after serve = %+v; want it unchanged by serve: %+v", got, up)
		}
		if got := schemaLedger(t, kind, dbEnv); got != ledger {
			t.Errorf("migration tables after serve:\n%s\nwant them unchanged:\n%s", got, ledger)
		}
	})
}

// TestMigrateNeedsNoMasterKey runs `migrate up` and `migrate status` in
// production mode with database settings only: the schema needs no master
// key, and none is made.
func TestMigrateNeedsNoMasterKey(t *testing.T) {
	forEachEngine(t, func(t *testing.T, kind string, dbEnv []string) {
		want := wantMigrations(t, kind)
		up := migrations(t, dbEnv, "up")
		checkMigrations(t, "migrate up without a master key", up, want, true)
		if status := migrations(t, dbEnv, "status"); !reflect.DeepEqual(status, up) {
			t.Errorf("migrate status without a master key = %+v; want %+v", status, up)
		}
		var dir string
		for _, kv := range dbEnv {
			if v, ok := strings.CutPrefix(kv, "GATEHOUSE_DATA_DIR="); ok {
				dir = v
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "master.key")); !os.IsNotExist(err) {
			t.Errorf("migrate made %s (stat: %v); want no master key outside dev mode", filepath.Join(dir, "master.key"), err)
		}
		// The same settings are not enough for a command that needs the key.
		code, _, errb := gatehouse(t, dbEnv, "keys", "list")
		if code != 2 || !strings.Contains(errb, "master_key") {
			t.Errorf("keys list without a master key: exit %d, %q; want 2 naming master_key", code, errb)
		}
	})
}

// schemaLedger reads the two migration tables straight from the database,
// not through the code under test: every row goose and River recorded, with
// its time.
func schemaLedger(t *testing.T, kind string, dbEnv []string) string {
	t.Helper()
	var url string
	for _, kv := range dbEnv {
		if v, ok := strings.CutPrefix(kv, "GATEHOUSE_DATABASE_URL="); ok {
			url = v
		}
	}
	driver, dsn := "pgx", url
	if kind == store.SQLite {
		driver, dsn = "sqlite", strings.TrimPrefix(url, "sqlite:")
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	for _, q := range []string{
		"SELECT id, version_id, is_applied, tstamp FROM goose_db_version ORDER BY id",
		"SELECT line, version, created_at FROM river_migration ORDER BY line, version",
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		cols, _ := rows.Columns()
		n := 0
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			fmt.Fprintln(&b, vals...)
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		rows.Close()
		if n == 0 {
			t.Fatalf("%s: no rows after migrate up", q)
		}
	}
	return b.String()
}
