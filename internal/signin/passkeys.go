package signin

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/passkey"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Passkey errors; httpapi answers them with the client SDK's slugs.
var (
	// ErrPasskeyRegistration: a registration answer did not verify, its
	// ceremony is unknown, used or expired, or the credential is registered
	// already.
	ErrPasskeyRegistration = errors.New("passkey registration failed")
	// ErrPasskeyVerification: a sign-in answer did not verify, its ceremony
	// is unknown, used or expired, or the passkey is unknown, another app's,
	// suspended or its user cannot sign in.
	ErrPasskeyVerification = errors.New("passkey verification failed")
	// ErrPasskeyNotFound: no such passkey of the user.
	ErrPasskeyNotFound = errors.New("passkey not found")
	// ErrPasskeysUnavailable: the app's origin is not on a domain name (an
	// IP address, say), which WebAuthn requires of an RP id.
	ErrPasskeysUnavailable = errors.New("passkeys are not available for this app")
)

// PasskeyError is a refused passkey ceremony: Kind is
// ErrPasskeyRegistration or ErrPasskeyVerification, Detail says why (no
// secret: which check failed).
type PasskeyError struct {
	Kind   error
	Detail string
}

func (e *PasskeyError) Error() string { return e.Kind.Error() + ": " + e.Detail }
func (e *PasskeyError) Unwrap() error { return e.Kind }

// Passkey is a user's registered passkey.
type Passkey = store.Passkey

// PasskeyOptions are options for the browser's WebAuthn call: the inner
// PublicKeyCredential*OptionsJSON, as the client SDK wants them.
type PasskeyOptions struct {
	Options          json.RawMessage
	UserVerification string
	MetaErrors       appuser.MetaErrors
	UserID           string // the user the ceremony is for
}

// relyingParty is app's WebAuthn relying party: its RP id and exact origins
// come from the app's stored settings, never from a request.
func (s *Service) relyingParty(app store.App) (*passkey.RP, error) {
	origins := append([]string{app.Origin}, app.AllowedOrigins...)
	rpID := passkey.RPIDFor(app.Origin, app.WebauthnRPID)
	if err := passkey.CheckRPID(rpID, origins[:1]); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrPasskeysUnavailable, err)
	}
	return passkey.New(passkey.Settings{RPID: rpID, RPName: app.Name,
		Origins: origins, UserVerification: app.WebauthnUserVerification, Attestation: app.WebauthnAttestation})
}

// passkeyUser is u as the relying party sees it, with its passkeys; it
// gives u a user handle when asked to and u has none.
func (s *Service) passkeyUser(ctx context.Context, q store.Queries, u store.AppUser, ensureHandle bool) (passkey.User, error) {
	handle, err := s.users.WebauthnHandle(ctx, q, u.ID, ensureHandle)
	if err != nil {
		return passkey.User{}, err
	}
	list, err := q.ListPasskeys(ctx, u.AppID, u.ID)
	if err != nil {
		return passkey.User{}, err
	}
	name := u.Email
	if name == "" {
		name = u.Phone
	}
	pu := passkey.User{Handle: handle, Name: name, DisplayName: name}
	for _, p := range list {
		id, err := passkey.DecodeID(p.CredentialID)
		if err != nil {
			return passkey.User{}, fmt.Errorf("stored credential id %s: %w", p.ID, err)
		}
		pu.Credentials = append(pu.Credentials, passkey.Stored{ID: id, Record: p.Credential})
	}
	return pu, nil
}

// beginRegistration makes creation options for u and stores the ceremony.
func (s *Service) beginRegistration(ctx context.Context, app store.App, u store.AppUser, kind string) (PasskeyOptions, error) {
	rp, err := s.relyingParty(app)
	if err != nil {
		return PasskeyOptions{}, err
	}
	pu, err := s.passkeyUser(ctx, s.db.Queries, u, true)
	if err != nil {
		return PasskeyOptions{}, err
	}
	opts, cer, err := rp.BeginRegistration(pu)
	if err != nil {
		return PasskeyOptions{}, err
	}
	// The user's earlier registration of this kind, unfinished, is
	// replaced: only the newest options can add a passkey.
	owner := ceremonyOwner{userID: u.ID, subject: userSubject(u.ID)}
	if err := s.storeCeremonyFor(ctx, s.db.Queries, app, kind, cer, owner); err != nil {
		return PasskeyOptions{}, err
	}
	return PasskeyOptions{Options: opts, UserVerification: rp.UserVerification()}, nil
}

