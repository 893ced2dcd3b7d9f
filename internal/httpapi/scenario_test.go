package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
	"github.com/gatehouse-auth/gatehouse/internal/webhook/eventschema"
)

// scenario is one request and what its answer must be, in the style of
// PocketBase's ApiScenario (ExpectedEvents included).
type scenario struct {
	name       string
	method     string
	path       string
	headers    map[string]string
	body       any // nil: no body; string or []byte: raw; else JSON
	wantStatus int
	wantCode   string         // the error_code the body must carry, when set
	wantBody   map[string]any // top-level fields the body must have, compared as JSON
	notJSON    bool           // a 2xx body that is not JSON is fine (metrics, docs)
	check      func(t *testing.T, r response)
	// events are the webhook event types the request must emit, each as
	// often as listed, in any order, and nothing else. Checked when the env
	// records events (recordEvents); nil then means none.
	events []string
}

// run sends s, checks it and the rules every answer follows, and returns the answer.
func (s scenario) run(t *testing.T, e *env) response {
	t.Helper()
	if e.events != nil {
		e.events.take(t) // what earlier requests emitted is not this one's
	}
	r := e.do(t, s.method, s.path, s.headers, s.body)
	if r.status != s.wantStatus {
		t.Fatalf("%s %s = %d %s; want %d", s.method, s.path, r.status, r.raw, s.wantStatus)
	}
	if e.events != nil {
		got, want := e.events.take(t), slices.Clone(s.events)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s %s emitted %v; want %v", s.method, s.path, got, want)
		}
	}
	checkInvariants(t, s.method, s.notJSON, r)
	if s.wantCode != "" {
		if got := r.str("error_code"); got != s.wantCode {
			t.Errorf("%s %s error_code = %q; want %q (body %s)", s.method, s.path, got, s.wantCode, r.raw)
		}
	}
	for k, want := range s.wantBody {
		got, ok := r.body[k]
		if !ok {
			t.Errorf("%s %s body has no %q (body %s)", s.method, s.path, k, r.raw)
			continue
		}
		if !jsonEqual(got, want) {
			t.Errorf("%s %s body[%q] = %v; want %v", s.method, s.path, k, got, want)
		}
	}
	if s.check != nil {
		s.check(t, r)
	}
	return r
}

// runScenarios runs each scenario as a subtest, in order: later ones may
// depend on what earlier ones changed.
func runScenarios(t *testing.T, e *env, ss []scenario) {
	t.Helper()
	for _, s := range ss {
		t.Run(s.name, func(t *testing.T) { s.run(t, e) })
	}
}

// checkInvariants holds for every answer: errors are JSON with a string
// error (only that key on 401 and 403) and leak nothing; 2xx answers to
// anything but DELETE have a JSON body; DELETE answers {"message":"ok"}
// (or, where documented, 204 with no body or the cancelled challenge).
func checkInvariants(t *testing.T, method string, notJSON bool, r response) {
	t.Helper()
	switch {
	case r.status >= 400:
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("error %d Content-Type = %q; want application/json", r.status, ct)
		}
		if r.body == nil {
			t.Fatalf("error %d body = %q; want a JSON object", r.status, r.raw)
		}
		// The one other shape: {errors} answers a provider PATCH that names
		// no provider (interface §4.6, §7).
		if msg, ok := r.body["errors"].(string); ok && msg != "" && len(r.body) == 1 && r.status == http.StatusBadRequest {
			break
		}
		if msg, ok := r.body["error"].(string); !ok || msg == "" {
			t.Errorf("error %d body = %s; want a non-empty string error", r.status, r.raw)
		}
		// The documented exceptions (errors.go): 403 verification_required
		// (the server SDKs read its code and details), 401
		// m2m_session_required (interface §7) and invalid_client (RFC 6749).
		if (r.status == http.StatusUnauthorized || r.status == http.StatusForbidden) && len(r.body) != 1 &&
			!slices.Contains([]string{"verification_required", "m2m_session_required", "invalid_client"}, r.str("error_code")) {
			t.Errorf("error %d body = %s; want only the error key", r.status, r.raw)
		}
		// These betray SQL, panics or stacks.
		lower := strings.ToLower(string(r.raw))
		for _, m := range []string{"sql", "goroutine", "panic", ".go:", "runtime/", "pq:"} {
			if strings.Contains(lower, m) {
				t.Errorf("error %d body = %s; contains %q", r.status, r.raw, m)
			}
		}
		if strings.Contains(string(r.raw), "SELECT") {
			t.Errorf("error %d body = %s; contains SQL", r.status, r.raw)
		}
	case r.status >= 200 && r.status < 300:
		if method != http.MethodOptions && !notJSON && r.status != http.StatusNoContent {
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("%s %d Content-Type = %q; want application/json", method, r.status, ct)
			}
		}
		switch {
		case method == http.MethodDelete && r.status == http.StatusNoContent:
			if len(r.raw) != 0 {
				t.Errorf("DELETE 204 body = %q; want none", r.raw)
			}
		case method == http.MethodDelete && r.body["verified"] == true:
			// DELETE /m2m/revoke answers {message, verified} (interface §4.13).
			if !jsonEqual(r.body, map[string]any{"message": "ok", "verified": true}) {
				t.Errorf("DELETE %d body = %s; want {\"message\":\"ok\",\"verified\":true}", r.status, r.raw)
			}
		case method == http.MethodDelete && r.obj("challenge") != nil:
			// DELETE /challenges/{token} answers the cancelled challenge
			// (client-compat C12: the SDK ignores the body).
		case method == http.MethodDelete:
			if !jsonEqual(r.body, map[string]any{"message": "ok"}) {
				t.Errorf("DELETE %d body = %s; want {\"message\":\"ok\"}", r.status, r.raw)
			}
		case method == http.MethodOptions, notJSON:
		case !json.Valid(r.raw) || len(strings.TrimSpace(string(r.raw))) == 0:
			t.Errorf("%s %d body = %q; want JSON", method, r.status, r.raw)
		}
	}
}

