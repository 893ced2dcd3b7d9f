package httpapi_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// openAPIDoc is the part of the document these tests read.
type openAPIDoc struct {
	OpenAPI string                                 `json:"openapi"`
	Paths   map[string]map[string]openAPIOperation `json:"paths"`
}

type openAPIOperation struct {
	OperationID string                `json:"operationId"`
	Security    []map[string][]string `json:"security"`
	Parameters  []struct {
		Name string `json:"name"`
		In   string `json:"in"`
	} `json:"parameters"`
	Responses map[string]json.RawMessage `json:"responses"`
}

// fetchOpenAPI serves the document of a development server and decodes it.
func fetchOpenAPI(t *testing.T) (*env, openAPIDoc) {
	t.Helper()
	e := newEnv(t, store.SQLite, true)
	r := scenario{method: "GET", path: "/v1/openapi.json", wantStatus: 200}.run(t, e)
	var doc openAPIDoc
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		t.Fatalf("decode /v1/openapi.json: %v", err)
	}
	return e, doc
}

func TestOpenAPIVersion(t *testing.T) {
	_, doc := fetchOpenAPI(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Errorf("openapi = %q; want 3.1.x", doc.OpenAPI)
	}
	if len(doc.Paths) == 0 {
		t.Errorf("the document has no paths")
	}
}

// TestOpenAPICoversEveryRoute: every served route is documented, and every
// documented operation is served.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	e, doc := fetchOpenAPI(t)
	routes := e.API().Routes()
	if len(routes) < 30 {
		t.Fatalf("Routes() has %d routes; want the whole API", len(routes))
	}
	served := map[string]bool{}
	for _, rt := range routes {
		method := strings.ToLower(rt.Method)
		served[method+" "+rt.Path] = true
		ops, ok := doc.Paths[rt.Path]
		if !ok {
			t.Errorf("route %s %s: path missing from the OpenAPI document", rt.Method, rt.Path)
			continue
		}
		if _, ok := ops[method]; !ok {
			t.Errorf("route %s %s: method missing from the OpenAPI document", rt.Method, rt.Path)
		}
	}
	httpMethods := []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}
	for path, ops := range doc.Paths {
		for method := range ops {
			if slices.Contains(httpMethods, method) && !served[method+" "+path] {
				t.Errorf("documented %s %s is not in Routes()", strings.ToUpper(method), path)
			}
		}
	}
	if !served["get /dev/outbox"] {
		t.Errorf("Routes() lacks GET /dev/outbox in development mode")
	}
}

// TestRoutesAreServed sends each route a request with made-up path values:
// none may fall through to the router's own 404 or 405.
func TestRoutesAreServed(t *testing.T) {
	e, _ := fetchOpenAPI(t)
	param := regexp.MustCompile(`\{[^}]+\}`)
	for _, rt := range e.API().Routes() {
		path := param.ReplaceAllStringFunc(rt.Path, func(p string) string {
			if p == "{asset}" {
				return "style.css" // a docs asset that exists
			}
			return "x0"
		})
		var body any
		if rt.Method == http.MethodPost || rt.Method == http.MethodPatch {
			body = map[string]any{}
		}
		r := e.do(t, rt.Method, path, nil, body)
		if r.status == http.StatusMethodNotAllowed || (r.status == http.StatusNotFound && r.str("error_code") == "not_found") {
			t.Errorf("%s %s (as %s) = %d %s; want the route's own handler", rt.Method, rt.Path, path, r.status, r.raw)
		}
		if r.status >= 500 {
			t.Errorf("%s %s (as %s) = %d %s; want no server error for a made-up request", rt.Method, rt.Path, path, r.status, r.raw)
		}
		t.Run(rt.Method+" "+rt.Path, func(t *testing.T) {
			// The magic-link consent page answers people, not programs:
			// its errors are pages too (consent_test.go).
			if strings.HasSuffix(rt.Path, "/magic_links/open") || rt.Path == "/m/{code}" {
				if r.status != http.StatusNotFound {
					t.Errorf("consent page for an unknown app = %d; want 404", r.status)
				}
				return
			}
			checkInvariants(t, rt.Method, !strings.HasPrefix(rt.Path, "/v1/") || strings.HasPrefix(rt.Path, "/v1/docs"), r)
		})
	}
}

// TestOpenAPISecuredOperationsDocumentErrors: an operation that needs a
// credential documents 401; one that takes an API secret (which may belong to
// another app or lack the role) documents 403 as well.
func TestOpenAPISecuredOperationsDocumentErrors(t *testing.T) {
	_, doc := fetchOpenAPI(t)
	secured := 0
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if len(op.Security) == 0 {
				continue
			}
			secured++
			want := []string{"401"}
			if slices.ContainsFunc(op.Security, func(req map[string][]string) bool { _, ok := req["apiSecret"]; return ok }) {
				want = append(want, "403")
			}
			for _, code := range want {
				if _, ok := op.Responses[code]; !ok {
					t.Errorf("%s %s (%s) has security but no %s response", strings.ToUpper(method), path, op.OperationID, code)
				}
			}
		}
	}
	if secured < 20 {
		t.Errorf("%d operations have security; want every app and workspace operation", secured)
	}
}

// TestOpenAPIPathParametersDeclared: OpenAPI requires each {name} in a path
// to be declared as a path parameter of its operations.
func TestOpenAPIPathParametersDeclared(t *testing.T) {
	_, doc := fetchOpenAPI(t)
	param := regexp.MustCompile(`\{([^}]+)\}`)
	for path, ops := range doc.Paths {
		for method, op := range ops {
			for _, m := range param.FindAllStringSubmatch(path, -1) {
				found := false
				for _, p := range op.Parameters {
					found = found || (p.In == "path" && p.Name == m[1])
				}
				if !found {
					t.Errorf("%s %s (%s) does not declare path parameter %q", strings.ToUpper(method), path, op.OperationID, m[1])
				}
			}
		}
	}
}

// TestOpenAPIOperationIDsUnique: clients generated from the document need
// one name per operation.
func TestOpenAPIOperationIDsUnique(t *testing.T) {
	_, doc := fetchOpenAPI(t)
	seen := map[string]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			where := strings.ToUpper(method) + " " + path
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", where)
				continue
			}
			if prev, ok := seen[op.OperationID]; ok {
				t.Errorf("operationId %q is used by %s and %s", op.OperationID, prev, where)
			}
			seen[op.OperationID] = where
		}
	}
}
