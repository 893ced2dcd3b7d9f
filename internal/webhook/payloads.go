package webhook

import "time"

// Payload is an event's data: one of the types in this file, each the shape
// of one event type (Events says which). Their JSON is what receivers get
// and what the published schema (GET /v1/webhooks/events.schema.json) and
// docs/webhooks.md describe: a field may be added, never renamed, retyped or
// removed. None may hold a secret, a code, a token or a link.
type Payload interface{ payload() }

// EventSpec is one event type and the shapes its data comes in.
type EventSpec struct {
	Type string
	// When says what emits it, in a sentence.
	When string
	// Data holds a zero value of each shape; most types have one.
	Data []Payload
}

// verificationOutcomes are the outcomes of verification.{channel}.*, with
// their data.
var verificationOutcomes = []struct {
	outcome, when string
	data          []Payload
}{
	{OutcomeRequested, "A code or magic link was sent (or sent again: resend).", []Payload{VerificationRequestedData{}}},
	{OutcomeVerified, "The code was right, or the link was opened or approved on the consent page.", []Payload{VerificationVerifiedData{}}},
	{OutcomeExpired, "A code or link ran out unused.", []Payload{VerificationExpiredData{}}},
	{OutcomeFailed, "The last wrong code failed the challenge.", []Payload{VerificationFailedData{}}},
	{OutcomeDenied, "The recipient denied the request on the magic-link consent page.", []Payload{VerificationDeniedData{}}},
	{OutcomeDeliveryFailed, "The provider did not take the message, or (SMS) a sending cap was reached.", []Payload{VerificationDeliveryFailedData{}, SMSCapReachedData{}}},
}

// Events lists every event type an endpoint may subscribe to, with its data.
func Events() []EventSpec {
	out := []EventSpec{
		{UserCreated, "A user was created (by the API, an invitation, an import or a first sign-in).", []Payload{UserData{}}},
		{UserUpdated, "A user's metadata, identifiers, status, second factors or passkeys changed.", []Payload{UserUpdatedData{}}},
		{UserIdentifierChanged, "A user's e-mail address or phone number changed.", []Payload{UserIdentifierChangedData{}}},
		{UserIdentityLinked, "A social sign-in provider's account was linked to a user (at its first sign-in).", []Payload{UserIdentityData{}}},
		{UserIdentityUnlinked, "A user's social sign-in identity was unlinked.", []Payload{UserIdentityData{}}},
		{AuthLoginFailed, "A wrong answer to a sign-in, a used magic link opened again, or a refused passkey sign-in.", []Payload{LoginFailedData{}, PasskeyLoginFailedData{}}},
		{ChallengeCreated, "A challenge was created.", []Payload{ChallengeCreatedData{}}},
		{ChallengeCompleted, "A challenge was passed.", []Payload{ChallengeCompletedData{}, PasskeySignInData{}}},
		{ChallengeFailed, "A challenge ended unpassed.", []Payload{ChallengeFailedData{}, PasskeyLoginFailedData{}}},
		{WebhookTest, "POST /v1/apps/{app_id}/webhooks/{id}/test.", []Payload{WebhookTestData{}}},
	}
	for _, ch := range []string{"email", "sms"} {
		for _, o := range verificationOutcomes {
			if ch == "email" && o.outcome == OutcomeDeliveryFailed {
				out = append(out, EventSpec{Verification(ch, o.outcome), o.when, o.data[:1]}) // caps are SMS only
				continue
			}
			out = append(out, EventSpec{Verification(ch, o.outcome), o.when, o.data})
		}
	}
	return out
}

// EventDevice is the requesting device, as its User-Agent names it.
type EventDevice struct {
	OS      string `json:"os" doc:"Operating system (empty when unknown)."`
	Browser string `json:"browser" doc:"Browser (empty when unknown)."`
}

