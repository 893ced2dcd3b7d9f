package signin

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/passkey"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Challenge purposes and the methods beyond codes and links (interface §2.6).
const (
	PurposeMFA              = "mfa"
	PurposeStepUp           = "step_up"
	PurposeVerifyContact    = "verify_contact"
	PurposeVerifyIdentity   = "verify_identity"
	PurposeChangeIdentifier = "change_identifier"
	PurposeCustom           = "custom"

	MethodTOTP       = "totp"
	MethodBackupCode = "backup_code"
	MethodPasskey    = "webauthn"
	MethodPush       = "push"
)

// Purposes and Methods list every value of interface §2.6, in its order.
var (
	Purposes = []string{PurposeAuthenticate, PurposeMFA, PurposeStepUp, PurposeVerifyContact, PurposeVerifyIdentity,
		PurposeChangeIdentifier, PurposeCustom}
	Methods = []string{MethodEmailOTP, MethodSMSOTP, MethodMagicLink, MethodTOTP, MethodBackupCode, MethodPasskey, MethodPush}
)

// purposeMethods is the rule of which method may serve which purpose
// (docs/integrate.md has the table and the reasons). A TOTP or backup code
// is only ever a second factor: alone, it would make a sign-in out of an
// identifier and a six-digit guess. A magic link is a sign-in, not a
// confirmation. Only a message to an address proves the address.
var purposeMethods = map[string][]string{
	PurposeAuthenticate:     {MethodEmailOTP, MethodSMSOTP, MethodMagicLink, MethodPasskey, MethodPush},
	PurposeMFA:              {MethodEmailOTP, MethodSMSOTP, MethodTOTP, MethodBackupCode, MethodPasskey, MethodPush},
	PurposeStepUp:           {MethodEmailOTP, MethodSMSOTP, MethodTOTP, MethodBackupCode, MethodPasskey, MethodPush},
	PurposeVerifyContact:    {MethodEmailOTP, MethodSMSOTP},
	PurposeChangeIdentifier: {MethodEmailOTP, MethodSMSOTP},
	PurposeVerifyIdentity:   {MethodEmailOTP, MethodSMSOTP, MethodTOTP, MethodBackupCode, MethodPasskey, MethodPush},
	PurposeCustom:           {MethodEmailOTP, MethodSMSOTP, MethodTOTP, MethodBackupCode, MethodPasskey, MethodPush},
}

// MethodServes reports whether method may serve purpose.
func MethodServes(purpose, method string) bool {
	return slices.Contains(purposeMethods[purpose], method)
}

// Challenge lifetimes and attempts by method.
const (
	factorLifetime = 5 * time.Minute // TOTP, backup code, passkey, push
	pushAttempts   = 3               // wrong numbers before a push fails
	// tokenLabel keys the hash of a challenge's bearer token; magic links'
	// poll handles were first, so a link's handle is its challenge token.
	tokenLabel = "magic-poll"
	// maxChallengeData bounds the app's data on a challenge: it is stored
	// and sent in events, so it stays small.
	maxChallengeData = 4096
)

// Errors of the challenge resource.
var (
	// ErrChallengeNotFound: no challenge has this token in this app.
	ErrChallengeNotFound = errors.New("challenge not found")
	// ErrChallengePending: a push challenge not answered yet.
	ErrChallengePending = errors.New("challenge not yet approved")
	// ErrIdentifierTaken: the new e-mail or phone is another user's.
	ErrIdentifierTaken = errors.New("identifier taken")
	// ErrMFAMethodNotFound: no such second factor of the user.
	ErrMFAMethodNotFound = errors.New("mfa method not found")
	// ErrFactorLocked: too many consecutive wrong TOTP or backup codes.
	ErrFactorLocked = errors.New("factor locked")
	// ErrCodeUsed: a TOTP code whose time step was accepted already (a
	// replay); the next code works.
	ErrCodeUsed = errors.New("code used already")
)

// ChallengeClosedError refuses an action on a challenge that is no longer pending.
type ChallengeClosedError struct{ Status string }

func (e *ChallengeClosedError) Error() string { return "the challenge is " + e.Status }

// StepUpRequiredError refuses a sensitive change in a session whose last
// proof of identity is older than the app allows (security R-MFA-2).
type StepUpRequiredError struct {
	Minutes int
	// Except: the refused change removes a factor (totp or webauthn) that
	// made the sign-in recent, which cannot vouch for its own removal:
	// another way must confirm.
	Except string
}

func (e *StepUpRequiredError) Error() string {
	return fmt.Sprintf("verification required: sign in or step up within %d minutes", e.Minutes)
}

// ChallengeRequest is POST /challenges.
type ChallengeRequest struct {
	Purpose    string
	Method     string
	Identifier string
	AppUserID  string
	Intent     string
	Data       map[string]any // custom and verify_identity: handed back in challenge.completed
}

