package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/passkey"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// App is an app as stored.
type App = store.App

// Limits on app settings, in seconds.
const (
	MinAccessExpiration    = 60
	MaxAccessExpiration    = 3600
	MinRefreshExpiration   = 300
	MaxRefreshExpiration   = 30 * 24 * 3600
	MinMagicLinkExpiration = 60
	MaxMagicLinkExpiration = 600
)

// AppSettings are an app's writable settings; nil fields keep their value
// (on create: the default).
type AppSettings struct {
	Name                *string
	Slug                *string
	Origin              *string
	AllowedOrigins      *[]string
	LoginURL            *string
	CallbackURL         *string
	Logo                *string
	LogoDark            *string
	PublicSignup        *bool
	ProfileManagement   *bool
	ServiceBranding     *bool
	EmailAuthType       *string
	AutoRefresh         *bool
	AccessExpiration    *int64
	RefreshExpiration   *int64
	MagicLinkExpiration *int64
	AllowedIdentifiers  *[]string
	RequiredIdentifiers *[]string
	MetaSchema          *appuser.Schema
	// WebAuthn: RP id ("" = the origin's host), user verification and
	// attestation conveyance.
	WebauthnRPID             *string
	WebauthnUserVerification *string
	WebauthnAttestation      *string
	// MFA: policy (off, optional, required), the second factors allowed,
	// the minutes a sign-in counts as recent, and whether POST /challenges
	// hides unknown users.
	MFAPolicy             *string
	MFAMethodsAllowed     *[]string
	MFAReverifyMinutes    *int
	EnumerationProtection *bool
	// AccessTokenAlg signs the app's access tokens: ES256, RS256 or EdDSA;
	// "" or "default" follows the server default.
	AccessTokenAlg *string
	// TestIdentities: the app accepts test identities (never sent anything,
	// signed in with the server's fixed code). Default false.
	TestIdentities *bool
	// SMS fraud guards (applySMS): the countries SMS may go to (["default"]
	// follows the server) and the cap on SMS per UTC day (0 follows the server).
	SMSAllowedCountries *[]string
	SMSDailyCap         *int
	// Branding: the hosted pages' colours, colour scheme and font
	// (branding.go); nil keeps them.
	Branding *BrandingSettings
}

// MFAPolicy is an app's rule for second factors (store.MFAPolicy), and
// MFAPolicies every one of them, for the HTTP layers.
type MFAPolicy = store.MFAPolicy

// The MFA policies.
const (
	MFAPolicyOff      = store.MFAPolicyOff
	MFAPolicyOptional = store.MFAPolicyOptional
	MFAPolicyRequired = store.MFAPolicyRequired
)

// MFAPolicies lists every policy, in the order the API documents them.
var MFAPolicies = store.MFAPolicies

// The methods an app may allow as a second factor (the policies are
// store.MFAPolicies).
var (
	MFAMethods        = []string{"totp", "backup_code", "webauthn", "push", "sms_otp", "email_otp"}
	DefaultMFAMethods = []string{"totp", "backup_code", "webauthn"}
)

// CreateApp creates an app in a workspace; name and origin are required.
// Owners and admins may.
func (s *Service) CreateApp(ctx context.Context, p access.Principal, workspaceID string, in AppSettings) (_ App, err error) {
	defer errs.Wrap(&err, "create app")
	var a App
	var madeKey bool
	pre, err := s.preparedKey(in)
	if err != nil {
		return App{}, err
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := access.Workspace(ctx, tx.Queries, p, workspaceID, access.RoleAdmin); err != nil {
			return err
		}
		if in.Name == nil {
			return errs.Invalidf("name", "is required")
		}
		if in.Origin == nil {
			return errs.Invalidf("origin", "is required")
		}
		now := s.clock()
		a = App{ID: newID(), WorkspaceID: workspaceID, PublicSignup: true, ProfileManagement: true, ServiceBranding: true,
			EmailAuthType: "magic", AutoRefresh: true, AccessExpiration: 900, RefreshExpiration: 7 * 24 * 3600,
			MagicLinkExpiration: 600, AllowedIdentifiers: []string{"email", "phone"}, RequiredIdentifiers: []string{},
			AllowedOrigins: []string{}, MetaSchema: []byte("[]"), WebauthnUserVerification: "required",
			WebauthnAttestation: "none", MFAPolicy: store.MFAPolicyOff, MFAMethodsAllowed: slices.Clone(DefaultMFAMethods),
			MFAReverifyMinutes: 10, CreatedAt: now, UpdatedAt: now}
		if err := apply(&a, in); err != nil {
			return err
		}
		if in.Slug == nil {
			a.Slug = Slugify(a.Name)
		}
		if _, err := tx.GetWorkspace(ctx, workspaceID); err != nil {
			return notFound(err, ErrWorkspaceNotFound)
		}
		if err := conflict(tx.CreateApp(ctx, a), ErrSlugTaken); err != nil {
			return err
		}
		if err := s.record(ctx, tx, p, audit.Change{WorkspaceID: workspaceID, AppID: a.ID, Action: "app.created", TargetType: "app",
			TargetID: a.ID, After: auditApp(a)}); err != nil {
			return err
		}
		madeKey, err = s.keyForApp(ctx, tx, a, pre)
		return err
	})
	if err != nil {
		return App{}, err
	}
	s.reloadIf(ctx, madeKey, a)
	return a, nil
}

