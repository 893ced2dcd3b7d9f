package scale

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/e2e/gatehousebin"
)

// replicas is how many servers run behind the load balancer.
const replicas = 3

// Limits the rate-limit checks hold the replicas to, exactly.
const (
	sendPerIdentifier = 5 // GATEHOUSE_RATELIMIT_SEND_PER_IDENTIFIER 5/10m
	refreshGrace      = 2 * time.Second
)

// settings are production's, apart from the addresses: PostgreSQL, a
// master key from the environment, e-mail by SMTP, rate limits on in the
// database (shared by the replicas) with a small per-identifier send limit
// the test checks exactly, and webhooks to the test's receiver on
// 127.0.0.1 (allowed for this test only). The other limits are high so the
// workload, all from 127.0.0.1, never meets them.
func settings(dbURL, baseURL string) map[string]string {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return map[string]string{
		"GATEHOUSE_DATABASE_URL":                     dbURL,
		"GATEHOUSE_DATABASE_MAX_CONNS":               "8",
		"GATEHOUSE_MASTER_KEY":                       base64.StdEncoding.EncodeToString(key),
		"GATEHOUSE_BASE_URL":                         baseURL,
		"GATEHOUSE_HTTP_TRUSTED_PROXIES":             "127.0.0.1/32",
		"GATEHOUSE_HTTP_SHUTDOWN_TIMEOUT":            "10s",
		"GATEHOUSE_MAIL_PROVIDER":                    "smtp",
		"GATEHOUSE_MAIL_FROM":                        "Gatehouse <auth@scale.test>",
		"GATEHOUSE_SMTP_HOST":                        "127.0.0.1",
		"GATEHOUSE_SMTP_TLS":                         "none",
		"GATEHOUSE_RATELIMIT_BACKEND":                "database",
		"GATEHOUSE_RATELIMIT_SEND_PER_IDENTIFIER":    fmt.Sprintf("%d/10m", sendPerIdentifier),
		"GATEHOUSE_RATELIMIT_SEND_PER_IP":            "100000/10m",
		"GATEHOUSE_RATELIMIT_VERIFY_PER_IP":          "100000/10m",
		"GATEHOUSE_RATELIMIT_SHORT_LINK_PER_IP":      "100000/10m",
		"GATEHOUSE_RATELIMIT_LOOKUP_PER_IP":          "100000/10m", // passkey sign-in by identifier
		"GATEHOUSE_RATELIMIT_CHALLENGE_PER_IP":       "100000/10m",
		"GATEHOUSE_RATELIMIT_CODE_FAILURES_PER_HOUR": "0",
		"GATEHOUSE_TOKENS_REFRESH_GRACE":             refreshGrace.String(),
		"GATEHOUSE_WEBHOOKS_ALLOW_PRIVATE_TARGETS":   "true",
		"GATEHOUSE_WEBHOOKS_RETRY_BASE":              "100ms",
		"GATEHOUSE_WEBHOOKS_RESCUE_AFTER":            "16s", // the shortest: deliveries a killed replica held are taken over sooner
	}
}

// replica is one server behind the load balancer, in a fixed slot: the
// slot's HTTP port (the balancer's server line) and SMTP port (so the mail
// receiver knows which slot sent each message) outlive its processes.
type replica struct {
	slot int
	bin  string
	proc *gatehousebin.Proc
}

// rig is the whole setup: PostgreSQL, the replicas, HAProxy in front, the
// mail and webhook receivers, and the app the workload signs in to.
type rig struct {
	t        *testing.T
	dbURL    string
	db       *sql.DB // the test's own connection, to read what the servers stored
	env      map[string]string
	ports    [replicas]int
	lbPort   int
	lb       string // http://127.0.0.1:lbPort
	mail     *mailbox
	hooks    *hookReceiver
	replicas [replicas]*replica
	haproxy  *exec.Cmd

	mu  sync.Mutex
	all []*gatehousebin.Proc
	dir string
	app app
}

// app is what the command line made.
type app struct {
	workspace, id, secret, origin string
}

func newRig(t *testing.T, dbURL string) *rig {
	t.Helper()
	r := &rig{t: t, dbURL: dbURL, dir: t.TempDir()}
	for i := range r.ports {
		r.ports[i] = freePort(t)
	}
	r.lbPort = freePort(t)
	r.lb = fmt.Sprintf("http://127.0.0.1:%d", r.lbPort)
	r.env = settings(dbURL, r.lb)
	r.db = openDB(t, dbURL)
	r.mail = newMailbox(t)
	r.hooks = newHookReceiver(t)
	t.Cleanup(func() {
		r.mu.Lock()
		all := append([]*gatehousebin.Proc(nil), r.all...)
		r.mu.Unlock()
		for _, p := range all {
			p.Halt()
		}
	})
	return r
}