// EventUser is a user as events carry it: no secret, no token.
type EventUser struct {
	ID              string         `json:"id" doc:"The user's id."`
	AppID           string         `json:"app_id" doc:"The app's id."`
	UserID          string         `json:"user_id" doc:"The app's own id for the user (user_id), empty when none."`
	Status          string         `json:"status" enum:"active,pending,inactive,imported" doc:"The user's status."`
	Email           *string        `json:"email" doc:"null when the user has none."`
	Phone           *string        `json:"phone" doc:"E.164; null when the user has none."`
	EmailVerified   bool           `json:"email_verified" doc:"Whether the e-mail address is verified."`
	PhoneVerified   bool           `json:"phone_verified" doc:"Whether the phone number is verified."`
	WebauthnEnabled bool           `json:"webauthn_enabled" doc:"Whether the user has a passkey."`
	WebauthnTypes   []string       `json:"webauthn_types" nullable:"false" doc:"The attachments of the user's passkeys (platform, cross-platform)."`
	UserMeta        map[string]any `json:"user_meta" doc:"The user's metadata (the app's user schema)."`
	CreatedAt       time.Time      `json:"created_at" doc:"When the user was created."`
	UpdatedAt       time.Time      `json:"updated_at" doc:"When the user last changed."`
	Test            bool           `json:"test,omitempty" doc:"true for a test user; absent otherwise."`
}

// UserData is user.created's data.
type UserData struct {
	User EventUser `json:"user" doc:"The user."`
	Test bool      `json:"test,omitempty" doc:"true when the user is a test user; absent otherwise."`
	// Method and Provider say how a user.created by a social sign-in came.
	Method   string `json:"method,omitempty" enum:"oauth" doc:"user.created by a social sign-in: oauth; absent otherwise."`
	Provider string `json:"provider,omitempty" doc:"user.created by a social sign-in: the provider's slug; absent otherwise."`
}

// UserUpdatedData is user.updated's data: the user, and for a change of
// second factors or passkeys what changed.
type UserUpdatedData struct {
	UserData
	Change      string        `json:"change,omitempty" enum:"mfa_method_added,mfa_method_removed,backup_codes_generated,passkey_added,passkey_removed,passkey_suspended" doc:"What changed, for second factors and passkeys; absent for other changes."`
	MFAMethod   string        `json:"mfa_method,omitempty" enum:"totp,backup_code" doc:"The second factor that changed."`
	MFAMethodID string        `json:"mfa_method_id,omitempty" doc:"The authenticator app's id."`
	Passkey     *EventPasskey `json:"passkey,omitempty" doc:"The passkey that changed."`
}

// UserIdentityData is user.identity_linked's and user.identity_unlinked's
// data: the user and the identity.
type UserIdentityData struct {
	UserData
	Identity EventIdentity `json:"identity" doc:"The identity linked or unlinked."`
}

// EventIdentity is a user's account at a social sign-in provider (never a
// provider token).
type EventIdentity struct {
	ID        string    `json:"id" doc:"The identity's id."`
	Provider  string    `json:"provider" doc:"The provider's slug in the app."`
	Email     string    `json:"email" doc:"The verified e-mail address the provider gave, empty when none."`
	CreatedAt time.Time `json:"created_at" doc:"When it was linked."`
}

// EventPasskey is a passkey as events name it (never its key).
type EventPasskey struct {
	ID                      string `json:"id" doc:"The passkey's id."`
	CredentialID            string `json:"credential_id" doc:"base64url, as browsers name it."`
	Name                    string `json:"name" doc:"The name the user gave it."`
	AuthenticatorAttachment string `json:"authenticator_attachment" doc:"platform or cross-platform (empty when the browser did not say)."`
}

// UserIdentifierChangedData is user.identifier_changed's data.
type UserIdentifierChangedData struct {
	UserData
	Previous PreviousIdentifiers `json:"previous" doc:"The identifiers as they were."`
}

// PreviousIdentifiers are a user's identifiers before a change.
type PreviousIdentifiers struct {
	Email *string `json:"email" doc:"null when there was none."`
	Phone *string `json:"phone" doc:"null when there was none."`
}

