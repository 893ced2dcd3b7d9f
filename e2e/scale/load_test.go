package scale

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/passkey/passkeytest"
)

// The workload: actors that each sign in new users by e-mail code through
// the load balancer, refresh their tokens, add a passkey and sign in with
// it. One request of a flow goes to one replica and the next, round robin,
// to another, so every flow crosses replicas: a code sent by one replica is
// verified by another, a token issued by one is refreshed by the next.
// Every request is recorded with its time and outcome; a request the
// balancer could not get an answer for (a transport error, or the
// balancer's own 502/503/504) is "lost" and ends its flow.

// record is one request the workload made.
type record struct {
	what       string
	start, end time.Time
	status     int    // 0: transport error
	replica    string // X-Replica: the server that answered, or that the balancer gave up on
	lost       bool
	detail     string
}

// errLost ends a flow whose request got no answer from a replica.
var errLost = errors.New("request lost")

// load runs the actors and keeps every record.
type load struct {
	r      *rig
	client *http.Client

	mu       sync.Mutex
	records  []record
	problems []string
	flows    map[string]int // completed flows by kind
	made     atomic.Int64
}

func newLoad(r *rig) *load {
	return &load{r: r, flows: map[string]int{},
		client: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

func (l *load) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
}

// reply is one answer.
type reply struct {
	status  int
	body    map[string]any
	raw     []byte
	replica string
}

// do sends one request to base (the balancer, or a replica directly) and
// records it. It returns errLost when no replica answered.
func (l *load) do(ctx context.Context, base, what, method, path string, header map[string]string, body any) (reply, error) {
	var rd io.Reader = http.NoBody
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0 Safari/537.36")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := record{what: what, start: time.Now()}
	resp, err := l.client.Do(req)
	var out reply
	if err == nil {
		out.raw, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		out.status, out.replica = resp.StatusCode, resp.Header.Get("X-Replica")
	}
	rec.end, rec.status, rec.replica = time.Now(), out.status, out.replica
	if err != nil && ctx.Err() != nil {
		return out, ctx.Err() // the workload stopped: not recorded
	}
	switch {
	case err != nil:
		rec.lost, rec.detail = true, err.Error()
	case out.status == http.StatusBadGateway || out.status == http.StatusGatewayTimeout ||
		out.status == http.StatusServiceUnavailable && !bytes.HasPrefix(out.raw, []byte("{")):
		// The balancer's own answer (an HTML page): the server went away
		// with the request, or none could be reached.
		rec.lost, rec.detail = true, fmt.Sprintf("%d from the balancer: %.100s", out.status, out.raw)
	}
	l.mu.Lock()
	l.records = append(l.records, rec)
	l.mu.Unlock()
	if rec.lost {
		return out, errLost
	}
	_ = json.Unmarshal(out.raw, &out.body)
	return out, nil
}

// tokens is a signed-in session.
type tokens struct {
	user, access, refresh string
}

func tokensOf(rp reply) (tokens, bool) {
	t := tokens{user: str(rp.body, "user_id"), access: str(rp.body, "access"), refresh: str(rp.body, "refresh")}
	return t, t.user != "" && t.access != "" && t.refresh != ""
}

// expect checks an answer's status; a lost request is not a problem here
// (the checks bound them), anything else unexpected is.
func (l *load) expect(rp reply, err error, want int, what string) error {
	if err != nil {
		return err
	}
	if rp.status != want {
		l.problem("%s = %d (from %s) %.300s; want %d", what, rp.status, rp.replica, rp.raw, want)
		return fmt.Errorf("%s: unexpected %d", what, rp.status)
	}
	return nil
}

// signIn sends a code to a new address through base, reads it from the
// mailbox and verifies it through verifyBase.
func (l *load) signIn(ctx context.Context, base, verifyBase, email string) (tokens, error) {
	app := l.r.app.id
	rp, err := l.do(ctx, base, "send code", "POST", "/v1/auth/"+app+"/otps/login", nil, map[string]any{"identifier": email})
	if err := l.expect(rp, err, http.StatusOK, "send code to "+email); err != nil {
		return tokens{}, err
	}
	user := str(rp.body, "user_id")
	// A message the killed replica did not send is sent by another once
	// it is due (this build: 30 s after its commit, and the sweep sleeps
	// at most 2 s; the previous release: webhooks.rescue_after, 16 s here):
	// wait longer than that.
	code, ok := l.r.mail.code(ctx, email, nil, 45*time.Second)
	if !ok && ctx.Err() != nil {
		return tokens{}, ctx.Err()
	}
	if !ok {
		l.problem("no code reached %s within 45s of its send was acknowledged by %s", email, rp.replica)
		return tokens{}, errors.New("no code")
	}
	rp, err = l.do(ctx, verifyBase, "verify code", "POST", "/v1/auth/"+app+"/otps/verify", nil, map[string]any{"otp": code, "user_id": user})
	if err := l.expect(rp, err, http.StatusOK, "verify the code of "+email); err != nil {
		return tokens{}, err
	}
	tk, ok := tokensOf(rp)
	if !ok || tk.user != user {
		l.problem("verify the code of %s answered %.300s", email, rp.raw)
		return tokens{}, errors.New("no tokens")
	}
	return tk, nil
}

// refresh rotates tk's refresh token through base.
func (l *load) refresh(ctx context.Context, base string, tk tokens) (tokens, error) {
	rp, err := l.do(ctx, base, "refresh", "POST", "/v1/auth/"+l.r.app.id+"/tokens/refresh", map[string]string{"X-Refresh-Token": tk.refresh}, nil)
	if err := l.expect(rp, err, http.StatusOK, "refresh"); err != nil {
		return tokens{}, err
	}
	next, ok := tokensOf(rp)
	if !ok || next.user != tk.user || next.refresh == tk.refresh {
		l.problem("refresh answered %.300s", rp.raw)
		return tokens{}, errors.New("bad refresh")
	}
	return next, nil
}

// passkey registers a passkey for tk's user and signs in with it: the
// first half of each ceremony through base, the second through base2 (the
// balancer for both in the workload, where round robin makes them meet
// different replicas).
func (l *load) passkey(ctx context.Context, base, base2, email string, tk tokens) error {
	app := l.r.app.id
	auth := map[string]string{"X-Authorization": tk.access}
	a := passkeytest.New("app.scale.test", l.r.app.origin)
	rp, err := l.do(ctx, base, "passkey register", "POST", "/v1/auth/"+app+"/devices/register", auth, nil)
	if err := l.expect(rp, err, http.StatusOK, "passkey register options"); err != nil {
		return err
	}
	opts, _ := json.Marshal(rp.body["options"])
	created, _, err := a.Create(string(opts))
	if err != nil {
		l.problem("authenticator: %v (options %s)", err, opts)
		return err
	}
	rp, err = l.do(ctx, base2, "passkey finalize", "POST", "/v1/auth/"+app+"/devices/finalize", auth, created)
	if err := l.expect(rp, err, http.StatusOK, "passkey registration"); err != nil {
		return err
	}
	rp, err = l.do(ctx, base, "passkey login", "POST", "/v1/auth/"+app+"/webauthn/login/initialize", nil, map[string]any{"identifier": email})
	if err := l.expect(rp, err, http.StatusOK, "passkey login options"); err != nil {
		return err
	}
	opts, _ = json.Marshal(rp.body["options"])
	assertion, err := a.Get(string(opts))
	if err != nil {
		l.problem("authenticator: %v (options %s)", err, opts)
		return err
	}
	rp, err = l.do(ctx, base2, "passkey verify", "POST", "/v1/auth/"+app+"/webauthn/login/finalize", nil, assertion)
	if err := l.expect(rp, err, http.StatusOK, "passkey sign-in"); err != nil {
		return err
	}
	if got, ok := tokensOf(rp); !ok || got.user != tk.user {
		l.problem("passkey sign-in answered %.300s; want tokens of %s", rp.raw, tk.user)
	}
	return nil
}

// flow is one actor's sign-in: a code, two refreshes, on every third flow
// a passkey.
func (l *load) flow(ctx context.Context, actor int) {
	n := l.made.Add(1)
	email := fmt.Sprintf("user-%d-%d@scale.test", actor, n)
	base := l.r.lb
	tk, err := l.signIn(ctx, base, base, email)
	if err != nil {
		return
	}
	kind := "code"
	for range 2 {
		if tk, err = l.refresh(ctx, base, tk); err != nil {
			return
		}
	}
	if n%3 == 0 {
		if err := l.passkey(ctx, base, base, email, tk); err != nil {
			return
		}
		kind = "code+passkey"
	}
	l.mu.Lock()
	l.flows[kind]++
	l.mu.Unlock()
}

// run starts actors that run flows until the returned stop is called; stop
// waits for them.
func (l *load) run(actors int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for a := range actors {
		wg.Go(func() {
			for ctx.Err() == nil {
				l.flow(ctx, a)
			}
		})
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// snapshot returns the records so far.
func (l *load) snapshot() []record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]record(nil), l.records...)
}

// jti reads a JWT's id without checking it (the server did).
func jti(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Jti string `json:"jti"`
	}
	if err == nil {
		_ = json.Unmarshal(raw, &c)
	}
	return c.Jti
}
