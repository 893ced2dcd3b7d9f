package httpapi_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// servedDoc is the whole OpenAPI document of a development server (which
// has every route, GET /dev/outbox included), as plain JSON data.
func servedDoc(t *testing.T) map[string]any {
	t.Helper()
	_, doc := servedDocOf(t)
	return doc
}

func servedDocOf(t *testing.T) (*env, map[string]any) {
	t.Helper()
	e := newEnv(t, store.SQLite, true)
	r := scenario{method: "GET", path: "/v1/openapi.json", wantStatus: 200}.run(t, e)
	var doc map[string]any
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		t.Fatalf("decode /v1/openapi.json: %v", err)
	}
	return e, doc
}

type docOp struct {
	where string // "GET /path (operationId)"
	id    string
	op    map[string]any
}

var docMethods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

func docOps(doc map[string]any) []docOp {
	var out []docOp
	for path, item := range obj(doc["paths"]) {
		for _, m := range docMethods {
			op := obj(obj(item)[m])
			if op == nil {
				continue
			}
			id, _ := op["operationId"].(string)
			out = append(out, docOp{where: fmt.Sprintf("%s %s (%s)", strings.ToUpper(m), path, id), id: id, op: op})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].where < out[j].where })
	return out
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// hasExample: a media type shows an example (example, or examples).
func hasExample(mt map[string]any) bool {
	_, one := mt["example"]
	return one || len(obj(mt["examples"])) > 0
}

func examplesOf(mt map[string]any) []any {
	if v, ok := mt["example"]; ok {
		return []any{v}
	}
	var out []any
	for _, ex := range obj(mt["examples"]) {
		out = append(out, obj(ex)["value"])
	}
	return out
}

// TestOpenAPIOperationsDocumented: the reference describes every operation:
// a summary, a description, a described parameter list, an example of the
// request body and of every JSON success answer.
func TestOpenAPIOperationsDocumented(t *testing.T) {
	doc := servedDoc(t)
	ops := docOps(doc)
	if len(ops) < 60 {
		t.Fatalf("the document has %d operations; want the whole API", len(ops))
	}
	for _, o := range ops {
		for _, field := range []string{"summary", "description"} {
			if s, _ := o.op[field].(string); strings.TrimSpace(s) == "" {
				t.Errorf("%s has no %s (set it in the operation's declaration beside its handler)", o.where, field)
			}
		}
		for _, p := range asList(o.op["parameters"]) {
			if d, _ := obj(p)["description"].(string); d == "" {
				t.Errorf("%s: parameter %v %q has no description (give its field a doc tag)", o.where, obj(p)["in"], obj(p)["name"])
			}
		}
		if rb := obj(o.op["requestBody"]); rb != nil {
			// The JSON body when the operation takes one (a raw-body
			// handler's application/octet-stream is huma's artefact).
			content := obj(rb["content"])
			if mt := obj(content["application/json"]); mt != nil {
				content = map[string]any{"application/json": mt}
			}
			for ct, mt := range content {
				if !hasExample(obj(mt)) {
					t.Errorf("%s: request body %s has no example (set req in the operation's declaration)", o.where, ct)
				}
			}
		}
		for code, resp := range obj(o.op["responses"]) {
			if !strings.HasPrefix(code, "2") {
				continue
			}
			if mt := obj(obj(obj(resp)["content"])["application/json"]); mt != nil && !hasExample(mt) {
				t.Errorf("%s: %s response has no example (set resp in the operation's declaration)", o.where, code)
			}
		}
	}
}

// TestOpenAPIExamplesValidate: every JSON example matches its schema, so an
// example cannot drift from what the API takes and answers.
func TestOpenAPIExamplesValidate(t *testing.T) {
	doc := servedDoc(t)
	reg := huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)
	for name, s := range obj(obj(doc["components"])["schemas"]) {
		reg.Map()[name] = toSchema(obj(s))
	}
	check := func(where string, mt map[string]any, mode huma.ValidateMode) int {
		sm := obj(mt["schema"])
		if sm == nil {
			return 0
		}
		schema := toSchema(sm)
		n := 0
		for _, ex := range examplesOf(mt) {
			n++
			res := &huma.ValidateResult{}
			huma.Validate(reg, schema, huma.NewPathBuffer([]byte{}, 0), mode, ex, res)
			for _, err := range res.Errors {
				t.Errorf("%s: example does not match its schema: %v", where, err)
			}
		}
		return n
	}
	checked := 0
	for _, o := range docOps(doc) {
		if rb := obj(o.op["requestBody"]); rb != nil {
			checked += check(o.where+" request", obj(obj(rb["content"])["application/json"]), huma.ModeWriteToServer)
		}
		for code, resp := range obj(o.op["responses"]) {
			checked += check(o.where+" "+code, obj(obj(obj(resp)["content"])["application/json"]), huma.ModeReadFromServer)
		}
	}
	if checked < 100 {
		t.Errorf("validated %d examples; want one per request body and JSON answer", checked)
	}
}

