// Package servertest builds the assembled system for tests, through the same
// server.New as the binary: on a fresh SQLite file or PostgreSQL database
// (storetest), with a fake clock, a recording courier, a master key of its
// own and a log buffer, and, when asked, serving HTTP and running the job
// workers on a loopback port. Its fixture builders go through the real
// services, acting as the operator.
package servertest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/fakeclock"
	"github.com/gatehouse-auth/gatehouse/internal/httpapi"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/server"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/social"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
)

// Start is the fake clock's first reading; it has sub-second digits on
// purpose, so truncation and rounding bugs show.
func Start() time.Time { return time.Date(2031, 3, 14, 15, 9, 26, 535897000, time.UTC) }

// Operator is the principal fixtures act as.
var Operator = access.Operator()

// Options tune a test system. The zero value is a system on the engine's
// defaults with loose limits, a fake clock and a recording courier.
type Options struct {
	// Settings are GATEHOUSE_* variables, set as an operator would set them.
	Settings map[string]string
	// Limits replace the sign-in rate limits; nil means LooseLimits.
	Limits *signin.Limits
	// Courier, when set, wraps the recorder (to make deliveries fail).
	Courier func(courier.Provider) courier.Provider
	// SettingsCourier keeps the e-mail and SMS providers the settings choose
	// (in development mode the outbox behind /dev/outbox) instead of the
	// recorder, which then sees nothing: for tests of what reaches them.
	SettingsCourier bool
	// RealClock keeps time.Now: for tests of background work that River
	// schedules in real time (delivery retries).
	RealClock bool
	// Serve serves HTTP on a loopback port and runs the job workers, as
	// `gatehouse serve` does, until the test ends.
	Serve bool
	// Peer, when set, builds another replica of Peer's system: the same
	// database, master key, base URL, fake clock and mailbox, its own
	// process state (caches, keyring). Settings apply on top.
	Peer *System
	// WrapAPI wraps the API's handler (httpapi.Deps.Wrap): httpapi's tests
	// record every error answered with it.
	WrapAPI func(*httpapi.Server, http.Handler) http.Handler
	// OnStatement sees every PostgreSQL statement (server.Options.OnStatement).
	OnStatement func(ctx context.Context, sql string, pipelined bool)
	// SocialEndpoints point the fixed social sign-in providers at local fakes.
	SocialEndpoints social.Endpoints
}

// System is a built test system.
type System struct {
	*server.Server
	Config config.Config
	// Clock is the fake clock every service reads (nil with RealClock).
	Clock *fakeclock.Clock
	// Mail records every message the send queue's workers send.
	Mail *Mailbox
	// Logs holds the server's log lines (JSON, debug level and up).
	Logs *LogBuffer
	// URL is where the API is served ("" unless Serve).
	URL string
	// MetricsURL is where /metrics is served on its own ("" unless Serve
	// with metrics.addr set).
	MetricsURL string
	// MasterKey is the system's master key.
	MasterKey []byte
}

// LooseLimits are the security bar's limits, loosened only where tests would
// otherwise trip over a limit they do not test.
func LooseLimits() signin.Limits {
	l := signin.DefaultLimits()
	l.SendPerIdentifier = ratelimit.Rule{Limit: 50, Period: 10 * time.Minute}
	l.SendPerIP = ratelimit.Rule{Limit: 1000, Period: 10 * time.Minute}
	l.VerifyPerIP = ratelimit.Rule{Limit: 1000, Period: 10 * time.Minute}
	l.LookupPerIP = ratelimit.Rule{Limit: 1000, Period: 10 * time.Minute}
	l.ChallengePerIP = ratelimit.Rule{Limit: 1000, Period: 10 * time.Minute}
	l.ChallengePerUser = ratelimit.Rule{Limit: 200, Period: 10 * time.Minute}
	l.PollInterval = 2 * time.Second
	return l
}

// ForEach runs fn once per engine (storetest.Kinds), each as a subtest with
// a system of its own.
func ForEach(t *testing.T, opts Options, fn func(t *testing.T, sys *System)) {
	t.Helper()
	for _, kind := range storetest.Kinds(t) {
		t.Run(kind, func(t *testing.T) { fn(t, New(t, kind, opts)) })
	}
}

