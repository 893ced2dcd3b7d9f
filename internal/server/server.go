// Package server assembles Gatehouse in one ordered place, after WTF Dial's
// Main: settings → master key and derived keys → store → schema (Gatehouse's
// migrations and River's) → courier → queue → services → HTTP. The binary,
// every command-line command and every test that needs more than one package
// build the system through New, so tests run the graph production runs
// (event emitter, webhooks, key reload included) with only the clock, the
// courier, the limits and the keys overridden. Nothing is assigned after
// construction.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/riverqueue/river"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/console"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/httpapi"
	"github.com/gatehouse-auth/gatehouse/internal/machine"
	"github.com/gatehouse-auth/gatehouse/internal/metrics"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/queue"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/social"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/web"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Schema says what New does with the database schema.
type Schema int

const (
	// ApplySchema applies pending migrations first (serve, the tests).
	ApplySchema Schema = iota
	// RequireSchema refuses a schema that is not current (operator commands).
	RequireSchema
	// SchemaOnly stops once the store is open: for `gatehouse migrate`, which
	// needs no master key and no services.
	SchemaOnly
)

// Options override what the settings would choose. The zero value builds
// exactly what the settings say.
type Options struct {
	// Log receives the server's log lines; nil discards them.
	Log *slog.Logger
	// Clock replaces time.Now in every service, limiter and worker.
	Clock func() time.Time
	// Courier replaces the e-mail and SMS providers the settings name.
	Courier courier.Provider
	// Limits replaces the sign-in rate limits the settings give.
	Limits *signin.Limits
	// MasterKey replaces the master key the settings point to.
	MasterKey []byte
	// Schema says what to do with the schema; the zero value applies it.
	Schema Schema
	// Version is reported by the API description and the start-up log;
	// with Commit and BuildDate (the commit's time) also by /healthz and
	// the gatehouse_build_info metric.
	Version   string
	Commit    string
	BuildDate string
	// StrictTx makes the store refuse a second connection asked for while a
	// transaction is held (store.Options.StrictTx): the tests' tripwire.
	StrictTx bool
	// OnStatement sees every PostgreSQL statement (store.Options.OnStatement).
	OnStatement func(ctx context.Context, sql string, pipelined bool)
	// SendAlone builds a second River client that works the send queue
	// alone (StartSending), for tests that build the system without Serve:
	// Serve works the queue with the other workers, so production never
	// needs it.
	SendAlone bool
	// WrapAPI wraps the API's handler (httpapi.Deps.Wrap), for tests.
	WrapAPI func(*httpapi.Server, http.Handler) http.Handler
	// SocialEndpoints point the fixed social sign-in providers (Google,
	// Apple, Microsoft, GitHub) elsewhere: tests' local fakes.
	SocialEndpoints social.Endpoints
}

// Server is the assembled system.
type Server struct {
	// The domain services, for the command line and the tests.
	Tenants  *tenant.Service
	Users    *appuser.Service
	SignIn   *signin.Service
	Webhooks *webhook.Service
	Machines *machine.Service
	Outbound *outbound.Service
	Social   *social.Service
	Console  *console.Service
	// DB is the open store: the tests read it, nothing in production does
	// outside the services.
	DB *store.DB

	cfg     config.Config
	log     *slog.Logger
	now     func() time.Time
	keyring *token.Keyring
	api     *httpapi.Server
	workers *queue.Queue
	// sender sends the queued messages: directly as they commit, and the
	// due ones from its sweep (Serve and StartSending run it).
	sender *outbound.Sender
	// events is the emitter every service records events with.
	events *webhook.Emitter
	// listening: the PostgreSQL listener for endpoint changes is connected.
	listening atomic.Bool
	// sendAlone: StartSending may run the Sender without Serve.
	sendAlone bool
	// jobs only inserts.
	jobs *queue.Queue
	// pruneRates deletes expired shared rate-limit buckets; nil for the memory limiter.
	pruneRates func(context.Context) error
	// rateLimits is the rate-limit backend chosen: "memory" or "database".
	rateLimits string
	current    atomic.Bool // the schema was found current
	// watch keeps a database outage to one line each way; background is the
	// log of the work it watches (the queue's is quietRiver(background)).
	watch      *dbWatch
	background *slog.Logger
	// metrics are the counters the services move, on the registry /metrics serves.
	metrics *metrics.Metrics
}

