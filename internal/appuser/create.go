package appuser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

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
		if u, metaErrs, err = s.insert(ctx, tx, app, in, status, w); err != nil || p.Kind == access.KindSelf {
			return err
		}
		// An administrator's creation: by id and status only (the log
		// outlives the user's personal data).
		return audit.Record(ctx, tx.Queries, u.CreatedAt, p, audit.Change{WorkspaceID: app.WorkspaceID, AppID: app.ID,
			Action: "user.created", TargetType: "user", TargetID: u.ID, After: map[string]string{"status": u.Status}})
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
//
// With person looked up (LookupForSignUp), nothing is read: the person
// (when new) and the user go out with the transaction's next statement or
// its COMMIT, and a person made concurrently is ErrUserExists too (the
// caller looks up again and finds it).
func (s *Service) SignUpTx(ctx context.Context, tx *store.Tx, app store.App, u store.AppUser, person Person) (webhook.Event, error) {
	var err error
	if person.LookedUp && (u.Email == "" || u.Phone == "") {
		u, err = s.insertLookedUp(ctx, tx, app, u, person.ID)
	} else {
		u, err = s.insertRow(ctx, tx, app, u, false)
	}
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
	// Deferred: the insert goes out with the transaction's next statement
	// or its COMMIT, whose error then says the user exists.
	if err := tx.Deferred(userExists).CreateAppUser(ctx, u); err != nil {
		return u, userExists(err)
	}
	if !full {
		return u, nil
	}
	return u, s.events.Emit(ctx, tx, app.ID, webhook.UserCreated, s.EventData(app, u))
}

// userExists translates a unique constraint's refusal of a new user (or
// of its new person) into ErrUserExists.
func userExists(err error) error {
	if errors.Is(err, store.ErrConflict) {
		return ErrUserExists
	}
	return err
}

// insertLookedUp stores u, with one contact, as a user of the person the
// caller's lookup found (person), or of a new one when it found none: both
// deferred, so they cost no round trip of their own. People are never
// deleted, so a person found is there still; one made meanwhile by another
// sign-up breaks the new person's unique contact: ErrUserExists.
func (s *Service) insertLookedUp(ctx context.Context, tx *store.Tx, app store.App, u store.AppUser, person string) (store.AppUser, error) {
	u.UserID = person
	if person == "" {
		u.UserID = newID()
		b := store.BaseUser{ID: u.UserID, WorkspaceID: app.WorkspaceID, Email: u.Email, Phone: u.Phone, CreatedAt: u.CreatedAt}
		if err := tx.Deferred(userExists).CreateBaseUser(ctx, b); err != nil {
			return u, userExists(err)
		}
	}
	if err := tx.Deferred(userExists).CreateAppUser(ctx, u); err != nil {
		return u, userExists(err)
	}
	return u, nil
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
