package appuser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// MaxImportRows is the most users one import request may carry: one
// transaction each, so a batch holds the database's writer for a bounded time.
const MaxImportRows = 1000

// maxRowErrors bounds the problems one refused import reports.
const maxRowErrors = 100

// Outcomes of an imported row.
const (
	ImportCreated = "created" // a new user, with status imported
	ImportExists  = "exists"  // the app already had the user; nothing changed
)

// ImportRow is one user to import: its contacts as CreateInput takes them,
// metadata checked against the app's schema, and whether the service it
// comes from had verified each contact.
type ImportRow struct {
	Identifier    string
	Email         string
	Phone         string
	Meta          map[string]any
	EmailVerified bool
	PhoneVerified bool
}

// ImportResult is what became of one row, in request order.
type ImportResult struct {
	Index   int
	Outcome string // ImportCreated or ImportExists
	User    User
}

// RowError is one problem with one row of an import.
type RowError struct {
	Index  int
	Field  string // identifier, email, phone, email_verified, phone_verified, user_meta or user_meta.<key>
	Code   string // invalid_identifier, duplicate_identifier, identifier_conflict, invalid_user_meta or invalid_request
	Reason string // says why without repeating the input, which is personal data
}

// ImportInvalidError refuses a whole import: at least one row is invalid,
// and nothing was written. Rows lists the problems (at most maxRowErrors),
// Total counts them all.
type ImportInvalidError struct {
	Rows  []RowError
	Total int
}

func (e *ImportInvalidError) Error() string {
	return fmt.Sprintf("import refused: %d problems in the users", e.Total)
}

func (e *ImportInvalidError) add(r RowError) {
	e.Total++
	if len(e.Rows) < maxRowErrors {
		e.Rows = append(e.Rows, r)
	}
}

// importRow is a validated row.
type importRow struct {
	index                  int
	email, phone           string
	emailField, phoneField string // the request field each contact came from
	meta                   []byte
	emailV, phoneV         bool
}

// Import adds users that exist elsewhere already (a migration), with status
// imported, for an administrator (Write access, as Create). A row whose
// e-mail address or phone number a user of the app already has answers
// ImportExists with that user, unchanged, so a batch can be sent again after
// a crash and creates nothing twice. Every row is checked first and nothing
// is written when any is invalid (*ImportInvalidError lists them). Unlike
// Create, metadata the schema refuses fails the row rather than being
// dropped: a migration should not lose data unnoticed. Missing required
// fields are allowed (the user fills them in at sign-in). Nothing is sent;
// each new user emits user.created, in the one transaction of the batch.
func (s *Service) Import(ctx context.Context, p access.Principal, app store.App, rows []ImportRow) (_ []ImportResult, err error) {
	defer errs.Wrap(&err, "import users")
	// A user created by someone else (a concurrent import of the same
	// batch, a sign-up) between the look-up and the insert aborts the
	// transaction; the next attempt finds that user and answers exists.
	for attempt := 1; ; attempt++ {
		res, ierr := s.importOnce(ctx, p, app, rows)
		if !errors.Is(ierr, ErrUserExists) || attempt == 3 {
			return res, ierr
		}
	}
}

func (s *Service) importOnce(ctx context.Context, p access.Principal, app store.App, rows []ImportRow) ([]ImportResult, error) {
	var out []ImportResult
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, app.ID, access.Write); err != nil {
			return err
		}
		switch {
		case len(rows) == 0:
			return errs.Invalidf("users", "must hold at least one user")
		case len(rows) > MaxImportRows:
			return errs.Invalidf("users", "holds %d users; at most %d per request: import in batches", len(rows), MaxImportRows)
		}
		bad := &ImportInvalidError{}
		valid := s.checkImport(app, rows, bad)
		existing := make([]*store.AppUser, len(valid))
		for i, r := range valid {
			u, err := s.importedAlready(ctx, tx, app, r, bad)
			if err != nil {
				return err
			}
			existing[i] = u
		}
		if bad.Total > 0 {
			slices.SortStableFunc(bad.Rows, func(a, b RowError) int { return a.Index - b.Index })
			return bad
		}
		out = make([]ImportResult, 0, len(rows))
		var events []webhook.Event
		now := s.clock()
		for i, r := range valid {
			if existing[i] != nil {
				out = append(out, ImportResult{Index: r.index, Outcome: ImportExists, User: s.Decode(app, *existing[i])})
				continue
			}
			u := store.AppUser{ID: newID(), AppID: app.ID, Status: store.StatusImported, Email: r.email, Phone: r.phone,
				EmailVerified: r.emailV, PhoneVerified: r.phoneV, Meta: r.meta, CreatedAt: now, UpdatedAt: now}
			u, err := s.insertRow(ctx, tx, app, u, false)
			if err != nil {
				return err // ErrUserExists: created meanwhile, see Import
			}
			events = append(events, webhook.Event{Type: webhook.UserCreated, Build: func() webhook.Payload { return s.EventData(app, u) }})
			out = append(out, ImportResult{Index: r.index, Outcome: ImportCreated, User: s.Decode(app, u)})
		}
		return s.events.EmitMany(ctx, tx, app.ID, events...)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkImport validates every row on its own and against the rows before
