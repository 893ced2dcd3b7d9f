package httpapi

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
)

// Passkeys (WebAuthn): the client SDK's device routes (client-compat C14–C17,
// C22), the seed's register/initialize (interface §4.9), and device
// management for users and administrators.

// Device is a registered passkey, with the client SDK's session-shaped names
// (client-compat §3.6: C15 answers one).
type Device struct {
	ID                      string     `json:"id" example:"019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b" doc:"The device (passkey) id; DELETE and PATCH /devices/{id} take it, or the credential id."`
	CredentialID            string     `json:"credential_id" example:"kLv3yZ0aQ1mXc9eT8uJ2hA" doc:"The WebAuthn credential id, base64url without padding: the browser's credential.id."`
	Name                    string     `json:"name" example:"Chrome on macOS" doc:"A name for people; from the registering browser's user agent until renamed."`
	Nickname                string     `json:"nickname" doc:"Same as name (client SDK name)."`
	DisplayName             string     `json:"display_name" doc:"Same as name."`
	Type                    string     `json:"type" enum:"webauthn" doc:"Always webauthn."`
	AuthenticatorAttachment string     `json:"authenticator_attachment" enum:"platform,cross-platform" example:"platform" doc:"platform: built into the device (Touch ID, Windows Hello, a phone's screen lock); cross-platform: a security key or another device."`
	Transports              []string   `json:"transports" example:"[\"internal\",\"hybrid\"]" doc:"How the browser reaches the authenticator (internal, hybrid, usb, nfc, ble)."`
	AAGUID                  string     `json:"aaguid" example:"fbfc3007-154e-4ecc-8c0b-6e020557d7bd" doc:"The authenticator model's AAGUID as reported (all zeros when not disclosed)."`
	AttestationFormat       string     `json:"attestation_format" enum:"none,packed,fido-u2f,tpm,android-key,apple" doc:"The attestation statement format the authenticator gave (none unless the app asks for attestation)."`
	BackupEligible          bool       `json:"backup_eligible" doc:"Whether the passkey can be synced (a multi-device credential)."`
	BackedUp                bool       `json:"backed_up" doc:"Whether the passkey was synced, as of its last use."`
	SignCount               int64      `json:"sign_count" doc:"The authenticator's signature counter as of the last sign-in (0 for authenticators that keep none, as synced passkeys do)."`
	Suspended               bool       `json:"suspended" doc:"True once its signature counter went backwards (a cloned authenticator): it no longer signs in; remove it."`
	Browser                 string     `json:"browser" doc:"The browser it was registered from."`
	Platform                string     `json:"platform" doc:"The operating system it was registered from."`
	UserAgent               string     `json:"user_agent" doc:"The user agent that registered it."`
	LastUsedAtIP            string     `json:"last_used_at_ip" doc:"The IP address of its last use."`
	CreatedAt               time.Time  `json:"created_at" doc:"When it was registered (RFC 3339)."`
	UpdatedAt               time.Time  `json:"updated_at" doc:"When it was last renamed or used (RFC 3339)."`
	LastUsedAt              *time.Time `json:"last_used_at" doc:"When it last signed in (RFC 3339)."`
}

func deviceOut(p signin.Passkey) Device {
	browser, platform := signin.DescribeUserAgent(p.UserAgent)
	transports := p.Transports
	if transports == nil {
		transports = []string{}
	}
	return Device{ID: p.ID, CredentialID: p.CredentialID, Name: p.Name, Nickname: p.Name, DisplayName: p.Name,
		Type: "webauthn", AuthenticatorAttachment: p.AuthenticatorAttachment, Transports: transports, AAGUID: p.AAGUID,
		AttestationFormat: p.AttestationFormat, BackupEligible: p.BackupEligible, BackedUp: p.BackedUp,
		SignCount: p.SignCount, Suspended: p.SuspendedAt != nil, Browser: browser, Platform: platform, UserAgent: p.UserAgent,
		LastUsedAtIP: p.LastUsedIP, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, LastUsedAt: p.LastUsedAt}
}

func devicesOut(list []signin.Passkey) []Device {
	out := make([]Device, 0, len(list))
	for _, p := range list {
		out = append(out, deviceOut(p))
	}
	return out
}

