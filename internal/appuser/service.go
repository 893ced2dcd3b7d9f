package appuser

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
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

// SchemaOf decodes an app's user-metadata schema.
func SchemaOf(app store.App) Schema {
	var sc Schema
	_ = json.Unmarshal(app.MetaSchema, &sc) // written only by tenant after ValidateSchema
	return sc
}

// Decode decodes a stored user of app: its metadata, and whether it is a
// test user.
func (s *Service) Decode(app store.App, u store.AppUser) User {
	m := map[string]any{}
	_ = json.Unmarshal(u.Meta, &m)
	return User{AppUser: u, Meta: m, Test: s.tests.User(app, u)}
}

// TestIdentities are the server's test identities.
func (s *Service) TestIdentities() TestIdentities { return s.tests }

// CreateInput creates or invites a user. Identifier is an e-mail or phone;
// Email and Phone may be sent instead (or as well, to give both).
type CreateInput struct {
	Identifier string
	Email      string
	Phone      string
	Meta       map[string]any
}

// contacts resolves the identifiers of a create request.
func contacts(app store.App, in CreateInput) (email, phone string, err error) {
	set := func(id Identifier) {
		if id.Kind == KindEmail {
			email = id.Value
		} else {
			phone = id.Value
		}
	}
	if strings.TrimSpace(in.Identifier) != "" {
		id, err := ParseIdentifier(in.Identifier)
		if err != nil {
			return "", "", err
		}
		set(id)
	}
	if strings.TrimSpace(in.Email) != "" {
		id, err := ParseEmail(in.Email)
		if err != nil {
			return "", "", err
		}
		set(id)
	}
	if strings.TrimSpace(in.Phone) != "" {
		id, err := ParsePhone(in.Phone)
		if err != nil {
			return "", "", err
		}
		set(id)
	}
	if email == "" && phone == "" {
		return "", "", fmt.Errorf("%w: an e-mail address or phone number is required", ErrInvalidIdentifier)
	}
	allowed := func(k string) bool {
		for _, a := range app.AllowedIdentifiers {
			if a == k {
				return true
			}
		}
		return false
	}
	if (email != "" && !allowed("email")) || (phone != "" && !allowed("phone")) {
		return "", "", ErrIdentifierNotAllowed
	}
	return email, phone, nil
}

// Create adds an active user for an administrator (Write access to the app).
// Metadata keys the app does not declare, or of the wrong type, are dropped
// and reported.
func (s *Service) Create(ctx context.Context, p access.Principal, app store.App, in CreateInput) (_ User, _ MetaErrors, err error) {
	defer errs.Wrap(&err, "create user")
	if err := administrator(p); err != nil {
		return User{}, nil, err
	}
	return s.create(ctx, p, app, in, store.StatusActive)
}

// SignUp adds an active user who is signing themselves up with identifier
// (signin has checked that the app allows it), as Create does, but with the
// registration rule for metadata (RegistrationMeta): only fields shown at
// registration are kept, and missing required fields are not reported.
func (s *Service) SignUp(ctx context.Context, app store.App, identifier string, meta map[string]any) (_ User, _ MetaErrors, err error) {
	defer errs.Wrap(&err, "sign up")
	return s.create(ctx, access.Self(), app, CreateInput{Identifier: identifier, Meta: meta}, store.StatusActive)
}

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

// newUser validates a create request into the row to store. Metadata keys
// the schema, or the writer's rule, refuses are dropped and reported; an
// administrator also hears of missing required fields.
func (s *Service) newUser(app store.App, in CreateInput, status string, w Writer) (store.AppUser, MetaErrors, error) {
	email, phone, err := contacts(app, in)
	if err != nil {
		return store.AppUser{}, nil, err
	}
	clean, metaErrs, err := cleanMeta(app, in.Meta, w, w == WriterApp)
	if err != nil {
		return store.AppUser{}, nil, err
	}
	for k, v := range clean {
		if v == nil {
			delete(clean, k)
		}
	}
	meta, err := json.Marshal(clean)
	if err != nil {
		return store.AppUser{}, nil, err
	}
	now := s.clock()
	return store.AppUser{ID: newID(), AppID: app.ID, Status: status, Email: email, Phone: phone, Meta: meta,
		CreatedAt: now, UpdatedAt: now}, metaErrs, nil
}

