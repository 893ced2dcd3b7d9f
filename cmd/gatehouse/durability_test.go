package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

// serverProc is a real gatehouse process started from the test binary.
type serverProc struct {
	cmd  *exec.Cmd
	addr string
	log  *servertest.LogBuffer
	done chan struct{} // closed once the process has exited and its log is read
}

// startServer runs `gatehouse args...` as a child process with environ added
// to this process's environment, and waits for its "gatehouse started" line.
func startServer(t *testing.T, args, environ []string) *serverProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "GATEHOUSE_TEST_AS_MAIN=1"), environ...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serverProc{cmd: cmd, log: &servertest.LogBuffer{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(p.log, line)
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "gatehouse started" {
				addr <- rec.Addr
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait() // only after the pipe is drained, as os/exec requires
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case p.addr = <-addr:
	case <-p.done:
		t.Fatalf("gatehouse %s exited before starting; log:\n%s", strings.Join(args, " "), p.log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("gatehouse %s did not start in 60s; log:\n%s", strings.Join(args, " "), p.log.String())
	}
	return p
}

// kill ends the process with SIGKILL: no shutdown code runs.
func (p *serverProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	<-p.done
	if ws, ok := p.cmd.ProcessState.Sys().(interface{ Signaled() bool }); !ok || !ws.Signaled() {
		t.Fatalf("process state after SIGKILL = %v; want killed by a signal", p.cmd.ProcessState)
	}
}

func (p *serverProc) url() string { return "http://" + p.addr }

// receipt is one request the receiver got.
type receipt struct {
	envelopeID string
	userID     string
	answered   int // the status the receiver answered; 0 when the sender went away first
}

// receiver is a webhook endpoint on a fixed loopback port that verifies every
// request and either holds it open ("hang") or accepts it ("ok").
type receiver struct {
	port   int
	secret string

	mu       sync.Mutex
	hang     bool
	release  chan struct{} // closed to let hung requests answer 200
	inflight int
	got      []receipt
	bad      []string // requests that failed verification or parsing
	srv      *http.Server
	gate     *gateListener
}

// gateListener keeps the receiver's port bound for the whole test (so no
// other listener can take it between phases) and, while down, closes every
// connection as soon as it is accepted: the sender sees a transport error,
// as if nothing were listening.
type gateListener struct {
	net.Listener
	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

func (g *gateListener) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return nil, err
		}
		g.mu.Lock()
		if g.down {
			g.mu.Unlock()
			_ = c.Close()
			continue
		}
		g.conns[c] = struct{}{}
		g.mu.Unlock()
		return c, nil
	}
}

// setDown switches the receiver off (closing open connections) or on.
func (g *gateListener) setDown(down bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.down = down
	if down {
		for c := range g.conns {
			_ = c.Close()
		}
		clear(g.conns)
	}
}

// newReceiver binds a loopback port for the whole test; the receiver starts down.
func newReceiver(t *testing.T) *receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{port: ln.Addr().(*net.TCPAddr).Port, release: make(chan struct{}),
		gate: &gateListener{Listener: ln, down: true, conns: map[net.Conn]struct{}{}}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(r.gate) }()
	t.Cleanup(func() { _ = r.srv.Close() })
	return r
}

func (r *receiver) url() string { return "http://127.0.0.1:" + strconv.Itoa(r.port) + "/hook" }

// up listens on the reserved port again, holding requests open when hang is set.
func (r *receiver) up(t *testing.T, hang bool) {
	t.Helper()
	r.mu.Lock()
	r.hang = hang
	r.mu.Unlock()
	r.gate.setDown(false)
}