// ceremonyOwner is whom a new ceremony is for and who may finish it.
type ceremonyOwner struct {
	// userID is the user whose passkey must answer; "" lets any of the
	// app's passkeys answer (discoverable), or none when subject is set (a
	// stand-in's ceremony).
	userID string
	// subject is replaced: starting the ceremony ends the subject's earlier
	// one of the same kind, in the statement that stores it. "" replaces
	// nothing.
	subject string
	// binding is the only client that may finish it (clientBinding); ""
	// for any.
	binding string
}

// userSubject is the subject of ceremonies for a user.
func userSubject(userID string) string { return "user:" + userID }

// identifierSubject is the subject of a stand-in's ceremonies: the
// identifier's keyed hash, so that ceremonies for an identifier nobody
// signs in with by passkey replace each other exactly as a user's do,
// without storing the identifier.
func (s *Service) identifierSubject(app store.App, identifier string) string {
	return "identifier:" + s.hasher.Hash("webauthn-subject", app.ID, identifier)
}

// clientBinding names the client a request came from as the magic-link
// flow's sameDevice does: its address and user agent, as a keyed hash.
// The unmodified client SDK carries nothing else back (no cookie, no
// header, nothing in the credential JSON beyond what the authenticator
// signed), so this is the binding every browser can keep.
func (s *Service) clientBinding(app store.App, c Client) string {
	return s.hasher.Hash("webauthn-client", app.ID, c.IP, truncate(c.UserAgent, 512))
}

// storeCeremony stores a ceremony that replaces nothing and any client
// may finish (a challenge's: the challenge it belongs to is what is
// superseded and spent).
func (s *Service) storeCeremony(ctx context.Context, q store.Queries, app store.App, userID, kind string, cer passkey.Ceremony) error {
	return s.storeCeremonyFor(ctx, q, app, kind, cer, ceremonyOwner{userID: userID})
}

func (s *Service) storeCeremonyFor(ctx context.Context, q store.Queries, app store.App, kind string, cer passkey.Ceremony, owner ceremonyOwner) error {
	now := s.clock()
	return q.CreatePasskeyCeremony(ctx, store.PasskeyCeremony{ID: newID(), AppID: app.ID, AppUserID: owner.userID, Kind: kind,
		ChallengeHash: s.hasher.Hash("webauthn-challenge", cer.Challenge), Session: cer.State, Subject: owner.subject,
		ClientBinding: owner.binding, CreatedAt: now, ExpiresAt: now.Add(passkey.Timeout)})
}

// takeCeremony spends the ceremony of app whose challenge a browser
// answered, in a statement of its own: whatever the verification then
// decides, the challenge cannot be answered again. A ceremony bound to a
// client is not taken (nor spent) here; see takeCeremonyFrom.
func (s *Service) takeCeremony(ctx context.Context, app store.App, challenge, kind string) (store.PasskeyCeremony, bool, error) {
	return s.takeCeremonyFrom(ctx, app, challenge, kind, "")
}

// takeCeremonyFrom is takeCeremony for a client whose binding is given: a
// ceremony bound to another client is unknown to it, and stays for the
// client it is bound to.
func (s *Service) takeCeremonyFrom(ctx context.Context, app store.App, challenge, kind, binding string) (store.PasskeyCeremony, bool, error) {
	cer, err := s.db.TakePasskeyCeremony(ctx, app.ID, s.hasher.Hash("webauthn-challenge", challenge), binding)
	if errors.Is(err, store.ErrNotFound) {
		return cer, false, nil
	}
	if err != nil {
		return cer, false, err
	}
	return cer, cer.Kind == kind && s.clock().Before(cer.ExpiresAt), nil
}

