package server_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"

	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// TestMetricsMove drives a served system over HTTP on each engine (a code
// sign-in with a wrong code first, a refresh, a webhook delivery, a
// rate-limit refusal, an SMS-guard refusal, a key rotation) and reads
// /metrics before and after: each counter moved by what was done. Then
// every metric the Grafana dashboard and the alert rules name exists in
// that scrape, with the labels they select by, and docs/operations.md
// names every gatehouse_ metric.
func TestMetricsMove(t *testing.T) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	limits := servertest.LooseLimits()
	limits.ShortLinkPerIP = ratelimit.Rule{Limit: 1, Period: time.Hour}
	opts := servertest.Options{Serve: true, Limits: &limits, Settings: map[string]string{"GATEHOUSE_METRICS_ADDR": "127.0.0.1:0",
		// A message that fails stays queued (for the backlog's check) until the test ends.
		"GATEHOUSE_MESSAGES_RETRY_BASE": "1m", "GATEHOUSE_MESSAGES_RETRY_MAX": "1h", "GATEHOUSE_MESSAGES_MAX_ATTEMPTS": "10"}}
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		ws, _ := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", func(s *tenant.AppSettings) { s.AllowedIdentifiers = &[]string{"email", "phone"} })
		hook := receiver.URL + "/hook"
		if _, err := sys.Webhooks.Create(ctx, servertest.Operator, app.ID, webhook.Input{URL: &hook}); err != nil {
			t.Fatalf("create webhook endpoint: %v", err)
		}
		before := scrape(t, sys.MetricsURL)

		// A code sign-in: a wrong code, then the right one, then a refresh.
		var sent struct {
			UserID string `json:"user_id"`
		}
		call(t, "POST", sys.URL+"/v1/auth/"+app.ID+"/otps/login", `{"identifier":"ada@example.com"}`, nil, 200, &sent)
		msg, ok := sys.Mail.Last("ada@example.com")
		if !ok || msg.Code == "" {
			t.Fatalf("no code was sent to ada@example.com")
		}
		wrong := "000000"
		if msg.Code == wrong {
			wrong = "111111"
		}
		call(t, "POST", sys.URL+"/v1/auth/"+app.ID+"/otps/verify", `{"otp":"`+wrong+`","user_id":"`+sent.UserID+`"}`, nil, 422, nil)
		var set struct {
			Refresh string `json:"refresh"`
		}
		call(t, "POST", sys.URL+"/v1/auth/"+app.ID+"/otps/verify", `{"otp":"`+msg.Code+`","user_id":"`+sent.UserID+`"}`, nil, 200, &set)
		call(t, "POST", sys.URL+"/v1/auth/"+app.ID+"/tokens/refresh", "", map[string]string{"X-Refresh-Token": set.Refresh}, 200, nil)
		// A fixed line gets no SMS: the guard refuses it.
		call(t, "POST", sys.URL+"/v1/auth/"+app.ID+"/otps/login", `{"identifier":"+442079460123"}`, nil, 400, nil)
		// Two short links from one address, one allowed per hour.
		call(t, "GET", sys.URL+"/m/AAAAAAAAAAAAAAAA", "", nil, 404, nil)
		call(t, "GET", sys.URL+"/m/AAAAAAAAAAAAAAAA", "", nil, 429, nil)
		// A rotation, loaded as a replica loads one made elsewhere.
		if _, err := sys.Tenants.RotateSigningKeys(ctx, servertest.Operator, "ES256"); err != nil {
			t.Fatalf("rotate: %v", err)
		}
		sys.Mail.Settle()

		// Webhook deliveries run in real time: wait for one.
		var after scraped
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			after = scrape(t, sys.MetricsURL)
			if after.value("gatehouse_webhook_deliveries_total", "result", "delivered") > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no webhook delivered within a minute")
			}
		}

		moved := func(name string, want float64, atLeast bool, labels ...string) {
			t.Helper()
			got := after.value(name, labels...) - before.value(name, labels...)
			if got != want && !(atLeast && got >= want) {
				t.Errorf("%s%v moved by %v; want %v", name, labels, got, want)
			}
		}
		moved("gatehouse_signins_total", 1, false, "method", "email_code", "result", "success")
		moved("gatehouse_signins_total", 1, false, "method", "email_code", "result", "invalid")
		moved("gatehouse_token_refreshes_total", 1, false, "result", "success")
		moved("gatehouse_messages_queued_total", 1, false, "channel", "email", "message", "login_code")
		moved("gatehouse_message_sends_total", 1, false, "channel", "email", "provider", "custom", "result", "sent")
		moved("gatehouse_message_send_duration_seconds_count", 1, false, "channel", "email", "provider", "custom")
		moved("gatehouse_message_queue_wait_seconds_count", 1, false, "channel", "email", "try", "direct")
		moved("gatehouse_webhook_deliveries_total", 1, true, "result", "delivered")
		moved("gatehouse_webhook_delivery_duration_seconds_count", 1, true, "result", "delivered")
		moved("gatehouse_sms_guard_refusals_total", 1, false, "reason", "phone_type_not_allowed")
		moved("gatehouse_ratelimit_refusals_total", 1, false, "rule", "short_link_per_ip")
		moved("gatehouse_signing_key_rotations_total", 1, false, "alg", "ES256")
		if d, ok := after.sample("gatehouse_message_queue_depth"); !ok || d != 0 {
			t.Errorf("gatehouse_message_queue_depth = %v (%v); want 0 once the queue settled", d, ok)
		}
		if _, ok := after.sample("gatehouse_message_queue_oldest_age_seconds"); !ok {
			t.Errorf("gatehouse_message_queue_oldest_age_seconds is not served")
		}
		if n, ok := after.sample("gatehouse_db_pool_max_connections"); !ok || n < 1 {
			t.Errorf("gatehouse_db_pool_max_connections = %v (%v); want at least 1", n, ok)
		}
		for name, f := range after.families {
			if strings.HasPrefix(name, "gatehouse_") && len(strings.Fields(f.help)) < 3 {
				t.Errorf("%s has no help text worth the name: %q", name, f.help)
			}
		}

		checkNamedMetrics(t, after)

		// The provider fails: the message stays queued, and the backlog
		// shows it and its age (by the queue's clock, real time).
		sys.Mail.Fail(errors.New("provider down"))
		defer sys.Mail.Fail(nil)
		call(t, "POST", sys.URL+"/v1/auth/"+app.ID+"/otps/login", `{"identifier":"bob@example.com"}`, nil, 200, nil)
		failing := []string{"channel", "email", "provider", "custom", "result", "temporary_failure"}
		for deadline := time.Now().Add(30 * time.Second); scrape(t, sys.MetricsURL).value("gatehouse_message_sends_total", failing...) == after.value("gatehouse_message_sends_total", failing...); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the failing provider was not called within 30 s")
			}
		}
		late := scrape(t, sys.MetricsURL)
		if d, _ := late.sample("gatehouse_message_queue_depth"); d != 1 {
			t.Errorf("gatehouse_message_queue_depth = %v with one message failing; want 1", d)
		}
		if age, _ := late.sample("gatehouse_message_queue_oldest_age_seconds"); age <= 0 || age > 60 {
			t.Errorf("gatehouse_message_queue_oldest_age_seconds = %v, moments after the message was queued; want above 0 and below a minute", age)
		}
	})
}