// jsonEqual compares got (decoded JSON) with want after a JSON round trip of want.
func jsonEqual(got, want any) bool {
	b, err := json.Marshal(want)
	if err != nil {
		return false
	}
	var w any
	if err := json.Unmarshal(b, &w); err != nil {
		return false
	}
	if m, ok := got.(map[string]any); ok && m == nil {
		got = nil
	}
	return reflect.DeepEqual(got, w)
}

// eventLog sees the events of one app through a webhook endpoint subscribed
// to every event type: each event is recorded as a delivery to it in the
// transaction that emits it, so once a response is in, its events are too.
type eventLog struct {
	sys        *servertest.System
	appID      string
	endpointID string
	mu         sync.Mutex
	seen       map[string]bool // delivery ids already taken
}

// recordEvents makes every later scenario check the events it emits on the
// env's app. The endpoint points at a local receiver that answers 204.
func (e *env) recordEvents(t *testing.T) {
	t.Helper()
	url := newReceiver(t).URL + "/events"
	ep, err := e.Webhooks.Create(context.Background(), servertest.Operator, e.app.ID, webhook.Input{URL: &url})
	if err != nil {
		t.Fatalf("create the recording endpoint: %v", err)
	}
	e.events = &eventLog{sys: e.System, appID: e.app.ID, endpointID: ep.ID, seen: map[string]bool{}}
	e.events.take(t)
}

// await waits (real time, at most 15 s) until an event of type typ that no
// take has returned is recorded, then takes everything recorded: for events
// that background work emits at a moment of its own (a challenge's expiry
// once the clock has passed it), which must not be taken for the next
// request's.
func (l *eventLog) await(t *testing.T, typ string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		page, err := l.sys.Webhooks.Deliveries(context.Background(), servertest.Operator, l.appID, l.endpointID, 1, 100)
		if err != nil {
			t.Fatalf("read the recorded events: %v", err)
		}
		l.mu.Lock()
		found := slices.ContainsFunc(page.Deliveries, func(d webhook.Delivery) bool { return !l.seen[d.ID] && d.EventType == typ })
		l.mu.Unlock()
		if found {
			l.take(t)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event within 15 s", typ)
		}
		time.Sleep(20 * time.Millisecond) // real time: the background worker runs in real time
	}
}

// take returns the types of the events emitted since the last take, sorted,
// and checks each body against the published schema (eventschema).
// It first waits for the send queue to settle: the events its workers emit
// (delivery_failed) belong to the request that sent the message.
func (l *eventLog) take(t *testing.T) []string {
	t.Helper()
	l.sys.Mail.Settle()
	page, err := l.sys.Webhooks.Deliveries(context.Background(), servertest.Operator, l.appID, l.endpointID, 1, 100)
	if err != nil {
		t.Fatalf("read the recorded events: %v", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	got := []string{}
	for _, d := range page.Deliveries {
		if !l.seen[d.ID] {
			l.seen[d.ID] = true
			got = append(got, d.EventType)
			work, err := l.sys.DB.GetDeliveryWork(context.Background(), d.ID)
			if err != nil {
				t.Fatalf("read the body of delivery %s: %v", d.ID, err)
			}
			if err := eventschema.Validate(work.Body); err != nil {
				t.Errorf("an emitted event does not match the published schema: %v", err)
			}
		}
	}
	slices.Sort(got)
	return got
}
