package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
)

// Challenges (interface §2.6, §4.11; client-compat C9–C13), second factors
// (server-sdk-compat §5) and push approval.

// Challenge is a challenge as the API shows it (interface §2.6).
type Challenge struct {
	ID                string          `json:"id" example:"019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b" doc:"The challenge id (events name it challenge_id; push approval takes it)."`
	Token             string          `json:"token" example:"pY2Jq0y9d1cW7tX4m3Vn8bQeR5sK2aZ6uH1oL0fG3iE" doc:"The challenge's bearer token: whoever holds it may read, answer, resend or cancel the challenge. Shown to the requester only."`
	Status            string          `json:"status" enum:"pending,completed,failed,expired,cancelled,denied" doc:"pending until answered; completed, failed (attempts spent), expired, cancelled (DELETE, or replaced by a newer one) and denied (push or magic link refused) are final."`
	Purpose           string          `json:"purpose" enum:"authenticate,mfa,step_up,verify_contact,verify_identity,change_identifier,custom" doc:"What the challenge proves: authenticate (sign in), mfa (second factor), step_up (a recent sign-in), verify_contact, verify_identity, change_identifier or custom."`
	Method            string          `json:"method" enum:"email_otp,sms_otp,magic_link,totp,backup_code,webauthn,push" doc:"How the user answers: a code by e-mail or SMS, a magic link, an authenticator app, a backup code, a passkey or a push approval."`
	ExpiresAt         time.Time       `json:"expires_at" doc:"When the challenge expires unanswered (RFC 3339)."`
	RemainingAttempts int             `json:"remaining_attempts" example:"5" doc:"Wrong answers left before the challenge fails."`
	TimeRemaining     int             `json:"time_remaining" example:"597" doc:"Seconds until expires_at while pending; 0 otherwise."`
	Intent            string          `json:"intent" example:"delete_account" doc:"What the app said the challenge is for (free text, at most 100 characters)."`
	DeliveryRequired  bool            `json:"delivery_required" doc:"True while the code of an e-mail or SMS challenge has not been sent: a second factor picked at sign-in sends nothing until POST /challenges/{token}/resend."`
	MatchNumber       int             `json:"match_number,omitempty" example:"42" doc:"push and magic_link: show it on the requesting device; the approving device must enter (push) or pick among three on the consent page (link) the same number."`
	WebauthnOptions   json.RawMessage `json:"webauthn_options,omitempty" doc:"webauthn: the PublicKeyCredentialRequestOptionsJSON for navigator.credentials.get; answer with POST /verify {credential}."`
}

func challengeOut(v signin.ChallengeView) Challenge {
	return Challenge{ID: v.ID, Token: v.Token, Status: v.Status, Purpose: v.Purpose, Method: v.Method, ExpiresAt: v.ExpiresAt,
		RemainingAttempts: v.RemainingAttempts, TimeRemaining: v.TimeRemaining, Intent: v.Intent,
		DeliveryRequired: v.DeliveryRequired, MatchNumber: v.MatchNumber, WebauthnOptions: v.WebauthnOptions}
}

type challengeOutput struct {
	Body struct {
		Challenge Challenge `json:"challenge" doc:"The challenge."`
	}
}

func challengeAnswer(v signin.ChallengeView, err error) (*challengeOutput, error) {
	if err != nil {
		return nil, err
	}
	out := &challengeOutput{}
	out.Body.Challenge = challengeOut(v)
	return out, nil
}

type createChallengeInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	UserAgent string `header:"User-Agent" doc:"The caller's user agent: recorded with the session or challenge and shown to the user (sessions list, consent page, push approval)."`
	Access    string `header:"X-Authorization" doc:"A user's access token: the challenge is that user's (step_up binds to this session)."`
	Body      struct {
		Purpose    string         `json:"purpose" enum:"authenticate,mfa,step_up,verify_contact,verify_identity,change_identifier,custom" doc:"What the challenge proves; see the operation for who may start which."`
		Method     string         `json:"method" enum:"email_otp,sms_otp,magic_link,totp,backup_code,webauthn,push" doc:"How the user answers; must suit the purpose and be set up for the user."`
		Identifier string         `json:"identifier,omitempty" maxLength:"320" doc:"authenticate: the e-mail address or phone number signing in. change_identifier: the new one. verify_contact: the user's own (optional)."`
		AppUserID  string         `json:"app_user_id,omitempty" maxLength:"64" doc:"The user: mfa (the client SDK's switchMfaMethod), and every purpose a backend starts with its API secret."`
		Intent     string         `json:"intent,omitempty" maxLength:"100" doc:"What the challenge is for, echoed back and in its events."`
		Data       map[string]any `json:"data,omitempty" doc:"custom and verify_identity: the app's data, handed back in the challenge.completed event."`
		_          struct{}       `json:"-" additionalProperties:"true"`
	}
}

