// Command gatehouse-load measures a running Gatehouse server: requests per
// second and latency percentiles for one scenario at a fixed concurrency.
// It only talks to the server it is given (use loopback), and stops by itself.
//
//	gatehouse-load -base http://127.0.0.1:8080 -app APP_ID -scenario refresh -c 16 -d 10s
//
// Scenarios: jwks, current_user, refresh, login (send a code, wait for it in
// the dev outbox, or at the tool's own SMTP sink with -smtp, verify it);
// oracle: the timing of sending a code to an existing and to an unknown
// address (-n samples of each, one at a time, alternating; medians
// compared, never asserted); and soak: a mixed
// workload at a fixed rate for -d, sampled every -interval and checked for
// growth (soak.go; scripts/soak.sh runs it against a fresh server). All but
// jwks need a dev-mode server whose sign-in rate limits are off
// (GATEHOUSE_RATELIMIT_SEND_PER_IP=off, GATEHOUSE_RATELIMIT_SEND_PER_IDENTIFIER=off,
// GATEHOUSE_RATELIMIT_VERIFY_PER_IP=off).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gatehouse-load:", err)
		os.Exit(1)
	}
}

type client struct {
	base, app string
	http      *http.Client
	// sink, when set, receives the codes by SMTP instead of the dev outbox.
	sink *smtpSink
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("gatehouse-load", flag.ContinueOnError)
	base := fs.String("base", "http://127.0.0.1:8080", "server base URL")
	app := fs.String("app", "", "app id (required except for jwks)")
	scenario := fs.String("scenario", "jwks", "jwks, current_user, refresh, login, oracle or soak")
	conc := fs.Int("c", 16, "concurrent clients")
	dur := fs.Duration("d", 10*time.Second, "how long to run")
	samples := fs.Int("n", 1000, "oracle: samples of each kind")
	smtpAddr := fs.String("smtp", "", "login: receive the codes by SMTP on this address (the server's smtp.host and smtp.port, smtp.tls none) instead of reading the dev outbox")
	var sc soakConfig
	fs.Float64Var(&sc.rate, "rate", 40, "soak: operations started per second, whatever the answers take")
	fs.StringVar(&sc.mix, "mix", "login=2,refresh=3,current_user=5", "soak: weights of the operations (a login is a send, the code read from the dev outbox and a verify)")
	fs.Float64Var(&sc.signups, "signups", 0.2, "soak: share of logins that sign a new address up (the others sign known addresses in again)")
	fs.IntVar(&sc.sessions, "sessions", 64, "soak: signed-in sessions (and known addresses) made before the load")
	fs.DurationVar(&sc.interval, "interval", 10*time.Second, "soak: one sample per interval")
	fs.DurationVar(&sc.warmup, "warmup", 0, "soak: samples before this are plotted, not judged (default: a fifth of -d, at most 2 min)")
	fs.StringVar(&sc.outDir, "out", "", "soak: directory for soak.csv, soak.png and soak.txt")
	fs.StringVar(&sc.bootstrap, "bootstrap", "", "soak: the dev server's bootstrap.json, for the app id and its API secret")
	fs.IntVar(&sc.pid, "pid", 0, "soak: the server's process id, to count its open files in /proc (else process_open_fds from /metrics)")
	fs.StringVar(&sc.pgURL, "pg", "", "soak: the server's PostgreSQL database URL, to count its connections in pg_stat_activity")
	fs.BoolVar(&sc.webhooks, "webhooks", true, "soak: register a local webhook receiver for every event (needs -bootstrap)")
	fs.Float64Var(&sc.tolerance, "tolerance", 0.25, "soak: growth allowed from the first third to the last (relative, plus a fixed slack per series)")
	fs.Float64Var(&sc.maxErrors, "max-errors", 0.01, "soak: share of failed or skipped operations allowed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *conc * 2, MaxConnsPerHost: *conc * 2}
	if *scenario == "soak" {
		// Open loop: as many connections as requests in flight, and those
		// a burst opened closed again soon, so that they do not stay
		// counted as the server's goroutines and open files.
		tr = &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256, IdleConnTimeout: 5 * time.Second}
	}
	c := &client{base: *base, app: *app, http: &http.Client{Timeout: 10 * time.Second, Transport: tr}}
	if *smtpAddr != "" {
		sink, err := newSMTPSink(*smtpAddr)
		if err != nil {
			return fmt.Errorf("smtp sink: %w", err)
		}
		defer sink.ln.Close()
		c.sink = sink
	}
	var op func(ctx context.Context, worker int) error
	switch *scenario {
	case "oracle":
		return oracle(c, *samples, out)
	case "soak":
		sc.dur = *dur
		if sc.warmup == 0 {
			sc.warmup = min(sc.dur/5, 2*time.Minute)
		}
		return soak(c, sc, out)
	case "jwks":
		op = func(ctx context.Context, _ int) error {
			_, err := c.do(ctx, "GET", "/.well-known/jwks.json", nil, nil)
			return err
		}
	case "current_user", "refresh":
		sets := make([]tokenSet, *conc)
		for i := range sets {
			ts, err := c.login(context.Background(), fmt.Sprintf("load-setup-%d-%d@example.com", time.Now().UnixNano(), i))
			if err != nil {
				return fmt.Errorf("setup sign-in: %w", err)
			}
			sets[i] = ts
		}
		if *scenario == "current_user" {
			op = func(ctx context.Context, w int) error {
				_, err := c.do(ctx, "GET", "/v1/auth/"+c.app+"/current_user", map[string]string{"X-Authorization": sets[w].Access}, nil)
				return err
			}
		} else {
			op = func(ctx context.Context, w int) error {
				body, err := c.do(ctx, "POST", "/v1/auth/"+c.app+"/tokens/refresh", map[string]string{"X-Refresh-Token": sets[w].Refresh}, nil)
				if err != nil {
					return err
				}
				return json.Unmarshal(body, &sets[w])
			}
		}
	case "login":
		var n atomic.Int64
		stamp := time.Now().UnixNano()
		op = func(ctx context.Context, _ int) error {
			_, err := c.login(ctx, fmt.Sprintf("load-%d-%d@example.com", stamp, n.Add(1)))
			return err
		}
	default:
		return fmt.Errorf("unknown scenario %q", *scenario)
	}
	res := measure(op, *conc, *dur)
	fmt.Fprintf(out, "%s c=%d: %d ok, %d errors in %s: %.0f/s  p50 %s  p99 %s\n", *scenario, *conc, res.ok, res.errs,
		res.elapsed.Round(time.Millisecond), float64(res.ok)/res.elapsed.Seconds(), res.p(50), res.p(99))
	if c.sink != nil && *scenario == "login" {
		// From the send's answer to the message's end of DATA at the sink:
		// what the send step adds to the provider's own time (here a local
		// SMTP server that answers at once).
		fmt.Fprintf(out, "message lag (send answered to SMTP DATA done): p50 %s  p99 %s\n", c.sink.lag(50), c.sink.lag(99))
	}
	if res.firstErr != nil {
		fmt.Fprintf(out, "first error: %v\n", res.firstErr)
	}
	return nil
}