// BeginDeviceRegistration starts adding a passkey to the signed-in caller's
// account (client SDK addDevice): creation options excluding the passkeys
// the caller has.
func (s *Service) BeginDeviceRegistration(ctx context.Context, app store.App, caller Caller) (_ PasskeyOptions, err error) {
	defer errs.Wrap(&err, "begin passkey registration")
	if err := s.passkeyChangeAllowed(app, caller); err != nil {
		return PasskeyOptions{}, err
	}
	return s.beginRegistration(ctx, app, caller.User, store.CeremonyRegister)
}

// FinishDeviceRegistration verifies the browser's answer to the caller's
// registration ceremony and stores the passkey.
func (s *Service) FinishDeviceRegistration(ctx context.Context, app store.App, caller Caller, body []byte, c Client) (_ Passkey, err error) {
	defer errs.Wrap(&err, "finish passkey registration")
	return s.finishRegistration(ctx, app, caller.User.ID, store.CeremonyRegister, body, c,
		func(tx *store.Tx, u store.AppUser, pk store.Passkey) error {
			return s.securityNotice(ctx, tx, app, u, courier.Notice{Kind: courier.NoticePasskeyAdded, Detail: pk.Name})
		})
}

// BeginSignupRegistration is the seed's register/initialize (interface
// §4.9), for a backend with the app's API secret: it creates the user (an
// existing one is ErrUserExists: a passkey is added to an existing account
// only from a signed-in session) and starts the registration, which the
// browser finishes with FinishSignupRegistration.
func (s *Service) BeginSignupRegistration(ctx context.Context, p access.Principal, app store.App, identifier string, meta map[string]any) (_ PasskeyOptions, err error) {
	defer errs.Wrap(&err, "begin passkey sign-up")
	u, metaErrs, err := s.users.Create(ctx, p, app, appuser.CreateInput{Identifier: identifier, Meta: meta})
	if err != nil {
		return PasskeyOptions{}, err
	}
	row, err := s.db.GetAppUser(ctx, app.ID, u.ID)
	if err != nil {
		return PasskeyOptions{}, err
	}
	out, err := s.beginRegistration(ctx, app, row, store.CeremonySignup)
	out.MetaErrors, out.UserID = metaErrs, row.ID
	return out, err
}

// FinishSignupRegistration verifies the browser's answer to a
// register/initialize ceremony, and stores the passkey and signs the new
// user in, in one transaction.
func (s *Service) FinishSignupRegistration(ctx context.Context, app store.App, body []byte, c Client) (set TokenSet, _ Passkey, err error) {
	defer errs.Wrap(&err, "finish passkey sign-up")
	defer func() { s.countSignIn(MethodPasskey, set.MFA != nil, err) }() // a sign-up signs in
	var out TokenSet
	pk, err := s.finishRegistration(ctx, app, "", store.CeremonySignup, body, c, func(tx *store.Tx, u store.AppUser, pk store.Passkey) error {
		if u.Status != store.StatusActive {
			return &PasskeyError{Kind: ErrPasskeyRegistration, Detail: "the user cannot sign in"}
		}
		if err := s.users.RecordSignIn(ctx, tx, app, u.ID); err != nil {
			return err
		}
		var err error
		out, err = s.newSession(ctx, tx, app, u, passkeyFactor(pk.CredentialID), c)
		return err
	})
	if err != nil {
		return TokenSet{}, Passkey{}, err
	}
	return out, pk, nil
}