// credentialBody documents the browser's answer (PublicKeyCredential JSON,
// as @github/webauthn-json or credential.toJSON() writes it); the raw bytes
// are what is verified.
type credentialBody struct {
	ID                      string         `json:"id" doc:"The credential id, base64url."`
	RawID                   string         `json:"rawId" doc:"The same id, base64url."`
	Type                    string         `json:"type" enum:"public-key" doc:"Always public-key."`
	AuthenticatorAttachment *string        `json:"authenticatorAttachment,omitempty" nullable:"true" doc:"platform, cross-platform, or null (browsers send null when they cannot tell)."`
	Response                map[string]any `json:"response" doc:"Registration: clientDataJSON, attestationObject, transports. Sign-in: clientDataJSON, authenticatorData, signature, userHandle. Binary values base64url without padding."`
	ClientExtensionResults  map[string]any `json:"clientExtensionResults,omitempty" nullable:"true" doc:"The WebAuthn client extension results, as the browser gives them."`
	_                       struct{}       `json:"-" additionalProperties:"true"`
}

type credentialInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	UserAgent string `header:"User-Agent" doc:"The caller's user agent: recorded with the session or challenge and shown to the user (sessions list, consent page, push approval)."`
	Body      credentialBody
	RawBody   []byte
}

type registrationOptionsOutput struct {
	Body struct {
		Options          json.RawMessage `json:"options" doc:"PublicKeyCredentialCreationOptionsJSON (not wrapped in publicKey): rp, user, challenge, pubKeyCredParams, timeout, excludeCredentials (the user's passkeys), authenticatorSelection, attestation. Binary values base64url."`
		UserVerification string          `json:"user_verification" enum:"required,preferred,discouraged" doc:"The app's user-verification requirement."`
	}
}

var registerDeviceOp = operation{id: "registerDevice", method: "POST", path: "/v1/auth/{app_id}/devices/register", summary: "Start adding a passkey", tag: "Passkeys",
	auth: authUser, errors: []string{"verification_required", "webauthn_unavailable"},
	desc: registerDeviceDoc,
	resp: `{"options":` + exOptions + `,"user_verification":"required"}`}

func (s *Server) registerDevice(ctx context.Context, _ *appIDInput) (*registrationOptionsOutput, error) {
	opts, err := s.SignIn.BeginDeviceRegistration(ctx, appFrom(ctx), callerFrom(ctx))
	if err != nil {
		return nil, err
	}
	out := &registrationOptionsOutput{}
	out.Body.Options, out.Body.UserVerification = opts.Options, opts.UserVerification
	return out, nil
}

type deviceOutput struct {
	Body Device
}

var finalizeDeviceOp = operation{id: "finalizeDevice", method: "POST", path: "/v1/auth/{app_id}/devices/finalize", summary: "Finish adding a passkey", tag: "Passkeys",
	auth: authUser, errors: []string{"webauthn_register_error", "webauthn_unavailable"},
	desc: finalizeDeviceDoc,
	req:  exCredential,
	resp: exDevice}

func (s *Server) finalizeDevice(ctx context.Context, in *credentialInput) (*deviceOutput, error) {
	p, err := s.SignIn.FinishDeviceRegistration(ctx, appFrom(ctx), callerFrom(ctx), in.RawBody, client(ctx, in.UserAgent))
	if err != nil {
		return nil, err
	}
	return &deviceOutput{Body: deviceOut(p)}, nil
}

type devicesOutput struct {
	Body struct {
		Devices []Device `json:"devices" doc:"The passkeys, oldest first."`
	}
}

var listDevicesOp = operation{id: "listDevices", method: "GET", path: "/v1/auth/{app_id}/devices", summary: "List the signed-in user's passkeys", tag: "Passkeys",
	auth: authUser,
	desc: "The signed-in user's passkeys, oldest first.",
	resp: body(func(o *devicesOutput) { o.Body.Devices = []Device{exDevice} })}

func (s *Server) listDevices(ctx context.Context, _ *appIDInput) (*devicesOutput, error) {
	list, err := s.SignIn.ListPasskeys(ctx, appFrom(ctx), callerFrom(ctx))
	if err != nil {
		return nil, err
	}
	out := &devicesOutput{}
	out.Body.Devices = devicesOut(list)
	return out, nil
}

type deviceIDInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	ID    string `path:"id" maxLength:"1400" doc:"The device id or its credential id."`
}

type renameDeviceInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	ID    string `path:"id" maxLength:"1400" doc:"The device id or its credential id."`
	Body  struct {
		Name string   `json:"name" maxLength:"100" doc:"The new name, 1 to 100 characters." example:"Work laptop"`
		_    struct{} `json:"-" additionalProperties:"true"`
	}
}

type deviceWrappedOutput struct {
	Body struct {
		Device Device `json:"device" doc:"The renamed passkey."`
	}
}

