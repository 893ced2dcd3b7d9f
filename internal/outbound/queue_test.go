package outbound_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

var client = signin.Client{IP: "198.51.100.7", UserAgent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0"}

// fixture is a test system with an app and a webhook endpoint that nothing
// delivers to (without Serve no webhook worker runs), so the events the
// send queue causes stay queued for the test to count.
type fixture struct {
	*servertest.System
	app store.App
	ep  webhook.Endpoint
}

func newFixture(t *testing.T, sys *servertest.System) fixture {
	t.Helper()
	ws, _ := sys.Workspace(t, "Acme")
	a := sys.App(t, ws.ID, "Shop", func(s *tenant.AppSettings) {
		s.AllowedIdentifiers = &[]string{"email", "phone"}
	})
	app, err := sys.DB.GetApp(t.Context(), a.ID)
	if err != nil {
		t.Fatalf("GetApp: %v", err)
	}
	u := "http://127.0.0.1:9/hook"
	ep, err := sys.Webhooks.Create(t.Context(), servertest.Operator, app.ID, webhook.Input{URL: &u})
	if err != nil {
		t.Fatalf("Create webhook endpoint: %v", err)
	}
	return fixture{System: sys, app: app, ep: ep}
}

// events counts the events queued for the fixture's endpoint, by type.
func (f fixture) events(t *testing.T) map[string]int {
	t.Helper()
	page, err := f.Webhooks.Deliveries(t.Context(), servertest.Operator, f.app.ID, f.ep.ID, 1, 100)
	if err != nil {
		t.Fatalf("Deliveries: %v", err)
	}
	got := map[string]int{}
	for _, d := range page.Deliveries {
		got[d.EventType]++
	}
	return got
}

// provider is a fake courier whose answer the test decides per call.
type provider struct {
	next   courier.Provider
	mu     sync.Mutex
	calls  int
	answer func(call int, m courier.Message) error // nil error: hand to next
}

func (p *provider) Send(ctx context.Context, m courier.Message) (string, error) {
	p.mu.Lock()
	p.calls++
	err := p.answer(p.calls, m)
	p.mu.Unlock()
	if err != nil {
		return "", err
	}
	return p.next.Send(ctx, m)
}

func (p *provider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

func withProvider(p *provider, settings map[string]string) servertest.Options {
	return servertest.Options{Settings: settings, Courier: func(next courier.Provider) courier.Provider {
		p.next = next
		return p
	}}
}

var (
	unavailable = &courier.SendError{Provider: "fake", Status: 503, Temporary: true, Msg: "service unavailable"}
	rejected    = &courier.SendError{Provider: "fake", Status: 400, Code: "21211", Msg: "invalid 'To' number"}
)

func TestEnqueueCommitsWithTheTransaction(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		f := newFixture(t, sys)
		send := func(tx *store.Tx, to string) error {
			return sys.Outbound.Send(ctx, tx, f.app, outbound.Request{Template: courier.TemplateLoginCode, To: to,
				Vars: courier.Vars{Code: "123456", ExpiresIn: 10 * time.Minute}})
		}
		boom := errors.New("the change failed")
		err := sys.DB.Tx(ctx, func(tx *store.Tx) error {
			if err := send(tx, "rolled@example.com"); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Tx = %v; want the change's error", err)
		}
		if n, err := sys.MessagesUnfinished(ctx, 10); err != nil || n != 0 {
			t.Fatalf("MessagesUnfinished after a rollback = %d, %v; want 0", n, err)
		}
		err = sys.DB.Tx(ctx, func(tx *store.Tx) error {
			return send(tx, "kept@example.com")
		})
		if err != nil {
			t.Fatalf("Tx = %v", err)
		}
		msgs := sys.Mail.Messages()
		if len(msgs) != 1 || msgs[0].To != "kept@example.com" {
			t.Fatalf("sent %d messages (%v); want only the committed one", len(msgs), msgs)
		}
	})
}

// TestOutageThenRecovery: the provider answers 503 for a while, then
// recovers; every code arrives, exactly once, and the answers never waited.
func TestOutageThenRecovery(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	p := &provider{answer: func(call int, m courier.Message) error {
		if down.Load() {
			return unavailable
		}
		return nil
	}}
	opts := withProvider(p, map[string]string{"GATEHOUSE_MESSAGES_MAX_ATTEMPTS": "50", "GATEHOUSE_MESSAGES_RETRY_MAX": "50ms"})
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		down.Store(true)
		f := newFixture(t, sys)
		const n = 12
		codes := map[string]string{} // recipient → the code its challenge took
		for i := range n {
			to := fmt.Sprintf("user%d@example.com", i)
			res, err := sys.SignIn.SendOTP(t.Context(), f.app, to, nil, client)
			if err != nil || !res.Sent {
				t.Fatalf("SendOTP(%s) while the provider is down = %+v, %v; want accepted", to, res, err)
			}
			codes[to] = res.UserID
		}
		// Down until every message has failed at least twice.
		deadline := time.Now().Add(10 * time.Second)
		for p.count() < 2*n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // real time: the workers retry in real time
		}
		if p.count() < 2*n {
			t.Fatalf("the provider saw %d tries; want at least %d while down", p.count(), 2*n)
		}
		down.Store(false)
		got := map[string]int{}
		for _, m := range sys.Mail.Messages() {
			got[m.To]++
			if m.Code == "" {
				t.Errorf("message to %s has no code", m.To)
			}
		}
		for to := range codes {
			if got[to] != 1 {
				t.Errorf("%s got %d messages; want exactly 1", to, got[to])
			}
		}
		if len(got) != n {
			t.Errorf("messages went to %d addresses; want %d", len(got), n)
		}
		// Each code works: the one sent is the one its challenge holds.
		for to, userID := range codes {
			m, _ := sys.Mail.Last(to)
			if _, err := sys.SignIn.VerifyOTP(t.Context(), f.app, userID, m.Code, client); err != nil {
				t.Errorf("VerifyOTP(%s, the code that arrived) = %v", to, err)
			}
		}
		if ev := f.events(t); ev["verification.email.delivery_failed"] != 0 || ev["verification.email.requested"] != n {
			t.Errorf("events = %v; want %d requested and no delivery_failed", ev, n)
		}
	})
}