// Requester is who creates a challenge: nobody (a signed-out browser), a
// signed-in user (their access token) or a backend (an API credential).
type Requester struct {
	Principal *access.Principal
	Caller    *Caller
}

// ChallengeView is a challenge as the API shows it (interface §2.6).
type ChallengeView struct {
	ID                string
	Token             string
	Status            string
	Purpose           string
	Method            string
	Intent            string
	ExpiresAt         time.Time
	RemainingAttempts int
	TimeRemaining     int // seconds
	// DeliveryRequired: the code has not been sent yet (a second factor the
	// sign-in picked): POST /resend sends it.
	DeliveryRequired bool
	MatchNumber      int             // push and magic links: the number the other device must match
	WebauthnOptions  json.RawMessage // webauthn: the options for navigator.credentials.get
}

// MFARequired is what a first factor answers when a second one is due.
type MFARequired struct {
	AppUserID        string
	Challenge        ChallengeView
	AvailableMethods []string
}

// VerifyInput is the answer to a challenge.
type VerifyInput struct {
	Code       string
	Credential json.RawMessage // webauthn: the PublicKeyCredential JSON
}

// VerifyResult is what a completed challenge gives.
type VerifyResult struct {
	Challenge ChallengeView
	// Tokens: authenticate and mfa, and a session's step-up (nil otherwise).
	Tokens *TokenSet
	// RemainingBackupCodes after a backup code was spent.
	RemainingBackupCodes *int
	// User after change_identifier.
	User *store.AppUser
}

// challengeData is what a challenge's data column holds.
type challengeData struct {
	// MFA: the first factor the sign-in passed.
	FirstSession    string `json:"first_session,omitempty"`
	FirstAMR        string `json:"first_amr,omitempty"`
	FirstKind       string `json:"first_kind,omitempty"`
	FirstCredential string `json:"first_credential,omitempty"`
	// change_identifier: the new e-mail or phone.
	NewIdentifier string `json:"new_identifier,omitempty"`
	// webauthn: the ceremony's challenge hash and the options shown.
	WebauthnChallenge string          `json:"webauthn_challenge,omitempty"`
	WebauthnOptions   json.RawMessage `json:"webauthn_options,omitempty"`
	// Undelivered: the code was not sent yet (POST /resend sends it).
	Undelivered bool `json:"undelivered,omitempty"`
	// push: the session that approved.
	ApprovedBy string `json:"approved_by,omitempty"`
	// totp and webauthn: the authenticator app or passkey that answered,
	// which a step-up may then not remove.
	UsedFactor string `json:"used_factor,omitempty"`
	// custom and verify_identity: the app's data.
	Custom map[string]any `json:"custom,omitempty"`
	// Test: the challenge's user was a test user of the app when it was
	// created; its events carry "test": true.
	Test bool `json:"test,omitempty"`
	// Languages: the languages of the code's message (a resend uses them too).
	Languages []string `json:"languages,omitempty"`
	// oauth: the social sign-in provider's slug.
	Provider string `json:"provider,omitempty"`
	// magic_link asked for by the hosted sign-in page: the page's path
	// where the link's opener lands (SendHostedMagicLink).
	HostedLanding string `json:"hosted_landing,omitempty"`
}

func decodeData(ch store.Challenge) challengeData {
	var d challengeData
	_ = json.Unmarshal([]byte(ch.Data), &d) // written by encodeData only
	return d
}

func encodeData(d challengeData) string {
	b, _ := json.Marshal(d) // plain fields always marshal
	return string(b)
}

// delivered reports whether a method sends a message (a code or a link).
func delivered(method string) bool {
	return method == MethodEmailOTP || method == MethodSMSOTP || method == MethodMagicLink
}

// View is ch as the API shows it at now, with its token when the caller
// has it (creation, or a request that named it).
func (s *Service) View(ch store.Challenge, tok string, now time.Time) ChallengeView {
	d := decodeData(ch)
	v := ChallengeView{ID: ch.ID, Token: tok, Status: ch.Status, Purpose: ch.Purpose, Method: ch.Method, Intent: ch.Intent,
		ExpiresAt: ch.ExpiresAt, RemainingAttempts: ch.RemainingAttempts, DeliveryRequired: d.Undelivered,
		WebauthnOptions: d.WebauthnOptions}
	if ch.Method == MethodPush || ch.Method == MethodMagicLink {
		v.MatchNumber = ch.MatchNumber
	}
	switch {
	case ch.Status == store.ChallengeSuperseded:
		v.Status = store.ChallengeCancelled
	case ch.Status == store.ChallengePending && !now.Before(ch.ExpiresAt):
		v.Status = store.ChallengeExpired
	case ch.Status == store.ChallengePending:
		v.TimeRemaining = int(ch.ExpiresAt.Sub(now).Seconds())
	}
	if v.Status != store.ChallengePending {
		v.DeliveryRequired = false
	}
	return v
}

