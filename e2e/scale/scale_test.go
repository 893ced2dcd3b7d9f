// Package scale runs the real gatehouse binary as three replicas on one
// PostgreSQL database behind a real HAProxy, drives sign-ins by e-mail
// code, refreshes, passkey ceremonies, webhooks and rate limits through it,
// and proves that the replicas behave as one server (security.md check 76,
// R-REL-5): per-identifier limits and single-use codes and refresh tokens
// hold exactly across replicas; a replica killed with SIGKILL under load
// loses no request beyond those in flight on it; every message of every
// challenge and every webhook event is delivered, without duplicates beyond
// what the killed replica was itself sending. A second test upgrades the
// replicas one by one from the previous release to this build under load
// (docs/versioning.md).
//
// It takes a few minutes, so it runs only when GATEHOUSE_SCALE_TEST=1:
//
//	GATEHOUSE_SCALE_TEST=1 go test -count=1 -v -timeout 8m ./e2e/scale    # .ci/run
//
// It needs PostgreSQL (GATEHOUSE_TEST_POSTGRES_URL) and haproxy on PATH
// (Debian: apt-get install haproxy); without them it fails when CI=true and
// skips otherwise.
package scale

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/gatehouse-auth/gatehouse/e2e/gatehousebin"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

const envRun = "GATEHOUSE_SCALE_TEST"

// actors is how many clients run flows at once.
const actors = 8

// bin is this build's binary, built once by TestMain when the tests run.
var bin string

func TestMain(m *testing.M) { os.Exit(gatehousebin.TestMain(m, envRun, &bin)) }

// need skips the test unless asked for, and returns an empty PostgreSQL
// database and haproxy's path; what is missing fails the test in CI.
func need(t *testing.T) (dbURL, haproxy string) {
	t.Helper()
	if os.Getenv(envRun) == "" {
		t.Skipf("%s is not set: the scale-out tests run in .ci/run and on demand (CONTRIBUTING.md)", envRun)
	}
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("haproxy is not on PATH: the scale-out test needs it in CI (apt-get install haproxy)")
		}
		t.Skipf("haproxy is not on PATH: skipping the scale-out test (apt-get install haproxy)")
	}
	// Skipped without GATEHOUSE_TEST_POSTGRES_URL, failed in CI.
	return storetest.EmptyPostgresURL(t), haproxy
}

func TestScaleOut(t *testing.T) {
	dbURL, haproxy := need(t)
	began := time.Now()
	r := newRig(t, dbURL)
	for slot := range replicas {
		r.start(slot, bin) // the first migrates the empty database; the others find nothing to do
	}
	r.startLB(haproxy)
	r.setup(bin)
	t.Logf("3 replicas and HAProxy serving %s after the start", time.Since(began).Round(time.Millisecond))

	l := newLoad(r)
	stop := l.run(actors)
	time.Sleep(2 * time.Second)

	// Under load, the exact checks: their counts would be blurred by a kill.
	checkSendLimit(t, l)
	checkCodeOnce(t, l)
	checkRefreshReuse(t, l)

	// SIGKILL one replica mid-load. The balancer notices by its health
	// checks (2 × 200 ms) and, meanwhile, by refused connections, which it
	// retries on another server (retry-on conn-failure, option redispatch).
	// So that the kill lands inside sends and deliveries, the SMTP server
	// holds its answers to the replica's messages and the webhook receiver
	// its answers to every delivery: what the killed replica held is
	// taken over by the others (messages once due, 30 s after their
	// commit; deliveries after webhooks.rescue_after, 16 s).
	const killed = 1
	time.Sleep(2 * time.Second)
	r.mail.gate.hold(true, killed)
	r.hooks.gate.hold(true, -1)
	// Each replica has at most 4 deliveries to one endpoint in flight:
	// with 10 held, every replica holds some.
	heldMail, heldHooks := r.mail.gate.waitHeld(1), r.hooks.gate.waitHeld(2*4+2)
	killAt := time.Now()
	if err := r.replicas[killed].proc.Kill(); err != nil {
		t.Fatalf("replica %d: %v", killed, err)
	}
	killDone := time.Now()
	r.mail.gate.hold(false, killed)
	r.hooks.gate.hold(false, -1)
	t.Logf("replica %d killed (SIGKILL) while it waited for the SMTP server's answer to %d messages and %d webhook deliveries (of all replicas) were held open", killed, heldMail, heldHooks)
	time.Sleep(5 * time.Second)
	stop()
	ranFor := time.Since(began)

	// Settle: what the killed replica held (messages, deliveries) is taken
	// over by the others.
	db := r.db
	settled := settle(t, r, db)
	t.Logf("load ran %s; settled %s later", ranFor.Round(time.Millisecond), settled.Round(time.Millisecond))

	checkRequests(t, l, []outage{{replica: fmt.Sprintf("r%d", killed), from: killAt, to: killDone}})
	checkMessages(t, r, db, []outage{{slot: killed, from: killAt, to: killDone, killed: true}})
	checkWebhooks(t, r, db)
	for _, line := range r.crashes() {
		t.Errorf("a server crashed by itself: %s", line)
	}
	l.mu.Lock()
	t.Logf("flows completed: %v; %d requests; whole test %s", l.flows, len(l.records), time.Since(began).Round(time.Second))
	l.mu.Unlock()
}