func TestPermanentFailureFiresOnce(t *testing.T) {
	p := &provider{answer: func(int, courier.Message) error { return rejected }}
	servertest.ForEach(t, withProvider(p, nil), func(t *testing.T, sys *servertest.System) {
		before := p.count()
		f := newFixture(t, sys)
		res, err := sys.SignIn.SendOTP(t.Context(), f.app, "+14155552671", nil, client)
		if err != nil || !res.Sent {
			t.Fatalf("SendOTP = %+v, %v; want accepted for delivery", res, err)
		}
		if msgs := sys.Mail.Messages(); len(msgs) != 0 {
			t.Fatalf("%d messages recorded; want none", len(msgs))
		}
		if got := p.count() - before; got != 1 {
			t.Errorf("the provider was tried %d times; want 1 (a permanent refusal is not retried)", got)
		}
		ev := f.events(t)
		if ev["verification.sms.delivery_failed"] != 1 {
			t.Errorf("events = %v; want verification.sms.delivery_failed once", ev)
		}
		lines := sys.Logs.Lines(`"msg":"message not delivered"`, res.ChallengeID)
		if len(lines) != 1 || !strings.Contains(lines[0], "status 400, code 21211") || strings.Contains(lines[0], "invalid") {
			t.Errorf("log lines = %q; want one naming status and code, never the provider's text", lines)
		}
	})
}

func TestLastAttemptFiresOnce(t *testing.T) {
	p := &provider{answer: func(int, courier.Message) error { return unavailable }}
	servertest.ForEach(t, withProvider(p, nil), func(t *testing.T, sys *servertest.System) {
		before := p.count()
		f := newFixture(t, sys)
		if _, err := sys.SignIn.SendOTP(t.Context(), f.app, "ann@example.com", nil, client); err != nil {
			t.Fatalf("SendOTP = %v", err)
		}
		sys.Mail.Settle()
		if got, want := p.count()-before, sys.Config.Messages.MaxAttempts; got != want {
			t.Errorf("the provider was tried %d times; want %d (messages.max_attempts)", got, want)
		}
		if ev := f.events(t); ev["verification.email.delivery_failed"] != 1 {
			t.Errorf("events = %v; want verification.email.delivery_failed once", ev)
		}
	})
}