func (r *receiver) accept() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hang {
		r.hang = false
		close(r.release)
	}
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var env struct {
		ID        string `json:"id"`
		EventType string `json:"event_type"`
		Data      struct {
			User struct {
				ID string `json:"id"`
			} `json:"user"`
		} `json:"data"`
	}
	if err == nil {
		err = webhookverify.Verify(req.Header.Get(webhookverify.Header), body, time.Now(), 0, r.secret)
	}
	if err == nil {
		err = json.Unmarshal(body, &env)
	}
	if err == nil && (env.ID == "" || env.EventType != "user.created" || env.Data.User.ID == "") {
		err = errors.New("unexpected envelope")
	}
	r.mu.Lock()
	if err != nil {
		r.bad = append(r.bad, fmt.Sprintf("%v: %.200s", err, body))
		r.mu.Unlock()
		http.Error(w, "bad delivery", http.StatusBadRequest)
		return
	}
	i := len(r.got)
	r.got = append(r.got, receipt{envelopeID: env.ID, userID: env.Data.User.ID})
	hang, release := r.hang, r.release
	if hang {
		r.inflight++
	}
	r.mu.Unlock()
	if hang {
		select {
		case <-release:
		case <-req.Context().Done():
		}
		r.mu.Lock()
		r.inflight--
		r.mu.Unlock()
		if req.Context().Err() != nil {
			return
		}
	}
	r.mu.Lock()
	r.got[i].answered = http.StatusOK
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// snapshot returns copies of what the receiver has seen.
func (r *receiver) snapshot() (got []receipt, bad []string, inflight int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got), slices.Clone(r.bad), r.inflight
}

// waitFor polls cond every 50ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// delivery is the part of a delivery record these tests look at.
type delivery struct {
	ID           string `json:"id"`
	EventID      string `json:"event_id"`
	EventType    string `json:"event_type"`
	Status       string `json:"status"`
	AttemptCount int    `json:"attempt_count"`
	MaxAttempts  int    `json:"max_attempts"`
	LastError    string `json:"last_error"`
	Attempts     []struct {
		Attempt        int    `json:"attempt"`
		ResponseStatus *int   `json:"response_status"`
		Error          string `json:"error"`
	} `json:"attempts"`
}

func listDeliveries(t *testing.T, base, appID, hookID, secret string) []delivery {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/apps/"+appID+"/webhooks/"+hookID+"/deliveries?limit=100", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("list deliveries: %v", err)
	}
	defer resp.Body.Close()
	var out struct{ Deliveries []delivery }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("list deliveries = %d, %v", resp.StatusCode, err)
	}
	return out.Deliveries
}

func readBootstrap(t *testing.T, dir string) server.Bootstrap {
	t.Helper()
	var b server.Bootstrap
	raw, err := os.ReadFile(filepath.Join(dir, "bootstrap.json"))
	if err == nil {
		err = json.Unmarshal(raw, &b)
	}
	if err != nil || b.AppID == "" || b.APISecret == "" {
		t.Fatalf("bootstrap.json = %+v, %v", b, err)
	}
	return b
}

// TestDurabilitySIGKILL kills a real server with SIGKILL right after events
// are committed and again while deliveries are in flight, and shows that
// after a restart every event is delivered with its original envelope id and
// no delivery is left in processing (R-WH-8; checklist 69, 70).
func TestDurabilitySIGKILL(t *testing.T) {
	engines := []struct {
		name string
		env  func(t *testing.T) []string
	}{
		{"sqlite", func(*testing.T) []string { return nil }},
		{"postgres", func(t *testing.T) []string {
			return []string{"GATEHOUSE_DATABASE_URL=" + storetest.EmptyPostgresURL(t)}
		}},
	}
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			testDurability(t, eng.env(t))
		})
	}
	// In parallel with the above, as it also waits for the rescue.
	t.Run("last attempt killed", func(t *testing.T) {
		t.Parallel()
		testLastAttemptKilled(t)
	})
}

