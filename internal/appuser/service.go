package appuser

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Errors returned by the service.
var (
	ErrUserExists   = errors.New("user already exists")
	ErrUserNotFound = errors.New("user not found")
	// ErrIdentifierNotAllowed is an identifier kind the app does not accept.
	ErrIdentifierNotAllowed = errors.New("identifier type not allowed for this app")
	// ErrInvalidStatus is an unknown status, as a filter or a new status.
	ErrInvalidStatus = errors.New("invalid status")
	// ErrInvitationNotFound is an unknown, expired, used or forged invitation token.
	ErrInvitationNotFound = errors.New("invitation not found or expired")
)

// User statuses.
const (
	StatusActive   = store.StatusActive
	StatusPending  = store.StatusPending
	StatusInactive = store.StatusInactive
	StatusImported = store.StatusImported
)

// Filter narrows List; zero fields do not filter.
type Filter = store.UserFilter

// UserCursor is a user's place in a list (Filter.After): keyset pages.
type UserCursor = store.UserCursor

// SortLastSignIn orders a list by last sign-in (Filter.Sort).
const SortLastSignIn = store.SortLastSignIn

// MetaInvalidError refuses an update whose user_meta breaks the app's schema.
type MetaInvalidError struct{ Errors MetaErrors }

func (e *MetaInvalidError) Error() string { return "user_meta does not match the app's schema" }

// InvitationTTL is how long an invitation link works.
const InvitationTTL = 7 * 24 * time.Hour

// User is an app user with its metadata decoded.
type User struct {
	store.AppUser
	Meta map[string]any
	// Test: the user is a test user of the app (TestIdentities.User).
	Test bool
}

// Service manages the users of apps, and is the only writer of their rows.
// Methods an administrator calls take the caller's access.Principal; sign-up
// and a user's changes to their own metadata come from signin, which has
// authenticated the user, and act as access.Self.
type Service struct {
	db       *store.DB
	outbound *outbound.Service
	keys     *token.Keyring
	hasher   *token.Hasher
	sealer   *token.Sealer
	baseURL  string
	issuer   string
	events   *webhook.Emitter
	tests    TestIdentities
	now      store.Clock
	log      *slog.Logger
}

// Deps are the Service's collaborators.
type Deps struct {
	DB *store.DB
	// Outbound guards, renders and queues invitations.
	Outbound *outbound.Service
	Keyring  *token.Keyring
	Hasher   *token.Hasher
	// Sealer seals the token of an invitation's short link (invitations by
	// SMS); nil sends those with the full link.
	Sealer *token.Sealer
	// BaseURL is the server's public URL, which short links start with.
	BaseURL string
	Issuer  string
	// Events receives user.created, user.updated and user.identifier_changed
	// inside the transaction of the change; nil emits nothing.
	Events *webhook.Emitter
	// TestIdentities are the server's test identities; the zero value has none.
	TestIdentities TestIdentities
	Now            func() time.Time
	Log            *slog.Logger
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{db: d.DB, outbound: d.Outbound, keys: d.Keyring, hasher: d.Hasher, sealer: d.Sealer, baseURL: d.BaseURL,
		issuer: d.Issuer, events: d.Events, tests: d.TestIdentities, now: d.Now, log: d.Log}
}

// clock is the time now as the store keeps it (store.Clock.Now).
func (s *Service) clock() time.Time { return s.now.Now() }

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// Decode decodes a stored user of app: its metadata, and whether it is a
// test user.
func (s *Service) Decode(app store.App, u store.AppUser) User {
	m := map[string]any{}
	_ = json.Unmarshal(u.Meta, &m)
	return User{AppUser: u, Meta: m, Test: s.tests.User(app, u)}
}

// TestIdentities are the server's test identities.
func (s *Service) TestIdentities() TestIdentities { return s.tests }

// administrator refuses access.Self where an administrator's method is
// called: create and update let it through to the user's own rule, so
// without this a user's principal handed to Create or Update would skip the
// access check.
func administrator(p access.Principal) error {
	if p.Kind == access.KindSelf {
		return access.ErrForbidden
	}
	return nil
}

// writer checks, in q, that p may write the app's users and returns the rule
// it writes metadata under: access.Self (the user, authenticated by signin)
// writes under own; anyone else must have Write access to the app and
// writes as the app.
func writer(ctx context.Context, q store.Queries, p access.Principal, appID string, own Writer) (Writer, error) {
	if p.Kind == access.KindSelf {
		return own, nil
	}
	if err := access.App(ctx, q, p, appID, access.Write); err != nil {
		return 0, err
	}
	return WriterApp, nil
}

func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return ErrUserNotFound
	}
	return err
}

// MergeMeta applies a cleaned metadata patch to stored metadata: a key set
// to nil is removed, any other value replaces the stored one.
func MergeMeta(stored []byte, patch map[string]any) ([]byte, error) {
	cur := map[string]any{}
	_ = json.Unmarshal(stored, &cur) // stored metadata is always a JSON object
	for k, v := range patch {
		if v == nil {
			delete(cur, k)
		} else {
			cur[k] = v
		}
	}
	return json.Marshal(cur)
}

// EventData is a user of app as webhook events carry it, with the test flag.
func (s *Service) EventData(app store.App, u store.AppUser) webhook.UserData {
	return EventData(u, s.tests.User(app, u))
}

// EventData is a user as webhook events carry it: no secrets, no tokens. A
// test user (test) carries "test": true in the user and in the data, as
// every event about a test identity does.
func EventData(u store.AppUser, test bool) webhook.UserData {
	meta := map[string]any{}
	_ = json.Unmarshal(u.Meta, &meta)
	types := u.WebauthnTypes
	if types == nil {
		types = []string{}
	}
	return webhook.UserData{Test: test, User: webhook.EventUser{
		ID: u.ID, AppID: u.AppID, UserID: u.UserID, Status: u.Status,
		Email: optional(u.Email), Phone: optional(u.Phone),
		EmailVerified: u.EmailVerified, PhoneVerified: u.PhoneVerified,
		WebauthnEnabled: u.WebauthnEnabled, WebauthnTypes: types,
		UserMeta: meta, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt, Test: test,
	}}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