// New builds a system on a fresh database of kind (store.SQLite or
// store.Postgres), closed when the test ends.
func New(t testing.TB, kind string, opts Options) *System {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	env := map[string]string{
		"GATEHOUSE_DATA_DIR":                       dir,
		"GATEHOUSE_HTTP_ADDR":                      "127.0.0.1:0",
		"GATEHOUSE_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true", // receivers are httptest servers on loopback
		// The SMS guards' waits and prefix cap, loosened like LooseLimits:
		// tests of them set their own (the countries and line types stay).
		"GATEHOUSE_SMS_PER_NUMBER_BURST":  "100",
		"GATEHOUSE_SMS_PREFIX_HOURLY_CAP": "0",
		// Messages are sent at once and retried quickly: a failing one ends
		// within a fraction of a second.
		"GATEHOUSE_MESSAGES_POLL_INTERVAL": "10ms",
		"GATEHOUSE_MESSAGES_RETRY_BASE":    "5ms",
		"GATEHOUSE_MESSAGES_RETRY_MAX":     "20ms",
		"GATEHOUSE_MESSAGES_MAX_ATTEMPTS":  "3",
	}
	switch {
	case opts.Peer != nil:
		// The same database and the same public URL (so the same token issuer).
		env["GATEHOUSE_DATABASE_URL"] = opts.Peer.Config.Database.URL
		env["GATEHOUSE_BASE_URL"] = opts.Peer.Config.BaseURL
	case kind == store.SQLite:
		env["GATEHOUSE_DATABASE_URL"] = "sqlite:" + filepath.Join(dir, "gatehouse.db")
	case kind == store.Postgres:
		env["GATEHOUSE_DATABASE_URL"] = storetest.PostgresURL(t)
	default:
		t.Fatalf("servertest: unknown store kind %q", kind)
	}
	for k, v := range opts.Settings {
		env[k] = v
	}
	environ := make([]string, 0, len(env))
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	cfg, err := config.Load(nil, "", environ)
	if err != nil {
		t.Fatalf("servertest: settings: %v", err)
	}

	sys := &System{Mail: &Mailbox{}, Logs: &LogBuffer{}}
	if opts.Peer != nil {
		// Replicas send through one provider: whichever replica's worker
		// sends a message, the test finds it in the same mailbox.
		sys.Mail = opts.Peer.Mail
	}
	if opts.Peer != nil {
		sys.MasterKey = opts.Peer.MasterKey
	} else {
		sys.MasterKey = tokentest.MasterKey(t)
	}
	o := server.Options{Log: slog.New(slog.NewJSONHandler(sys.Logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Courier: sys.Mail, Limits: opts.Limits, MasterKey: sys.MasterKey, Version: "test", Commit: "0123456789ab", BuildDate: "2026-11-26T00:00:00Z",
		// A second connection asked for inside a transaction fails the test;
		// benchmarks measure what production runs, without the bookkeeping.
		StrictTx: !isBenchmark(t), WrapAPI: opts.WrapAPI, OnStatement: opts.OnStatement,
		SocialEndpoints: opts.SocialEndpoints}
	switch {
	case opts.SettingsCourier:
		o.Courier = nil
	case opts.Courier != nil:
		o.Courier = opts.Courier(sys.Mail)
	}
	if o.Limits == nil {
		l := LooseLimits()
		o.Limits = &l
	}
	switch {
	case opts.Peer != nil && opts.Peer.Clock != nil && !opts.RealClock:
		sys.Clock = opts.Peer.Clock // one time for both replicas
		o.Clock = sys.Clock.Now
	case !opts.RealClock:
		sys.Clock = fakeclock.New(Start())
		o.Clock = sys.Clock.Now
	}
	if opts.Serve {
		l, served, err := server.Listen(cfg)
		if err != nil {
			t.Fatalf("servertest: listen: %v", err)
		}
		cfg, sys.URL = served, "http://"+l.API.Addr().String() // a peer keeps its peer's base URL
		if l.Metrics != nil {
			sys.MetricsURL = "http://" + l.Metrics.Addr().String()
		}
		sys.Server, err = server.New(ctx, cfg, o)
		if err != nil {
			_ = l.Close()
			t.Fatalf("servertest: server.New: %v", err)
		}
		runCtx, stop := context.WithCancel(ctx)
		stopped := make(chan struct{})
		var serveErr error
		go func() {
			defer close(stopped)
			serveErr = sys.Serve(runCtx, l)
		}()
		t.Cleanup(func() {
			stop()
			<-stopped
			if serveErr != nil {
				t.Errorf("servertest: Serve: %v", serveErr)
			}
			_ = sys.Close()
		})
		waitReady(t, sys.URL, stopped)
	} else {
		o.SendAlone = true
		sys.Server, err = server.New(ctx, cfg, o)
		if err != nil {
			t.Fatalf("servertest: server.New: %v", err)
		}
		// Without Serve no worker runs but the send queue's: messages
		// arrive as they would, webhook deliveries stay queued.
		stopSending, err := sys.StartSending(ctx)
		if err != nil {
			_ = sys.Close()
			t.Fatalf("servertest: %v", err)
		}
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_ = stopSending(sctx)
			_ = sys.Close()
		})
	}
	if opts.Peer == nil {
		sys.Mail.settle = sys.settleMessages
	}
	sys.Config = cfg
	return sys
}