// checkNamedMetrics fails for a metric or label the dashboard or the alert
// rules use that the scrape does not have, and for a gatehouse_ metric
// docs/operations.md does not name.
func checkNamedMetrics(t *testing.T, s scraped) {
	t.Helper()
	var exprs []string
	raw, err := os.ReadFile("../../docs/monitoring/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	exprs = append(exprs, queries(dash)...)
	raw, err = os.ReadFile("../../docs/monitoring/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := yaml.Parser().Unmarshal(raw)
	if err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	alerts := queries(rules)
	if len(alerts) < 6 {
		t.Fatalf("alerts.yaml has %d expressions; want the six alerts at least", len(alerts))
	}
	exprs = append(exprs, alerts...)
	if len(exprs) < 30 {
		t.Fatalf("found %d expressions in the dashboard and alerts; the check would prove little", len(exprs))
	}

	metricName := regexp.MustCompile(`\b(?:gatehouse|go|process)_[a-z0-9_]+\b|\bup\b`)
	selector := regexp.MustCompile(`\b((?:gatehouse|go|process)_[a-z0-9_]+)\{([^}]*)\}`)
	matcher := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	grouping := regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	// Labels Prometheus adds to every series (job, instance) or that
	// histograms have (le) are not the server's to serve.
	targetLabel := func(l string) bool { return l == "job" || l == "instance" || l == "le" }
	named := map[string]bool{}
	for _, e := range exprs {
		var inExpr []string
		for _, name := range metricName.FindAllString(e, -1) {
			if name == "up" { // Prometheus's own, per target
				continue
			}
			inExpr = append(inExpr, name)
			named[name] = true
			if !s.has(name) {
				t.Errorf("%q names %s, which /metrics does not serve", e, name)
			}
		}
		for _, m := range selector.FindAllStringSubmatch(e, -1) {
			for _, l := range matcher.FindAllStringSubmatch(m[2], -1) {
				if !targetLabel(l[1]) && !s.hasLabel(m[1], l[1]) {
					t.Errorf("%q selects %s by label %s, which it does not have", e, m[1], l[1])
				}
			}
		}
		for _, g := range grouping.FindAllStringSubmatch(e, -1) {
			for _, l := range strings.Split(g[1], ",") {
				l = strings.TrimSpace(l)
				if l == "" || targetLabel(l) {
					continue
				}
				if !slices.ContainsFunc(inExpr, func(name string) bool { return s.hasLabel(name, l) }) {
					t.Errorf("%q groups by %s, a label none of its metrics has", e, l)
				}
			}
		}
	}
	promtoolCheck(t, dash, raw)
	ops, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range s.families {
		if strings.HasPrefix(name, "gatehouse_") && !strings.Contains(string(ops), "`"+name+"`") {
			t.Errorf("docs/operations.md does not name %s", name)
		}
		if strings.HasPrefix(name, "gatehouse_") && !named[name] && !named[name+"_bucket"] {
			t.Logf("note: no panel or alert uses %s", name)
		}
	}
}

// promtoolCheck parses the alert rules and every dashboard query with
// Prometheus' own parser (promtool, from Debian's prometheus package), as
// recording rules with Grafana's variables filled in. Without promtool it
// says so, and fails in CI, which installs it.
func promtoolCheck(t *testing.T, dash any, alerts []byte) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Errorf("promtool is not installed: CI (.ci/run) installs it to parse the alert rules and dashboard queries")
		}
		t.Logf("promtool not installed: the PromQL is not parsed")
		return
	}
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("groups:\n- name: dashboard\n  rules:\n")
	for i, q := range queries(dash) {
		if strings.HasPrefix(q, "label_values(") {
			continue // Grafana's, not PromQL
		}
		q = strings.NewReplacer("$__rate_interval", "5m", "$job", "gatehouse").Replace(q)
		quoted, _ := json.Marshal(q)
		fmt.Fprintf(&b, "  - record: dashboard:q%d\n    expr: %s\n", i, quoted)
	}
	files := map[string][]byte{"alerts.yaml": alerts, "dashboard.yaml": []byte(b.String())}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
			t.Errorf("promtool check rules %s: %v\n%s", name, err, out)
		}
	}
}

