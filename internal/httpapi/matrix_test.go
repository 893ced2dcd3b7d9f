package httpapi_test

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// update rewrites the generated part of the migration guide (the Route
// column of its "Gatehouse's own routes" table); a flag must be declared at
// package level so that "go test -update" parses it.
var update = flag.Bool("update", false, "rewrite the Route column of docs/migrate-from-scute.md's own-routes table from the registered operations")

// matrixDoc is the migration guide whose support matrix this test keeps true.
const matrixDoc = "../../docs/migrate-from-scute.md"

// ownSection is the matrix's table of the routes Scute had no equivalent
// for: one row per tag, its Route column generated from the operations.
const ownSection = "### Gatehouse's own routes (no Scute equivalent)"

const updateHint = "go test ./internal/httpapi -run TestSupportMatrix -update"

// matrixRow is one row of the support matrix.
type matrixRow struct {
	line   int
	own    bool     // in ownSection
	cells  []string // trimmed
	status string   // supported, partly or not supported
	named  []string // "METHOD /path" of the Route column, {param}s unnamed
	routes []string // "METHOD /path" anywhere in the row, {param}s unnamed
}

var (
	routeSpan = regexp.MustCompile("`((?:GET|POST|PUT|PATCH|DELETE) /[^` ]*)`")
	pathParam = regexp.MustCompile(`\{[^}]*\}`)
)

// routeKey writes a route with its parameters unnamed, so the guide may
// say {app_id} where the document says {id}.
func routeKey(method, path string) string {
	return strings.ToUpper(method) + " " + pathParam.ReplaceAllString(path, "{}")
}

func spans(s string) []string {
	var out []string
	for _, m := range routeSpan.FindAllStringSubmatch(s, -1) {
		method, path, _ := strings.Cut(m[1], " ")
		out = append(out, routeKey(method, path))
	}
	return out
}

// readMatrix reads the guide and the rows of its "## Support matrix" section.
func readMatrix(t *testing.T) ([]string, []matrixRow) {
	t.Helper()
	raw, err := os.ReadFile(matrixDoc)
	if err != nil {
		t.Fatalf("read %s: %v", matrixDoc, err)
	}
	lines := strings.Split(string(raw), "\n")
	var rows []matrixRow
	in, own := false, false
	for i, line := range lines {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == "## Support matrix"
			continue
		}
		if strings.HasPrefix(line, "### ") {
			own = strings.TrimSpace(line) == ownSection
		}
		if !in || !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		var statuses []string
		for j, c := range cells {
			cells[j] = strings.TrimSpace(c)
			switch cells[j] {
			case "supported", "partly", "not supported":
				statuses = append(statuses, cells[j])
			}
		}
		if slices.Contains(cells, "Status") {
			continue // a header
		}
		if len(statuses) != 1 || len(cells) < 3 {
			t.Errorf("%s:%d: a matrix row needs a route column and exactly one status (supported, partly, not supported): %s", matrixDoc, i+1, line)
			continue
		}
		rows = append(rows, matrixRow{line: i + 1, own: own, cells: cells, status: statuses[0],
			named: spans(cells[1]), routes: spans(line)})
	}
	if len(rows) < 50 {
		t.Fatalf("%s: the support matrix has %d rows; want every call (is the section still named \"## Support matrix\"?)", matrixDoc, len(rows))
	}
	return lines, rows
}

// notInMatrix are served /v1 routes the guide need not list: the
// document and its pages describe the API rather than being part of it.
var notInMatrix = []string{"GET /v1/openapi.json", "GET /v1/docs", "GET /v1/docs/", "GET /v1/docs/{}"}

// TestSupportMatrix keeps docs/migrate-from-scute.md true to the registered
// operations (as the served OpenAPI document has them). In the Scute
// tables, written by hand, a supported (or partly supported) row names only
// routes the server serves and a row not supported names none. The own
// routes' table is generated: one row per tag, in the order routes.go
// registers them, whose Route column lists every served /v1 route that no
// Scute row names in its Route column; -update rewrites that column (the
// other columns stay as written).
func TestSupportMatrix(t *testing.T) {
	e, doc := fetchOpenAPI(t)
	served := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			if slices.Contains([]string{"get", "put", "post", "delete", "patch"}, method) {
				served[routeKey(method, path)] = true
			}
		}
	}
	lines, rows := readMatrix(t)
	named := map[string]bool{}
	for _, r := range rows {
		if r.status != "not supported" && len(r.routes) == 0 {
			t.Errorf("%s:%d: a %s row must name its route as `METHOD /path`", matrixDoc, r.line, r.status)
		}
		for _, rt := range r.routes {
			switch {
			case r.status == "not supported" && served[rt]:
				t.Errorf("%s:%d: %s is marked not supported, but the server serves it", matrixDoc, r.line, rt)
			case r.status != "not supported" && !served[rt]:
				t.Errorf("%s:%d: %s is marked %s, but the server does not serve it", matrixDoc, r.line, rt, r.status)
			}
		}
		if !r.own {
			for _, rt := range r.named {
				named[rt] = true
			}
		}
	}

	// The own routes, by tag, in registration order.
	var tags []string
	byTag := map[string][]string{}
	for _, rt := range e.API().Routes() {
		key := routeKey(rt.Method, rt.Path)
		if !strings.HasPrefix(rt.Path, "/v1/") || named[key] || slices.Contains(notInMatrix, key) {
			continue
		}
		op, ok := doc.Paths[rt.Path][strings.ToLower(rt.Method)]
		if !ok || len(op.Tags) != 1 {
			t.Fatalf("%s %s: want one documented operation with one tag", rt.Method, rt.Path)
		}
		tag := op.Tags[0]
		if byTag[tag] == nil {
			tags = append(tags, tag)
		}
		byTag[tag] = append(byTag[tag], "`"+rt.Method+" "+rt.Path+"`")
	}
	have := map[string]matrixRow{}
	var order []string
	for _, r := range rows {
		if r.own {
			have[r.cells[0]] = r
			order = append(order, r.cells[0])
		}
	}
	var table []string
	for _, tag := range tags {
		notes := ""
		if r, ok := have[tag]; ok && len(r.cells) > 3 {
			notes = r.cells[3]
		}
		table = append(table, strings.TrimRight("| "+tag+" | "+strings.Join(byTag[tag], ", ")+" | supported | "+notes, " ")+" |")
	}
	var drift []string
	if !slices.Equal(order, tags) {
		drift = append(drift, fmt.Sprintf("%s: the rows of %q are %v; want one per tag, in routes.go's order: %v", matrixDoc, ownSection, order, tags))
	}
	for i, tag := range tags {
		if r, ok := have[tag]; ok && lines[r.line-1] != table[i] {
			drift = append(drift, fmt.Sprintf("%s:%d: the row of %s is out of date; want:\n%s", matrixDoc, r.line, tag, table[i]))
		}
	}
	if len(drift) == 0 {
		return
	}
	if !*update {
		for _, d := range drift {
			t.Errorf("%s\n(run: %s)", d, updateHint)
		}
		return
	}
	// Replace the own table's rows (everything after its header and rule).
	first := slices.Index(lines, ownSection)
	for !strings.HasPrefix(lines[first], "|---") {
		first++
	}
	first++
	end := first
	for end < len(lines) && strings.HasPrefix(lines[end], "|") {
		end++
	}
	out := slices.Concat(lines[:first], table, lines[end:])
	if err := os.WriteFile(matrixDoc, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote the own routes' table of %s", matrixDoc)
}
