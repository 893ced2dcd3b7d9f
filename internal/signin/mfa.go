package signin

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// mfaPreference orders the second factors a sign-in offers first.
var mfaPreference = []string{MethodTOTP, MethodPasskey, MethodPush, MethodSMSOTP, MethodEmailOTP, MethodBackupCode}

// mfaLifetime is how long a sign-in waits for its second factor.
const mfaLifetime = 10 * time.Minute

// gate is what mfaGate decided about a first factor.
type gate struct {
	Required           *MFARequired
	EnrollmentRequired bool
}

// mfaGate decides, inside the first factor's transaction, whether the
// sign-in needs a second factor (security R-MFA-1). With the app's policy
// off, or a passkey sign-in that verified the user (itself two factors),
// it reads nothing. Otherwise it lists the second factors this user can
// use, never one of the first factor's kind, and when the policy asks for
// one (optional: the user enrolled a TOTP app or a passkey; required:
// always, by a code of another kind when nothing is enrolled) starts an
// mfa challenge by the preferred method. A required policy with no
// possible second factor lets the sign-in through, flagged
// EnrollmentRequired.
func (s *Service) mfaGate(ctx context.Context, tx *store.Tx, app store.App, u store.AppUser, f factor, c Client) (gate, error) {
	if !app.MFAPolicy.SecondFactor() {
		return gate{}, nil
	}
	if f.Kind == "passkey" && app.WebauthnUserVerification == "required" {
		return gate{}, nil
	}
	st, err := tx.GetMFAState(ctx, u.ID)
	if err != nil {
		return gate{}, err
	}
	allowed := func(m string) bool { return slices.Contains(app.MFAMethodsAllowed, m) && m != sameKindMethod(f.Kind) }
	enrolled := (allowed(MethodTOTP) && st.VerifiedTOTP > 0) || (allowed(MethodPasskey) && st.Passkeys > 0)
	if app.MFAPolicy == store.MFAPolicyOptional && !enrolled {
		return gate{}, nil
	}
	var available []string
	for _, m := range mfaPreference {
		if !allowed(m) {
			continue
		}
		ok := false
		switch m {
		case MethodTOTP:
			ok = st.VerifiedTOTP > 0
		case MethodPasskey:
			ok = st.Passkeys > 0
		case MethodBackupCode:
			ok = st.BackupCodes > 0
		case MethodSMSOTP:
			ok = u.Phone != ""
		case MethodEmailOTP:
			ok = u.Email != ""
		case MethodPush:
			n, err := tx.CountLiveSessions(ctx, app.ID, u.ID, "", s.clock())
			if err != nil {
				return gate{}, err
			}
			ok = n > 0
		}
		if ok {
			available = append(available, m)
		}
	}
	// With both an authenticator app and a passkey, the user's default
	// decides which the challenge asks for; available keeps the others.
	if len(available) > 1 && slices.Contains(available, MethodTOTP) && slices.Contains(available, MethodPasskey) {
		def, ok, err := s.defaultFactor(ctx, tx.Queries, app, u.ID)
		if err != nil {
			return gate{}, err
		}
		if i := slices.Index(available, def.Method); ok && i > 0 {
			available = slices.Insert(slices.Delete(available, i, i+1), 0, def.Method)
		}
	}
	if len(available) == 0 {
		s.log.WarnContext(ctx, "sign-in without a second factor: the user has none the app allows", "app_id", app.ID,
			"user_id", u.ID, "policy", app.MFAPolicy)
		return gate{EnrollmentRequired: true}, nil
	}
	now := s.clock()
	ch := store.Challenge{ID: newID(), AppID: app.ID, AppUserID: u.ID, Purpose: PurposeMFA, Method: available[0],
		Status: store.ChallengePending, IP: c.IP, UserAgent: truncate(c.UserAgent, 512), CreatedAt: now,
		ExpiresAt: now.Add(mfaLifetime), Location: truncate(c.Location, 120)}
	d := challengeData{FirstSession: f.Session, FirstAMR: f.AMR, FirstKind: f.Kind, FirstCredential: f.CredentialID,
		Test: s.users.TestIdentities().User(app, u)}
	if err := s.prepareMethod(ctx, tx.Queries, app, u, &ch, &d, now); err != nil {
		return gate{}, err
	}
	ch.ExpiresAt = now.Add(mfaLifetime)
	if delivered(ch.Method) {
		// Nothing is sent until the user asks (POST /resend): they may
		// rather switch to another method, and an unasked SMS costs money.
		d.Undelivered = true
		ch.SecretHash = s.hasher.Hash("no-secret", ch.ID)
	}
	tok := token.RandomString(32)
	ch.PollHash, ch.Data = s.hasher.Hash(tokenLabel, tok), encodeData(d)
	// Under the user's lock, as a replacement and a push denial take it
	// (a code's guess holds it already; a magic link, a social sign-in or an
	// invitation does not): a new sign-in's factor and a replacement of the
	// last one's cannot interleave.
	if err := tx.LockGuesses(ctx, u.ID); err != nil {
		return gate{}, err
	}
	if err := tx.CancelPurpose(ctx, u.ID, PurposeMFA); err != nil {
		return gate{}, err
	}
	if err := tx.CreateChallenge(ctx, ch); err != nil {
		return gate{}, err
	}
	if err := s.emitChallenge(ctx, tx, ch, challengeCreated(ch, f.AMR)); err != nil {
		return gate{}, err
	}
	return gate{Required: &MFARequired{AppUserID: u.ID, Challenge: s.View(ch, tok, now), AvailableMethods: available}}, nil
}