// queries collects the PromQL of a Grafana dashboard (targets' expr,
// variables' query and definition) or of a Prometheus rule file (expr).
func queries(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "expr" || k == "definition" || k == "query") {
				out = append(out, s)
				continue
			}
			out = append(out, queries(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, queries(x)...)
		}
	}
	return out
}

// scraped is one read of /metrics in the text format.
type scraped struct {
	families map[string]*family // by the name of the metric family
	samples  map[string][]map[string]string
	values   map[string][]float64
}

type family struct{ help, typ string }

func scrape(t *testing.T, url string) scraped {
	t.Helper()
	res, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d", res.StatusCode)
	}
	s := scraped{families: map[string]*family{}, samples: map[string][]map[string]string{}, values: map[string][]float64{}}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, help, _ := strings.Cut(rest, " ")
			s.family(name).help = help
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			s.family(name).typ = typ
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, value := parseSample(t, line)
		s.samples[name] = append(s.samples[name], labels)
		s.values[name] = append(s.values[name], value)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s scraped) family(name string) *family {
	if s.families[name] == nil {
		s.families[name] = &family{}
	}
	return s.families[name]
}

var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

func parseSample(t *testing.T, line string) (string, map[string]string, float64) {
	t.Helper()
	labels := map[string]string{}
	name, rest := line, ""
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		for _, m := range labelPair.FindAllStringSubmatch(line[i+1:j], -1) {
			labels[m[1]] = m[2]
		}
		name, rest = line[:i], line[j+1:]
	} else {
		name, rest, _ = strings.Cut(line, " ")
	}
	v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
	if err != nil {
		t.Fatalf("sample %q: %v", line, err)
	}
	return name, labels, v
}

// value sums the samples of name whose labels include the pairs given.
func (s scraped) value(name string, pairs ...string) float64 {
	var sum float64
	for i, labels := range s.samples[name] {
		ok := true
		for j := 0; j+1 < len(pairs); j += 2 {
			ok = ok && labels[pairs[j]] == pairs[j+1]
		}
		if ok {
			sum += s.values[name][i]
		}
	}
	return sum
}

// sample is the value of the one sample of name, if served.
func (s scraped) sample(name string) (float64, bool) {
	if len(s.values[name]) == 0 {
		return 0, false
	}
	return s.values[name][0], true
}

// has reports whether name is served, as a sample or a histogram's family.
func (s scraped) has(name string) bool {
	return len(s.samples[name]) > 0 || s.families[name] != nil && s.families[name].typ != "" && len(s.samples[name+"_count"]) > 0
}

// hasLabel reports whether some sample of name (or of its histogram's
// series) has label l.
func (s scraped) hasLabel(name, l string) bool {
	for _, n := range []string{name, name + "_bucket", name + "_count"} {
		for _, labels := range s.samples[n] {
			if _, ok := labels[l]; ok {
				return true
			}
		}
	}
	return false
}

// call sends a request with a JSON body (if any) and headers, checks its
// status and decodes its JSON answer into out (if set).
func call(t *testing.T, method, url, body string, headers map[string]string, want int, out any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s = %d %s; want %d", method, url, res.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
	}
}
