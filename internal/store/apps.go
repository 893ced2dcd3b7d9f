package store

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// App is an application whose users Gatehouse signs in.
type App struct {
	ID                  string
	WorkspaceID         string
	Name                string
	Slug                string
	Origin              string
	AllowedOrigins      []string
	LoginURL            string
	CallbackURL         string
	Logo                string
	LogoDark            string
	PublicSignup        bool
	ProfileManagement   bool
	ServiceBranding     bool
	EmailAuthType       string
	AutoRefresh         bool
	AccessExpiration    int64 // seconds
	RefreshExpiration   int64 // seconds
	MagicLinkExpiration int64 // seconds
	AllowedIdentifiers  []string
	RequiredIdentifiers []string
	MetaSchema          []byte // JSON array of field declarations
	// WebAuthn settings: the RP id ("" = the origin's host), user
	// verification (required, preferred, discouraged) and attestation
	// conveyance (none, indirect, direct).
	WebauthnRPID             string
	WebauthnUserVerification string
	WebauthnAttestation      string
	// MFA: the policy (off, optional, required), the second factors allowed,
	// how long a sign-in or step-up counts as recent for sensitive changes,
	// and whether POST /challenges hides unknown users.
	MFAPolicy             MFAPolicy
	MFAMethodsAllowed     []string
	MFAReverifyMinutes    int
	EnumerationProtection bool
	// AccessTokenAlg signs the app's access tokens (ES256, RS256, EdDSA);
	// "" follows the server default.
	AccessTokenAlg string
	// TestIdentities: the app accepts test identities (appuser.TestIdentities).
	TestIdentities bool
	// SMSAllowedCountries are the ISO 3166-1 alpha-2 codes of the countries
	// the app sends SMS to ("*": every country); nil follows the server's
	// sms.allowed_countries. SMSDailyCap is the app's own cap on SMS per UTC
	// day; 0 follows sms.daily_cap.
	SMSAllowedCountries []string
	SMSDailyCap         int
	// Branding is the hosted pages' look (issue 27), validated by tenant.
	Branding  Branding
	CreatedAt time.Time
	UpdatedAt time.Time
}

// MFAPolicy is an app's rule for second factors: the one list of them, and
// the one check (Valid) that settings pass through.
type MFAPolicy string

// MFA policies.
const (
	// MFAPolicyOff: one factor.
	MFAPolicyOff MFAPolicy = "off"
	// MFAPolicyOptional: users who enrolled an authenticator app or a
	// passkey are asked for a second factor at every sign-in.
	MFAPolicyOptional MFAPolicy = "optional"
	// MFAPolicyRequired: every user is.
	MFAPolicyRequired MFAPolicy = "required"
)

// MFAPolicies lists every policy, in the order the API documents them.
var MFAPolicies = []MFAPolicy{MFAPolicyOff, MFAPolicyOptional, MFAPolicyRequired}

// Valid reports whether p is one of MFAPolicies.
func (p MFAPolicy) Valid() bool { return slices.Contains(MFAPolicies, p) }

// SecondFactor reports whether the policy asks any user for a second factor.
func (p MFAPolicy) SecondFactor() bool { return p == MFAPolicyOptional || p == MFAPolicyRequired }

const appColumns = `id, workspace_id, name, slug, origin, allowed_origins, login_url, callback_url, logo, logo_dark,
	public_signup, profile_management, service_branding, email_auth_type, auto_refresh, access_expiration,
	refresh_expiration, magic_link_expiration, allowed_identifiers, required_identifiers, user_meta_data_schema,
	created_at, updated_at, webauthn_rp_id, webauthn_user_verification, webauthn_attestation,
	mfa_policy, mfa_methods_allowed, mfa_reverify_minutes, enumeration_protection, access_token_alg, test_identities,
	sms_allowed_countries, sms_daily_cap, branding`