// Enrollment is a TOTP authenticator of a user.
type Enrollment struct {
	ID         string
	Method     string
	Name       string
	Verified   bool
	CreatedAt  time.Time
	VerifiedAt *time.Time
	LastUsedAt *time.Time
	// IsDefault: the user's default second factor (set by VerifyEnrollment;
	// the first one verified is).
	IsDefault bool
}

func enrollmentOut(e store.TOTPEnrollment) Enrollment {
	return Enrollment{ID: e.ID, Method: MethodTOTP, Name: e.Name, Verified: e.Verified, CreatedAt: e.CreatedAt,
		VerifiedAt: e.VerifiedAt, LastUsedAt: e.LastUsedAt}
}

// NewEnrollment is a TOTP enrolment just made: its secret and otpauth URI
// are shown this once.
type NewEnrollment struct {
	Enrollment      Enrollment
	Secret          string // base32, as authenticator apps take it
	ProvisioningURI string
}

// maxTOTP is how many authenticator apps a user may have.
const maxTOTP = 5

// sealTOTP and openTOTP keep TOTP secrets encrypted at rest, bound to
// their enrolment.
func (s *Service) sealTOTP(id string, secret []byte) ([]byte, error) {
	return s.sealer.Seal(secret, []byte("totp:"+id))
}

func (s *Service) openTOTP(e store.TOTPEnrollment) ([]byte, error) {
	return s.sealer.Open(e.SecretSealed, []byte("totp:"+e.ID))
}

// sensitive allows a change of the caller's factors or identifiers only
// in a session whose last proof of identity is recent (mfa_reverify_minutes)
// or with a completed step-up challenge of this user (its token), which the
// change spends (security R-MFA-2).
func (s *Service) sensitive(ctx context.Context, app store.App, caller Caller, stepUp string) error {
	return s.sensitiveExcept(ctx, app, caller, stepUp, "", "")
}