// New builds the system for cfg. On error nothing is left open.
func New(ctx context.Context, cfg config.Config, opts Options) (_ *Server, err error) {
	s := &Server{cfg: cfg, log: opts.Log, now: opts.Clock}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}

	// Master key and the keys derived from it (not needed for the schema alone).
	var sealer *token.Sealer
	var hasher *token.Hasher
	var mac *token.MAC
	if opts.Schema != SchemaOnly {
		master := opts.MasterKey
		if master == nil {
			if master, err = masterKey(cfg); err != nil {
				return nil, err
			}
		}
		if sealer, hasher, err = token.FromMasterKey(master); err != nil {
			return nil, err
		}
		if mac, err = token.MACFromMasterKey(master); err != nil {
			return nil, err
		}
	}

	// Store and schema.
	if s.DB, err = openStore(ctx, cfg, opts); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = s.DB.Close()
		}
	}()
	switch opts.Schema {
	case SchemaOnly:
		return s, nil
	case ApplySchema:
		if err := s.migrate(ctx); err != nil {
			return nil, err
		}
	case RequireSchema:
		if pending, err := s.DB.Pending(ctx); err != nil {
			return nil, err
		} else if pending {
			return nil, errors.New("the database schema is not up to date: run `gatehouse migrate up` (serve does it by itself)")
		}
	}
	s.current.Store(true)

	// Metrics: what /metrics serves beyond HTTP, read by the services.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.metrics = metrics.New(reg)
	metrics.RegisterQueue(reg, s.messageBacklog)
	metrics.RegisterPools(reg, s.DB.PoolStats)

	// Courier.
	outbox := courier.NewOutbox(outboxStore{db: s.DB, now: s.now})
	mail := s.metrics.Provider(opts.Courier, "custom")
	if mail == nil {
		if mail, err = newCourier(cfg, s.log, outbox, s.metrics); err != nil {
			return nil, err
		}
	}

	// Background work polls the database: while it does not answer, one
	// line says so, not one per poll.
	// The probe is a transaction with a statement, as the work it stands
	// for: on PostgreSQL an empty one would send nothing (store.Tx sends
	// BEGIN with the first statement), and a lone ping is quick enough to
	// slip through on a connection an outage is just closing.
	s.watch = newDBWatch(func(ctx context.Context) error {
		return s.DB.Tx(ctx, func(tx *store.Tx) error { return tx.Probe(ctx) })
	}, s.log)
	s.background = slog.New(s.watch.filter(s.log.Handler()))

	// Queue: an inserting client for the services (jobs are inserted in
	// their transactions); the working client, which needs the services, comes after them.
	jobs, err := queue.New(s.DB, queue.Config{Log: quietRiver(s.background)})
	if err != nil {
		return nil, err
	}

	// Services.
	s.keyring = token.NewKeyring(s.metrics.KeySource(tenant.KeySource(s.DB, sealer, s.now, s.background)))
	policy := webhook.Policy{AllowPrivate: cfg.PrivateTargetsAllowed()}
	events := webhook.NewEmitter(jobs, s.now)
	s.events = events
	s.Webhooks = webhook.NewService(webhook.Deps{DB: s.DB, Sealer: sealer, Policy: policy, Events: events, Now: s.now,
		MaxEndpoints: cfg.Webhooks.MaxEndpointsPerApp, Log: s.log})
	var limiter ratelimit.Limiter = ratelimit.NewMemory(s.now)
	s.rateLimits = "memory"
	if cfg.RateLimit.Backend == "database" || (cfg.RateLimit.Backend == "auto" && s.DB.Kind() == store.Postgres) {
		shared := ratelimit.NewSQL(s.DB, s.now)
		limiter, s.pruneRates, s.rateLimits = shared, shared.Prune, "database"
	}
	limiter = s.metrics.Limiter(limiter) // counts refusals by rule
	s.Tenants = tenant.New(tenant.Deps{DB: s.DB, Keyring: s.keyring, Sealer: sealer, Hasher: hasher,
		Issuer: cfg.Tokens.Issuer, AccessTokenAlg: cfg.Tokens.AccessTokenAlg, Now: s.now, Log: s.log})
	tests, err := testIdentities(cfg)
	if err != nil {
		return nil, err
	}
	// Messages: guarded, rendered and committed with their challenge or
	// cause, sent by workers.
	// The send queue schedules in real time, as the job queue does: a
	// message's lease and backoff are waits, not dates.
	messages := outbound.NewQueue(outbound.QueueDeps{Sealer: sealer, MaxAttempts: cfg.Messages.MaxAttempts})
	if s.Outbound, err = s.newOutbound(messages, sealer, events, outbox, policy, limiter, tests); err != nil {
		return nil, err
	}
	// Every message goes through the app's own provider for its channel, if
	// it has one, else through the server-wide one.
	mail = s.Outbound.Providers.Router(mail)
	s.Users = appuser.New(appuser.Deps{DB: s.DB, Outbound: s.Outbound, Keyring: s.keyring,
		Hasher: hasher, Sealer: sealer, BaseURL: cfg.BaseURL, Issuer: cfg.Tokens.Issuer, Events: events, TestIdentities: tests, Now: s.now, Log: s.log})
	limits := opts.Limits
	if limits == nil {
		l, err := signinLimits(cfg)
		if err != nil {
			return nil, err
		}
		limits = &l
	}
	s.SignIn = signin.New(signin.Deps{DB: s.DB, Keyring: s.keyring, Sealer: sealer, Hasher: hasher, MAC: mac, Outbound: s.Outbound,
		Users: s.Users, Limiter: limiter, Limits: *limits, Events: events, Now: s.now, Log: s.log, Metrics: s.metrics,
		Settings: signin.Settings{Issuer: cfg.Tokens.Issuer, SessionLifetime: cfg.Tokens.SessionLifetime,
			RefreshGrace: cfg.Tokens.RefreshGrace, BaseURL: cfg.BaseURL, AccessTokenAlg: cfg.Tokens.AccessTokenAlg}})

	// Social sign-in providers: an OpenID issuer is vetted as a webhook
	// URL is (https, no private address outside development).
	// Calls to providers go through the same egress client as webhooks
	// (SSRF-safe; private addresses only in development).
	s.Social = social.New(social.Deps{DB: s.DB, Sealer: sealer, CheckURL: policy.CheckURL, BaseURL: cfg.BaseURL,
		HTTP: policy.Client(socialTimeout), AllowHTTP: policy.AllowPrivate, Hasher: hasher, Limiter: limiter,
		Endpoints: opts.SocialEndpoints, Now: s.now, Log: s.log})

	m2mLimits, err := machineLimits(cfg)
	if err != nil {
		return nil, err
	}
	s.Machines = machine.New(machine.Deps{DB: s.DB, Keyring: s.keyring, Hasher: hasher, Issuer: cfg.Tokens.Issuer,
		TokenTTL: cfg.M2M.TokenTTL, Alg: s.Tenants.AccessTokenAlg, Limiter: limiter, Limits: m2mLimits, Now: s.now, Log: s.log})

	// Messages are sent by the process that commits them, right after the
	// commit; the Sender's sweep sends those that are due (retries, and
	// messages a stopped process left).
	s.sender = outbound.NewSender(outbound.SenderDeps{DB: s.DB, Queue: messages, Sealer: sealer, Provider: mail,
		Challenges: s.SignIn, Workers: cfg.Messages.Workers, Poll: cfg.Messages.PollInterval,
		RetryBase: cfg.Messages.RetryBase, RetryMax: cfg.Messages.RetryMax, Log: s.background, Waited: s.metrics.QueueWait})

	// Workers: webhook deliveries, the challenge-expiry sweep, the purge of
	// expired M2M sessions, and the messages earlier releases queued as
	// River jobs (legacyMessagePoll: on PostgreSQL River is woken by
	// LISTEN/NOTIFY as an earlier release inserts them).
	sender := outbound.NewWorker(outbound.WorkerDeps{DB: s.DB, Sealer: sealer, Provider: mail,
		Challenges: s.SignIn, RetryBase: cfg.Messages.RetryBase, RetryMax: cfg.Messages.RetryMax, Log: s.log})
	workers := river.NewWorkers()
	river.AddWorker(workers, sender)
	river.AddWorker(workers, webhook.NewWorker(webhook.WorkerDeps{DB: s.DB, Sealer: sealer, Policy: policy,
		RetryBase: cfg.Webhooks.RetryBase, Now: s.now, Log: s.log, PerApp: cfg.Webhooks.AppShare(), Metrics: s.metrics}))
	river.AddWorker(workers, signin.NewExpiryWorker(s.SignIn))
	river.AddWorker(workers, machine.NewPurgeWorker(s.Machines))
	// Deliveries and messages a stopped process was working are tried again
	// once they have run for webhooks.rescue_after (Serve rescues them).
	rescue := []string{webhook.QueueName, outbound.QueueName}
	s.workers, err = queue.New(s.DB, queue.Config{Workers: workers, Log: quietRiver(s.background), RescueAfter: cfg.Webhooks.RescueAfter, Rescue: rescue,
		Periodic:      []*river.PeriodicJob{signin.ExpiryJob(15*time.Second, queueMaintenance), machine.PurgeJob(5*time.Minute, queueMaintenance)},
		Queues:        map[string]int{webhook.QueueName: cfg.Webhooks.Workers, queueMaintenance: 2, outbound.QueueName: max(cfg.Messages.Workers/4, 1)},
		PollIntervals: map[string]time.Duration{outbound.QueueName: legacyMessagePoll, webhook.QueueName: webhookPoll}})
	if err != nil {
		return nil, err
	}

	s.sendAlone = opts.SendAlone
	s.jobs = jobs

	// Signing keys: the first one is made on the first start.
	if err := s.Tenants.EnsureSigningKey(ctx); err != nil {
		return nil, err
	}

	// HTTP.
	var devOutbox *courier.Outbox
	if cfg.Dev {
		devOutbox = outbox
	}
	s.api = httpapi.New(httpapi.Deps{Tenants: s.Tenants, Users: s.Users, SignIn: s.SignIn, Outbound: s.Outbound, Webhooks: s.Webhooks,
		Social:   s.Social,
		Machines: s.Machines, Keyring: s.keyring, Ready: s.ready, Outbox: devOutbox, Log: s.log, DBLog: s.background,
		TimeoutLog:  slog.New(s.watch.whileDown(s.log.Handler())),
		LogRequests: cfg.Log.Requests, Registry: reg, Dev: cfg.Dev,
		MetricsOnAPI: cfg.MetricsOnAPI(), MetricsToken: cfg.Metrics.Token, SendMinTime: cfg.RateLimit.SendMinTime, RequestTimeout: cfg.HTTP.RequestTimeout, BaseURL: cfg.BaseURL, Version: opts.Version, Commit: opts.Commit, BuildDate: opts.BuildDate, TrustedProxies: trustedProxies(cfg.HTTP.TrustedProxies),
		Wrap: opts.WrapAPI})
	s.Console = console.New(console.Deps{DB: s.DB, Hasher: hasher, Now: s.now, BaseURL: cfg.BaseURL,
		Tenants: s.Tenants, Users: s.Users, SignIn: s.SignIn})
	s.api.MountConsole(web.New(web.Deps{Console: s.Console, Tenants: s.Tenants, Users: s.Users, SignIn: s.SignIn,
		Webhooks: s.Webhooks, Machines: s.Machines, Outbound: s.Outbound, Social: s.Social, Describe: s.api.Describe, Log: s.log, Now: s.now,
		Sealer: sealer, Hasher: hasher, SendMinTime: cfg.RateLimit.SendMinTime}))
	return s, nil
}