// CreateChallenge starts a challenge (POST /challenges). Who may create
// which purpose, and which methods serve it, is the rule in
// docs/integrate.md; every refusal is invalid_request, an unknown user
// user_not_found (or, with the app's enumeration_protection, a decoy that
// looks pending and sends nothing).
func (s *Service) CreateChallenge(ctx context.Context, app store.App, who Requester, req ChallengeRequest, c Client) (_ ChallengeView, err error) {
	defer errs.Wrap(&err, "create challenge")
	req.Purpose, req.Method = strings.TrimSpace(req.Purpose), strings.TrimSpace(req.Method)
	switch {
	case !slices.Contains(Purposes, req.Purpose):
		return ChallengeView{}, errs.Invalidf("purpose", "must be one of %s", strings.Join(Purposes, ", "))
	case !slices.Contains(Methods, req.Method):
		return ChallengeView{}, errs.Invalidf("method", "must be one of %s", strings.Join(Methods, ", "))
	case !MethodServes(req.Purpose, req.Method):
		return ChallengeView{}, errs.Invalidf("method", "%s cannot be used for purpose %s", req.Method, req.Purpose)
	case len(req.Intent) > 100:
		return ChallengeView{}, errs.Invalidf("intent", "must be at most 100 characters")
	case req.Data != nil && req.Purpose != PurposeCustom && req.Purpose != PurposeVerifyIdentity:
		return ChallengeView{}, errs.Invalidf("data", "is for custom and verify_identity challenges only")
	}
	if b, _ := json.Marshal(req.Data); len(b) > maxChallengeData { // a decoded JSON object always marshals
		return ChallengeView{}, errs.Invalidf("data", "must be at most %d bytes of JSON", maxChallengeData)
	}
	if err := s.allow(ctx, bucket{key: "challenge:ip:" + c.IP, rule: s.limits.ChallengePerIP}); err != nil {
		return ChallengeView{}, err
	}
	if req.Purpose == PurposeAuthenticate {
		return s.createSignIn(ctx, app, req, c)
	}
	u, sessionID, err := s.challengeUser(ctx, app, who, req)
	if err != nil {
		return ChallengeView{}, err
	}
	now := s.clock()
	ch := store.Challenge{ID: newID(), AppID: app.ID, AppUserID: u.ID, Purpose: req.Purpose, Method: req.Method,
		Status: store.ChallengePending, IP: c.IP, UserAgent: truncate(c.UserAgent, 512), CreatedAt: now,
		Intent: strings.TrimSpace(req.Intent), SessionID: sessionID, Location: truncate(c.Location, 120)}
	d := challengeData{Test: s.users.TestIdentities().User(app, u)}
	if req.Purpose == PurposeCustom || req.Purpose == PurposeVerifyIdentity {
		d.Custom = req.Data
	}
	var cancel string // the purpose whose pending challenges the new one replaces
	var parent store.Challenge
	switch req.Purpose {
	case PurposeMFA:
		parent, err = s.db.LatestMFAChallenge(ctx, app.ID, u.ID, now)
		if errors.Is(err, store.ErrNotFound) || (err == nil && !sameDevice(parent, c)) {
			return ChallengeView{}, errs.Invalidf("app_user_id", "has no sign-in from this device waiting for a second factor")
		}
		if err != nil {
			return ChallengeView{}, err
		}
		pd := decodeData(parent)
		d.FirstSession, d.FirstAMR, d.FirstKind, d.FirstCredential = pd.FirstSession, pd.FirstAMR, pd.FirstKind, pd.FirstCredential
		ch.ExpiresAt = parent.ExpiresAt // switching method does not extend the sign-in
		cancel = PurposeMFA
		if !slices.Contains(app.MFAMethodsAllowed, req.Method) || req.Method == sameKindMethod(d.FirstKind) {
			return ChallengeView{}, errs.Invalidf("method", "%s is not a second factor this sign-in may use", req.Method)
		}
	case PurposeChangeIdentifier:
		if d.NewIdentifier, err = s.newIdentifier(ctx, app, u, req); err != nil {
			return ChallengeView{}, err
		}
		cancel = PurposeChangeIdentifier
	case PurposeVerifyContact:
		if d.NewIdentifier, err = ownContact(u, req); err != nil {
			return ChallengeView{}, err
		}
	}
	if err := s.prepareMethod(ctx, s.db.Queries, app, u, &ch, &d, now); err != nil {
		return ChallengeView{}, err
	}
	if err := s.allowUser(ctx, u.ID, req.Purpose); err != nil {
		return ChallengeView{}, err
	}
	tok := token.RandomString(32)
	ch.PollHash = s.hasher.Hash(tokenLabel, tok)
	var code string
	if ch.Method == MethodEmailOTP || ch.Method == MethodSMSOTP {
		code = s.newCode(app, ch.Recipient)
		ch.SecretHash = s.hasher.Hash("otp", ch.ID, code)
		if err := s.allow(ctx, bucket{key: "send:id:" + app.ID + ":" + ch.Recipient, rule: s.limits.SendPerIdentifier},
			bucket{key: "send:ip:" + c.IP, rule: s.limits.SendPerIP}); err != nil {
			return ChallengeView{}, err
		}
		if err := s.guardChallengeSMS(ctx, app, ch); err != nil {
			return ChallengeView{}, err
		}
	}
	d.Languages = languages(u.Meta, c)
	ch.Data = encodeData(d)
	return s.storeChallenge(ctx, app, ch, tok, code, now, func(tx *store.Tx) error {
		if cancel == "" {
			return nil
		}
		if req.Purpose == PurposeMFA {
			// The sign-in may have ended since it was read (a denied
			// push ends it: DenyPush takes the same lock).
			if err := tx.LockGuesses(ctx, u.ID); err != nil {
				return err
			}
			latest, err := tx.LatestMFAChallenge(ctx, app.ID, u.ID, now)
			if errors.Is(err, store.ErrNotFound) || (err == nil && (!sameSignIn(latest, parent) || newer(latest, ch))) {
				return errs.Invalidf("app_user_id", "has no sign-in from this device waiting for a second factor")
			}
			if err != nil {
				return err
			}
		}
		return tx.CancelPurpose(ctx, u.ID, cancel)
	})
}

