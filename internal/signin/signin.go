// Package signin signs users in: one-time codes, magic links with
// cross-device polling, sessions, and access and refresh tokens.
package signin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/metrics"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Errors returned by the service; httpapi maps each to a response.
var (
	// ErrInvalidCode is a wrong, expired or used one-time code.
	ErrInvalidCode = errors.New("invalid or expired code")
	// ErrTooManyAttempts: the challenge failed after its last wrong code, or
	// the user spent the hourly budget of wrong codes from this source.
	ErrTooManyAttempts = errors.New("too many attempts")
	// ErrCodeEntryLocked: the user's consecutive wrong codes, from any
	// source, reached the lock threshold; codes are refused until the user
	// signs in another way (a magic link, say).
	ErrCodeEntryLocked = errors.New("code entry locked")
	// ErrMagicLinkNotFound is an unknown, expired or already used magic link
	// (or invitation), and a poll handle whose tokens were collected.
	ErrMagicLinkNotFound = errors.New("magic link not found or expired")
	// ErrMagicLinkDenied: the recipient answered "this was not me" on the
	// consent page; the request is over.
	ErrMagicLinkDenied = fmt.Errorf("%w: denied by its recipient", ErrMagicLinkNotFound)
	// ErrMagicLinkPending: the link has not been opened yet.
	ErrMagicLinkPending = errors.New("magic link not yet activated")
	// ErrUnauthenticated is a missing, invalid, expired or revoked user token.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrSessionNotFound is a session that does not exist or is not the caller's.
	ErrSessionNotFound = errors.New("session not found")
)

// RateLimitedError refuses a request over a limit.
type RateLimitedError struct {
	RetryAfter time.Duration
	// SlowDown: a magic-link poll came sooner than the poll interval allows.
	SlowDown bool
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("rate limited; retry after %s", e.RetryAfter)
}

// Limits are the rate limits of sign-in.
type Limits struct {
	SendPerIdentifier ratelimit.Rule
	SendPerIP         ratelimit.Rule
	VerifyPerIP       ratelimit.Rule
	// LookupPerIP bounds anonymous lookups (by identifier, by user id, and of
	// a user's metadata state): existence oracles the client SDK needs. One
	// budget per client IP for all of them.
	LookupPerIP ratelimit.Rule
	// CodeFailuresPerHour is the budget of wrong codes per user and source
	// (client IP) in a rolling hour by attempt time, across every challenge:
	// resends cannot reset it, and a stranger's guesses do not spend the
	// owner's. 0 turns it off.
	CodeFailuresPerHour int
	// CodeLockAfter is how many consecutive wrong codes of a user, from any
	// source, lock code entry (email_otp and sms_otp) for that user until a
	// successful sign-in by another method; the user is told once. Any
	// successful sign-in starts the count afresh. 0 never locks.
	CodeLockAfter int
	// PollInterval is the shortest time between two magic-link status polls.
	PollInterval time.Duration
	// ChallengePerIP and ChallengePerUser bound POST /challenges;
	// UnknownPerIP bounds its answers for unknown identifiers (an existence
	// oracle the interface keeps: security R-RL-5).
	ChallengePerIP   ratelimit.Rule
	ChallengePerUser ratelimit.Rule
	UnknownPerIP     ratelimit.Rule
	// ShortLinkPerIP bounds the short links ({base_url}/m/{code}) opened
	// from one client IP, found or not: guessing codes.
	ShortLinkPerIP ratelimit.Rule
}

// DefaultLimits are the security bar's numbers.
func DefaultLimits() Limits {
	return Limits{
		SendPerIdentifier:   ratelimit.Rule{Limit: 5, Period: 10 * time.Minute},
		SendPerIP:           ratelimit.Rule{Limit: 30, Period: 10 * time.Minute},
		VerifyPerIP:         ratelimit.Rule{Limit: 60, Period: 10 * time.Minute},
		LookupPerIP:         ratelimit.Rule{Limit: 120, Period: 10 * time.Minute},
		CodeFailuresPerHour: 10,
		CodeLockAfter:       100,
		PollInterval:        2 * time.Second,
		ChallengePerIP:      ratelimit.Rule{Limit: 60, Period: 10 * time.Minute},
		ChallengePerUser:    ratelimit.Rule{Limit: 10, Period: 10 * time.Minute},
		UnknownPerIP:        ratelimit.Rule{Limit: 20, Period: time.Hour},
		ShortLinkPerIP:      ratelimit.Rule{Limit: 30, Period: 10 * time.Minute},
	}
}