func (s *Service) create(ctx context.Context, p access.Principal, app store.App, in CreateInput, status string) (User, MetaErrors, error) {
	var u store.AppUser
	var metaErrs MetaErrors
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		// Access first: a caller that may not create users learns nothing
		// from how its input would have been judged.
		w, err := writer(ctx, tx.Queries, p, app.ID, WriterRegistration)
		if err != nil {
			return err
		}
		u, metaErrs, err = s.insert(ctx, tx, app, in, status, w)
		return err
	})
	if err != nil {
		return User{}, nil, err
	}
	return s.Decode(app, u), metaErrs, nil
}

// insert validates a create request and stores the user, in tx, with its
// user.created event. ErrUserExists: the app has a user with that contact.
func (s *Service) insert(ctx context.Context, tx *store.Tx, app store.App, in CreateInput, status string, w Writer) (store.AppUser, MetaErrors, error) {
	u, metaErrs, err := s.newUser(app, in, status, w)
	if err != nil {
		return u, nil, err
	}
	u, err = s.insertRow(ctx, tx, app, u, true)
	if err != nil {
		return u, nil, err
	}
	return u, metaErrs, nil
}

// PrepareSignUp builds, without storing it, the active user that signing up
// with identifier creates, with meta as a registrant writes it (cleaned by
// RegistrationMeta first). SignUpTx stores it: signin does so in the
// transaction of the first code or link, so that an unknown address costs
// one transaction, as a known one does.
func (s *Service) PrepareSignUp(app store.App, identifier string, meta map[string]any) (User, error) {
	u, _, err := s.newUser(app, CreateInput{Identifier: identifier, Meta: meta}, store.StatusActive, WriterRegistration)
	if err != nil {
		return User{}, err
	}
	return s.Decode(app, u), nil
}

// SignUpTx stores u, made by PrepareSignUp, inside tx and returns its
// user.created event for the caller to emit with the events of the same
// change (one read of the app's endpoints for all). ErrUserExists: the app
// has a user with that contact (created concurrently). The caller has just
// looked the identifier up, so no second look is taken: the unique
// constraints catch a race.
func (s *Service) SignUpTx(ctx context.Context, tx *store.Tx, app store.App, u store.AppUser) (webhook.Event, error) {
	u, err := s.insertRow(ctx, tx, app, u, false)
	if err != nil {
		return webhook.Event{}, err
	}
	return webhook.Event{Type: webhook.UserCreated, Build: func() webhook.Payload { return s.EventData(app, u) }}, nil
}

// insertRow stores u, a row from newUser, in tx and, when full, checks its
// contacts first and emits its user.created event.
func (s *Service) insertRow(ctx context.Context, tx *store.Tx, app store.App, u store.AppUser, full bool) (store.AppUser, error) {
	email, phone, now := u.Email, u.Phone, u.CreatedAt
	if full { // else one contact, just looked up: the unique constraints suffice
		if err := s.contactsFree(ctx, tx, app, email, phone); err != nil {
			return u, err
		}
	}
	base, err := tx.EnsureBaseUser(ctx, store.BaseUser{ID: newID(), WorkspaceID: app.WorkspaceID, Email: email, Phone: phone, CreatedAt: now})
	if err != nil {
		return u, err
	}
	// With both an e-mail and a phone, they may belong to two different
	// people of the workspace; only give the person a contact that nobody
	// else holds, or the update breaks a unique constraint. With one, the
	// person was found by it.
	if email != "" && phone != "" {
		addEmail, err := unclaimed(ctx, tx, base, email, "")
		if err != nil {
			return u, err
		}
		addPhone, err := unclaimed(ctx, tx, base, "", phone)
		if err != nil {
			return u, err
		}
		if err := tx.SetBaseUserContact(ctx, base.ID, addEmail, addPhone); err != nil {
			return u, err
		}
	}
	u.UserID = base.ID
	if err := tx.CreateAppUser(ctx, u); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return u, ErrUserExists
		}
		return u, err
	}
	if !full {
		return u, nil
	}
	return u, s.events.Emit(ctx, tx, app.ID, webhook.UserCreated, s.EventData(app, u))
}

