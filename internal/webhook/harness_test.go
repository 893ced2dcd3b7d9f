package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Polling bounds for asynchronous outcomes. The served system's queue polls
// every 500 ms on SQLite (and for retries on PostgreSQL), so a delivery may
// take that long to start.
const (
	pollEvery   = 20 * time.Millisecond
	pollTimeout = 15 * time.Second
)

// envOptions say how the test system makes deliveries.
type envOptions struct {
	// serve serves the system, so that its own queue and delivery worker make
	// the deliveries, in real time unless fakeClock. Without it nothing is
	// worked: the test drives a Worker of its own (env.newWorker) on the
	// system's fake clock.
	serve bool
	// fakeClock keeps a served system on its fake clock, for tests that move
	// time (the rotation overlap). Such a test must not need a retry: River
	// schedules retries in real time, from the worker's (fake) clock.
	fakeClock bool
	// retryBase is the delivery backoff base (webhooks.retry_base); zero means 20 ms.
	retryBase time.Duration
	// courier wraps the recording courier.
	courier func(courier.Provider) courier.Provider
	// settings are further GATEHOUSE_* settings.
	settings map[string]string
}

func (o envOptions) system() servertest.Options {
	base := o.retryBase
	if base == 0 {
		base = 20 * time.Millisecond
	}
	settings := map[string]string{"GATEHOUSE_WEBHOOKS_RETRY_BASE": base.String()}
	for k, v := range o.settings {
		settings[k] = v
	}
	return servertest.Options{Serve: o.serve, RealClock: o.serve && !o.fakeClock, Courier: o.courier, Settings: settings}
}

// env is an assembled system (servertest) with the workspace "Acme" and its
// app "Acme Shop". Endpoints of an app are managed with that app's own API
// secret, as an integration would.
type env struct {
	*servertest.System
	ws      tenant.Workspace
	owner   tenant.Member
	app     tenant.App
	apps    map[string]tenant.App
	callers map[string]access.Principal
}

// forEachEnv runs fn with an env on every engine.
func forEachEnv(t *testing.T, o envOptions, fn func(t *testing.T, e *env)) {
	t.Helper()
	servertest.ForEach(t, o.system(), func(t *testing.T, sys *servertest.System) { fn(t, newEnv(t, sys)) })
}

// newEnvOn builds an env on one engine.
func newEnvOn(tb testing.TB, kind string, o envOptions) *env {
	tb.Helper()
	return newEnv(tb, servertest.New(tb, kind, o.system()))
}

// newEnv creates the workspace "Acme" and the app "Acme Shop" in sys.
func newEnv(tb testing.TB, sys *servertest.System) *env {
	tb.Helper()
	e := &env{System: sys, apps: map[string]tenant.App{}, callers: map[string]access.Principal{}}
	e.ws, e.owner = sys.Workspace(tb, "Acme")
	e.app = e.newApp(tb, "Acme Shop")
	return e
}

// newApp creates another app in the env's workspace, with an API secret.
func (e *env) newApp(tb testing.TB, name string) tenant.App {
	tb.Helper()
	a := e.App(tb, e.ws.ID, name, nil)
	e.apps[a.ID] = a
	e.callers[a.ID] = e.Principal(tb, e.AppSecret(tb, a.ID))
	return a
}

// setSchema gives the env's app a user-metadata schema.
func (e *env) setSchema(tb testing.TB, schema appuser.Schema) {
	tb.Helper()
	a, err := e.Tenants.UpdateApp(context.Background(), servertest.Operator, e.ws.ID, e.app.ID, tenant.AppSettings{MetaSchema: &schema})
	if err != nil {
		tb.Fatalf("UpdateApp(schema): %v", err)
	}
	e.app, e.apps[a.ID] = a, a
}

// caller is the principal of the app's API secret.
func (e *env) caller(tb testing.TB, appID string) access.Principal {
	tb.Helper()
	p, ok := e.callers[appID]
	if !ok {
		tb.Fatalf("no API secret for app %s", appID)
	}
	return p
}

// endpoint creates an endpoint of app at url; mod adjusts the input first.
func (e *env) endpoint(tb testing.TB, appID, url string, mod func(*webhook.Input)) webhook.Endpoint {
	tb.Helper()
	in := webhook.Input{URL: &url}
	if mod != nil {
		mod(&in)
	}
	ep, err := e.Webhooks.Create(context.Background(), e.caller(tb, appID), appID, in)
	if err != nil {
		tb.Fatalf("Create(%q): %v", url, err)
	}
	return ep
}

// test sends a webhook.test event to one endpoint (its own transaction).
func (e *env) test(tb testing.TB, appID, endpointID string) webhook.Delivery {
	tb.Helper()
	d, err := e.Webhooks.Test(context.Background(), e.caller(tb, appID), appID, endpointID)
	if err != nil {
		tb.Fatalf("Test(%s): %v", endpointID, err)
	}
	return d
}