const createChallengeDoc = "Starts a challenge. Who may start which purpose: `authenticate` needs no credential (an `identifier`; an unknown one answers 404 `user_not_found`, or a decoy with the app's `enumeration_protection`); " +
	"`mfa` needs none either (the client SDK's switchMfaMethod: `app_user_id` of a sign-in waiting for its second factor, from the same device); " +
	"`step_up`, `verify_contact` and `change_identifier` take the user's access token (X-Authorization) or the API secret with `app_user_id`; `verify_identity` and `custom` take the API secret. " +
	"Which methods serve which purpose is the table in docs/integrate.md; any other pair is 400 `invalid_request`, as is a method the user has not set up. " +
	"e-mail and SMS codes are sent at once. Emits `challenge.created` (and `verification.{channel}.requested` for a code). Rate limited per IP and per user; unknown identifiers have a small budget per IP."

var createChallengeOp = operation{id: "createChallenge", method: "POST", path: "/v1/auth/{app_id}/challenges", summary: "Create a challenge", tag: "Challenges",
	auth: authOptionalApp, sendsSMS: true, errors: with(sendErrors, "user_not_found", "identifier_taken", "verification_required", "mfa_method_not_found", "challenge_not_found", "challenge_closed", "factor_locked", "webauthn_unavailable"),
	desc: createChallengeDoc,
	req:  `{"purpose":"step_up","method":"email_otp","intent":"delete_account"}`,
	resp: body(func(o *challengeOutput) { o.Body.Challenge = exChallenge })}

func (s *Server) createChallenge(ctx context.Context, in *createChallengeInput) (*challengeOutput, error) {
	app := appFrom(ctx)
	who := signin.Requester{Principal: optionalPrincipal(ctx)}
	if access := strings.TrimSpace(in.Access); access != "" {
		caller, err := s.SignIn.Authenticate(ctx, app, access)
		if err != nil {
			return nil, err
		}
		who.Caller = &caller
	}
	return challengeAnswer(s.SignIn.CreateChallenge(ctx, app, who, signin.ChallengeRequest{Purpose: in.Body.Purpose,
		Method: in.Body.Method, Identifier: in.Body.Identifier, AppUserID: in.Body.AppUserID, Intent: in.Body.Intent,
		Data: in.Body.Data}, client(ctx, in.UserAgent)))
}

type challengeTokenInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	Token     string `path:"token" maxLength:"128" doc:"The challenge token."`
	UserAgent string `header:"User-Agent" doc:"The caller's user agent: recorded with the session or challenge and shown to the user (sessions list, consent page, push approval)."`
}

var getChallengeOp = operation{id: "getChallenge", method: "GET", path: "/v1/auth/{app_id}/challenges/{token}", summary: "Read a challenge", tag: "Challenges",
	auth: authPublicApp, errors: []string{"challenge_not_found"},
	desc: "The challenge behind a token, with its status (client SDK getChallengeStatus). A requesting device polls this while a push waits for approval.",
	resp: body(func(o *challengeOutput) { o.Body.Challenge = exChallenge })}

func (s *Server) getChallenge(ctx context.Context, in *challengeTokenInput) (*challengeOutput, error) {
	return challengeAnswer(s.SignIn.GetChallenge(ctx, appFrom(ctx), in.Token))
}

var cancelChallengeOp = operation{id: "cancelChallenge", method: "DELETE", path: "/v1/auth/{app_id}/challenges/{token}", summary: "Cancel a challenge", tag: "Challenges",
	auth: authPublicApp, errors: []string{"challenge_not_found", "challenge_closed"},
	desc: "Cancels a pending challenge (client SDK cancelChallenge, and the first step of switchMfaMethod); cancelling it again answers the same. A second factor cancelled this way can still be replaced by POST /challenges {purpose: mfa} until the sign-in's deadline. Emits `challenge.failed` with reason cancelled.",
	resp: body(func(o *challengeOutput) {
		c := exChallenge
		c.Status, c.TimeRemaining = "cancelled", 0
		o.Body.Challenge = c
	})}

func (s *Server) cancelChallenge(ctx context.Context, in *challengeTokenInput) (*challengeOutput, error) {
	return challengeAnswer(s.SignIn.CancelChallenge(ctx, appFrom(ctx), in.Token))
}

type resendChallengeInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	Token     string `path:"token" maxLength:"128" doc:"The challenge token."`
	UserAgent string `header:"User-Agent" doc:"The caller's user agent: recorded with the session or challenge and shown to the user (sessions list, consent page, push approval)."`
	Body      *struct {
		_ struct{} `json:"-" additionalProperties:"true"`
	} `required:"false"`
}

var resendChallengeOp = operation{id: "resendChallenge", method: "POST", path: "/v1/auth/{app_id}/challenges/{token}/resend", summary: "Send a challenge's code again", tag: "Challenges",
	auth: authPublicApp, sendsSMS: true, errors: with(sendErrors, "challenge_not_found", "challenge_closed"),
	desc: "Sends a new code for a pending email_otp or sms_otp challenge; the old code stops working at once and the attempts left stay as they were. A second factor picked at sign-in (delivery_required) sends its first code this way. Rate limited per address and IP. Emits `verification.{channel}.requested`.",
	req:  `{}`,
	resp: body(func(o *challengeOutput) { o.Body.Challenge = exChallenge })}