// newer: a was made after b, in the order LatestMFAChallenge reads them.
// A replacement that took its time and id before another one but the lock
// after it is refused: inserted, it would be a pending second factor behind
// a newer, cancelled one, which the sign-in's newest factor no longer names.
func newer(a, b store.Challenge) bool {
	at, bt := a.CreatedAt.UTC().Truncate(time.Microsecond), b.CreatedAt.UTC().Truncate(time.Microsecond)
	return at.After(bt) || (at.Equal(bt) && a.ID > b.ID)
}

// storeChallenge stores a new challenge after before (what it replaces),
// with its created event (and verification.{channel}.requested for a code)
// in the same transaction; then sends its code, if it has one.
func (s *Service) storeChallenge(ctx context.Context, app store.App, ch store.Challenge, tok, code string, now time.Time, before func(tx *store.Tx) error) (ChallengeView, error) {
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := before(tx); err != nil {
			return err
		}
		if err := tx.CreateChallenge(ctx, ch); err != nil {
			return err
		}
		if code == "" {
			return s.emitChallenge(ctx, tx, ch, challengeCreated(ch, ""))
		}
		if err := s.emitVerification(ctx, tx, ch, webhook.OutcomeRequested, nil, nil); err != nil {
			return err
		}
		return s.out.Send(ctx, tx, app, challengeCodeMessage(ch, code))
	})
	if err != nil {
		return ChallengeView{}, err
	}
	if ch.Method == MethodPush {
		s.notifyPush(ctx, app, ch)
	}
	return s.View(ch, tok, now), nil
}

// allowUser takes one challenge from the user's budget, once the request
// has passed its checks (a refused one costs the user nothing). Purposes
// anyone may start (authenticate, mfa) have a budget of their own, so a
// stranger cannot use up the one the user's step-ups and changes draw on.
func (s *Service) allowUser(ctx context.Context, userID, purpose string) error {
	key := "challenge:user:" + userID
	if purpose == PurposeAuthenticate || purpose == PurposeMFA {
		key = "challenge:anon:" + userID
	}
	return s.allow(ctx, bucket{key: key, rule: s.limits.ChallengePerUser})
}

// sameKindMethod is the second factor that would repeat a first factor of
// kind: a code to the address that just proved itself is not a second factor.
func sameKindMethod(kind string) string {
	switch kind {
	case "email":
		return MethodEmailOTP
	case "sms":
		return MethodSMSOTP
	case "passkey":
		return MethodPasskey
	case "push":
		return MethodPush
	}
	return ""
}

// challengeUser finds the user a challenge is for, by the requester: a
// signed-in user is the user (and binds step-ups to the session); a backend
// names one by app_user_id; nobody may name one only for a second factor.
func (s *Service) challengeUser(ctx context.Context, app store.App, who Requester, req ChallengeRequest) (store.AppUser, string, error) {
	backendOnly := req.Purpose == PurposeVerifyIdentity || req.Purpose == PurposeCustom
	switch {
	case who.Caller != nil && !backendOnly && req.Purpose != PurposeMFA:
		if req.AppUserID != "" && req.AppUserID != who.Caller.User.ID {
			return store.AppUser{}, "", errs.Invalidf("app_user_id", "must be the signed-in user's, or left out")
		}
		if req.Purpose == PurposeChangeIdentifier {
			if err := s.recent(app, who.Caller.Session); err != nil {
				return store.AppUser{}, "", err
			}
		}
		return who.Caller.User, who.Caller.Session.ID, nil
	case who.Principal != nil && req.Purpose != PurposeMFA:
		if err := access.App(ctx, s.db.Queries, *who.Principal, app.ID, access.Write); err != nil {
			return store.AppUser{}, "", err
		}
	case req.Purpose != PurposeMFA:
		return store.AppUser{}, "", ErrUnauthenticated
	}
	id := strings.TrimSpace(req.AppUserID)
	if id == "" {
		return store.AppUser{}, "", errs.Invalidf("app_user_id", "is required")
	}
	u, err := s.db.GetAppUser(ctx, app.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.AppUser{}, "", appuser.ErrUserNotFound
	}
	if err != nil {
		return store.AppUser{}, "", err
	}
	if u.Status == store.StatusInactive {
		return store.AppUser{}, "", errs.Invalidf("app_user_id", "is a deactivated user")
	}
	return u, "", nil
}