// settleMessages waits until the send queue has nothing left to send or
// retry, polling (in real time: the workers run in real time).
func (s *System) settleMessages(ctx context.Context) error {
	for {
		n, err := s.MessagesUnfinished(ctx, 1)
		if err == nil && n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d unfinished (%v): %w", n, err, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// waitReady returns once the served system answers /readyz (so its workers
// have started too), failing the test if Serve stops first.
func waitReady(t testing.TB, base string, stopped <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if res, err := http.Get(base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-stopped:
			t.Fatalf("servertest: Serve stopped before it was ready")
		case <-time.After(10 * time.Millisecond): // real time: the server starts in real time
		}
		if time.Now().After(deadline) {
			t.Fatalf("servertest: %s not ready after 30 s", base)
		}
	}
}

// Workspace creates a workspace whose first owner is owner@<slug>.example.
func (s *System) Workspace(t testing.TB, name string) (tenant.Workspace, tenant.Member) {
	t.Helper()
	nw, err := s.Tenants.CreateWorkspace(context.Background(), Operator,
		tenant.WorkspaceInput{Name: name, OwnerEmail: "owner@" + tenant.Slugify(name) + ".example", OwnerName: "Olive"})
	if err != nil {
		t.Fatalf("CreateWorkspace(%q): %v", name, err)
	}
	return nw.Workspace, nw.Owner
}

// App creates an app in a workspace, named name, with origin
// https://<slug>.example unless mod sets another; mod may change any setting.
func (s *System) App(t testing.TB, workspaceID, name string, mod func(*tenant.AppSettings)) tenant.App {
	t.Helper()
	origin := "https://" + tenant.Slugify(name) + ".example"
	in := tenant.AppSettings{Name: &name, Origin: &origin}
	if mod != nil {
		mod(&in)
	}
	a, err := s.Tenants.CreateApp(context.Background(), Operator, workspaceID, in)
	if err != nil {
		t.Fatalf("CreateApp(%q): %v", name, err)
	}
	return a
}

// AppSecret issues an API secret for an app.
func (s *System) AppSecret(t testing.TB, appID string) string {
	t.Helper()
	tok, _, err := s.Tenants.CreateAppSecret(context.Background(), Operator, appID, "tests")
	if err != nil {
		t.Fatalf("CreateAppSecret(%s): %v", appID, err)
	}
	return tok
}

// WorkspaceSecret issues a workspace API secret acting for a member (by id or e-mail).
func (s *System) WorkspaceSecret(t testing.TB, workspaceID, member string) string {
	t.Helper()
	tok, _, err := s.Tenants.CreateWorkspaceSecret(context.Background(), Operator, workspaceID, member, "tests")
	if err != nil {
		t.Fatalf("CreateWorkspaceSecret(%s, %s): %v", workspaceID, member, err)
	}
	return tok
}

// Principal authenticates a credential into its principal.
func (s *System) Principal(t testing.TB, credential string) access.Principal {
	t.Helper()
	p, err := s.Tenants.Authenticate(context.Background(), credential)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	return p
}

// LogBuffer collects log lines; the server writes from many goroutines.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns the log lines that contain every one of parts.
func (b *LogBuffer) Lines(parts ...string) []string {
	var out []string
	for _, line := range strings.Split(b.String(), "\n") {
		ok := line != ""
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// Leaks reports whether text holds secret: a JWT's payload or signature
// alone counts, and a short secret (a one-time or backup code) counts only
// as a whole word, so six digits that happen to occur in a timestamp's
// fraction, a duration or a hash are no leak.
func Leaks(text, secret string) bool {
	if len(secret) < 16 {
		return ContainsWord(text, secret)
	}
	if parts := strings.Split(secret, "."); len(parts) == 3 && strings.HasPrefix(parts[0], "eyJ") && parts[1] != "" && parts[2] != "" {
		return strings.Contains(text, parts[1]) || strings.Contains(text, parts[2])
	}
	return strings.Contains(text, secret)
}

// ContainsWord reports whether word occurs in text as a word: after the
// start, an escape (a JSON log's \n, \t, \r or \u00XX, a URL's %XX) or a
// character that is neither a letter, a digit nor '.' (the digits after a
// decimal point belong to the number), and before the end or a character
// that is neither a letter nor a digit.
func ContainsWord(text, word string) bool {
	alnum := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	hex := func(s string) bool {
		for _, c := range []byte(s) {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
		return true
	}
	escaped := func(start int) bool {
		return start >= 2 && text[start-2] == '\\' && strings.IndexByte("ntr", text[start-1]) >= 0 ||
			start >= 3 && text[start-3] == '%' && hex(text[start-2:start]) ||
			start >= 6 && text[start-6:start-4] == `\u` && hex(text[start-4:start])
	}
	for i := 0; ; {
		j := strings.Index(text[i:], word)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(word)
		before := start == 0 || !alnum(text[start-1]) && text[start-1] != '.' || escaped(start)
		if before && (end == len(text) || !alnum(text[end])) {
			return true
		}
		i = start + 1
	}
}

// isBenchmark reports whether t is a benchmark's.
func isBenchmark(t testing.TB) bool {
	_, ok := t.(*testing.B)
	return ok
}