// StartSending runs the send queue's workers alone, without serving, until
// the returned stop is called: for tests that send messages, on a system
// built with Options.SendAlone. Serve runs them with the other workers
// instead; never call both.
func (s *Server) StartSending(ctx context.Context) (stop func(context.Context) error, err error) {
	if !s.sendAlone {
		return nil, errors.New("start send queue: the server was built without Options.SendAlone")
	}
	return s.runSender(ctx), nil
}

// runSender runs the Sender until the returned stop is called, which waits
// for it to finish (or for ctx of stop to end).
func (s *Server) runSender(ctx context.Context) (stop func(context.Context) error) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.sender.Run(sctx)
	}()
	return func(ctx context.Context) error {
		cancel()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// MessagesUnfinished counts (up to limit) the messages still waiting, being
// sent or due for a retry: the backlog of the send queue (and the messages
// an earlier release queued as River jobs).
func (s *Server) MessagesUnfinished(ctx context.Context, limit int) (int, error) {
	n, _, err := s.DB.MessageBacklog(ctx)
	if err != nil || n >= limit {
		return min(n, limit), err
	}
	legacy, err := s.jobs.Unfinished(ctx, outbound.JobKind, limit-n)
	return n + legacy, err
}

// Listening reports whether this replica hears PostgreSQL's notifications
// of webhook endpoint changes (never on SQLite).
func (s *Server) Listening() bool { return s.listening.Load() }

// messageBacklog is the send queue's depth and the age of its oldest
// message, for /metrics: one statement, read at scrape time. (Messages an
// earlier release queued as River jobs, drained after an upgrade, are not
// counted.)
func (s *Server) messageBacklog(ctx context.Context) (int, time.Duration, error) {
	n, oldest, err := s.DB.MessageBacklog(ctx)
	if err != nil || n == 0 {
		return n, 0, err
	}
	// By the queue's clock, real time (outbound.QueueDeps.Now is left unset).
	return n, max(time.Since(oldest), 0), nil
}

// API is the HTTP API, for tests that look at its routes and description.
func (s *Server) API() *httpapi.Server { return s.api }

// Keyring holds the signing keys this replica has loaded.
func (s *Server) Keyring() *token.Keyring { return s.keyring }

// Close releases the store. Call it after Serve has returned.
func (s *Server) Close() error { return s.DB.Close() }

// Migrate applies every pending migration of both schema sets.
func (s *Server) Migrate(ctx context.Context) error {
	if err := s.migrate(ctx); err != nil {
		return err
	}
	s.current.Store(true)
	return nil
}

// migrate applies the migrations, then the work that follows them: the
// name rows of users written before 00024_user_names or by an older
// replica since the last time (store.BackfillUserNames).
func (s *Server) migrate(ctx context.Context) error {
	if err := s.DB.Migrate(ctx); err != nil {
		return err
	}
	// A failure does not stop the server: only the console's name search
	// misses those users, and the next start tries again.
	n, err := s.DB.BackfillUserNames(ctx, s.now())
	if err != nil {
		s.log.Warn("could not index every user's names for the console's search; the next start tries again", "users", n, "err", err)
	} else if n > 0 {
		s.log.Info("indexed users' names for the console's search", "users", n)
	}
	return nil
}

// MigrationState is one migration of either set (Gatehouse's or River's).
type MigrationState = store.MigrationState

// MigrationStatus lists every migration of both sets and whether it is applied.
func (s *Server) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	return s.DB.MigrationStatus(ctx)
}

