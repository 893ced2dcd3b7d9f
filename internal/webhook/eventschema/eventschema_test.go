package eventschema_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/webhook"
	"github.com/gatehouse-auth/gatehouse/internal/webhook/eventschema"
)

// TestEveryEventTypeHasSchema: the document is a draft 2020-12 schema with
// one envelope per event type, each pinning its event_type.
func TestEveryEventTypeHasSchema(t *testing.T) {
	var doc struct {
		Schema string `json:"$schema"`
		OneOf  []struct {
			Ref string `json:"$ref"`
		} `json:"oneOf"`
		Defs map[string]struct {
			Properties map[string]struct {
				Const string `json:"const"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(eventschema.Document(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %q", doc.Schema)
	}
	pinned := map[string]bool{}
	for _, one := range doc.OneOf {
		def, ok := doc.Defs[strings.TrimPrefix(one.Ref, "#/$defs/")]
		if !ok {
			t.Errorf("oneOf names %s, which is not defined", one.Ref)
		}
		pinned[def.Properties["event_type"].Const] = true
	}
	for _, typ := range webhook.EventTypes() {
		if !pinned[typ] {
			t.Errorf("event type %s has no schema", typ)
		}
	}
	if len(pinned) != len(webhook.EventTypes()) {
		t.Errorf("the schema has %d event types; want %d", len(pinned), len(webhook.EventTypes()))
	}
}

// TestValidate: what the emitter would send passes; a body that breaks the
// schema or carries a field no payload type declares does not.
func TestValidate(t *testing.T) {
	const ok = `{"id":"e1","created_at":"2026-01-02T03:04:05.123456Z","event_type":"webhook.test","app_id":"a1",` +
		`"data":{"message":"m","endpoint_id":"w1"},"api_version":"v1"}`
	cap := `{"id":"e1","created_at":"2026-01-02T03:04:05Z","event_type":"verification.sms.delivery_failed","app_id":"a1",` +
		`"data":{"verification_id":null,"intent":null,"channel":"sms","error":"sms_daily_cap_reached","meta_data":{"delivery_method":"sms"},` +
		`"cap":{"kind":"daily_cap","limit":3,"window_start":"2026-01-02T00:00:00Z","window_end":"2026-01-03T00:00:00Z"}},"api_version":"v1"}`
	if err := eventschema.Validate([]byte(ok)); err != nil {
		t.Errorf("a webhook.test body: %v", err)
	}
	if err := eventschema.Validate([]byte(cap)); err != nil {
		t.Errorf("an SMS cap alert: %v", err)
	}
	for name, body := range map[string]string{
		"unknown type":      strings.Replace(ok, "webhook.test", "webhook.nope", 1),
		"missing field":     strings.Replace(ok, `"endpoint_id":"w1"`, `"x":"w1"`, 1),
		"wrong type":        strings.Replace(ok, `"endpoint_id":"w1"`, `"endpoint_id":1`, 1),
		"undeclared field":  strings.Replace(ok, `"endpoint_id":"w1"`, `"endpoint_id":"w1","secret":"s"`, 1),
		"other version":     strings.Replace(ok, `"v1"`, `"v2"`, 1),
		"bad enum":          strings.Replace(cap, "daily_cap\"", "hourly_cap\"", 1),
		"null not allowed":  strings.Replace(cap, `"channel":"sms"`, `"channel":null`, 1),
		"other type's data": strings.Replace(cap, "verification.sms.delivery_failed", "verification.email.delivery_failed", 1),
	} {
		if err := eventschema.Validate([]byte(body)); err == nil {
			t.Errorf("%s: Validate(%s) = nil; want an error", name, body)
		}
	}
}
