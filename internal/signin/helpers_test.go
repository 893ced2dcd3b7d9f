package signin_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/courier/couriertest"
	"github.com/gatehouse-auth/gatehouse/internal/fakeclock"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

const issuer = "https://auth.example.test"

// start is the fake clock's first reading; it has sub-second digits on
// purpose, so truncation and rounding bugs show.
func start() time.Time { return time.Date(2031, 3, 14, 15, 9, 26, 535897000, time.UTC) }

// config tunes newEnv.
type config struct {
	limits   signin.Limits
	settings signin.Settings
	log      *slog.Logger
	// wrap, when set, wraps the recording courier (to make deliveries fail).
	wrap func(courier.Provider) courier.Provider
	// app changes the env's app before it is stored.
	app func(*store.App)
	// events, when set, receives the services' webhook events.
	events *webhook.Emitter
}

// defaultConfig is the security bar's limits, loosened only where a test
// would otherwise trip over a limit it does not test.
func defaultConfig() config {
	l := signin.DefaultLimits()
	l.SendPerIdentifier = ratelimit.Rule{Limit: 50, Period: 10 * time.Minute}
	l.SendPerIP = ratelimit.Rule{Limit: 1000, Period: 10 * time.Minute}
	l.VerifyPerIP = ratelimit.Rule{Limit: 1000, Period: 10 * time.Minute}
	l.PollInterval = 2 * time.Second
	return config{limits: l, settings: signin.Settings{Issuer: issuer, RefreshGrace: 10 * time.Second}}
}

// env is a sign-in service on a real store, with a recording courier, a
// fake clock shared by the service, the user service and the rate limiter.
type env struct {
	ctx    context.Context
	db     *store.DB
	clock  *fakeclock.Clock
	rec    *couriertest.Recorder
	keys   *token.Keyring
	users  *appuser.Service
	svc    *signin.Service
	ws     store.Workspace
	app    store.App
	client signin.Client
}