// ready is /readyz: the database answers and its schema is current. Once
// current, a schema stays current (migrations only go forward), so that is
// checked once.
func (s *Server) ready(ctx context.Context) error {
	if err := s.DB.Ping(ctx); err != nil {
		return err
	}
	if s.current.Load() {
		return nil
	}
	pending, err := s.DB.Pending(ctx)
	if err != nil {
		return err
	}
	if pending {
		return errors.New("the database schema is not up to date")
	}
	s.current.Store(true)
	return nil
}

// Listeners are the sockets Serve serves on: the API, and /metrics alone
// when metrics.addr is set (nil otherwise).
type Listeners struct {
	API     net.Listener
	Metrics net.Listener
}

// Close closes every listener.
func (l Listeners) Close() error {
	var errs []error
	for _, ln := range []net.Listener{l.API, l.Metrics} {
		if ln != nil {
			errs = append(errs, ln.Close())
		}
	}
	return errors.Join(errs...)
}

// Listen binds the configured addresses (the API's, and metrics.addr when
// set) and returns the settings with a base URL derived from a ":0" address
// replaced by the port actually bound (and the issuer with it, when it was
// derived too). Bind before New: the base URL and issuer go into tokens and
// links.
func Listen(cfg config.Config) (Listeners, config.Config, error) {
	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return Listeners{}, cfg, &config.SettingError{Key: "http.addr", Env: "GATEHOUSE_HTTP_ADDR", Reason: err.Error()}
	}
	ls := Listeners{API: ln}
	if cfg.Metrics.Addr != "" {
		if ls.Metrics, err = net.Listen("tcp", cfg.Metrics.Addr); err != nil {
			_ = ln.Close()
			return Listeners{}, cfg, &config.SettingError{Key: "metrics.addr", Env: "GATEHOUSE_METRICS_ADDR", Reason: err.Error()}
		}
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if strings.HasSuffix(cfg.BaseURL, ":0") {
		old := cfg.BaseURL
		cfg.BaseURL = strings.TrimSuffix(cfg.BaseURL, "0") + port
		if cfg.Tokens.Issuer == old {
			cfg.Tokens.Issuer = cfg.BaseURL
		}
	}
	return ls, cfg, nil
}