// TestOpenAPIPlainExamplesMatchAnswers: the JSON routes served without a
// schema (health, readiness, JWKS, this document) have examples with the
// keys their real answers have, since no schema checks those.
func TestOpenAPIPlainExamplesMatchAnswers(t *testing.T) {
	e, doc := servedDocOf(t)
	checked := 0
	for path, item := range obj(doc["paths"]) {
		mt := obj(obj(obj(obj(obj(obj(item)["get"])["responses"])["200"])["content"])["application/json"])
		if mt == nil || mt["schema"] != nil || strings.Contains(path, "{") {
			continue
		}
		ex := obj(mt["example"])
		r := e.do(t, "GET", path, nil, nil)
		var got map[string]any
		if err := json.Unmarshal(r.raw, &got); err != nil || r.status != 200 {
			t.Errorf("GET %s = %d %s; want a JSON object", path, r.status, r.raw)
			continue
		}
		if want, have := sortedKeys(ex), sortedKeys(got); !slices.Equal(want, have) {
			t.Errorf("GET %s: example has keys %v; the answer has %v", path, want, have)
		}
		checked++
	}
	if checked < 3 {
		t.Errorf("checked %d plain JSON routes; want health, readiness, JWKS and the document", checked)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestOpenAPIFieldsDescribed: every property of every schema says what it is.
func TestOpenAPIFieldsDescribed(t *testing.T) {
	doc := servedDoc(t)
	var walk func(where string, s map[string]any)
	walk = func(where string, s map[string]any) {
		for name, p := range obj(s["properties"]) {
			if d, _ := obj(p)["description"].(string); strings.TrimSpace(d) == "" {
				t.Errorf("%s.%s has no description (give its field a doc tag)", where, name)
			}
			walk(where+"."+name, obj(p))
		}
		if items := obj(s["items"]); items != nil {
			walk(where+"[]", items)
		}
	}
	schemas := obj(obj(doc["components"])["schemas"])
	for name, s := range schemas {
		walk(name, obj(s))
	}
	if len(schemas) < 50 {
		t.Errorf("the document has %d schemas; want the whole API's", len(schemas))
	}
}

// toSchema reads a JSON Schema of the document into huma's type, for
// huma.Validate: the keywords the document uses.
func toSchema(m map[string]any) *huma.Schema {
	if m == nil {
		return nil
	}
	s := &huma.Schema{}
	switch typ := m["type"].(type) {
	case string:
		s.Type = typ
	case []any:
		for _, v := range typ {
			if v == "null" {
				s.Nullable = true
			} else {
				s.Type, _ = v.(string)
			}
		}
	}
	s.Ref, _ = m["$ref"].(string)
	s.Format, _ = m["format"].(string)
	s.Pattern, _ = m["pattern"].(string)
	s.Enum, _ = m["enum"].([]any)
	s.Const = m["const"]
	for name, p := range obj(m["properties"]) {
		if s.Properties == nil {
			s.Properties = map[string]*huma.Schema{}
		}
		s.Properties[name] = toSchema(obj(p))
	}
	s.Items = toSchema(obj(m["items"]))
	switch ap := m["additionalProperties"].(type) {
	case bool:
		s.AdditionalProperties = ap
	case map[string]any:
		s.AdditionalProperties = toSchema(ap)
	}
	for _, r := range asList(m["required"]) {
		s.Required = append(s.Required, r.(string))
	}
	s.MinLength, s.MaxLength = intKw(m, "minLength"), intKw(m, "maxLength")
	s.MinItems, s.MaxItems = intKw(m, "minItems"), intKw(m, "maxItems")
	s.Minimum, s.Maximum = floatKw(m, "minimum"), floatKw(m, "maximum")
	for _, kw := range []struct {
		name string
		dst  *[]*huma.Schema
	}{{"oneOf", &s.OneOf}, {"anyOf", &s.AnyOf}, {"allOf", &s.AllOf}} {
		for _, sub := range asList(m[kw.name]) {
			*kw.dst = append(*kw.dst, toSchema(obj(sub)))
		}
	}
	s.PrecomputeMessages()
	return s
}

func asList(v any) []any { l, _ := v.([]any); return l }

func intKw(m map[string]any, k string) *int {
	f, ok := m[k].(float64)
	if !ok {
		return nil
	}
	n := int(f)
	return &n
}

func floatKw(m map[string]any, k string) *float64 {
	f, ok := m[k].(float64)
	if !ok {
		return nil
	}
	return &f
}
