package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

// soakConfig is what the soak scenario is told.
type soakConfig struct {
	rate      float64       // operations started per second, whatever the answers take (open loop)
	mix       string        // weights of login, refresh and current_user
	signups   float64       // share of logins that sign a new address up
	sessions  int           // signed-in sessions that refresh and current_user take turns on
	dur       time.Duration // how long the load runs
	interval  time.Duration // one sample per interval
	warmup    time.Duration // samples before this are plotted, not judged
	outDir    string        // soak.csv, soak.png and soak.txt go here
	bootstrap string        // the dev server's bootstrap.json (app id and API secret)
	pid       int           // the server's process id, for its open file descriptors
	pgURL     string        // the server's PostgreSQL database, for its connections
	webhooks  bool          // register a local webhook receiver
	tolerance float64       // relative growth allowed by the flatness checks
	maxErrors float64       // share of failed operations allowed
}

// Operations and lags, as recorded per interval. A login is three of them:
// the send, the message's way to the dev outbox, the verify.
var soakSeries = []string{"send", "message_lag", "verify", "refresh", "current_user", "webhook_lag"}

// soakStats collects what finished within the current interval.
type soakStats struct {
	mu       sync.Mutex
	lat      map[string][]time.Duration
	errs     map[string]int
	skipped  map[string]int
	firstErr map[string]string
}

func newSoakStats() *soakStats {
	return &soakStats{lat: map[string][]time.Duration{}, errs: map[string]int{}, skipped: map[string]int{}, firstErr: map[string]string{}}
}

// done records one operation that began at start.
func (s *soakStats) done(name string, start time.Time, err error) {
	s.add(name, time.Since(start), err)
}

func (s *soakStats) add(name string, d time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errs[name]++
		if _, ok := s.firstErr[name]; !ok {
			s.firstErr[name] = err.Error()
		}
		return
	}
	s.lat[name] = append(s.lat[name], d)
}

func (s *soakStats) skip(name string) {
	s.mu.Lock()
	s.skipped[name]++
	s.mu.Unlock()
}

// take returns the interval's figures and starts the next interval.
func (s *soakStats) take() (lat map[string][]time.Duration, errs, skipped map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lat, errs, skipped = s.lat, s.errs, s.skipped
	s.lat, s.errs, s.skipped = map[string][]time.Duration{}, map[string]int{}, map[string]int{}
	return lat, errs, skipped
}

// soakSample is one row of the CSV.
type soakSample struct {
	t          time.Duration // since the load began
	heapInuse  float64       // bytes, go_memstats_heap_inuse_bytes
	goroutines float64       // go_goroutines
	fds        float64       // the server's open file descriptors
	dbConns    float64       // PostgreSQL backends of the server's database; NaN on SQLite
	inFlight   float64       // operations begun and not finished, at the sample
	missed     float64       // operations not started in the interval: too many in flight
	ops        map[string]opFigures
}

type opFigures struct {
	n, errs, skipped int
	p50, p99, max    time.Duration
}

func figures(lat []time.Duration, errs, skipped int) opFigures {
	f := opFigures{n: len(lat), errs: errs, skipped: skipped}
	if len(lat) == 0 {
		return f
	}
	slices.Sort(lat)
	f.p50, f.p99, f.max = lat[(len(lat)-1)*50/100], lat[(len(lat)-1)*99/100], lat[len(lat)-1]
	return f
}

// soakColumns is the CSV header: the legend of every column.
func soakColumns() []string {
	cols := []string{"t_s", "heap_inuse_mib", "goroutines", "open_fds", "db_conns", "in_flight", "missed"}
	for _, name := range soakSeries {
		cols = append(cols, name+"_n", name+"_errors", name+"_p50_ms", name+"_p99_ms", name+"_max_ms")
	}
	return cols
}

func (s soakSample) record() []string {
	f := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64) }
	row := []string{f(math.Round(s.t.Seconds()*10) / 10), strconv.FormatFloat(s.heapInuse/(1<<20), 'f', 2, 64),
		f(s.goroutines), f(s.fds), f(s.dbConns), f(s.inFlight), f(s.missed)}
	for _, name := range soakSeries {
		o := s.ops[name]
		if o.n == 0 {
			row = append(row, "0", strconv.Itoa(o.errs+o.skipped), "", "", "")
			continue
		}
		row = append(row, strconv.Itoa(o.n), strconv.Itoa(o.errs+o.skipped), ms(o.p50), ms(o.p99), ms(o.max))
	}
	return row
}

// soaker runs the workload.
type soaker struct {
	c       *client
	cfg     soakConfig
	stats   *soakStats
	stamp   int64
	signups atomic.Int64
	known   chan string   // signed-up addresses not in a login right now
	pool    chan tokenSet // sessions not in use right now
	rng     func() float64
}

