package appuser

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

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
