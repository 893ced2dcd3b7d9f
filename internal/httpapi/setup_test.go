package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// appOrigin is the origin of the fixture app, for CORS checks.
const appOrigin = "https://app.example.com"

// env is the assembled system serving HTTP (servertest), with a workspace,
// an app and their secrets.
type env struct {
	*servertest.System
	client *http.Client

	ws          tenant.Workspace
	owner       tenant.Member
	app         tenant.App
	appSecret   string
	appSecretID string
	wsSecret    string // acts for owner

	mu      sync.Mutex
	secrets []string // every credential and link handed out, for the log scan

	events *eventLog // when set, scenarios check the events they emit
}

// newEnv serves the system on a fresh database of kind (in development mode
// when dev) and bootstraps a workspace with one app.
func newEnv(t *testing.T, kind string, dev bool) *env {
	t.Helper()
	return envOf(t, newSystem(t, kind, servertest.Options{Serve: true,
		Settings: map[string]string{"GATEHOUSE_DEV": strconv.FormatBool(dev)}}), "Acme")
}

// envOf bootstraps a workspace (named workspace) with one app on a served system.
func envOf(t *testing.T, sys *servertest.System, workspace string) *env {
	t.Helper()
	e := &env{System: sys, client: &http.Client{Timeout: 30 * time.Second}}
	e.ws, e.owner = sys.Workspace(t, workspace)
	e.app = e.createApp(t, e.ws.ID, "Demo", appuser.Schema{
		// Users see first_name when signing up and in their profile; age is
		// the app's alone.
		{ID: "first_name", Name: "First name", FieldName: "first_name", FieldType: appuser.FieldString, VisibleRegistration: true, VisibleProfile: true},
		{ID: "age", Name: "Age", FieldName: "age", FieldType: appuser.FieldInteger},
	})
	var rec tenant.APISecret
	var err error
	e.appSecret, rec, err = sys.Tenants.CreateAppSecret(context.Background(), servertest.Operator, e.app.ID, "tests")
	if err != nil {
		t.Fatalf("CreateAppSecret() error = %v", err)
	}
	e.appSecretID = rec.ID
	e.remember(e.appSecret)
	e.wsSecret = e.workspaceSecret(t, e.ws.ID, e.owner.ID)
	return e
}

// createApp creates an app with appOrigin as its origin.
func (e *env) createApp(t *testing.T, workspaceID, name string, schema appuser.Schema) tenant.App {
	t.Helper()
	return e.App(t, workspaceID, name, func(s *tenant.AppSettings) {
		s.Origin = ptr(appOrigin)
		if schema != nil {
			s.MetaSchema = &schema
		}
	})
}

// appSecretFor issues an app API secret for appID.
func (e *env) appSecretFor(t *testing.T, appID string) string {
	t.Helper()
	tok := e.AppSecret(t, appID)
	e.remember(tok)
	return tok
}

// workspaceSecret issues a workspace API secret acting for member.
func (e *env) workspaceSecret(t *testing.T, workspaceID, member string) string {
	t.Helper()
	tok := e.WorkspaceSecret(t, workspaceID, member)
	e.remember(tok)
	return tok
}

// remember notes a secret that must never appear in the logs.
func (e *env) remember(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.secrets = append(e.secrets, s)
}

func (e *env) remembered() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.secrets...)
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any // nil unless the body is a JSON object
}

// str reads a string field of the body ("" when absent or not a string).
func (r response) str(key string) string {
	s, _ := r.body[key].(string)
	return s
}

// obj reads an object field of the body.
func (r response) obj(key string) map[string]any {
	m, _ := r.body[key].(map[string]any)
	return m
}

// bearer is an Authorization header.
func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// do sends one request. body may be nil (no body), a string or []byte (sent
// as is) or any other value (sent as JSON). A body gets Content-Type
// application/json unless headers set one.
func (e *env) do(t *testing.T, method, path string, headers map[string]string, body any) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("marshal request body: %v", err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		t.Fatalf("NewRequest(%s %s) error = %v", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k) // "" leaves the header out (a body without Content-Type)
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s error = %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	r := response{status: res.StatusCode, header: res.Header, raw: raw}
	_ = json.Unmarshal(raw, &r.body)
	return r
}
