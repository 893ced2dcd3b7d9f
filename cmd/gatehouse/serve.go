package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/httpapi"
	"github.com/gatehouse-auth/gatehouse/internal/queue"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

func serveCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP server (migrating the database first)",
		Long: "Run the HTTP server. The database schema is migrated first; replicas starting together on\n" +
			"PostgreSQL take turns. With --dev, everything lives in --data-dir (SQLite, master key) and a\n" +
			"Demo app with an API secret is created and printed on first start.\n\n" + settingsHelp(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := e.load(cmd)
			if err != nil {
				return err
			}
			return serve(e.ctx, cfg, e)
		},
	}
}

// settingsHelp lists every setting, including those without a flag.
func settingsHelp() string {
	var b strings.Builder
	b.WriteString("Settings (defaults, then --config YAML file, then environment, then flags):\n")
	for _, s := range config.Settings() {
		flag := ""
		if s.Flag != "" {
			flag = " --" + s.Flag
		}
		def := ""
		if s.Default != "" && !s.Secret {
			def = " [default " + s.Default + "]"
		}
		fmt.Fprintf(&b, "  %-28s %s%s%s\n      %s\n", s.Key, s.Env, flag, def, s.Help)
	}
	return b.String()
}

func serve(ctx context.Context, cfg config.Config, e *env) error {
	log := newLogger(cfg, e.stderr)
	// Bind first: with --addr :0 the real port decides the base URL.
	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return usageError(fmt.Errorf("invalid setting http.addr (GATEHOUSE_HTTP_ADDR): %w", err))
	}
	defer ln.Close()
	cfg = withListenAddr(cfg, ln.Addr().String())

	sys, err := build(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer sys.db.Close()
	if err := sys.db.Migrate(ctx); err != nil {
		return err
	}
	if err := queue.Migrate(ctx, sys.db, quietRiver(log)); err != nil {
		return err
	}
	if err := sys.ready(ctx); err != nil {
		return err
	}
	var proxies []netip.Prefix
	for _, c := range cfg.HTTP.TrustedProxies {
		if p, err := netip.ParsePrefix(c); err == nil {
			proxies = append(proxies, p)
		} else if a, err := netip.ParseAddr(c); err == nil {
			proxies = append(proxies, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reloader := tenant.NewKeyReloader(sys.tenants)
	// A token may name a key another replica (or the CLI) made since the last
	// periodic reload: reload then, at most once a second.
	sys.keyring.OnUnknownKey(func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		reloader.ReloadSoon(rctx)
	})
	api := httpapi.New(httpapi.Deps{DB: sys.db, Tenants: sys.tenants, Users: sys.users, SignIn: sys.signin, Webhooks: sys.hooks, Keyring: sys.keyring,
		Log: log, Registry: reg, Dev: cfg.Dev, BaseURL: cfg.BaseURL, Version: buildVersion(),
		TrustedProxies: proxies})

	if cfg.Dev {
		b, err := devBootstrap(ctx, sys)
		if err != nil {
			return fmt.Errorf("dev bootstrap: %w", err)
		}
		fmt.Fprintf(e.stdout, "\nGatehouse is running in development mode.\n\n"+
			"  Base URL:    %s\n  App id:      %s\n  API secret:  %s\n  Workspace:   %s\n\n"+
			"  Saved to %s. Codes and links: %s/dev/outbox?to=ADDRESS\n  API docs:    %s/v1/docs/\n\n",
			b.BaseURL, b.AppID, b.APISecret, b.WorkspaceID, filepath.Join(cfg.DataDir, "bootstrap.json"), b.BaseURL, b.BaseURL)
	}

	srv := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: cfg.HTTP.ReadHeaderTimeout,
		ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second,
		MaxHeaderBytes: 64 << 10}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { every(ctx, 10*time.Second, func() { reloader.ReloadSoon(ctx) }) })
	if sys.pruneRates != nil {
		wg.Go(func() { every(ctx, time.Minute, func() { _ = sys.pruneRates(ctx) }) })
	}
	if err := sys.queue.Start(ctx); err != nil {
		return fmt.Errorf("start job queue: %w", err)
	}
	if cfg.PrivateTargetsAllowed() {
		log.Warn("webhooks may target http:// and private or loopback addresses (webhooks.allow_private_targets); never in production")
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	kind, _ := cfg.DatabaseKind()
	log.Info("gatehouse started", "addr", ln.Addr().String(), "base_url", cfg.BaseURL, "database", kind,
		"dev", cfg.Dev, "version", buildVersion())

	select {
	case err := <-errc:
		cancel()
		wg.Wait()
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.HTTP.ShutdownTimeout.String())
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.HTTP.ShutdownTimeout)
	defer scancel()
	err = srv.Shutdown(sctx)
	// Deliveries in flight get the attempt timeout to finish; the rest are
	// retried after restart.
	qctx, qcancel := context.WithTimeout(context.WithoutCancel(ctx), 12*time.Second)
	if qerr := sys.queue.Stop(qctx); qerr != nil {
		log.Warn("job queue stop", "err", qerr)
	}
	qcancel()
	cancel()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// every runs fn each interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// withListenAddr replaces a base URL derived from a ":0" address with the
// port actually bound.
func withListenAddr(cfg config.Config, addr string) config.Config {
	_, port, _ := net.SplitHostPort(addr)
	if strings.HasSuffix(cfg.BaseURL, ":0") {
		old := cfg.BaseURL
		cfg.BaseURL = strings.TrimSuffix(cfg.BaseURL, "0") + port
		if cfg.Tokens.Issuer == old {
			cfg.Tokens.Issuer = cfg.BaseURL
		}
	}
	return cfg
}

// bootstrap is what dev mode prints and writes to DATA_DIR/bootstrap.json.
type bootstrap struct {
	WorkspaceID string `json:"workspace_id"`
	AppID       string `json:"app_id"`
	APISecret   string `json:"api_secret"`
	BaseURL     string `json:"base_url"`
}

type bootstrapState struct {
	WorkspaceID string `json:"workspace_id"`
	AppID       string `json:"app_id"`
	SecretID    string `json:"secret_id"`
}

const bootstrapKey = "dev_bootstrap"

// devBootstrap creates workspace "Default", app "Demo" and an app API secret
// on first start; later starts reuse them (and the saved secret if it still
// works) and rewrite bootstrap.json with the same ids.
func devBootstrap(ctx context.Context, sys *system) (bootstrap, error) {
	path := filepath.Join(sys.cfg.DataDir, "bootstrap.json")
	out := bootstrap{BaseURL: sys.cfg.BaseURL}
	var st bootstrapState
	raw, err := sys.db.GetState(ctx, bootstrapKey)
	if err == nil {
		err = json.Unmarshal([]byte(raw), &st)
	}
	if err == nil {
		if _, aerr := sys.tenants.GetApp(ctx, st.AppID); aerr != nil {
			err = aerr
		}
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, tenant.ErrAppNotFound) {
		return out, err
	}
	if err != nil {
		ws, _, err := sys.tenants.CreateWorkspace(ctx, tenant.WorkspaceInput{Name: "Default", OwnerEmail: "dev@localhost.localdomain", OwnerName: "Developer"})
		if err != nil {
			return out, err
		}
		name, origin := "Demo", "http://localhost:3000"
		schema := appuser.Schema{
			{ID: "first_name", Name: "First name", FieldName: "first_name", FieldType: appuser.FieldString, VisibleProfile: true, VisibleRegistration: true},
			{ID: "last_name", Name: "Last name", FieldName: "last_name", FieldType: appuser.FieldString, VisibleProfile: true, VisibleRegistration: true},
		}
		app, err := sys.tenants.CreateApp(ctx, ws.ID, tenant.AppSettings{Name: &name, Origin: &origin, LoginURL: &origin, MetaSchema: &schema})
		if err != nil {
			return out, err
		}
		st = bootstrapState{WorkspaceID: ws.ID, AppID: app.ID}
	}
	out.WorkspaceID, out.AppID = st.WorkspaceID, st.AppID

	// Reuse the saved secret when it still authenticates for this app.
	var saved bootstrap
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &saved) == nil && saved.APISecret != "" {
		if p, err := sys.tenants.Authenticate(ctx, saved.APISecret); err == nil && p.AppID == st.AppID {
			out.APISecret = saved.APISecret
			st.SecretID = p.CredentialID
		}
	}
	if out.APISecret == "" && st.SecretID != "" {
		if tok, _, err := sys.tenants.ReissueSecret(ctx, st.SecretID); err == nil {
			out.APISecret = tok
		}
	}
	if out.APISecret == "" {
		tok, rec, err := sys.tenants.CreateAppSecret(ctx, st.AppID, "dev bootstrap")
		if err != nil {
			return out, err
		}
		out.APISecret, st.SecretID = tok, rec.ID
	}
	b, _ := json.Marshal(st)
	if err := sys.db.PutState(ctx, bootstrapKey, string(b), time.Now()); err != nil {
		return out, err
	}
	return out, writeFile0600(path, out)
}

// writeFile0600 replaces path atomically with v as JSON, readable only by its owner.
func writeFile0600(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".bootstrap-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
