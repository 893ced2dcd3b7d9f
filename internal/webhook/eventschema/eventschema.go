// Package eventschema describes webhook events for receivers: a JSON Schema
// (draft 2020-12) generated from webhook's payload types with huma's schema
// registry, served by the API at Path and added to its OpenAPI document, and
// the check that a delivery body matches it.
package eventschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Path is where the API serves Document.
const Path = "/v1/webhooks/events.schema.json"

// schemas are the event schemas with references under one prefix.
type schemas struct {
	reg       huma.Registry
	envelopes map[string]string // envelope schema name by event type
	names     []string          // envelope schema names, in webhook.Events order
}

// build makes an envelope schema per event type, its data a reference to
// its payload type (or one of them), with every type the payloads use.
func build(prefix string) schemas {
	reg := huma.NewMapRegistry(prefix, huma.DefaultSchemaNamer)
	base := huma.NewMapRegistry(prefix, huma.DefaultSchemaNamer).Schema(reflect.TypeFor[webhook.Envelope](), false, "")
	out := schemas{reg: reg, envelopes: map[string]string{}}
	for _, e := range webhook.Events() {
		data := &huma.Schema{}
		for _, d := range e.Data {
			data.OneOf = append(data.OneOf, reg.Schema(reflect.TypeOf(d), true, ""))
		}
		if len(data.OneOf) == 1 {
			data = data.OneOf[0]
		}
		env := *base
		env.Title, env.Description = e.Type, e.When
		env.Properties = map[string]*huma.Schema{}
		for k, v := range base.Properties {
			env.Properties[k] = v
		}
		env.Properties["event_type"] = &huma.Schema{Type: huma.TypeString, Const: e.Type, Description: "Always " + e.Type + "."}
		data.Description = "The event's data."
		env.Properties["data"] = data
		name := envelopeName(e.Type)
		reg.Map()[name] = &env
		out.envelopes[e.Type] = name
		out.names = append(out.names, name)
	}
	// Objects stay open: a receiver must accept fields added later.
	for _, s := range reg.Map() {
		if s.AdditionalProperties == false {
			s.AdditionalProperties = nil
		}
	}
	return out
}

// envelopeName names an event type's envelope schema: user.created is
// UserCreatedEvent.
func envelopeName(eventType string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(eventType, func(r rune) bool { return r == '.' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String() + "Event"
}

const defs = "#/$defs/"

var standalone = sync.OnceValues(func() (schemas, []byte) {
	s := build(defs)
	// The union of the envelopes, with the discriminator OpenAPI tools read.
	var oneOf []*huma.Schema
	mapping := map[string]string{}
	for _, name := range s.names {
		oneOf = append(oneOf, &huma.Schema{Ref: defs + name})
	}
	for t, name := range s.envelopes {
		mapping[t] = defs + name
	}
	doc := struct {
		Schema        string                  `json:"$schema"`
		Title         string                  `json:"title"`
		Description   string                  `json:"description"`
		OneOf         []*huma.Schema          `json:"oneOf"`
		Discriminator *huma.Discriminator     `json:"discriminator"`
		Defs          map[string]*huma.Schema `json:"$defs"`
	}{
		Schema: "https://json-schema.org/draft/2020-12/schema",
		Title:  "Gatehouse webhook events",
		Description: "The body of every webhook delivery: an envelope whose event_type says which data it carries. " +
			"Objects may gain fields; ignore those you do not know.",
		OneOf: oneOf, Discriminator: &huma.Discriminator{PropertyName: "event_type", Mapping: mapping}, Defs: s.reg.Map(),
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic("eventschema: the schema does not marshal: " + err.Error())
	}
	return s, b
})

// Document is the JSON Schema of webhook events, as served at Path.
func Document() []byte {
	_, b := standalone()
	return b
}

// AddToOpenAPI adds the event schemas to o: each envelope and payload type
// under components/schemas, and each event type as an OpenAPI 3.1 webhook
// whose request body is its envelope. (Their union is Document's alone: the
// document drops schemas nothing refers to.)
func AddToOpenAPI(o *huma.OpenAPI) {
	const prefix = "#/components/schemas/"
	s := build(prefix)
	components := o.Components.Schemas.Map()
	for name, schema := range s.reg.Map() {
		if _, ok := components[name]; ok {
			panic("eventschema: the OpenAPI document already has a schema " + name)
		}
		components[name] = schema
	}
	if o.Webhooks == nil {
		o.Webhooks = map[string]*huma.PathItem{}
	}
	for _, e := range webhook.Events() {
		o.Webhooks[e.Type] = &huma.PathItem{Post: &huma.Operation{
			OperationID: "event-" + strings.ReplaceAll(e.Type, ".", "-"),
			Summary:     e.When, Tags: []string{"Webhooks"},
			// Gatehouse calls the receiver: its signature, not a credential.
			Security:    []map[string][]string{},
			Description: "Signed with X-Webhook-Signature (docs/webhooks.md, Verifying deliveries).",
			RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
				"application/json": {Schema: &huma.Schema{Ref: prefix + s.envelopes[e.Type]}}}},
			Responses: map[string]*huma.Response{"200": {Description: "Any 2xx takes the delivery; 4xx is final; 5xx, a timeout or no answer is retried."}},
		}}
	}
}

