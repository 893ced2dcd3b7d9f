package tenant

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// record appends p's audit entry for c inside tx (docs/audit-log.md).
func (s *Service) record(ctx context.Context, tx *store.Tx, p access.Principal, c audit.Change) error {
	return audit.Record(ctx, tx.Queries, s.clock(), p, c)
}

// appRecord is an app's settings as the audit log keeps them: all of them,
// none secret, by their API names.
type appRecord struct {
	Name                     string          `json:"name"`
	Slug                     string          `json:"slug"`
	Origin                   string          `json:"origin"`
	AllowedOrigins           []string        `json:"allowed_origins"`
	LoginURL                 string          `json:"login_url"`
	CallbackURL              string          `json:"callback_url"`
	Logo                     string          `json:"logo"`
	LogoDark                 string          `json:"logo_dark"`
	PublicSignup             bool            `json:"public_signup"`
	ProfileManagement        bool            `json:"profile_management"`
	ServiceBranding          bool            `json:"service_branding"`
	EmailAuthType            string          `json:"email_auth_type"`
	AutoRefresh              bool            `json:"auto_refresh"`
	AccessExpiration         int64           `json:"access_expiration"`
	RefreshExpiration        int64           `json:"refresh_expiration"`
	MagicLinkExpiration      int64           `json:"magic_link_expiration"`
	AllowedIdentifiers       []string        `json:"allowed_identifiers"`
	RequiredIdentifiers      []string        `json:"required_identifiers"`
	MetaSchema               json.RawMessage `json:"user_meta_data_schema"`
	WebauthnRPID             string          `json:"webauthn_rp_id"`
	WebauthnUserVerification string          `json:"webauthn_user_verification"`
	WebauthnAttestation      string          `json:"webauthn_attestation"`
	MFAPolicy                string          `json:"mfa_policy"`
	MFAMethodsAllowed        []string        `json:"mfa_methods_allowed"`
	MFAReverifyMinutes       int             `json:"mfa_reverify_minutes"`
	EnumerationProtection    bool            `json:"enumeration_protection"`
	AccessTokenAlg           string          `json:"access_token_alg"`
	TestIdentities           bool            `json:"test_identities"`
	SMSAllowedCountries      []string        `json:"sms_allowed_countries"`
	SMSDailyCap              int             `json:"sms_daily_cap"`
	Branding                 Branding        `json:"branding"`
}

func auditApp(a App) appRecord {
	schema := json.RawMessage(a.MetaSchema)
	if !json.Valid(schema) {
		schema = json.RawMessage("[]")
	}
	return appRecord{Name: a.Name, Slug: a.Slug, Origin: a.Origin, AllowedOrigins: a.AllowedOrigins, LoginURL: a.LoginURL,
		CallbackURL: a.CallbackURL, Logo: a.Logo, LogoDark: a.LogoDark, PublicSignup: a.PublicSignup,
		ProfileManagement: a.ProfileManagement, ServiceBranding: a.ServiceBranding, EmailAuthType: a.EmailAuthType,
		AutoRefresh: a.AutoRefresh, AccessExpiration: a.AccessExpiration, RefreshExpiration: a.RefreshExpiration,
		MagicLinkExpiration: a.MagicLinkExpiration, AllowedIdentifiers: a.AllowedIdentifiers, RequiredIdentifiers: a.RequiredIdentifiers,
		MetaSchema: schema, WebauthnRPID: a.WebauthnRPID, WebauthnUserVerification: a.WebauthnUserVerification,
		WebauthnAttestation: a.WebauthnAttestation, MFAPolicy: string(a.MFAPolicy), MFAMethodsAllowed: a.MFAMethodsAllowed,
		MFAReverifyMinutes: a.MFAReverifyMinutes, EnumerationProtection: a.EnumerationProtection, AccessTokenAlg: a.AccessTokenAlg,
		TestIdentities: a.TestIdentities, SMSAllowedCountries: a.SMSAllowedCountries, SMSDailyCap: a.SMSDailyCap,
		Branding: a.Branding}
}

// credentialRecord is an API secret or API key as the audit log keeps it:
// never the secret or key itself.
type credentialRecord struct {
	Name     string     `json:"name"`
	MemberID string     `json:"member_id,omitempty"`
	Revoked  *time.Time `json:"revoked_at,omitempty"`
}

// memberRecord is a workspace member as the audit log keeps it.
type memberRecord struct {
	Email string `json:"email"`
	Name  string `json:"name"`
	Role  string `json:"role"`
}

func auditMember(m Member) memberRecord {
	return memberRecord{Email: m.Email, Name: m.Name, Role: m.Role}
}

// workspaceRecord is a workspace's settings as the audit log keeps them.
type workspaceRecord struct {
	Name                string          `json:"name"`
	Slug                string          `json:"slug"`
	Settings            json.RawMessage `json:"settings"`
	PublicSignup        bool            `json:"public_signup"`
	UserInfoRequirement string          `json:"user_info_requirement"`
	LogoURL             string          `json:"logo_url"`
}

func auditWorkspace(ws Workspace) workspaceRecord {
	settings := json.RawMessage(ws.Settings)
	if !json.Valid(settings) {
		settings = json.RawMessage("{}")
	}
	return workspaceRecord{Name: ws.Name, Slug: ws.Slug, Settings: settings, PublicSignup: ws.PublicSignup,
		UserInfoRequirement: ws.UserInfoRequirement, LogoURL: ws.LogoURL}
}

// AuditEntry is one entry of a workspace's audit log.
type AuditEntry = store.AuditEntry

// AuditFilter narrows the audit log (store.AuditFilter).
type AuditFilter = store.AuditFilter

// Audit log page sizes.
const (
	DefaultAuditPage = 50
	MaxAuditPage     = 200
)

// AuditLog lists a workspace's audit entries that f lets through, newest
// first, for its owners and admins (and the operator). f.Before is the
// cursor: the id of the last entry of the previous page.
func (s *Service) AuditLog(ctx context.Context, p access.Principal, workspaceID string, f AuditFilter) (_ []AuditEntry, err error) {
	defer errs.Wrap(&err, "read audit log")
	if _, err := access.Workspace(ctx, s.db.Queries, p, workspaceID, access.RoleAdmin); err != nil {
		return nil, err
	}
	if f.Before != "" {
		if _, err := uuid.Parse(f.Before); err != nil {
			return nil, errs.Invalidf("cursor", "is not a cursor this log gave")
		}
	}
	switch {
	case f.Limit == 0:
		f.Limit = DefaultAuditPage
	case f.Limit < 1 || f.Limit > MaxAuditPage:
		return nil, errs.Invalidf("limit", "must be 1 to %d", MaxAuditPage)
	}
	if p.Kind == access.KindOperator {
		if _, err := s.db.GetWorkspace(ctx, workspaceID); err != nil {
			return nil, notFound(err, ErrWorkspaceNotFound)
		}
	}
	return s.db.ListAuditEntries(ctx, workspaceID, f)
}