// maxInFlight bounds the operations the soak keeps open: past it the
// server is not keeping up, and the operations due are counted as missed
// instead of piling up.
const maxInFlight = 2000

func soak(c *client, cfg soakConfig, out io.Writer) error {
	if cfg.rate <= 0 || cfg.interval <= 0 || cfg.dur < 3*cfg.interval {
		return fmt.Errorf("soak: need -rate > 0 and -d at least three -interval (%s)", 3*cfg.interval)
	}
	cycle, err := parseMix(cfg.mix)
	if err != nil {
		return err
	}
	if cfg.outDir == "" {
		return errors.New("soak: -out DIR is required")
	}
	if err := os.MkdirAll(cfg.outDir, 0o755); err != nil {
		return err
	}
	secret := ""
	if cfg.bootstrap != "" {
		raw, err := os.ReadFile(cfg.bootstrap)
		if err != nil {
			return err
		}
		var b struct {
			AppID     string `json:"app_id"`
			APISecret string `json:"api_secret"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			return fmt.Errorf("%s: %w", cfg.bootstrap, err)
		}
		if c.app == "" {
			c.app = b.AppID
		}
		secret = b.APISecret
	}
	if c.app == "" {
		return errors.New("soak: -app or -bootstrap is required")
	}
	ctx := context.Background()
	s := &soaker{c: c, cfg: cfg, stats: newSoakStats(), stamp: time.Now().UnixNano(),
		known: make(chan string, cfg.sessions), pool: make(chan tokenSet, cfg.sessions), rng: rand.Float64}

	if cfg.webhooks {
		if secret == "" {
			return errors.New("soak: webhooks need the app's API secret: pass -bootstrap")
		}
		stop, err := s.receiveWebhooks(ctx, secret)
		if err != nil {
			return err
		}
		defer stop()
	}
	var pg *pgx.Conn
	if cfg.pgURL != "" {
		if pg, err = pgx.Connect(ctx, cfg.pgURL); err != nil {
			return fmt.Errorf("soak: connect to PostgreSQL to count connections: %w", err)
		}
		defer pg.Close(ctx)
	}
	// The sessions refresh and current_user work on, and the addresses
	// that sign in again: made before the clock starts.
	for i := range cfg.sessions {
		email := fmt.Sprintf("soak-%d-known-%d@example.com", s.stamp, i)
		ts, err := c.login(ctx, email)
		if err != nil {
			return fmt.Errorf("soak setup: sign-in: %w", err)
		}
		s.known <- email
		s.pool <- ts
	}
	s.stats.take() // the setup's webhook deliveries are not the soak's

	csvFile, err := os.Create(filepath.Join(cfg.outDir, "soak.csv"))
	if err != nil {
		return err
	}
	defer csvFile.Close()
	w := bufio.NewWriter(csvFile)
	writeRow := func(cols []string) error {
		if _, err := w.WriteString(strings.Join(cols, ",") + "\n"); err != nil {
			return err
		}
		return w.Flush()
	}
	if err := writeRow(soakColumns()); err != nil {
		return err
	}

	var inFlight, missed atomic.Int64
	var samples []soakSample
	sample := func(t time.Duration) error {
		sm := soakSample{t: t, dbConns: math.NaN(), inFlight: float64(inFlight.Load()), missed: float64(missed.Swap(0)),
			ops: map[string]opFigures{}}
		m, err := scrapeMetrics(ctx, c)
		if err != nil {
			return err
		}
		sm.heapInuse, sm.goroutines = m["go_memstats_heap_inuse_bytes"], m["go_goroutines"]
		sm.fds = m["process_open_fds"]
		if cfg.pid > 0 {
			ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cfg.pid))
			if err != nil {
				return fmt.Errorf("the server's open files: %w", err)
			}
			sm.fds = float64(len(ents))
		}
		if pg != nil {
			var n int
			if err := pg.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
				return fmt.Errorf("pg_stat_activity: %w", err)
			}
			sm.dbConns = float64(n)
		}
		lat, errs, skipped := s.stats.take()
		for _, name := range soakSeries {
			sm.ops[name] = figures(lat[name], errs[name], skipped[name])
		}
		samples = append(samples, sm)
		return writeRow(sm.record())
	}

	fmt.Fprintf(out, "soak: %.0f operations/s (%s), %s, a sample every %s, judged after %s; files in %s\n",
		cfg.rate, cfg.mix, cfg.dur, cfg.interval, cfg.warmup, cfg.outDir)
	start := time.Now()
	if err := sample(0); err != nil {
		return err
	}
	end := start.Add(cfg.dur)
	load, stopLoad := context.WithDeadline(ctx, end)
	defer stopLoad()
	// The sampler keeps its own time, so that a slow scrape never delays
	// the operations due.
	var sampleErr error
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for k := 1; ; k++ {
			at := start.Add(time.Duration(k) * cfg.interval)
			if at.After(end) {
				return
			}
			time.Sleep(time.Until(at))
			if err := sample(time.Since(start)); err != nil {
				sampleErr = err
				stopLoad()
				return
			}
		}
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	var wg sync.WaitGroup
	for i := 0; ; i++ {
		due := start.Add(time.Duration(float64(i) / cfg.rate * float64(time.Second)))
		if !due.Before(end) {
			break
		}
		timer.Reset(time.Until(due))
		select {
		case <-timer.C:
		case <-load.Done():
		}
		if load.Err() != nil {
			break
		}
		if inFlight.Load() >= maxInFlight {
			missed.Add(1)
			continue
		}
		op := cycle[i%len(cycle)]
		inFlight.Add(1)
		wg.Go(func() {
			defer inFlight.Add(-1)
			opCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			s.run(opCtx, op)
		})
	}
	<-sampled
	wg.Wait()
	if sampleErr != nil {
		return sampleErr
	}
	// Quiet: what the load held (requests, connections) is let go; what
	// stays above the count before the load is a leak.
	c.http.CloseIdleConnections()
	quiet, err := settle(ctx, c, samples[0], cfg)
	if err != nil {
		return err
	}

	rep := judge(samples, quiet, cfg, s.stats)
	if err := os.WriteFile(filepath.Join(cfg.outDir, "soak.png"), plotSoak(samples, cfg.warmup), 0o644); err != nil {
		return err
	}
	text := rep.String()
	if err := os.WriteFile(filepath.Join(cfg.outDir, "soak.txt"), []byte(text+plotLegend(samples)), 0o644); err != nil {
		return err
	}
	fmt.Fprint(out, text)
	fmt.Fprintf(out, "files: %s %s %s\n", filepath.Join(cfg.outDir, "soak.csv"), filepath.Join(cfg.outDir, "soak.png"),
		filepath.Join(cfg.outDir, "soak.txt"))
	if rep.failed() {
		return errors.New("soak: " + strings.Join(rep.failures, "; "))
	}
	return nil
}

// run is one operation of the mix.
func (s *soaker) run(ctx context.Context, op string) {
	switch op {
	case "login":
		s.login(ctx)
	case "refresh":
		var ts tokenSet
		select {
		case ts = <-s.pool:
		default:
			s.stats.skip("refresh")
			return
		}
		t := time.Now()
		body, err := s.c.do(ctx, "POST", "/v1/auth/"+s.c.app+"/tokens/refresh", map[string]string{"X-Refresh-Token": ts.Refresh}, nil)
		var next tokenSet
		if err == nil {
			err = json.Unmarshal(body, &next)
		}
		s.stats.done("refresh", t, err)
		if err == nil {
			s.offer(next) // a failed refresh's session is dropped; sign-ins refill the pool
		}
	case "current_user":
		var ts tokenSet
		select {
		case ts = <-s.pool:
		default:
			s.stats.skip("current_user")
			return
		}
		t := time.Now()
		_, err := s.c.do(ctx, "GET", "/v1/auth/"+s.c.app+"/current_user", map[string]string{"X-Authorization": ts.Access}, nil)
		s.stats.done("current_user", t, err)
		if err == nil {
			s.offer(ts)
		}
	}
}

// offer returns a session to the pool, or leaves it when the pool is full.
func (s *soaker) offer(ts tokenSet) {
	select {
	case s.pool <- ts:
	default:
	}
}

// login sends a code to a signed-up address (or, for the -signups share or
// when every known address is busy, to a new one), waits for it in the dev
// outbox and verifies it. message_lag is the time from the send's answer to
// the code's arrival in the outbox.
func (s *soaker) login(ctx context.Context) {
	var email string
	known := false
	if s.rng() >= s.cfg.signups {
		select {
		case email = <-s.known:
			known = true
		default:
		}
	}
	if !known {
		email = fmt.Sprintf("soak-%d-new-%d@example.com", s.stamp, s.signups.Add(1))
	}
	defer func() {
		if known {
			s.known <- email
		}
	}()
	since := time.Now().UTC().Truncate(time.Microsecond)
	t := time.Now()
	b, err := s.c.do(ctx, "POST", "/v1/auth/"+s.c.app+"/otps/login", nil, map[string]any{"identifier": email})
	var sent struct {
		UserID string `json:"user_id"`
	}
	if err == nil {
		err = json.Unmarshal(b, &sent)
	}
	s.stats.done("send", t, err)
	if err != nil {
		return
	}
	t = time.Now()
	code, err := s.c.awaitCode(ctx, email, since)
	s.stats.done("message_lag", t, err)
	if err != nil {
		return
	}
	t = time.Now()
	b, err = s.c.do(ctx, "POST", "/v1/auth/"+s.c.app+"/otps/verify", nil, map[string]any{"otp": code, "user_id": sent.UserID})
	var ts tokenSet
	if err == nil {
		err = json.Unmarshal(b, &ts)
	}
	s.stats.done("verify", t, err)
	if err == nil {
		s.offer(ts)
	}
}

// receiveWebhooks registers a local endpoint for every event of the app and
// records each delivery's lag: the time from the event (the envelope's
// created_at, written in the transaction of the change) to its arrival.
func (s *soaker) receiveWebhooks(ctx context.Context, apiSecret string) (stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var verified atomic.Pointer[http.Handler]
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := verified.Load()
		if h == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		(*h).ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	stop = func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(c)
	}
	b, err := s.c.do(ctx, "POST", "/v1/apps/"+s.c.app+"/webhooks", map[string]string{"Authorization": "Bearer " + apiSecret},
		map[string]any{"webhook": map[string]any{"url": "http://" + ln.Addr().String() + "/soak", "description": "gatehouse-load soak"}})
	var created struct {
		Webhook struct {
			Secret string `json:"secret"`
		} `json:"webhook"`
	}
	if err == nil {
		err = json.Unmarshal(b, &created)
	}
	if err == nil && created.Webhook.Secret == "" {
		err = errors.New("no secret in the answer")
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("soak: register the webhook receiver: %w", err)
	}
	h := webhookverify.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env, _ := webhookverify.EnvelopeFrom(r.Context())
		s.stats.add("webhook_lag", time.Since(env.CreatedAt), nil)
		w.WriteHeader(http.StatusNoContent)
	}), created.Webhook.Secret)
	verified.Store(&h)
	return stop, nil
}

// quietFor is how long settle waits at most for the server to let go of
// the load's goroutines and connections.
const quietFor = 30 * time.Second

// settle waits, after the load, until the server's goroutines and open
// files are back within the slack of the counts before the load, or
// quietFor has passed, and returns the last counts.
func settle(ctx context.Context, c *client, before soakSample, cfg soakConfig) (soakSample, error) {
	start := time.Now()
	for {
		m, err := scrapeMetrics(ctx, c)
		if err != nil {
			return soakSample{}, err
		}
		q := soakSample{t: time.Since(start), goroutines: m["go_goroutines"], fds: m["process_open_fds"], heapInuse: m["go_memstats_heap_inuse_bytes"]}
		if cfg.pid > 0 {
			if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cfg.pid)); err == nil {
				q.fds = float64(len(ents))
			}
		}
		if (q.goroutines <= before.goroutines+goroutineSlack && q.fds <= before.fds+fdSlack) || q.t >= quietFor {
			return q, nil
		}
		time.Sleep(time.Second)
	}
}

// scrapeMetrics reads the server's /metrics (served on the API listener in
// development mode) and returns its unlabelled samples.
func scrapeMetrics(ctx context.Context, c *client) (map[string]float64, error) {
	b, err := c.do(ctx, "GET", "/metrics", nil, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape /metrics: %w", err)
	}
	m := parseMetrics(string(b))
	for _, name := range []string{"go_memstats_heap_inuse_bytes", "go_goroutines"} {
		if _, ok := m[name]; !ok {
			return nil, fmt.Errorf("/metrics has no %s", name)
		}
	}
	return m, nil
}

// parseMetrics reads Prometheus text: "name value" lines without labels.
func parseMetrics(text string) map[string]float64 {
	m := map[string]float64{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || strings.ContainsRune(line, '{') {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			m[f[0]] = v
		}
	}
	return m
}

// parseMix reads "login=2,refresh=3,current_user=5" into a cycle of
// operations, interleaved (smooth weighted round robin) so that each
// operation is spread evenly over time.
func parseMix(mix string) ([]string, error) {
	type w struct {
		op         string
		weight, at int
	}
	var ws []w
	total := 0
	for part := range strings.SplitSeq(mix, ",") {
		op, n, ok := strings.Cut(strings.TrimSpace(part), "=")
		weight, err := strconv.Atoi(n)
		if !ok || err != nil || weight < 0 || weight > 1000 {
			return nil, fmt.Errorf("-mix: %q is not op=weight", part)
		}
		if op != "login" && op != "refresh" && op != "current_user" {
			return nil, fmt.Errorf("-mix: unknown operation %q (login, refresh, current_user)", op)
		}
		if weight > 0 {
			ws = append(ws, w{op: op, weight: weight})
			total += weight
		}
	}
	if total == 0 {
		return nil, errors.New("-mix: no operation has a weight")
	}
	cycle := make([]string, 0, total)
	for range total {
		best := 0
		for i := range ws {
			ws[i].at += ws[i].weight
			if ws[i].at > ws[best].at {
				best = i
			}
		}
		ws[best].at -= total
		cycle = append(cycle, ws[best].op)
	}
	return cycle, nil
}