// sensitiveExcept is sensitive where the step-up must not have been
// answered by factor (an authenticator app's or a passkey's id, of method
// totp or webauthn): the factor being removed cannot vouch for its own
// removal (security R-MFA-2).
func (s *Service) sensitiveExcept(ctx context.Context, app store.App, caller Caller, stepUp, factor, method string) error {
	err := s.recent(app, caller.Session)
	if err == nil && factor != "" && caller.Session.StepUpFactor == factor {
		// Recent only through a step-up by this very factor: it cannot
		// vouch for its own removal; another proof is needed.
		err = &StepUpRequiredError{Minutes: max(app.MFAReverifyMinutes, 5), Except: method}
	}
	if err == nil || strings.TrimSpace(stepUp) == "" {
		return err
	}
	ch, cerr := s.challengeByToken(ctx, app, strings.TrimSpace(stepUp))
	now := s.clock()
	window := time.Duration(max(app.MFAReverifyMinutes, 5)) * time.Minute
	if cerr != nil || ch.Purpose != PurposeStepUp || ch.AppUserID != caller.User.ID || ch.Status != store.ChallengeCompleted ||
		ch.CompletedAt == nil || now.Sub(*ch.CompletedAt) > window || (ch.SessionID != "" && ch.SessionID != caller.Session.ID) ||
		(factor != "" && decodeData(ch).UsedFactor == factor) {
		return err
	}
	won, cerr := s.db.ConsumeChallenge(ctx, ch.ID, now)
	if cerr != nil {
		return cerr
	}
	if !won {
		return err // spent by another change already
	}
	return nil
}

// EnrollTOTP starts a TOTP enrolment for the signed-in user: a 160-bit
// secret, sealed at rest, active once a code from it is verified. It needs
// a recent sign-in or step-up. Earlier unconfirmed enrolments are dropped.
func (s *Service) EnrollTOTP(ctx context.Context, app store.App, caller Caller, name, stepUp string) (_ NewEnrollment, err error) {
	defer errs.Wrap(&err, "enroll totp")
	name = strings.TrimSpace(name)
	if name == "" {
		name = "Authenticator app"
	}
	if len(name) > 100 {
		return NewEnrollment{}, errs.Invalidf("name", "must be at most 100 characters")
	}
	list, err := s.db.ListTOTP(ctx, caller.User.ID)
	if err != nil {
		return NewEnrollment{}, err
	}
	verified := 0
	for _, e := range list {
		if e.Verified {
			verified++
		}
	}
	if verified >= maxTOTP {
		return NewEnrollment{}, errs.Invalidf("method", "totp cannot be added: the user has %d authenticator apps already; remove one first", maxTOTP)
	}
	// Checked last: a step-up token it accepts is spent.
	if err := s.sensitive(ctx, app, caller, stepUp); err != nil {
		return NewEnrollment{}, err
	}
	account := caller.User.Email
	if account == "" {
		account = caller.User.Phone
	}
	secret, uri, err := newTOTPKey(app.Name, account)
	if err != nil {
		return NewEnrollment{}, err
	}
	now := s.clock()
	e := store.TOTPEnrollment{ID: newID(), AppID: app.ID, AppUserID: caller.User.ID, Name: name, CreatedAt: now}
	if e.SecretSealed, err = s.sealTOTP(e.ID, secret); err != nil {
		return NewEnrollment{}, err
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteUnverifiedTOTP(ctx, caller.User.ID); err != nil {
			return err
		}
		return tx.CreateTOTP(ctx, e)
	})
	if err != nil {
		return NewEnrollment{}, err
	}
	return NewEnrollment{Enrollment: enrollmentOut(e), Secret: base32NoPad(secret), ProvisioningURI: uri}, nil
}