// Settings are the token and session policy.
type Settings struct {
	Issuer string
	// SessionLifetime is a session's absolute lifetime, however often it refreshes.
	SessionLifetime time.Duration
	// RefreshGrace is how long a rotated refresh token still returns its
	// successor (for retries and racing tabs) before reuse revokes the session.
	RefreshGrace time.Duration
	// CodeLifetime is how long a one-time code works (at most 10 minutes).
	CodeLifetime time.Duration
	// BaseURL is this server's public URL; e-mailed links point to its
	// magic-link consent page.
	BaseURL string
	// AccessTokenAlg signs the access tokens of apps that keep the default
	// ("" = ES256).
	AccessTokenAlg string
}

// Limiter takes one event from a rate-limit bucket.
type Limiter interface {
	Allow(ctx context.Context, key string, r ratelimit.Rule) (ratelimit.Result, error)
}

// Service signs users in.
type Service struct {
	db     *store.DB
	keys   *token.Keyring
	sealer *token.Sealer
	hasher *token.Hasher
	// mac signs refresh tokens: only this server reads them.
	mac      *token.MAC
	out      *outbound.Service
	users    *appuser.Service
	limiter  Limiter
	events   *webhook.Emitter
	limits   Limits
	settings Settings
	push     PushSender
	verified verifiedTokens
	now      store.Clock
	log      *slog.Logger
	metrics  *metrics.Metrics
}

// Deps are the Service's collaborators.
type Deps struct {
	DB      *store.DB
	Keyring *token.Keyring
	Sealer  *token.Sealer
	Hasher  *token.Hasher
	MAC     *token.MAC
	// Outbound guards, renders and queues every code, link and notice:
	// each is committed with its challenge or cause, and workers send it.
	Outbound *outbound.Service
	Users    *appuser.Service
	Limiter  Limiter
	// Events receives verification and auth.login.failed events inside the
	// transaction of the change; nil emits nothing.
	Events   *webhook.Emitter
	Limits   Limits
	Settings Settings
	// Push, when set, tells a user's devices that a push challenge waits
	// (a Web Push sender, say); without it devices poll /push/pending.
	Push PushSender
	Now  func() time.Time
	Log  *slog.Logger
	// Metrics counts sign-ins and refreshes by outcome; nil counts nothing.
	Metrics *metrics.Metrics
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Settings.SessionLifetime <= 0 {
		d.Settings.SessionLifetime = 30 * 24 * time.Hour
	}
	if d.Settings.CodeLifetime <= 0 || d.Settings.CodeLifetime > 10*time.Minute {
		d.Settings.CodeLifetime = 10 * time.Minute
	}
	if d.Settings.RefreshGrace < 0 {
		d.Settings.RefreshGrace = 0
	}
	return &Service{db: d.DB, keys: d.Keyring, sealer: d.Sealer, hasher: d.Hasher, mac: d.MAC, out: d.Outbound,
		users: d.Users, limiter: d.Limiter, events: d.Events, limits: d.Limits, settings: d.Settings,
		push: d.Push, now: d.Now, log: d.Log, metrics: d.Metrics}
}

// clock is the time now as the store keeps it (store.Clock.Now).
func (s *Service) clock() time.Time { return s.now.Now() }

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// allow takes one event from each bucket, all of them, and refuses with the
// longest wait if any is empty.
func (s *Service) allow(ctx context.Context, buckets ...bucket) error {
	var wait time.Duration
	for _, b := range buckets {
		if b.rule.Disabled() || s.limiter == nil {
			continue
		}
		res, err := s.limiter.Allow(ctx, b.key, b.rule)
		if err != nil {
			return err
		}
		if !res.Allowed && res.RetryAfter > wait {
			wait = res.RetryAfter
		}
	}
	if wait > 0 {
		return &RateLimitedError{RetryAfter: wait}
	}
	return nil
}

type bucket struct {
	key  string
	rule ratelimit.Rule
}

// Client describes the device making a request.
type Client struct {
	IP        string
	UserAgent string
	// Location is the approximate place of IP, when a trusted proxy said it.
	Location string
	// Languages are the request's Accept-Language entries, most preferred
	// first: the language of the messages sent for it, after the user's own.
	Languages []string
}