type result struct {
	ok, errs  int
	elapsed   time.Duration
	latencies []time.Duration
	firstErr  error
}

func (r result) p(q int) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	return r.latencies[(len(r.latencies)-1)*q/100].Round(10 * time.Microsecond)
}

// measure runs op on conc clients for dur. An operation begun before the
// end runs to its end and counts: cutting requests off would make the
// server abandon them (and its database connections with them) and spend
// CPU on work no operation is counted for.
func measure(op func(context.Context, int) error, conc int, dur time.Duration) result {
	ctx := context.Background()
	var mu sync.Mutex
	var res result
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(dur)
	for w := range conc {
		wg.Go(func() {
			var lat []time.Duration
			ok, errs := 0, 0
			var first error
			for time.Now().Before(end) {
				t := time.Now()
				err := op(ctx, w)
				if err != nil {
					errs++
					if first == nil {
						first = err
					}
					continue
				}
				ok++
				lat = append(lat, time.Since(t))
			}
			mu.Lock()
			res.ok, res.errs = res.ok+ok, res.errs+errs
			res.latencies = append(res.latencies, lat...)
			if res.firstErr == nil {
				res.firstErr = first
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	slices.Sort(res.latencies)
	return res
}

func (c *client) do(ctx context.Context, method, path string, headers map[string]string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}

type tokenSet struct {
	Access  string `json:"access"`
	Refresh string `json:"refresh"`
}

// login signs a new identifier in with a code read from the dev outbox.
func (c *client) login(ctx context.Context, email string) (tokenSet, error) {
	b, err := c.do(ctx, "POST", "/v1/auth/"+c.app+"/otps/login", nil, map[string]any{"identifier": email})
	if err != nil {
		return tokenSet{}, err
	}
	var sent struct {
		UserID string `json:"user_id"`
	}
	if err := json.Unmarshal(b, &sent); err != nil {
		return tokenSet{}, err
	}
	var code string
	if c.sink != nil {
		code, err = c.sink.await(ctx, email, time.Now()) // the lag from this answer is recorded
	} else {
		code, err = c.awaitCode(ctx, email, time.Time{})
	}
	if err != nil {
		return tokenSet{}, err
	}
	b, err = c.do(ctx, "POST", "/v1/auth/"+c.app+"/otps/verify", nil, map[string]any{"otp": code, "user_id": sent.UserID})
	if err != nil {
		return tokenSet{}, err
	}
	var ts tokenSet
	return ts, json.Unmarshal(b, &ts)
}

// awaitCode reads the code sent to a new address from the dev outbox: the
// send queue's workers hand messages to the outbox just after the send's
// answer, so it asks the outbox to wait for the message (wait_ms), and the
// login's time includes the message's way through the queue. A non-zero
// since skips the messages kept before it (an address that signed in
// before); the SMTP sink hands each message out once.
func (c *client) awaitCode(ctx context.Context, email string, since time.Time) (string, error) {
	if c.sink != nil {
		return c.sink.await(ctx, email, time.Time{})
	}
	deadline := time.Now().Add(10 * time.Second)
	q := "/dev/outbox?limit=1&wait_ms=5000&to=" + url.QueryEscape(email)
	if !since.IsZero() {
		q += "&since=" + url.QueryEscape(since.Format(time.RFC3339Nano))
	}
	for {
		b, err := c.do(ctx, "GET", q, nil, nil)
		if err != nil {
			return "", err
		}
		var box struct {
			Messages []struct {
				Code string `json:"code"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(b, &box); err != nil {
			return "", err
		}
		if len(box.Messages) > 0 && box.Messages[0].Code != "" {
			return box.Messages[0].Code, nil
		}
		if time.Now().After(deadline) {
			return "", errors.New("no code in the dev outbox after 10 s (is the server in dev mode?)")
		}
		time.Sleep(5 * time.Millisecond) // a server that does not wait (older than wait_ms)
	}
}

// oracle times sending a code to an existing address and to an unknown
// one, n samples each, one request at a time, alternating so that drift in
// the machine's load falls on both alike. The existing addresses (a pool of
// 20, signed in once first) get a new code each time; every unknown address
// is new. It reports the medians and their difference: an answer that
// depends on whether the account exists is a timing oracle.
func oracle(c *client, n int, out io.Writer) error {
	ctx := context.Background()
	stamp := time.Now().UnixNano()
	known := make([]string, 20)
	for i := range known {
		known[i] = fmt.Sprintf("oracle-known-%d-%d@example.com", stamp, i)
		if _, err := c.login(ctx, known[i]); err != nil {
			return fmt.Errorf("setup sign-in: %w", err)
		}
	}
	send := func(email string) (time.Duration, error) {
		t := time.Now()
		_, err := c.do(ctx, "POST", "/v1/auth/"+c.app+"/otps/login", nil, map[string]any{"identifier": email})
		return time.Since(t), err
	}
	// Warm up both paths (connections, caches) before measuring.
	for i := range 50 {
		if _, err := send(known[i%len(known)]); err != nil {
			return err
		}
		if _, err := send(fmt.Sprintf("oracle-warm-%d-%d@example.com", stamp, i)); err != nil {
			return err
		}
	}
	var kt, ut []time.Duration
	for i := range n {
		a, b := known[i%len(known)], fmt.Sprintf("oracle-new-%d-%d@example.com", stamp, i)
		order := []string{a, b}
		if i%2 == 1 {
			order = []string{b, a}
		}
		for _, email := range order {
			d, err := send(email)
			if err != nil {
				return err
			}
			if email == a {
				kt = append(kt, d)
			} else {
				ut = append(ut, d)
			}
		}
	}
	slices.Sort(kt)
	slices.Sort(ut)
	q := func(ds []time.Duration, p int) time.Duration { return ds[(len(ds)-1)*p/100].Round(time.Microsecond) }
	mk, mu := q(kt, 50), q(ut, 50)
	fmt.Fprintf(out, "oracle: %d samples each, one at a time\n", n)
	fmt.Fprintf(out, "  existing address: median %s  p10 %s  p90 %s\n", mk, q(kt, 10), q(kt, 90))
	fmt.Fprintf(out, "  unknown address:  median %s  p10 %s  p90 %s\n", mu, q(ut, 10), q(ut, 90))
	fmt.Fprintf(out, "  medians differ by %.1f %% (unknown vs existing)\n", 100*(float64(mu)-float64(mk))/float64(mk))
	return nil
}