// VerifyEnrollment confirms a TOTP enrolment with a code from the app: from
// then on it is a second factor. The code is a guess (guess.go): taken from
// the user's hourly budget and TOTP streak before it is compared. The step
// of the confirming code stays usable once more, so the sign-in that follows
// at once may answer its second factor with the same code (Scute does so;
// both its server SDKs' suites rely on it); any other use spends the step.
func (s *Service) VerifyEnrollment(ctx context.Context, app store.App, caller Caller, id, code string, c Client) (_ Enrollment, err error) {
	defer errs.Wrap(&err, "verify totp enrollment")
	if err := s.allow(ctx, bucket{key: "verify:ip:" + c.IP, rule: s.limits.VerifyPerIP}); err != nil {
		return Enrollment{}, err
	}
	userID := caller.User.ID
	now := s.clock()
	var out store.TOTPEnrollment
	err = s.settle(ctx, func(tx *store.Tx, wrong *error) error {
		g, err := s.takeGuess(ctx, tx, userID, MethodTOTP, c, now, func(since time.Time) (store.Guess, error) {
			return tx.GuessState(ctx, userID, MethodTOTP, c.IP, since)
		})
		if err != nil {
			return notFoundAs(err, ErrMFAMethodNotFound)
		}
		e, err := tx.GetTOTP(ctx, userID, strings.TrimSpace(id))
		if err != nil {
			return notFoundAs(err, ErrMFAMethodNotFound)
		}
		secret, err := s.openTOTP(e)
		if err != nil {
			return err
		}
		step, ok := matchTOTP(secret, normalizeCode(code), now)
		if !ok || step <= e.LastUsedStep {
			*wrong = ErrInvalidCode
			if ok {
				*wrong = ErrCodeUsed
			}
			return s.wrongGuess(ctx, tx, app, g, userID, MethodTOTP, c, now)
		}
		if e.Verified {
			won, err := tx.UseTOTPStep(ctx, e.ID, step, now)
			if err != nil || !won {
				return orInvalid(err, won)
			}
			out, err = tx.GetTOTP(ctx, userID, e.ID)
			return err
		}
		if err := tx.ConfirmTOTP(ctx, e.ID, step, now); err != nil {
			return err
		}
		if out, err = tx.GetTOTP(ctx, userID, e.ID); err != nil {
			return err
		}
		if err := s.events.Emit(ctx, tx, app.ID, webhook.UserUpdated, s.mfaEventData(app, caller.User, "mfa_method_added", MethodTOTP, e.ID)); err != nil {
			return err
		}
		return s.securityNotice(ctx, tx, app, caller.User, courier.Notice{Kind: courier.NoticeTOTPAdded})
	})
	if err != nil {
		return Enrollment{}, err
	}
	en := enrollmentOut(out)
	def, ok, err := s.defaultFactor(ctx, s.db.Queries, app, userID)
	if err != nil {
		return Enrollment{}, err
	}
	en.IsDefault = ok && def.ID == en.ID
	return en, nil
}

// backupCodeCount and backupCodeLength: 10 codes of 10 characters from a
// 32-symbol alphabet, 50 bits each (security R-BC-1).
const (
	backupCodeCount    = 10
	backupCodeLength   = 10
	backupCodeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
)

// backupHash is a backup code's keyed hash: HMAC with the server's key
// (not in the database) over the user and the code, so a stolen table alone
// allows no guessing, and a code is found by one indexed lookup.
func (s *Service) backupHash(userID, code string) string {
	return s.hasher.Hash("backup-code", userID, normalizeCode(code))
}

// NewBackupCodes makes the signed-in user's backup codes, replacing any
// earlier set; they are shown this once. It needs a recent sign-in or step-up.
func (s *Service) NewBackupCodes(ctx context.Context, app store.App, caller Caller, stepUp string) (_ []string, err error) {
	defer errs.Wrap(&err, "new backup codes")
	if err := s.sensitive(ctx, app, caller, stepUp); err != nil {
		return nil, err
	}
	codes := make([]string, backupCodeCount)
	ids := make([]string, backupCodeCount)
	hashes := make([]string, backupCodeCount)
	for i := range codes {
		var b strings.Builder
		for j := 0; j < backupCodeLength; j++ {
			n, err := rand.Int(rand.Reader, big.NewInt(int64(len(backupCodeAlphabet))))
			if err != nil {
				return nil, err
			}
			if j == backupCodeLength/2 {
				b.WriteByte('-')
			}
			b.WriteByte(backupCodeAlphabet[n.Int64()])
		}
		codes[i], ids[i], hashes[i] = b.String(), newID(), s.backupHash(caller.User.ID, b.String())
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.ReplaceBackupCodes(ctx, app.ID, caller.User.ID, ids, hashes, s.clock()); err != nil {
			return err
		}
		if err := s.events.Emit(ctx, tx, app.ID, webhook.UserUpdated, s.mfaEventData(app, caller.User, "backup_codes_generated", MethodBackupCode, "")); err != nil {
			return err
		}
		return s.securityNotice(ctx, tx, app, caller.User, courier.Notice{Kind: courier.NoticeBackupCodesCreated})
	})
	if err != nil {
		return nil, err
	}
	return codes, nil
}