// recent refuses a sensitive change when the session's last proof of
// identity (sign-in or step-up) is older than the app's reverify window.
func (s *Service) recent(app store.App, sess store.Session) error {
	mins := max(app.MFAReverifyMinutes, 5)
	if s.clock().Sub(sess.Authenticated()) <= time.Duration(mins)*time.Minute {
		return nil
	}
	return &StepUpRequiredError{Minutes: mins}
}

// newIdentifier checks the new e-mail or phone of a change_identifier
// challenge: of the method's kind, accepted by the app, not the user's
// already, and nobody else's.
func (s *Service) newIdentifier(ctx context.Context, app store.App, u store.AppUser, req ChallengeRequest) (string, error) {
	if strings.TrimSpace(req.Identifier) == "" {
		return "", errs.Invalidf("identifier", "is required: the new e-mail address or phone number")
	}
	id, err := parseIdentifier(app, req.Identifier)
	if err != nil {
		return "", err
	}
	if (id.Kind == appuser.KindEmail) != (req.Method == MethodEmailOTP) {
		return "", errs.Invalidf("method", "%s cannot verify a new %s", req.Method, id.Kind)
	}
	if id.Value == u.Email || id.Value == u.Phone {
		return "", errs.Invalidf("identifier", "is already the user's")
	}
	var email, phone string
	if id.Kind == appuser.KindEmail {
		email = id.Value
	} else {
		phone = id.Value
	}
	if _, err := s.db.FindAppUser(ctx, app.ID, email, phone); err == nil {
		return "", ErrIdentifierTaken
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	return id.Value, nil
}

// ownContact is the address a verify_contact challenge checks: the named
// one, which must be the user's, or the user's address of the method's kind.
func ownContact(u store.AppUser, req ChallengeRequest) (string, error) {
	want := u.Email
	if req.Method == MethodSMSOTP {
		want = u.Phone
	}
	if strings.TrimSpace(req.Identifier) != "" {
		id, err := appuser.ParseIdentifier(req.Identifier)
		if err != nil {
			return "", err
		}
		if id.Value != want {
			return "", errs.Invalidf("identifier", "must be the user's own %s", map[bool]string{true: "phone number", false: "e-mail address"}[req.Method == MethodSMSOTP])
		}
	}
	if want == "" {
		return "", errs.Invalidf("method", "%s cannot be used: the user has no %s", req.Method, map[bool]string{true: "phone number", false: "e-mail address"}[req.Method == MethodSMSOTP])
	}
	return want, nil
}

// prepareMethod fills what ch's method needs and checks the user has it
// set up: the recipient of a code, a passkey ceremony, a push's number.
func (s *Service) prepareMethod(ctx context.Context, q store.Queries, app store.App, u store.AppUser, ch *store.Challenge, d *challengeData, now time.Time) error {
	lifetime := factorLifetime
	ch.RemainingAttempts = codeAttempts
	switch ch.Method {
	case MethodEmailOTP, MethodSMSOTP:
		lifetime = s.settings.CodeLifetime
		switch {
		case d.NewIdentifier != "":
			ch.Recipient = d.NewIdentifier
		case ch.Method == MethodEmailOTP:
			ch.Recipient = u.Email
		default:
			ch.Recipient = u.Phone
		}
		if ch.Recipient == "" {
			return errs.Invalidf("method", "%s cannot be used: the user has no %s", ch.Method, map[bool]string{true: "phone number", false: "e-mail address"}[ch.Method == MethodSMSOTP])
		}
	case MethodTOTP, MethodBackupCode:
		st, err := q.GetMFAState(ctx, u.ID)
		if err != nil {
			return err
		}
		if (ch.Method == MethodTOTP && st.VerifiedTOTP == 0) || (ch.Method == MethodBackupCode && st.BackupCodes == 0) {
			return errs.Invalidf("method", "%s cannot be used: the user has not set it up", ch.Method)
		}
		ch.SecretHash = s.hasher.Hash("no-secret", ch.ID)
	case MethodPasskey:
		rp, err := s.relyingParty(app)
		if err != nil {
			return err
		}
		pu, err := s.passkeyUser(ctx, q, u, false)
		if err != nil {
			return err
		}
		if len(pu.Credentials) == 0 || pu.Handle == nil {
			return errs.Invalidf("method", "%s cannot be used: the user has no passkey", ch.Method)
		}
		allow := make([]passkey.Descriptor, 0, len(pu.Credentials))
		for _, c := range pu.Credentials {
			allow = append(allow, passkey.Descriptor{ID: c.ID})
		}
		opts, cer, err := rp.BeginLogin(pu.Handle, allow)
		if err != nil {
			return err
		}
		if err := s.storeCeremony(ctx, q, app, u.ID, store.CeremonyChallenge, cer); err != nil {
			return err
		}
		d.WebauthnChallenge, d.WebauthnOptions = s.hasher.Hash("webauthn-challenge", cer.Challenge), opts
		ch.SecretHash = s.hasher.Hash("no-secret", ch.ID)
	case MethodPush:
		n, err := q.CountLiveSessions(ctx, app.ID, u.ID, ch.SessionID, now)
		if err != nil {
			return err
		}
		if n == 0 {
			return errs.Invalidf("method", "%s cannot be used: the user has no other signed-in device to approve it", ch.Method)
		}
		ch.MatchNumber, ch.RemainingAttempts = matchNumber(), pushAttempts
		ch.SecretHash = s.hasher.Hash("no-secret", ch.ID)
	}
	if ch.ExpiresAt.IsZero() {
		ch.ExpiresAt = now.Add(lifetime)
	}
	return nil
}

// createSignIn starts an authenticate challenge for an identifier: a code,
// a link, a passkey or a push. An unknown (or deactivated) identifier is
// user_not_found, counted against the IP's budget of unknown identifiers,
// or with enumeration_protection a decoy.
func (s *Service) createSignIn(ctx context.Context, app store.App, req ChallengeRequest, c Client) (ChallengeView, error) {
	if strings.TrimSpace(req.Identifier) == "" {
		return ChallengeView{}, errs.Invalidf("identifier", "is required: an e-mail address or a phone number")
	}
	id, err := parseIdentifier(app, req.Identifier)
	if err != nil {
		return ChallengeView{}, err
	}
	if (req.Method == MethodSMSOTP && id.Kind != appuser.KindPhone) || (req.Method == MethodEmailOTP && id.Kind != appuser.KindEmail) {
		return ChallengeView{}, errs.Invalidf("method", "%s cannot reach a %s", req.Method, id.Kind)
	}
	if app.EnumerationProtection && (req.Method == MethodPasskey || req.Method == MethodPush) {
		// Whether an identifier has a passkey or a signed-in device would
		// show through; passkey sign-in has its own stand-ins at
		// /webauthn/login/initialize.
		return ChallengeView{}, errs.Invalidf("method", "%s sign-in challenges are off with enumeration_protection: use /webauthn/login/initialize for passkeys", req.Method)
	}
	if err := s.checkSMS(ctx, app, id, req.Method); err != nil {
		return ChallengeView{}, err
	}
	u, err := s.users.Lookup(ctx, app, id.Value)
	if err != nil {
		return ChallengeView{}, err
	}
	now := s.clock()
	if u == nil || u.Status == store.StatusInactive {
		if err := s.allow(ctx, bucket{key: "challenge:unknown:" + c.IP, rule: s.limits.UnknownPerIP}); err != nil {
			return ChallengeView{}, err
		}
		if !app.EnumerationProtection {
			return ChallengeView{}, appuser.ErrUserNotFound
		}
		return s.decoyView(req, now), nil
	}
	switch req.Method {
	case MethodMagicLink:
		if err := s.allowUser(ctx, u.ID, req.Purpose); err != nil {
			return ChallengeView{}, err
		}
		res, err := s.SendMagicLink(ctx, app, id.Value, nil, false, c)
		if err != nil {
			return ChallengeView{}, err
		}
		ch, err := s.db.GetChallengeByToken(ctx, s.hasher.Hash(tokenLabel, res.ChallengeID))
		if err != nil {
			return ChallengeView{}, err
		}
		return s.View(ch, res.ChallengeID, now), nil
	case MethodEmailOTP, MethodSMSOTP:
		if err := s.allow(ctx, sendBuckets(app, id, c, s.limits)...); err != nil {
			return ChallengeView{}, err
		}
		if err := s.guardSMS(ctx, app, id); err != nil {
			return ChallengeView{}, err
		}
	}
	ch := store.Challenge{ID: newID(), AppID: app.ID, AppUserID: u.ID, Purpose: PurposeAuthenticate, Method: req.Method,
		Status: store.ChallengePending, IP: c.IP, UserAgent: truncate(c.UserAgent, 512), CreatedAt: now,
		Intent: strings.TrimSpace(req.Intent), Location: truncate(c.Location, 120)}
	d := challengeData{NewIdentifier: id.Value, Test: u.Test}
	if err := s.prepareMethod(ctx, s.db.Queries, app, u.AppUser, &ch, &d, now); err != nil {
		return ChallengeView{}, err
	}
	if err := s.allowUser(ctx, u.ID, req.Purpose); err != nil {
		return ChallengeView{}, err
	}
	d.NewIdentifier = ""
	d.Languages = outbound.Languages(u.Meta, c.Languages)
	tok := token.RandomString(32)
	ch.PollHash, ch.Data = s.hasher.Hash(tokenLabel, tok), encodeData(d)
	var code string
	if ch.Method == MethodEmailOTP || ch.Method == MethodSMSOTP {
		code = s.newCode(app, ch.Recipient)
		ch.SecretHash = s.hasher.Hash("otp", ch.ID, code)
	}
	return s.storeChallenge(ctx, app, ch, tok, code, now, func(tx *store.Tx) error {
		if code == "" {
			return nil
		}
		// As for /otps/login: the newest code is the only one that works.
		return tx.SupersedeChallenges(ctx, u.ID, []string{MethodEmailOTP, MethodSMSOTP})
	})
}

// decoyView is the answer for an unknown identifier under
// enumeration_protection: the shape of a pending challenge, a token that
// leads nowhere, nothing stored and nothing sent.
func (s *Service) decoyView(req ChallengeRequest, now time.Time) ChallengeView {
	exp := now.Add(factorLifetime)
	attempts := codeAttempts
	switch req.Method {
	case MethodEmailOTP, MethodSMSOTP:
		exp = now.Add(s.settings.CodeLifetime)
	case MethodPush:
		attempts = pushAttempts
	}
	v := ChallengeView{ID: newID(), Token: s.decoyToken(exp, byte(slices.Index(Methods, req.Method))), Status: store.ChallengePending, Purpose: req.Purpose,
		Method: req.Method, Intent: strings.TrimSpace(req.Intent), ExpiresAt: exp, RemainingAttempts: attempts,
		TimeRemaining: int(exp.Sub(now).Seconds())}
	if req.Method == MethodPush || req.Method == MethodMagicLink {
		v.MatchNumber = matchNumber()
	}
	return v
}

// challengeCodeMessage is the message carrying a challenge's code.
func challengeCodeMessage(ch store.Challenge, code string) outbound.Request {
	return outbound.Request{Template: courier.TemplateLoginCode, To: ch.Recipient, Ref: challengeRef(ch),
		Vars: courier.Vars{Code: code, ExpiresIn: ch.ExpiresAt.Sub(ch.CreatedAt)}, Langs: decodeData(ch).Languages}
}

// challengeByToken finds the challenge of app behind a bearer token.
func (s *Service) challengeByToken(ctx context.Context, app store.App, tok string) (store.Challenge, error) {
	if tok == "" || len(tok) > 128 {
		return store.Challenge{}, ErrChallengeNotFound
	}
	ch, err := s.db.GetChallengeByToken(ctx, s.hasher.Hash(tokenLabel, tok))
	if errors.Is(err, store.ErrNotFound) || (err == nil && ch.AppID != app.ID) {
		return store.Challenge{}, ErrChallengeNotFound
	}
	return ch, err
}

// GetChallenge reads a challenge by its token (GET /challenges/{token}).
// A decoy answers as a pending challenge until it would have expired.
func (s *Service) GetChallenge(ctx context.Context, app store.App, tok string) (_ ChallengeView, err error) {
	defer errs.Wrap(&err, "get challenge")
	now := s.clock()
	ch, err := s.challengeByToken(ctx, app, tok)
	if errors.Is(err, ErrChallengeNotFound) {
		if v, ok := s.decoyChallenge(tok, now); ok {
			return v, nil
		}
	}
	if err != nil {
		return ChallengeView{}, err
	}
	return s.View(ch, tok, now), nil
}

// CancelChallenge ends a pending challenge (DELETE /challenges/{token});
// cancelling one already cancelled answers it again.
func (s *Service) CancelChallenge(ctx context.Context, app store.App, tok string) (_ ChallengeView, err error) {
	defer errs.Wrap(&err, "cancel challenge")
	now := s.clock()
	ch, err := s.challengeByToken(ctx, app, tok)
	if err != nil {
		return s.decoyOr(tok, err, now, func(v *ChallengeView) error {
			v.Status, v.TimeRemaining = store.ChallengeCancelled, 0
			return nil
		})
	}
	if v := s.View(ch, tok, now); v.Status != store.ChallengePending {
		if v.Status == store.ChallengeCancelled {
			return v, nil
		}
		return ChallengeView{}, &ChallengeClosedError{Status: v.Status}
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		won, err := tx.CancelChallenge(ctx, ch.ID)
		if err != nil || !won {
			return err
		}
		return s.emitChallenge(ctx, tx, ch, challengeFailed(ch, store.ChallengeCancelled, "cancelled", nil, ""))
	})
	if err != nil {
		return ChallengeView{}, err
	}
	ch.Status = store.ChallengeCancelled
	return s.View(ch, tok, now), nil
}