func newEnv(t testing.TB, db *store.DB, mods ...func(*config)) *env {
	t.Helper()
	cfg := defaultConfig()
	for _, m := range mods {
		m(&cfg)
	}
	sealer, hasher := tokentest.Keys(t)
	key, err := token.GenerateKey()
	if err != nil {
		t.Fatalf("GenerateKey: %v", err)
	}
	keys := token.NewKeyring()
	keys.Replace(key, nil, []*token.Key{key})
	templates, err := courier.LoadTemplates()
	if err != nil {
		t.Fatalf("LoadTemplates: %v", err)
	}
	e := &env{ctx: context.Background(), db: db, clock: fakeclock.New(start()), rec: &couriertest.Recorder{}, keys: keys,
		client: signin.Client{IP: "198.51.100.7", UserAgent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0"}}
	var provider courier.Provider = e.rec
	if cfg.wrap != nil {
		provider = cfg.wrap(provider)
	}
	log := cfg.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e.users = appuser.New(appuser.Deps{DB: db, Courier: provider, Templates: templates, Keyring: keys, Hasher: hasher,
		Issuer: issuer, Events: cfg.events, Now: e.clock.Now, Log: log})
	e.svc = signin.New(signin.Deps{Events: cfg.events, DB: db, Keyring: keys, Sealer: sealer, Hasher: hasher, Courier: provider,
		Templates: templates, Users: e.users, Limiter: ratelimit.NewMemory(e.clock.Now), Limits: cfg.limits,
		Settings: cfg.settings, Now: e.clock.Now, Log: log})
	e.ws = store.Workspace{ID: uuid.NewString(), Name: "Acme", Slug: "acme-" + uuid.NewString()[:8], Settings: []byte("{}"),
		PublicSignup: true, UserInfoRequirement: "none", CreatedAt: start(), UpdatedAt: start()}
	if err := db.CreateWorkspace(e.ctx, e.ws); err != nil {
		t.Fatalf("CreateWorkspace: %v", err)
	}
	e.app = e.newApp(t, cfg.app)
	return e
}

// newApp stores another app of the env's workspace; mod may change it first.
func (e *env) newApp(t testing.TB, mod func(*store.App)) store.App {
	t.Helper()
	schema, err := json.Marshal(appuser.Schema{
		{ID: "1", Name: "Nickname", FieldName: "nick", FieldType: appuser.FieldString},
		{ID: "2", Name: "Age", FieldName: "age", FieldType: appuser.FieldInteger},
	})
	if err != nil {
		t.Fatalf("marshal schema: %v", err)
	}
	slug := "app-" + uuid.NewString()[:8]
	a := store.App{ID: uuid.NewString(), WorkspaceID: e.ws.ID, Name: "Shop", Slug: slug, Origin: "https://" + slug + ".example",
		AllowedOrigins: []string{}, PublicSignup: true, EmailAuthType: "magic", AutoRefresh: true, AccessExpiration: 900,
		RefreshExpiration: 7 * 24 * 3600, MagicLinkExpiration: 600, AllowedIdentifiers: []string{"email", "phone"},
		RequiredIdentifiers: []string{}, MetaSchema: schema, CreatedAt: start(), UpdatedAt: start()}
	if mod != nil {
		mod(&a)
	}
	if err := e.db.CreateApp(e.ctx, a); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
	return a
}

// user creates an active user of the env's app.
func (e *env) user(t testing.TB, identifier string) appuser.User {
	t.Helper()
	u, _, err := e.users.Create(e.ctx, e.app, appuser.CreateInput{Identifier: identifier})
	if err != nil {
		t.Fatalf("Create(%q): %v", identifier, err)
	}
	return u
}

// sendCode sends a one-time code to identifier (already normalised) and
// returns what the courier delivered.
func (e *env) sendCode(t testing.TB, identifier string) (signin.SendResult, string) {
	t.Helper()
	before := len(e.rec.Messages())
	res, err := e.svc.SendOTP(e.ctx, e.app, identifier, nil, e.client)
	if err != nil {
		t.Fatalf("SendOTP(%q): %v", identifier, err)
	}
	msgs := e.rec.Messages()
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
	ts, err := e.svc.VerifyOTP(e.ctx, e.app, u.ID, code, e.client)
	if err != nil {
		t.Fatalf("VerifyOTP(%s, correct code): %v", u.ID, err)
	}
	return ts
}

// sendLink sends a magic link and returns the poll handle and the e-mailed token.
func (e *env) sendLink(t testing.TB, identifier string, webauthn bool) (handle, tok string) {
	t.Helper()
	before := len(e.rec.Messages())
	res, err := e.svc.SendMagicLink(e.ctx, e.app, identifier, nil, webauthn, e.client)
	if err != nil {
		t.Fatalf("SendMagicLink(%q): %v", identifier, err)
	}
	msgs := e.rec.Messages()
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
	c, err := e.svc.Authenticate(e.ctx, e.app, access)
	if err != nil {
		t.Fatalf("Authenticate(valid access token) = %v; want nil", err)
	}
	return c
}

// payload decodes a compact JWS's payload without checking anything.
func payload(t testing.TB, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts; want 3", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("decode payload: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("unmarshal payload: %v", err)
	}
	return m
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

// dump renders every row of the sign-in tables as text, as a DB dump would
// show them. It reads through the store's own connections.
func dump(t testing.TB, db *store.DB) string {
	t.Helper()
	ctx := context.Background()
	var sb strings.Builder
	for _, table := range []string{"challenges", "sessions", "refresh_tokens", "invitations", "app_users"} {
		q := "SELECT * FROM " + table
		if pool := db.Pool(); pool != nil {
			rows, err := pool.Query(ctx, q)
			if err != nil {
				t.Fatalf("dump %s: %v", table, err)
			}
			for rows.Next() {
				vals, err := rows.Values()
				if err != nil {
					t.Fatalf("dump %s: %v", table, err)
				}
				writeRow(&sb, vals)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				t.Fatalf("dump %s: %v", table, err)
			}
			continue
		}
		dumpSQL(t, &sb, db.Writer(), q)
	}
	return sb.String()
}

func dumpSQL(t testing.TB, sb *strings.Builder, db *sql.DB, q string) {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("dump: %v", err)
		}
		writeRow(sb, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("dump: %v", err)
	}
}

func writeRow(sb *strings.Builder, vals []any) {
	for _, v := range vals {
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		fmt.Fprintf(sb, "%v\t", v)
	}
	sb.WriteByte('\n')
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