var renameDeviceOp = operation{id: "renameDevice", method: "PATCH", path: "/v1/auth/{app_id}/devices/{id}", summary: "Rename a passkey", tag: "Passkeys",
	auth: authUser, errors: []string{"device_not_found"},
	desc: "Renames one of the signed-in user's passkeys, named by its id or its credential id.",
	req:  `{"name":"Work laptop"}`,
	resp: body(func(o *deviceWrappedOutput) { d := exDevice; d.Name = "Work laptop"; o.Body.Device = d })}

func (s *Server) renameDevice(ctx context.Context, in *renameDeviceInput) (*deviceWrappedOutput, error) {
	p, err := s.SignIn.RenamePasskey(ctx, appFrom(ctx), callerFrom(ctx), in.ID, in.Body.Name)
	if err != nil {
		return nil, err
	}
	out := &deviceWrappedOutput{}
	out.Body.Device = deviceOut(p)
	return out, nil
}

var deleteDeviceOp = operation{id: "deleteDevice", method: "DELETE", path: "/v1/auth/{app_id}/devices/{id}", summary: "Remove a passkey", tag: "Passkeys",
	auth: authUser, errors: []string{"device_not_found", "verification_required"},
	desc: "Removes one of the signed-in user's passkeys (client SDK `removeDeviceCredential`), named by its id or its credential id. It stops working at once; removing the last one turns the user's `webauthn_enabled` off. Where the app's mfa_policy is optional or required, it needs a sign-in or step-up within mfa_reverify_minutes (else 403 verification_required), as registering one does. Emits `user.updated` and tells the user by e-mail.",
	resp: okBody}

func (s *Server) deleteDevice(ctx context.Context, in *deviceIDInput) (*okOutput, error) {
	if err := s.SignIn.DeletePasskey(ctx, appFrom(ctx), callerFrom(ctx), in.ID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

type loginOptionsInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	UserAgent string `header:"User-Agent" doc:"The caller's user agent: recorded with the session or challenge and shown to the user (sessions list, consent page, push approval)."`
	Body      struct {
		Identifier string   `json:"identifier,omitempty" maxLength:"320" doc:"The user's e-mail or phone: allowCredentials then lists that user's passkeys. Omit it for a discoverable sign-in (conditional UI), where the browser offers the passkeys it holds." example:"ada@example.com"`
		_          struct{} `json:"-" additionalProperties:"true"`
	} `required:"false"`
}

type loginOptionsOutput struct {
	Body struct {
		Options json.RawMessage `json:"options" doc:"PublicKeyCredentialRequestOptionsJSON (not wrapped in publicKey): challenge, timeout, rpId, allowCredentials, userVerification."`
	}
}

var webauthnLoginInitializeOp = operation{id: "webauthnLoginInitialize", method: "POST", path: "/v1/auth/{app_id}/webauthn/login/initialize", summary: "Start a passkey sign-in", tag: "Passkeys",
	auth: authPublicApp, errors: []string{"invalid_identifier", "webauthn_unavailable", "rate_limited"},
	desc: loginInitializeDoc,
	req:  `{"identifier":"ada@example.com"}`,
	resp: `{"options":` + exOptions + `}`}

func (s *Server) webauthnLoginInitialize(ctx context.Context, in *loginOptionsInput) (*loginOptionsOutput, error) {
	opts, err := s.SignIn.BeginPasskeyLogin(ctx, appFrom(ctx), in.Body.Identifier, client(ctx, in.UserAgent))
	if err != nil {
		return nil, err
	}
	out := &loginOptionsOutput{}
	out.Body.Options = opts
	return out, nil
}

var webauthnLoginFinalizeOp = operation{id: "webauthnLoginFinalize", method: "POST", path: "/v1/auth/{app_id}/webauthn/login/finalize", summary: "Finish a passkey sign-in", tag: "Passkeys",
	auth: authPublicApp, errors: []string{"webauthn_verification_error", "webauthn_unavailable", "rate_limited"},
	desc: loginFinalizeDoc,
	req:  exCredential,
	resp: exTokens}

func (s *Server) webauthnLoginFinalize(ctx context.Context, in *credentialInput) (*tokenSetOutput, error) {
	return tokens(s.SignIn.FinishPasskeyLogin(ctx, appFrom(ctx), in.RawBody, client(ctx, in.UserAgent)))
}

type registerInitializeInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Body  struct {
		Identifier string         `json:"identifier" maxLength:"320" doc:"The new user's e-mail address or international phone number." example:"ada@example.com"`
		UserMeta   map[string]any `json:"user_meta,omitempty" doc:"Metadata for the new user; undeclared keys are dropped and reported in user_meta_errors."`
		_          struct{}       `json:"-" additionalProperties:"true"`
	}
}