func testDurability(t *testing.T, dbEnv []string) {
	const events = 5
	dir := t.TempDir()
	args := []string{"serve", "--dev", "--data-dir", dir, "--addr", "127.0.0.1:0"}
	environ := append([]string{"GATEHOUSE_WEBHOOKS_RETRY_BASE=100ms", "GATEHOUSE_WEBHOOKS_RESCUE_AFTER=16s"}, dbEnv...)
	rcv := newReceiver(t)

	// Phase 1: the receiver is down; events are committed, then the server is
	// killed before any delivery can succeed.
	s1 := startServer(t, args, environ)
	if !strings.Contains(s1.log.String(), "allow_private_targets") {
		t.Errorf("dev start-up log does not announce allow_private_targets:\n%s", s1.log.String())
	}
	b := readBootstrap(t, dir)
	status, body := call(t, "POST", s1.url()+"/v1/apps/"+b.AppID+"/webhooks", b.APISecret,
		fmt.Sprintf(`{"webhook":{"url":%q,"retry_limit":10,"event_types":["user.created"]}}`, rcv.url()))
	hook, _ := body["webhook"].(map[string]any)
	hookID, _ := hook["id"].(string)
	rcv.secret, _ = hook["secret"].(string)
	if status != 200 || hookID == "" || !strings.HasPrefix(rcv.secret, "whsec_") {
		t.Fatalf("create webhook = %d %v", status, body)
	}
	users := map[string]bool{}
	for i := range events {
		status, body := call(t, "POST", s1.url()+"/v1/"+b.AppID+"/users", b.APISecret, fmt.Sprintf(`{"identifier":"kill%d@example.com"}`, i))
		u, _ := body["user"].(map[string]any)
		id, _ := u["id"].(string)
		if status != 200 || id == "" {
			t.Fatalf("create user %d = %d %v", i, status, body)
		}
		users[id] = true
	}
	s1.kill(t)

	// Phase 2: the receiver holds every request open; the server is killed
	// while at least one delivery is in flight.
	rcv.up(t, true)
	s2 := startServer(t, args, environ)
	if !waitFor(30*time.Second, func() bool { _, _, n := rcv.snapshot(); return n >= 1 }) {
		t.Fatalf("no delivery reached the receiver within 30s after restart; log:\n%s", s2.log.String())
	}
	// Give the other deliveries a moment to join (up to the per-endpoint limit of 4).
	waitFor(2*time.Second, func() bool { _, _, n := rcv.snapshot(); return n >= 4 })
	_, _, hung := rcv.snapshot()
	s2.kill(t)
	inFlight := map[string]bool{}
	got, _, _ := rcv.snapshot()
	for _, r := range got {
		inFlight[r.envelopeID] = true
	}
	t.Logf("killed with %d deliveries in flight (%d distinct events seen so far)", hung, len(inFlight))

	// Phase 3: the receiver accepts; every event must arrive and every
	// delivery must end delivered, including those killed mid-flight, which
	// come back only after the rescue delay.
	rcv.accept()
	restarted := time.Now()
	s3 := startServer(t, args, environ)
	var final []delivery
	ok := waitFor(90*time.Second, func() bool {
		final = listDeliveries(t, s3.url(), b.AppID, hookID, b.APISecret)
		if len(final) != events {
			return false
		}
		for _, d := range final {
			if d.Status != "delivered" {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("after %s not every delivery is delivered: %+v\nlog:\n%s", time.Since(restarted).Round(time.Second), final, s3.log.String())
	}
	t.Logf("all %d deliveries delivered %s after the last restart", events, time.Since(restarted).Round(time.Second))
	for _, d := range final {
		// Every attempt shows in the history, including those a kill cut off.
		if len(d.Attempts) != d.AttemptCount {
			t.Errorf("delivery %s: attempt_count %d but %d attempts recorded", d.ID, d.AttemptCount, len(d.Attempts))
		}
	}

	got, bad, _ := rcv.snapshot()
	for _, m := range bad {
		t.Errorf("receiver refused a request: %s", m)
	}
	// The events, as the server recorded them.
	eventIDs := map[string]bool{}
	for _, d := range final {
		if d.EventType != "user.created" || d.AttemptCount < 1 || d.AttemptCount > d.MaxAttempts || d.MaxAttempts != 11 {
			t.Errorf("delivery %s = %+v; want user.created, 1..11 attempts of 11", d.ID, d)
		}
		if n := len(d.Attempts); n == 0 || d.Attempts[n-1].ResponseStatus == nil || *d.Attempts[n-1].ResponseStatus != 200 {
			t.Errorf("delivery %s last recorded attempt = %+v; want a 200", d.ID, d.Attempts)
		}
		eventIDs[d.EventID] = true
	}
	if len(eventIDs) != events {
		t.Errorf("deliveries cover %d distinct events; want %d", len(eventIDs), events)
	}
	// What the receiver saw: each user's event under one envelope id on every
	// attempt, and each event accepted at least once.
	idOfUser := map[string]string{}
	accepted := map[string]int{}
	for _, r := range got {
		if !users[r.userID] {
			t.Errorf("receiver got an event for unknown user %s", r.userID)
		}
		if prev, seen := idOfUser[r.userID]; seen && prev != r.envelopeID {
			t.Errorf("user %s arrived under envelope ids %s and %s; want one id on every attempt", r.userID, prev, r.envelopeID)
		}
		idOfUser[r.userID] = r.envelopeID
		if !eventIDs[r.envelopeID] {
			t.Errorf("receiver got envelope id %s, which no delivery records", r.envelopeID)
		}
		if r.answered == http.StatusOK {
			accepted[r.envelopeID]++
		}
	}
	if len(idOfUser) != events || len(accepted) != events {
		t.Errorf("receiver accepted %d distinct events for %d users; want %d", len(accepted), len(idOfUser), events)
	}
	for id := range inFlight {
		if accepted[id] == 0 {
			t.Errorf("event %s, in flight when killed, was never delivered", id)
		}
	}
	total := 0
	for _, n := range accepted {
		total += n
	}
	t.Logf("receiver: %d requests, %d accepted, %d duplicate acceptances (allowed: at-least-once)", len(got), total, total-len(accepted))
}

// testLastAttemptKilled kills the server while the last attempt a delivery
// is allowed (retry_limit 0) is in flight. The attempt got no answer, so after
// the restart the delivery must still end delivered, never stay in processing
// (checklist 70).
func testLastAttemptKilled(t *testing.T) {
	dir := t.TempDir()
	args := []string{"serve", "--dev", "--data-dir", dir, "--addr", "127.0.0.1:0"}
	environ := []string{"GATEHOUSE_WEBHOOKS_RETRY_BASE=100ms", "GATEHOUSE_WEBHOOKS_RESCUE_AFTER=16s"}
	rcv := newReceiver(t)
	rcv.up(t, true)

	s1 := startServer(t, args, environ)
	b := readBootstrap(t, dir)
	hookID := createHook(t, s1.url(), b, rcv, 0)
	if status, body := call(t, "POST", s1.url()+"/v1/"+b.AppID+"/users", b.APISecret, `{"identifier":"last@example.com"}`); status != 200 {
		t.Fatalf("create user = %d %v", status, body)
	}
	if !waitFor(30*time.Second, func() bool { _, _, n := rcv.snapshot(); return n == 1 }) {
		t.Fatalf("the delivery never reached the receiver; log:\n%s", s1.log.String())
	}
	s1.kill(t)
	got, _, _ := rcv.snapshot()
	first := got[0].envelopeID

	rcv.accept()
	restarted := time.Now()
	s2 := startServer(t, args, environ)
	var final []delivery
	// The delivery is retried once it has run for RESCUE_AFTER (plus up to 2 s).
	ok := waitFor(75*time.Second, func() bool {
		final = listDeliveries(t, s2.url(), b.AppID, hookID, b.APISecret)
		return len(final) == 1 && final[0].Status == "delivered"
	})
	if !ok {
		t.Fatalf("%s after the restart, deliveries = %+v; want the one delivery delivered", time.Since(restarted).Round(time.Second), final)
	}
	got, bad, _ := rcv.snapshot()
	if len(bad) != 0 {
		t.Errorf("receiver refused requests: %v", bad)
	}
	for _, r := range got {
		if r.envelopeID != first {
			t.Errorf("envelope id after restart = %s; want %s as before", r.envelopeID, first)
		}
	}
}

// TestKilledWorkRetriedWithinRescueAfter kills a real server while webhook
// deliveries and an SMS are in flight, and further deliveries wait for their
// endpoint's turn, then restarts it once: every one of them must be attempted
// again within webhooks.rescue_after of the kill, plus a few seconds, with no
// second restart. River's own rescue runs only on its leader, which the
// restarted server becomes 10 to 21 s after the kill (when the dead one's
// lease ends), and then every 30 s: its first pass found the work not yet
// rescue_after old, and the next came 30 s later (or only at another restart).
func TestKilledWorkRetriedWithinRescueAfter(t *testing.T) {
	for _, eng := range []struct {
		name string
		env  func(t *testing.T) []string
	}{
		{"sqlite", func(*testing.T) []string { return nil }},
		{"postgres", func(t *testing.T) []string {
			return []string{"GATEHOUSE_DATABASE_URL=" + storetest.EmptyPostgresURL(t)}
		}},
	} {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			testKilledWorkRetried(t, eng.env(t))
		})
	}
}

func testKilledWorkRetried(t *testing.T, dbEnv []string) {
	// Long enough that River's first pass on the new leader (at most 21 s
	// after the kill) comes before the work is rescue_after old, as it
	// does with the default of 30 s.
	const rescueAfter = 25 * time.Second
	// What a restart, the rescue's own period (2 s) and a fetch may add.
	const slack = 10 * time.Second
	const users = 6 // 4 attempts in flight (an endpoint's share), 2 waiting their turn
	dir := t.TempDir()
	args := []string{"serve", "--dev", "--data-dir", dir, "--addr", "127.0.0.1:0"}
	sms := newHoldServer(t)
	environ := append([]string{"GATEHOUSE_WEBHOOKS_RETRY_BASE=100ms", "GATEHOUSE_WEBHOOKS_RESCUE_AFTER=" + rescueAfter.String(),
		"GATEHOUSE_SMS_PROVIDER=http", "GATEHOUSE_SMS_HTTP_URL=" + sms.URL}, dbEnv...)
	rcv := newReceiver(t)
	rcv.up(t, true)

	s1 := startServer(t, args, environ)
	b := readBootstrap(t, dir)
	hookID := createHook(t, s1.url(), b, rcv, 10)
	for i := range users {
		if status, body := call(t, "POST", s1.url()+"/v1/"+b.AppID+"/users", b.APISecret, fmt.Sprintf(`{"identifier":"held%d@example.com"}`, i)); status != 200 {
			t.Fatalf("create user %d = %d %v", i, status, body)
		}
	}
	if status, body := call(t, "POST", s1.url()+"/v1/auth/"+b.AppID+"/otps/login", "", `{"identifier":"+14155550142"}`); status != 200 {
		t.Fatalf("send an SMS code = %d %v", status, body)
	}
	if !waitFor(30*time.Second, func() bool { _, _, n := rcv.snapshot(); return n >= 4 && sms.inFlight() >= 1 }) {
		_, _, n := rcv.snapshot()
		t.Fatalf("%d deliveries and %d SMS in flight; want 4 and 1; log:\n%s", n, sms.inFlight(), s1.log.String())
	}
	s1.kill(t)
	killed := time.Now()
	rcv.accept()
	sms.accept()

	s2 := startServer(t, args, environ)
	var final []delivery
	done := func() bool {
		final = listDeliveries(t, s2.url(), b.AppID, hookID, b.APISecret)
		if len(final) < users || sms.answered() == 0 {
			return false
		}
		for _, d := range final {
			if d.Status != "delivered" {
				return false
			}
		}
		return true
	}
	if !waitFor(time.Until(killed.Add(rescueAfter+slack)), done) {
		t.Fatalf("%s after the kill (rescue_after %s): SMS answered %d; deliveries %+v\nlog:\n%s",
			time.Since(killed).Round(time.Second), rescueAfter, sms.answered(), final, s2.log.String())
	}
	t.Logf("everything the killed server held was done %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	if lines := s2.log.Lines("retrying jobs a stopped server left running"); len(lines) == 0 {
		t.Errorf("no log line says the cut-off work is retried; log:\n%s", s2.log.String())
	}
}

// holdServer is an HTTP endpoint (an SMS provider here) that holds every
// request open until accept, and answers 200 after it.
type holdServer struct {
	URL string

	mu       sync.Mutex
	held     int
	ok       int
	accepted chan struct{}
}

func newHoldServer(t *testing.T) *holdServer {
	t.Helper()
	h := &holdServer{accepted: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.held++
		h.mu.Unlock()
		select {
		case <-h.accepted:
		case <-r.Context().Done():
		}
		h.mu.Lock()
		h.held--
		if r.Context().Err() == nil {
			h.ok++
		}
		h.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	h.URL = "http://" + ln.Addr().String() + "/sms"
	return h
}

func (h *holdServer) accept() { close(h.accepted) }

func (h *holdServer) inFlight() int { h.mu.Lock(); defer h.mu.Unlock(); return h.held }

func (h *holdServer) answered() int { h.mu.Lock(); defer h.mu.Unlock(); return h.ok }

// TestWebhookSSRFOutsideDev creates webhooks against a real server outside
// dev mode: non-public, legacy-numeric and plain-http targets are refused
// with 400 and without revealing what a name resolves to (R-WH-9, R-WH-11;
// checklist 65).
func TestWebhookSSRFOutsideDev(t *testing.T) {
	dir := t.TempDir()
	key, err := token.GenerateMasterKey()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"GATEHOUSE_MASTER_KEY=" + key, "GATEHOUSE_DATA_DIR=" + dir}
	runJSON(t, env, "migrate", "up")
	ws := runJSON(t, env, "workspaces", "create", "--name", "SSRF", "--owner-email", "owner@ssrf.test")
	wsID := ws["workspace"].(map[string]any)["id"].(string)
	app := runJSON(t, env, "apps", "create", "--workspace", wsID, "--name", "Shop", "--origin", "https://shop.ssrf.test")
	appID := app["app"].(map[string]any)["id"].(string)
	secret, _ := runJSON(t, env, "secrets", "create", "--app", appID, "--name", "ssrf")["api_secret"].(string)

	srv := startServer(t, []string{"serve", "--addr", "127.0.0.1:0"}, env)
	if strings.Contains(srv.log.String(), "allow_private_targets") {
		t.Errorf("start-up log outside dev announces allow_private_targets:\n%s", srv.log.String())
	}
	create := func(t *testing.T, webhook string) (int, map[string]any) {
		t.Helper()
		return call(t, "POST", srv.url()+"/v1/apps/"+appID+"/webhooks", secret, `{"webhook":`+webhook+`}`)
	}
	// Addresses that must never appear in an error unless the caller wrote them.
	internal := []string{"127.0.0.1", "::1", "169.254.169.254", "10.0.0.5", "100.100.100.200", "fd00:ec2::254", "0.0.0.0"}
	for _, target := range []string{
		"http://example.com/hook",
		"https://127.0.0.1",
		"https://169.254.169.254/latest/meta-data",
		"https://[::1]",
		"https://[::ffff:127.0.0.1]",
		"https://2130706433",
		"https://0x7f.1",
		"https://017700000001",
		"https://127.1",
		"https://localhost",
		"https://10.0.0.5",
		"https://100.100.100.200",
		"https://[fd00:ec2::254]",
		"https://metadata.google.internal",
	} {
		t.Run(target, func(t *testing.T) {
			status, body := create(t, fmt.Sprintf(`{"url":%q}`, target))
			msg, _ := body["error"].(string)
			if status != 400 || body["error_code"] != "invalid_request" || msg == "" {
				t.Fatalf("create webhook %q = %d %v; want 400 invalid_request", target, status, body)
			}
			for _, ip := range internal {
				if strings.Contains(msg, ip) && !strings.Contains(target, ip) {
					t.Errorf("create webhook %q error = %q; reveals %s", target, msg, ip)
				}
			}
		})
	}
	for _, tt := range []struct{ name, webhook string }{
		{"retry_limit -1", `{"url":"https://hooks.example.com/x","retry_limit":-1}`},
		{"retry_limit 11", `{"url":"https://hooks.example.com/x","retry_limit":11}`},
		{"unknown event type", `{"url":"https://hooks.example.com/x","event_types":["user.exploded"]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if status, body := create(t, tt.webhook); status != 400 || body["error"] == nil {
				t.Errorf("create webhook %s = %d %v; want 400", tt.webhook, status, body)
			}
		})
	}
	status, body := call(t, "GET", srv.url()+"/v1/apps/"+appID+"/webhooks", secret, "")
	if list, _ := body["webhooks"].([]any); status != 200 || len(list) != 0 {
		t.Errorf("webhooks after refusals = %d %v; want none stored", status, body)
	}
}

// TestStartupAnnouncesPrivateTargets checks that the start-up log warns
// whenever webhooks may reach private targets, and only then.
func TestStartupAnnouncesPrivateTargets(t *testing.T) {
	key, err := token.GenerateMasterKey()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		dev     bool
		setting string
		want    bool
	}{
		{"dev", true, "", true},
		{"dev with private targets off", true, "false", false},
		{"production", false, "", false},
		{"production with private targets on", false, "true", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0"}
			environ := []string{"GATEHOUSE_MASTER_KEY=" + key}
			if tt.dev {
				args = append(args, "--dev")
			}
			if tt.setting != "" {
				environ = append(environ, "GATEHOUSE_WEBHOOKS_ALLOW_PRIVATE_TARGETS="+tt.setting)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stderr := &servertest.LogBuffer{}
			done := make(chan int, 1)
			go func() { done <- run(ctx, args, environ, io.Discard, stderr) }()
			if !waitFor(30*time.Second, func() bool { return strings.Contains(stderr.String(), `"msg":"gatehouse started"`) }) {
				cancel()
				t.Fatalf("server did not start; log:\n%s", stderr.String())
			}
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("exit = %d; want 0", code)
			}
			if got := strings.Contains(stderr.String(), "allow_private_targets"); got != tt.want {
				t.Errorf("log announces allow_private_targets = %v; want %v; log:\n%s", got, tt.want, stderr.String())
			}
		})
	}
}

// createHook makes rcv the app's webhook endpoint for user.created, with
// retryLimit retries, and returns its id.
func createHook(t *testing.T, base string, b server.Bootstrap, rcv *receiver, retryLimit int) string {
	t.Helper()
	status, body := call(t, "POST", base+"/v1/apps/"+b.AppID+"/webhooks", b.APISecret,
		fmt.Sprintf(`{"webhook":{"url":%q,"retry_limit":%d,"event_types":["user.created"]}}`, rcv.url(), retryLimit))
	hook, _ := body["webhook"].(map[string]any)
	id, _ := hook["id"].(string)
	rcv.secret, _ = hook["secret"].(string)
	if status != 200 || id == "" {
		t.Fatalf("create webhook = %d %v", status, body)
	}
	return id
}
