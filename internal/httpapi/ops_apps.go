package httpapi

import (
	"context"
	"reflect"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

type appIDInput struct {
	AppID string `path:"app_id" doc:"App id."`
}

type getAppInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	// Optional: a credential of the app adds test_identities; any other
	// value is ignored. Documented as the operation's optional security.
	Authorization string `header:"Authorization" hidden:"true"`
}

type appPublicOutput struct {
	Body AppRead
}

// AppRead is GET /v1/apps/{app_id}: the public configuration, and for a caller
// with a credential of the app whether it takes test identities.
type AppRead struct {
	AppPublic
	TestIdentities *bool `json:"test_identities,omitempty" doc:"Only with a credential of the app (its API secret, an API key, a workspace secret): the app accepts test identities. Never shown to anonymous readers: it tells where the fixed code works."`
}

var getAppOp = operation{id: "getApp", method: "GET", path: "/v1/apps/{app_id}", summary: "Show an app's public configuration", tag: "Apps",
	auth: authPublicApp, security: []map[string][]string{{}, {schemeAPISecret: {}}},
	desc: "An app's public configuration, as the client SDK reads it before showing a sign-in form: name, branding, identifiers, sign-up and MFA policy, token lifetimes and the user metadata schema. No credentials needed; never anything secret. With a credential of the app in Authorization (its API secret, an API key, a workspace secret; Scute's server SDKs send the secret) the answer adds `test_identities`; any other Authorization is ignored (the client SDK sends its configured secret on every call, right or not). 404 app_not_found for an unknown id.",
	resp: AppRead{AppPublic: exApp.AppPublic, TestIdentities: new(false)}}

func (s *Server) getApp(ctx context.Context, in *getAppInput) (*appPublicOutput, error) {
	a := appFrom(ctx)
	out := &appPublicOutput{Body: AppRead{AppPublic: appPublic(a, s.oauthProvidersPublic(ctx, a))}}
	if in.Authorization != "" {
		// Whether test identities work tells where the fixed code signs in:
		// only for a caller holding a credential of this app.
		if p, err := s.principal(ctx, in.Authorization); err == nil && access.Reaches(p, a.ID, a.WorkspaceID) {
			out.Body.TestIdentities = &a.TestIdentities
		}
	}
	return out, nil
}

// createAPIKeyInput's body is a pointer: huma requires every non-pointer
// body whatever its tags say, and a POST without a body must work here.
type createAPIKeyInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Body  *struct {
		Nickname string `json:"nickname,omitempty" maxLength:"100" doc:"A name to tell keys apart."`
	} `required:"false"`
}

type apiKeyOutput struct {
	Body struct {
		APIKey APIKey `json:"api_key" doc:"The API key, with its token this once."`
	}
}

var createApiKeyOp = operation{id: "createApiKey", method: "POST", path: "/v1/apps/{app_id}/api_keys", summary: "Create an API key", tag: "Apps",
	auth: authApp,
	desc: "Makes an API key for the app and returns it (`token`) this once; only its last four characters are kept in view. An API key may manage the app's users, sessions and webhooks, not its settings or credentials. With the app's API secret or a workspace secret of an owner or admin; API keys may not make keys (403). Body optional.",
	req:  `{"nickname":"CI"}`,
	resp: body(func(o *apiKeyOutput) {
		k := exAPIKey
		k.Token = "ghk_EXAMPLE_not_a_real_key_0000XMPL"
		o.Body.APIKey = k
	})}

func (s *Server) createAPIKey(ctx context.Context, in *createAPIKeyInput) (*apiKeyOutput, error) {
	nickname := ""
	if in.Body != nil {
		nickname = in.Body.Nickname
	}
	tok, rec, err := s.Tenants.CreateAPIKey(ctx, principalFrom(ctx), appFrom(ctx).ID, nickname)
	if err != nil {
		return nil, err
	}
	out := &apiKeyOutput{}
	out.Body.APIKey = apiKeyOut(rec, tok)
	return out, nil
}

