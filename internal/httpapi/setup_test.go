package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/courier/couriertest"
	"github.com/gatehouse-auth/gatehouse/internal/httpapi"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
)

// appOrigin is the origin of the fixture app, for CORS checks.
const appOrigin = "https://app.example.com"

// lockedBuffer collects the server's log lines; the server writes from many goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// env is one running server with a workspace, an app and their secrets,
// wired the way cmd/gatehouse does it.
type env struct {
	db      *store.DB
	api     *httpapi.Server
	srv     *httptest.Server
	tenants *tenant.Service
	users   *appuser.Service
	keyring *token.Keyring
	courier *couriertest.Recorder
	logs    *lockedBuffer

	ws          tenant.Workspace
	owner       tenant.Member
	app         tenant.App
	appSecret   string
	appSecretID string
	wsSecret    string // acts for owner

	mu      sync.Mutex
	secrets []string // every credential and link handed out, for the log scan
}

// newEnv builds the services on db, bootstraps a workspace with one app and
// starts the API in front of them.
func newEnv(t *testing.T, db *store.DB, dev bool) *env {
	t.Helper()
	ctx := context.Background()
	sealer, hasher := tokentest.Keys(t)
	templates, err := courier.LoadTemplates()
	if err != nil {
		t.Fatalf("LoadTemplates() error = %v", err)
	}
	logs := &lockedBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	const issuer = "http://gatehouse.test"
	e := &env{db: db, keyring: token.NewKeyring(), courier: &couriertest.Recorder{}, logs: logs}
	e.tenants = tenant.New(tenant.Deps{DB: db, Keyring: e.keyring, Sealer: sealer, Hasher: hasher, Issuer: issuer, Log: log})
	e.users = appuser.New(appuser.Deps{DB: db, Courier: e.courier, Templates: templates, Keyring: e.keyring,
		Hasher: hasher, Issuer: issuer, Log: log})
	if err := e.tenants.EnsureSigningKey(ctx); err != nil {
		t.Fatalf("EnsureSigningKey() error = %v", err)
	}
	if err := e.tenants.LoadKeys(ctx); err != nil {
		t.Fatalf("LoadKeys() error = %v", err)
	}

	e.ws, e.owner, err = e.tenants.CreateWorkspace(ctx, tenant.WorkspaceInput{Name: "Acme", OwnerEmail: "owner@acme.test", OwnerName: "Olive"})
	if err != nil {
		t.Fatalf("CreateWorkspace() error = %v", err)
	}
	e.app = e.createApp(t, e.ws.ID, "Demo", appuser.Schema{
		{ID: "first_name", Name: "First name", FieldName: "first_name", FieldType: appuser.FieldString, VisibleRegistration: true},
		{ID: "age", Name: "Age", FieldName: "age", FieldType: appuser.FieldInteger},
	})
	var rec tenant.APISecret
	e.appSecret, rec, err = e.tenants.CreateAppSecret(ctx, e.app.ID, "tests")
	if err != nil {
		t.Fatalf("CreateAppSecret() error = %v", err)
	}
	e.appSecretID = rec.ID
	e.remember(e.appSecret)
	e.wsSecret = e.workspaceSecret(t, e.ws.ID, e.owner.ID)

	// Sign-in is wired too so that every registered route has its service.
	signIn := signin.New(signin.Deps{DB: db, Keyring: e.keyring, Sealer: sealer, Hasher: hasher, Courier: e.courier,
		Templates: templates, Users: e.users, Limiter: ratelimit.NewMemory(nil), Limits: signin.DefaultLimits(),
		Settings: signin.Settings{Issuer: issuer}, Log: log})
	e.api = httpapi.New(httpapi.Deps{DB: db, Tenants: e.tenants, Users: e.users, SignIn: signIn, Keyring: e.keyring,
		Log: log, Dev: dev, BaseURL: "http://gatehouse.test", Version: "test"})
	e.srv = httptest.NewServer(e.api.Handler())
	t.Cleanup(e.srv.Close)
	return e
}

// createApp creates an app through the service, with appOrigin as its origin.
func (e *env) createApp(t *testing.T, workspaceID, name string, schema appuser.Schema) tenant.App {
	t.Helper()
	origin := appOrigin
	a, err := e.tenants.CreateApp(context.Background(), workspaceID, tenant.AppSettings{Name: &name, Origin: &origin, MetaSchema: &schema})
	if err != nil {
		t.Fatalf("CreateApp(%q) error = %v", name, err)
	}
	return a
}

// appSecretFor issues an app API secret for appID.
func (e *env) appSecretFor(t *testing.T, appID string) string {
	t.Helper()
	tok, _, err := e.tenants.CreateAppSecret(context.Background(), appID, "tests")
	if err != nil {
		t.Fatalf("CreateAppSecret(%s) error = %v", appID, err)
	}
	e.remember(tok)
	return tok
}

// workspaceSecret issues a workspace API secret acting for memberID.
func (e *env) workspaceSecret(t *testing.T, workspaceID, memberID string) string {
	t.Helper()
	tok, _, err := e.tenants.CreateWorkspaceSecret(context.Background(), workspaceID, memberID, "tests")
	if err != nil {
		t.Fatalf("CreateWorkspaceSecret(%s) error = %v", workspaceID, err)
	}
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
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatalf("NewRequest(%s %s) error = %v", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := e.srv.Client().Do(req)
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

// jwtPayload decodes a JWT's claims without verifying it.
func jwtPayload(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("jwtPayload(%q): %d parts; want 3", jwt, len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("jwtPayload: decode payload: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("jwtPayload: unmarshal payload: %v", err)
	}
	return m
}