func (s *Server) resendChallenge(ctx context.Context, in *resendChallengeInput) (*challengeOutput, error) {
	return challengeAnswer(s.SignIn.ResendChallenge(ctx, appFrom(ctx), in.Token, client(ctx, in.UserAgent)))
}

type verifyChallengeInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	Token     string `path:"token" maxLength:"128" doc:"The challenge token."`
	UserAgent string `header:"User-Agent" doc:"The caller's user agent: recorded with the session or challenge and shown to the user (sessions list, consent page, push approval)."`
	Body      *struct {
		Code       string          `json:"code,omitempty" maxLength:"32" example:"123456" doc:"e-mail or SMS code, TOTP code, or backup code (spaces and dashes ignored)."`
		Credential json.RawMessage `json:"credential,omitempty" doc:"webauthn: the PublicKeyCredential JSON from navigator.credentials.get."`
		_          struct{}        `json:"-" additionalProperties:"true"`
	} `required:"false"`
}

// VerifyAnswer is a completed challenge: its status and challenge; the
// token set for authenticate, mfa and a session's step_up (or, for an
// authenticate whose user needs a second factor, the MFA-required fields).
type VerifyAnswer struct {
	Status               string     `json:"status" enum:"completed" doc:"completed (or, with mfa_required, the first factor's pass)."`
	Challenge            Challenge  `json:"challenge" doc:"The challenge, now completed."`
	RemainingBackupCodes *int       `json:"remaining_backup_codes,omitempty" doc:"After a backup code: how many unused ones the user has left."`
	User                 *User      `json:"user,omitempty" doc:"change_identifier: the user with the new identifier."`
	Access               string     `json:"access,omitempty" doc:"authenticate, mfa, and step_up in a session: the new access token (step-up: with auth_time and amr of the step-up)."`
	Refresh              string     `json:"refresh,omitempty" doc:"With access: the new refresh token."`
	CSRF                 string     `json:"csrf,omitempty" doc:"With access: a CSRF token for cookie-based browser clients."`
	AccessExpiresAt      *time.Time `json:"access_expires_at,omitempty" doc:"With access: when it expires (RFC 3339)."`
	RefreshExpiresAt     *time.Time `json:"refresh_expires_at,omitempty" doc:"With refresh: when it expires (RFC 3339)."`
	UserID               string     `json:"user_id,omitempty" doc:"With access, or mfa_required: the user's id."`
	KeyID                string     `json:"key_id,omitempty" doc:"With access: the kid of the key that signed it."`
	Message              string     `json:"message,omitempty" example:"ok" doc:"ok, or mfa_required when a second factor is due."`
	MFARequiredFields
}

type verifyChallengeOutput struct {
	Body VerifyAnswer
}

const verifyChallengeDoc = "Answers a challenge: `{code}` for e-mail/SMS codes, TOTP and backup codes; `{credential}` for webauthn; no body for push, which collects an approved push once (409 `challenge_pending` before). " +
	"A wrong answer is 422 `invalid_code` and spends an attempt; the last one fails the challenge, after which every answer is 429 `too_many_attempts`. A TOTP code is accepted once per 30-second step; a backup code once. " +
	"Closed challenges answer 409 `challenge_closed`. Emits `challenge.completed` or, on the last wrong answer, `challenge.failed`. What a completed challenge gives depends on its purpose: see VerifyAnswer."

var verifyChallengeOp = operation{id: "verifyChallenge", method: "POST", path: "/v1/auth/{app_id}/challenges/{token}/verify", summary: "Answer a challenge", tag: "Challenges",
	auth: authPublicApp, errors: []string{"401", "challenge_not_found", "challenge_closed", "challenge_pending", "invalid_code", "code_used", "too_many_attempts", "code_entry_locked", "factor_locked", "rate_limited", "webauthn_verification_error", "identifier_taken"},
	desc: verifyChallengeDoc,
	req:  `{"code":"123456"}`,
	resp: exVerifyAnswer()}

func (s *Server) verifyChallenge(ctx context.Context, in *verifyChallengeInput) (*verifyChallengeOutput, error) {
	var body signin.VerifyInput
	if in.Body != nil {
		body = signin.VerifyInput{Code: in.Body.Code, Credential: in.Body.Credential}
	}
	app := appFrom(ctx)
	res, err := s.SignIn.VerifyChallenge(ctx, app, in.Token, body, client(ctx, in.UserAgent))
	if err != nil {
		return nil, err
	}
	out := &verifyChallengeOutput{}
	out.Body.Status, out.Body.Challenge, out.Body.RemainingBackupCodes = res.Challenge.Status, challengeOut(res.Challenge), res.RemainingBackupCodes
	if res.User != nil {
		u := userOut(app, s.Users.Decode(app, *res.User))
		out.Body.User = &u
	}
	if t := res.Tokens; t != nil {
		if t.MFA != nil {
			out.Body.MFARequiredFields = mfaFields(t.MFA)
			return out, nil
		}
		out.Body.Access, out.Body.Refresh, out.Body.CSRF, out.Body.UserID, out.Body.KeyID, out.Body.Message =
			t.Access, t.Refresh, t.CSRF, t.UserID, t.KeyID, "ok"
		out.Body.AccessExpiresAt, out.Body.RefreshExpiresAt = &t.AccessExpiresAt, &t.RefreshExpiresAt
		out.Body.MFAEnrollmentRequired = t.MFAEnrollmentRequired
	}
	return out, nil
}

