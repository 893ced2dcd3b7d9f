// Package machine gives an app's backend services machine-to-machine (M2M)
// access: M2M clients (a client id and a secret kept as a keyed hash), the
// OAuth 2.0 client_credentials grant (RFC 6749 §4.4) that issues short-lived
// M2M access tokens, each tied to an M2M session, and the verification,
// introspection and revocation of those tokens. It owns the tables
// m2m_clients and m2m_sessions.
//
// An M2M token is accepted only while its session row is live, read on every
// verification, so a revoked session or client fails on the next request on
// every replica.
package machine

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// ClientSecretPrefix starts every client secret, so secret scanners can find
// leaked ones.
const ClientSecretPrefix = "ghm_"

// GrantClientCredentials is the one grant type the token endpoint serves.
const GrantClientCredentials = "client_credentials"

// Limits of a client's description.
const (
	MaxNameLen  = 100
	MaxScopes   = 50
	MaxScopeLen = 100
	// maxClientIDLen bounds what an unauthenticated caller can make us look up.
	maxClientIDLen = 128
)

// Errors returned by the service; httpapi maps each to a response.
var (
	ErrClientNotFound = errors.New("m2m client not found")
	// ErrInvalidClient: client authentication failed (unknown client, wrong
	// secret, revoked client, no credentials): RFC 6749 §5.2 invalid_client.
	ErrInvalidClient = errors.New("invalid client")
	// ErrUnsupportedGrantType: a grant_type other than client_credentials.
	ErrUnsupportedGrantType = errors.New("unsupported grant type")
	// ErrInvalidScope: a malformed scope, or one the client may not ask for.
	ErrInvalidScope = errors.New("invalid scope")
	// ErrUnauthenticated: an M2M token that is not accepted (bad signature or
	// type, another app's, expired, or its session or client revoked).
	ErrUnauthenticated = errors.New("m2m token not accepted")
	// ErrSessionRequired: the request carries no M2M token at all.
	ErrSessionRequired = errors.New("m2m session required")
)

// RateLimitedError refuses a client authentication whose failure budget
// (Limits) is spent, before the secret is compared.
type RateLimitedError struct {
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return "m2m client authentication rate limited; retry after " + e.RetryAfter.String()
}

// Limits bound failed client authentications at the token endpoint
// (security.md: guessing client secrets).
type Limits struct {
	// FailuresPerClient: per client id (and app), from any IP.
	FailuresPerClient ratelimit.Rule
	// FailuresPerIP: per client IP, across client ids.
	FailuresPerIP ratelimit.Rule
}

// Client is an M2M client; its secret is shown only when it is created.
type Client = store.M2MClient

// Session is an M2M session: one grant, live until it expires or is revoked.
type Session = store.M2MSession

// Claims are an M2M access token's claims: sub is the client id, aud and aid
// the app, wid its workspace, sid the M2M session. m2m is always true, which
// tells them from a user's access token (server-sdk-compat §2).
type Claims struct {
	token.Claims
	AppID       string `json:"aid"`
	WorkspaceID string `json:"wid"`
	M2M         bool   `json:"m2m"`
	Scope       string `json:"scope,omitempty"`
	Session     string `json:"sid"`
}

// Service is the M2M domain.
type Service struct {
	db      *store.DB
	keys    *token.Keyring
	hasher  *token.Hasher
	issuer  string
	ttl     time.Duration
	alg     func(store.App) string
	limiter ratelimit.Limiter
	limits  Limits
	now     store.Clock
	log     *slog.Logger
}

// Deps are the Service's collaborators.
type Deps struct {
	DB      *store.DB
	Keyring *token.Keyring
	Hasher  *token.Hasher
	// Issuer is the iss of M2M tokens: the same as user access tokens'.
	Issuer string
	// TokenTTL is the lifetime of an M2M token and its session (m2m.token_ttl).
	TokenTTL time.Duration
	// Alg is the algorithm that signs an app's tokens (its access_token_alg
	// or the server default), so a backend verifies M2M tokens with the keys
	// it already uses for the app's user tokens. Nil signs with ES256.
	Alg func(store.App) string
	// Limiter holds the failure budgets of Limits (shared by replicas
	// when it is the SQL one); nil limits nothing.
	Limiter ratelimit.Limiter
	Limits  Limits
	Now     func() time.Time
	Log     *slog.Logger
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Alg == nil {
		d.Alg = func(store.App) string { return token.Algorithm }
	}
	return &Service{db: d.DB, keys: d.Keyring, hasher: d.Hasher, issuer: d.Issuer, ttl: d.TokenTTL, alg: d.Alg,
		limiter: d.Limiter, limits: d.Limits, now: d.Now, log: d.Log}
}