// it (one contact twice in a batch is refused); problems go to bad.
func (s *Service) checkImport(app store.App, rows []ImportRow, bad *ImportInvalidError) []importRow {
	valid := make([]importRow, 0, len(rows))
	emails, phones := map[string]int{}, map[string]int{}
	for i, in := range rows {
		before := bad.Total
		fail := func(field, code, reason string) {
			bad.add(RowError{Index: i, Field: field, Code: code, Reason: reason})
		}
		r := importRow{index: i, emailV: in.EmailVerified, phoneV: in.PhoneVerified}
		for _, c := range []struct {
			field, raw string
			parse      func(string) (Identifier, error)
		}{{"identifier", in.Identifier, ParseIdentifier}, {"email", in.Email, ParseEmail}, {"phone", in.Phone, ParsePhone}} {
			if strings.TrimSpace(c.raw) == "" {
				continue
			}
			id, err := c.parse(c.raw)
			if err != nil {
				fail(c.field, "invalid_identifier", strings.TrimPrefix(err.Error(), ErrInvalidIdentifier.Error()+": "))
				continue
			}
			value, field := &r.email, &r.emailField
			if id.Kind == KindPhone {
				value, field = &r.phone, &r.phoneField
			}
			if *value != "" && *value != id.Value {
				fail(c.field, "invalid_request", "names another "+kindName(id.Kind)+" than "+*field)
				continue
			}
			*value, *field = id.Value, c.field
		}
		if bad.Total == before && r.email == "" && r.phone == "" {
			fail("identifier", "invalid_identifier", "an e-mail address or phone number is required")
		}
		for _, c := range []struct {
			kind  Kind
			value string
			field string
		}{{KindEmail, r.email, r.emailField}, {KindPhone, r.phone, r.phoneField}} {
			if c.value != "" && !slices.Contains(app.AllowedIdentifiers, string(c.kind)) {
				fail(c.field, "invalid_identifier", "this app does not accept "+kindName(c.kind)+"s")
			}
		}
		if r.emailV && r.email == "" {
			fail("email_verified", "invalid_request", "is true but the user has no e-mail address")
		}
		if r.phoneV && r.phone == "" {
			fail("phone_verified", "invalid_request", "is true but the user has no phone number")
		}
		clean, problems, err := cleanMeta(app, in.Meta, WriterApp, false)
		switch {
		case errors.Is(err, ErrMetaTooLarge):
			fail("user_meta", "invalid_request", fmt.Sprintf("is too large (at most %d keys and %d KiB)", MaxMetaKeys, MaxMetaBytes>>10))
		case err != nil:
			fail("user_meta", "invalid_request", "is not a JSON object of values")
		}
		for _, k := range sortedKeys(problems) {
			fail("user_meta."+k, "invalid_user_meta", problems[k])
		}
		for k, v := range clean {
			if v == nil {
				delete(clean, k)
			}
		}
		if r.meta, err = json.Marshal(clean); err != nil || clean == nil {
			r.meta = []byte("{}")
		}
		// A contact twice in the batch is a mistake in the export, not a
		// user to create once: which row's metadata would win?
		for _, c := range []struct {
			seen         map[string]int
			value, field string
			kind         Kind
		}{{emails, r.email, r.emailField, KindEmail}, {phones, r.phone, r.phoneField, KindPhone}} {
			if c.value == "" {
				continue
			}
			if first, ok := c.seen[c.value]; ok {
				fail(c.field, "duplicate_identifier", fmt.Sprintf("same %s as users[%d]", kindName(c.kind), first))
				continue
			}
			c.seen[c.value] = i
		}
		if bad.Total == before {
			valid = append(valid, r)
		}
	}
	return valid
}

// importedAlready returns the user of the app that has r's e-mail address
// or phone number, or nil. Two different users holding them is a conflict
// for the caller to settle (a problem in bad).
func (s *Service) importedAlready(ctx context.Context, tx *store.Tx, app store.App, r importRow, bad *ImportInvalidError) (*store.AppUser, error) {
	var found *store.AppUser
	for _, c := range []struct{ email, phone, field string }{{r.email, "", r.emailField}, {"", r.phone, r.phoneField}} {
		if c.email == "" && c.phone == "" {
			continue
		}
		u, err := tx.FindAppUser(ctx, app.ID, c.email, c.phone)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if found != nil && found.ID != u.ID {
			bad.add(RowError{Index: r.index, Field: c.field, Code: "identifier_conflict",
				Reason: "belongs to another user of the app than the e-mail address"})
			return nil, nil
		}
		found = &u
	}
	return found, nil
}

func kindName(k Kind) string {
	if k == KindEmail {
		return "e-mail address"
	}
	return "phone number"
}

func sortedKeys(m MetaErrors) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