// Validate checks a delivery body against the schema of its event_type,
// and that its data is exactly one of the event's payload types: decoded
// into it with no field left over, it encodes to the same JSON.
func Validate(body []byte) error {
	s, _ := standalone()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		return err
	}
	eventType, _ := v["event_type"].(string)
	name, ok := s.envelopes[eventType]
	if !ok {
		return fmt.Errorf("event type %q has no schema", eventType)
	}
	res := &huma.ValidateResult{}
	huma.Validate(s.reg, s.reg.Map()[name], huma.NewPathBuffer(nil, 0), huma.ModeReadFromServer, v, res)
	if len(res.Errors) > 0 {
		return fmt.Errorf("%s does not match its schema: %w", eventType, errors.Join(res.Errors...))
	}
	var env struct{ Data json.RawMessage }
	if err := json.Unmarshal(body, &env); err != nil {
		return err
	}
	for _, e := range webhook.Events() {
		if e.Type != eventType {
			continue
		}
		for _, d := range e.Data {
			if exactly(env.Data, reflect.TypeOf(d)) {
				return nil
			}
		}
	}
	return fmt.Errorf("the data of %s is none of its types exactly: %s", eventType, env.Data)
}

// exactly reports whether data decodes into a t, with no unknown field, and
// encodes back to the same JSON.
func exactly(data []byte, t reflect.Type) bool {
	p := reflect.New(t)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(p.Interface()) != nil {
		return false
	}
	again, err := json.Marshal(p.Interface())
	if err != nil {
		return false
	}
	var a, b any
	return json.Unmarshal(data, &a) == nil && json.Unmarshal(again, &b) == nil && reflect.DeepEqual(a, b)
}

// Markdown is the data reference of docs/webhooks.md: which type each
// event's data has, and the fields of every type, from the same schemas.
func Markdown() string {
	s, _ := standalone()
	var b strings.Builder
	b.WriteString("| Event | `data` |\n|---|---|\n")
	var order []reflect.Type
	seen := map[reflect.Type]bool{}
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeFor[webhook.EventSpec]().PkgPath() || seen[t] {
			return
		}
		seen[t] = true
		order = append(order, t)
		for _, f := range jsonFields(t) {
			visit(f.Type)
		}
	}
	for _, e := range webhook.Events() {
		var links []string
		for _, d := range e.Data {
			t := reflect.TypeOf(d)
			links = append(links, link(t.Name()))
			visit(t)
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", e.Type, strings.Join(links, " or "))
	}
	for _, t := range order {
		schema := s.reg.Map()[t.Name()]
		fmt.Fprintf(&b, "\n#### %s\n\n| Field | Type | |\n|---|---|---|\n", t.Name())
		for _, f := range jsonFields(t) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			p := schema.Properties[name]
			typ := typeOf(p)
			if !slices.Contains(schema.Required, name) {
				typ += " (optional)"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, typ, strings.ReplaceAll(p.Description, "|", "\\|"))
		}
	}
	return b.String()
}

// jsonFields are the fields of struct t as encoding/json sees them, in
// order, embedded structs' in place.
func jsonFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			out = append(out, jsonFields(f.Type)...)
		case f.IsExported() && name != "-":
			out = append(out, f)
		}
	}
	return out
}

// typeOf says what a property holds, in a few words.
func typeOf(p *huma.Schema) string {
	var out string
	switch {
	case p.Ref != "":
		out = link(strings.TrimPrefix(p.Ref, defs))
	case p.Format == "date-time":
		out = "date-time"
	case p.Type == huma.TypeArray:
		out = "array of " + typeOf(p.Items)
	default:
		out = p.Type
	}
	if len(p.Enum) > 0 {
		var vals []string
		for _, v := range p.Enum {
			vals = append(vals, fmt.Sprintf("`%v`", v))
		}
		out += ": " + strings.Join(vals, ", ")
	}
	if p.Nullable {
		out += " or null"
	}
	return out
}

func link(name string) string { return "[" + name + "](#" + strings.ToLower(name) + ")" }
