package signin

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// recipient is who a code or link goes to, once resolved and rate-limited.
// User is nil when nothing may be sent (unknown with sign-up closed, or
// deactivated): the caller then answers exactly as if it had sent. New: User
// is signing up and not stored yet; issue stores it in the transaction of
// its first challenge.
type recipient struct {
	ID         appuser.Identifier
	User       *appuser.User
	New        bool
	Person     appuser.Person // when New: the workspace's person the user joins
	MetaErrors appuser.MetaErrors
	meta       map[string]any // cleaned registration metadata, for a retry
}

// resolve parses the identifier, applies the send limits and finds (or,
// when the app allows sign-up, prepares) the user. The metadata is judged
// from the request alone, before anyone is looked up, so its errors (and a
// meta too large) are the same whether the identifier is known, new or gets
// nothing: the answer must not tell which (security R-RL-4). It is stored
// only when this request creates the user.
func (s *Service) resolve(ctx context.Context, app store.App, identifier string, meta map[string]any, c Client) (recipient, error) {
	id, err := parseIdentifier(app, identifier)
	if err != nil {
		return recipient{}, err
	}
	if err := s.allow(ctx, sendBuckets(app, id, c, s.limits)...); err != nil {
		return recipient{}, err
	}
	if err := s.guardSMS(ctx, app, id); err != nil {
		return recipient{}, err
	}
	clean, metaErrs, err := appuser.RegistrationMeta(app, meta)
	if err != nil {
		return recipient{}, err
	}
	r := recipient{ID: id, MetaErrors: metaErrs, meta: clean}
	return r, s.find(ctx, app, &r)
}

// find sets r.User: the user behind r.ID, or one prepared for sign-up (New)
// when the app allows public sign-up, or nil when nothing may be sent.
// Sign-up costs no transaction of its own: the user is stored with its
// first challenge, so a new address answers as fast as a known one (no
// timing oracle) and a known user's metadata is left alone.
func (s *Service) find(ctx context.Context, app store.App, r *recipient) error {
	r.User, r.New = nil, false
	u, person, err := s.users.LookupForSignUp(ctx, app, r.ID.Value)
	r.Person = person
	switch {
	case err != nil:
		return err
	case u == nil && app.PublicSignup:
		p, err := s.users.PrepareSignUp(app, r.ID.Value, r.meta)
		if err != nil {
			return err
		}
		r.User, r.New = &p, true
	case u != nil && u.Status != store.StatusInactive:
		r.User = u
	}
	return nil
}

// sendTo runs send (which builds a challenge for r and issues it, or
// answers as if it had when r.User is nil) and, when r was new and another
// request created the same user (or, from another app, the same person)
// meanwhile, again for what it created (a user found deactivated meanwhile
// gets send's answer for nobody): at most two retries, as a person found
// leaves only the user to lose a race over, and a user found none.
func (s *Service) sendTo(ctx context.Context, app store.App, r *recipient, send func() (SendResult, error)) (SendResult, error) {
	for try := 0; ; try++ {
		res, err := send()
		if !r.New || !errors.Is(err, appuser.ErrUserExists) || try == 2 {
			return res, err
		}
		before := r.Person.ID
		if err := s.find(ctx, app, r); err != nil {
			return SendResult{}, err
		}
		if r.New && r.Person.ID == before { // nothing new to join: give up as any conflict would
			return SendResult{}, err
		}
	}
}

// newChallenge starts a challenge for r with the request's device details.
func (s *Service) newChallenge(app store.App, r recipient, method string, attempts int, ttl time.Duration, c Client) store.Challenge {
	now := s.clock()
	ch := store.Challenge{ID: newID(), AppID: app.ID, AppUserID: r.User.ID, Purpose: PurposeAuthenticate, Method: method,
		Recipient: r.ID.Value, Status: store.ChallengePending, RemainingAttempts: attempts, IP: c.IP,
		UserAgent: truncate(c.UserAgent, 512), CreatedAt: now, ExpiresAt: now.Add(ttl)}
	if r.User.Test {
		ch.Data = encodeData(challengeData{Test: true})
	}
	return ch
}

// newCode is a one-time code for a message to recipient: the fixed code
// when recipient is a test identity of app, else a random one. Either is
// stored only as a keyed hash and verified the same way.
func (s *Service) newCode(app store.App, recipient string) string {
	t := s.users.TestIdentities()
	if t.Of(app, recipient) {
		return t.Code
	}
	for {
		// Never the fixed code by chance: codeRight refuses it for anyone
		// but a test identity of an app that accepts them.
		if c := token.NewCode(codeDigits); c != t.Code {
			return c
		}
	}
}

// codeRight reports whether code answers ch. The fixed code of test
// identities answers only while ch's recipient is one of app's: a challenge
// opened before the app stopped accepting them no longer takes it.
func (s *Service) codeRight(app store.App, ch store.Challenge, code string) bool {
	if !validCode(code) || !s.hasher.Equal(ch.SecretHash, "otp", ch.ID, code) {
		return false
	}
	t := s.users.TestIdentities()
	return code != t.Code || t.Of(app, ch.Recipient)
}