func scanApp(r row) (App, error) {
	var a App
	var origins, allowed, required, mfaMethods, smsCountries, branding []byte
	err := r.Scan(&a.ID, &a.WorkspaceID, &a.Name, &a.Slug, &a.Origin, &origins, &a.LoginURL, &a.CallbackURL,
		&a.Logo, &a.LogoDark, &a.PublicSignup, &a.ProfileManagement, &a.ServiceBranding, &a.EmailAuthType,
		&a.AutoRefresh, &a.AccessExpiration, &a.RefreshExpiration, &a.MagicLinkExpiration, &allowed, &required,
		&a.MetaSchema, &a.CreatedAt, &a.UpdatedAt, &a.WebauthnRPID, &a.WebauthnUserVerification, &a.WebauthnAttestation,
		&a.MFAPolicy, &mfaMethods, &a.MFAReverifyMinutes, &a.EnumerationProtection, &a.AccessTokenAlg, &a.TestIdentities,
		&smsCountries, &a.SMSDailyCap, &branding)
	if err != nil {
		return a, err
	}
	_ = json.Unmarshal(branding, &a.Branding) // written by brandingJSON; anything else is the default look
	a.MFAMethodsAllowed = parseStrings(mfaMethods)
	if len(smsCountries) > 0 {
		a.SMSAllowedCountries = parseStrings(smsCountries)
	}
	a.AllowedOrigins, a.AllowedIdentifiers, a.RequiredIdentifiers = parseStrings(origins), parseStrings(allowed), parseStrings(required)
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	return a, nil
}

func appArgs(a App) []any {
	return []any{a.ID, a.WorkspaceID, a.Name, a.Slug, a.Origin, jsonStrings(a.AllowedOrigins), a.LoginURL,
		a.CallbackURL, a.Logo, a.LogoDark, a.PublicSignup, a.ProfileManagement, a.ServiceBranding, a.EmailAuthType,
		a.AutoRefresh, a.AccessExpiration, a.RefreshExpiration, a.MagicLinkExpiration,
		jsonStrings(a.AllowedIdentifiers), jsonStrings(a.RequiredIdentifiers), string(jsonOr(a.MetaSchema, "[]")),
		ts(a.CreatedAt), ts(a.UpdatedAt), a.WebauthnRPID, a.WebauthnUserVerification, a.WebauthnAttestation,
		a.MFAPolicy, jsonStrings(a.MFAMethodsAllowed), a.MFAReverifyMinutes, a.EnumerationProtection, a.AccessTokenAlg, a.TestIdentities,
		smsCountries(a.SMSAllowedCountries), a.SMSDailyCap, brandingJSON(a.Branding)}
}

// Branding is an app's look on the hosted pages: colours as #rrggbb ("" is
// the default), the colour scheme (auto, light, dark; "" is auto) and a
// font of tenant's allow-list ("" is the system font).
type Branding struct {
	PrimaryColor        string `json:"primary_color,omitempty"`
	BackgroundColor     string `json:"background_color,omitempty"`
	TextColor           string `json:"text_color,omitempty"`
	PrimaryColorDark    string `json:"primary_color_dark,omitempty"`
	BackgroundColorDark string `json:"background_color_dark,omitempty"`
	TextColorDark       string `json:"text_color_dark,omitempty"`
	ColorScheme         string `json:"color_scheme,omitempty"`
	Font                string `json:"font,omitempty"`
}

func brandingJSON(b Branding) string {
	out, err := json.Marshal(b)
	if err != nil {
		return "{}"
	}
	return string(out)
}

// smsCountries stores an app's SMS countries: "" (nil) follows the server default.
func smsCountries(c []string) string {
	if c == nil {
		return ""
	}
	return jsonStrings(c)
}