// finishRegistration verifies a registration answer for the ceremony it
// signed (of kind, and userID's when userID is set) and stores the passkey
// with the user's new webauthn state and a user.updated event; then, when
// set, runs in the same transaction.
func (s *Service) finishRegistration(ctx context.Context, app store.App, userID, kind string, body []byte, c Client,
	then func(tx *store.Tx, u store.AppUser, pk store.Passkey) error) (Passkey, error) {
	reg, err := passkey.ParseRegistration(body)
	if err != nil {
		return Passkey{}, s.refuseRegistration(ctx, app, userID, err)
	}
	cer, ok, err := s.takeCeremony(ctx, app, reg.Challenge, kind)
	if err != nil {
		return Passkey{}, err
	}
	if !ok || (userID != "" && cer.AppUserID != userID) {
		return Passkey{}, s.refuseRegistration(ctx, app, userID, errors.New("unknown, used or expired ceremony"))
	}
	rp, err := s.relyingParty(app)
	if err != nil {
		return Passkey{}, err
	}
	u, err := s.db.GetAppUser(ctx, app.ID, cer.AppUserID)
	if err != nil {
		return Passkey{}, notFoundAs(err, ErrPasskeyRegistration)
	}
	pu, err := s.passkeyUser(ctx, s.db.Queries, u, false)
	if err != nil {
		return Passkey{}, err
	}
	cred, err := rp.FinishRegistration(pu, cer.Session, reg)
	if err != nil {
		if errors.Is(err, passkey.ErrInvalid) {
			return Passkey{}, s.refuseRegistration(ctx, app, u.ID, err)
		}
		return Passkey{}, err
	}
	now := s.clock()
	pk := store.Passkey{ID: newID(), AppID: app.ID, AppUserID: u.ID, CredentialID: passkey.EncodeID(cred.ID),
		Credential: cred.Record, Name: passkeyName(cred.Attachment, c.UserAgent), AAGUID: cred.AAGUID,
		AttestationFormat: cred.AttestationFormat, AuthenticatorAttachment: cred.Attachment, Transports: cred.Transports,
		BackupEligible: cred.BackupEligible, BackedUp: cred.BackedUp, SignCount: int64(cred.SignCount),
		UserAgent: truncate(c.UserAgent, 512), CreatedAt: now, UpdatedAt: now}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreatePasskey(ctx, pk); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return &PasskeyError{Kind: ErrPasskeyRegistration, Detail: "the credential is registered already"}
			}
			return err
		}
		updated, err := s.users.SyncPasskeys(ctx, tx, app, u.ID)
		if err != nil {
			return err
		}
		if err := s.events.Emit(ctx, tx, app.ID, webhook.UserUpdated, s.passkeyEventData(app, updated, "passkey_added", pk)); err != nil {
			return err
		}
		if then != nil {
			return then(tx, updated, pk)
		}
		return nil
	})
	if err != nil {
		return Passkey{}, err
	}
	s.log.InfoContext(ctx, "passkey registered", "app_id", app.ID, "user_id", u.ID, "passkey_id", pk.ID,
		"attestation_format", pk.AttestationFormat)
	return pk, nil
}

// passkeyName names a new passkey for people: the registering browser and
// platform ("Chrome on macOS"), or the kind of authenticator.
func passkeyName(attachment, userAgent string) string {
	browser, platform := DescribeUserAgent(userAgent)
	switch {
	case userAgent == "" && attachment == "platform":
		return "Passkey on this device"
	case userAgent == "":
		return "Security key"
	case platform == "":
		return truncate(browser, 100)
	}
	return truncate(browser+" on "+platform, 100)
}

func (s *Service) refuseRegistration(ctx context.Context, app store.App, userID string, why error) error {
	s.log.InfoContext(ctx, "passkey registration refused", "app_id", app.ID, "user_id", userID, "reason", why.Error())
	return &PasskeyError{Kind: ErrPasskeyRegistration, Detail: strings.TrimPrefix(why.Error(), passkey.ErrInvalid.Error()+": ")}
}

// passkeyEventData is user.updated's data for a passkey change: the user,
// what changed and the passkey (never its key).
func (s *Service) passkeyEventData(app store.App, u store.AppUser, change string, pk store.Passkey) webhook.UserUpdatedData {
	return webhook.UserUpdatedData{UserData: s.users.EventData(app, u), Change: change, Passkey: &webhook.EventPasskey{
		ID: pk.ID, CredentialID: pk.CredentialID, Name: pk.Name, AuthenticatorAttachment: pk.AuthenticatorAttachment}}
}