// contactsFree returns ErrUserExists when app has a user with email or phone.
func (s *Service) contactsFree(ctx context.Context, tx *store.Tx, app store.App, email, phone string) error {
	if _, err := tx.FindAppUser(ctx, app.ID, email, phone); err == nil {
		return ErrUserExists
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if email != "" && phone != "" {
		if _, err := tx.FindAppUser(ctx, app.ID, "", phone); err == nil {
			return ErrUserExists
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// unclaimed returns the one contact given (email or phone) when base may take
// it: it is set and no other person of the workspace has it. Otherwise "".
func unclaimed(ctx context.Context, tx *store.Tx, base store.BaseUser, email, phone string) (string, error) {
	if email == "" && phone == "" {
		return "", nil
	}
	other, err := tx.FindBaseUser(ctx, base.WorkspaceID, email, phone)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return email + phone, nil
	case err != nil:
		return "", err
	case other.ID == base.ID:
		return email + phone, nil
	}
	return "", nil
}

// Invite adds a pending user and sends an invitation whose link carries a
// single-use token (Write access). Inviting a still-pending user again sends
// a new invitation.
func (s *Service) Invite(ctx context.Context, p access.Principal, app store.App, in CreateInput) (_ User, _ MetaErrors, err error) {
	defer errs.Wrap(&err, "invite user")
	if err := s.guardInvitation(ctx, p, app, in); err != nil {
		return User{}, nil, err
	}
	var u store.AppUser
	var metaErrs MetaErrors
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, app.ID, access.Write); err != nil {
			return err
		}
		var err error
		u, metaErrs, err = s.insert(ctx, tx, app, in, store.StatusPending, WriterApp)
		if errors.Is(err, ErrUserExists) {
			// A still-pending user is invited again; anyone else exists.
			existing, ferr := tx.FindAppUser(ctx, app.ID, u.Email, u.Phone)
			if ferr != nil || existing.Status != store.StatusPending {
				return ErrUserExists
			}
			u, err = existing, nil
		}
		if err != nil {
			return err
		}
		tok, short, err := s.newInvitation(ctx, tx, app, u)
		if err != nil {
			return err
		}
		return s.sendInvitation(ctx, tx, app, u, tok, short)
	})
	if err != nil {
		return User{}, nil, err
	}
	return s.Decode(app, u), metaErrs, nil
}

// invitationClaims are read by the client SDK (uuid, user_status, email,
// webauthnEnabled) when the link is opened; the server checks the signature
// and the single-use record.
type invitationClaims struct {
	token.Claims
	UUID            string `json:"uuid"`
	UserStatus      string `json:"user_status"`
	Email           string `json:"email,omitempty"`
	Phone           string `json:"phone,omitempty"`
	WebauthnEnabled bool   `json:"webauthnEnabled"`
	Purpose         string `json:"purpose"`
}

// newInvitation stores, in tx, a single-use invitation for u and returns its
// token. It replaces u's earlier invitations: only the newest link works.
// An invitation that goes by SMS (u has no e-mail address) also gets a short
// link, returned as short.
func (s *Service) newInvitation(ctx context.Context, tx *store.Tx, app store.App, u store.AppUser) (tok, short string, err error) {
	if err := tx.DeleteOpenInvitations(ctx, u.ID); err != nil {
		return "", "", err
	}
	now := s.clock()
	inv := store.Invitation{ID: newID(), AppID: app.ID, AppUserID: u.ID, ExpiresAt: now.Add(InvitationTTL), CreatedAt: now}
	tok, err = s.keys.Sign(token.TypeMagic, invitationClaims{
		Claims: token.Claims{Issuer: s.issuer, Subject: u.ID, Audience: token.Audience{app.ID}, IssuedAt: now.Unix(),
			Expiry: inv.ExpiresAt.Unix(), ID: inv.ID},
		UUID: u.ID, UserStatus: store.StatusPending, Email: u.Email, Phone: u.Phone, Purpose: "invitation",
	})
	if err != nil {
		return "", "", err
	}
	inv.TokenHash = s.hasher.Hash("invitation", tok)
	if u.Email == "" && s.sealer != nil {
		sl, err := NewShortLink(s.sealer, s.hasher, s.baseURL, "invite-short:"+inv.ID, tok)
		if err != nil {
			return "", "", err
		}
		inv.ShortHash, inv.ShortTokenSealed, short = sl.Hash, sl.Sealed, sl.Link
	}
	return tok, short, tx.CreateInvitation(ctx, inv)
}