type registerInitializeOutput struct {
	Body struct {
		UserVerification string             `json:"user_verification" enum:"required,preferred,discouraged" doc:"The requirement passed to the browser (interface §2.10)."`
		Options          json.RawMessage    `json:"options" doc:"PublicKeyCredentialCreationOptionsJSON for navigator.credentials.create (not wrapped in publicKey)."`
		UserMetaErrors   appuser.MetaErrors `json:"user_meta_errors" nullable:"true" doc:"Why metadata keys were dropped, by key; null when none were."`
		UserID           string             `json:"user_id" doc:"The user just created."`
	}
}

var webauthnRegisterInitializeOp = operation{id: "webauthnRegisterInitialize", method: "POST", path: "/v1/auth/{app_id}/webauthn/register/initialize", summary: "Create a user and start a passkey registration", tag: "Passkeys",
	auth: authApp, errors: []string{"invalid_identifier", "user_exists", "webauthn_unavailable"},
	desc: registerInitializeDoc,
	req:  `{"identifier":"ada@example.com","user_meta":{"first_name":"Ada"}}`,
	resp: `{"user_verification":"required","options":` + exOptions + `,"user_meta_errors":null,"user_id":"` + exUserID + `"}`}

func (s *Server) webauthnRegisterInitialize(ctx context.Context, in *registerInitializeInput) (*registerInitializeOutput, error) {
	opts, err := s.SignIn.BeginSignupRegistration(ctx, principalFrom(ctx), appFrom(ctx), in.Body.Identifier, in.Body.UserMeta)
	if err != nil {
		return nil, err
	}
	out := &registerInitializeOutput{}
	out.Body.UserVerification, out.Body.Options, out.Body.UserMetaErrors = opts.UserVerification, opts.Options, opts.MetaErrors
	out.Body.UserID = opts.UserID
	if out.Body.UserMetaErrors == nil {
		out.Body.UserMetaErrors = appuser.MetaErrors{}
	}
	return out, nil
}

type registerFinalizeOutput struct {
	Body struct {
		TokenSet
		Device Device `json:"device" doc:"The passkey just registered."`
	}
}

var webauthnRegisterFinalizeOp = operation{id: "webauthnRegisterFinalize", method: "POST", path: "/v1/auth/{app_id}/webauthn/register/finalize", summary: "Finish a new user's passkey registration", tag: "Passkeys",
	auth: authPublicApp, errors: []string{"webauthn_register_error", "webauthn_unavailable"},
	desc: registerFinalizeDoc,
	req:  exCredential,
	resp: body(func(o *registerFinalizeOutput) {
		o.Body.TokenSet, o.Body.Device = exTokens, exDevice
	})}

func (s *Server) webauthnRegisterFinalize(ctx context.Context, in *credentialInput) (*registerFinalizeOutput, error) {
	set, p, err := s.SignIn.FinishSignupRegistration(ctx, appFrom(ctx), in.RawBody, client(ctx, in.UserAgent))
	ts, err := tokens(set, err)
	if err != nil {
		return nil, err
	}
	out := &registerFinalizeOutput{}
	out.Body.TokenSet, out.Body.Device = ts.Body, deviceOut(p)
	return out, nil
}

var listUserDevicesOp = operation{id: "listUserDevices", method: "GET", path: "/v1/{app_id}/users/{id}/devices", summary: "List a user's passkeys", tag: "Passkeys",
	auth: authApp, errors: []string{"user_not_found"},
	desc: "A user's passkeys, for an administrator.",
	resp: body(func(o *devicesOutput) { o.Body.Devices = []Device{exDevice} })}

var listUserDevicesAppsOp = operation{id: "listUserDevicesApps", method: "GET", path: "/v1/apps/{app_id}/users/{id}/devices", summary: "List a user's passkeys (alternate path)", tag: "Passkeys",
	auth: authApp, errors: []string{"user_not_found"},
	desc: "The same list at the path of the sessions list.",
	resp: body(func(o *devicesOutput) { o.Body.Devices = []Device{exDevice} })}

func (s *Server) userDevices(ctx context.Context, in *userIDInput) (*devicesOutput, error) {
	list, err := s.SignIn.UserPasskeys(ctx, principalFrom(ctx), appFrom(ctx), in.ID)
	if err != nil {
		return nil, err
	}
	out := &devicesOutput{}
	out.Body.Devices = devicesOut(list)
	return out, nil
}