// clock is the time now as the store keeps it (store.Clock.Now).
func (s *Service) clock() time.Time { return s.now.Now() }

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// secretHash is the keyed hash a client secret is stored and found by.
func (s *Service) secretHash(secret string) string { return s.hasher.Hash("m2m-client", secret) }

// ClientInput describes a new client.
type ClientInput struct {
	Name   string
	Scopes []string
}

// CreateClient creates an M2M client for app and returns its secret, shown
// only here. Who may manage the app's credentials may (not API keys).
func (s *Service) CreateClient(ctx context.Context, p access.Principal, app store.App, in ClientInput) (_ string, _ Client, err error) {
	defer errs.Wrap(&err, "create m2m client")
	name := strings.TrimSpace(in.Name)
	if name == "" {
		name = "M2M client"
	}
	if len(name) > MaxNameLen {
		return "", Client{}, errs.Invalidf("name", "must be at most %d characters", MaxNameLen)
	}
	scopes, err := cleanScopes(in.Scopes)
	if err != nil {
		return "", Client{}, err
	}
	secret := token.NewSecret(ClientSecretPrefix)
	c := Client{ID: newID(), AppID: app.ID, Name: name, SecretHash: s.secretHash(secret), SecretLast4: secret[len(secret)-4:],
		Scopes: scopes, CreatedAt: s.clock()}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, app.ID, access.Manage); err != nil {
			return err
		}
		if err := tx.CreateM2MClient(ctx, c); err != nil {
			return err
		}
		return audit.Record(ctx, tx.Queries, c.CreatedAt, p, audit.Change{WorkspaceID: app.WorkspaceID, AppID: app.ID,
			Action: "m2m_client.created", TargetType: "m2m_client", TargetID: c.ID, After: clientRecord{Name: c.Name, Scopes: c.Scopes}})
	})
	if err != nil {
		return "", Client{}, err
	}
	s.log.InfoContext(ctx, "m2m client created", "app_id", app.ID, "client_id", c.ID)
	return secret, c, nil
}

// ListClients lists an app's clients, revoked ones included, newest first
// (never their secrets), to who may manage its credentials.
func (s *Service) ListClients(ctx context.Context, p access.Principal, app store.App) (_ []Client, err error) {
	defer errs.Wrap(&err, "list m2m clients")
	if err := access.App(ctx, s.db.Queries, p, app.ID, access.Manage); err != nil {
		return nil, err
	}
	return s.db.ListM2MClients(ctx, app.ID)
}

// RevokeClient revokes an app's client: it can get no more tokens, and its
// sessions end at once (their tokens fail on the next request).
func (s *Service) RevokeClient(ctx context.Context, p access.Principal, app store.App, id string) (_ Client, err error) {
	defer errs.Wrap(&err, "revoke m2m client")
	var c Client
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, app.ID, access.Manage); err != nil {
			return err
		}
		now := s.clock()
		c, err = tx.RevokeM2MClient(ctx, app.ID, id, now)
		if errors.Is(err, store.ErrNotFound) {
			return ErrClientNotFound
		}
		if err != nil {
			return err
		}
		return audit.Record(ctx, tx.Queries, now, p, audit.Change{WorkspaceID: app.WorkspaceID, AppID: app.ID,
			Action: "m2m_client.revoked", TargetType: "m2m_client", TargetID: c.ID, Before: clientRecord{Name: c.Name, Scopes: c.Scopes},
			After: clientRecord{Name: c.Name, Scopes: c.Scopes, Revoked: true}})
	})
	if err == nil {
		s.log.InfoContext(ctx, "m2m client revoked", "app_id", app.ID, "client_id", c.ID)
	}
	return c, err
}

// TokenRequest is a token request (RFC 6749 §4.4.2) with the client's
// credentials, however they were sent.
type TokenRequest struct {
	GrantType    string
	ClientID     string
	ClientSecret string
	// Scope is the space-separated scope asked for; "" asks for none.
	Scope string
	// ClientIP is the caller's address, for the per-IP failure budget.
	ClientIP string
}

// Grant is what the token endpoint answers.
type Grant struct {
	AccessToken string
	ExpiresAt   time.Time
	// ExpiresIn is the token's lifetime in seconds.
	ExpiresIn int64
	Scopes    []string
	Session   Session
}