// BeginPasskeyLogin makes sign-in options. With an identifier they list
// that user's passkeys (the client SDK's new-device check compares them with
// the credentials it stored); an unknown identifier, or a user without
// passkeys, gets stand-ins that are stable for that identifier and look the
// same, so the answer does not tell who has an account (security R-WA-7).
// Without an identifier the sign-in is discoverable: the browser offers
// whatever passkey it holds for the app.
//
// A new ceremony for an identifier replaces its earlier unfinished one (the
// user's, or the stand-in's for the identifier), so only the newest options
// can sign in. A discoverable ceremony names nobody and replaces nothing;
// only the client that asked for it (clientBinding) may finish it.
func (s *Service) BeginPasskeyLogin(ctx context.Context, app store.App, identifier string, c Client) (_ json.RawMessage, err error) {
	defer errs.Wrap(&err, "begin passkey sign-in")
	// Options for an identifier tell whether it has passkeys only as far
	// as the stand-ins allow; they share the anonymous lookups' budget.
	if err := s.allowLookup(ctx, c); err != nil {
		return nil, err
	}
	rp, err := s.relyingParty(app)
	if err != nil {
		return nil, err
	}
	var handle []byte
	var allow []passkey.Descriptor
	owner := ceremonyOwner{binding: s.clientBinding(app, c)}
	if strings.TrimSpace(identifier) != "" {
		id, err := appuser.ParseIdentifier(identifier)
		if err != nil {
			return nil, err
		}
		var email, phone string
		if id.Kind == appuser.KindEmail {
			email = id.Value
		} else {
			phone = id.Value
		}
		// Known or not, one and the same statement runs, so timing tells nothing.
		h, err := s.db.PasskeyHolderByContact(ctx, app.ID, email, phone)
		if err != nil {
			return nil, err
		}
		for _, p := range h.Passkeys {
			if raw, err := passkey.DecodeID(p.CredentialID); err == nil {
				allow = append(allow, passkey.Descriptor{ID: raw, Transports: p.Transports})
			}
		}
		// Both kinds of ceremony replace their subject's earlier one with
		// the same statement. A stand-in's subject is the identifier, not
		// the user it may name: ceremonies for a user's e-mail and phone
		// replacing each other would link the two when the options (a
		// stand-in each) do not.
		if len(allow) > 0 && h.Status == store.StatusActive {
			handle = h.Handle
			owner = ceremonyOwner{userID: h.UserID, subject: userSubject(h.UserID)}
		} else {
			allow = []passkey.Descriptor{s.decoyCredential(app, id.Value)}
			owner = ceremonyOwner{subject: s.identifierSubject(app, id.Value)}
		}
	}
	opts, cer, err := rp.BeginLogin(handle, allow)
	if err != nil {
		return nil, err
	}
	if err := s.storeCeremonyFor(ctx, s.db.Queries, app, store.CeremonyLogin, cer, owner); err != nil {
		return nil, err
	}
	return opts, nil
}

// decoyCredential is the stand-in credential listed for an identifier with
// no passkey: derived from a server key, so the same on every call and on
// every replica, and indistinguishable from a real id.
func (s *Service) decoyCredential(app store.App, identifier string) passkey.Descriptor {
	raw, _ := hex.DecodeString(s.hasher.Hash("webauthn-decoy", app.ID, identifier))
	return passkey.Descriptor{ID: raw[:32], Transports: []string{"hybrid", "internal"}}
}