type userDeviceInput struct {
	AppID    string `path:"app_id" doc:"The app id."`
	ID       string `path:"id" doc:"The user id."`
	DeviceID string `path:"device_id" maxLength:"1400" doc:"The device id or its credential id."`
}

var deleteUserDeviceOp = operation{id: "deleteUserDevice", method: "DELETE", path: "/v1/{app_id}/users/{id}/devices/{device_id}", summary: "Remove a user's passkey", tag: "Passkeys",
	auth: authApp, errors: []string{"user_not_found", "device_not_found"},
	desc: "Removes a user's passkey for an administrator (a lost device, say); emits `user.updated`.",
	resp: okBody}

func (s *Server) deleteUserDevice(ctx context.Context, in *userDeviceInput) (*okOutput, error) {
	if err := s.SignIn.DeleteUserPasskey(ctx, principalFrom(ctx), appFrom(ctx), in.ID, in.DeviceID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

const registerDeviceDoc = "Starts adding a passkey to the signed-in user's account (client SDK `addDevice`). " +
	"Send the access token in `X-Authorization`; no body. Hand `options` to `navigator.credentials.create({publicKey})` " +
	"(after decoding its base64url fields) and post the result to `/devices/finalize` within 5 minutes; asking again " +
	"replaces the user's unfinished registration, so only the newest options register. " +
	"`excludeCredentials` lists the user's passkeys, so an authenticator registers once per account. " +
	"Where the app's mfa_policy is optional or required, a passkey is a second factor: adding one needs a sign-in or step-up within mfa_reverify_minutes (else 403 verification_required)."

const finalizeDeviceDoc = "Finishes a registration begun by `/devices/register`: the browser's credential JSON, as " +
	"webauthn-json or `credential.toJSON()` writes it. Verified: the challenge (single use, 5 minutes, this user's), " +
	"the origin (one of the app's `origin` and `allowed_origins`), the RP id hash, user presence, user verification " +
	"when the app requires it, the attestation statement (formats none, packed, fido-u2f, tpm, android-key, apple) and " +
	"that the credential id is not registered already. Answers the stored device; the user's `webauthn_enabled` " +
	"becomes true and `user.updated` is emitted. 400 `webauthn_register_error` says which check failed."

const loginInitializeDoc = "Sign-in options for a passkey. With `identifier`, `allowCredentials` lists that user's " +
	"passkeys (the client SDK compares them with the credentials it stored on this device, and falls back to a code " +
	"or link when none matches); an unknown identifier, or a user without passkeys, gets a stand-in credential " +
	"that is stable for the identifier, so the answer does not reveal who has an account. Without `identifier` the " +
	"sign-in is discoverable (conditional UI). Options for an identifier replace that identifier's earlier unfinished " +
	"ones (the same for every identifier, known or not): only the newest can sign in. A discoverable sign-in replaces " +
	"nothing and can be finished only from the same IP address and user agent that asked for it. No credentials; " +
	"rate limited per IP with the anonymous lookups."

const loginFinalizeDoc = "Finishes a passkey sign-in: the browser's assertion JSON. The body names no user: the " +
	"ceremony is found by the challenge signed in `clientDataJSON` and spent by this request whatever its outcome, " +
	"so an assertion cannot be replayed; any replica can finish what another began. A ceremony replaced by newer " +
	"options for the same identifier, or a discoverable one asked for from another IP address or user agent, is " +
	"refused as an unknown one is. Verified: origin, RP id hash, " +
	"that the passkey is this app's and (for an identifier sign-in) the user's, user presence and verification, the " +
	"signature, the backup flags, and that the signature counter advanced (a counter that goes backwards suspends " +
	"the passkey). Answers a token set (interface §2.8) and emits `challenge.completed`; a refusal is 400 " +
	"`webauthn_verification_error` with `auth.login.failed` and `challenge.failed`."

const registerInitializeDoc = "Interface §4.9, for a backend holding the app's API secret: creates the user " +
	"(`invalid_identifier`; `user_exists` when the identifier has an account: passkeys are added to an existing " +
	"account only from a signed-in session, `/devices/register`) and returns creation options. The browser " +
	"finishes the ceremony at `POST /webauthn/register/finalize`, which signs the new user in. Unlike the seed, " +
	"this route needs the API secret: anyone could otherwise create an account for someone else's address and bind " +
	"a passkey to it."

const registerFinalizeDoc = "Finishes a ceremony begun by `/webauthn/register/initialize` (no credentials: the " +
	"challenge signed in `clientDataJSON` is the capability). Verified as `/devices/finalize` is; answers a token " +
	"set for the new user plus the `device`."
