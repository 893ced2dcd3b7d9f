package appuser

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// UpdateInput changes a user; nil fields are left alone. Meta is merged into
// the stored metadata: a key set to null is removed.
type UpdateInput struct {
	Meta  map[string]any
	Email *string
	Phone *string
	// registration: the signed-in user's own metadata is written under the
	// sign-up rule (UpdateOwnRegistrationMeta), not the profile's.
	registration bool
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

// UpdateOwnRegistrationMeta changes the metadata of the signed-in user id
// who has just signed up (the hosted sign-in page's sign-up form), as
// UpdateOwnMeta does but under the sign-up rule: only fields with
// visible_registration, as the user_meta of a sign-up request.
func (s *Service) UpdateOwnRegistrationMeta(ctx context.Context, app store.App, id string, meta map[string]any) (_ User, err error) {
	defer errs.Wrap(&err, "update own metadata")
	return s.update(ctx, access.Self(), app, id, UpdateInput{Meta: meta, registration: true})
}

// metaPatch checks a metadata update against the app's schema and the
// writer's rule: nil for no update, refused whole when any key breaks them.
// A key set to null is removed.
func metaPatch(app store.App, meta map[string]any, w Writer) (map[string]any, error) {
	if meta == nil {
		return nil, nil
	}
	// The app (an administrator) may remove a key the schema no longer
	// declares: null for it is a removal, not a value to check.
	var stale []string
	if w == WriterApp {
		sc := SchemaOf(app)
		for k, v := range meta {
			if _, declared := sc.field(k); v == nil && !declared {
				stale = append(stale, k)
			}
		}
		if len(stale) > 0 {
			meta = maps.Clone(meta)
			for _, k := range stale {
				delete(meta, k)
			}
		}
	}
	clean, problems, err := cleanMeta(app, meta, w, false)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, &MetaInvalidError{Errors: problems}
	}
	for _, k := range stale {
		clean[k] = nil
	}
	return clean, nil
}

func (s *Service) update(ctx context.Context, p access.Principal, app store.App, id string, in UpdateInput) (User, error) {
	var out store.AppUser
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		own := WriterProfile
		if in.registration {
			own = WriterRegistration
		}
		w, err := writer(ctx, tx.Queries, p, app.ID, own)
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
		if p.Kind != access.KindSelf {
			// Which fields changed, not their values: the log outlives the
			// user's personal data (as user.deleted).
			if fields := changedFields(before, out); len(fields) > 0 {
				if err := audit.Record(ctx, tx.Queries, u.UpdatedAt, p, audit.Change{WorkspaceID: app.WorkspaceID, AppID: app.ID,
					Action: "user.updated", TargetType: "user", TargetID: id, After: map[string][]string{"changed": fields}}); err != nil {
					return err
				}
			}
		}
		return s.identifierEvents(ctx, tx, app, before, out)
	})
	if err != nil {
		return User{}, err
	}
	return s.Decode(app, out), nil
}

// changedFields names what differs between two versions of a user:
// "email", "phone" and "user_meta.<key>" for each metadata key set,
// changed or removed, sorted.
func changedFields(before, after store.AppUser) []string {
	var out []string
	if before.Email != after.Email {
		out = append(out, "email")
	}
	if before.Phone != after.Phone {
		out = append(out, "phone")
	}
	var b, a map[string]json.RawMessage
	_ = json.Unmarshal(before.Meta, &b) // stored by this package: valid JSON objects, or empty
	_ = json.Unmarshal(after.Meta, &a)
	var keys []string
	for k, v := range b {
		if w, ok := a[k]; !ok || !bytes.Equal(v, w) {
			keys = append(keys, "user_meta."+k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			keys = append(keys, "user_meta."+k)
		}
	}
	slices.Sort(keys)
	return append(out, keys...)
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
		old, err := tx.GetAppUser(ctx, app.ID, id)
		if err != nil {
			return err
		}
		if u, err = tx.SetAppUserStatus(ctx, app.ID, id, status, now); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx.Queries, now, p, audit.Change{WorkspaceID: app.WorkspaceID, AppID: app.ID,
			Action: "user.status_changed", TargetType: "user", TargetID: id,
			Before: map[string]string{"status": old.Status}, After: map[string]string{"status": u.Status}}); err != nil {
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
		old, err := tx.GetAppUser(ctx, app.ID, id)
		if err != nil {
			return notFound(err)
		}
		if err := notFound(tx.DeleteAppUser(ctx, app.ID, id)); err != nil {
			return err
		}
		// The entry names the user by id and status only: the log outlives
		// the user's personal data.
		return audit.Record(ctx, tx.Queries, s.clock(), p, audit.Change{WorkspaceID: app.WorkspaceID, AppID: app.ID,
			Action: "user.deleted", TargetType: "user", TargetID: id, Before: map[string]string{"status": old.Status}})
	})
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