// challengeRef ties a message to the challenge whose code or link it carries.
func challengeRef(ch store.Challenge) outbound.Ref {
	return outbound.Ref{ChallengeID: ch.ID, Version: outbound.Fingerprint(ch.SecretHash)}
}

// issue stores ch (and r's user, when new), killing the user's pending challenges of the same kinds,
// with its requested event and its message in the same transaction: the
// message is sent by the send queue's workers once it commits, so the
// answer never waits for the provider. sent means accepted for delivery.
func (s *Service) issue(ctx context.Context, app store.App, r recipient, ch store.Challenge, supersede []string, msg outbound.Request) (sent bool, err error) {
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		var events []webhook.Event
		if r.New {
			created, err := s.users.SignUpTx(ctx, tx, app, r.User.AppUser, r.Person)
			if err != nil {
				return err
			}
			events = append(events, created)
		}
		// Deferred, as the message's row: both go out with the COMMIT.
		if err := tx.Deferred(nil).SupersedeAndCreateChallenge(ctx, ch, supersede); err != nil {
			return err
		}
		events = append(events, verificationEvents(ch, webhook.OutcomeRequested, nil, nil)...)
		if err := s.events.EmitMany(ctx, tx, ch.AppID, events...); err != nil {
			return err
		}
		msg.Ref = challengeRef(ch)
		if ch.Purpose == PurposeAuthenticate && len(supersede) > 0 {
			// The same kinds of this user's pending sign-ins were just
			// superseded: their messages, if not yet sent, need not be.
			msg.Ref.Supersedes = ch.AppID + "/" + ch.AppUserID + "/" + strings.Join(supersede, ",")
		}
		return s.out.Send(ctx, tx, app, msg)
	})
	return err == nil, err
}

// Decoy poll handles. A magic-link request for an identifier that gets no
// link still returns a poll handle, and polling it must look like polling a
// real, unopened link until it would have expired. Rather than store a row,
// a decoy carries its own expiry and a keyed tag: random(12) ‖ expiry(4) ‖
// tag(16), the same 32 bytes and encoding as a real handle.

func (s *Service) decoyHandle(expires time.Time) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b[:12]) // crypto/rand never fails on supported systems
	binary.BigEndian.PutUint32(b[12:16], uint32(expires.Unix()))
	copy(b[16:], s.decoyTag(b[:16]))
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *Service) decoyTag(head []byte) []byte {
	tag, _ := hex.DecodeString(s.hasher.Hash("magic-decoy", string(head))) // Hash returns hex
	return tag[:16]
}

// decoyPending reports whether handle is a decoy that has not expired yet.
func (s *Service) decoyPending(handle string, now time.Time) bool {
	b, err := base64.RawURLEncoding.DecodeString(handle)
	if err != nil || len(b) != 32 || subtle.ConstantTimeCompare(s.decoyTag(b[:16]), b[16:]) != 1 {
		return false
	}
	return now.Before(time.Unix(int64(binary.BigEndian.Uint32(b[12:16])), 0))
}

// signInVerified finishes a challenge the user just passed, inside tx: it
// marks the identifier verified (activating a pending user), emits the
// verified event and opens a session. An inactive user gets refused, the
// error the caller would give for a bad code or link.
func (s *Service) signInVerified(ctx context.Context, tx *store.Tx, app store.App, ch store.Challenge, f factor, now time.Time, c Client, refused error) (TokenSet, error) {
	u, err := s.verifyContact(ctx, tx, app, ch, now, refused, nil)
	if err != nil {
		return TokenSet{}, err
	}
	return s.startSession(ctx, tx, app, u, f, c)
}

// The first factors, as sessions and access tokens record them.

func codeFactor(ch store.Challenge) factor {
	return factor{Session: MethodOTP, AMR: ch.Method, Kind: channelOf(ch)}
}

func linkFactor(ch store.Challenge) factor {
	return factor{Session: MethodMagic, AMR: MethodMagicLink, Kind: channelOf(ch)}
}

func inviteFactor(u store.AppUser) factor {
	if u.Email == "" {
		return factor{Session: MethodInvite, AMR: MethodInvite, Kind: "sms"}
	}
	return factor{Session: MethodInvite, AMR: MethodInvite, Kind: "email"}
}

func passkeyFactor(credentialID string) factor {
	return factor{Session: MethodWebauthn, AMR: MethodPasskey, Kind: "passkey", CredentialID: credentialID}
}

// verifyContact marks the challenge's identifier verified (activating a
// pending user) and emits the verified event (after consent c, if any), inside tx; an
// inactive user is refused.
func (s *Service) verifyContact(ctx context.Context, tx *store.Tx, app store.App, ch store.Challenge, now time.Time, refused error, c *consent) (store.AppUser, error) {
	sms := channelOf(ch) == "sms"
	u, err := s.users.MarkVerified(ctx, tx, app, ch.AppUserID, !sms, sms)
	if err != nil {
		return store.AppUser{}, err
	}
	if u.Status != store.StatusActive {
		return store.AppUser{}, refused
	}
	return u, s.emitVerification(ctx, tx, ch, webhook.OutcomeVerified, &now, c)
}
