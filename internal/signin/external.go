package signin

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Social sign-in's account step (docs/social-sign-in.md): who a provider
// vouches for becomes a user of the app (found by the identity, linked by
// a verified e-mail address, or signed up), and the browser goes back to
// the app with a single-use, 2-minute token that the client SDK turns into
// a session with PATCH /magic_links/authenticate, as a magic link's.

// MethodOAuth is a social sign-in: the challenge's method, the session's
// type (client-compat §3: oauth), and, with the provider's slug, amr.
const MethodOAuth = "oauth"

// oauthTokenTTL is how long the token the app gets back is good for.
const oauthTokenTTL = 2 * time.Minute

// Refusals of a social sign-in's account step; each comes back to the app
// as sct_error (ExternalError).
var (
	// ErrEmailNotVerified: a first sign-in with an identity whose provider
	// gives no e-mail address it verified (needed to sign up or link).
	ErrEmailNotVerified = errors.New("the provider gave no verified e-mail address")
	// ErrAccountExists: a user has the address, and the provider may not
	// join existing users (its link_existing is false).
	ErrAccountExists = errors.New("a user with this e-mail address exists and the provider may not link to it")
	// ErrSignupClosed: nobody has the address and the app does not let
	// people sign up.
	ErrSignupClosed = errors.New("the app does not let people sign up")
	// ErrSignupRefused: the app cannot take this person as a user (it does
	// not identify users by e-mail address, for one).
	ErrSignupRefused = errors.New("the app cannot sign this person up")
	// ErrUserInactive: the user is deactivated.
	ErrUserInactive = errors.New("the user is deactivated")
	// ErrIdentityConflict: the identity is of another issuer than the
	// provider's now (its slug was reused for another provider).
	ErrIdentityConflict = errors.New("the identity was linked with another issuer")
)

// External is a person a social sign-in provider vouches for.
type External struct {
	Provider, Issuer, Subject string
	// Email is an address the provider verified ("" when none).
	Email string
	Name  string
	// LinkByEmail: a first sign-in may join the user with Email.
	LinkByEmail bool
}

// ExternalError is the sct_error code of a refusal of SignInExternal.
func ExternalError(err error) (string, bool) {
	for code, e := range map[string]error{"email_not_verified": ErrEmailNotVerified, "account_exists": ErrAccountExists,
		"signup_closed": ErrSignupClosed, "signup_refused": ErrSignupRefused, "user_inactive": ErrUserInactive,
		"identity_conflict": ErrIdentityConflict} {
		if errors.Is(err, e) {
			return code, true
		}
	}
	return "", false
}

// SignInExternal finds or makes the user x is, and returns the token the
// app's callback gets (sct_magic). A known identity signs in its user; a
// new one joins the user with its verified e-mail address when the
// provider may link, or signs up a new user when the app lets people.
func (s *Service) SignInExternal(ctx context.Context, app store.App, x External, c Client) (tok string, err error) {
	defer errs.Wrap(&err, "social sign-in")
	for try := 0; ; try++ {
		tok, err = s.signInExternal(ctx, app, x, c)
		// Two first sign-ins of one person at once: the loser finds what
		// the winner stored, once.
		if try == 0 && (errors.Is(err, store.ErrConflict) || errors.Is(err, appuser.ErrUserExists)) {
			continue
		}
		return tok, err
	}
}