// App returns an app for the requests that name it (credential checks, CORS,
// sign-in): from a cache at most AppCacheTTL old.
// Changes made through this Service are seen at once; changes made by another
// replica or the command line, within the TTL. Anyone may read an app's
// public settings, so no principal is asked for.
//
// When the app signs with an algorithm whose key this replica has not
// loaded (another replica made it), the keys are reloaded here, at the
// start of the request: signing happens inside the sign-in's transaction,
// which must not wait for a second connection to read them.
func (s *Service) App(ctx context.Context, id string) (App, error) {
	a, _, fresh, gen := s.apps.Get(id)
	if fresh {
		return a, nil
	}
	a, err := s.GetApp(ctx, id)
	if err != nil {
		return a, err
	}
	if alg := s.AccessTokenAlg(a); !s.keys.Signs(alg) {
		if err := s.keys.Reload(ctx); err != nil {
			s.log.ErrorContext(ctx, "reload signing keys for an app's algorithm", "app_id", a.ID, "alg", alg, "err", err)
		}
	}
	s.apps.Put(a.ID, a, gen)
	return a, nil
}

// GetApp reads an app from the database.
func (s *Service) GetApp(ctx context.Context, id string) (_ App, err error) {
	defer errs.Wrap(&err, "get app")
	a, err := s.db.GetApp(ctx, id)
	return a, notFound(err, ErrAppNotFound)
}

// WorkspaceApp returns an app of a workspace with its private settings; any member may.
func (s *Service) WorkspaceApp(ctx context.Context, p access.Principal, workspaceID, id string) (_ App, err error) {
	defer errs.Wrap(&err, "get workspace app")
	if _, err := access.Workspace(ctx, s.db.Queries, p, workspaceID, access.RoleMember); err != nil {
		return App{}, err
	}
	a, err := s.db.GetApp(ctx, id)
	if err != nil || a.WorkspaceID != workspaceID {
		return App{}, notFound(orNotFound(err), ErrAppNotFound)
	}
	return a, nil
}

// ListApps lists a workspace's apps; any member may. The operator may pass
// "" for every app.
func (s *Service) ListApps(ctx context.Context, p access.Principal, workspaceID string) (_ []App, err error) {
	defer errs.Wrap(&err, "list apps")
	if workspaceID != "" || p.Kind != access.KindOperator {
		if _, err := access.Workspace(ctx, s.db.Queries, p, workspaceID, access.RoleMember); err != nil {
			return nil, err
		}
		if err := s.exists(ctx, p, "", workspaceID); err != nil {
			return nil, err
		}
	}
	return s.db.ListApps(ctx, workspaceID)
}

// UpdateApp applies settings to an app of the workspace. Owners and admins
// may: the caller's role is read in the transaction that writes the app, so
// a caller demoted while its request was on the way is refused.
func (s *Service) UpdateApp(ctx context.Context, p access.Principal, workspaceID, id string, in AppSettings) (_ App, err error) {
	defer errs.Wrap(&err, "update app")
	return s.updateApp(ctx, p, id, in, func(tx *store.Tx, a App) error {
		if _, err := access.Workspace(ctx, tx.Queries, p, workspaceID, access.RoleAdmin); err != nil {
			return err
		}
		if a.WorkspaceID != workspaceID {
			return ErrAppNotFound
		}
		return nil
	})
}