// Serve runs the system on ls until ctx ends: the HTTP API (and /metrics on
// its own listener when metrics.addr is set), the job workers and the
// periodic key reload, rate-limit pruning, rescue of jobs a stopped server
// left running and database watch, each started here with a context and
// ended here. Then it stops gracefully: no new connections,
// in-flight requests drained (up to http.shutdown_timeout), deliveries in
// flight given their attempt's time. It returns the server's error, if any.
func (s *Server) Serve(ctx context.Context, ls Listeners) error {
	cfg := s.cfg
	if (ls.Metrics != nil) != (cfg.Metrics.Addr != "") {
		return errors.New("serve: a metrics listener is needed exactly when metrics.addr is set")
	}
	servers := []*http.Server{s.httpServer(s.api.Handler())}
	listeners := []net.Listener{ls.API}
	if ls.Metrics != nil {
		servers = append(servers, s.httpServer(s.api.MetricsHandler()))
		listeners = append(listeners, ls.Metrics)
	}
	loops, stopLoops := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopLoops(); wg.Wait() }()
	// A token naming a kid this replica has not loaded reloads at once; this
	// picks up rotations (and publication windows ending) otherwise. A failed
	// reload is logged by the key source.
	wg.Go(func() { every(loops, 10*time.Second, func() { _ = s.keyring.Reload(loops) }) })
	wg.Go(func() { s.watch.run(loops) })
	// PostgreSQL tells every replica when an app's webhook endpoints change
	// (a trigger); what was remembered of them is forgotten, all of it
	// whenever the listener (re)connects, as it may have missed some.
	wg.Go(func() {
		s.DB.Listen(loops, webhook.EndpointsChannel, s.events.Forget, func(up bool) {
			if up {
				s.events.Forget("")
			}
			s.listening.Store(up)
		})
	})
	wg.Go(func() { every(loops, queue.RescueEvery, func() { s.rescue(loops) }) })
	// The console's home-page counts, made when a view asks (idle: none).
	wg.Go(func() { s.Console.RunCounts(loops, s.background) })
	if s.pruneRates != nil {
		wg.Go(func() { every(loops, time.Minute, func() { _ = s.pruneRates(loops) }) })
	}
	// The workers stop when Stop says, below, not when ctx ends: a context
	// that ends makes River cancel the jobs in flight at once.
	if err := s.workers.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start job queue: %w", err)
	}
	stopSender := s.runSender(ctx)
	// One line says what the server runs on (never a secret), after one
	// warning per risky setting.
	summary := startupSummary(cfg, s.rateLimits, s.signingAlgs())
	for _, w := range summary.warnings {
		s.log.Warn(w)
	}
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(listeners[i]) }()
	}
	attrs := append([]any{"version", s.api.Version, "addr", ls.API.Addr().String()}, summary.attrs...)
	if ls.Metrics != nil {
		attrs = append(attrs, "metrics_addr", ls.Metrics.Addr().String())
	}
	s.log.Info("gatehouse started", attrs...)

	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		s.log.Info("shutting down", "timeout", cfg.HTTP.ShutdownTimeout.String())
	}
	// Both listeners stop together, whichever ended first.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.HTTP.ShutdownTimeout)
	for _, srv := range servers {
		if serr := srv.Shutdown(sctx); serr != nil && err == nil {
			err = fmt.Errorf("shutdown: %w", serr)
		}
	}
	scancel()
	// Deliveries in flight get the attempt timeout to finish; the rest are
	// retried after restart.
	qctx, qcancel := context.WithTimeout(context.WithoutCancel(ctx), webhook.AttemptTimeout+2*time.Second)
	if qerr := s.workers.Stop(qctx); qerr != nil {
		s.log.Warn("job queue stop", "err", qerr)
	}
	if serr := stopSender(qctx); serr != nil {
		s.log.Warn("send queue stop: messages in flight are sent again when their lease ends", "err", serr)
	}
	qcancel()
	if err == nil {
		s.log.Info("stopped")
	}
	return err
}