// checkSendLimit sends 50 codes to one address at once through the
// balancer (so every replica takes some): exactly the per-identifier limit
// is accepted, as on one server, and exactly that many messages arrive.
func checkSendLimit(t *testing.T, l *load) {
	t.Helper()
	const parallel = 50
	email := "limited@scale.test"
	statuses := make([]int, parallel)
	replicasSeen := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range parallel {
		wg.Go(func() {
			rp, err := l.do(context.Background(), l.r.lb, "send code (limit)", "POST", "/v1/auth/"+l.r.app.id+"/otps/login", nil,
				map[string]any{"identifier": email})
			if err != nil {
				t.Errorf("send %d to %s: %v", i, email, err)
				return
			}
			statuses[i] = rp.status
			mu.Lock()
			replicasSeen[rp.replica]++
			mu.Unlock()
		})
	}
	wg.Wait()
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	if count[http.StatusOK] != sendPerIdentifier || count[http.StatusTooManyRequests] != parallel-sendPerIdentifier {
		t.Errorf("%d parallel sends to one address through the balancer: %v; want %d × 200 and %d × 429 (the limit is %d/10m)",
			parallel, count, sendPerIdentifier, parallel-sendPerIdentifier, sendPerIdentifier)
	}
	if len(replicasSeen) != replicas {
		t.Errorf("the parallel sends were answered by %v; want all %d replicas", replicasSeen, replicas)
	}
	// Each accepted send made a challenge, superseding the one before; the
	// messages are checked with all the others.
	if d := challenges(t, l.r.db)[email]; d.all != sendPerIdentifier {
		t.Errorf("the database holds %d challenges for %s; want one per accepted send, %d", d.all, email, sendPerIdentifier)
	}
	t.Logf("send limit: %d parallel sends through the balancer (answered by %v): %v", parallel, replicasSeen, count)
}

// checkCodeOnce verifies one right code with 10 requests to each replica
// at once, bypassing the balancer: exactly one signs in.
func checkCodeOnce(t *testing.T, l *load) {
	t.Helper()
	email := "once@scale.test"
	rp, err := l.do(context.Background(), l.r.lb, "send code", "POST", "/v1/auth/"+l.r.app.id+"/otps/login", nil, map[string]any{"identifier": email})
	if err != nil || rp.status != http.StatusOK {
		t.Fatalf("send code to %s = %d %s %v", email, rp.status, rp.raw, err)
	}
	user := str(rp.body, "user_id")
	code, ok := l.r.mail.code(context.Background(), email, nil, 30*time.Second)
	if !ok {
		t.Fatalf("no code reached %s in 30s", email)
	}
	const each = 10
	statuses := make([]int, replicas*each)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() {
			rp, err := l.do(context.Background(), l.r.replicaURL(i%replicas), "verify code (once)", "POST", "/v1/auth/"+l.r.app.id+"/otps/verify", nil,
				map[string]any{"otp": code, "user_id": user})
			if err != nil {
				t.Errorf("verify %d: %v", i, err)
				return
			}
			statuses[i] = rp.status
		})
	}
	wg.Wait()
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	if count[http.StatusOK] != 1 {
		t.Errorf("one code verified %d times at once, %d through each replica: %v; want exactly one 200", replicas*each, each, count)
	}
	t.Logf("single use: %d parallel verifications of one code on %d replicas: %v", replicas*each, replicas, count)
}