// FinishPasskeyLogin verifies a sign-in answer and starts a session. The
// body names no user: the ceremony is found by the challenge it signed, the
// passkey by its credential id within the app. A replaced ceremony, and a
// discoverable one c did not start, are refused as unknown ones are.
func (s *Service) FinishPasskeyLogin(ctx context.Context, app store.App, body []byte, c Client) (set TokenSet, err error) {
	defer errs.Wrap(&err, "finish passkey sign-in")
	defer func() { s.countSignIn(MethodPasskey, set.MFA != nil, err) }()
	if err := s.allow(ctx, bucket{key: "verify:ip:" + c.IP, rule: s.limits.VerifyPerIP}); err != nil {
		return TokenSet{}, err
	}
	a, err := passkey.ParseAssertion(body)
	if err != nil {
		return TokenSet{}, s.refuseLogin(ctx, app, "", "", "malformed", err, c)
	}
	cer, ok, err := s.takeCeremonyFrom(ctx, app, a.Challenge, store.CeremonyLogin, s.clientBinding(app, c))
	if err != nil {
		return TokenSet{}, err
	}
	if !ok {
		return TokenSet{}, s.refuseLogin(ctx, app, "", a.CredentialID, "unknown_ceremony", errors.New("unknown, used or expired ceremony"), c)
	}
	chk, err := s.checkAssertion(ctx, app, cer, a, c)
	if err != nil {
		return TokenSet{}, err
	}
	pk, u := chk.pk, chk.u
	now := s.clock()
	var out TokenSet
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := recordPasskeyUse(ctx, tx, chk, now, c); err != nil {
			return err
		}
		if err := tx.EndCodeFailureStreak(ctx, u.ID); err != nil {
			return err
		}
		if err := s.users.RecordSignIn(ctx, tx, app, u.ID); err != nil {
			return err
		}
		if out, err = s.newSession(ctx, tx, app, u, passkeyFactor(pk.CredentialID), c); err != nil {
			return err
		}
		browser, platform := DescribeUserAgent(c.UserAgent)
		data := webhook.PasskeySignInData{ChallengeID: cer.ID, Purpose: "authenticate", Method: "webauthn", UserID: u.ID,
			PasskeyID: pk.ID, CredentialID: pk.CredentialID, IPAddress: c.IP,
			Device: webhook.EventDevice{OS: platform, Browser: browser}, CompletedAt: now, Test: s.users.TestIdentities().User(app, u)}
		return s.events.Emit(ctx, tx, app.ID, webhook.ChallengeCompleted, data)
	})
	if errors.Is(err, errConcurrentUse) {
		return TokenSet{}, s.refuseLogin(ctx, app, u.ID, a.CredentialID, "concurrent_use", errors.New("the passkey was used concurrently"), c)
	}
	return out, err
}

// assertionCheck is a verified passkey answer, before anything is stored.
type assertionCheck struct {
	pk  store.Passkey
	u   store.AppUser
	use passkey.Use
}

// checkAssertion verifies a passkey answer for the ceremony it signed: the
// passkey must be the app's, the ceremony's user's when it names one, not
// suspended, its user active, and the signature good. Refusals are recorded
// (refuseLogin) and returned; a passkey whose counter went backwards is
// suspended.
func (s *Service) checkAssertion(ctx context.Context, app store.App, cer store.PasskeyCeremony, a passkey.Assertion, c Client) (assertionCheck, error) {
	pk, u, handle, err := s.db.GetPasskeyWithOwner(ctx, app.ID, a.CredentialID)
	if errors.Is(err, store.ErrNotFound) {
		return assertionCheck{}, s.refuseLogin(ctx, app, cer.AppUserID, a.CredentialID, "unknown_credential", errors.New("no such passkey in this app"), c)
	}
	if err != nil {
		return assertionCheck{}, err
	}
	// A stand-in's ceremony (a subject, no user) is for nobody's passkey:
	// refused exactly as a user's ceremony answered by another's passkey.
	if (cer.AppUserID != "" || cer.Subject != "") && cer.AppUserID != pk.AppUserID {
		return assertionCheck{}, s.refuseLogin(ctx, app, cer.AppUserID, a.CredentialID, "wrong_user", errors.New("the passkey is another user's"), c)
	}
	if pk.SuspendedAt != nil {
		return assertionCheck{}, s.refuseLogin(ctx, app, pk.AppUserID, a.CredentialID, "passkey_suspended", errors.New("the passkey is suspended"), c)
	}
	if u.Status != store.StatusActive {
		return assertionCheck{}, s.refuseLogin(ctx, app, u.ID, a.CredentialID, "user_not_active", errors.New("the user cannot sign in"), c)
	}
	rp, err := s.relyingParty(app)
	if err != nil {
		return assertionCheck{}, err
	}
	raw, err := passkey.DecodeID(pk.CredentialID)
	if err != nil {
		return assertionCheck{}, fmt.Errorf("stored credential id %s: %w", pk.ID, err)
	}
	pu := passkey.User{Handle: handle, Credentials: []passkey.Stored{{ID: raw, Record: pk.Credential}}}
	use, err := rp.FinishLogin(pu, cer.Session, a)
	if err != nil {
		if errors.Is(err, passkey.ErrInvalid) {
			return assertionCheck{}, s.refuseLogin(ctx, app, u.ID, a.CredentialID, "verification_failed", err, c)
		}
		return assertionCheck{}, err
	}
	if use.Cloned {
		now := s.clock()
		// The counter did not advance: two authenticators hold this key.
		// The passkey stops signing anyone in until the user removes it
		// (security R-WA-3).
		if err := s.db.Tx(ctx, func(tx *store.Tx) error {
			if err := tx.SuspendPasskey(ctx, pk.ID, now); err != nil {
				return err
			}
			updated, err := s.users.SyncPasskeys(ctx, tx, app, u.ID)
			if err != nil {
				return err
			}
			return s.events.Emit(ctx, tx, app.ID, webhook.UserUpdated, s.passkeyEventData(app, updated, "passkey_suspended", pk))
		}); err != nil {
			return assertionCheck{}, err
		}
		s.log.WarnContext(ctx, "passkey suspended: its signature counter went backwards (cloned authenticator?)",
			"app_id", app.ID, "user_id", u.ID, "passkey_id", pk.ID)
		return assertionCheck{}, s.refuseLogin(ctx, app, u.ID, a.CredentialID, "counter_regressed", errors.New("the signature counter went backwards"), c)
	}
	return assertionCheck{pk: pk, u: u, use: use}, nil
}