// sendInvitation commits the invitation's link for u to the send queue
// inside tx, by e-mail when u has an address, else by SMS (as its short
// link, when it has one): a worker sends it once tx commits, and retries
// while the provider fails.
func (s *Service) sendInvitation(ctx context.Context, tx *store.Tx, app store.App, u store.AppUser, tok, short string) error {
	link, to := AppLink(app, "sct_magic", tok), u.Email
	if u.Email == "" {
		to = u.Phone
		if short != "" {
			link = short
		}
	}
	// In the invitee's language when the invitation's metadata names one
	// (the "locale" key), else English. Nothing is sent to a test identity:
	// it signs in with the fixed code, which activates the pending user.
	var meta map[string]any
	_ = json.Unmarshal(u.Meta, &meta) // stored metadata is a JSON object
	return s.outbound.Send(ctx, tx, app, outbound.Request{Template: courier.TemplateInvitation, To: to, Langs: outbound.Languages(meta, nil),
		Vars: courier.Vars{Link: link, ExpiresIn: InvitationTTL, To: u.Email}})
}

// ResolveInvitationShortLink returns the app link an invitation's short
// link (by the keyed hash of its code) stands for. An invitation that was
// used, replaced by a newer one or has expired is ErrInvitationNotFound,
// with its app's id when it is known.
func (s *Service) ResolveInvitationShortLink(ctx context.Context, hash string) (appID, link string, err error) {
	inv, err := s.db.GetInvitationByShortLink(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return "", "", ErrInvitationNotFound
	} else if err != nil {
		return "", "", err
	}
	if inv.UsedAt != nil || !s.clock().Before(inv.ExpiresAt) {
		return inv.AppID, "", ErrInvitationNotFound
	}
	if s.sealer == nil {
		return "", "", errors.New("short links need the master key")
	}
	tok, err := OpenShortLink(s.sealer, inv.ShortTokenSealed, "invite-short:"+inv.ID)
	if err != nil {
		return "", "", err
	}
	app, err := s.db.GetApp(ctx, inv.AppID)
	if err != nil {
		return "", "", err
	}
	return app.ID, AppLink(app, "sct_magic", tok), nil
}

// Invitation is an invitation token of an app whose signature, audience and
// expiry ParseInvitation checked.
type Invitation struct {
	token  string
	claims invitationClaims
}

// ParseInvitation checks an invitation token of app, before the transaction
// that spends it (AcceptInvitation): a token signed by a key this replica
// has not loaded yet makes the keyring read the keys, through a connection
// of its own that no transaction may wait for. ErrInvitationNotFound: not a
// valid invitation of app.
func (s *Service) ParseInvitation(app store.App, tok string) (_ Invitation, err error) {
	defer errs.Wrap(&err, "accept invitation")
	var c invitationClaims
	if _, err := s.keys.Verify(tok, token.TypeMagic, &c); err != nil {
		return Invitation{}, ErrInvitationNotFound
	}
	if err := c.Validate(s.issuer, app.ID, s.now.Read(), true); err != nil || c.Purpose != "invitation" {
		return Invitation{}, ErrInvitationNotFound
	}
	return Invitation{token: tok, claims: c}, nil
}