// checkRefreshReuse rotates a refresh token on one replica, presents the
// same token on the two others within the grace window (the same
// successor, as on one server) and again after it: reuse, which ends the
// session everywhere.
func checkRefreshReuse(t *testing.T, l *load) {
	t.Helper()
	ctx := context.Background()
	tk, err := l.signIn(ctx, l.r.lb, l.r.lb, "reuse@scale.test")
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
	next, err := l.refresh(ctx, l.r.replicaURL(0), tk)
	if err != nil {
		t.Fatalf("refresh on replica 0: %v", err)
	}
	path := "/v1/auth/" + l.r.app.id + "/tokens/refresh"
	for slot := 1; slot < replicas; slot++ {
		rp, err := l.do(ctx, l.r.replicaURL(slot), "refresh (grace)", "POST", path, map[string]string{"X-Refresh-Token": tk.refresh}, nil)
		if err != nil || rp.status != http.StatusOK || jti(str(rp.body, "refresh")) != jti(next.refresh) {
			t.Errorf("the rotated token again on replica %d within the grace window = %d %.200s; want 200 with the same successor", slot, rp.status, rp.raw)
		}
	}
	time.Sleep(refreshGrace + 500*time.Millisecond)
	rp, err := l.do(ctx, l.r.replicaURL(2), "refresh (reuse)", "POST", path, map[string]string{"X-Refresh-Token": tk.refresh}, nil)
	if err != nil || rp.status != http.StatusUnauthorized {
		t.Errorf("the rotated token on replica 2 after the grace window = %d %.200s; want 401 (reuse)", rp.status, rp.raw)
	}
	rp, err = l.do(ctx, l.r.replicaURL(1), "refresh (revoked)", "POST", path, map[string]string{"X-Refresh-Token": next.refresh}, nil)
	if err != nil || rp.status != http.StatusUnauthorized {
		t.Errorf("the successor on replica 1 after the reuse = %d %.200s; want 401: the reuse ended the session", rp.status, rp.raw)
	}
	rp, err = l.do(ctx, l.r.replicaURL(0), "current user (revoked)", "GET", "/v1/auth/"+l.r.app.id+"/current_user", map[string]string{"X-Authorization": next.access}, nil)
	if err != nil || rp.status != http.StatusUnauthorized {
		t.Errorf("current_user with the session's access token on replica 0 after the reuse = %d %.200s; want 401", rp.status, rp.raw)
	}
}

// outage is a replica going away: killed (SIGKILL) or stopped (SIGTERM),
// between from and to (when the signal was sent and when it had exited).
type outage struct {
	replica  string // as X-Replica names it
	slot     int
	from, to time.Time
	killed   bool
}

// checkRequests bounds the lost requests: each one must have been in
// flight through the balancer while a replica went away (from its signal
// until it had exited, and a moment after: the balancer learns a moment
// after the process exited that its idle keep-alive connections are gone,
// and a request it sends on one meanwhile is lost too), on that replica
// when the balancer's answer (a 502) names it; and there can be no more of
// them than requests were in flight then. A request the balancer ends by
// closing the client's connection instead (it does so when a reused
// connection to the server breaks, so that clients retry, and logs
// nothing) names no replica: only its time places it. Every other request
// got a real answer (the flows check which).
func checkRequests(t *testing.T, l *load, outages []outage) (lost int) {
	t.Helper()
	const noticed = 250 * time.Millisecond
	records := l.snapshot()
	for _, rec := range records {
		if !rec.lost {
			continue
		}
		lost++
		t.Logf("lost: %q %s–%s, replica %q: %s", rec.what, rec.start.Format("15:04:05.000"), rec.end.Format("15:04:05.000"), rec.replica, rec.detail)
		i := slices.IndexFunc(outages, func(o outage) bool {
			return rec.start.Before(o.to.Add(noticed)) && rec.end.After(o.from) && (rec.replica == "" || rec.replica == o.replica)
		})
		if i < 0 {
			t.Errorf("request %q (%s–%s, replica %q) got no answer outside any replica's going away: %s",
				rec.what, rec.start.Format("15:04:05.000"), rec.end.Format("15:04:05.000"), rec.replica, rec.detail)
		}
	}
	atSignal, during := 0, 0
	for _, rec := range records {
		for _, o := range outages {
			switch {
			case rec.start.Before(o.from) && rec.end.After(o.from):
				atSignal++
			case !rec.start.Before(o.from) && rec.start.Before(o.to.Add(noticed)):
				during++
			}
		}
	}
	bound := atSignal + during
	if lost > bound {
		t.Errorf("%d requests lost; at most %d were in flight while the replicas went away", lost, bound)
	}
	l.mu.Lock()
	for _, p := range l.problems {
		t.Errorf("workload: %s", p)
	}
	l.mu.Unlock()
	t.Logf("requests: %d, lost %d (bound: %d in flight through the balancer at the signals, %d more begun before the balancer noticed)", len(records), lost, atSignal, during)
	return lost
}