// recordPasskeyUse stores a verified answer's counter, backup state and
// time of use, inside tx; errConcurrentUse when another answer of the same
// passkey was stored first.
func recordPasskeyUse(ctx context.Context, tx *store.Tx, chk assertionCheck, now time.Time, c Client) error {
	pk := chk.pk
	old := pk.SignCount
	pk.Credential, pk.SignCount, pk.BackedUp, pk.LastUsedAt, pk.LastUsedIP = chk.use.Record, int64(chk.use.SignCount), chk.use.BackedUp, &now, c.IP
	won, err := tx.RecordPasskeyUse(ctx, pk, old)
	if err != nil {
		return err
	}
	if !won {
		return errConcurrentUse
	}
	return nil
}

// refuseLogin records a refused passkey sign-in (auth.login.failed and
// challenge.failed, with the user when known) and returns the refusal.
func (s *Service) refuseLogin(ctx context.Context, app store.App, userID, credentialID, reason string, why error, c Client) error {
	detail := strings.TrimPrefix(why.Error(), passkey.ErrInvalid.Error()+": ")
	s.log.InfoContext(ctx, "passkey sign-in refused", "app_id", app.ID, "user_id", userID, "reason", reason, "detail", detail)
	data := webhook.PasskeyLoginFailedData{UserID: optionalString(userID), Method: "webauthn", Purpose: "authenticate",
		Reason: reason, CredentialID: optionalString(credentialID), IPAddress: c.IP}
	// Only an app that accepts test identities pays a read to say whether
	// the refused user is one.
	if app.TestIdentities && userID != "" {
		u, err := s.db.GetAppUser(ctx, app.ID, userID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		data.Test = err == nil && s.users.TestIdentities().User(app, u)
	}
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := s.events.Emit(ctx, tx, app.ID, webhook.AuthLoginFailed, data); err != nil {
			return err
		}
		return s.events.Emit(ctx, tx, app.ID, webhook.ChallengeFailed, data)
	})
	if err != nil {
		return err
	}
	return &PasskeyError{Kind: ErrPasskeyVerification, Detail: detail}
}

func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func notFoundAs(err, as error) error {
	if errors.Is(err, store.ErrNotFound) {
		return as
	}
	return err
}

var errConcurrentUse = errors.New("the passkey was used concurrently")

// ListPasskeys lists the signed-in caller's passkeys.
func (s *Service) ListPasskeys(ctx context.Context, app store.App, caller Caller) (_ []Passkey, err error) {
	defer errs.Wrap(&err, "list passkeys")
	return s.db.ListPasskeys(ctx, app.ID, caller.User.ID)
}