// AcceptInvitation spends an invitation inside signin's transaction, which
// then starts the user's session: it spends the token once, stores the
// metadata the user gave (keys the schema does not accept are dropped),
// marks the invited contact verified, activates the user and emits
// user.updated. The invitee writes metadata as someone registering
// (RegistrationMeta). An invitation used or replaced by a newer one, or a
// user who is no longer pending, is ErrInvitationNotFound.
func (s *Service) AcceptInvitation(ctx context.Context, tx *store.Tx, app store.App, in Invitation, meta map[string]any) (_ store.AppUser, err error) {
	defer errs.Wrap(&err, "accept invitation")
	tok, c := in.token, in.claims
	if tok == "" {
		return store.AppUser{}, ErrInvitationNotFound
	}
	clean, _, err := RegistrationMeta(app, meta)
	if err != nil {
		return store.AppUser{}, err
	}
	inv, err := tx.GetInvitationByHash(ctx, s.hasher.Hash("invitation", tok))
	if err != nil || inv.AppID != app.ID || inv.AppUserID != c.UUID {
		return store.AppUser{}, invitationNotFound(err)
	}
	now := s.clock()
	won, err := tx.UseInvitation(ctx, inv.ID, now)
	if err != nil {
		return store.AppUser{}, err
	}
	if !won {
		return store.AppUser{}, ErrInvitationNotFound
	}
	u, err := tx.GetAppUser(ctx, app.ID, inv.AppUserID)
	if err != nil || u.Status != store.StatusPending {
		// Only a pending user accepts: once active (signed in some other
		// way, or activated), deactivated or imported, every link is dead.
		return store.AppUser{}, invitationNotFound(err)
	}
	if len(clean) > 0 {
		if u.Meta, err = MergeMeta(u.Meta, clean); err != nil {
			return store.AppUser{}, err
		}
		u.UpdatedAt = now
		if u, err = tx.UpdateAppUser(ctx, u); err != nil {
			return store.AppUser{}, err
		}
	}
	// Accepting proves control of the contact the invitation was sent to (the
	// e-mail address when there was one, else the phone), and only while the
	// user still has it: a contact changed since is not proven by the old link.
	email := c.Email != "" && c.Email == u.Email
	phone := c.Email == "" && c.Phone != "" && c.Phone == u.Phone
	u, err = tx.MarkUserVerified(ctx, app.ID, u.ID, email, phone, now)
	if err != nil {
		return store.AppUser{}, err
	}
	return u, s.events.Emit(ctx, tx, app.ID, webhook.UserUpdated, webhook.UserUpdatedData{UserData: s.EventData(app, u)})
}

func invitationNotFound(err error) error {
	if err == nil || errors.Is(err, store.ErrNotFound) {
		return ErrInvitationNotFound
	}
	return err
}

// AppLink builds a link to the app's login page (or origin) carrying a query parameter.
func AppLink(app store.App, param, value string) string {
	base := app.LoginURL
	if base == "" {
		base = app.Origin
	}
	u, err := url.Parse(base)
	if err != nil {
		u = &url.URL{}
	}
	q := u.Query()
	q.Set(param, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// Get returns one user of the app (Read access).
func (s *Service) Get(ctx context.Context, p access.Principal, app store.App, id string) (_ User, err error) {
	defer errs.Wrap(&err, "get user")
	if err := access.App(ctx, s.db.Queries, p, app.ID, access.Read); err != nil {
		return User{}, err
	}
	return s.get(ctx, app, id)
}

func (s *Service) get(ctx context.Context, app store.App, id string) (User, error) {
	u, err := s.db.GetAppUser(ctx, app.ID, id)
	if err != nil {
		return User{}, notFound(err)
	}
	return s.Decode(app, u), nil
}

func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return ErrUserNotFound
	}
	return err
}

// Lookup finds a user by e-mail or phone; nil (and no error) when unknown or
// when the identifier cannot be valid. Signing in needs it before anyone is
// authenticated; the caller limits how often.
func (s *Service) Lookup(ctx context.Context, app store.App, identifier string) (_ *User, err error) {
	defer errs.Wrap(&err, "look up user")
	id, err := ParseIdentifier(identifier)
	if err != nil {
		return nil, nil
	}
	var email, phone string
	if id.Kind == KindEmail {
		email = id.Value
	} else {
		phone = id.Value
	}
	u, err := s.db.FindAppUser(ctx, app.ID, email, phone)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d := s.Decode(app, u)
	return &d, nil
}

