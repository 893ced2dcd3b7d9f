package httpapi

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// Shapes follow the interface and add the client SDK's names beside them
// (meta and user_meta, service_branding and scute_branding).

// AppPublic is an app's public configuration (interface §2.3, client-compat §3.7).
type AppPublic struct {
	ID                  string          `json:"id" doc:"The app id."`
	Name                string          `json:"name" doc:"The app's name."`
	Slug                string          `json:"slug" doc:"A short name, unique in the workspace."`
	Origin              string          `json:"origin" doc:"The app's web origin."`
	Logo                string          `json:"logo" doc:"URL of the app's logo."`
	LogoDark            string          `json:"logo_dark" doc:"URL of the logo for dark backgrounds."`
	LoginURL            string          `json:"login_url" doc:"Where magic and invitation links land."`
	CallbackURL         string          `json:"callback_url" doc:"Where the app sends users after signing in."`
	PublicSignup        bool            `json:"public_signup" doc:"Whether anyone may sign up."`
	ServiceBranding     bool            `json:"service_branding" doc:"Whether messages and pages show the service's branding."`
	ScuteBranding       bool            `json:"scute_branding" doc:"Same as service_branding (client SDK name)."`
	ProfileManagement   bool            `json:"profile_management" doc:"Whether users may change their own visible_profile metadata."`
	EmailAuthType       string          `json:"email_auth_type" enum:"magic,otp" doc:"What an e-mail sign-in sends: a magic link or a one-time code."`
	AutoRefresh         bool            `json:"auto_refresh" doc:"Whether the client SDK refreshes tokens before they expire."`
	AccessExpiration    int64           `json:"access_expiration" doc:"Access-token lifetime in seconds."`
	RefreshExpiration   int64           `json:"refresh_expiration" doc:"Refresh-token lifetime in seconds."`
	MagicLinkExpiration int64           `json:"magic_link_expiration" doc:"Magic-link lifetime in seconds."`
	RefreshPayload      bool            `json:"refresh_payload" doc:"Token sets include the refresh token (always true)."`
	AllowedIdentifiers  []string        `json:"allowed_identifiers" doc:"Identifiers users may sign in with: email, phone."`
	RequiredIdentifiers []string        `json:"required_identifiers" doc:"Identifiers every user must have."`
	UserMetaDataSchema  []MetaField     `json:"user_meta_data_schema" doc:"The user_meta fields the app declares."`
	OAuthProviders      []OAuthProvider `json:"oauth_providers" doc:"The app's enabled social sign-in providers, for the sign-in buttons: sign in with GET /v1/auth/{app_id}/oauth/authorize?provider={provider}."`
	MFAPolicy           string          `json:"mfa_policy" enum:"off,optional,required" doc:"off: one factor; optional: users who enrolled an authenticator app or a passkey are asked for a second factor; required: every user is."`
	MFAMethodsAllowed   []string        `json:"mfa_methods_allowed" example:"[\"totp\",\"backup_code\",\"webauthn\"]" doc:"The second factors this app accepts."`
	Branding            Branding        `json:"branding" doc:"The hosted pages' look: colours, colour scheme and font (docs/hosted-pages.md)."`
	CreatedAt           time.Time       `json:"created_at" doc:"When it was created (RFC 3339)."`
	UpdatedAt           time.Time       `json:"updated_at" doc:"When it last changed (RFC 3339)."`
}