// ResendChallenge sends a new code for a pending e-mail or SMS challenge
// (POST /challenges/{token}/resend): the old code dies at once; attempts
// left stay as they were, so a resend buys no guesses. A second factor's
// first code is sent this way too (delivery_required).
func (s *Service) ResendChallenge(ctx context.Context, app store.App, tok string, c Client) (_ ChallengeView, err error) {
	defer errs.Wrap(&err, "resend challenge")
	now := s.clock()
	ch, err := s.challengeByToken(ctx, app, tok)
	if err != nil {
		return s.decoyOr(tok, err, now, func(v *ChallengeView) error {
			if v.Method != MethodEmailOTP && v.Method != MethodSMSOTP {
				return errs.Invalidf("method", "%s challenges send nothing: nothing to resend", v.Method)
			}
			return s.allow(ctx, bucket{key: "send:ip:" + c.IP, rule: s.limits.SendPerIP})
		})
	}
	if v := s.View(ch, tok, now); v.Status != store.ChallengePending {
		return ChallengeView{}, &ChallengeClosedError{Status: v.Status}
	}
	if ch.Method != MethodEmailOTP && ch.Method != MethodSMSOTP {
		return ChallengeView{}, errs.Invalidf("method", "%s challenges send nothing: nothing to resend", ch.Method)
	}
	if err := s.allow(ctx, bucket{key: "send:id:" + app.ID + ":" + ch.Recipient, rule: s.limits.SendPerIdentifier},
		bucket{key: "send:ip:" + c.IP, rule: s.limits.SendPerIP}); err != nil {
		return ChallengeView{}, err
	}
	if err := s.guardChallengeSMS(ctx, app, ch); err != nil {
		return ChallengeView{}, err
	}
	code := s.newCode(app, ch.Recipient)
	ch.SecretHash = s.hasher.Hash("otp", ch.ID, code)
	if ch.Purpose != PurposeMFA { // a second factor keeps its sign-in's deadline
		ch.ExpiresAt = now.Add(s.settings.CodeLifetime)
	}
	d := decodeData(ch)
	d.Undelivered = false
	ch.Data = encodeData(d)
	sent := ch
	sent.CreatedAt = now // the message counts its lifetime from now
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		won, err := tx.ResendChallenge(ctx, ch.ID, ch.SecretHash, ch.ExpiresAt)
		if err != nil {
			return err
		}
		if !won {
			return &ChallengeClosedError{Status: store.ChallengeExpired}
		}
		if err := tx.SetChallengeData(ctx, ch.ID, ch.Data); err != nil {
			return err
		}
		if err := s.events.Emit(ctx, tx, ch.AppID, webhook.Verification(channelOf(ch), webhook.OutcomeRequested),
			webhook.VerificationRequestedData{VerificationData: verificationData(ch, nil), Resend: true}); err != nil {
			return err
		}
		return s.out.Send(ctx, tx, app, challengeCodeMessage(sent, code))
	})
	if err != nil {
		return ChallengeView{}, err
	}
	ch.CreatedAt = now
	return s.View(ch, tok, now), nil
}