// MFARequiredFields are what a first factor answers instead of tokens when
// a second factor is due (client-compat §3.2).
type MFARequiredFields struct {
	MFARequired           bool       `json:"mfa_required,omitempty" doc:"True: no tokens yet; answer mfa_challenge (POST /challenges/{token}/verify) to get them."`
	AppUserID             string     `json:"app_user_id,omitempty" doc:"With mfa_required: the user, for switching method (POST /challenges {purpose: mfa, method, app_user_id})."`
	MFAChallenge          *Challenge `json:"mfa_challenge,omitempty" doc:"With mfa_required: the second-factor challenge, by the preferred method."`
	AvailableMethods      []string   `json:"available_methods,omitempty" example:"[\"totp\",\"backup_code\"]" doc:"With mfa_required: the second factors this sign-in may use."`
	MFAEnrollmentRequired bool       `json:"mfa_enrollment_required,omitempty" doc:"The app requires MFA and the user has no second factor yet: signed in, but send them to enrol one (POST /mfa/enroll)."`
}

func mfaFields(m *signin.MFARequired) MFARequiredFields {
	c := challengeOut(m.Challenge)
	return MFARequiredFields{MFARequired: true, AppUserID: m.AppUserID, MFAChallenge: &c, AvailableMethods: m.AvailableMethods}
}

// Second factors of the signed-in user (server-sdk-compat §5).

// Enrollment is a TOTP authenticator app of a user.
type Enrollment struct {
	ID         string     `json:"id" example:"019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b" doc:"The enrolment id: confirm it with POST /mfa/enroll/verify, remove it with DELETE /mfa/methods/{id}."`
	Method     string     `json:"method" enum:"totp" doc:"Always totp."`
	Name       string     `json:"name" example:"My phone" doc:"A name the user gave the authenticator app."`
	Verified   bool       `json:"verified" doc:"False until a code from the app was verified (POST /mfa/enroll/verify); only then is it a second factor."`
	CreatedAt  time.Time  `json:"created_at" doc:"When it was created (RFC 3339)."`
	VerifiedAt *time.Time `json:"verified_at" doc:"When a first code confirmed it; null until then."`
	LastUsedAt *time.Time `json:"last_used_at" doc:"When it last served as a second factor; null if never."`
	IsDefault  bool       `json:"is_default" doc:"It is the user's default second factor, which a sign-in's MFA challenge asks for first: the first one verified, unless the user chose another (PATCH /mfa/methods/{id}). False until verified."`
}

func enrollmentOut(e signin.Enrollment) Enrollment {
	return Enrollment{ID: e.ID, Method: e.Method, Name: e.Name, Verified: e.Verified, CreatedAt: e.CreatedAt,
		VerifiedAt: e.VerifiedAt, LastUsedAt: e.LastUsedAt, IsDefault: e.IsDefault}
}

type enrollInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Body  struct {
		Method    string   `json:"method" enum:"totp" doc:"Only totp is enrolled here: passkeys through /devices/register, backup codes through /mfa/backup-codes."`
		Name      string   `json:"name,omitempty" maxLength:"100" example:"My phone" doc:"A name for the authenticator app (default Authenticator)."`
		Challenge string   `json:"challenge,omitempty" maxLength:"128" doc:"A completed step_up challenge's token, when the session's sign-in is older than the app's mfa_reverify_minutes."`
		_         struct{} `json:"-" additionalProperties:"true"`
	}
}

type enrollOutput struct {
	Body struct {
		Enrollment      Enrollment `json:"enrollment" doc:"The new enrolment, not yet verified."`
		Secret          string     `json:"secret" example:"JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP" doc:"The TOTP secret (160 bits, base32): shown this once; stored encrypted."`
		ProvisioningURI string     `json:"provisioning_uri" example:"otpauth://totp/Demo:ada@example.com?algorithm=SHA1&digits=6&issuer=Demo&period=30&secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP" doc:"The otpauth:// URI for a QR code, with the app's name as issuer."`
	}
}

