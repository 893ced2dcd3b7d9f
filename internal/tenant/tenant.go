// Package tenant manages workspaces, their members and roles, apps and their
// settings, API secrets, API keys and the server's token-signing keys.
// Methods that act for a caller take its access.Principal and decide there,
// reading the caller's role in the transaction of the change.
package tenant

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/ttlcache"
)

// Errors returned by the service; httpapi maps each to a response.
var (
	ErrWorkspaceNotFound = errors.New("workspace not found")
	ErrAppNotFound       = errors.New("app not found")
	ErrMemberNotFound    = errors.New("member not found")
	ErrMemberExists      = errors.New("member already exists")
	ErrSlugTaken         = errors.New("slug already taken")
	ErrLastOwner         = errors.New("a workspace must keep at least one owner")
	ErrUnauthorized      = errors.New("unauthorized")
	ErrSecretNotFound    = errors.New("api secret not found")
	ErrAPIKeyNotFound    = errors.New("api key not found")
)

// AppCacheTTL is how long App may serve an app without reading it again: a
// change made by another replica or the command line is seen within it; a
// change made through this Service, at once.
const AppCacheTTL = 2 * time.Second

// Service is the tenant domain.
type Service struct {
	db     *store.DB
	keys   *token.Keyring
	sealer *token.Sealer
	hasher *token.Hasher
	issuer string
	// accessAlg signs the access tokens of apps that keep the default.
	accessAlg string
	now       store.Clock
	log       *slog.Logger
	apps      *ttlcache.Cache[App]
	// spare holds a key made for an app change that was not stored (see
	// preparedKey), by algorithm.
	spareMu sync.Mutex
	spare   map[string]store.SigningKey
}

// Deps are the Service's collaborators.
type Deps struct {
	DB      *store.DB
	Keyring *token.Keyring
	Sealer  *token.Sealer
	Hasher  *token.Hasher
	Issuer  string
	// AccessTokenAlg is the server's default access-token algorithm ("" = ES256).
	AccessTokenAlg string
	Now            func() time.Time
	Log            *slog.Logger
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.AccessTokenAlg == "" {
		d.AccessTokenAlg = token.Algorithm
	}
	return &Service{db: d.DB, keys: d.Keyring, sealer: d.Sealer, hasher: d.Hasher, issuer: d.Issuer, accessAlg: d.AccessTokenAlg, now: d.Now, log: d.Log,
		apps: ttlcache.New[App](AppCacheTTL, d.Now), spare: map[string]store.SigningKey{}}
}

// clock is the time now as the store keeps it (store.Clock.Now).
func (s *Service) clock() time.Time { return s.now.Now() }

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// notFound maps store.ErrNotFound to the domain error e.
func notFound(err, e error) error {
	if errors.Is(err, store.ErrNotFound) {
		return e
	}
	return err
}

// conflict maps store.ErrConflict to the domain error e.
func conflict(err, e error) error {
	if errors.Is(err, store.ErrConflict) {
		return e
	}
	return err
}