// VerificationData is what every verification.{channel}.* event of a code or
// link carries (interface §6.4).
type VerificationData struct {
	VerificationID string             `json:"verification_id" doc:"The challenge's id."`
	Intent         string             `json:"intent" doc:"The challenge's intent when the app gave one; otherwise login for a sign-in, or the purpose (mfa, step_up, ...)."`
	MetaData       VerificationMeta   `json:"meta_data" doc:"Where the code or link went."`
	Timing         VerificationTiming `json:"timing" doc:"When it was sent and confirmed."`
	Device         EventDevice        `json:"device" doc:"The requesting device."`
	IPAddress      string             `json:"ip_address" doc:"The requesting client's address."`
	Test           bool               `json:"test,omitempty" doc:"true when the user was a test user when the challenge was made; absent otherwise."`
}

// VerificationMeta says where a code or link went.
type VerificationMeta struct {
	DeliveryMethod string  `json:"delivery_method" enum:"email,sms" doc:"The channel."`
	ContactEmail   *string `json:"contact_email,omitempty" doc:"The address, for email."`
	ContactPhone   *string `json:"contact_phone,omitempty" doc:"The number, for sms."`
	TicketID       string  `json:"ticket_id" doc:"The challenge's id."`
	Method         string  `json:"method" doc:"The challenge's method (email_otp, magic_link, ...)."`
	UserID         string  `json:"user_id" doc:"The user's id."`
}

// VerificationTiming is when a code or link was sent and confirmed.
type VerificationTiming struct {
	SentAt              time.Time  `json:"sent_at" doc:"When the code or link was sent."`
	OpenedAt            *time.Time `json:"opened_at" doc:"null until confirmed."`
	ConfirmedAt         *time.Time `json:"confirmed_at" doc:"null until confirmed."`
	TimeToVerifySeconds *int       `json:"time_to_verify_seconds" doc:"null until confirmed."`
}

// DecidedBy is the device that answered a magic link's consent page.
type DecidedBy struct {
	IPAddress string `json:"ip_address" doc:"The deciding client's address."`
	Browser   string `json:"browser" doc:"Its browser."`
	OS        string `json:"os" doc:"Its operating system."`
}

// VerificationRequestedData is verification.{channel}.requested's data.
type VerificationRequestedData struct {
	VerificationData
	Resend bool `json:"resend,omitempty" doc:"true when the code or link was sent again."`
}

// VerificationVerifiedData is verification.{channel}.verified's data.
type VerificationVerifiedData struct {
	VerificationData
	ConsentDecision string     `json:"consent_decision,omitempty" enum:"approved" doc:"approved, after an approval on the consent page; absent otherwise."`
	DecidedBy       *DecidedBy `json:"decided_by,omitempty" doc:"The approving device, after an approval on the consent page."`
}

// VerificationDeniedData is verification.{channel}.denied's data.
type VerificationDeniedData struct {
	VerificationData
	ConsentDecision string    `json:"consent_decision" enum:"denied" doc:"Always denied."`
	DenialReason    string    `json:"denial_reason" enum:"not_requested,number_mismatch" doc:"not_requested: \"this was not me\"; number_mismatch: a wrong or missing number."`
	DecidedBy       DecidedBy `json:"decided_by" doc:"The denying device."`
}

// VerificationExpiredData is verification.{channel}.expired's data.
type VerificationExpiredData struct {
	VerificationData
	WasOpened bool `json:"was_opened" doc:"Always false."`
}

// VerificationFailedData is verification.{channel}.failed's data.
type VerificationFailedData struct {
	VerificationData
	Attempts int `json:"attempts" doc:"The wrong codes that failed it."`
}

// VerificationDeliveryFailedData is verification.{channel}.delivery_failed's
// data when a provider did not take a message.
type VerificationDeliveryFailedData struct {
	VerificationData
	Error   string `json:"error" doc:"A generic description (never the provider's text)."`
	Channel string `json:"channel" enum:"email,sms" doc:"The channel."`
}