var enrollMfaOp = operation{id: "enrollMfa", method: "POST", path: "/v1/auth/{app_id}/mfa/enroll", summary: "Start adding an authenticator app", tag: "MFA",
	auth: authUser, errors: []string{"verification_required"},
	desc: "Makes a TOTP secret for the signed-in user and returns it with its otpauth:// URI, shown this once. The enrolment works as a second factor once POST /mfa/enroll/verify confirms a code from the app. Needs a sign-in or step-up within the app's mfa_reverify_minutes (else 403 verification_required; pass a completed step_up challenge's token as `challenge`).",
	req:  `{"method":"totp","name":"My phone"}`,
	resp: body(func(o *enrollOutput) {
		o.Body.Enrollment, o.Body.Secret = exEnrollment, "EXAMPLEEXAMPLEEXAMPLEEXAMPLE2345"
		o.Body.ProvisioningURI = "otpauth://totp/Demo:ada@example.com?algorithm=SHA1&digits=6&issuer=Demo&period=30&secret=EXAMPLEEXAMPLEEXAMPLEEXAMPLE2345"
	})}

func (s *Server) enrollMFA(ctx context.Context, in *enrollInput) (*enrollOutput, error) {
	if m := strings.TrimSpace(in.Body.Method); m != "totp" {
		return nil, errs.Invalidf("method", "must be totp")
	}
	e, err := s.SignIn.EnrollTOTP(ctx, appFrom(ctx), callerFrom(ctx), in.Body.Name, in.Body.Challenge)
	if err != nil {
		return nil, err
	}
	out := &enrollOutput{}
	out.Body.Enrollment, out.Body.Secret, out.Body.ProvisioningURI = enrollmentOut(e.Enrollment), e.Secret, e.ProvisioningURI
	return out, nil
}

type enrollVerifyInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	UserAgent string `header:"User-Agent" doc:"The caller's user agent: recorded with the session or challenge and shown to the user (sessions list, consent page, push approval)."`
	Body      struct {
		EnrollmentID string   `json:"enrollment_id" maxLength:"64" doc:"The id POST /mfa/enroll returned."`
		Code         string   `json:"code" maxLength:"16" example:"123456" doc:"The current six-digit code from the authenticator app."`
		_            struct{} `json:"-" additionalProperties:"true"`
	}
}

type enrollmentOutput struct {
	Body struct {
		Enrollment Enrollment `json:"enrollment" doc:"The enrolment, now verified."`
	}
}

var verifyMfaEnrollmentOp = operation{id: "verifyMfaEnrollment", method: "POST", path: "/v1/auth/{app_id}/mfa/enroll/verify", summary: "Confirm an authenticator app", tag: "MFA",
	auth: authUser, errors: []string{"invalid_code", "code_used", "too_many_attempts", "factor_locked", "mfa_method_not_found", "rate_limited"},
	desc: "Confirms a TOTP enrolment with a code from the app: wrong code 422 invalid_code (it spends one of the hourly budget of wrong codes, as at sign-in). The code that confirmed the enrolment may be used once more, for the sign-in's second factor that follows in the same 30-second step; used a third time it is 422 code_used. Emits `user.updated` (change mfa_method_added) and tells the user by e-mail.",
	req:  `{"enrollment_id":"` + exEnrollment.ID + `","code":"123456"}`,
	resp: body(func(o *enrollmentOutput) { o.Body.Enrollment = verified(exEnrollment) })}

func (s *Server) verifyEnrollment(ctx context.Context, in *enrollVerifyInput) (*enrollmentOutput, error) {
	e, err := s.SignIn.VerifyEnrollment(ctx, appFrom(ctx), callerFrom(ctx), in.Body.EnrollmentID, in.Body.Code, client(ctx, in.UserAgent))
	if err != nil {
		return nil, err
	}
	out := &enrollmentOutput{}
	out.Body.Enrollment = enrollmentOut(e)
	return out, nil
}

type backupCodesInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Body  *struct {
		Challenge string   `json:"challenge,omitempty" maxLength:"128" doc:"A completed step_up challenge's token, when the session's sign-in is older than the app's mfa_reverify_minutes."`
		_         struct{} `json:"-" additionalProperties:"true"`
	} `required:"false"`
}

type backupCodesOutput struct {
	Body struct {
		BackupCodes []string `json:"backup_codes" example:"[\"7KQ2M-XH4PD\",\"R9TZC-2WNFA\"]" doc:"10 single-use codes, shown this once; any earlier set stops working."`
	}
}

var createBackupCodesOp = operation{id: "createBackupCodes", method: "POST", path: "/v1/auth/{app_id}/mfa/backup-codes", summary: "Make new backup codes", tag: "MFA",
	auth: authUser, errors: []string{"verification_required"},
	desc: "Makes 10 single-use backup codes, shown this once; any earlier set stops working. Needs a recent sign-in or step-up as /mfa/enroll does. Emits `user.updated` (change backup_codes_generated) and tells the user.",
	req:  `{}`,
	resp: body(func(o *backupCodesOutput) {
		o.Body.BackupCodes = []string{"XMPL1-AAAAA", "XMPL2-BBBBB", "XMPL3-CCCCC", "XMPL4-DDDDD", "XMPL5-EEEEE", "XMPL6-FFFFF", "XMPL7-GGGGG", "XMPL8-HHHHH", "XMPL9-JJJJJ", "XMPLA-KKKKK"}
	})}