// UpdateOwnApp applies settings to the app a credential belongs to: its own
// API secret (server-sdk-compat §4), or a workspace secret of an owner or
// admin, with the same validation as UpdateApp. API keys may not.
func (s *Service) UpdateOwnApp(ctx context.Context, p access.Principal, id string, in AppSettings) (_ App, err error) {
	defer errs.Wrap(&err, "update app")
	return s.updateApp(ctx, p, id, in, func(tx *store.Tx, _ App) error {
		return access.App(ctx, tx.Queries, p, id, access.Manage)
	})
}

// updateApp locks the app, lets allow refuse the change (reading roles in
// the transaction that writes the app), applies in and stores the app.
func (s *Service) updateApp(ctx context.Context, p access.Principal, id string, in AppSettings, allow func(tx *store.Tx, a App) error) (App, error) {
	var a App
	var madeKey bool
	pre, err := s.preparedKey(in)
	if err != nil {
		return App{}, err
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		a, err = tx.LockApp(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := allow(tx, a); err != nil {
			return err
		}
		if a.ID == "" {
			return ErrAppNotFound
		}
		before := auditApp(a)
		if err := apply(&a, in); err != nil {
			return err
		}
		a.UpdatedAt = s.clock()
		if err := notFound(conflict(tx.UpdateApp(ctx, a), ErrSlugTaken), ErrAppNotFound); err != nil {
			return err
		}
		if err := s.record(ctx, tx, p, audit.Change{WorkspaceID: a.WorkspaceID, AppID: a.ID, Action: "app.updated", TargetType: "app",
			TargetID: a.ID, Before: before, After: auditApp(a)}); err != nil {
			return err
		}
		madeKey, err = s.keyForApp(ctx, tx, a, pre)
		return err
	})
	if err != nil {
		return App{}, err
	}
	s.apps.Forget(id)
	s.reloadIf(ctx, madeKey, a)
	return a, nil
}

// reloadIf reloads the keyring after a change that made a key, so this
// replica signs with it at once (others load it when they first need it or
// serve the JWKS). The change is committed whatever happens here: a failed
// reload is logged, and the next reload (periodic, or the one SignWith
// makes for a key it lacks) recovers.
func (s *Service) reloadIf(ctx context.Context, madeKey bool, a App) {
	if !madeKey {
		return
	}
	s.spent(s.AccessTokenAlg(a))
	if err := s.keys.Reload(ctx); err != nil {
		s.log.ErrorContext(ctx, "reload signing keys after making one", "err", err)
	}
}

// DeleteApp deletes an app of the workspace with all its users and
// credentials. Owners and admins may, as for UpdateApp.
func (s *Service) DeleteApp(ctx context.Context, p access.Principal, workspaceID, id string) (err error) {
	defer errs.Wrap(&err, "delete app")
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := access.Workspace(ctx, tx.Queries, p, workspaceID, access.RoleAdmin); err != nil {
			return err
		}
		a, err := tx.GetApp(ctx, id)
		if err != nil || a.WorkspaceID != workspaceID {
			return notFound(orNotFound(err), ErrAppNotFound)
		}
		if err := notFound(tx.DeleteApp(ctx, workspaceID, id), ErrAppNotFound); err != nil {
			return err
		}
		return s.record(ctx, tx, p, audit.Change{WorkspaceID: workspaceID, AppID: id, Action: "app.deleted", TargetType: "app",
			TargetID: id, Before: auditApp(a)})
	})
	s.apps.Forget(id)
	return err
}

func orNotFound(err error) error {
	if err == nil {
		return store.ErrNotFound
	}
	return err
}

