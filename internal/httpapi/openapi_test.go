package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
	"github.com/gatehouse-auth/gatehouse/internal/webhook/eventschema"
)

// openAPIDoc is the part of the document these tests read.
type openAPIDoc struct {
	OpenAPI string                                 `json:"openapi"`
	Paths   map[string]map[string]openAPIOperation `json:"paths"`
}

type openAPIOperation struct {
	OperationID string                `json:"operationId"`
	Tags        []string              `json:"tags"`
	Security    []map[string][]string `json:"security"`
	Parameters  []struct {
		Name     string `json:"name"`
		In       string `json:"in"`
		Required bool   `json:"required"`
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
			switch p {
			case "{asset}":
				return "style.css" // a docs asset that exists
			case "{icon}":
				return "google.svg"
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
			// The magic-link consent page and the social sign-in's
			// navigations answer people, not programs: their errors are
			// pages too (consent_test.go, oauth_signin_test.go).
			if pageRoute(rt.Path) {
				if r.status != http.StatusNotFound {
					t.Errorf("page for an unknown app = %d; want 404", r.status)
				}
				return
			}
			checkInvariants(t, rt.Method, !strings.HasPrefix(rt.Path, "/v1/") || strings.HasPrefix(rt.Path, "/v1/docs") ||
				strings.HasPrefix(rt.Path, "/v1/assets/"), r)
		})
	}
}

// pageRoute reports whether path answers browsers with pages, errors too.
func pageRoute(path string) bool {
	return strings.HasSuffix(path, "/magic_links/open") || path == "/m/{code}" ||
		strings.HasSuffix(path, "/oauth/authorize") || strings.HasSuffix(path, "/oauth/callback")
}