// Branding is an app's look on the hosted pages; "" is the default.
type Branding struct {
	PrimaryColor        string `json:"primary_color" example:"#2f5bd3" doc:"Buttons, links and focus rings in light mode (#rrggbb); empty: the default."`
	BackgroundColor     string `json:"background_color" example:"#f4f5f7" doc:"The page's background in light mode (#rrggbb); empty: the default."`
	TextColor           string `json:"text_color" example:"#1b1f24" doc:"The text's colour in light mode (#rrggbb); empty: the default."`
	PrimaryColorDark    string `json:"primary_color_dark" example:"#7ea2ff" doc:"Buttons, links and focus rings in dark mode (#rrggbb); empty: the default."`
	BackgroundColorDark string `json:"background_color_dark" example:"#111418" doc:"The page's background in dark mode (#rrggbb); empty: the default."`
	TextColorDark       string `json:"text_color_dark" example:"#e6e8eb" doc:"The text's colour in dark mode (#rrggbb); empty: the default."`
	ColorScheme         string `json:"color_scheme" enum:"auto,light,dark" doc:"auto follows the browser's prefers-color-scheme; light or dark always shows that one."`
	Font                string `json:"font" enum:"system,humanist,geometric,serif,rounded,monospace" doc:"The font stack (fonts on the reader's device; nothing is downloaded)."`
}

func brandingOut(b tenant.Branding) Branding {
	out := Branding{PrimaryColor: b.PrimaryColor, BackgroundColor: b.BackgroundColor, TextColor: b.TextColor,
		PrimaryColorDark: b.PrimaryColorDark, BackgroundColorDark: b.BackgroundColorDark, TextColorDark: b.TextColorDark,
		ColorScheme: b.ColorScheme, Font: b.Font}
	if out.ColorScheme == "" {
		out.ColorScheme = "auto"
	}
	if out.Font == "" {
		out.Font = "system"
	}
	return out
}

// OAuthProvider is an enabled social sign-in provider as the app's public
// data lists it (client-compat §3).
type OAuthProvider struct {
	Provider string `json:"provider" example:"google" doc:"The provider's slug: what signInWithOAuthProvider takes."`
	ID       string `json:"id" example:"google" doc:"The same as provider (some client SDK docs read id)."`
	Type     string `json:"type" enum:"google,apple,microsoft,github,oidc" doc:"The provider type."`
	Name     string `json:"name" example:"Google" doc:"The button's label."`
	Icon     string `json:"icon" example:"/v1/assets/oauth/google.svg" doc:"The button's icon, a path on this server (relative to its base URL)."`
	Color    string `json:"color,omitempty" example:"#4285f4" doc:"The button's colour, when set."`
}

// oauthProvidersPublic is the app's public listing of its providers; a
// failed read lists none (the sign-in form still works by other means).
func (s *Server) oauthProvidersPublic(ctx context.Context, a tenant.App) []OAuthProvider {
	ps, err := s.Social.Public(ctx, a.ID)
	if err != nil {
		s.Log.WarnContext(ctx, "list social sign-in providers", "app_id", a.ID, "err", err)
		return []OAuthProvider{}
	}
	out := make([]OAuthProvider, 0, len(ps))
	for _, p := range ps {
		out = append(out, OAuthProvider{Provider: p.Slug, ID: p.Slug, Type: p.Type, Name: p.Name, Icon: "/v1/assets/oauth/" + p.Type + ".svg", Color: p.Color})
	}
	return out
}