func (s *Service) signInExternal(ctx context.Context, app store.App, x External, c Client) (string, error) {
	now := s.clock()
	var user store.AppUser
	var signUp *appuser.User
	ident, err := s.db.GetIdentity(ctx, app.ID, x.Provider, x.Subject)
	switch {
	case err == nil:
		if ident.Issuer != x.Issuer {
			return "", ErrIdentityConflict
		}
		if user, err = s.db.GetAppUser(ctx, app.ID, ident.AppUserID); err != nil {
			return "", err
		}
	case !errors.Is(err, store.ErrNotFound):
		return "", err
	case x.Email == "":
		return "", ErrEmailNotVerified
	default:
		found, err := s.users.Lookup(ctx, app, x.Email)
		switch {
		case err != nil:
			return "", err
		case found != nil && !x.LinkByEmail:
			return "", ErrAccountExists
		case found != nil:
			user = found.AppUser
		case !app.PublicSignup:
			return "", ErrSignupClosed
		default:
			p, err := s.users.PrepareSignUp(app, x.Email, nameMeta(app, x.Name))
			if err != nil {
				var invalid *errs.Invalid
				if errors.As(err, &invalid) {
					return "", ErrSignupRefused
				}
				return "", err
			}
			signUp, user = &p, p.AppUser
			user.EmailVerified = true
		}
		ident = store.Identity{ID: newID(), AppID: app.ID, AppUserID: user.ID, Provider: x.Provider, Issuer: x.Issuer,
			Subject: x.Subject, Email: x.Email, CreatedAt: now}
	}
	if user.Status == store.StatusInactive {
		return "", ErrUserInactive
	}
	ch := store.Challenge{ID: newID(), AppID: app.ID, AppUserID: user.ID, Purpose: PurposeAuthenticate, Method: MethodOAuth,
		Recipient: x.Email, Status: store.ChallengePending, RemainingAttempts: 1, IP: c.IP, UserAgent: truncate(c.UserAgent, 512),
		CreatedAt: now, ExpiresAt: now.Add(oauthTokenTTL), Data: encodeData(challengeData{Provider: x.Provider})}
	tok, err := s.keys.Sign(token.TypeMagic, magicClaims{
		Claims: token.Claims{Issuer: s.settings.Issuer, Subject: user.ID, Audience: token.Audience{app.ID}, IssuedAt: now.Unix(),
			Expiry: ch.ExpiresAt.Unix(), ID: ch.ID},
		UUID: user.ID, UserStatus: user.Status, Email: user.Email, Phone: user.Phone, Purpose: "magic_link",
	})
	if err != nil {
		return "", err
	}
	ch.SecretHash = s.hasher.Hash("magic", tok)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		var events []webhook.Event
		if signUp != nil {
			created, err := s.users.SignUpTx(ctx, tx, app, user, appuser.Person{})
			if err != nil {
				return err
			}
			build := created.Build
			created.Build = func() webhook.Payload {
				d, _ := build().(webhook.UserData)
				d.Method, d.Provider = MethodOAuth, x.Provider
				return d
			}
			events = append(events, created)
		}
		if ident.LastUsedAt.IsZero() { // new: linked now
			ident.LastUsedAt = now
			if err := tx.CreateIdentity(ctx, ident); err != nil {
				return err
			}
			events = append(events, s.identityEvent(app, user, ident, webhook.UserIdentityLinked))
		} else if err := tx.TouchIdentity(ctx, ident.ID, cmp.Or(x.Email, ident.Email), now); err != nil {
			return err
		}
		// No earlier token is superseded: each is single use and lives two
		// minutes, and two devices signing in at once must both get in.
		if err := tx.Deferred(nil).CreateChallenge(ctx, ch); err != nil {
			return err
		}
		events = append(events, challengeCreated(ch, ""))
		return s.events.EmitMany(ctx, tx, app.ID, events...)
	})
	if err != nil {
		return "", err
	}
	return tok, nil
}

// nameMeta is the provider's name for a new user's metadata, when the app
// declares a name field that sign-up may write.
func nameMeta(app store.App, name string) map[string]any {
	if name == "" {
		return nil
	}
	clean, _, err := appuser.RegistrationMeta(app, map[string]any{"name": name})
	if err != nil {
		return nil
	}
	return clean
}

// identityEvent is user.identity_linked or user.identity_unlinked.
func (s *Service) identityEvent(app store.App, u store.AppUser, i store.Identity, typ string) webhook.Event {
	return webhook.Event{Type: typ, Build: func() webhook.Payload {
		return webhook.UserIdentityData{UserData: s.users.EventData(app, u), Identity: identityOut(i)}
	}}
}

func identityOut(i store.Identity) webhook.EventIdentity {
	return webhook.EventIdentity{ID: i.ID, Provider: i.Provider, Email: i.Email, CreatedAt: i.CreatedAt}
}

// oauthFactor is a social sign-in as the session records it: its type
// oauth, and amr naming the provider ("oauth:google").
func oauthFactor(ch store.Challenge) factor {
	return factor{Session: MethodOAuth, AMR: MethodOAuth + ":" + decodeData(ch).Provider, Kind: MethodOAuth}
}