// createUser creates a user of app as the operator: user.created.
func (e *env) createUser(tb testing.TB, appID string, in appuser.CreateInput) appuser.User {
	tb.Helper()
	u, _, err := e.Users.Create(context.Background(), servertest.Operator, e.apps[appID], in)
	if err != nil {
		tb.Fatalf("Users.Create: %v", err)
	}
	return u
}

// touchUser sets a user active again as the operator: user.updated.
func (e *env) touchUser(tb testing.TB, appID, userID string) appuser.User {
	tb.Helper()
	u, err := e.Users.SetStatus(context.Background(), servertest.Operator, e.apps[appID], userID, appuser.StatusActive)
	if err != nil {
		tb.Fatalf("Users.SetStatus: %v", err)
	}
	return u
}

// deliveries returns an endpoint's deliveries (newest first) with their attempts.
func (e *env) deliveries(tb testing.TB, appID, endpointID string) webhook.DeliveryPage {
	tb.Helper()
	page, err := e.Webhooks.Deliveries(context.Background(), e.caller(tb, appID), appID, endpointID, 1, 100)
	if err != nil {
		tb.Fatalf("Deliveries: %v", err)
	}
	return page
}

// newWorker builds the one component a test may build itself: a delivery
// Worker on the system's database, master key and fake clock, for tests that
// drive Work directly on a system that is not served (so nothing else works
// the jobs). A zero policy allows the loopback receivers.
func (e *env) newWorker(tb testing.TB, retryBase time.Duration, policy *webhook.Policy) *webhook.Worker {
	tb.Helper()
	if e.Clock == nil {
		tb.Fatalf("newWorker needs a system on the fake clock")
	}
	sealer, _, err := token.FromMasterKey(e.MasterKey)
	if err != nil {
		tb.Fatalf("token.FromMasterKey: %v", err)
	}
	p := webhook.Policy{AllowPrivate: true}
	if policy != nil {
		p = *policy
	}
	return webhook.NewWorker(webhook.WorkerDeps{DB: e.DB, Sealer: sealer, Policy: p, RetryBase: retryBase, Now: e.Clock.Now})
}

// settled reports whether d will not be attempted again.
func settled(d store.WebhookDelivery) bool {
	return d.Status == store.DeliveryDelivered || (d.Status == store.DeliveryFailed && d.NextAttemptAt == nil)
}

// waitSettled polls until the endpoint has n deliveries, all settled, and returns them.
func (e *env) waitSettled(tb testing.TB, appID, endpointID string, n int) webhook.DeliveryPage {
	tb.Helper()
	var page webhook.DeliveryPage
	eventually(tb, fmt.Sprintf("%d settled deliveries", n), func() bool {
		page = e.deliveries(tb, appID, endpointID)
		if len(page.Deliveries) != n {
			return false
		}
		for _, d := range page.Deliveries {
			if !settled(d) {
				return false
			}
		}
		return true
	})
	return page
}

// eventually polls cond every pollEvery until it holds, failing after pollTimeout.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	eventuallyWithin(tb, pollTimeout, what, cond)
}

func eventuallyWithin(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		<-tick.C
	}
}

// request is one request a receiver got.
type request struct {
	header http.Header
	body   []byte
	at     time.Time
}

// receiver is an httptest server that records every request and answers
// with handle (n is the 1-based request number).
type receiver struct {
	srv    *httptest.Server
	handle func(n int, w http.ResponseWriter, r *http.Request)
	mu     sync.Mutex
	reqs   []request
}

// newReceiver starts a receiver; a nil handle answers 204.
func newReceiver(tb testing.TB, handle func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	tb.Helper()
	if handle == nil {
		handle = func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }
	}
	rc := &receiver{handle: handle}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, request{header: r.Header.Clone(), body: body, at: time.Now()})
		n := len(rc.reqs)
		rc.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		rc.handle(n, w, r)
	}))
	tb.Cleanup(rc.srv.Close)
	return rc
}

// status answers every request with code and body.
func status(code int, body string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func (rc *receiver) url() string { return rc.srv.URL + "/hooks" }

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.reqs...)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.reqs)
}

// v1s returns the v1= signatures of a signature header.
func v1s(header string) []string {
	var out []string
	for _, part := range strings.Split(header, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "v1="); ok {
			out = append(out, v)
		}
	}
	return out
}

// tOf returns the t= value of a signature header.
func tOf(header string) string {
	for _, part := range strings.Split(header, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
			return v
		}
	}
	return ""
}

// asInvalid reports whether err is an *errs.Invalid and returns it.
func asInvalid(err error) (*errs.Invalid, bool) {
	var inv *errs.Invalid
	ok := errors.As(err, &inv)
	return inv, ok
}

func ptr[T any](v T) *T { return &v }