// SMSCapReachedData is verification.sms.delivery_failed's data when a
// sending cap refused SMS: the verification shape with no verification
// behind it, error the refusal's error_code, and the cap. It is emitted once
// per cap and window.
type SMSCapReachedData struct {
	VerificationID *string    `json:"verification_id" doc:"Always null."`
	Intent         *string    `json:"intent" doc:"Always null."`
	Channel        string     `json:"channel" enum:"sms" doc:"Always sms."`
	Error          string     `json:"error" enum:"sms_daily_cap_reached,sms_prefix_cap_reached" doc:"The refusal's error_code."`
	MetaData       SMSCapMeta `json:"meta_data" doc:"Always the sms channel."`
	Cap            SMSCap     `json:"cap" doc:"The cap that was reached."`
}

// SMSCapMeta is SMSCapReachedData's meta_data.
type SMSCapMeta struct {
	DeliveryMethod string `json:"delivery_method" enum:"sms" doc:"Always sms."`
}

// SMSCap is the cap that was reached.
type SMSCap struct {
	Kind        string    `json:"kind" enum:"daily_cap,prefix_cap" doc:"daily_cap: the app's SMS per day; prefix_cap: per number prefix."`
	Limit       int       `json:"limit" doc:"SMS allowed in the window."`
	WindowStart time.Time `json:"window_start" doc:"When the cap's window began."`
	WindowEnd   time.Time `json:"window_end" doc:"When it ends: SMS are sent again after."`
	Prefix      string    `json:"prefix,omitempty" doc:"The number prefix, masked, for a prefix cap."`
}

// LoginFailedData is auth.login.failed's data for a code, link or
// challenge answer.
type LoginFailedData struct {
	UserID         string `json:"user_id" doc:"The user's id."`
	Method         string `json:"method" doc:"The challenge's method."`
	VerificationID string `json:"verification_id" doc:"The challenge's id."`
	Reason         string `json:"reason" enum:"invalid_code,link_used_or_superseded" doc:"invalid_code: a wrong answer; link_used_or_superseded: a genuine link opened after it was used or replaced."`
	IPAddress      string `json:"ip_address" doc:"The client's address."`
	Purpose        string `json:"purpose,omitempty" doc:"The challenge's purpose, for a wrong answer to an authenticate or mfa challenge."`
	Test           bool   `json:"test,omitempty" doc:"true for a test user; absent otherwise."`
}

// PasskeyLoginFailedData is the data of auth.login.failed and
// challenge.failed for a refused passkey sign-in.
type PasskeyLoginFailedData struct {
	UserID       *string `json:"user_id" doc:"null when unknown."`
	Method       string  `json:"method" enum:"webauthn" doc:"Always webauthn."`
	Purpose      string  `json:"purpose" enum:"authenticate" doc:"Always authenticate."`
	Reason       string  `json:"reason" enum:"malformed,unknown_ceremony,unknown_credential,wrong_user,passkey_suspended,user_not_active,verification_failed,counter_regressed,concurrent_use" doc:"Why it was refused."`
	CredentialID *string `json:"credential_id" doc:"null when unknown."`
	IPAddress    string  `json:"ip_address" doc:"The client's address."`
	Test         bool    `json:"test,omitempty" doc:"true for a test user; absent otherwise."`
}

// PasskeySignInData is challenge.completed's data for a passkey sign-in.
type PasskeySignInData struct {
	ChallengeID  string      `json:"challenge_id" doc:"The sign-in ceremony's id."`
	Purpose      string      `json:"purpose" enum:"authenticate" doc:"Always authenticate."`
	Method       string      `json:"method" enum:"webauthn" doc:"Always webauthn."`
	UserID       string      `json:"user_id" doc:"The user's id."`
	PasskeyID    string      `json:"passkey_id" doc:"The passkey's id."`
	CredentialID string      `json:"credential_id" doc:"The passkey's credential id (base64url)."`
	IPAddress    string      `json:"ip_address" doc:"The client's address."`
	Device       EventDevice `json:"device" doc:"The signing-in device."`
	CompletedAt  time.Time   `json:"completed_at" doc:"When it succeeded."`
	Test         bool        `json:"test,omitempty" doc:"true for a test user; absent otherwise."`
}