// apply validates and copies every set field of in onto a.
func apply(a *App, in AppSettings) error {
	if in.Name != nil {
		if err := checkName("name", *in.Name); err != nil {
			return err
		}
		a.Name = strings.TrimSpace(*in.Name)
	}
	if in.Slug != nil {
		if !slugRe.MatchString(*in.Slug) {
			return errs.Invalidf("slug", "must be lower-case letters, digits and dashes")
		}
		a.Slug = *in.Slug
	}
	if in.Origin != nil {
		o, err := checkOrigin("origin", *in.Origin)
		if err != nil {
			return err
		}
		a.Origin = o
	}
	if in.AllowedOrigins != nil {
		if len(*in.AllowedOrigins) > 20 {
			return errs.Invalidf("allowed_origins", "must list at most 20 origins")
		}
		out := []string{}
		for _, v := range *in.AllowedOrigins {
			o, err := checkOrigin("allowed_origins", v)
			if err != nil {
				return err
			}
			if !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
		a.AllowedOrigins = out
	}
	if err := applyWebauthn(a, in); err != nil {
		return err
	}
	if err := applyAccessTokenAlg(a, in); err != nil {
		return err
	}
	if err := applyMFA(a, in); err != nil {
		return err
	}
	if err := applySMS(a, in); err != nil {
		return err
	}
	if err := applyBranding(&a.Branding, in.Branding); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		in   *string
		out  *string
	}{{"login_url", in.LoginURL, &a.LoginURL}, {"callback_url", in.CallbackURL, &a.CallbackURL}, {"logo", in.Logo, &a.Logo}, {"logo_dark", in.LogoDark, &a.LogoDark}} {
		if f.in == nil {
			continue
		}
		if *f.in == "" {
			*f.out = ""
			continue
		}
		u, err := checkURL(f.name, *f.in)
		if err != nil {
			return err
		}
		*f.out = u
	}
	for _, f := range []struct {
		in  *bool
		out *bool
	}{{in.PublicSignup, &a.PublicSignup}, {in.ProfileManagement, &a.ProfileManagement}, {in.ServiceBranding, &a.ServiceBranding}, {in.AutoRefresh, &a.AutoRefresh}} {
		if f.in != nil {
			*f.out = *f.in
		}
	}
	if in.EmailAuthType != nil {
		if *in.EmailAuthType != "magic" && *in.EmailAuthType != "otp" {
			return errs.Invalidf("email_auth_type", "must be magic or otp")
		}
		a.EmailAuthType = *in.EmailAuthType
	}
	for _, f := range []struct {
		name     string
		in       *int64
		out      *int64
		min, max int64
	}{
		{"access_expiration", in.AccessExpiration, &a.AccessExpiration, MinAccessExpiration, MaxAccessExpiration},
		{"refresh_expiration", in.RefreshExpiration, &a.RefreshExpiration, MinRefreshExpiration, MaxRefreshExpiration},
		{"magic_link_expiration", in.MagicLinkExpiration, &a.MagicLinkExpiration, MinMagicLinkExpiration, MaxMagicLinkExpiration},
	} {
		if f.in == nil {
			continue
		}
		if *f.in < f.min || *f.in > f.max {
			return errs.Invalidf(f.name, "must be between %d and %d seconds", f.min, f.max)
		}
		*f.out = *f.in
	}
	if a.RefreshExpiration < a.AccessExpiration {
		return errs.Invalidf("refresh_expiration", "must not be shorter than access_expiration")
	}
	if in.AllowedIdentifiers != nil {
		ids, err := checkIdentifierKinds("allowed_identifiers", *in.AllowedIdentifiers)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return errs.Invalidf("allowed_identifiers", "must allow email, phone or both")
		}
		a.AllowedIdentifiers = ids
	}
	if in.RequiredIdentifiers != nil {
		ids, err := checkIdentifierKinds("required_identifiers", *in.RequiredIdentifiers)
		if err != nil {
			return err
		}
		a.RequiredIdentifiers = ids
	}
	for _, r := range a.RequiredIdentifiers {
		if !slices.Contains(a.AllowedIdentifiers, r) {
			return errs.Invalidf("required_identifiers", "must be a subset of allowed_identifiers")
		}
	}
	if in.MetaSchema != nil {
		schema := *in.MetaSchema
		if schema == nil {
			schema = appuser.Schema{}
		}
		if err := appuser.ValidateSchema(schema); err != nil {
			return err
		}
		b, err := json.Marshal(schema)
		if err != nil {
			return err
		}
		a.MetaSchema = b
	}
	return nil
}