// AppFull is an app as its workspace sees it.
type AppFull struct {
	AppPublic
	WorkspaceID    string   `json:"workspace_id" doc:"The workspace the app belongs to."`
	AllowedOrigins []string `json:"allowed_origins" doc:"Origins, besides origin, allowed to call the API from a browser with credentials."`
	// Passkeys.
	WebauthnRPID             string `json:"webauthn_rp_id" doc:"The WebAuthn RP id; empty means origin's host."`
	WebauthnUserVerification string `json:"webauthn_user_verification" enum:"required,preferred,discouraged" doc:"Whether passkey ceremonies must verify the user."`
	WebauthnAttestation      string `json:"webauthn_attestation" enum:"none,indirect,direct" doc:"Attestation conveyance asked of authenticators."`
	// MFA and challenges.
	MFAReverifyMinutes    int  `json:"mfa_reverify_minutes" doc:"How long a sign-in or step-up counts as recent for changing second factors or identifiers."`
	EnumerationProtection bool `json:"enumeration_protection" doc:"POST /challenges answers an unknown identifier with a decoy instead of user_not_found."`
	// Tokens.
	AccessTokenAlg        string `json:"access_token_alg" enum:"ES256,RS256,EdDSA" doc:"The algorithm that signs this app's access tokens (its own choice or the server default)."`
	AccessTokenAlgDefault bool   `json:"access_token_alg_default" doc:"True when access_token_alg is the server default (tokens.access_token_alg), not the app's own choice."`
	TestIdentities        bool   `json:"test_identities" doc:"The app accepts test identities: never sent anything, signed in with the server's fixed code."`
	// SMS fraud guards, as they apply (the app's own or the server's).
	SMSAllowedCountries        []string `json:"sms_allowed_countries" example:"[\"US\",\"CA\",\"GB\"]" doc:"The countries this app sends SMS to (ISO 3166-1 alpha-2; [\"*\"]: every country)."`
	SMSAllowedCountriesDefault bool     `json:"sms_allowed_countries_default" doc:"True when sms_allowed_countries is the server's sms.allowed_countries, not the app's own list."`
	SMSDailyCap                int      `json:"sms_daily_cap" doc:"SMS this app may send per UTC day (0: no cap)."`
	SMSDailyCapDefault         bool     `json:"sms_daily_cap_default" doc:"True when sms_daily_cap is the server's sms.daily_cap, not the app's own."`
}

// MetaField declares one user_meta key of an app (client-compat §3.7).
type MetaField struct {
	ID                  string `json:"id" doc:"The field id (usually field_name)."`
	Name                string `json:"name" doc:"The label shown to users."`
	FieldName           string `json:"field_name" doc:"The user_meta key: a-z first, then a-z, 0-9 and _."`
	FieldType           string `json:"field_type" enum:"string,text,boolean,integer,date,phone,email,url" doc:"The value type the field takes."`
	VisibleProfile      bool   `json:"visible_profile" doc:"Users see it in their profile and may change it (with profile_management)."`
	VisibleRegistration bool   `json:"visible_registration" doc:"Users give it when signing up."`
	Required            bool   `json:"required" doc:"Users must fill it in (see required_fields)."`
}

func metaFieldsOut(s appuser.Schema) []MetaField {
	out := make([]MetaField, 0, len(s))
	for _, f := range s {
		out = append(out, MetaField{ID: f.ID, Name: f.Name, FieldName: f.FieldName, FieldType: string(f.FieldType),
			VisibleProfile: f.VisibleProfile, VisibleRegistration: f.VisibleRegistration, Required: f.Required})
	}
	return out
}

func schemaIn(fields []MetaField) appuser.Schema {
	out := make(appuser.Schema, 0, len(fields))
	for _, f := range fields {
		out = append(out, appuser.MetaField{ID: f.ID, Name: f.Name, FieldName: f.FieldName, FieldType: appuser.FieldType(f.FieldType),
			VisibleProfile: f.VisibleProfile, VisibleRegistration: f.VisibleRegistration, Required: f.Required})
	}
	return out
}

// RequiredField is a required user_meta field the user has not filled in yet.
type RequiredField struct {
	Field    string `json:"field" doc:"The user_meta key."`
	Required bool   `json:"required" doc:"Always true."`
}

func requiredOut(app tenant.App, meta map[string]any) []RequiredField {
	missing := appuser.SchemaOf(app).RequiredFields(meta)
	out := make([]RequiredField, 0, len(missing))
	for _, f := range missing {
		out = append(out, RequiredField{Field: f.Field, Required: f.Required})
	}
	return out
}