// MFAMethod is one second factor in /mfa/methods: an authenticator app or a passkey.
type MFAMethod struct {
	ID         string
	Method     string
	Name       string
	Verified   bool
	CreatedAt  time.Time
	LastUsedAt *time.Time
	// IsDefault: the user's default second factor (see defaultFactor).
	IsDefault bool
}

// MFAOverview is /mfa/methods and /mfa/status.
type MFAOverview struct {
	Enabled              bool
	Policy               store.MFAPolicy
	BackupCodesAvailable int
	Methods              []MFAMethod
	Kinds                []string // the kinds of verified methods
	EnrollmentRequired   bool
}

// MFAMethods lists the signed-in user's second factors.
func (s *Service) MFAMethods(ctx context.Context, app store.App, caller Caller) (_ MFAOverview, err error) {
	defer errs.Wrap(&err, "list mfa methods")
	return s.overview(ctx, s.db.Queries, app, caller.User.ID)
}

// overview reads a user's second factors with q.
func (s *Service) overview(ctx context.Context, q store.Queries, app store.App, userID string) (MFAOverview, error) {
	list, err := q.ListTOTP(ctx, userID)
	if err != nil {
		return MFAOverview{}, err
	}
	st, err := q.GetMFAState(ctx, userID)
	if err != nil {
		return MFAOverview{}, err
	}
	out := MFAOverview{Policy: app.MFAPolicy, BackupCodesAvailable: st.BackupCodes, Methods: []MFAMethod{}, Kinds: []string{}}
	for _, e := range list {
		out.Methods = append(out.Methods, MFAMethod{ID: e.ID, Method: MethodTOTP, Name: e.Name, Verified: e.Verified,
			CreatedAt: e.CreatedAt, LastUsedAt: e.LastUsedAt})
	}
	if st.VerifiedTOTP > 0 {
		out.Kinds = append(out.Kinds, MethodTOTP)
	}
	if slices.Contains(app.MFAMethodsAllowed, MethodPasskey) {
		pks, err := q.ListPasskeys(ctx, app.ID, userID)
		if err != nil {
			return MFAOverview{}, err
		}
		for _, p := range pks {
			if p.SuspendedAt == nil {
				out.Methods = append(out.Methods, MFAMethod{ID: p.ID, Method: MethodPasskey, Name: p.Name, Verified: true,
					CreatedAt: p.CreatedAt, LastUsedAt: p.LastUsedAt})
			}
		}
		if st.Passkeys > 0 {
			out.Kinds = append(out.Kinds, MethodPasskey)
		}
	}
	if st.BackupCodes > 0 {
		out.Kinds = append(out.Kinds, MethodBackupCode)
	}
	out.Enabled = slices.Contains(out.Kinds, MethodTOTP) || slices.Contains(out.Kinds, MethodPasskey)
	out.EnrollmentRequired = app.MFAPolicy == store.MFAPolicyRequired && !out.Enabled
	if out.Enabled {
		def, ok, err := s.defaultFactor(ctx, q, app, userID)
		if err != nil {
			return MFAOverview{}, err
		}
		for i := range out.Methods {
			out.Methods[i].IsDefault = ok && out.Methods[i].ID == def.ID
		}
	}
	return out, nil
}