func checkIdentifierKinds(field string, in []string) ([]string, error) {
	out := []string{}
	for _, v := range in {
		if v != "email" && v != "phone" {
			return nil, errs.Invalidf(field, "may only contain email and phone")
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// checkOrigin requires a bare http(s) origin: scheme, host and optional port.
func checkOrigin(field, v string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(v))
	// Hostname, not Host: "https://:443" has a host of ":443" but no host name.
	// A zone ("[fe80::1%25eth0]") is no part of any browser's Origin, and would
	// be stored unescaped as a value that no longer parses.
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.Contains(u.Host, "%") {
		return "", errs.Invalidf(field, "must be an origin such as https://app.example.com")
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}

// checkURL requires an absolute http(s) URL of at most 2048 characters, as
// stored: escaping can lengthen it, and a stored value must validate again.
// The query is kept as written, so white space in it (which would break the
// link in a message, and a trailing one was trimmed on the next write) is refused.
func checkURL(field, v string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || len(v) > 2048 ||
		len(u.String()) > 2048 || strings.IndexFunc(u.RawQuery, unicode.IsSpace) >= 0 {
		return "", errs.Invalidf(field, "must be an absolute http or https URL")
	}
	return u.String(), nil
}

// AllowsOrigin reports whether a browser origin may call the app's endpoints with credentials.
func AllowsOrigin(a App, origin string) bool {
	return origin != "" && (origin == a.Origin || slices.Contains(a.AllowedOrigins, origin))
}

// applyAccessTokenAlg validates and copies the access-token algorithm.
func applyAccessTokenAlg(a *App, in AppSettings) error {
	if in.AccessTokenAlg == nil {
		return nil
	}
	switch alg := *in.AccessTokenAlg; {
	case alg == "" || alg == "default":
		a.AccessTokenAlg = ""
	case token.ValidAlgorithm(alg):
		a.AccessTokenAlg = alg
	default:
		return errs.Invalidf("access_token_alg", "must be one of %s, or default", strings.Join(token.Algorithms, ", "))
	}
	return nil
}

// applyMFA validates and copies the MFA settings.
func applyMFA(a *App, in AppSettings) error {
	if in.MFAPolicy != nil {
		p := store.MFAPolicy(*in.MFAPolicy)
		if !p.Valid() {
			names := make([]string, len(store.MFAPolicies))
			for i, p := range store.MFAPolicies {
				names[i] = string(p)
			}
			return errs.Invalidf("mfa_policy", "must be one of %s", strings.Join(names, ", "))
		}
		a.MFAPolicy = p
	}
	if in.MFAMethodsAllowed != nil {
		out := []string{}
		for _, m := range *in.MFAMethodsAllowed {
			if m == "backup_codes" { // the server SDKs' spelling
				m = "backup_code"
			}
			if !slices.Contains(MFAMethods, m) {
				return errs.Invalidf("mfa_methods_allowed", "must list only %s", strings.Join(MFAMethods, ", "))
			}
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
		if len(out) == 0 {
			return errs.Invalidf("mfa_methods_allowed", "must list at least one method")
		}
		a.MFAMethodsAllowed = out
	}
	if in.MFAReverifyMinutes != nil {
		if *in.MFAReverifyMinutes < 5 || *in.MFAReverifyMinutes > 1440 {
			return errs.Invalidf("mfa_reverify_minutes", "must be between 5 and 1440")
		}
		a.MFAReverifyMinutes = *in.MFAReverifyMinutes
	}
	if in.EnumerationProtection != nil {
		a.EnumerationProtection = *in.EnumerationProtection
	}
	if in.TestIdentities != nil {
		a.TestIdentities = *in.TestIdentities
	}
	return nil
}

// applyWebauthn validates the WebAuthn settings against the app's origins:
// an RP id that is set must be a domain name that every origin is on.
func applyWebauthn(a *App, in AppSettings) error {
	if in.WebauthnUserVerification != nil {
		if !slices.Contains(passkey.UserVerifications, *in.WebauthnUserVerification) {
			return errs.Invalidf("webauthn_user_verification", "must be one of %s", strings.Join(passkey.UserVerifications, ", "))
		}
		a.WebauthnUserVerification = *in.WebauthnUserVerification
	}
	if in.WebauthnAttestation != nil {
		if !slices.Contains(passkey.Attestations, *in.WebauthnAttestation) {
			return errs.Invalidf("webauthn_attestation", "must be one of %s", strings.Join(passkey.Attestations, ", "))
		}
		a.WebauthnAttestation = *in.WebauthnAttestation
	}
	if in.WebauthnRPID != nil {
		a.WebauthnRPID = strings.ToLower(strings.TrimSpace(*in.WebauthnRPID))
	}
	if a.WebauthnRPID != "" {
		if err := passkey.CheckRPID(a.WebauthnRPID, append([]string{a.Origin}, a.AllowedOrigins...)); err != nil {
			return errs.Invalidf("webauthn_rp_id", "is not valid: %s", err.Error())
		}
	}
	return nil
}