// IssueToken serves the client_credentials grant: it authenticates the
// client, checks that the scope asked for is among the client's, opens an
// M2M session and returns its token. There is no refresh token: a machine
// asks again.
func (s *Service) IssueToken(ctx context.Context, app store.App, r TokenRequest) (_ Grant, err error) {
	defer errs.Wrap(&err, "issue m2m token")
	switch r.GrantType {
	case "":
		return Grant{}, errs.Invalidf("grant_type", "is required")
	case GrantClientCredentials:
	default:
		return Grant{}, ErrUnsupportedGrantType
	}
	if r.ClientID == "" || r.ClientSecret == "" || len(r.ClientID) > maxClientIDLen {
		return Grant{}, ErrInvalidClient
	}
	giveBack, err := s.takeAttempt(ctx, app.ID, r.ClientID, r.ClientIP)
	if err != nil {
		return Grant{}, err
	}
	c, err := s.db.GetM2MClient(ctx, app.ID, r.ClientID)
	if errors.Is(err, store.ErrNotFound) {
		return Grant{}, ErrInvalidClient
	}
	if err != nil {
		return Grant{}, err
	}
	if !s.hasher.Equal(c.SecretHash, "m2m-client", r.ClientSecret) || c.RevokedAt != nil {
		s.log.InfoContext(ctx, "m2m client authentication failed", "app_id", app.ID, "client_id", c.ID, "ip", r.ClientIP)
		return Grant{}, ErrInvalidClient
	}
	// Authenticated: the attempt was no failure, so it costs nothing.
	giveBack(ctx)
	// Only an authenticated client learns what is wrong with its scope.
	scopes, err := parseScope(r.Scope)
	if err != nil {
		return Grant{}, err
	}
	for _, sc := range scopes {
		if !slices.Contains(c.Scopes, sc) {
			return Grant{}, ErrInvalidScope
		}
	}
	now := s.clock()
	sess := Session{ID: newID(), AppID: app.ID, ClientID: c.ID, Scopes: scopes, CreatedAt: now, ExpiresAt: now.Add(s.ttl)}
	tok, err := s.sign(app, Claims{
		Claims: token.Claims{Issuer: s.issuer, Subject: c.ID, Audience: token.Audience{app.ID}, IssuedAt: now.Unix(),
			Expiry: sess.ExpiresAt.Unix(), ID: newID()},
		AppID: app.ID, WorkspaceID: app.WorkspaceID, M2M: true, Scope: strings.Join(scopes, " "), Session: sess.ID,
	})
	if err != nil {
		return Grant{}, err
	}
	// A client revoked between the read above and this insert gets a
	// session whose token still fails: verification reads the client too.
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateM2MSession(ctx, sess); err != nil {
			return err
		}
		return tx.TouchM2MClient(ctx, c.ID, now)
	})
	if err != nil {
		return Grant{}, err
	}
	s.log.InfoContext(ctx, "m2m token issued", "app_id", app.ID, "client_id", c.ID, "m2m_session_id", sess.ID)
	return Grant{AccessToken: tok, ExpiresAt: sess.ExpiresAt, ExpiresIn: int64(s.ttl / time.Second), Scopes: scopes, Session: sess}, nil
}

// takeAttempt takes one from the client's failure budget, then from the
// caller IP's, before the secret is compared: parallel guesses cannot
// compare more than the budget, however they interleave. A refusal takes
// nothing from the budgets after it and gives back what it took, so the
// number compared is exactly the smallest budget left. giveBack returns
// both for an attempt that authenticated.
func (s *Service) takeAttempt(ctx context.Context, appID, clientID, ip string) (giveBack func(context.Context), err error) {
	var taken []bucket
	giveBack = func(ctx context.Context) {
		for _, b := range taken {
			if err := s.limiter.Return(ctx, b.key, b.rule); err != nil {
				s.log.WarnContext(ctx, "m2m failure budget not given back", "err", err)
			}
		}
	}
	if s.limiter == nil {
		return func(context.Context) {}, nil
	}
	for _, b := range []bucket{
		{"m2m-auth:client:" + appID + ":" + clientID, s.limits.FailuresPerClient},
		{"m2m-auth:ip:" + ip, s.limits.FailuresPerIP},
	} {
		if b.rule.Disabled() {
			continue
		}
		res, err := s.limiter.Allow(ctx, b.key, b.rule)
		if err == nil && !res.Allowed {
			err = &RateLimitedError{RetryAfter: res.RetryAfter}
		}
		if err != nil {
			giveBack(ctx)
			return nil, err
		}
		taken = append(taken, b)
	}
	return giveBack, nil
}

type bucket struct {
	key  string
	rule ratelimit.Rule
}

// sign signs an M2M token. Every M2M token is signed here and only here, so
// which key and algorithm sign them (the app's, some day) is decided in one
// place.
func (s *Service) sign(app store.App, c Claims) (string, error) {
	raw, _, err := s.keys.SignWith(s.alg(app), token.TypeM2M, c)
	return raw, err
}

// Authenticate checks an M2M token for app: its type (m2m+jwt, so no other
// kind of token passes), signature, issuer, audience, expiry and m2m claim,
// then (one round trip) that its session is live and its client not
// revoked. Every failure is ErrUnauthenticated.
func (s *Service) Authenticate(ctx context.Context, app store.App, raw string) (_ Session, err error) {
	defer errs.Wrap(&err, "authenticate m2m token")
	_, sess, err := s.verify(ctx, app.ID, raw)
	return sess, err
}

