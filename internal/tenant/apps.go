package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/store"
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
}

// CreateApp creates an app in a workspace; name and origin are required.
func (s *Service) CreateApp(ctx context.Context, workspaceID string, in AppSettings) (App, error) {
	if in.Name == nil {
		return App{}, invalid("name", "is required")
	}
	if in.Origin == nil {
		return App{}, invalid("origin", "is required")
	}
	now := s.clock()
	a := App{ID: newID(), WorkspaceID: workspaceID, PublicSignup: true, ProfileManagement: true, ServiceBranding: true,
		EmailAuthType: "magic", AutoRefresh: true, AccessExpiration: 900, RefreshExpiration: 7 * 24 * 3600,
		MagicLinkExpiration: 600, AllowedIdentifiers: []string{"email", "phone"}, RequiredIdentifiers: []string{},
		AllowedOrigins: []string{}, MetaSchema: []byte("[]"), CreatedAt: now, UpdatedAt: now}
	if err := apply(&a, in); err != nil {
		return App{}, err
	}
	if in.Slug == nil {
		a.Slug = Slugify(a.Name)
	}
	if _, err := s.GetWorkspace(ctx, workspaceID); err != nil {
		return App{}, err
	}
	if err := s.db.CreateApp(ctx, a); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return App{}, ErrSlugTaken
		}
		return App{}, err
	}
	return a, nil
}

// GetApp returns an app.
func (s *Service) GetApp(ctx context.Context, id string) (App, error) {
	a, err := s.db.GetApp(ctx, id)
	return a, notFound(err, ErrAppNotFound)
}

// ListApps lists a workspace's apps ("" for all, operator use).
func (s *Service) ListApps(ctx context.Context, workspaceID string) ([]App, error) {
	return s.db.ListApps(ctx, workspaceID)
}

// UpdateApp applies settings to an app of the workspace.
func (s *Service) UpdateApp(ctx context.Context, workspaceID, id string, in AppSettings) (App, error) {
	a, err := s.db.GetApp(ctx, id)
	if err != nil || a.WorkspaceID != workspaceID {
		return App{}, notFound(orNotFound(err), ErrAppNotFound)
	}
	if err := apply(&a, in); err != nil {
		return App{}, err
	}
	a.UpdatedAt = s.clock()
	if err := s.db.UpdateApp(ctx, a); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return App{}, ErrSlugTaken
		}
		return App{}, notFound(err, ErrAppNotFound)
	}
	return a, nil
}

// DeleteApp deletes an app of the workspace with all its users and credentials.
func (s *Service) DeleteApp(ctx context.Context, workspaceID, id string) error {
	return notFound(s.db.Tx(ctx, func(tx *store.Tx) error { return tx.DeleteApp(ctx, workspaceID, id) }), ErrAppNotFound)
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
			return invalid("slug", "must be lower-case letters, digits and dashes")
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
			return invalid("allowed_origins", "must list at most 20 origins")
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
			return invalid("email_auth_type", "must be magic or otp")
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
			return invalid(f.name, "must be between %d and %d seconds", f.min, f.max)
		}
		*f.out = *f.in
	}
	if a.RefreshExpiration < a.AccessExpiration {
		return invalid("refresh_expiration", "must not be shorter than access_expiration")
	}
	if in.AllowedIdentifiers != nil {
		ids, err := checkIdentifierKinds("allowed_identifiers", *in.AllowedIdentifiers)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return invalid("allowed_identifiers", "must allow email, phone or both")
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
			return invalid("required_identifiers", "must be a subset of allowed_identifiers")
		}
	}
	if in.MetaSchema != nil {
		schema := *in.MetaSchema
		if schema == nil {
			schema = appuser.Schema{}
		}
		if err := appuser.ValidateSchema(schema); err != nil {
			return invalid("user_meta_data_schema", "%s", strings.TrimPrefix(err.Error(), "user meta schema "))
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
			return nil, invalid(field, "may only contain email and phone")
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
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", invalid(field, "must be an origin such as https://app.example.com")
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}

// checkURL requires an absolute http(s) URL.
func checkURL(field, v string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || len(v) > 2048 {
		return "", invalid(field, "must be an absolute http or https URL")
	}
	return u.String(), nil
}

// AllowsOrigin reports whether a browser origin may call the app's endpoints with credentials.
func AllowsOrigin(a App, origin string) bool {
	return origin != "" && (origin == a.Origin || slices.Contains(a.AllowedOrigins, origin))
}