// decoyToken is a decoy challenge's token: a decoy poll handle (send.go)
// whose first byte names the method, so a later GET can answer as a
// pending challenge of that method would, with nothing stored.
func (s *Service) decoyToken(expires time.Time, method byte) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b[:12]) // crypto/rand never fails on supported systems
	b[0] = method
	binary.BigEndian.PutUint32(b[12:16], uint32(expires.Unix()))
	copy(b[16:], s.decoyTag(b[:16]))
	return base64.RawURLEncoding.EncodeToString(b)
}

// decoyChallenge is what the challenge routes answer for a decoy token: a
// pending challenge of its method until its expiry, expired after it.
func (s *Service) decoyChallenge(tok string, now time.Time) (ChallengeView, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != 32 || subtle.ConstantTimeCompare(s.decoyTag(b[:16]), b[16:]) != 1 || int(b[0]) >= len(Methods) {
		return ChallengeView{}, false
	}
	exp := time.Unix(int64(binary.BigEndian.Uint32(b[12:16])), 0).UTC()
	v := s.decoyView(ChallengeRequest{Purpose: PurposeAuthenticate, Method: Methods[b[0]]}, now)
	v.Token, v.ExpiresAt, v.TimeRemaining, v.MatchNumber = tok, exp, max(0, int(exp.Sub(now).Seconds())), 0
	if !now.Before(exp) {
		v.Status, v.TimeRemaining = store.ChallengeExpired, 0
	}
	return v, true
}

// decoyOr answers a decoy token as a real challenge in the same state
// would (change sets what the action makes of a pending one), and passes
// any other not-found on.
func (s *Service) decoyOr(tok string, err error, now time.Time, change func(*ChallengeView) error) (ChallengeView, error) {
	if !errors.Is(err, ErrChallengeNotFound) {
		return ChallengeView{}, err
	}
	v, ok := s.decoyChallenge(tok, now)
	if !ok {
		return ChallengeView{}, err
	}
	if v.Status != store.ChallengePending {
		return ChallengeView{}, &ChallengeClosedError{Status: v.Status}
	}
	return v, change(&v)
}