type apiKeysOutput struct {
	Body struct {
		APIKeys []APIKey `json:"api_keys" doc:"The app's API keys, newest first, revoked ones included; never their tokens."`
	}
}

var listApiKeysOp = operation{id: "listApiKeys", method: "GET", path: "/v1/apps/{app_id}/api_keys", summary: "List API keys", tag: "Apps",
	auth: authApp,
	desc: "The app's API keys, newest first, revoked ones included (with revoked_at); never their tokens. Credentials as for creating one.",
	resp: body(func(o *apiKeysOutput) { o.Body.APIKeys = []APIKey{exAPIKey} })}

func (s *Server) listAPIKeys(ctx context.Context, _ *appIDInput) (*apiKeysOutput, error) {
	keys, err := s.Tenants.ListAPIKeys(ctx, principalFrom(ctx), appFrom(ctx).ID)
	if err != nil {
		return nil, err
	}
	out := &apiKeysOutput{}
	out.Body.APIKeys = make([]APIKey, 0, len(keys))
	for _, k := range keys {
		out.Body.APIKeys = append(out.Body.APIKeys, apiKeyOut(k, ""))
	}
	return out, nil
}

type appChildInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	ID    string `path:"id" doc:"The id of the item (API key, webhook endpoint, M2M client)."`
}

type okOutput struct {
	Body OK
}

var revokeApiKeyOp = operation{id: "revokeApiKey", method: "DELETE", path: "/v1/apps/{app_id}/api_keys/{id}", summary: "Revoke an API key", tag: "Apps",
	auth: authApp, errors: []string{"api_key_not_found"},
	desc: "Revokes an API key: it is refused from the next request on. Revoking it again answers the same; an unknown id is 404 api_key_not_found. Credentials as for creating one.",
	resp: okBody}

