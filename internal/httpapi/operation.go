package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// operation is one route and everything the API reference says of it. Each
// is declared next to its handler (ops_*.go), and routes.go registers it
// with one line: register(s, fooOp, s.foo), or s.plain(fooOp, s.foo) for a
// plain http.HandlerFunc.
type operation struct {
	id, method, path string
	summary, tag     string
	auth             auth // the credential rule (credentials.go); register() only
	desc             string
	// errors are what the operation answers beyond its credential rule and
	// what any operation can: error_code values, statuses written as numbers
	// (answered without an error_code) and errorsShape (errdocs.go).
	errors []string
	// headers are request headers it needs that are not its security
	// scheme's (X-Refresh-Token, say).
	headers  []string
	sendsSMS bool // may send an SMS: the description says how the guards refuse one
	// req and resp are examples of the request body and the success answer:
	// a Go value (the handler's own type, so the compiler keeps it in shape)
	// or raw JSON in a string. opdocs_test.go validates each against its schema.
	req, resp any

	// Plain routes only.
	contentType    string // of the 200 answer
	redirect       string // answers a 302 (or redirectStatus) to here instead
	redirectStatus int
	pages          map[int]string // a page's other answers (pageOp)

	// amend finishes the registered operation's description when the
	// declaration cannot say it (documentTokenRequest).
	amend func(*Server, *huma.Operation)
	// security replaces what the credential rule (register) or none (plain)
	// puts in the document: a credential that is optional, say.
	security []map[string][]string
}

func (d operation) huma() huma.Operation {
	o := huma.Operation{OperationID: d.id, Method: d.method, Path: d.path, Summary: d.summary, Description: d.desc, Tags: []string{d.tag}}
	if d.sendsSMS {
		o = smsGuarded(o)
	}
	return o
}

// register adds a huma operation: its credential rule goes into the metadata
// read by credentials(), and every error it returns goes through fail().
// Its error responses are those of its credential rule, those any operation
// can answer, and its own errors (errdocs.go).
func register[I, O any](s *Server, d operation, h func(context.Context, *I) (*O, error)) {
	o := d.huma()
	o.Metadata = map[string]any{metaAuth: d.auth}
	switch d.auth {
	case authApp, authAppHidden:
		o.Security = []map[string][]string{{schemeAPISecret: {}}, {schemeKeyHeader: {}}, {schemeAPISecret: {}, schemeKeyHeader: {}}}
	case authWorkspace:
		o.Security = []map[string][]string{{schemeAPISecret: {}}}
	case authUser:
		o.Security = []map[string][]string{{schemeUserAccess: {}}}
	case authOptionalApp:
		o.Security = []map[string][]string{{}, {schemeAPISecret: {}}}
	case authM2M:
		o.Security = []map[string][]string{{schemeM2M: {}}, {schemeM2M: {}, schemeAPISecret: {}}}
	default: // no credential: said outright, as lint tools and generators want
		o.Security = []map[string][]string{}
	}
	if d.security != nil {
		o.Security = d.security
	}
	decl := append(append(slices.Clip(anyOperation), "503", codeTimeout), authErrors(d.auth)...)
	s.documentErrors(&o, append(decl, d.errors...))
	s.routes = append(s.routes, Route{Method: o.Method, Path: o.Path})
	huma.Register(s.api, o, func(ctx context.Context, in *I) (*O, error) {
		out, err := h(ctx, in)
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		return out, nil
	})
	registered := s.operation(o.Method, o.Path)
	if o.Method != http.MethodGet {
		s.documentErrors(registered, notJSON)
	}
	if registered.RequestBody != nil {
		s.documentErrors(registered, tooLarge)
	}
	s.requireHeaders(registered, d.headers...)
	if d.amend != nil {
		d.amend(s, registered)
	}
	d.document(registered)
}