// TestOpenAPISecuredOperationsDocumentErrors: an operation that needs a
// credential documents 401; one that takes an API secret (which may belong to
// another app or lack the role) documents 403 as well. One whose credential
// is optional (an empty requirement among its security: GET /v1/apps/{app_id}
// ignores a wrong one) needs neither.
func TestOpenAPISecuredOperationsDocumentErrors(t *testing.T) {
	_, doc := fetchOpenAPI(t)
	secured := 0
	for path, ops := range doc.Paths {
		for method, op := range ops {
			optional := slices.ContainsFunc(op.Security, func(req map[string][]string) bool { return len(req) == 0 })
			if len(op.Security) == 0 || optional {
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

// errorResponse is the part of an error response these tests read.
type errorResponse struct {
	Headers map[string]json.RawMessage `json:"headers"`
	Content map[string]struct {
		Schema struct {
			AllOf []struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"allOf"`
			OneOf []json.RawMessage `json:"oneOf"`
		} `json:"schema"`
		Examples map[string]struct {
			Value map[string]any `json:"value"`
		} `json:"examples"`
	} `json:"content"`
}

// TestOpenAPIErrorResponses: every operation documents its errors; each
// status's error_code values are an enum with an example body each; 401
// and 403 carry only the interface's codes; every 429 declares Retry-After.
// That the answers are the documented ones is checked by TestMain.
func TestOpenAPIErrorResponses(t *testing.T) {
	_, doc := fetchOpenAPI(t)
	noCode := map[string][]string{"401": {"m2m_session_required", "invalid_client"}, "403": {"verification_required"}}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			where := strings.ToUpper(method) + " " + path + " (" + op.OperationID + ")"
			errs := 0
			for status, raw := range op.Responses {
				if status < "400" || status == "default" {
					continue
				}
				errs++
				var r errorResponse
				if err := json.Unmarshal(raw, &r); err != nil {
					t.Fatalf("%s %s: %v", where, status, err)
				}
				if status == "429" && r.Headers["Retry-After"] == nil {
					t.Errorf("%s: 429 does not declare Retry-After", where)
				}
				mt, ok := r.Content["application/json"]
				if !ok {
					if !slices.Contains([]string{"openMagicLink", "decideMagicLink", "openShortLink", "oauthAuthorize", "oauthCallback", "oauthCallbackPost"}, op.OperationID) {
						t.Errorf("%s: %s has no JSON body", where, status)
					}
					continue
				}
				var codes []string
				for _, part := range mt.Schema.AllOf {
					codes = append(codes, part.Properties["error_code"].Enum...)
				}
				if allowed, ok := noCode[status]; ok {
					for _, c := range codes {
						if !slices.Contains(allowed, c) {
							t.Errorf("%s: %s carries error_code %q; 401 and 403 carry none but %v", where, status, c, allowed)
						}
					}
				}
				if len(mt.Examples) == 0 {
					t.Errorf("%s: %s has no example body", where, status)
				}
				for _, c := range codes {
					if ex, ok := mt.Examples[c]; !ok || ex.Value["error_code"] != c || ex.Value["error"] == "" {
						t.Errorf("%s: %s lists %s without an example body of it", where, status, c)
					}
				}
			}
			if errs == 0 {
				t.Errorf("%s documents no error response", where)
			}
		}
	}
	// The findings.
	for _, want := range []struct{ path, method, status, code string }{
		{"/v1/auth/{app_id}/magic_links/status", "post", "409", "magic_link_pending"},
		{"/v1/auth/{app_id}/magic_links/status", "post", "429", "slow_down"},
		{"/v1/auth/{app_id}/tokens/refresh", "post", "401", ""},
		{"/v1/auth/{app_id}/otps/verify", "post", "429", "too_many_attempts"},
		{"/v1/auth/{app_id}/otps/verify", "post", "422", "invalid_code"},
	} {
		raw, ok := doc.Paths[want.path][want.method].Responses[want.status]
		if !ok {
			t.Errorf("%s %s documents no %s", want.method, want.path, want.status)
			continue
		}
		if want.code != "" && !strings.Contains(string(raw), `"`+want.code+`"`) {
			t.Errorf("%s %s: %s does not list %s", want.method, want.path, want.status, want.code)
		}
	}
	// The providers PATCH keeps its {errors} shape beside the usual one.
	var r errorResponse
	_ = json.Unmarshal(doc.Paths["/v1/apps/{app_id}/message_service_providers"]["patch"].Responses["400"], &r)
	if len(r.Content["application/json"].Schema.OneOf) != 2 || !strings.Contains(string(r.Content["application/json"].Schema.OneOf[0]), "ErrorsBody") {
		t.Errorf("PATCH message_service_providers 400 = %+v; want one of ErrorsBody and Error", r)
	}
}

// TestOpenAPIRequiredHeaders: the headers an operation cannot work without
// are marked required (or are its security scheme).
func TestOpenAPIRequiredHeaders(t *testing.T) {
	_, doc := fetchOpenAPI(t)
	for _, want := range []struct{ path, header string }{
		{"/v1/auth/{app_id}/tokens/refresh", "X-Refresh-Token"},
		{"/v1/auth/{app_id}/tokens/force_refresh", "X-Refresh-Token"},
		{"/v1/auth/{app_id}/tokens/verify/refresh", "Authorization"},
		{"/v1/auth/{app_id}/tokens/rotate_access", "X-Authorization"},
	} {
		found := false
		for _, p := range doc.Paths[want.path]["post"].Parameters {
			if p.In == "header" && p.Name == want.header {
				found = true
				if !p.Required {
					t.Errorf("POST %s: header %s is not marked required", want.path, want.header)
				}
			}
		}
		if !found {
			t.Errorf("POST %s does not declare header %s", want.path, want.header)
		}
	}
	// A user's access token is the userAccess scheme, required by security.
	for path, ops := range doc.Paths {
		for method, op := range ops {
			for _, p := range op.Parameters {
				if p.In == "header" && p.Name == "X-Refresh-Token" && !p.Required {
					t.Errorf("%s %s: X-Refresh-Token is not marked required", strings.ToUpper(method), path)
				}
			}
		}
	}
}

// TestWebhookEventSchema: the event schema is public and cacheable, and the
// OpenAPI document lists every event type under webhooks, its body one of
// the document's schemas.
func TestWebhookEventSchema(t *testing.T) {
	e := newEnv(t, store.SQLite, false)
	r := scenario{method: "GET", path: eventschema.Path, wantStatus: 200}.run(t, e)
	if !bytes.Equal(r.raw, eventschema.Document()) {
		t.Errorf("GET %s does not serve eventschema.Document()", eventschema.Path)
	}
	if ct, cc := r.header.Get("Content-Type"), r.header.Get("Cache-Control"); ct != "application/json" || !strings.HasPrefix(cc, "public, max-age=") {
		t.Errorf("Content-Type %q, Cache-Control %q; want application/json, public", ct, cc)
	}
	r = scenario{method: "GET", path: "/v1/openapi.json", wantStatus: 200}.run(t, e)
	var doc struct {
		Webhooks map[string]struct {
			Post struct {
				RequestBody struct {
					Content map[string]struct {
						Schema struct {
							Ref string `json:"$ref"`
						} `json:"schema"`
					} `json:"content"`
				} `json:"requestBody"`
			} `json:"post"`
		} `json:"webhooks"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, typ := range webhook.EventTypes() {
		ref := doc.Webhooks[typ].Post.RequestBody.Content["application/json"].Schema.Ref
		name, ok := strings.CutPrefix(ref, "#/components/schemas/")
		if _, defined := doc.Components.Schemas[name]; !ok || !defined {
			t.Errorf("webhook %s: request body %q is not a schema of the document", typ, ref)
		}
	}
}
