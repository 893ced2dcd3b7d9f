package server_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/gatehouse-auth/gatehouse/"

// imports lists what a package's non-test files import from this module.
func imports(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(path, module); ok && !slices.Contains(out, rest) {
				out = append(out, rest)
			}
		}
	}
	return out
}

// TestImportDirection keeps the layering of architecture.md true: the HTTP
// layer reaches the database only through the domain services, the pure
// packages import nothing of ours, and only the binary (and tests) import
// the assembly.
func TestImportDirection(t *testing.T) {
	root := filepath.Join("..", "..")
	rules := []struct {
		dir       string
		forbidden []string // import paths below the module
		nothing   bool     // imports nothing of ours at all
	}{
		{dir: "internal/httpapi", forbidden: []string{"internal/store", "internal/server", "internal/queue"}},
		// The console's pages, likewise: the domain services only.
		{dir: "internal/web", forbidden: []string{"internal/store", "internal/server", "internal/queue", "internal/httpapi"}},
		// The operator commands call the services the assembly built: tenant
		// for workspaces, apps and members, appuser for users; they print the
		// API's own shapes (httpapi's WorkspaceJSON, UserJSON…), which is all
		// they take from httpapi.
		{dir: "cmd/gatehouse", forbidden: []string{"internal/store", "internal/queue", "internal/signin", "internal/webhook", "internal/machine"}},
		{dir: "internal/token", nothing: true},
		{dir: "sessionverify", nothing: true}, // integrators import it: the standard library and go-jose only
		{dir: "internal/courier", nothing: true},
		{dir: "internal/errs", nothing: true},
		{dir: "internal/store", forbidden: []string{"internal/access", "internal/tenant", "internal/appuser", "internal/signin", "internal/webhook", "internal/server"}},
	}
	for _, r := range rules {
		got := imports(t, filepath.Join(root, r.dir))
		for _, p := range got {
			if r.nothing && !strings.HasPrefix(p, r.dir+"/") {
				t.Errorf("%s imports %s; it must import nothing of ours", r.dir, p)
			}
			if slices.Contains(r.forbidden, p) {
				t.Errorf("%s imports %s", r.dir, p)
			}
		}
	}
	// Only the binary builds the system (the tests build it through servertest).
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel == "internal/server" || strings.HasPrefix(rel, "internal/server/") {
			return nil
		}
		if slices.Contains(imports(t, path), "internal/server") {
			t.Errorf("%s imports internal/server: only cmd/gatehouse assembles the system", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