// LookupByID finds a user by id; nil (and no error) when unknown. Like
// Lookup, it serves signing in.
func (s *Service) LookupByID(ctx context.Context, app store.App, id string) (_ *User, err error) {
	defer errs.Wrap(&err, "look up user by id")
	u, err := s.get(ctx, app, id)
	if errors.Is(err, ErrUserNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// Page is one page of a user list.
type Page struct {
	Users      []User
	Total      int
	Page       int
	PerPage    int
	TotalPages int
}

// Page-size bounds.
const (
	DefaultPerPage = 25
	MaxPerPage     = 100
)

// List returns one page (1-based) of the app's users, newest first (Read access).
func (s *Service) List(ctx context.Context, p access.Principal, app store.App, f Filter, page, perPage int) (_ Page, err error) {
	defer errs.Wrap(&err, "list users")
	if err := access.App(ctx, s.db.Queries, p, app.ID, access.Read); err != nil {
		return Page{}, err
	}
	switch f.Status {
	case "", store.StatusActive, store.StatusPending, store.StatusInactive, store.StatusImported:
	default:
		return Page{}, ErrInvalidStatus
	}
	if page < 1 {
		page = 1
	}
	if perPage < 1 {
		perPage = DefaultPerPage
	}
	perPage = min(perPage, MaxPerPage)
	rows, total, err := s.db.ListAppUsers(ctx, app.ID, f, perPage, (page-1)*perPage)
	if err != nil {
		return Page{}, err
	}
	out := Page{Users: make([]User, 0, len(rows)), Total: total, Page: page, PerPage: perPage, TotalPages: (total + perPage - 1) / perPage}
	for _, u := range rows {
		out.Users = append(out.Users, s.Decode(app, u))
	}
	return out, nil
}

// UpdateInput changes a user; nil fields are left alone. Meta is merged into
// the stored metadata: a key set to null is removed.
type UpdateInput struct {
	Meta  map[string]any
	Email *string
	Phone *string
}

// Update changes a user for an administrator (Write access). Metadata that
// breaks the schema is refused whole.
func (s *Service) Update(ctx context.Context, p access.Principal, app store.App, id string, in UpdateInput) (_ User, err error) {
	defer errs.Wrap(&err, "update user")
	if err := administrator(p); err != nil {
		return User{}, err
	}
	return s.update(ctx, p, app, id, in)
}

// UpdateOwnMeta changes the metadata of the signed-in user id, as Update
// does, under the profile rule: only fields with visible_profile, and only
// when the app has profile_management on. Any other key refuses the whole
// update (*MetaInvalidError naming it).
func (s *Service) UpdateOwnMeta(ctx context.Context, app store.App, id string, meta map[string]any) (_ User, err error) {
	defer errs.Wrap(&err, "update own metadata")
	return s.update(ctx, access.Self(), app, id, UpdateInput{Meta: meta})
}

// metaPatch checks a metadata update against the app's schema and the
// writer's rule: nil for no update, refused whole when any key breaks them.
func metaPatch(app store.App, meta map[string]any, w Writer) (map[string]any, error) {
	if meta == nil {
		return nil, nil
	}
	clean, problems, err := cleanMeta(app, meta, w, false)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, &MetaInvalidError{Errors: problems}
	}
	return clean, nil
}

func (s *Service) update(ctx context.Context, p access.Principal, app store.App, id string, in UpdateInput) (User, error) {
	var out store.AppUser
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		w, err := writer(ctx, tx.Queries, p, app.ID, WriterProfile)
		if err != nil {
			return err
		}
		patch, err := metaPatch(app, in.Meta, w)
		if err != nil {
			return err
		}
		u, err := tx.GetAppUser(ctx, app.ID, id)
		if err != nil {
			return notFound(err)
		}
		before := u
		if patch != nil {
			if u.Meta, err = MergeMeta(u.Meta, patch); err != nil {
				return err
			}
		}
		if in.Email != nil {
			if *in.Email == "" {
				u.Email, u.EmailVerified = "", false
			} else {
				e, err := ParseEmail(*in.Email)
				if err != nil {
					return err
				}
				if e.Value != u.Email {
					// As on create; a contact the user already has is kept
					// even if the app has since stopped accepting its kind.
					if !slices.Contains(app.AllowedIdentifiers, string(KindEmail)) {
						return ErrIdentifierNotAllowed
					}
					u.Email, u.EmailVerified = e.Value, false
				}
			}
		}
		if in.Phone != nil {
			if *in.Phone == "" {
				u.Phone, u.PhoneVerified = "", false
			} else {
				p, err := ParsePhone(*in.Phone)
				if err != nil {
					return err
				}
				if p.Value != u.Phone {
					if !slices.Contains(app.AllowedIdentifiers, string(KindPhone)) {
						return ErrIdentifierNotAllowed
					}
					u.Phone, u.PhoneVerified = p.Value, false
				}
			}
		}
		if u.Email == "" && u.Phone == "" {
			return fmt.Errorf("%w: a user needs an e-mail address or a phone number", ErrInvalidIdentifier)
		}
		u.UpdatedAt = s.clock()
		out, err = tx.UpdateAppUser(ctx, u)
		if errors.Is(err, store.ErrConflict) {
			return ErrUserExists
		}
		if err != nil {
			return err
		}
		return s.identifierEvents(ctx, tx, app, before, out)
	})
	if err != nil {
		return User{}, err
	}
	return s.Decode(app, out), nil
}