// TestExpiredChallengeNotSent: a code whose challenge expired while its
// message waited for a retry is dropped, not sent late.
func TestExpiredChallengeNotSent(t *testing.T) {
	var sys atomic.Pointer[servertest.System]
	p := &provider{answer: func(call int, m courier.Message) error {
		if call == 1 {
			sys.Load().Clock.Advance(11 * time.Minute) // past the code's lifetime
			return unavailable
		}
		return nil
	}}
	for _, kind := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			p.mu.Lock()
			p.calls = 0
			p.mu.Unlock()
			sys.Store(servertest.New(t, kind, withProvider(p, nil)))
			f := newFixture(t, sys.Load())
			if _, err := f.SignIn.SendOTP(t.Context(), f.app, "late@example.com", nil, client); err != nil {
				t.Fatalf("SendOTP = %v", err)
			}
			if msgs := f.Mail.Messages(); len(msgs) != 0 {
				t.Fatalf("%d messages sent; want none after the challenge expired", len(msgs))
			}
			if p.count() != 1 {
				t.Errorf("the provider was tried %d times; want 1", p.count())
			}
			if ev := f.events(t); ev["verification.email.delivery_failed"] != 0 {
				t.Errorf("events = %v; want no delivery_failed for an expired challenge", ev)
			}
			if lines := f.Logs.Lines("message not sent: its challenge is no longer pending"); len(lines) != 1 {
				t.Errorf("log lines = %q; want one", lines)
			}
		})
	}
}

// TestJobsHoldNoSecret reads the message jobs from the database: no code,
// link or address in clear.
func TestJobsHoldNoSecret(t *testing.T) {
	var mu sync.Mutex
	var secrets []string
	p := &provider{answer: func(_ int, m courier.Message) error {
		mu.Lock()
		defer mu.Unlock()
		secrets = append(secrets, m.Code, m.Text)
		if m.Link != "" {
			u, _ := url.Parse(m.Link)
			secrets = append(secrets, m.Link, u.Query().Get("sct_magic"))
		}
		return unavailable
	}}
	// The first try fails and the next is a minute away: the rows stay.
	opts := withProvider(p, map[string]string{"GATEHOUSE_MESSAGES_RETRY_BASE": "1m", "GATEHOUSE_MESSAGES_RETRY_MAX": "1m"})
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		f := newFixture(t, sys)
		before := p.count()
		if _, err := sys.SignIn.SendOTP(t.Context(), f.app, "code@example.com", nil, client); err != nil {
			t.Fatal(err)
		}
		if _, err := sys.SignIn.SendMagicLink(t.Context(), f.app, "link@example.com", nil, false, client); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); p.count() < before+2 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond) // the direct tries run in real time
		}
		rows := jobRows(t, sys.DB)
		if len(rows) != 2 || !strings.Contains(rows[0]+rows[1], "login_code") || !strings.Contains(rows[0]+rows[1], "magic_link") {
			t.Fatalf("queued message rows = %q; want the code's and the link's", rows)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(secrets) < 4 {
			t.Fatalf("the provider saw %d secrets; want the code, the link and their texts", len(secrets))
		}
		for _, row := range rows {
			for _, s := range append(secrets, "code@example.com", "link@example.com") {
				if s != "" && strings.Contains(row, s) {
					t.Errorf("a message job row holds %q in clear: %s", s, row)
				}
			}
		}
	})
}

// TestSMSProviderDown is security check 75 (R-REL-3): the SMS provider
// answers 503; send-OTP answers as usual, verification.sms.delivery_failed
// fires once after the last try, and the service stays healthy.
func TestSMSProviderDown(t *testing.T) {
	var hits atomic.Int32
	sms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"upstream carrier unavailable"}`))
	}))
	defer sms.Close()
	opts := servertest.Options{Serve: true, SettingsCourier: true, Settings: map[string]string{
		"GATEHOUSE_SMS_PROVIDER": "http", "GATEHOUSE_SMS_HTTP_URL": sms.URL, "GATEHOUSE_SMS_TOKEN": "t0k"}}
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		hits.Store(0)
		f := newFixture(t, sys)
		start := time.Now()
		res, err := http.Post(sys.URL+"/v1/auth/"+f.app.ID+"/otps/login", "application/json",
			strings.NewReader(`{"identifier":"+14155552671"}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("POST otps/login with the SMS provider down = %d; want 200 (accepted for delivery)", res.StatusCode)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("the answer took %s; it must not wait for the provider", took)
		}
		sys.Mail.Settle()
		if got := int(hits.Load()); got != sys.Config.Messages.MaxAttempts {
			t.Errorf("the SMS provider was called %d times; want %d", got, sys.Config.Messages.MaxAttempts)
		}
		deadline := time.Now().Add(10 * time.Second)
		var ev map[string]int
		for ev = f.events(t); ev["verification.sms.delivery_failed"] == 0 && time.Now().Before(deadline); ev = f.events(t) {
			time.Sleep(5 * time.Millisecond)
		}
		if ev["verification.sms.delivery_failed"] != 1 {
			t.Errorf("events = %v; want verification.sms.delivery_failed once", ev)
		}
		for _, path := range []string{"/readyz", "/healthz"} {
			r, err := http.Get(sys.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode != http.StatusOK {
				t.Errorf("GET %s with the SMS provider down = %d; want 200", path, r.StatusCode)
			}
		}
	})
}