// rescue makes the deliveries and messages a stopped process left running
// available again once they have run for webhooks.rescue_after. River's own
// rescue runs on its leader every 30 s only: after a crash, work would wait
// up to a minute, or for another restart.
func (s *Server) rescue(ctx context.Context) {
	n, err := s.workers.Rescue(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.background.Warn("retry jobs a stopped server left running", "err", err)
		}
		return
	}
	if n > 0 {
		s.log.Info("retrying jobs a stopped server left running", "jobs", n, "running_for_over", s.cfg.Webhooks.RescueAfter.String())
	}
}

// signingAlgs lists the algorithms the keyring holds a signing key for.
func (s *Server) signingAlgs() []string {
	var out []string
	for _, alg := range token.Algorithms {
		if s.keyring.Signs(alg) {
			out = append(out, alg)
		}
	}
	return out
}

// httpServer serves h with the server's timeouts. The write timeout runs
// from the end of the headers, so it allows for reading the body (within
// readTimeout), the longest deadline of a route and writing the answer: a
// request that runs out of time still gets its 503.
func (s *Server) httpServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: s.cfg.HTTP.ReadHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: readTimeout + httpapi.LongestDeadline(s.cfg.HTTP.RequestTimeout) + 10*time.Second,
		IdleTimeout:  120 * time.Second, MaxHeaderBytes: 64 << 10}
}