// SetStatus activates or deactivates a user (Write access). An unknown
// status is ErrInvalidStatus rather than a value no other code understands.
func (s *Service) SetStatus(ctx context.Context, p access.Principal, app store.App, id, status string) (_ User, err error) {
	defer errs.Wrap(&err, "set user status")
	var u store.AppUser
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, app.ID, access.Write); err != nil {
			return err
		}
		switch status {
		case store.StatusActive, store.StatusInactive, store.StatusPending, store.StatusImported:
		default:
			return ErrInvalidStatus
		}
		now := s.clock()
		var err error
		if u, err = tx.SetAppUserStatus(ctx, app.ID, id, status, now); err != nil {
			return err
		}
		// A change of status ends the invitations sent before it: setting a
		// user back to pending does not revive an old link.
		if err := tx.DeleteOpenInvitations(ctx, id); err != nil {
			return err
		}
		// A deactivated user's sessions end with it; reactivating does not revive them.
		if status == store.StatusInactive {
			if err := tx.RevokeUserSessions(ctx, app.ID, id, now); err != nil {
				return err
			}
		}
		return s.events.Emit(ctx, tx, app.ID, webhook.UserUpdated, webhook.UserUpdatedData{UserData: s.EventData(app, u)})
	})
	if err != nil {
		return User{}, notFound(err)
	}
	return s.Decode(app, u), nil
}

// Delete removes a user of the app (Write access).
func (s *Service) Delete(ctx context.Context, p access.Principal, app store.App, id string) (err error) {
	defer errs.Wrap(&err, "delete user")
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, app.ID, access.Write); err != nil {
			return err
		}
		return notFound(tx.DeleteAppUser(ctx, app.ID, id))
	})
}

// MetaComplete reports whether a user has filled in every metadata field the
// app requires. The client SDK asks it while signing in.
func (s *Service) MetaComplete(ctx context.Context, app store.App, id string) (_ bool, err error) {
	defer errs.Wrap(&err, "check user metadata")
	u, err := s.get(ctx, app, id)
	if err != nil {
		return false, err
	}
	return SchemaOf(app).Complete(u.Meta), nil
}