// plain adds a route served by a plain handler (health, metrics, JWKS, the
// OpenAPI document and its docs page, the pages) and describes it in the
// document too, with the errors any operation can answer and its own.
func (s *Server) plain(d operation, h http.HandlerFunc) {
	o := d.huma()
	o.Responses = map[string]*huma.Response{"200": {Description: "OK", Content: map[string]*huma.MediaType{d.contentType: {}}}}
	if d.redirect != "" {
		o = redirectOp(o, d.redirect, d.redirectStatus)
	}
	if d.pages != nil {
		o = pageOp(o, d.pages)
	}
	s.documentErrors(&o, append(slices.Clip(anyOperation), d.errors...))
	o.Security = d.security
	if o.Security == nil {
		o.Security = []map[string][]string{} // no credential
	}
	pattern := o.Method + " " + o.Path
	o.Path = strings.ReplaceAll(o.Path, "{$}", "")   // ServeMux's "exactly this path" marker
	o.Path = strings.ReplaceAll(o.Path, "...}", "}") // and its "the rest, even empty" wildcard
	// OpenAPI requires every path template variable to be declared.
	for _, name := range pathParams(o.Path) {
		o.Parameters = append(o.Parameters, &huma.Param{Name: name, In: "path", Required: true, Schema: &huma.Schema{Type: "string"}})
	}
	if ok := o.Responses["200"]; ok != nil && ok.Content["text/html"] != nil {
		// A page's unknown app and failures are plain text (http.Error), a
		// panic's JSON.
		for _, status := range []string{"404", "500", "503"} {
			if r := o.Responses[status]; r != nil {
				r.Content["text/plain"] = &huma.MediaType{Schema: &huma.Schema{Type: "string"}}
			}
		}
	}
	if r := o.Responses["429"]; r != nil && r.Headers == nil {
		// A page's 429 (pageOp) carries Retry-After as the JSON ones do.
		r.Headers = map[string]*huma.Param{"Retry-After": {Description: "Seconds to wait before trying again.",
			Required: true, Schema: &huma.Schema{Type: "integer", Minimum: ptrFloat(1)}}}
	}
	d.document(&o)
	s.api.OpenAPI().AddOperation(&o)
	s.router.HandleFunc(pattern, h)
	s.routes = append(s.routes, Route{Method: o.Method, Path: o.Path})
}

// document adds what huma cannot derive: the descriptions of path
// parameters that have no doc tag, and the examples of the request body and
// the success answer (an example set earlier, by amend, stays).
func (d operation) document(o *huma.Operation) {
	for _, p := range o.Parameters {
		if p.Description == "" && p.In == "path" {
			p.Description = pathParamDocs[p.Name]
		}
	}
	if d.req != nil && o.RequestBody != nil {
		if mt := o.RequestBody.Content["application/json"]; mt != nil && mt.Example == nil && len(mt.Examples) == 0 {
			mt.Example = exampleValue(d.req)
		}
	}
	if d.resp != nil {
		if mt := successJSON(o); mt != nil && mt.Example == nil && len(mt.Examples) == 0 {
			mt.Example = exampleValue(d.resp)
		}
	}
}

// pathParamDocs describes the path parameters of plain() routes, which
// have no input struct to carry a doc tag.
var pathParamDocs = map[string]string{
	"app_id": "The app id.",
	"code":   "The short code from the SMS.",
	"asset":  "A file of the page: its script or its stylesheet.",
	"icon":   "The icon's file: the provider type and .svg (google.svg, apple.svg, microsoft.svg, github.svg, oidc.svg).",
}

// pathParams lists the {name} variables of a path template, in order.
func pathParams(path string) []string {
	var out []string
	for rest := path; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, strings.TrimSuffix(rest[i+1:i+j], "..."))
		rest = rest[i+j+1:]
	}
}

// successJSON is the JSON media type of an operation's 2xx answer, if any.
func successJSON(o *huma.Operation) *huma.MediaType {
	for code, r := range o.Responses {
		if strings.HasPrefix(code, "2") && r != nil && r.Content != nil {
			if mt := r.Content["application/json"]; mt != nil {
				return mt
			}
		}
	}
	return nil
}

// exampleValue turns a Go value or raw JSON into plain JSON data, so the
// document shows exactly what the wire carries.
func exampleValue(v any) any {
	raw, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			panic("httpapi: example: " + err.Error())
		}
		raw = string(b)
	}
	var out any
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		panic("httpapi: bad example JSON: " + err.Error() + ": " + raw)
	}
	return out
}