func (s *Service) verify(ctx context.Context, appID, raw string) (Claims, Session, error) {
	var c Claims
	if token.Peek(raw) != token.TypeM2M {
		return c, Session{}, ErrUnauthenticated
	}
	if _, err := s.keys.Verify(raw, token.TypeM2M, &c); err != nil {
		return c, Session{}, ErrUnauthenticated
	}
	now := s.now.Read()
	if err := c.Validate(s.issuer, appID, now, true); err != nil || !c.M2M || c.Session == "" || c.AppID != appID {
		return c, Session{}, ErrUnauthenticated
	}
	sess, err := s.db.GetM2MSession(ctx, c.Session)
	if errors.Is(err, store.ErrNotFound) {
		return c, Session{}, ErrUnauthenticated
	}
	if err != nil {
		return c, Session{}, err
	}
	if sess.AppID != appID || sess.ClientID != c.Subject || sess.RevokedAt != nil || sess.ClientRevokedAt != nil ||
		!now.Before(sess.ExpiresAt) {
		return c, Session{}, ErrUnauthenticated
	}
	return c, sess, nil
}

// RevokeSession ends the session of the M2M token that Authenticate
// accepted: that token (and any other of the session) fails from the next
// request on. A session revoked meanwhile is ErrUnauthenticated.
func (s *Service) RevokeSession(ctx context.Context, app store.App, sess Session) (err error) {
	defer errs.Wrap(&err, "revoke m2m session")
	if sess.AppID != app.ID {
		return ErrUnauthenticated
	}
	if err := s.db.RevokeM2MSession(ctx, sess.ID, s.clock()); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return ErrUnauthenticated
		}
		return err
	}
	s.log.InfoContext(ctx, "m2m session revoked", "app_id", app.ID, "client_id", sess.ClientID, "m2m_session_id", sess.ID)
	return nil
}

// Introspection is what introspecting a token tells (RFC 7662 §2.2).
type Introspection struct {
	Active    bool
	ClientID  string
	Scopes    []string
	IssuedAt  time.Time
	ExpiresAt time.Time
	SessionID string
}

// Introspect tells a backend of app whether an M2M token is active for app
// now, and if so whose it is. Who may read the app may (API keys too). Any
// token that Authenticate would refuse is inactive, without saying why.
func (s *Service) Introspect(ctx context.Context, p access.Principal, app store.App, raw string) (_ Introspection, err error) {
	defer errs.Wrap(&err, "introspect m2m token")
	if err := access.App(ctx, s.db.Queries, p, app.ID, access.Read); err != nil {
		return Introspection{}, err
	}
	c, sess, err := s.verify(ctx, app.ID, raw)
	if errors.Is(err, ErrUnauthenticated) {
		return Introspection{}, nil
	}
	if err != nil {
		return Introspection{}, err
	}
	return Introspection{Active: true, ClientID: sess.ClientID, Scopes: sess.Scopes, IssuedAt: time.Unix(c.IssuedAt, 0).UTC(),
		ExpiresAt: time.Unix(c.Expiry, 0).UTC(), SessionID: sess.ID}, nil
}

// PurgeSessions deletes the sessions that have expired: their tokens fail
// without them (no row, no token), so they are only clutter.
func (s *Service) PurgeSessions(ctx context.Context) (err error) {
	defer errs.Wrap(&err, "purge m2m sessions")
	const batch = 500
	for {
		n, err := s.db.PurgeM2MSessions(ctx, s.clock(), batch)
		if err != nil || n < batch {
			return err
		}
	}
}

// PurgeArgs is the periodic job that purges expired M2M sessions.
type PurgeArgs struct{}

// Kind names the job for River.
func (PurgeArgs) Kind() string { return "m2m_session_purge" }

// PurgeWorker runs PurgeSessions.
type PurgeWorker struct {
	river.WorkerDefaults[PurgeArgs]
	s *Service
}

// NewPurgeWorker returns the worker of the purge.
func NewPurgeWorker(s *Service) *PurgeWorker { return &PurgeWorker{s: s} }

// Work purges what has expired.
func (w *PurgeWorker) Work(ctx context.Context, _ *river.Job[PurgeArgs]) error {
	return w.s.PurgeSessions(ctx)
}

// PurgeJob runs the purge every interval on the elected leader.
func PurgeJob(interval time.Duration, queue string) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval), func() (river.JobArgs, *river.InsertOpts) {
		return PurgeArgs{}, &river.InsertOpts{Queue: queue, MaxAttempts: 3}
	}, &river.PeriodicJobOpts{RunOnStart: true})
}

// clientRecord is an M2M client as the audit log keeps it: never its secret.
type clientRecord struct {
	Name    string   `json:"name"`
	Scopes  []string `json:"scopes"`
	Revoked bool     `json:"revoked"`
}