func (s *Server) revokeAPIKey(ctx context.Context, in *appChildInput) (*okOutput, error) {
	if _, err := s.Tenants.RevokeAPIKey(ctx, principalFrom(ctx), appFrom(ctx).ID, in.ID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

// AppSettingsBody is the writable part of an app. Omitted fields keep their value.
type AppSettingsBody struct {
	Name                *string      `json:"name,omitempty" maxLength:"100" doc:"The app's name, shown in messages and on the consent page. Required on create."`
	Slug                *string      `json:"slug,omitempty" maxLength:"64" doc:"A short name, unique in the workspace; derived from name when omitted on create."`
	Origin              *string      `json:"origin,omitempty" doc:"The app's web origin, e.g. https://app.example.com. Required on create."`
	AllowedOrigins      *[]string    `json:"allowed_origins,omitempty" doc:"More origins allowed to call the API from a browser."`
	LoginURL            *string      `json:"login_url,omitempty" doc:"Where magic and invitation links land; defaults to origin."`
	CallbackURL         *string      `json:"callback_url,omitempty" doc:"Where the app wants users sent after signing in (read by the client SDK)."`
	Logo                *string      `json:"logo,omitempty" doc:"URL of the app's logo, shown in messages and on the consent page."`
	LogoDark            *string      `json:"logo_dark,omitempty" doc:"URL of the logo for dark backgrounds."`
	PublicSignup        *bool        `json:"public_signup,omitempty" doc:"Whether anyone may sign up (a code or link to an unknown identifier creates the user); off: only created or invited users sign in."`
	ProfileManagement   *bool        `json:"profile_management,omitempty" doc:"Whether signed-in users may change their own visible_profile metadata (PATCH /current_user/meta)."`
	ServiceBranding     *bool        `json:"service_branding,omitempty" doc:"Whether messages and pages show the service's own branding beside the app's."`
	ScuteBranding       *bool        `json:"scute_branding,omitempty" doc:"Same as service_branding."`
	EmailAuthType       *string      `json:"email_auth_type,omitempty" enum:"magic,otp" doc:"What an e-mail sign-in sends: a magic link or a one-time code."`
	AutoRefresh         *bool        `json:"auto_refresh,omitempty" doc:"Whether the client SDK refreshes tokens before they expire."`
	AccessExpiration    *int64       `json:"access_expiration,omitempty" minimum:"60" maximum:"3600" doc:"Seconds."`
	RefreshExpiration   *int64       `json:"refresh_expiration,omitempty" minimum:"300" maximum:"2592000" doc:"Seconds."`
	MagicLinkExpiration *int64       `json:"magic_link_expiration,omitempty" minimum:"60" maximum:"600" doc:"Seconds."`
	AllowedIdentifiers  *[]string    `json:"allowed_identifiers,omitempty" doc:"Identifiers users may sign in with: email, phone."`
	RequiredIdentifiers *[]string    `json:"required_identifiers,omitempty" doc:"Identifiers every user must have: email, phone."`
	UserMetaDataSchema  *[]MetaField `json:"user_meta_data_schema,omitempty" doc:"The user_meta fields of the app; replaces the whole list."`
	// Passkeys.
	WebauthnRPID             *string `json:"webauthn_rp_id,omitempty" maxLength:"253" doc:"The WebAuthn RP id: a domain that origin and every allowed origin are on (e.g. example.com for https://app.example.com). Empty: origin's host. Passkeys are bound to it: changing it orphans the passkeys registered before."`
	WebauthnUserVerification *string `json:"webauthn_user_verification,omitempty" enum:"required,preferred,discouraged" doc:"Whether passkey ceremonies must verify the user (PIN, biometrics). Default required."`
	WebauthnAttestation      *string `json:"webauthn_attestation,omitempty" enum:"none,indirect,direct" doc:"Attestation conveyance asked of authenticators. Default none."`
	// MFA and challenges.
	MFAPolicy             *string   `json:"mfa_policy,omitempty" enum:"off,optional,required" doc:"Default off. optional: users who enrolled an authenticator app or a passkey are asked for a second factor at every sign-in; required: every user is (by a code of another kind when nothing is enrolled)."`
	MFAMethodsAllowed     *[]string `json:"mfa_methods_allowed,omitempty" example:"[\"totp\",\"backup_code\",\"webauthn\"]" doc:"Second factors accepted: totp, backup_code (or backup_codes), webauthn, push, sms_otp, email_otp. Default totp, backup_code, webauthn."`
	MFAReverifyMinutes    *int      `json:"mfa_reverify_minutes,omitempty" minimum:"5" maximum:"1440" doc:"Minutes a sign-in or step-up counts as recent for changing second factors or identifiers. Default 10."`
	EnumerationProtection *bool     `json:"enumeration_protection,omitempty" doc:"POST /challenges answers an unknown identifier with a decoy (nothing sent) instead of 404 user_not_found. Default false."`
	// Tokens.
	AccessTokenAlg *string `json:"access_token_alg,omitempty" enum:"ES256,RS256,EdDSA,default" doc:"The algorithm that signs the app's access tokens. ES256 (fastest); RS256 when the app's backend verifies tokens with Scute's Python or Ruby server SDK (they accept only RS256; it costs about 1 ms of CPU per token issued, some 20 times an ES256 signature); EdDSA (Ed25519). default follows the server's tokens.access_token_alg. The first key of a newly chosen algorithm is made with the change and published in the JWKS at once."`
	// SMS fraud guards.
	SMSAllowedCountries *[]string `json:"sms_allowed_countries,omitempty" maxItems:"250" example:"[\"US\",\"CA\",\"GB\"]" doc:"Countries this app sends SMS to, as ISO 3166-1 alpha-2 codes of the number's region (+1 876 is JM, not US); [\"*\"] for every country, [] for none, [\"default\"] to follow the server's sms.allowed_countries (the default). SMS to other numbers are refused with 400 phone_country_not_allowed before anything is stored or sent."`
	SMSDailyCap         *int      `json:"sms_daily_cap,omitempty" minimum:"0" maximum:"10000000" doc:"SMS this app may send per UTC day; more are refused with 429 sms_daily_cap_reached and the first refusal of the day emits verification.sms.delivery_failed. 0 follows the server's sms.daily_cap (the default)."`
	// Hosted pages.
	Branding       *BrandingPatch `json:"branding,omitempty" doc:"The hosted sign-in and account pages' look (colours, colour scheme, font); omitted fields keep their value, \"\" returns one to the default. The logo is logo and logo_dark; the \"Secured by Gatehouse\" line is service_branding."`
	TestIdentities *bool          `json:"test_identities,omitempty" doc:"Accept test identities: e-mail addresses and phone numbers matching the server's test_identities patterns (by default local part ending in +scute_test, and +1 NXX 555-0100 to 0199) are never sent anything and sign in with the server's fixed code (default 424242). Anyone who knows the code can sign in as them: never for real users. Default false."`
}

func (b AppSettingsBody) settings() tenant.AppSettings {
	branding := b.ServiceBranding
	if branding == nil {
		branding = b.ScuteBranding
	}
	var schema *appuser.Schema
	if b.UserMetaDataSchema != nil {
		s := schemaIn(*b.UserMetaDataSchema)
		schema = &s
	}
	return tenant.AppSettings{Name: b.Name, Slug: b.Slug, Origin: b.Origin, AllowedOrigins: b.AllowedOrigins,
		LoginURL: b.LoginURL, CallbackURL: b.CallbackURL, Logo: b.Logo, LogoDark: b.LogoDark, PublicSignup: b.PublicSignup,
		ProfileManagement: b.ProfileManagement, ServiceBranding: branding, EmailAuthType: b.EmailAuthType,
		AutoRefresh: b.AutoRefresh, AccessExpiration: b.AccessExpiration, RefreshExpiration: b.RefreshExpiration,
		MagicLinkExpiration: b.MagicLinkExpiration, AllowedIdentifiers: b.AllowedIdentifiers,
		RequiredIdentifiers: b.RequiredIdentifiers, MetaSchema: schema, WebauthnRPID: b.WebauthnRPID,
		WebauthnUserVerification: b.WebauthnUserVerification, WebauthnAttestation: b.WebauthnAttestation,
		MFAPolicy: b.MFAPolicy, MFAMethodsAllowed: b.MFAMethodsAllowed, MFAReverifyMinutes: b.MFAReverifyMinutes,
		EnumerationProtection: b.EnumerationProtection, AccessTokenAlg: b.AccessTokenAlg,
		TestIdentities: b.TestIdentities, SMSAllowedCountries: b.SMSAllowedCountries, SMSDailyCap: b.SMSDailyCap,
		Branding: b.Branding.settings()}
}

// BrandingPatch is a change of an app's branding: omitted fields keep
// their value, "" returns one to the default.
type BrandingPatch struct {
	PrimaryColor        *string `json:"primary_color,omitempty" maxLength:"7" pattern:"^(#[0-9a-fA-F]{6})?$" example:"#2f5bd3" doc:"Buttons, links and focus rings in light mode, as #rrggbb; \"\" for the default (#2f5bd3)."`
	BackgroundColor     *string `json:"background_color,omitempty" maxLength:"7" pattern:"^(#[0-9a-fA-F]{6})?$" example:"#f4f5f7" doc:"The page's background in light mode, as #rrggbb; \"\" for the default."`
	TextColor           *string `json:"text_color,omitempty" maxLength:"7" pattern:"^(#[0-9a-fA-F]{6})?$" example:"#1b1f24" doc:"The text's colour in light mode, as #rrggbb; \"\" for the default."`
	PrimaryColorDark    *string `json:"primary_color_dark,omitempty" maxLength:"7" pattern:"^(#[0-9a-fA-F]{6})?$" example:"#7ea2ff" doc:"Buttons, links and focus rings in dark mode, as #rrggbb; \"\" for the default."`
	BackgroundColorDark *string `json:"background_color_dark,omitempty" maxLength:"7" pattern:"^(#[0-9a-fA-F]{6})?$" example:"#111418" doc:"The page's background in dark mode, as #rrggbb; \"\" for the default."`
	TextColorDark       *string `json:"text_color_dark,omitempty" maxLength:"7" pattern:"^(#[0-9a-fA-F]{6})?$" example:"#e6e8eb" doc:"The text's colour in dark mode, as #rrggbb; \"\" for the default."`
	ColorScheme         *string `json:"color_scheme,omitempty" enum:"auto,light,dark" example:"auto" doc:"auto (the default) follows the browser's prefers-color-scheme; light or dark always shows that one."`
	Font                *string `json:"font,omitempty" enum:"system,humanist,geometric,serif,rounded,monospace" example:"system" doc:"A font stack of fonts installed on the reader's device (nothing is downloaded): system (the default), humanist, geometric, serif, rounded or monospace."`
}

func (b *BrandingPatch) settings() *tenant.BrandingSettings {
	if b == nil {
		return nil
	}
	return &tenant.BrandingSettings{PrimaryColor: b.PrimaryColor, BackgroundColor: b.BackgroundColor, TextColor: b.TextColor,
		PrimaryColorDark: b.PrimaryColorDark, BackgroundColorDark: b.BackgroundColorDark, TextColorDark: b.TextColorDark,
		ColorScheme: b.ColorScheme, Font: b.Font}
}

// AppSettingsPatch is a change of an app's settings in either form the
// SDKs send (server-sdk-compat §4): the settings bare, as Scute's Ruby SDK
// does, or wrapped in "app", as its Python SDK does; not both.
type AppSettingsPatch struct {
	AppSettingsBody
	App *AppSettingsBody `json:"app,omitempty" doc:"The same settings wrapped, instead of bare: {\"app\": {\"mfa_policy\": \"optional\"}}. Not with settings outside it."`
}

// change is the patch's settings, whichever form it came in.
func (p AppSettingsPatch) change() (tenant.AppSettings, error) {
	if p.App == nil {
		return p.AppSettingsBody.settings(), nil
	}
	if !reflect.ValueOf(p.AppSettingsBody).IsZero() {
		return tenant.AppSettings{}, errs.Invalidf("app", "cannot come with settings outside it: send the settings bare or inside app, not both")
	}
	return p.App.settings(), nil
}

type updateOwnAppInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Body  AppSettingsPatch
}

var updateAppOp = operation{id: "updateApp", method: "PATCH", path: "/v1/apps/{app_id}", summary: "Update an app's settings with its own secret", tag: "Apps",
	auth: authApp, errors: []string{"slug_taken", "app_not_found"},
	desc: "Changes an app's settings with the app's own API secret, or a workspace secret of an owner or admin. API keys may not. The settings come bare (`{\"mfa_policy\": \"optional\"}`) or wrapped (`{\"app\": {...}}`), as Scute's server SDKs send them; both forms at once are refused (400 naming `app`), and so is an unknown setting (400 naming it). Same fields and validation as PATCH /v1/workspaces/{workspace_id}/apps/{app_id}.",
	req:  `{"app":{"name":"Demo","mfa_policy":"optional","email_auth_type":"otp"}}`,
	resp: body(func(o *appFullOutput) { o.Body.App = exApp })}

func (s *Server) updateOwnApp(ctx context.Context, in *updateOwnAppInput) (*appFullOutput, error) {
	change, err := in.Body.change()
	if err != nil {
		return nil, err
	}
	a, err := s.Tenants.UpdateOwnApp(ctx, principalFrom(ctx), in.AppID, change)
	if err != nil {
		return nil, err
	}
	out := &appFullOutput{}
	out.Body.App = s.appFull(ctx, a)
	return out, nil
}