// ChallengeData is what every challenge.* event of a challenge carries (never
// its code, token or link).
type ChallengeData struct {
	ChallengeID string         `json:"challenge_id" doc:"The challenge's id (for a code or link, the verification_id of its verification events)."`
	Purpose     string         `json:"purpose" doc:"What the challenge is for (authenticate, mfa, step_up, custom, ...)."`
	Method      string         `json:"method" doc:"How it is answered (email_otp, magic_link, totp, push, ...)."`
	UserID      string         `json:"user_id" doc:"The user's id."`
	Intent      string         `json:"intent" doc:"The app's intent, empty when none."`
	Status      string         `json:"status" enum:"pending,completed,failed,expired,cancelled,denied" doc:"The challenge's status after this event."`
	IPAddress   string         `json:"ip_address" doc:"The requesting client's address."`
	Device      EventDevice    `json:"device" doc:"The requesting device."`
	CreatedAt   time.Time      `json:"created_at" doc:"When it was created."`
	ExpiresAt   time.Time      `json:"expires_at" doc:"When it expires."`
	Data        map[string]any `json:"data,omitempty" doc:"The app's data as given at creation (custom and verify_identity)."`
	Test        bool           `json:"test,omitempty" doc:"true when the user was a test user when the challenge was made; absent otherwise."`
	Provider    string         `json:"provider,omitempty" doc:"For a social sign-in (method oauth), the provider's slug; absent otherwise."`
}

// ChallengeCreatedData is challenge.created's data.
type ChallengeCreatedData struct {
	ChallengeData
	FirstFactor string `json:"first_factor,omitempty" doc:"For a sign-in's second factor, the first one (e.g. email_otp)."`
}

// ChallengeCompletedData is challenge.completed's data.
type ChallengeCompletedData struct {
	ChallengeData
	CompletedAt       time.Time `json:"completed_at" doc:"When it was passed."`
	ApprovedBySession string    `json:"approved_by_session,omitempty" doc:"For a push, the approving session's id."`
}

// ChallengeFailedData is challenge.failed's data.
type ChallengeFailedData struct {
	ChallengeData
	Reason          string     `json:"reason" enum:"too_many_attempts,expired,cancelled,denied" doc:"Why it ended."`
	FailedAt        *time.Time `json:"failed_at,omitempty" doc:"For too_many_attempts and a denied push."`
	DeniedBySession string     `json:"denied_by_session,omitempty" doc:"For a denied push, the denying session's id."`
}

// WebhookTestData is webhook.test's data.
type WebhookTestData struct {
	Message    string `json:"message" doc:"Always \"This is a test event.\""`
	EndpointID string `json:"endpoint_id" doc:"The endpoint tested."`
}

func (UserData) payload()                       {}
func (UserUpdatedData) payload()                {}
func (UserIdentityData) payload()               {}
func (UserIdentifierChangedData) payload()      {}
func (VerificationRequestedData) payload()      {}
func (VerificationVerifiedData) payload()       {}
func (VerificationDeniedData) payload()         {}
func (VerificationExpiredData) payload()        {}
func (VerificationFailedData) payload()         {}
func (VerificationDeliveryFailedData) payload() {}
func (SMSCapReachedData) payload()              {}
func (LoginFailedData) payload()                {}
func (PasskeyLoginFailedData) payload()         {}
func (PasskeySignInData) payload()              {}
func (ChallengeCreatedData) payload()           {}
func (ChallengeCompletedData) payload()         {}
func (ChallengeFailedData) payload()            {}
func (WebhookTestData) payload()                {}