func appPublic(a tenant.App, providers []OAuthProvider) AppPublic {
	schema := metaFieldsOut(appuser.SchemaOf(a))
	return AppPublic{ID: a.ID, Name: a.Name, Slug: a.Slug, Origin: a.Origin, Logo: a.Logo, LogoDark: a.LogoDark,
		LoginURL: a.LoginURL, CallbackURL: a.CallbackURL, PublicSignup: a.PublicSignup, ServiceBranding: a.ServiceBranding,
		ScuteBranding: a.ServiceBranding, ProfileManagement: a.ProfileManagement, EmailAuthType: a.EmailAuthType,
		AutoRefresh: a.AutoRefresh, AccessExpiration: a.AccessExpiration, RefreshExpiration: a.RefreshExpiration,
		MagicLinkExpiration: a.MagicLinkExpiration, RefreshPayload: true, AllowedIdentifiers: nonNil(a.AllowedIdentifiers),
		RequiredIdentifiers: nonNil(a.RequiredIdentifiers), UserMetaDataSchema: schema, OAuthProviders: providers,
		MFAPolicy: string(a.MFAPolicy), MFAMethodsAllowed: nonNil(a.MFAMethodsAllowed), Branding: brandingOut(a.Branding),
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}

func (s *Server) appFull(ctx context.Context, a tenant.App) AppFull {
	out := AppFull{AppPublic: appPublic(a, s.oauthProvidersPublic(ctx, a)), WorkspaceID: a.WorkspaceID, AllowedOrigins: nonNil(a.AllowedOrigins),
		WebauthnRPID: a.WebauthnRPID, WebauthnUserVerification: a.WebauthnUserVerification, WebauthnAttestation: a.WebauthnAttestation,
		MFAReverifyMinutes: a.MFAReverifyMinutes, EnumerationProtection: a.EnumerationProtection,
		AccessTokenAlg: s.Tenants.AccessTokenAlg(a), AccessTokenAlgDefault: a.AccessTokenAlg == "",
		TestIdentities: a.TestIdentities}
	s.smsSettings(ctx, &out, a)
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// User is a user as the API returns it (interface §2.1 with client-compat §3.5).
type User struct {
	ID              string          `json:"id" doc:"App-user id; the uuid claim of the user's access tokens."`
	AppID           string          `json:"app_id" doc:"The app the user belongs to."`
	UserID          string          `json:"user_id" doc:"Base user id: one person across the apps of a workspace."`
	Status          string          `json:"status" enum:"active,pending,inactive,imported" doc:"active; pending (invited, not yet signed in); inactive (deactivated, cannot sign in); imported."`
	Email           *string         `json:"email" doc:"The e-mail address; null when none."`
	EmailVerified   bool            `json:"email_verified" doc:"Whether the user proved the address (a code or link received there)."`
	Phone           *string         `json:"phone" doc:"The phone number (E.164); null when none."`
	PhoneVerified   bool            `json:"phone_verified" doc:"Whether the user proved the number."`
	WebauthnEnabled bool            `json:"webauthn_enabled" doc:"Whether the user has a passkey."`
	WebauthnTypes   []string        `json:"webauthn_types" doc:"The attachments of the user's passkeys: platform, cross-platform."`
	Meta            map[string]any  `json:"meta" doc:"Same as user_meta (client SDK name)."`
	UserMeta        map[string]any  `json:"user_meta" doc:"The app's metadata about the user, by the keys of the app's schema."`
	RequiredFields  []RequiredField `json:"required_fields" doc:"Required metadata fields the user has not filled in yet."`
	Sessions        []Session       `json:"sessions" doc:"The user's live sessions (not expired, not revoked), newest first, as GET /v1/{app_id}/users/{id}/sessions lists them: their ids end a session with DELETE /v1/{app_id}/users/{id}/sessions/{session_id}. Filled by GET /v1/{app_id}/users/{id} (API secret, API key or workspace secret) and by GET /v1/auth/{app_id}/current_user for browser user agents (User-Agent with Mozilla/); an empty array everywhere else (lists, updates, other current_user callers)."`
	Identities      []Identity      `json:"identities" doc:"The user's social sign-in identities, oldest first. Filled where sessions are (GET /v1/{app_id}/users/{id}, and GET /v1/auth/{app_id}/current_user for browser user agents); an empty array everywhere else."`
	SignupDate      time.Time       `json:"signup_date" doc:"When the user was created (RFC 3339)."`
	LastUsedAt      *time.Time      `json:"last_used_at" doc:"When the user last signed in or refreshed a session; null if never."`
	CreatedAt       time.Time       `json:"created_at" doc:"When it was created (RFC 3339)."`
	UpdatedAt       time.Time       `json:"updated_at" doc:"When it last changed (RFC 3339)."`
	Test            bool            `json:"test,omitempty" doc:"Present (true) only for a test identity of an app that accepts them: never sent anything, signed in with the server's fixed code."`
}

// Identity is a user's account at one of the app's social sign-in
// providers (never a provider token: none is kept).
type Identity struct {
	ID         string    `json:"id" doc:"The identity's id: what DELETE …/identities/{id} takes."`
	Provider   string    `json:"provider" example:"google" doc:"The provider's slug in the app."`
	Email      string    `json:"email" doc:"The verified e-mail address the provider last gave, empty when none."`
	CreatedAt  time.Time `json:"created_at" doc:"When it was linked (RFC 3339)."`
	LastUsedAt time.Time `json:"last_used_at" doc:"When it last signed in (RFC 3339)."`
}

func identitiesOut(ids []signin.Identity) []Identity {
	out := make([]Identity, 0, len(ids))
	for _, i := range ids {
		out = append(out, Identity{ID: i.ID, Provider: i.Provider, Email: i.Email, CreatedAt: i.CreatedAt, LastUsedAt: i.LastUsedAt})
	}
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func userOut(app tenant.App, u appuser.User) User {
	meta := u.Meta
	if meta == nil {
		meta = map[string]any{}
	}
	return User{ID: u.ID, AppID: u.AppID, UserID: u.UserID, Status: u.Status, Email: optional(u.Email),
		EmailVerified: u.EmailVerified, Phone: optional(u.Phone), PhoneVerified: u.PhoneVerified,
		WebauthnEnabled: u.WebauthnEnabled, WebauthnTypes: nonNil(u.WebauthnTypes), Meta: meta, UserMeta: meta,
		RequiredFields: requiredOut(app, meta), Sessions: []Session{}, Identities: []Identity{}, SignupDate: u.CreatedAt,
		LastUsedAt: u.LastUsedAt, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt, Test: u.Test}
}

// LookupUser is what an anonymous identifier lookup reveals (client-compat §3.4):
// enough to route a sign-in, no metadata.
type LookupUser struct {
	ID              string          `json:"id" doc:"The user id."`
	Status          string          `json:"status" doc:"active, pending, inactive or imported."`
	Email           *string         `json:"email" doc:"The e-mail address: masked or null without credentials (see the operation)."`
	EmailVerified   bool            `json:"email_verified" doc:"Whether the user proved the address."`
	Phone           *string         `json:"phone" doc:"The phone number: masked or null without credentials (see the operation)."`
	PhoneVerified   bool            `json:"phone_verified" doc:"Whether the user proved the number."`
	WebauthnEnabled bool            `json:"webauthn_enabled" doc:"Whether the user has a passkey."`
	RequiredFields  []RequiredField `json:"required_fields" doc:"Required metadata fields the user has not filled in yet."`
}

func lookupOut(app tenant.App, u *appuser.User) *LookupUser {
	if u == nil {
		return nil
	}
	return &LookupUser{ID: u.ID, Status: u.Status, Email: optional(u.Email), EmailVerified: u.EmailVerified,
		Phone: optional(u.Phone), PhoneVerified: u.PhoneVerified, WebauthnEnabled: u.WebauthnEnabled,
		RequiredFields: requiredOut(app, u.Meta)}
}

// Workspace is a workspace with the caller's membership (interface §2.5).
type Workspace struct {
	ID                  string         `json:"id" doc:"The workspace id."`
	Name                string         `json:"name" doc:"The workspace's name."`
	Slug                string         `json:"slug" doc:"A short unique name."`
	Personal            bool           `json:"personal" doc:"Whether it is a member's personal workspace."`
	Membership          *Membership    `json:"membership,omitempty" doc:"The caller's role in it."`
	Settings            map[string]any `json:"settings" doc:"The workspace's free-form settings."`
	IsPro               bool           `json:"is_pro" doc:"Whether the workspace is on a paid plan (client SDK field)."`
	PublicSignup        bool           `json:"public_signup" doc:"Whether the workspace's apps allow sign-up by default."`
	UserInfoRequirement string         `json:"user_info_requirement" enum:"none,email,full" doc:"What user details the workspace asks for."`
	LogoURL             string         `json:"logo_url" doc:"URL of the workspace's logo."`
	CreatedAt           time.Time      `json:"created_at" doc:"When it was created (RFC 3339)."`
	UpdatedAt           time.Time      `json:"updated_at" doc:"When it last changed (RFC 3339)."`
}

// Membership is the calling member's role in a workspace.
type Membership struct {
	Role      string    `json:"role" enum:"owner,admin,member" doc:"The caller's role."`
	CreatedAt time.Time `json:"created_at" doc:"When the caller joined (RFC 3339)."`
}

func workspaceOut(v tenant.WorkspaceView) Workspace {
	settings := map[string]any{}
	_ = jsonUnmarshal(v.Settings, &settings)
	out := Workspace{ID: v.ID, Name: v.Name, Slug: v.Slug, Personal: v.Personal, Settings: settings, IsPro: v.IsPro,
		PublicSignup: v.PublicSignup, UserInfoRequirement: v.UserInfoRequirement, LogoURL: v.LogoURL,
		CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt}
	if m := v.Membership; m != nil {
		out.Membership = &Membership{Role: m.Role, CreatedAt: m.CreatedAt}
	}
	return out
}

// Member is a workspace member.
type Member struct {
	ID        string    `json:"id" doc:"The member id."`
	Email     string    `json:"email" doc:"The member's e-mail address."`
	Name      string    `json:"name" doc:"The member's name."`
	Role      string    `json:"role" enum:"owner,admin,member" doc:"owner, admin or member. Only owners may grant or remove the owner role."`
	CreatedAt time.Time `json:"created_at" doc:"When it was created (RFC 3339)."`
	UpdatedAt time.Time `json:"updated_at" doc:"When it last changed (RFC 3339)."`
}

func memberOut(m tenant.Member) Member {
	return Member{ID: m.ID, Email: m.Email, Name: m.Name, Role: m.Role, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

// APIKey is an API key; Token is set only in the response that creates it.
type APIKey struct {
	ID        string     `json:"id" doc:"The key id, for DELETE."`
	Nickname  string     `json:"nickname" doc:"A name to tell keys apart."`
	Token     string     `json:"token,omitempty" doc:"The key itself; returned only when it is created."`
	Last4     string     `json:"last4" doc:"The key's last four characters, to tell keys apart."`
	CreatedAt time.Time  `json:"created_at" doc:"When it was created (RFC 3339)."`
	RevokedAt *time.Time `json:"revoked_at,omitempty" doc:"When it was revoked; absent while it works."`
}

func apiKeyOut(k tenant.APIKey, tok string) APIKey {
	return APIKey{ID: k.ID, Nickname: k.Nickname, Token: tok, Last4: k.Last4, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt}
}

// OK is the body of DELETE responses and other acknowledgements.
type OK struct {
	Message string `json:"message" example:"ok" doc:"Always ok."`
}

var okBody = OK{Message: "ok"}

// The CLI prints the API's own shapes, so an operator's script reads the
// same fields from either.

// AppJSON is an app as GET /v1/apps/{app_id} shows it to its workspace.
func (s *Server) AppJSON(ctx context.Context, a tenant.App) AppFull { return s.appFull(ctx, a) }

// UserJSON is a user as the API shows one (its sessions list empty, as in lists).
func UserJSON(app tenant.App, u appuser.User) User { return userOut(app, u) }

// WorkspaceJSON is a workspace as the API shows one (membership absent for the operator).
func WorkspaceJSON(v tenant.WorkspaceView) Workspace { return workspaceOut(v) }

// MemberJSON is a workspace member as the API shows one.
func MemberJSON(m tenant.Member) Member { return memberOut(m) }