// CreateApp inserts a. A duplicate slug within the workspace is ErrConflict.
func (q Queries) CreateApp(ctx context.Context, a App) error {
	_, err := q.w.exec(ctx, `INSERT INTO apps (`+appColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
		$11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32,
		$33, $34, $35)`, appArgs(a)...)
	return err
}

// GetApp returns one app or ErrNotFound.
func (q Queries) GetApp(ctx context.Context, id string) (App, error) {
	return scanApp(q.r.queryRow(ctx, `SELECT `+appColumns+` FROM apps WHERE id = $1`, id))
}

// LockApp reads an app and, on PostgreSQL, locks its row until the
// transaction ends, so concurrent changes to its settings apply one after
// the other instead of the last overwriting the first.
func (q Queries) LockApp(ctx context.Context, id string) (App, error) {
	return scanApp(q.w.queryRow(ctx, `SELECT `+appColumns+` FROM apps WHERE id = $1`+q.d.forUpdate, id))
}

// ListApps returns a workspace's apps (every app when workspaceID is ""), oldest first.
func (q Queries) ListApps(ctx context.Context, workspaceID string) ([]App, error) {
	// Every app ("") is every tenant's: not the console's built-in app.
	rs, err := q.r.query(ctx, `SELECT `+appColumns+` FROM apps WHERE ($1 = '' AND workspace_id NOT IN
		(SELECT id FROM workspaces WHERE slug = '`+ConsoleWorkspaceSlug+`') OR workspace_id = $1) ORDER BY created_at, id`, workspaceID)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanApp)
}

// UpdateApp writes every mutable field of a (not its id, workspace or creation time).
func (q Queries) UpdateApp(ctx context.Context, a App) error {
	n, err := q.w.exec(ctx, `UPDATE apps SET name = $3, slug = $4, origin = $5, allowed_origins = $6, login_url = $7,
		callback_url = $8, logo = $9, logo_dark = $10, public_signup = $11, profile_management = $12,
		service_branding = $13, email_auth_type = $14, auto_refresh = $15, access_expiration = $16,
		refresh_expiration = $17, magic_link_expiration = $18, allowed_identifiers = $19, required_identifiers = $20,
		user_meta_data_schema = $21, updated_at = $22, webauthn_rp_id = $23, webauthn_user_verification = $24,
		webauthn_attestation = $25, mfa_policy = $26, mfa_methods_allowed = $27, mfa_reverify_minutes = $28,
		enumeration_protection = $29, access_token_alg = $30, test_identities = $31,
		sms_allowed_countries = $32, sms_daily_cap = $33, branding = $34 WHERE id = $1 AND workspace_id = $2`,
		a.ID, a.WorkspaceID, a.Name, a.Slug, a.Origin, jsonStrings(a.AllowedOrigins), a.LoginURL,
		a.CallbackURL, a.Logo, a.LogoDark, a.PublicSignup, a.ProfileManagement, a.ServiceBranding, a.EmailAuthType,
		a.AutoRefresh, a.AccessExpiration, a.RefreshExpiration, a.MagicLinkExpiration,
		jsonStrings(a.AllowedIdentifiers), jsonStrings(a.RequiredIdentifiers), string(jsonOr(a.MetaSchema, "[]")),
		ts(a.UpdatedAt), a.WebauthnRPID, a.WebauthnUserVerification, a.WebauthnAttestation,
		a.MFAPolicy, jsonStrings(a.MFAMethodsAllowed), a.MFAReverifyMinutes, a.EnumerationProtection, a.AccessTokenAlg, a.TestIdentities,
		smsCountries(a.SMSAllowedCountries), a.SMSDailyCap, brandingJSON(a.Branding))
	return affected(n, err)
}

// DeleteApp removes an app and everything that belongs to it.
func (q Queries) DeleteApp(ctx context.Context, workspaceID, id string) error {
	// app_users reference base_users without cascade, so the app's users go first.
	if _, err := q.w.exec(ctx, `DELETE FROM app_users WHERE app_id = $1 AND app_id IN (SELECT id FROM apps WHERE workspace_id = $2)`, id, workspaceID); err != nil {
		return err
	}
	n, err := q.w.exec(ctx, `DELETE FROM apps WHERE workspace_id = $1 AND id = $2`, workspaceID, id)
	return affected(n, err)
}

// AccessTokenAlgs lists the algorithms apps chose for their access tokens
// (not counting those that follow the server default).
func (q Queries) AccessTokenAlgs(ctx context.Context) ([]string, error) {
	rs, err := q.r.query(ctx, `SELECT DISTINCT access_token_alg FROM apps WHERE access_token_alg <> '' ORDER BY access_token_alg`)
	if err != nil {
		return nil, err
	}
	return collect(rs, func(r row) (string, error) {
		var alg string
		return alg, r.Scan(&alg)
	})
}

// MaxTokenLifetime is the longest access or refresh lifetime any app sets, in seconds.
func (q Queries) MaxTokenLifetime(ctx context.Context) (int64, error) {
	var access, refresh *int64
	err := q.r.queryRow(ctx, `SELECT MAX(access_expiration), MAX(refresh_expiration) FROM apps`).Scan(&access, &refresh)
	if err != nil {
		return 0, err
	}
	var m int64
	if access != nil {
		m = max(m, *access)
	}
	if refresh != nil {
		m = max(m, *refresh)
	}
	return m, nil
}