// MarkVerified records, inside signin's transaction, that a user proved
// control of their e-mail address or phone number, and activates a pending
// or imported user. It emits no event: the verification event says it.
func (s *Service) MarkVerified(ctx context.Context, tx *store.Tx, app store.App, id string, email, phone bool) (_ store.AppUser, err error) {
	defer errs.Wrap(&err, "mark user verified")
	u, err := tx.MarkUserVerified(ctx, app.ID, id, email, phone, s.clock())
	return u, notFound(err)
}

// ChangeIdentifier replaces, inside signin's transaction, a user's e-mail
// address or phone number (whichever kind value is) with value, which the
// user has just proved they control (a change_identifier challenge): it is
// stored verified. It emits user.updated and user.identifier_changed, and
// returns the user after and before. ErrUserExists: another user has it.
func (s *Service) ChangeIdentifier(ctx context.Context, tx *store.Tx, app store.App, id, value string) (after, before store.AppUser, err error) {
	defer errs.Wrap(&err, "change identifier")
	parsed, err := ParseIdentifier(value)
	if err != nil {
		return store.AppUser{}, store.AppUser{}, err
	}
	u, err := tx.GetAppUser(ctx, app.ID, id)
	if err != nil {
		return store.AppUser{}, store.AppUser{}, notFound(err)
	}
	before = u
	if parsed.Kind == KindEmail {
		u.Email, u.EmailVerified = parsed.Value, true
	} else {
		u.Phone, u.PhoneVerified = parsed.Value, true
	}
	u.UpdatedAt = s.clock()
	after, err = tx.UpdateAppUser(ctx, u)
	if errors.Is(err, store.ErrConflict) {
		return store.AppUser{}, store.AppUser{}, ErrUserExists
	}
	if err != nil {
		return store.AppUser{}, store.AppUser{}, err
	}
	return after, before, s.identifierEvents(ctx, tx, app, before, after)
}

// identifierEvents emits user.updated and, when the e-mail or phone
// changed, user.identifier_changed with the previous values.
func (s *Service) identifierEvents(ctx context.Context, tx *store.Tx, app store.App, before, after store.AppUser) error {
	if err := s.events.Emit(ctx, tx, app.ID, webhook.UserUpdated, webhook.UserUpdatedData{UserData: s.EventData(app, after)}); err != nil {
		return err
	}
	if before.Email != after.Email || before.Phone != after.Phone {
		return s.events.Emit(ctx, tx, app.ID, webhook.UserIdentifierChanged, webhook.UserIdentifierChangedData{
			UserData: s.EventData(app, after), Previous: webhook.PreviousIdentifiers{Email: optional(before.Email), Phone: optional(before.Phone)}})
	}
	return nil
}

// SyncPasskeys sets, inside signin's transaction, a user's webauthn_enabled
// and webauthn_types from the passkeys the user has now (signin owns them),
// and returns the user. The passkey change's event carries the user.
func (s *Service) SyncPasskeys(ctx context.Context, tx *store.Tx, app store.App, id string) (_ store.AppUser, err error) {
	defer errs.Wrap(&err, "sync passkey state")
	u, err := tx.SyncPasskeyState(ctx, app.ID, id, s.clock())
	return u, notFound(err)
}

// WebauthnHandle returns a user's WebAuthn user handle: 64 random bytes,
// no personal data, made at the first registration (create) and never
// changed. Without create, a user with none has nil.
func (s *Service) WebauthnHandle(ctx context.Context, q store.Queries, id string, create bool) (_ []byte, err error) {
	defer errs.Wrap(&err, "webauthn user handle")
	h, err := q.WebauthnHandle(ctx, id)
	if err != nil || h != nil || !create {
		return h, notFound(err)
	}
	fresh := make([]byte, 64)
	_, _ = rand.Read(fresh) // crypto/rand never fails on supported systems
	return q.EnsureWebauthnHandle(ctx, id, fresh)
}

// RecordSignIn records, inside signin's transaction, that a user signed in
// by a method that verifies no contact (a passkey): last_used_at.
func (s *Service) RecordSignIn(ctx context.Context, tx *store.Tx, app store.App, id string) (err error) {
	defer errs.Wrap(&err, "record sign-in")
	return tx.TouchAppUser(ctx, app.ID, id, s.clock())
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
