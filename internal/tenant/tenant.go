// Package tenant manages workspaces, their members and roles, apps and their
// settings, API secrets, API keys and the server's token-signing keys.
package tenant

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// Errors returned by the service; httpapi maps each to a response.
var (
	ErrWorkspaceNotFound = errors.New("workspace not found")
	ErrAppNotFound       = errors.New("app not found")
	ErrMemberNotFound    = errors.New("member not found")
	ErrMemberExists      = errors.New("member already exists")
	ErrSlugTaken         = errors.New("slug already taken")
	ErrLastOwner         = errors.New("a workspace must keep at least one owner")
	ErrForbidden         = errors.New("forbidden")
	ErrUnauthorized      = errors.New("unauthorized")
	ErrSecretNotFound    = errors.New("api secret not found")
	ErrAPIKeyNotFound    = errors.New("api key not found")
)

// InvalidError is a request field that breaks a rule.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return fmt.Sprintf("%s %s", e.Field, e.Reason) }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Roles of workspace members.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// ValidRole reports whether r is a known role.
func ValidRole(r string) bool { return r == RoleOwner || r == RoleAdmin || r == RoleMember }

// Service is the tenant domain.
type Service struct {
	db     *store.DB
	keys   *token.Keyring
	sealer *token.Sealer
	hasher *token.Hasher
	issuer string
	now    func() time.Time
	log    *slog.Logger
}

// Deps are the Service's collaborators.
type Deps struct {
	DB      *store.DB
	Keyring *token.Keyring
	Sealer  *token.Sealer
	Hasher  *token.Hasher
	Issuer  string
	Now     func() time.Time
	Log     *slog.Logger
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{db: d.DB, keys: d.Keyring, sealer: d.Sealer, hasher: d.Hasher, issuer: d.Issuer, now: d.Now, log: d.Log}
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// notFound maps store.ErrNotFound to the domain error e.
func notFound(err, e error) error {
	if errors.Is(err, store.ErrNotFound) {
		return e
	}
	return err
}