// RenamePasskey names one of the caller's passkeys (by id or credential id).
func (s *Service) RenamePasskey(ctx context.Context, app store.App, caller Caller, id, name string) (_ Passkey, err error) {
	defer errs.Wrap(&err, "rename passkey")
	name = strings.TrimSpace(name)
	if name == "" || len([]rune(name)) > 100 {
		return Passkey{}, &errs.Invalid{Field: "name", Reason: "must be 1 to 100 characters"}
	}
	pk, err := s.db.RenamePasskey(ctx, app.ID, caller.User.ID, id, name, s.clock())
	return pk, notFoundAs(err, ErrPasskeyNotFound)
}

// DeletePasskey removes one of the caller's passkeys (by id or credential id).
func (s *Service) DeletePasskey(ctx context.Context, app store.App, caller Caller, id string) (err error) {
	defer errs.Wrap(&err, "delete passkey")
	if err := s.passkeyChangeAllowed(app, caller); err != nil {
		return err
	}
	return s.deletePasskey(ctx, app, caller.User.ID, id, nil)
}

// passkeyChangeAllowed: where the app uses second factors, a passkey is
// one, so adding or removing one needs a recent sign-in or step-up, as for
// the other factors (security R-MFA-2). Apps with MFA off keep the client
// SDK's addDevice working in sessions of any age.
func (s *Service) passkeyChangeAllowed(app store.App, caller Caller) error {
	if app.MFAPolicy.SecondFactor() {
		return s.recent(app, caller.Session)
	}
	return nil
}

// deletePasskey removes a user's passkey; admin, when an administrator
// does, is recorded in the audit log (a user's own removal is no
// administrative action).
func (s *Service) deletePasskey(ctx context.Context, app store.App, userID, id string, admin *access.Principal) error {
	var pk store.Passkey
	var updated store.AppUser
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		if pk, err = tx.DeletePasskey(ctx, app.ID, userID, id); err != nil {
			return notFoundAs(err, ErrPasskeyNotFound)
		}
		if updated, err = s.users.SyncPasskeys(ctx, tx, app, userID); err != nil {
			return err
		}
		if err := s.events.Emit(ctx, tx, app.ID, webhook.UserUpdated, s.passkeyEventData(app, updated, "passkey_removed", pk)); err != nil {
			return err
		}
		if admin != nil {
			if err := audit.Record(ctx, tx.Queries, s.clock(), *admin, audit.Change{WorkspaceID: app.WorkspaceID, AppID: app.ID,
				Action: "passkey.removed", TargetType: "passkey", TargetID: pk.ID, Before: map[string]string{"user_id": userID}}); err != nil {
				return err
			}
		}
		return s.securityNotice(ctx, tx, app, updated, courier.Notice{Kind: courier.NoticePasskeyRemoved, Detail: pk.Name})
	})
	return err
}

// UserPasskeys lists a user's passkeys for an administrator (Read access).
func (s *Service) UserPasskeys(ctx context.Context, p access.Principal, app store.App, userID string) (_ []Passkey, err error) {
	defer errs.Wrap(&err, "list user passkeys")
	if _, err := s.users.Get(ctx, p, app, userID); err != nil {
		return nil, err
	}
	return s.db.ListPasskeys(ctx, app.ID, userID)
}

// DeleteUserPasskey removes a user's passkey for an administrator (Write access).
func (s *Service) DeleteUserPasskey(ctx context.Context, p access.Principal, app store.App, userID, id string) (err error) {
	defer errs.Wrap(&err, "delete user passkey")
	if err := access.App(ctx, s.db.Queries, p, app.ID, access.Write); err != nil {
		return err
	}
	if _, err := s.db.GetAppUser(ctx, app.ID, userID); err != nil {
		return notFoundAs(err, appuser.ErrUserNotFound)
	}
	return s.deletePasskey(ctx, app, userID, id, &p)
}

// PrunePasskeyCeremonies deletes ceremonies nobody finished in time.
func (s *Service) prunePasskeyCeremonies(ctx context.Context) error {
	return s.db.PrunePasskeyCeremonies(ctx, s.clock().Add(-time.Minute))
}