// freePort returns a port nothing listens on now (the kernel's choice).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// environ is the environment of a process in slot (-1: a command).
func (r *rig) environ(slot int) []string {
	env := maps.Clone(r.env)
	if slot >= 0 {
		env["GATEHOUSE_HTTP_ADDR"] = fmt.Sprintf("127.0.0.1:%d", r.ports[slot])
		env["GATEHOUSE_SMTP_PORT"] = strconv.Itoa(r.mail.ports[slot])
	} else {
		env["GATEHOUSE_SMTP_PORT"] = strconv.Itoa(r.mail.ports[0])
	}
	return gatehousebin.Environ(env)
}

// start runs bin in slot and waits until it serves.
func (r *rig) start(slot int, bin string) *replica {
	r.t.Helper()
	p, err := gatehousebin.Start(bin, []string{"serve"}, r.environ(slot), nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.all = append(r.all, p)
	r.mu.Unlock()
	if err := p.WaitReady(90 * time.Second); err != nil {
		r.t.Fatalf("replica %d (%s): %v", slot, bin, err)
	}
	rep := &replica{slot: slot, bin: bin, proc: p}
	r.replicas[slot] = rep
	return rep
}

// run runs a command of bin with the servers' settings and decodes its JSON.
func (r *rig) run(bin string, out any, args ...string) {
	r.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = r.environ(-1)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err == nil && out != nil {
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		r.t.Fatalf("gatehouse %s: %v\n%s\n%s", strings.Join(args, " "), err, raw, stderr.Bytes())
	}
}

// setup makes the workspace, an app that signs in by e-mail code, its API
// secret and a webhook endpoint for every event, with bin's command line
// and through the load balancer.
func (r *rig) setup(bin string) {
	r.t.Helper()
	var ws struct {
		Workspace struct{ ID string } `json:"workspace"`
	}
	r.run(bin, &ws, "workspaces", "create", "--name", "Scale", "--owner-email", "owner@scale.test")
	r.app = app{workspace: ws.Workspace.ID, origin: "https://app.scale.test"}
	var a struct {
		App struct{ ID string } `json:"app"`
	}
	r.run(bin, &a, "apps", "create", "--workspace", r.app.workspace, "--name", "Scale", "--origin", r.app.origin)
	r.app.id = a.App.ID
	r.run(bin, nil, "apps", "update", r.app.id, "--email-auth-type", "otp")
	var sec struct {
		APISecret string `json:"api_secret"`
	}
	r.run(bin, &sec, "secrets", "create", "--app", r.app.id, "--name", "scale")
	r.app.secret = sec.APISecret
	st, body := r.call("POST", r.lb+"/v1/apps/"+r.app.id+"/webhooks", "Bearer "+r.app.secret,
		map[string]any{"webhook": map[string]any{"url": r.hooks.url(), "retry_limit": 10}})
	secret := str(body, "webhook", "secret")
	if st != http.StatusOK || !strings.HasPrefix(secret, "whsec_") {
		r.t.Fatalf("create webhook = %d %v", st, body)
	}
	r.hooks.setSecret(secret)
}

// call makes one request outside the workload's accounting.
func (r *rig) call(method, url, auth string, body any) (int, map[string]any) {
	r.t.Helper()
	var rd io.Reader = http.NoBody
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// replicaURL is the base URL of slot's server, bypassing the balancer.
func (r *rig) replicaURL(slot int) string {
	return fmt.Sprintf("http://127.0.0.1:%d", r.ports[slot])
}

// haproxyConfig balances round robin over the slots, checks /healthz every
// 200 ms, and retries a request on another server only when the connection
// to the first could not be made (retry-on conn-failure; option redispatch
// picks another server for the retry): a request that may have reached a
// server is never sent twice. X-Replica names the server that answered, or
// the one the balancer gave up on when the balancer answers itself (502,
// 503), so the test can tell which replica a failure belongs to.
func (r *rig) haproxyConfig() string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
	maxconn 2000
	stats socket %s mode 600 level admin

defaults
	mode http
	timeout connect 1s
	timeout client 60s
	timeout server 60s
	timeout queue 10s
	retries 3
	retry-on conn-failure
	option redispatch
	option forwardfor

frontend api
	bind 127.0.0.1:%d
	default_backend gatehouse
	http-after-response set-header X-Replica %%s

backend gatehouse
	balance roundrobin
	option httpchk GET /healthz
	http-check expect status 200
	default-server check inter 200ms fall 2 rise 2
`, r.socket(), r.lbPort)
	for i, port := range r.ports {
		fmt.Fprintf(&b, "\tserver r%d 127.0.0.1:%d\n", i, port)
	}
	return b.String()
}

// socket is the path of HAProxy's runtime API.
func (r *rig) socket() string { return filepath.Join(r.dir, "haproxy.sock") }

// haproxyCmd runs one command of HAProxy's runtime API and returns its answer.
func (r *rig) haproxyCmd(cmd string) string {
	r.t.Helper()
	c, err := net.Dial("unix", r.socket())
	if err != nil {
		r.t.Fatalf("HAProxy runtime API: %v", err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, cmd+"\n"); err != nil {
		r.t.Fatalf("HAProxy runtime API: %v", err)
	}
	out, err := io.ReadAll(c)
	if err != nil {
		r.t.Fatalf("HAProxy runtime API: %s: %v", cmd, err)
	}
	return string(out)
}

// setServer sets slot's server state in the balancer (ready, drain or
// maint), as an operator's rollout script does.
func (r *rig) setServer(slot int, state string) {
	r.t.Helper()
	if out := strings.TrimSpace(r.haproxyCmd(fmt.Sprintf("set server gatehouse/r%d state %s", slot, state))); out != "" {
		r.t.Fatalf("HAProxy: set server gatehouse/r%d state %s: %s", slot, state, out)
	}
}

// sessions is how many requests HAProxy has in flight on slot's server
// (show stat's scur).
func (r *rig) sessions(slot int) int {
	r.t.Helper()
	raw := r.haproxyCmd("show stat")
	var header []string
	for _, line := range strings.Split(raw, "\n") {
		if h, ok := strings.CutPrefix(line, "# "); ok {
			header = strings.Split(h, ",")
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 2 || f[0] != "gatehouse" || f[1] != fmt.Sprintf("r%d", slot) {
			continue
		}
		if i := slices.Index(header, "scur"); i >= 0 && i < len(f) {
			n, err := strconv.Atoi(f[i])
			if err == nil {
				return n
			}
		}
	}
	r.t.Fatalf("HAProxy's show stat has no scur for gatehouse/r%d:\n%s", slot, raw)
	return 0
}

// startLB starts HAProxy and waits until it sends requests to every slot.
func (r *rig) startLB(bin string) {
	r.t.Helper()
	cfg := filepath.Join(r.dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(r.haproxyConfig()), 0o600); err != nil {
		r.t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
		r.t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, r.haproxyConfig())
	}
	log, err := os.Create(filepath.Join(r.dir, "haproxy.log"))
	if err != nil {
		r.t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start haproxy: %v", err)
	}
	r.haproxy = cmd
	r.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	})
	seen := map[string]bool{}
	for deadline := time.Now().Add(30 * time.Second); len(seen) < replicas; {
		if time.Now().After(deadline) {
			raw, _ := os.ReadFile(log.Name())
			r.t.Fatalf("HAProxy sent /healthz only to %v in 30s; its log:\n%s", seen, raw)
		}
		resp, err := http.Get(r.lb + "/healthz")
		if err == nil {
			if resp.StatusCode == http.StatusOK {
				seen[resp.Header.Get("X-Replica")] = true
			}
			resp.Body.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// up waits until the balancer's health checks count slot's server in
// again, as seen by requests answered by it.
func (r *rig) up(slot int) {
	r.t.Helper()
	want := fmt.Sprintf("r%d", slot)
	for deadline := time.Now().Add(30 * time.Second); ; {
		for range replicas {
			resp, err := http.Get(r.lb + "/healthz")
			if err == nil {
				resp.Body.Close()
				if resp.Header.Get("X-Replica") == want && resp.StatusCode == http.StatusOK {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the balancer sends nothing to %s 30s after it started", want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// crashes lists every process's own crash lines.
func (r *rig) crashes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for i, p := range r.all {
		for _, line := range p.Crashes() {
			out = append(out, fmt.Sprintf("process %d: %s", i+1, line))
		}
	}
	return out
}

// str digs a string out of a decoded JSON object.
func str(m map[string]any, path ...string) string {
	var cur any = m
	for _, k := range path {
		obj, _ := cur.(map[string]any)
		cur = obj[k]
	}
	s, _ := cur.(string)
	return s
}