// readTimeout bounds reading a whole request, its body (1 MiB at most) included.
const readTimeout = 30 * time.Second

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

// openStore connects to the configured database.
func openStore(ctx context.Context, cfg config.Config, opts Options) (*store.DB, error) {
	kind, target := cfg.DatabaseKind()
	if kind == store.SQLite && strings.HasPrefix(target, "file:") {
		target, _, _ = strings.Cut(strings.TrimPrefix(target, "file:"), "?")
	}
	return store.Open(ctx, kind, target, store.Options{MaxConns: cfg.Database.MaxConns, StatementTimeout: cfg.Database.StatementTimeout,
		LockTimeout: cfg.Database.LockTimeout, IdleInTransactionTimeout: cfg.Database.IdleInTransactionTimeout,
		StrictTx: opts.StrictTx, OnStatement: opts.OnStatement})
}

// queueMaintenance runs periodic housekeeping jobs.
const queueMaintenance = "maintenance"

// webhookPoll is how often River looks for webhook deliveries that are due:
// a new one wakes it at once (LISTEN/NOTIFY on PostgreSQL), but a retry
// comes due by the clock, and this bounds how late it starts.
const webhookPoll = 500 * time.Millisecond

// legacyMessagePoll is how often River looks for message jobs an earlier
// release queued (none are queued any more: an idle server must not poll).
const legacyMessagePoll = 2 * time.Second