func (s *Server) newBackupCodes(ctx context.Context, in *backupCodesInput) (*backupCodesOutput, error) {
	var stepUp string
	if in.Body != nil {
		stepUp = in.Body.Challenge
	}
	codes, err := s.SignIn.NewBackupCodes(ctx, appFrom(ctx), callerFrom(ctx), stepUp)
	if err != nil {
		return nil, err
	}
	out := &backupCodesOutput{}
	out.Body.BackupCodes = codes
	return out, nil
}

// MFAMethod is one second factor of a user.
type MFAMethod struct {
	ID         string     `json:"id" doc:"The id, for DELETE /mfa/methods/{id}."`
	Method     string     `json:"method" enum:"totp,webauthn" doc:"totp (an authenticator app) or webauthn (a passkey)."`
	Name       string     `json:"name" doc:"The name the user gave it."`
	Verified   bool       `json:"verified" doc:"An authenticator app counts once a code confirmed it; passkeys always do."`
	CreatedAt  time.Time  `json:"created_at" doc:"When it was created (RFC 3339)."`
	LastUsedAt *time.Time `json:"last_used_at" doc:"When it last served; null if never."`
	IsDefault  bool       `json:"is_default" doc:"The user's default second factor: a sign-in's MFA challenge asks for its kind first. The first verified one, unless the user chose another (PATCH /mfa/methods/{id})."`
}

func mfaMethodOut(m signin.MFAMethod) MFAMethod {
	return MFAMethod{ID: m.ID, Method: m.Method, Name: m.Name, Verified: m.Verified, CreatedAt: m.CreatedAt,
		LastUsedAt: m.LastUsedAt, IsDefault: m.IsDefault}
}

type mfaMethodsOutput struct {
	Body struct {
		MFAEnabled           bool        `json:"mfa_enabled" doc:"The user has a verified authenticator app or (when the app allows webauthn) a passkey."`
		BackupCodesAvailable int         `json:"backup_codes_available" doc:"Unused backup codes."`
		Methods              []MFAMethod `json:"methods" doc:"The user's second factors, oldest first."`
	}
}

var listMfaMethodsOp = operation{id: "listMfaMethods", method: "GET", path: "/v1/auth/{app_id}/mfa/methods", summary: "List the signed-in user's second factors", tag: "MFA",
	auth: authUser,
	desc: "The user's authenticator apps (verified or not) and, when the app allows webauthn as a second factor, passkeys; with the count of unused backup codes.",
	resp: body(func(o *mfaMethodsOutput) {
		o.Body.MFAEnabled, o.Body.BackupCodesAvailable = true, 10
		o.Body.Methods = []MFAMethod{{ID: exEnrollment.ID, Method: "totp", Name: "My phone", Verified: true, CreatedAt: exT0, LastUsedAt: &exT1, IsDefault: true}}
	})}

func (s *Server) listMFAMethods(ctx context.Context, _ *appIDInput) (*mfaMethodsOutput, error) {
	o, err := s.SignIn.MFAMethods(ctx, appFrom(ctx), callerFrom(ctx))
	if err != nil {
		return nil, err
	}
	out := &mfaMethodsOutput{}
	out.Body.MFAEnabled, out.Body.BackupCodesAvailable, out.Body.Methods = o.Enabled, o.BackupCodesAvailable, []MFAMethod{}
	for _, m := range o.Methods {
		out.Body.Methods = append(out.Body.Methods, mfaMethodOut(m))
	}
	return out, nil
}

type setDefaultMFAMethodInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	ID    string `path:"id" maxLength:"128" doc:"The id of a verified authenticator app, or of a passkey when the app allows webauthn as a second factor, as GET /mfa/methods lists it."`
	Body  struct {
		IsDefault bool `json:"is_default" doc:"true: make it the default. Only true: to change the default, make another method the default."`
	}
}

type mfaMethodOutput struct {
	Body struct {
		Method MFAMethod `json:"method" doc:"The method, now the default."`
	}
}

var setDefaultMfaMethodOp = operation{id: "setDefaultMfaMethod", method: "PATCH", path: "/v1/auth/{app_id}/mfa/methods/{id}", summary: "Choose the default second factor", tag: "MFA",
	auth: authUser, errors: []string{"mfa_method_not_found"},
	desc: "Makes one of the signed-in user's verified second factors their default: a sign-in's MFA challenge asks for its kind first (with both an authenticator app and a passkey), and `available_methods` lists the others after it. Without a choice, the first one verified is the default. `{\"is_default\": false}` is refused (400): choose another method instead. 404 mfa_method_not_found for an unverified enrolment or an id that is not the user's.",
	req:  `{"is_default":true}`,
	resp: body(func(o *mfaMethodOutput) {
		o.Body.Method = MFAMethod{ID: exEnrollment.ID, Method: "totp", Name: "My phone", Verified: true, CreatedAt: exT0, LastUsedAt: &exT1, IsDefault: true}
	})}