// signInExternalChallenge opens the session of a social sign-in's token,
// inside tx: the user, if still active, signs in (through the MFA gate);
// an address is marked verified only when it is the one the provider
// verified.
func (s *Service) signInExternalChallenge(ctx context.Context, tx *store.Tx, app store.App, ch store.Challenge, now time.Time, c Client) (TokenSet, error) {
	u, err := tx.GetAppUser(ctx, app.ID, ch.AppUserID)
	if errors.Is(err, store.ErrNotFound) {
		return TokenSet{}, ErrMagicLinkNotFound
	}
	if err != nil {
		return TokenSet{}, err
	}
	if ch.Recipient != "" && u.Email == ch.Recipient && (!u.EmailVerified || u.Status != store.StatusActive) {
		// The provider verified the user's own address: as an e-mailed
		// code would (an invited or imported user becomes active).
		if u, err = s.users.MarkVerified(ctx, tx, app, u.ID, true, false); err != nil {
			return TokenSet{}, err
		}
	}
	if u.Status != store.StatusActive {
		return TokenSet{}, ErrMagicLinkNotFound
	}
	if err := s.emitChallenge(ctx, tx, ch, challengeCompleted(ch, now, "")); err != nil {
		return TokenSet{}, err
	}
	return s.startSession(ctx, tx, app, u, oauthFactor(ch), c)
}

// Identities are a user's social sign-in identities, oldest first.
type Identity = store.Identity

// ErrIdentityNotFound: the user has no identity by that id.
var ErrIdentityNotFound = errors.New("identity not found")

// ErrLastSignInMethod: the identity is the user's only way in (no e-mail
// address or phone number the app signs in with, no passkey, no other
// identity).
var ErrLastSignInMethod = errors.New("the identity is the user's only way to sign in")

// UserIdentities lists the identities of a user the caller has already
// been allowed to read (the signed-in user, or a user an administrator
// read).
func (s *Service) UserIdentities(ctx context.Context, userID string) (_ []Identity, err error) {
	defer errs.Wrap(&err, "list identities")
	return s.db.ListIdentities(ctx, userID)
}

// UnlinkIdentity removes one of the signed-in user's identities, with a
// recent sign-in or a completed step-up, unless it is their only way in.
func (s *Service) UnlinkIdentity(ctx context.Context, app store.App, caller Caller, id, stepUp string) (err error) {
	defer errs.Wrap(&err, "unlink identity")
	if err := s.sensitive(ctx, app, caller, stepUp); err != nil {
		return err
	}
	return s.unlink(ctx, app, caller.User.ID, id, nil)
}

// AdminUnlinkIdentity removes one of a user's identities for who may
// change the app's users, unless it is the user's only way in.
func (s *Service) AdminUnlinkIdentity(ctx context.Context, p access.Principal, app store.App, userID, id string) (err error) {
	defer errs.Wrap(&err, "unlink user identity")
	if err := access.App(ctx, s.db.Queries, p, app.ID, access.Write); err != nil {
		return err
	}
	return s.unlink(ctx, app, userID, id, &p)
}

// unlink removes the identity; admin, when set, is the administrator whose
// action the audit log records (a user's own unlinking is not an
// administrative action).
func (s *Service) unlink(ctx context.Context, app store.App, userID, id string, admin *access.Principal) error {
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		// The user's row is locked first: two unlinks at once of a user's
		// last two identities cannot both see the other as a way in.
		u, err := tx.LockAppUser(ctx, app.ID, userID)
		if errors.Is(err, store.ErrNotFound) {
			return appuser.ErrUserNotFound
		}
		if err != nil {
			return err
		}
		ids, err := tx.ListIdentities(ctx, userID)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(ids, func(x store.Identity) bool { return x.ID == id })
		if i < 0 {
			return ErrIdentityNotFound
		}
		if len(ids) == 1 && !otherWayIn(app, u) {
			return ErrLastSignInMethod
		}
		if err := tx.DeleteIdentity(ctx, userID, id); err != nil {
			return notFoundAs(err, ErrIdentityNotFound)
		}
		if admin != nil {
			if err := audit.Record(ctx, tx.Queries, s.clock(), *admin, audit.Change{WorkspaceID: app.WorkspaceID, AppID: app.ID,
				Action: "identity.unlinked", TargetType: "identity", TargetID: id,
				Before: map[string]string{"user_id": userID, "provider": ids[i].Provider}}); err != nil {
				return err
			}
		}
		return s.events.EmitMany(ctx, tx, app.ID, s.identityEvent(app, u, ids[i], webhook.UserIdentityUnlinked))
	})
}

// otherWayIn reports whether u can sign in without a social identity: by a
// code or link to a contact the app takes (it need not be verified yet:
// signing in verifies it), or with a passkey.
func otherWayIn(app store.App, u store.AppUser) bool {
	return u.WebauthnEnabled || (u.Email != "" && slices.Contains(app.AllowedIdentifiers, "email")) ||
		(u.Phone != "" && slices.Contains(app.AllowedIdentifiers, "phone"))
}
