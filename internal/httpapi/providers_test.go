package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// smsGateway is a fake of the `http` provider's endpoint: it takes the JSON
// POST {to, text, from} with the bearer token, and answers status (200 with
// {"id": "gw-N"} by default).
type smsGateway struct {
	*httptest.Server
	status atomic.Int32
	mu     sync.Mutex
	got    []gatewayRequest
}

type gatewayRequest struct {
	To, Text, From, Authorization string
}

func newSMSGateway(t *testing.T) *smsGateway {
	t.Helper()
	g := &smsGateway{}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ To, Text, From string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.Method != http.MethodPost {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		if st := int(g.status.Load()); st != 0 && st != http.StatusOK {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(st)
			_, _ = w.Write([]byte(`{"error":"gateway unavailable"}`))
			return
		}
		g.mu.Lock()
		g.got = append(g.got, gatewayRequest{To: body.To, Text: body.Text, From: body.From, Authorization: r.Header.Get("Authorization")})
		n := len(g.got)
		g.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"gw-` + strconv.Itoa(n) + `"}`))
	}))
	t.Cleanup(g.Close)
	return g
}

func (g *smsGateway) requests() []gatewayRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.got)
}

func TestMessageServiceProviders(t *testing.T) {
	forEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		testMessageServiceProviders(t, envOf(t, sys, "Acme"))
	})
}

// providerOf finds a provider by slug in a GET answer.
func providerOf(t *testing.T, r response, slug string) map[string]any {
	t.Helper()
	list, _ := r.body["message_service_providers"].([]any)
	for _, v := range list {
		if p, _ := v.(map[string]any); p["slug"] == slug {
			return p
		}
	}
	t.Fatalf("no provider %q in %s", slug, r.raw)
	return nil
}

func testMessageServiceProviders(t *testing.T, e *env) {
	ctx := context.Background()
	e.recordEvents(t)
	gw := newSMSGateway(t)
	path := "/v1/apps/" + e.app.ID + "/message_service_providers"
	test := path + "/test"
	key := e.apiKey(t)
	member, err := e.Tenants.AddMember(ctx, servertest.Operator, e.ws.ID, "viewer@acme.test", "Viewer", access.RoleMember)
	if err != nil {
		t.Fatalf("AddMember() error = %v", err)
	}
	memberSecret := e.workspaceSecret(t, e.ws.ID, member.ID)
	other := e.createApp(t, e.ws.ID, "Other", nil)
	otherSecret := e.appSecretFor(t, other.ID)
	// The provider secrets: none may appear in any answer or log line.
	token := "gw-token-5f1c0d9e7a3b4c2d8e6f0a1b"
	password := "short-pw"
	secrets := []string{token, password}
	owner := bearer(e.appSecret)
	noSecret := func(t *testing.T, r response) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(string(r.raw), s) {
				t.Errorf("answer %d %s contains a provider secret", r.status, r.raw)
			}
		}
	}
	// every scenario checks its answer holds no secret.
	run := func(ss []scenario) {
		t.Helper()
		for i := range ss {
			check := ss[i].check
			ss[i].check = func(t *testing.T, r response) {
				noSecret(t, r)
				if check != nil {
					check(t, r)
				}
			}
		}
		runScenarios(t, e, ss)
	}
	errorsOnly := func(t *testing.T, r response) {
		if len(r.body) != 1 || r.str("errors") == "" {
			t.Errorf("body = %s; want exactly {\"errors\": \"...\"} (interface §4.6)", r.raw)
		}
	}
	errorNames := func(field string) func(t *testing.T, r response) {
		return func(t *testing.T, r response) {
			if !strings.HasPrefix(r.str("error"), field+" ") {
				t.Errorf("error = %q; want it to name %s", r.str("error"), field)
			}
		}
	}
	hint := "****" + token[len(token)-4:]
	smsLogin := func(app, phone string) scenario {
		return scenario{method: "POST", path: "/v1/auth/" + app + "/otps/login", body: map[string]any{"identifier": phone}, wantStatus: 200}
	}

	run([]scenario{
		{name: "GET lists every provider type as a slot, none configured", method: "GET", path: path, headers: owner, wantStatus: 200,
			check: func(t *testing.T, r response) {
				var slugs []string
				for _, v := range r.body["message_service_providers"].([]any) {
					p := v.(map[string]any)
					slugs = append(slugs, p["slug"].(string))
					if p["provider_type"] != p["slug"] || p["enabled"] != false || p["configured"] != false ||
						!jsonEqual(p["config"], map[string]any{}) || p["updated_at"] != nil || p["name"] == "" {
						t.Errorf("empty slot = %v; want provider_type = slug, disabled, unconfigured, config {}, updated_at null, a name", p)
					}
				}
				for _, want := range []string{"http", "log", "smtp"} {
					if !slices.Contains(slugs, want) {
						t.Errorf("slugs = %v; want %s among them", slugs, want)
					}
				}
				if slices.Contains(slugs, "outbox") {
					t.Errorf("slugs = %v; outbox is for development mode only", slugs)
				}
				if !jsonEqual(providerOf(t, r, "http")["channels"], []string{"sms"}) {
					t.Errorf("http channels = %v; want [sms]", providerOf(t, r, "http")["channels"])
				}
			}},
		{name: "PATCH without a slug answers {errors}", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"enabled": true}, wantStatus: 400, check: errorsOnly},
		{name: "PATCH with an empty object answers {errors}", method: "PATCH", path: path, headers: owner,
			body: map[string]any{}, wantStatus: 400, check: errorsOnly},
		{name: "PATCH with no body answers {errors}", method: "PATCH", path: path, headers: owner, wantStatus: 400, check: errorsOnly},
		{name: "PATCH with a blank slug answers {errors}", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "  "}, wantStatus: 400, check: errorsOnly},
		{name: "PATCH of an unknown slug", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "pigeon", "enabled": true}, wantStatus: 404, wantCode: "provider_not_found"},
		{name: "the outbox is not offered outside development mode", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "outbox", "enabled": true}, wantStatus: 404, wantCode: "provider_not_found"},
		{name: "two names for different providers", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "http", "provider_type": "smtp"}, wantStatus: 400, wantCode: "invalid_request"},
		{name: "a bad URL names config.url", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "http", "config": map[string]any{"url": "not a url"}}, wantStatus: 400,
			wantCode: "invalid_request", check: errorNames("config.url")},
		{name: "a setting the type lacks names itself", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "http", "config": map[string]any{"url": gw.URL, "colour": "blue"}}, wantStatus: 400,
			wantCode: "invalid_request", check: errorNames("config.colour")},
		{name: "enabling smtp without its host names config.host", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "smtp", "enabled": true}, wantStatus: 400, wantCode: "invalid_request",
			check: errorNames("config.host")},
		{name: "a setting that is an object", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "http", "config": map[string]any{"url": map[string]any{}}}, wantStatus: 400,
			wantCode: "invalid_request", check: errorNames("config.url")},
		{name: "an API key may not change providers", method: "PATCH", path: path, headers: map[string]string{"X-Authorization": key},
			body: map[string]any{"slug": "log", "enabled": true}, wantStatus: 403},
		{name: "a member may not change providers", method: "PATCH", path: path, headers: bearer(memberSecret),
			body: map[string]any{"slug": "log", "enabled": true}, wantStatus: 403},
		{name: "no credentials", method: "PATCH", path: path, body: map[string]any{"slug": "log"}, wantStatus: 401},
		{name: "another app's secret: app_not_found", method: "PATCH", path: path, headers: bearer(otherSecret),
			body: map[string]any{"slug": "log", "enabled": true}, wantStatus: 404, wantCode: "app_not_found"},
		{name: "the http provider is configured (provider_key), its token sealed", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"provider_key": "http", "name": "Acme gateway", "enabled": true,
				"config": map[string]any{"url": gw.URL, "token": token, "from": "ACME"}}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				p := r.obj("message_service_provider")
				if p["slug"] != "http" || p["provider_type"] != "http" || p["name"] != "Acme gateway" || p["enabled"] != true ||
					p["configured"] != true || p["updated_at"] == nil || !jsonEqual(p["channels"], []string{"sms"}) {
					t.Errorf("message_service_provider = %v; want the enabled http provider", p)
				}
				if !jsonEqual(p["config"], map[string]any{"url": gw.URL, "token": hint, "from": "ACME"}) {
					t.Errorf("config = %v; want the token as its hint %q", p["config"], hint)
				}
			}},
		{name: "a short secret is masked whole", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "smtp", "config": map[string]any{"host": "smtp.acme.example", "port": 2525,
				"username": "mailer", "password": password, "from": "Acme <no-reply@acme.example>"}}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				p := r.obj("message_service_provider")
				if p["enabled"] != false || !jsonEqual(p["config"], map[string]any{"host": "smtp.acme.example", "port": "2525",
					"username": "mailer", "password": "********", "from": "Acme <no-reply@acme.example>"}) {
					t.Errorf("smtp = %v; want it stored disabled, the port as text and the password masked whole", p)
				}
			}},
		{name: "GET shows the secrets redacted", method: "GET", path: path, headers: owner, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if got := providerOf(t, r, "http")["config"].(map[string]any)["token"]; got != hint {
					t.Errorf("http token = %v; want %q", got, hint)
				}
				if got := providerOf(t, r, "smtp")["config"].(map[string]any)["password"]; got != "********" {
					t.Errorf("smtp password = %v; want ********", got)
				}
			}},
		{name: "an API key may read them", method: "GET", path: path, headers: map[string]string{"X-Authorization": key}, wantStatus: 200},
		{name: "a member may read them", method: "GET", path: path, headers: bearer(memberSecret), wantStatus: 200},
		{name: "no credentials may not", method: "GET", path: path, wantStatus: 401},
		{name: "another app's secret: app_not_found", method: "GET", path: path, headers: bearer(otherSecret), wantStatus: 404,
			wantCode: "app_not_found"},
		{name: "an app that does not exist: app_not_found", method: "GET", path: "/v1/apps/0190aaaa-0000-7000-8000-000000000000/message_service_providers",
			headers: bearer(e.wsSecret), wantStatus: 404, wantCode: "app_not_found"},
		{name: "a change of one setting keeps the token (merge)", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "http", "config": map[string]any{"from": "ACMECO"}}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if !jsonEqual(r.obj("message_service_provider")["config"], map[string]any{"url": gw.URL, "token": hint, "from": "ACMECO"}) {
					t.Errorf("config = %v; want from changed and the rest kept", r.obj("message_service_provider")["config"])
				}
			}},
		{name: "the hint sent back keeps the token", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "http", "config": map[string]any{"token": hint}}, wantStatus: 200},
	})

	// Routing: the app's SMS go through its gateway, with the stored token;
	// its e-mail (no provider of its own) and the other app's SMS through the
	// server's provider.
	run([]scenario{
		func() scenario {
			s := smsLogin(e.app.ID, "+14155552671")
			s.name = "the app's SMS go through its own provider"
			s.events = []string{"user.created", "verification.sms.requested", "challenge.created"}
			s.check = func(t *testing.T, r response) {
				got := gw.requests()
				if len(got) != 1 || got[0].To != "+14155552671" || got[0].Authorization != "Bearer "+token || got[0].From != "ACMECO" {
					t.Errorf("gateway got %+v; want one SMS to +14155552671 with the stored token and from", got)
				}
				if _, ok := e.Mail.Last("+14155552671"); ok {
					t.Errorf("the server's provider got the app's SMS too")
				}
			}
			return s
		}(),
		{name: "the app's e-mail still goes through the server's provider", method: "POST", path: e.authPath("/otps/login"),
			body: map[string]any{"identifier": "ada@example.com"}, wantStatus: 200,
			events: []string{"user.created", "verification.email.requested", "challenge.created"},
			check: func(t *testing.T, r response) {
				if _, ok := e.Mail.Last("ada@example.com"); !ok {
					t.Errorf("the server's provider got no e-mail for the app")
				}
			}},
		func() scenario {
			s := smsLogin(other.ID, "+14155552672")
			s.name = "another app's SMS go through the server's provider"
			s.check = func(t *testing.T, r response) {
				if _, ok := e.Mail.Last("+14155552672"); !ok || len(gw.requests()) != 1 {
					t.Errorf("the other app's SMS: server provider %v, gateway %d requests; want the server's provider only", ok, len(gw.requests()))
				}
			}
			return s
		}(),
		{name: "enabling log disables http (one provider per channel)", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "log", "enabled": true}, wantStatus: 200},
		{name: "GET shows http disabled", method: "GET", path: path, headers: owner, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if providerOf(t, r, "http")["enabled"] != false || providerOf(t, r, "log")["enabled"] != true {
					t.Errorf("http %v, log %v; want http disabled by enabling log", providerOf(t, r, "http")["enabled"], providerOf(t, r, "log")["enabled"])
				}
			}},
		func() scenario {
			s := smsLogin(e.app.ID, "+14155552673")
			s.name = "the app's SMS now go to the log provider"
			s.events = []string{"user.created", "verification.sms.requested", "challenge.created"}
			s.check = func(t *testing.T, r response) {
				if _, ok := e.Mail.Last("+14155552673"); ok || len(gw.requests()) != 1 {
					t.Errorf("an SMS reached a provider other than log")
				}
			}
			return s
		}(),
		{name: "disabling log", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "log", "enabled": false}, wantStatus: 200},
		func() scenario {
			s := smsLogin(e.app.ID, "+14155552674")
			s.name = "with none enabled the server's provider sends again"
			s.events = []string{"user.created", "verification.sms.requested", "challenge.created"}
			s.check = func(t *testing.T, r response) {
				if _, ok := e.Mail.Last("+14155552674"); !ok {
					t.Errorf("the server's provider got no SMS")
				}
			}
			return s
		}(),
	})

	// The test action: through a provider that is not enabled, with its stored settings.
	tests := 0
	run([]scenario{
		{name: "a test message through the http provider", method: "POST", path: test, headers: owner,
			body: map[string]any{"slug": "http", "to": "+14155552671"}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				tests++
				res := r.obj("test_message")
				if res["delivered"] != true || res["provider_message_id"] != "gw-2" || res["channel"] != "sms" || res["failure"] != nil ||
					strings.Contains(res["to"].(string), "4155552671") {
					t.Errorf("test_message = %v; want delivered as gw-2 on sms, the number masked", res)
				}
				got := gw.requests()
				if len(got) != 2 || !strings.Contains(got[1].Text, "Demo") || got[1].Authorization != "Bearer "+token {
					t.Errorf("gateway got %+v; want a second SMS naming the app, with the token", got)
				}
			}},
	})
	gw.status.Store(http.StatusServiceUnavailable)
	run([]scenario{
		{name: "a test message the gateway refuses", method: "POST", path: test, headers: owner,
			body: map[string]any{"provider": "http", "to": "+14155552671"}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				tests++
				res := r.obj("test_message")
				f, _ := res["failure"].(map[string]any)
				if res["delivered"] != false || res["provider_message_id"] != nil || f == nil || f["temporary"] != true || f["message"] == "" {
					t.Errorf("test_message = %v; want not delivered, a temporary failure", res)
				}
			}},
		{name: "a test to an address the provider cannot send to", method: "POST", path: test, headers: owner,
			body: map[string]any{"slug": "http", "to": "ada@example.com"}, wantStatus: 400, wantCode: "invalid_request", check: errorNames("to")},
		{name: "a test without a slug", method: "POST", path: test, headers: owner,
			body: map[string]any{"to": "+14155552671"}, wantStatus: 400, wantCode: "invalid_request", check: errorNames("slug")},
		{name: "a test of an unknown slug", method: "POST", path: test, headers: owner,
			body: map[string]any{"slug": "pigeon", "to": "+14155552671"}, wantStatus: 404, wantCode: "provider_not_found"},
		{name: "an API key may not send tests", method: "POST", path: test, headers: map[string]string{"X-Authorization": key},
			body: map[string]any{"slug": "http", "to": "+14155552671"}, wantStatus: 403},
		{name: "another app's secret: app_not_found", method: "POST", path: test, headers: bearer(otherSecret),
			body: map[string]any{"slug": "http", "to": "+14155552671"}, wantStatus: 404, wantCode: "app_not_found"},
		{name: "clearing the token with \"\"", method: "PATCH", path: path, headers: owner,
			body: map[string]any{"slug": "http", "config": map[string]any{"token": ""}}, wantStatus: 200,
			check: func(t *testing.T, r response) {
				if _, ok := r.obj("message_service_provider")["config"].(map[string]any)["token"]; ok {
					t.Errorf("config = %v; want no token", r.obj("message_service_provider")["config"])
				}
			}},
	})

	// Test messages are rate limited per app (10 an hour).
	for ; tests < 10; tests++ {
		scenario{method: "POST", path: test, headers: owner, body: map[string]any{"slug": "log", "to": "ada@example.com"}, wantStatus: 200}.run(t, e)
	}
	r := scenario{method: "POST", path: test, headers: owner, body: map[string]any{"slug": "log", "to": "ada@example.com"},
		wantStatus: 429, wantCode: "rate_limited"}.run(t, e)
	if r.header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}

	// Every change was logged, naming the settings changed and never a secret.
	logs := e.Logs.String()
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the log holds a provider secret")
		}
	}
	lines := e.Logs.Lines("message provider changed", e.app.ID)
	if len(lines) != 7 {
		t.Errorf("%d change log lines; want 7 (one per change):\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if !slices.ContainsFunc(lines, func(l string) bool {
		return strings.Contains(l, `"changed":["config.from","config.token","config.url","name","enabled"]`) && strings.Contains(l, `"slug":"http"`)
	}) {
		t.Errorf("no log line names the settings of the first http change:\n%s", strings.Join(lines, "\n"))
	}
}

// TestAppOutboxInDevelopment: in development mode the outbox is a provider
// type too; an app that enables it keeps its messages in /dev/outbox while
// the other apps' go through the server's provider.
func TestAppOutboxInDevelopment(t *testing.T) {
	for _, kind := range storetest.Kinds(t) {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t, kind, true)
			path := "/v1/apps/" + e.app.ID + "/message_service_providers"
			other := e.createApp(t, e.ws.ID, "Other", nil)
			runScenarios(t, e, []scenario{
				{name: "the outbox is listed in development mode", method: "GET", path: path, headers: bearer(e.appSecret), wantStatus: 200,
					check: func(t *testing.T, r response) { providerOf(t, r, "outbox") }},
				{name: "the app enables it", method: "PATCH", path: path, headers: bearer(e.appSecret),
					body: map[string]any{"slug": "outbox", "enabled": true}, wantStatus: 200},
				{name: "the app's code goes to the outbox", method: "POST", path: e.authPath("/otps/login"),
					body: map[string]any{"identifier": "dev@example.com"}, wantStatus: 200,
					check: func(t *testing.T, r response) {
						if _, ok := e.Mail.Last("dev@example.com"); ok {
							t.Errorf("the server's provider got the app's message")
						}
					}},
				{name: "the outbox has it", method: "GET", path: "/dev/outbox?to=dev@example.com", wantStatus: 200,
					check: func(t *testing.T, r response) {
						if msgs, _ := r.body["messages"].([]any); len(msgs) != 1 {
							t.Errorf("outbox = %s; want the app's one message", r.raw)
						}
					}},
				{name: "another app's code goes through the server's provider", method: "POST", path: "/v1/auth/" + other.ID + "/otps/login",
					body: map[string]any{"identifier": "dev2@example.com"}, wantStatus: 200,
					check: func(t *testing.T, r response) {
						if _, ok := e.Mail.Last("dev2@example.com"); !ok {
							t.Errorf("the server's provider got nothing for the other app")
						}
					}},
			})
		})
	}
}

// TestProviderDestinationCheckedWhenSaved: with private targets refused (as
// in production), a provider URL, endpoint or SMTP host that names a local
// or non-public address is refused when saved, naming the setting, not
// only when a message is dialled; a public one is saved.
func TestProviderDestinationCheckedWhenSaved(t *testing.T) {
	opts := servertest.Options{Serve: true, Settings: map[string]string{"GATEHOUSE_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "false"}}
	forEach(t, opts, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		path := "/v1/apps/" + e.app.ID + "/message_service_providers"
		names := func(field, reason string) func(t *testing.T, r response) {
			return func(t *testing.T, r response) {
				if msg := r.str("error"); !strings.HasPrefix(msg, field+" ") || !strings.Contains(msg, reason) {
					t.Errorf("error = %q; want it to name %s and say %q", msg, field, reason)
				}
			}
		}
		patch := func(name string, body map[string]any, status int, check func(*testing.T, response)) scenario {
			s := scenario{name: name, method: "PATCH", path: path, headers: bearer(e.appSecret), body: body, wantStatus: status, check: check}
			if status == 400 {
				s.wantCode = "invalid_request"
			}
			return s
		}
		runScenarios(t, e, []scenario{
			patch("http url on a private address", map[string]any{"slug": "http", "config": map[string]any{"url": "https://10.1.2.3/sms", "token": "t-0123456789abcdef"}},
				400, names("config.url", "non-public address")),
			patch("http url on the metadata address", map[string]any{"slug": "http", "config": map[string]any{"url": "https://169.254.169.254/latest"}},
				400, names("config.url", "non-public address")),
			patch("twilio endpoint on an internal name", map[string]any{"slug": "twilio", "config": map[string]any{"endpoint": "https://twilio.corp.internal", "account_sid": "AC0123456789abcdef0123456789abcdef", "auth_token": "tok-0123456789abcdef", "from": "+14155550100"}},
				400, names("config.endpoint", "not allowed")),
			patch("smtp host on loopback", map[string]any{"slug": "smtp", "config": map[string]any{"host": "127.0.0.1", "port": "587", "from": "a@example.com"}},
				400, names("config.host", "non-public address")),
			patch("smtp host on an IPv6 loopback", map[string]any{"slug": "smtp", "config": map[string]any{"host": "::1", "port": "587", "from": "a@example.com"}},
				400, names("config.host", "non-public address")),
			patch("smtp host localhost", map[string]any{"slug": "smtp", "config": map[string]any{"host": "localhost", "port": "587", "from": "a@example.com"}},
				400, names("config.host", "not allowed")),
			patch("a public address is saved", map[string]any{"slug": "http", "config": map[string]any{"url": "https://93.184.216.34/sms"}}, 200, nil),
		})
		r := e.do(t, "GET", path, bearer(e.appSecret), nil)
		if cfg, _ := providerOf(t, r, "smtp")["config"].(map[string]any); cfg["host"] != nil && cfg["host"] != "" {
			t.Errorf("smtp config after refusals = %v; want no host stored", cfg)
		}
	})
}
