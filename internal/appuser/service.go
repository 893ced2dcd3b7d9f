package appuser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
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
)

// MetaInvalidError refuses an update whose user_meta breaks the app's schema.
type MetaInvalidError struct{ Errors MetaErrors }

func (e *MetaInvalidError) Error() string { return "user_meta does not match the app's schema" }

// InvitationTTL is how long an invitation link works.
const InvitationTTL = 7 * 24 * time.Hour

// User is an app user with its metadata decoded.
type User struct {
	store.AppUser
	Meta map[string]any
}

// Service manages the users of apps.
type Service struct {
	db        *store.DB
	courier   courier.Provider
	templates *courier.Templates
	keys      *token.Keyring
	hasher    *token.Hasher
	issuer    string
	events    *webhook.Emitter
	now       func() time.Time
	log       *slog.Logger
}

// Deps are the Service's collaborators.
type Deps struct {
	DB        *store.DB
	Courier   courier.Provider
	Templates *courier.Templates
	Keyring   *token.Keyring
	Hasher    *token.Hasher
	Issuer    string
	// Events receives user.created, user.updated and user.identifier_changed
	// inside the transaction of the change; nil emits nothing.
	Events *webhook.Emitter
	Now    func() time.Time
	Log    *slog.Logger
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{db: d.DB, courier: d.Courier, templates: d.Templates, keys: d.Keyring, hasher: d.Hasher,
		issuer: d.Issuer, events: d.Events, now: d.Now, log: d.Log}
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// SchemaOf decodes an app's user-metadata schema.
func SchemaOf(app store.App) Schema {
	var sc Schema
	_ = json.Unmarshal(app.MetaSchema, &sc) // written only by tenant after ValidateSchema
	return sc
}

func decode(u store.AppUser) User {
	m := map[string]any{}
	_ = json.Unmarshal(u.Meta, &m)
	return User{AppUser: u, Meta: m}
}

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

// Create adds an active user. Metadata keys the app does not declare, or of
// the wrong type, are dropped and reported.
func (s *Service) Create(ctx context.Context, app store.App, in CreateInput) (User, MetaErrors, error) {
	return s.create(ctx, app, in, store.StatusActive)
}

func (s *Service) create(ctx context.Context, app store.App, in CreateInput, status string) (User, MetaErrors, error) {
	email, phone, err := contacts(app, in)
	if err != nil {
		return User{}, nil, err
	}
	clean, metaErrs, err := SchemaOf(app).Clean(in.Meta, true)
	if err != nil {
		return User{}, nil, err
	}
	for k, v := range clean {
		if v == nil {
			delete(clean, k)
		}
	}
	meta, err := json.Marshal(clean)
	if err != nil {
		return User{}, nil, err
	}
	now := s.clock()
	u := store.AppUser{ID: newID(), AppID: app.ID, Status: status, Email: email, Phone: phone, Meta: meta, CreatedAt: now, UpdatedAt: now}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
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
		base, err := tx.EnsureBaseUser(ctx, store.BaseUser{ID: newID(), WorkspaceID: app.WorkspaceID, Email: email, Phone: phone, CreatedAt: now})
		if err != nil {
			return err
		}
		// With both an e-mail and a phone, they may belong to two different
		// people of the workspace; only give the person a contact that nobody
		// else holds, or the update breaks a unique constraint. With one, the
		// person was found by it.
		if email != "" && phone != "" {
			addEmail, err := unclaimed(ctx, tx, base, email, "")
			if err != nil {
				return err
			}
			addPhone, err := unclaimed(ctx, tx, base, "", phone)
			if err != nil {
				return err
			}
			if err := tx.SetBaseUserContact(ctx, base.ID, addEmail, addPhone); err != nil {
				return err
			}
		}
		u.UserID = base.ID
		if err := tx.CreateAppUser(ctx, u); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return ErrUserExists
			}
			return err
		}
		return s.events.Emit(ctx, tx, app.ID, webhook.UserCreated, EventData(u))
	})
	if err != nil {
		return User{}, nil, err
	}
	return decode(u), metaErrs, nil
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
// single-use token. Inviting a still-pending user again sends a new invitation.
func (s *Service) Invite(ctx context.Context, app store.App, in CreateInput) (User, MetaErrors, error) {
	u, metaErrs, err := s.create(ctx, app, in, store.StatusPending)
	if errors.Is(err, ErrUserExists) {
		email, phone, cerr := contacts(app, in)
		if cerr != nil {
			return User{}, nil, cerr
		}
		existing, ferr := s.db.FindAppUser(ctx, app.ID, email, phone)
		if ferr != nil || existing.Status != store.StatusPending {
			return User{}, nil, ErrUserExists
		}
		u, err = decode(existing), nil
	}
	if err != nil {
		return User{}, nil, err
	}
	if err := s.sendInvitation(ctx, app, u.AppUser); err != nil {
		return User{}, nil, err
	}
	return u, metaErrs, nil
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

func (s *Service) sendInvitation(ctx context.Context, app store.App, u store.AppUser) error {
	now := s.clock()
	inv := store.Invitation{ID: newID(), AppID: app.ID, AppUserID: u.ID, ExpiresAt: now.Add(InvitationTTL), CreatedAt: now}
	tok, err := s.keys.Sign(token.TypeMagic, invitationClaims{
		Claims: token.Claims{Issuer: s.issuer, Subject: u.ID, Audience: token.Audience{app.ID}, IssuedAt: now.Unix(),
			Expiry: inv.ExpiresAt.Unix(), ID: inv.ID},
		UUID: u.ID, UserStatus: store.StatusPending, Email: u.Email, Phone: u.Phone, Purpose: "invitation",
	})
	if err != nil {
		return err
	}
	inv.TokenHash = s.hasher.Hash("invitation", tok)
	if err := s.db.CreateInvitation(ctx, inv); err != nil {
		return err
	}
	link := AppLink(app, "sct_magic", tok)
	msg := courier.Message{Link: link, AppID: app.ID}
	if u.Email != "" {
		msg.Channel, msg.To = courier.ChannelEmail, u.Email
		msg.Subject, msg.Text, msg.HTML, err = s.templates.Render("invitation", courier.InvitationData{
			AppName: app.Name, Link: link, ExpiresIn: "7 days", To: u.Email})
		if err != nil {
			return err
		}
	} else {
		msg.Channel, msg.To = courier.ChannelSMS, u.Phone
		msg.Text = fmt.Sprintf("You're invited to %s. Accept within 7 days: %s", app.Name, link)
	}
	if _, err := s.courier.Send(ctx, msg); err != nil {
		// The user and invitation are saved; the operator can invite again.
		s.log.Error("invitation not delivered", "app_id", app.ID, "user_id", u.ID, "to", courier.MaskAddress(msg.To), "err", err)
		return fmt.Errorf("send invitation: %w", err)
	}
	return nil
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

// Get returns one user of the app.
func (s *Service) Get(ctx context.Context, app store.App, id string) (User, error) {
	u, err := s.db.GetAppUser(ctx, app.ID, id)
	if err != nil {
		return User{}, notFound(err)
	}
	return decode(u), nil
}

func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return ErrUserNotFound
	}
	return err
}