func (s *Server) setDefaultMFAMethod(ctx context.Context, in *setDefaultMFAMethodInput) (*mfaMethodOutput, error) {
	if !in.Body.IsDefault {
		return nil, errs.Invalidf("is_default", "must be true: to change the default, make another method the default")
	}
	m, err := s.SignIn.SetDefaultMFAMethod(ctx, appFrom(ctx), callerFrom(ctx), in.ID)
	if err != nil {
		return nil, err
	}
	out := &mfaMethodOutput{}
	out.Body.Method = mfaMethodOut(m)
	return out, nil
}

type mfaStatusOutput struct {
	Body struct {
		MFAEnabled           bool     `json:"mfa_enabled" doc:"The user has a verified authenticator app or (when the app allows webauthn) a passkey."`
		MFAPolicy            string   `json:"mfa_policy" enum:"off,optional,required" doc:"The app's policy: off, optional or required."`
		Methods              []string `json:"methods" example:"[\"totp\",\"backup_code\"]" doc:"The kinds of second factor the user has."`
		BackupCodesAvailable int      `json:"backup_codes_available" doc:"Unused backup codes."`
		EnrollmentRequired   bool     `json:"enrollment_required" doc:"The app requires MFA and the user has no second factor yet."`
	}
}

var mfaStatusOp = operation{id: "mfaStatus", method: "GET", path: "/v1/auth/{app_id}/mfa/status", summary: "Get the signed-in user's MFA state", tag: "MFA",
	auth: authUser,
	desc: "Whether the user has a second factor, which kinds, the app's policy, and whether the policy wants the user to enrol one.",
	resp: body(func(o *mfaStatusOutput) {
		o.Body.MFAEnabled, o.Body.MFAPolicy, o.Body.Methods, o.Body.BackupCodesAvailable = true, "optional", []string{"totp", "backup_code"}, 10
	})}

func (s *Server) mfaStatus(ctx context.Context, _ *appIDInput) (*mfaStatusOutput, error) {
	o, err := s.SignIn.MFAMethods(ctx, appFrom(ctx), callerFrom(ctx))
	if err != nil {
		return nil, err
	}
	out := &mfaStatusOutput{}
	out.Body.MFAEnabled, out.Body.MFAPolicy, out.Body.Methods = o.Enabled, string(o.Policy), o.Kinds
	out.Body.BackupCodesAvailable, out.Body.EnrollmentRequired = o.BackupCodesAvailable, o.EnrollmentRequired
	return out, nil
}

type deleteMFAMethodInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	ID        string `path:"id" maxLength:"128" doc:"The id of the authenticator app or passkey, as GET /mfa/methods lists it."`
	Challenge string `query:"challenge" maxLength:"128" doc:"A completed step_up challenge's token; needed once the session's sign-in is older than the app's mfa_reverify_minutes."`
}

var deleteMfaMethodOp = operation{id: "deleteMfaMethod", method: "DELETE", path: "/v1/auth/{app_id}/mfa/methods/{id}", summary: "Remove a second factor", tag: "MFA",
	auth: authUser, errors: []string{"mfa_method_not_found", "verification_required"},
	desc: "Removes an authenticator app or a passkey of the signed-in user. Once the session's sign-in is older than the app's mfa_reverify_minutes, it needs `?challenge=` with a completed step_up challenge's token (spent by this call), else 403 verification_required with details.recent_sign_in_minutes. 204 on success; emits `user.updated` and tells the user."}

func (s *Server) deleteMFAMethod(ctx context.Context, in *deleteMFAMethodInput) (*noContentOutput, error) {
	if err := s.SignIn.DeleteMFAMethod(ctx, appFrom(ctx), callerFrom(ctx), in.ID, in.Challenge); err != nil {
		return nil, err
	}
	return &noContentOutput{Status: http.StatusNoContent}, nil
}

// noContentOutput answers 204 with no body.
type noContentOutput struct {
	Status int
}

// Push approval, from another signed-in device of the user.

// PendingPush is a push challenge waiting for the user's answer.
type PendingPush struct {
	ID          string    `json:"id" doc:"The challenge id, for approve and deny."`
	Purpose     string    `json:"purpose" doc:"What the challenge is for (authenticate, mfa, step_up, ...)."`
	Intent      string    `json:"intent" doc:"The app's free-text intent, if any."`
	RequestedAt time.Time `json:"requested_at" doc:"When it was asked for (RFC 3339)."`
	ExpiresAt   time.Time `json:"expires_at" doc:"When it expires unanswered (RFC 3339)."`
	Device      struct {
		Browser string `json:"browser" example:"Firefox" doc:"The requesting device's browser."`
		OS      string `json:"os" example:"macOS" doc:"The requesting device's operating system."`
	} `json:"device" doc:"The requesting device, as its user agent says."`
	IPAddress string `json:"ip_address" doc:"The IP address the request came from."`
	Location  string `json:"location" doc:"Approximate place of the request, when a trusted proxy said it."`
}