func openDB(t *testing.T, dbURL string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(2)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// due counts the e-mail code challenges in the database per recipient:
// all of them, and those whose message must have been sent. A challenge
// superseded by a newer one for the same user before its message went out
// is not sent (its code would no longer work), so only the others must
// have arrived.
type due struct{ all, must int }

func challenges(t *testing.T, db *sql.DB) map[string]due {
	t.Helper()
	rows, err := db.Query(`SELECT lower(recipient), COUNT(*), COUNT(*) FILTER (WHERE status <> 'superseded')
		FROM challenges WHERE method = 'email_otp' GROUP BY lower(recipient)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]due{}
	for rows.Next() {
		var to string
		var d due
		if err := rows.Scan(&to, &d.all, &d.must); err != nil {
			t.Fatal(err)
		}
		out[to] = d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// pending says what is not yet settled: e-mail challenges whose message
// has not arrived, webhook deliveries not yet delivered.
func pending(t *testing.T, r *rig, db *sql.DB) []string {
	t.Helper()
	var out []string
	codes := map[string]map[string]bool{}
	for _, m := range r.mail.all() {
		if m.code == "" {
			continue
		}
		if codes[m.to] == nil {
			codes[m.to] = map[string]bool{}
		}
		codes[m.to][m.code] = true
	}
	missing := 0
	for to, d := range challenges(t, db) {
		if len(codes[to]) < d.must {
			missing += d.must - len(codes[to])
		}
	}
	if missing > 0 {
		out = append(out, fmt.Sprintf("%d messages not arrived", missing))
	}
	var undelivered int
	if err := db.QueryRow(`SELECT COUNT(*) FROM webhook_deliveries WHERE status <> 'delivered'`).Scan(&undelivered); err != nil {
		t.Fatal(err)
	}
	if undelivered > 0 {
		out = append(out, fmt.Sprintf("%d webhook deliveries not delivered", undelivered))
	}
	return out
}

// settle waits until every message and webhook delivery has arrived.
func settle(t *testing.T, r *rig, db *sql.DB) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		why := pending(t, r, db)
		if len(why) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("not settled 60s after the load stopped: %s", strings.Join(why, "; "))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// checkMessages holds the mailbox against the database: for every
// recipient, one message per committed challenge that was not superseded
// (each challenge has its own code), and no message twice, except as
// explained below.
//
// A message is sent again only when the process that sent it stopped
// between the provider's acceptance and recording the send (this build:
// deleting its queued_messages row, batched within 20 ms; the previous
// release: completing its queue job). The message is then still due in the
// database, and another replica sends it (once the row's lease of 30 s, or
// the job's webhooks.rescue_after, has passed). A graceful stop records its
// sends before it exits, so only a SIGKILL can leave one. Hence a duplicate
// is allowed when, and only when, its first copy came in on the killed
// replica's SMTP port (each slot has its own), its SMTP transaction had
// begun before the kill signal, and every later copy came from another
// slot after the kill. And there can be no more such messages than the
// killed replica had sends it might not have recorded: its SMTP
// transactions that began before the kill and ended less than 16 s before
// it (more than either release leaves between a send and its record, so
// the bound over-counts rather than under-counts) — checked too.
func checkMessages(t *testing.T, r *rig, db *sql.DB, outages []outage) {
	t.Helper()
	// A message is its recipient's code, or for a notice (a passkey was
	// added: one per user here) its subject.
	type key struct{ to, code, subject string }
	copies := map[key][]mail{}
	perTo := map[string]map[string]bool{}
	notices := 0
	for _, m := range r.mail.all() {
		if m.code == "" {
			copies[key{to: m.to, subject: m.subject}] = append(copies[key{to: m.to, subject: m.subject}], m)
			notices++
			continue
		}
		k := key{to: m.to, code: m.code}
		copies[k] = append(copies[k], m)
		if perTo[m.to] == nil {
			perTo[m.to] = map[string]bool{}
		}
		perTo[m.to][m.code] = true
	}
	want := challenges(t, db)
	total := 0
	for to, d := range want {
		total += d.all
		if got := len(perTo[to]); got < d.must || got > d.all {
			t.Errorf("%s: %d distinct codes arrived; the database holds %d e-mail challenges for it, %d not superseded", to, got, d.all, d.must)
		}
	}
	for to := range perTo {
		if want[to].all == 0 {
			t.Errorf("%s: a message arrived for no challenge in the database", to)
		}
	}
	dups := 0
	window := map[int]int{} // killed slot -> sends in flight at the kill
	for _, o := range outages {
		if !o.killed {
			continue
		}
		for _, m := range r.mail.all() {
			if m.slot == o.slot && m.began.Before(o.to) && m.at.After(o.from.Add(-unrecordedFor)) {
				window[o.slot]++
			}
		}
	}
	explained := map[int]int{}
	for k, list := range copies {
		if len(list) == 1 {
			continue
		}
		dups += len(list) - 1
		sort.Slice(list, func(i, j int) bool { return list[i].began.Before(list[j].began) })
		first := list[0]
		i := slices.IndexFunc(outages, func(o outage) bool {
			if !o.killed || first.slot != o.slot || !first.began.Before(o.to) {
				return false
			}
			for _, later := range list[1:] {
				if later.slot == o.slot || later.began.Before(o.from) {
					return false
				}
			}
			return true
		})
		if i < 0 {
			t.Errorf("a message to %s was sent %d times (slots %v), not explained by a killed replica's own send", k.to, len(list), slotsOf(list))
			continue
		}
		explained[outages[i].slot]++
	}
	for slot, n := range explained {
		if n > window[slot] {
			t.Errorf("%d messages sent twice after replica %d was killed; it had only %d sends in flight", n, slot, window[slot])
		}
	}
	t.Logf("messages: %d challenges, %d messages (%d notices), %d sent twice (each explained by a killed replica's own send)", total, len(r.mail.all()), notices, dups)
}

func slotsOf(list []mail) []int {
	var out []int
	for _, m := range list {
		out = append(out, m.slot)
	}
	return out
}

// unrecordedFor is longer than a send can stay unrecorded after the
// provider took it, in either release (see checkMessages).
const unrecordedFor = 16 * time.Second

// checkWebhooks holds the receiver against the database: every event
// arrived with its id (duplicates by id are allowed: deliveries are at
// least once; receivers dedupe by id), and nothing arrived that the
// database does not hold.
func checkWebhooks(t *testing.T, r *rig, db *sql.DB) {
	t.Helper()
	rows, err := db.Query(`SELECT id FROM webhook_events`)
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		events[id] = true
	}
	rows.Close()
	got, bad := r.hooks.received()
	for _, b := range bad {
		t.Errorf("webhook receiver: %s", b)
	}
	missing, dups := 0, 0
	for id := range events {
		if got[id] == 0 {
			missing++
		}
	}
	for id, n := range got {
		if !events[id] {
			t.Errorf("webhook event %s arrived but the database holds no such event", id)
		}
		dups += n - 1
	}
	if missing > 0 {
		t.Errorf("%d of %d webhook events never arrived", missing, len(events))
	}
	if len(events) == 0 {
		t.Error("no webhook event at all")
	}
	t.Logf("webhooks: %d events, all delivered; %d delivered more than once (deduplicated by id)", len(events), dups)
}