// Lookup finds a user by e-mail or phone; nil (and no error) when unknown or
// when the identifier cannot be valid.
func (s *Service) Lookup(ctx context.Context, app store.App, identifier string) (*User, error) {
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
	d := decode(u)
	return &d, nil
}

// LookupByID finds a user by id; nil (and no error) when unknown.
func (s *Service) LookupByID(ctx context.Context, app store.App, id string) (*User, error) {
	u, err := s.Get(ctx, app, id)
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

// List returns one page (1-based) of the app's users, newest first.
func (s *Service) List(ctx context.Context, app store.App, f store.UserFilter, page, perPage int) (Page, error) {
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
		out.Users = append(out.Users, decode(u))
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

// Update changes a user. Metadata that breaks the schema is refused whole.
func (s *Service) Update(ctx context.Context, app store.App, id string, in UpdateInput) (User, error) {
	var patch map[string]any
	if in.Meta != nil {
		clean, errs, err := SchemaOf(app).Clean(in.Meta, false)
		if err != nil {
			return User{}, err
		}
		if len(errs) > 0 {
			return User{}, &MetaInvalidError{Errors: errs}
		}
		patch = clean
	}
	var out store.AppUser
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
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
		if err := s.events.Emit(ctx, tx, app.ID, webhook.UserUpdated, EventData(out)); err != nil {
			return err
		}
		if before.Email != out.Email || before.Phone != out.Phone {
			data := EventData(out)
			data["previous"] = map[string]any{"email": optional(before.Email), "phone": optional(before.Phone)}
			return s.events.Emit(ctx, tx, app.ID, webhook.UserIdentifierChanged, data)
		}
		return nil
	})
	if err != nil {
		return User{}, err
	}
	return decode(out), nil
}

// SetStatus activates or deactivates a user. An unknown status is
// ErrInvalidStatus rather than a value no other code understands.
func (s *Service) SetStatus(ctx context.Context, app store.App, id, status string) (User, error) {
	switch status {
	case store.StatusActive, store.StatusInactive, store.StatusPending, store.StatusImported:
	default:
		return User{}, ErrInvalidStatus
	}
	var u store.AppUser
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		now := s.clock()
		var err error
		if u, err = tx.SetAppUserStatus(ctx, app.ID, id, status, now); err != nil {
			return err
		}
		// A deactivated user's sessions end with it; reactivating does not revive them.
		if status == store.StatusInactive {
			if err := tx.RevokeUserSessions(ctx, app.ID, id, now); err != nil {
				return err
			}
		}
		return s.events.Emit(ctx, tx, app.ID, webhook.UserUpdated, EventData(u))
	})
	if err != nil {
		return User{}, notFound(err)
	}
	return decode(u), nil
}

// Delete removes a user of the app.
func (s *Service) Delete(ctx context.Context, app store.App, id string) error {
	return notFound(s.db.Tx(ctx, func(tx *store.Tx) error { return tx.DeleteAppUser(ctx, app.ID, id) }))
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

// EventData is a user as webhook events carry it: no secrets, no tokens.
func EventData(u store.AppUser) map[string]any {
	meta := map[string]any{}
	_ = json.Unmarshal(u.Meta, &meta)
	return map[string]any{"user": map[string]any{
		"id": u.ID, "app_id": u.AppID, "user_id": u.UserID, "status": u.Status,
		"email": optional(u.Email), "phone": optional(u.Phone),
		"email_verified": u.EmailVerified, "phone_verified": u.PhoneVerified,
		"user_meta": meta, "created_at": u.CreatedAt, "updated_at": u.UpdatedAt,
	}}
}

func optional(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// DecodeUser decodes a stored user's metadata.
func DecodeUser(u store.AppUser) User { return decode(u) }
