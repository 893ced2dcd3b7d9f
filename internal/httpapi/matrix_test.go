package httpapi_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// matrixDoc is the migration guide whose support matrix this test keeps true.
const matrixDoc = "../../docs/migrate-from-scute.md"

// matrixRow is one row of the support matrix.
type matrixRow struct {
	line   int
	status string   // supported, partly or not supported
	routes []string // "METHOD /path" with every {param} written {}
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

// readMatrix reads the rows of the guide's "## Support matrix" section.
func readMatrix(t *testing.T) []matrixRow {
	t.Helper()
	raw, err := os.ReadFile(matrixDoc)
	if err != nil {
		t.Fatalf("read %s: %v", matrixDoc, err)
	}
	var rows []matrixRow
	in := false
	for i, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == "## Support matrix"
			continue
		}
		if !in || !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		var statuses []string
		for _, c := range cells {
			switch c = strings.TrimSpace(c); c {
			case "supported", "partly", "not supported":
				statuses = append(statuses, c)
			}
		}
		if slices.ContainsFunc(cells, func(c string) bool { return strings.TrimSpace(c) == "Status" }) {
			continue // a header
		}
		if len(statuses) != 1 {
			t.Errorf("%s:%d: a matrix row needs exactly one status (supported, partly, not supported): %s", matrixDoc, i+1, line)
			continue
		}
		r := matrixRow{line: i + 1, status: statuses[0]}
		for _, m := range routeSpan.FindAllStringSubmatch(line, -1) {
			method, path, _ := strings.Cut(m[1], " ")
			r.routes = append(r.routes, routeKey(method, path))
		}
		rows = append(rows, r)
	}
	if len(rows) < 50 {
		t.Fatalf("%s: the support matrix has %d rows; want every call (is the section still named \"## Support matrix\"?)", matrixDoc, len(rows))
	}
	return rows
}

// notInMatrix are served /v1 routes the guide need not list: the
// document and its pages describe the API rather than being part of it.
var notInMatrix = []string{"GET /v1/openapi.json", "GET /v1/docs", "GET /v1/docs/", "GET /v1/docs/{}"}

// TestSupportMatrix keeps docs/migrate-from-scute.md true to the served
// OpenAPI document: a supported (or partly supported) row names only routes
// the server serves, a row not supported names none, and every /v1 route
// served is in the matrix.
func TestSupportMatrix(t *testing.T) {
	_, doc := fetchOpenAPI(t)
	served := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			if slices.Contains([]string{"get", "put", "post", "delete", "patch"}, method) {
				served[routeKey(method, path)] = true
			}
		}
	}
	listed := map[string]bool{}
	for _, r := range readMatrix(t) {
		if r.status != "not supported" && len(r.routes) == 0 {
			t.Errorf("%s:%d: a %s row must name its route as `METHOD /path`", matrixDoc, r.line, r.status)
		}
		for _, rt := range r.routes {
			listed[rt] = true
			switch {
			case r.status == "not supported" && served[rt]:
				t.Errorf("%s:%d: %s is marked not supported, but the server serves it", matrixDoc, r.line, rt)
			case r.status != "not supported" && !served[rt]:
				t.Errorf("%s:%d: %s is marked %s, but the server does not serve it", matrixDoc, r.line, rt, r.status)
			}
		}
	}
	for rt := range served {
		_, path, _ := strings.Cut(rt, " ")
		if strings.HasPrefix(path, "/v1/") && !listed[rt] && !slices.Contains(notInMatrix, rt) {
			t.Errorf("%s is served but not in the support matrix of %s: add a row", rt, matrixDoc)
		}
	}
}
