package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/server"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// TestServeAnswers: the assembled system serves its API on both engines,
// reports ready, and its fixtures go through the real services.
func TestServeAnswers(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ws, _ := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		if app.WorkspaceID != ws.ID {
			t.Fatalf("App(...).WorkspaceID = %q; want %q", app.WorkspaceID, ws.ID)
		}
		for _, path := range []string{"/readyz", "/v1/apps/" + app.ID} {
			res, err := http.Get(sys.URL + path)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("GET %s = %d; want 200", path, res.StatusCode)
			}
		}
		st, err := sys.MigrationStatus(context.Background())
		if err != nil {
			t.Fatalf("MigrationStatus: %v", err)
		}
		sets := map[string]int{}
		for _, m := range st {
			if !m.Applied {
				t.Errorf("migration %s %s is not applied", m.Set, m.Name)
			}
			sets[m.Set]++
		}
		if sets["gatehouse"] == 0 || sets["river"] == 0 {
			t.Errorf("MigrationStatus lists %v; want both sets", sets)
		}
	})
}

// TestServeReturnsWhenItCannotServe: when the listener fails, Serve stops
// its own background loops and workers and returns the error, rather than
// waiting for a context that nobody will cancel.
func TestServeReturnsWhenItCannotServe(t *testing.T) {
	sys := servertest.New(t, store.SQLite, servertest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_ = ln.Close() // Accept fails at once
	done := make(chan error, 1)
	go func() { done <- sys.Serve(context.Background(), server.Listeners{API: ln}) }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("Serve on a closed listener = nil; want its error")
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Serve on a closed listener did not return")
	}
}

// TestMetricsOnItsOwnListener: with metrics.addr set, /metrics is served on
// that listener alone (nothing else is), and the API listener no longer
// serves it nor lists it; the counts still cover the API's requests.
// Without the setting, /metrics stays with the API only in development
// mode or behind metrics.token; a production server serves it nowhere.
func TestMetricsOnItsOwnListener(t *testing.T) {
	getAuth := func(t *testing.T, url, authorization string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	get := func(t *testing.T, url string) (int, string) { t.Helper(); return getAuth(t, url, "") }

	sys := servertest.New(t, store.SQLite, servertest.Options{Serve: true,
		Settings: map[string]string{"GATEHOUSE_METRICS_ADDR": "127.0.0.1:0"}})
	if sys.MetricsURL == "" || sys.MetricsURL == sys.URL {
		t.Fatalf("MetricsURL = %q (API at %q); want a listener of its own", sys.MetricsURL, sys.URL)
	}
	if code, body := get(t, sys.URL+"/metrics"); code != http.StatusNotFound || strings.Contains(body, "gatehouse_http") {
		t.Errorf("GET /metrics on the API listener = %d %.80s; want 404 without metrics", code, body)
	}
	if _, ok := sys.API().OpenAPI().Paths["/metrics"]; ok {
		t.Errorf("the OpenAPI document lists /metrics although it is served elsewhere")
	}
	if code, _ := get(t, sys.URL+"/readyz"); code != http.StatusOK {
		t.Errorf("GET /readyz on the API listener = %d; want 200", code)
	}
	code, body := get(t, sys.MetricsURL+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, `gatehouse_http_requests_total{method="GET",route="/readyz",status="200"}`) {
		t.Errorf("GET /metrics on the metrics listener = %d %.200s; want 200 counting the API's /readyz", code, body)
	}
	for _, path := range []string{"/readyz", "/healthz", "/.well-known/jwks.json", "/v1/openapi.json"} {
		if code, _ := get(t, sys.MetricsURL+path); code != http.StatusNotFound {
			t.Errorf("GET %s on the metrics listener = %d; want 404", path, code)
		}
	}

	plain := servertest.New(t, store.SQLite, servertest.Options{Serve: true})
	if plain.MetricsURL != "" {
		t.Errorf("MetricsURL without metrics.addr = %q; want none", plain.MetricsURL)
	}
	if code, body := get(t, plain.URL+"/metrics"); code != http.StatusNotFound || strings.Contains(body, "gatehouse_http") {
		t.Errorf("GET /metrics without metrics.addr outside --dev = %d %.80s; want 404 without metrics", code, body)
	}
	if _, ok := plain.API().OpenAPI().Paths["/metrics"]; ok {
		t.Errorf("the OpenAPI document of a production server without metrics.addr lists /metrics")
	}

	dev := servertest.New(t, store.SQLite, servertest.Options{Serve: true, Settings: map[string]string{"GATEHOUSE_DEV": "true"}})
	if code, body := get(t, dev.URL+"/metrics"); code != http.StatusOK || !strings.Contains(body, "gatehouse_http_requests_total") {
		t.Errorf("GET /metrics without metrics.addr in --dev = %d %.80s; want 200 with metrics", code, body)
	}

	// metrics.token: the API listener serves /metrics to its bearer alone,
	// and so does a metrics listener.
	const tok = "m3trics-t0ken-0123456789abcdefghij"
	for _, settings := range []map[string]string{
		{"GATEHOUSE_METRICS_TOKEN": tok},
		{"GATEHOUSE_METRICS_TOKEN": tok, "GATEHOUSE_METRICS_ADDR": "127.0.0.1:0"},
	} {
		sys := servertest.New(t, store.SQLite, servertest.Options{Serve: true, Settings: settings})
		url := sys.URL + "/metrics"
		if sys.MetricsURL != "" {
			url = sys.MetricsURL + "/metrics"
			if code, _ := getAuth(t, sys.URL+"/metrics", "Bearer "+tok); code != http.StatusNotFound {
				t.Errorf("GET /metrics on the API listener with metrics.addr and the token = %d; want 404", code)
			}
		}
		for _, auth := range []string{"", "Bearer " + tok + "x", "Bearer " + tok[:len(tok)-1], "Basic " + tok, tok} {
			if code, body := getAuth(t, url, auth); code != http.StatusUnauthorized || strings.Contains(body, "gatehouse_http") {
				t.Errorf("GET %s with Authorization %q = %d %.80s; want 401 without metrics", url, auth, code, body)
			}
		}
		if code, body := getAuth(t, url, "Bearer "+tok); code != http.StatusOK || !strings.Contains(body, "gatehouse_http_requests_total") {
			t.Errorf("GET %s with the token = %d %.80s; want 200 with metrics", url, code, body)
		}
	}
}

// TestListenRefusesATakenMetricsAddress: a metrics address that cannot be
// bound stops start-up with an error naming metrics.addr, and the API
// listener bound before it is closed again.
func TestListenRefusesATakenMetricsAddress(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	apiAddr := free.Addr().String()
	_ = free.Close()
	cfg, err := config.Load(nil, "", []string{"GATEHOUSE_HTTP_ADDR=" + apiAddr, "GATEHOUSE_METRICS_ADDR=" + taken.Addr().String()})
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	_, _, err = server.Listen(cfg)
	var bad *config.SettingError
	if !errors.As(err, &bad) || bad.Key != "metrics.addr" {
		t.Fatalf("Listen(taken metrics address) = %v; want a SettingError for metrics.addr", err)
	}
	ln, err := net.Listen("tcp", apiAddr)
	if err != nil {
		t.Errorf("the API address is still bound after Listen failed: %v", err)
	} else {
		_ = ln.Close()
	}
}

// TestDevBootstrapAfterACutOffFirstStart: a first start in development mode
// killed after it made the workspace (and then the app) but before it
// recorded them starts again, reusing what it made, instead of failing on
// the taken slug (found by e2e/chaos on PostgreSQL).
func TestDevBootstrapAfterACutOffFirstStart(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		op := servertest.Operator
		nw, err := sys.Tenants.CreateWorkspace(ctx, op, tenant.WorkspaceInput{Name: "Default", OwnerEmail: "dev@localhost.localdomain", OwnerName: "Developer"})
		if err != nil {
			t.Fatal(err)
		}
		first, err := sys.DevBootstrap(ctx)
		if err != nil || first.WorkspaceID != nw.Workspace.ID || first.AppID == "" || first.APISecret == "" {
			t.Fatalf("DevBootstrap after a cut-off workspace = %+v, %v; want workspace %s reused, an app and a secret",
				first, err, nw.Workspace.ID)
		}
		// Cut off after the app too: the record is gone, the app stays.
		if err := sys.DB.PutState(ctx, "dev_bootstrap", "{}", time.Now()); err != nil {
			t.Fatal(err)
		}
		again, err := sys.DevBootstrap(ctx)
		if err != nil || again.WorkspaceID != first.WorkspaceID || again.AppID != first.AppID {
			t.Fatalf("DevBootstrap again = %+v, %v; want the same workspace and app as %+v", again, err, first)
		}
		apps, err := sys.Tenants.ListApps(ctx, op, first.WorkspaceID)
		if err != nil || len(apps) != 1 {
			t.Errorf("apps = %d, %v; want the one Demo app", len(apps), err)
		}
	})
}

