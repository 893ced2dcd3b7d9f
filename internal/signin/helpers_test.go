package signin_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/passkey/passkeytest"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

const issuer = "https://auth.example.test"

// options are the test system's options: servertest's loose limits (the
// security bar's, loosened only where a test would otherwise trip over a
// limit it does not test), a known issuer and a refresh grace of 10 s, which
// the tests count on; mods change them.
func options(mods ...func(*servertest.Options)) servertest.Options {
	l := servertest.LooseLimits()
	o := servertest.Options{Limits: &l, Settings: map[string]string{
		"GATEHOUSE_TOKENS_ISSUER":        issuer,
		"GATEHOUSE_TOKENS_REFRESH_GRACE": "10s",
	}}
	for _, m := range mods {
		m(&o)
	}
	return o
}

// env is an assembled system (the sign-in service on a real store, with its
// fake clock, recording courier and log buffer) with a workspace and an app.
type env struct {
	*servertest.System
	ws     tenant.Workspace
	owner  tenant.Member // the workspace's first owner
	app    store.App
	client signin.Client
}

// newEnv creates the workspace Acme and its app Shop in sys; mod may change
// the app's settings.
func newEnv(t testing.TB, sys *servertest.System, mod func(*tenant.AppSettings)) *env {
	t.Helper()
	ws, owner := sys.Workspace(t, "Acme")
	e := &env{System: sys, ws: ws, owner: owner, client: signin.Client{IP: "198.51.100.7", UserAgent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0"}}
	e.app = e.newApp(t, "Shop", mod)
	return e
}

// newApp creates another app of the env's workspace, with the metadata
// schema every test app has (nick, a string; age, an integer: both in the
// sign-up and profile forms; plan, a string only the app may set); mod may
// change its settings first.
func (e *env) newApp(t testing.TB, name string, mod func(*tenant.AppSettings)) store.App {
	t.Helper()
	return e.App(t, e.ws.ID, name, func(s *tenant.AppSettings) {
		s.MetaSchema = &appuser.Schema{
			{ID: "1", Name: "Nickname", FieldName: "nick", FieldType: appuser.FieldString, VisibleRegistration: true, VisibleProfile: true},
			{ID: "2", Name: "Age", FieldName: "age", FieldType: appuser.FieldInteger, VisibleRegistration: true, VisibleProfile: true},
			{ID: "3", Name: "Plan", FieldName: "plan", FieldType: appuser.FieldString},
		}
		if mod != nil {
			mod(s)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// user creates an active user of the env's app, as the operator.
func (e *env) user(t testing.TB, identifier string) appuser.User {
	t.Helper()
	u, _, err := e.Users.Create(t.Context(), servertest.Operator, e.app, appuser.CreateInput{Identifier: identifier})
	if err != nil {
		t.Fatalf("Create(%q): %v", identifier, err)
	}
	return u
}

// get reads a user of the env's app, as the operator.
func (e *env) get(t testing.TB, id string) (appuser.User, error) {
	t.Helper()
	return e.Users.Get(t.Context(), servertest.Operator, e.app, id)
}

// invite invites a user to the env's app, as the operator, and returns the
// user and the invitation token the courier delivered.
func (e *env) invite(t testing.TB, identifier string) (appuser.User, string) {
	t.Helper()
	u, _, err := e.Users.Invite(t.Context(), servertest.Operator, e.app, appuser.CreateInput{Identifier: identifier})
	if err != nil {
		t.Fatalf("Invite(%q): %v", identifier, err)
	}
	msg, ok := e.Mail.Last(identifier)
	if !ok {
		t.Fatalf("Invite(%q) sent no invitation", identifier)
	}
	return u, linkToken(t, msg.Link)
}

// sendCode sends a one-time code to identifier (already normalised) and
// returns what the courier delivered.
func (e *env) sendCode(t testing.TB, identifier string) (signin.SendResult, string) {
	t.Helper()
	before := len(e.Mail.Messages())
	res, err := e.SignIn.SendOTP(t.Context(), e.app, identifier, nil, e.client)
	if err != nil {
		t.Fatalf("SendOTP(%q): %v", identifier, err)
	}
	msgs := e.Mail.Messages()
	if len(msgs) != before+1 || msgs[len(msgs)-1].To != identifier {
		t.Fatalf("SendOTP(%q) delivered %d messages; want 1 to that address", identifier, len(msgs)-before)
	}
	return res, msgs[len(msgs)-1].Code
}

// signIn signs a user in with a one-time code.
func (e *env) signIn(t testing.TB, u appuser.User) signin.TokenSet {
	t.Helper()
	identifier := u.Email
	if identifier == "" {
		identifier = u.Phone
	}
	_, code := e.sendCode(t, identifier)
	ts, err := e.SignIn.VerifyOTP(t.Context(), e.app, u.ID, code, e.client)
	if err != nil {
		t.Fatalf("VerifyOTP(%s, correct code): %v", u.ID, err)
	}
	return ts
}

// sendLink sends a magic link and returns the poll handle and the e-mailed token.
func (e *env) sendLink(t testing.TB, identifier string, webauthn bool) (handle, tok string) {
	t.Helper()
	before := len(e.Mail.Messages())
	res, err := e.SignIn.SendMagicLink(t.Context(), e.app, identifier, nil, webauthn, e.client)
	if err != nil {
		t.Fatalf("SendMagicLink(%q): %v", identifier, err)
	}
	msgs := e.Mail.Messages()
	if len(msgs) != before+1 || msgs[len(msgs)-1].To != identifier {
		t.Fatalf("SendMagicLink(%q) delivered %d messages; want 1 to that address", identifier, len(msgs)-before)
	}
	return res.ChallengeID, linkToken(t, msgs[len(msgs)-1].Link)
}

// linkToken reads the sct_magic parameter of a link.
func linkToken(t testing.TB, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatalf("parse link: %v", err)
	}
	tok := u.Query().Get("sct_magic")
	if tok == "" {
		t.Fatalf("link %q has no sct_magic parameter", link)
	}
	return tok
}

// caller authenticates an access token and fails the test if it is refused.
func (e *env) caller(t testing.TB, access string) signin.Caller {
	t.Helper()
	c, err := e.SignIn.Authenticate(t.Context(), e.app, access)
	if err != nil {
		t.Fatalf("Authenticate(valid access token) = %v; want nil", err)
	}
	return c
}

// hook registers a webhook endpoint for app, as the operator, to a loopback
// URL nothing listens on: without Serve no worker runs, so its deliveries
// stay queued for the test to read.
func (e *env) hook(t testing.TB, app store.App) webhook.Endpoint {
	t.Helper()
	ep, err := e.Webhooks.Create(t.Context(), servertest.Operator, app.ID, webhook.Input{URL: ptr("http://127.0.0.1:9/hook")})
	if err != nil {
		t.Fatalf("Create webhook endpoint: %v", err)
	}
	return ep
}

// event is one event as an endpoint received it.
type event struct {
	Type string
	Data map[string]any
}

// events returns every event queued for an endpoint, oldest first, with its
// data as the receiver would get it.
func (e *env) events(t testing.TB, app store.App, ep webhook.Endpoint) []event {
	t.Helper()
	ctx := t.Context()
	page, err := e.Webhooks.Deliveries(ctx, servertest.Operator, app.ID, ep.ID, 1, 100)
	if err != nil {
		t.Fatalf("Deliveries: %v", err)
	}
	if page.Total > len(page.Deliveries) {
		t.Fatalf("Deliveries: %d of %d on the first page; the test expects fewer", len(page.Deliveries), page.Total)
	}
	out := make([]event, 0, len(page.Deliveries))
	for i := len(page.Deliveries) - 1; i >= 0; i-- { // newest first
		d := page.Deliveries[i]
		w, err := e.DB.GetDeliveryWork(ctx, d.ID)
		if err != nil {
			t.Fatalf("GetDeliveryWork(%s): %v", d.ID, err)
		}
		var envl webhook.Envelope
		if err := json.Unmarshal(w.Body, &envl); err != nil {
			t.Fatalf("delivery %s body: %v", d.ID, err)
		}
		data, _ := envl.Data.(map[string]any)
		if envl.EventType != d.EventType || envl.AppID != app.ID || data == nil {
			t.Fatalf("delivery %s (%s) carries an event %q of app %s with data %v; want the same type, app %s, an object",
				d.ID, d.EventType, envl.EventType, envl.AppID, envl.Data, app.ID)
		}
		out = append(out, event{Type: d.EventType, Data: data})
	}
	return out
}

// count counts events by type.
func count(events []event) map[string]int {
	got := map[string]int{}
	for _, ev := range events {
		got[ev.Type]++
	}
	return got
}

// flip changes one character of tok at i into another base64url character.
func flip(tok string, i int) string {
	b := []byte(tok)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// dump renders every row of the sign-in tables and of the webhook events as
// text, as a DB dump would show them. It reads through the store's own
// connections.
func dump(t testing.TB, db *store.DB) string {
	t.Helper()
	var sb strings.Builder
	for _, table := range []string{"challenges", "sessions", "refresh_tokens", "invitations", "app_users", "webhook_events", "river_job", "queued_messages"} {
		for _, row := range rows(t, db, "SELECT * FROM "+table) {
			for _, v := range row {
				fmt.Fprintf(&sb, "%v\t", v)
			}
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// exec runs statements through the store's own connections.
func exec(t testing.TB, db *store.DB, stmts ...string) {
	t.Helper()
	ctx := t.Context()
	for _, q := range stmts {
		var err error
		if pool := db.Pool(); pool != nil {
			_, err = pool.Exec(ctx, q)
		} else {
			_, err = db.Writer().ExecContext(ctx, q)
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// rows runs a query through the store's own connections and returns every
// row, byte slices as strings.
func rows(t testing.TB, db *store.DB, q string, args ...any) [][]any {
	t.Helper()
	ctx := t.Context()
	var out [][]any
	if pool := db.Pool(); pool != nil {
		rs, err := pool.Query(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rs.Close()
		for rs.Next() {
			vals, err := rs.Values()
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			out = append(out, strs(vals))
		}
		if err := rs.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return out
	}
	rs, err := db.Writer().QueryContext(ctx, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, strs(vals))
	}
	if err := rs.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func strs(vals []any) []any {
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			vals[i] = string(b)
		}
	}
	return vals
}

// registerPasskey adds a passkey for the signed-in caller c and returns the
// authenticator that holds it.
func (e *env) registerPasskey(t testing.TB, c signin.Caller) *passkeytest.Authenticator {
	t.Helper()
	opts, err := e.SignIn.BeginDeviceRegistration(t.Context(), e.app, c)
	if err != nil {
		t.Fatalf("BeginDeviceRegistration: %v", err)
	}
	a := passkeytest.New("shop.example", e.app.Origin)
	body, _, err := a.Create(string(opts.Options))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SignIn.FinishDeviceRegistration(t.Context(), e.app, c, []byte(body), e.client); err != nil {
		t.Fatalf("FinishDeviceRegistration: %v", err)
	}
	return a
}