type pendingPushOutput struct {
	Body struct {
		Challenges []PendingPush `json:"challenges" doc:"Pending push challenges, newest first."`
	}
}

var pendingPushOp = operation{id: "pendingPush", method: "GET", path: "/v1/auth/{app_id}/push/pending", summary: "List push challenges waiting for this user", tag: "MFA",
	auth: authUser,
	desc: "The push challenges the signed-in user may approve from this device: what asks, from which device and place, until when. The number to match is shown only on the requesting device.",
	resp: body(func(o *pendingPushOutput) {
		p := PendingPush{ID: exChallenge.ID, Purpose: "authenticate", RequestedAt: exT0, ExpiresAt: exT0.Add(2 * time.Minute), IPAddress: "203.0.113.7", Location: "Lisbon, PT"}
		p.Device.Browser, p.Device.OS = "Firefox", "macOS"
		o.Body.Challenges = []PendingPush{p}
	})}

func (s *Server) pendingPush(ctx context.Context, _ *appIDInput) (*pendingPushOutput, error) {
	list, err := s.SignIn.PendingPush(ctx, appFrom(ctx), callerFrom(ctx))
	if err != nil {
		return nil, err
	}
	out := &pendingPushOutput{}
	out.Body.Challenges = []PendingPush{}
	for _, p := range list {
		item := PendingPush{ID: p.ID, Purpose: p.Purpose, Intent: p.Intent, RequestedAt: p.RequestedAt, ExpiresAt: p.ExpiresAt,
			IPAddress: p.IP, Location: p.Location}
		item.Device.Browser, item.Device.OS = p.Browser, p.OS
		out.Body.Challenges = append(out.Body.Challenges, item)
	}
	return out, nil
}

type approvePushInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	ID    string `path:"id" maxLength:"64" doc:"The push challenge id, as GET /push/pending lists it."`
	Body  struct {
		MatchNumber int      `json:"match_number" minimum:"0" maximum:"99" example:"42" doc:"The number the requesting device shows."`
		_           struct{} `json:"-" additionalProperties:"true"`
	}
}

var approvePushOp = operation{id: "approvePush", method: "POST", path: "/v1/auth/{app_id}/push/{id}/approve", summary: "Approve a push challenge", tag: "MFA",
	auth: authUser, errors: []string{"challenge_not_found", "challenge_closed", "invalid_code", "too_many_attempts"},
	desc: "Approves a push challenge of the signed-in user from another of their sessions, with the number the requesting device shows. The number is taken from the challenge's attempts (3) before it is compared: a wrong one is 400 and the last one fails the challenge; once they are spent every answer, the right one included, is 429 too_many_attempts. Emits `challenge.completed`.",
	req:  `{"match_number":42}`,
	resp: body(func(o *challengeOutput) {
		c := exChallenge
		c.Status, c.Purpose, c.Method, c.TimeRemaining, c.Intent = "completed", "authenticate", "push", 0, ""
		o.Body.Challenge = c
	})}

func (s *Server) approvePush(ctx context.Context, in *approvePushInput) (*challengeOutput, error) {
	return challengeAnswer(s.SignIn.ApprovePush(ctx, appFrom(ctx), callerFrom(ctx), in.ID, in.Body.MatchNumber))
}

type pushIDInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	ID    string `path:"id" maxLength:"64" doc:"The push challenge id, as GET /push/pending lists it."`
}

var denyPushOp = operation{id: "denyPush", method: "POST", path: "/v1/auth/{app_id}/push/{id}/deny", summary: "Deny a push challenge", tag: "MFA",
	auth: authUser, errors: []string{"challenge_not_found", "challenge_closed"},
	desc: "Refuses a push challenge (\"this was not me\"): it becomes denied and the requester gets nothing. A step-up asked from one of the user's sessions also ends that session (its holder is not the user). Denying a sign-in's second-factor push ends that sign-in: if its device has meanwhile replaced the push (asked again, for a push or another factor) or cancelled it, the sign-in's current second factor is denied instead, and the answer is that challenge (its own id and method); a replacement and a denial that cross are taken one after the other, so the device cannot ask again past the denial. A push whose sign-in has ended otherwise (completed, failed, denied, expired, or a new sign-in of the user began) answers 409 challenge_closed, and the new sign-in is untouched. Emits `challenge.failed` with reason denied.",
	resp: body(func(o *challengeOutput) {
		c := exChallenge
		c.Status, c.Purpose, c.Method, c.TimeRemaining, c.Intent = "denied", "authenticate", "push", 0, ""
		o.Body.Challenge = c
	})}

func (s *Server) denyPush(ctx context.Context, in *pushIDInput) (*challengeOutput, error) {
	return challengeAnswer(s.SignIn.DenyPush(ctx, appFrom(ctx), callerFrom(ctx), in.ID))
}