func storeKinds(t *testing.T) []string { return storetest.Kinds(t) }

// jobRows renders every message job row (arguments, errors, metadata) as
// text, as a database dump would show it.
func jobRows(t *testing.T, db *store.DB) []string {
	t.Helper()
	const q = `SELECT app_id || ' ' || challenge_id || ' ' || version || ' ' || what || ' ' || channel || ' ' || recipient,
		last_error, CAST(sealed AS TEXT) FROM queued_messages ORDER BY id`
	// pgx's rows and database/sql's both iterate with Next and Scan.
	var rows interface {
		Next() bool
		Scan(dest ...any) error
	}
	if pool := db.Pool(); pool != nil {
		r, err := pool.Query(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		rows = r
	} else {
		r, err := db.Writer().QueryContext(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		rows = r
	}
	var out []string
	for rows.Next() {
		var a, e, m *string
		if err := rows.Scan(&a, &e, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, deref(a)+"\t"+deref(e)+"\t"+deref(m))
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestSupersededBeforeFirstTry: a code sent again at once (a double click,
// a retried request) supersedes the first challenge before its message is
// tried; that message is dropped, so the one code that arrives works.
func TestSupersededBeforeFirstTry(t *testing.T) {
	picked, release := make(chan struct{}, 1), make(chan struct{})
	p := &provider{answer: func(_ int, m courier.Message) error {
		if m.To == "blocker@example.com" {
			picked <- struct{}{}
			<-release // holds the only worker
		}
		return nil
	}}
	opts := withProvider(p, map[string]string{"GATEHOUSE_MESSAGES_WORKERS": "1"})
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		f := newFixture(t, sys)
		if _, err := sys.SignIn.SendOTP(t.Context(), f.app, "blocker@example.com", nil, client); err != nil {
			t.Fatal(err)
		}
		select {
		case <-picked:
		case <-time.After(10 * time.Second):
			t.Fatal("the worker did not pick the first message up in 10 s")
		}
		first, err := sys.SignIn.SendOTP(t.Context(), f.app, "ann@example.com", nil, client)
		if err != nil {
			t.Fatal(err)
		}
		second, err := sys.SignIn.SendOTP(t.Context(), f.app, "ann@example.com", nil, client)
		if err != nil || second.ChallengeID == first.ChallengeID {
			t.Fatalf("second SendOTP = %+v, %v; want a new challenge", second, err)
		}
		release <- struct{}{}
		var got []courier.Message
		for _, m := range sys.Mail.Messages() {
			if m.To == "ann@example.com" {
				got = append(got, m)
			}
		}
		if len(got) != 1 {
			t.Fatalf("ann got %d messages; want 1 (the superseded one dropped)", len(got))
		}
		if _, err := sys.SignIn.VerifyOTP(t.Context(), f.app, second.UserID, got[0].Code, client); err != nil {
			t.Errorf("VerifyOTP(the code that arrived) = %v; want it to work", err)
		}
	})
}

// TestQueueWithoutSenderLeavesItToTheSweep: a process that runs no Sender
// (the command line) queues its messages due at once, and a serving
// process's sweep sends them.
func TestQueueWithoutSenderLeavesItToTheSweep(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		f := newFixture(t, sys)
		sealer, _, err := token.FromMasterKey(sys.MasterKey)
		if err != nil {
			t.Fatal(err)
		}
		q := outbound.NewQueue(outbound.QueueDeps{Sealer: sealer, MaxAttempts: 3}) // nobody takes its hand-offs
		err = sys.DB.Tx(ctx, func(tx *store.Tx) error {
			return q.Enqueue(ctx, tx, courier.Message{Channel: courier.ChannelEmail, To: "cli@example.com", Subject: "Hi",
				Text: "hello", AppID: f.app.ID}, outbound.Ref{}, "test")
		})
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := sys.Mail.Last("cli@example.com"); !ok || m.Text != "hello" {
			t.Fatalf("the serving process's sweep sent %+v, %v; want the message", m, ok)
		}
	})
}