// quietRiver keeps River's own informational chatter out of the log.
func quietRiver(log *slog.Logger) *slog.Logger {
	return slog.New(levelFloor{log.Handler(), slog.LevelWarn})
}

// levelFloor drops records below min.
type levelFloor struct {
	slog.Handler
	min slog.Level
}

func (h levelFloor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h levelFloor) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFloor{h.Handler.WithAttrs(a), h.min}
}
func (h levelFloor) WithGroup(n string) slog.Handler {
	return levelFloor{h.Handler.WithGroup(n), h.min}
}

// testIdentities turns the test_identities settings into the patterns
// appuser matches ("off" is none).
func testIdentities(cfg config.Config) (appuser.TestIdentities, error) {
	ti := cfg.TestIdentities
	phone, err := ti.PhoneRegexp()
	if err != nil {
		return appuser.TestIdentities{}, &config.SettingError{Key: "test_identities.phone_pattern", Reason: err.Error()}
	}
	out := appuser.TestIdentities{EmailSuffix: strings.ToLower(ti.EmailSuffix), Phone: phone, Code: ti.Code}
	if strings.EqualFold(ti.EmailSuffix, config.Off) {
		out.EmailSuffix = ""
	}
	return out, nil
}

// signinLimits turns the rate-limit settings into rules.
func signinLimits(cfg config.Config) (signin.Limits, error) {
	l := signin.Limits{CodeFailuresPerHour: cfg.RateLimit.CodeFailuresPerHour, CodeLockAfter: cfg.RateLimit.CodeLockAfter,
		PollInterval: cfg.RateLimit.PollInterval}
	for _, r := range []struct {
		key, value string
		dst        *ratelimit.Rule
	}{
		{"ratelimit.send_per_identifier", cfg.RateLimit.SendPerIdentifier, &l.SendPerIdentifier},
		{"ratelimit.send_per_ip", cfg.RateLimit.SendPerIP, &l.SendPerIP},
		{"ratelimit.verify_per_ip", cfg.RateLimit.VerifyPerIP, &l.VerifyPerIP},
		{"ratelimit.lookup_per_ip", cfg.RateLimit.LookupPerIP, &l.LookupPerIP},
		{"ratelimit.challenge_per_ip", cfg.RateLimit.ChallengePerIP, &l.ChallengePerIP},
		{"ratelimit.challenge_per_user", cfg.RateLimit.ChallengePerUser, &l.ChallengePerUser},
		{"ratelimit.unknown_identifier_per_ip", cfg.RateLimit.UnknownPerIP, &l.UnknownPerIP},
		{"ratelimit.short_link_per_ip", cfg.RateLimit.ShortLinkPerIP, &l.ShortLinkPerIP},
	} {
		rule, err := ratelimit.ParseRule(r.value)
		if err != nil {
			return l, &config.SettingError{Key: r.key, Reason: err.Error()}
		}
		*r.dst = rule
	}
	return l, nil
}

// machineLimits turns the M2M rate-limit settings into rules.
func machineLimits(cfg config.Config) (machine.Limits, error) {
	var l machine.Limits
	for _, r := range []struct {
		key, value string
		dst        *ratelimit.Rule
	}{
		{"ratelimit.m2m_failures_per_client", cfg.RateLimit.M2MFailuresPerClient, &l.FailuresPerClient},
		{"ratelimit.m2m_failures_per_ip", cfg.RateLimit.M2MFailuresPerIP, &l.FailuresPerIP},
	} {
		rule, err := ratelimit.ParseRule(r.value)
		if err != nil {
			return l, &config.SettingError{Key: r.key, Reason: err.Error()}
		}
		*r.dst = rule
	}
	return l, nil
}

// trustedProxies parses http.trusted_proxies (validated by config already).
func trustedProxies(list []string) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range list {
		if p, err := netip.ParsePrefix(c); err == nil {
			out = append(out, p)
		} else if a, err := netip.ParseAddr(c); err == nil {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out
}

// socialTimeout bounds each call to a social sign-in provider (discovery,
// keys, token, userinfo): the browser waits on the callback meanwhile.
const socialTimeout = 10 * time.Second