// TestDevBootstrapEmailAuthType: dev_email_auth_type sets how the Demo app
// signs in by e-mail when it is made, and again on every later start that
// names a value; a start without one leaves the app as it is.
func TestDevBootstrapEmailAuthType(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Settings: map[string]string{"GATEHOUSE_DEV_EMAIL_AUTH_TYPE": "OTP"}}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		check := func(what string, s *servertest.System, want string) {
			t.Helper()
			b, err := s.DevBootstrap(ctx)
			if err != nil {
				t.Fatalf("%s: DevBootstrap: %v", what, err)
			}
			app, err := s.Tenants.GetApp(ctx, b.AppID)
			if err != nil || app.EmailAuthType != want || b.EmailAuthType != want {
				t.Errorf("%s: app email_auth_type %q (bootstrap says %q), %v; want %q", what, app.EmailAuthType, b.EmailAuthType, err, want)
			}
			raw, err := os.ReadFile(server.BootstrapPath(s.Config.DataDir))
			if err != nil || !strings.Contains(string(raw), `"email_auth_type": "`+want+`"`) {
				t.Errorf("%s: bootstrap.json = %s, %v; want email_auth_type %q", what, raw, err, want)
			}
		}
		check("first start with otp", sys, "otp")
		check("a start without the setting", servertest.New(t, sys.DB.Kind(), servertest.Options{Peer: sys}), "otp")
		check("a start with magic", servertest.New(t, sys.DB.Kind(), servertest.Options{Peer: sys,
			Settings: map[string]string{"GATEHOUSE_DEV_EMAIL_AUTH_TYPE": "magic"}}), "magic")
	})
	if _, err := config.Load(nil, "", []string{"GATEHOUSE_DEV_EMAIL_AUTH_TYPE=sms"}); err == nil || !strings.Contains(err.Error(), "GATEHOUSE_DEV_EMAIL_AUTH_TYPE") {
		t.Errorf("Load(dev_email_auth_type sms) error = %v; want one naming the variable", err)
	}
}