// DeleteMFAMethod removes one of the signed-in user's second factors (an
// authenticator app, or a passkey by its id). It needs a recent sign-in or
// a completed step-up (stepUp, its token), and tells the user.
func (s *Service) DeleteMFAMethod(ctx context.Context, app store.App, caller Caller, id, stepUp string) (err error) {
	defer errs.Wrap(&err, "delete mfa method")
	id = strings.TrimSpace(id)
	e, err := s.db.GetTOTP(ctx, caller.User.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		pks, err := s.db.ListPasskeys(ctx, app.ID, caller.User.ID)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(pks, func(p store.Passkey) bool { return p.ID == id || p.CredentialID == id })
		if i < 0 {
			return ErrMFAMethodNotFound
		}
		if err := s.sensitiveExcept(ctx, app, caller, stepUp, pks[i].ID, MethodPasskey); err != nil {
			return err
		}
		return s.deletePasskey(ctx, app, caller.User.ID, id, nil)
	}
	if err != nil {
		return err
	}
	if err := s.sensitiveExcept(ctx, app, caller, stepUp, e.ID, MethodTOTP); err != nil {
		return err
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteTOTP(ctx, caller.User.ID, e.ID); err != nil {
			return notFoundAs(err, ErrMFAMethodNotFound)
		}
		if err := s.events.Emit(ctx, tx, app.ID, webhook.UserUpdated, s.mfaEventData(app, caller.User, "mfa_method_removed", MethodTOTP, e.ID)); err != nil {
			return err
		}
		if !e.Verified {
			return nil
		}
		return s.securityNotice(ctx, tx, app, caller.User, courier.Notice{Kind: courier.NoticeTOTPRemoved})
	})
	return err
}

// mfaEventData is user.updated's data for a change of second factors: the
// user, what changed, and which method (never a secret or a code).
func (s *Service) mfaEventData(app store.App, u store.AppUser, change, method, id string) webhook.UserUpdatedData {
	return webhook.UserUpdatedData{UserData: s.users.EventData(app, u), Change: change, MFAMethod: method, MFAMethodID: id}
}

// securityNotice queues, inside tx, a notice telling a user at their e-mail
// address (or phone) of a change to how they sign in (security R-MFA-3):
// it commits with the change or not at all. It holds no secret. A notice
// that cannot be rendered (a broken override) is logged and left out; the
// change goes on.
func (s *Service) securityNotice(ctx context.Context, tx *store.Tx, app store.App, u store.AppUser, what courier.Notice) error {
	to := appuser.Identifier{Kind: appuser.KindEmail, Value: u.Email}
	if u.Email == "" {
		to = appuser.Identifier{Kind: appuser.KindPhone, Value: u.Phone}
	}
	if to.Value == "" {
		return nil
	}
	return s.notice(ctx, tx, app, u, to, what)
}

// notice queues inside tx a security notice about u to the address to, in
// u's own language.
func (s *Service) notice(ctx context.Context, tx *store.Tx, app store.App, u store.AppUser, to appuser.Identifier, what courier.Notice) error {
	return s.queueNotice(ctx, tx, app, to, courier.TemplateSecurityNotice, courier.Vars{Notice: what}, userLanguages(u))
}

// queueNotice queues the notice name (no challenge, no secret) inside tx.
// A rendering failure is logged and sends nothing: the change goes on.
func (s *Service) queueNotice(ctx context.Context, tx *store.Tx, app store.App, to appuser.Identifier, name string, v courier.Vars, langs []string) error {
	err := s.out.Send(ctx, tx, app, outbound.Request{Template: name, To: to.Value, Vars: v, Langs: langs})
	if errors.Is(err, outbound.ErrNotRendered) {
		s.log.ErrorContext(ctx, "notice not rendered", "app_id", app.ID, "message", name, "err", err)
		return nil
	}
	return err
}

// noticeIdentifierChanged queues inside tx a notice telling the old address
// that it no longer signs in to the account (security R-MFA-3).
func (s *Service) noticeIdentifierChanged(ctx context.Context, tx *store.Tx, app store.App, old, now store.AppUser) error {
	switch {
	case old.Email != "" && old.Email != now.Email:
		return s.notice(ctx, tx, app, old, appuser.Identifier{Kind: appuser.KindEmail, Value: old.Email},
			courier.Notice{Kind: courier.NoticeEmailChanged, Detail: courier.MaskAddress(now.Email)})
	case old.Phone != "" && old.Phone != now.Phone:
		return s.notice(ctx, tx, app, old, appuser.Identifier{Kind: appuser.KindPhone, Value: old.Phone},
			courier.Notice{Kind: courier.NoticePhoneChanged, Detail: courier.MaskAddress(now.Phone)})
	}
	return nil
}

func base32NoPad(b []byte) string {
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)
}
