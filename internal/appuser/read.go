package appuser

import (
	"context"
	"errors"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

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

// LookupForSignUp is Lookup that also finds, in the same read, the
// workspace's person with the identifier when the app has no such user:
// PrepareSignUp's user then joins that person (Person.ID, or a new person
// when none), and SignUpTx needs no read of its own.
func (s *Service) LookupForSignUp(ctx context.Context, app store.App, identifier string) (_ *User, person Person, err error) {
	defer errs.Wrap(&err, "look up user")
	id, err := ParseIdentifier(identifier)
	if err != nil {
		return nil, Person{}, nil
	}
	var email, phone string
	if id.Kind == KindEmail {
		email = id.Value
	} else {
		phone = id.Value
	}
	u, found, err := s.db.FindAppUserOrPerson(ctx, app.ID, app.WorkspaceID, email, phone)
	if errors.Is(err, store.ErrNotFound) {
		return nil, Person{ID: found, LookedUp: true}, nil
	}
	if err != nil {
		return nil, Person{}, err
	}
	d := s.Decode(app, u)
	return &d, Person{ID: found, LookedUp: true}, nil
}

// Person is what a sign-in's lookup found of the workspace's person with
// the identifier: its id, or "" for none. Without LookedUp, SignUpTx finds
// or makes the person itself.
type Person struct {
	ID       string
	LookedUp bool
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

// List returns one page (1-based) of the app's users, newest first or in
// f.Sort's order (Read access).
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
