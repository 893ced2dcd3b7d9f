package social

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/secretset"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/ttlcache"
)

// Errors of the providers.
var (
	// ErrProviderNotFound: the app has no social sign-in provider by that slug.
	ErrProviderNotFound = errors.New("social sign-in provider not found")
	// ErrAppNotFound: the app is gone (deleted meanwhile).
	ErrAppNotFound = errors.New("app not found")
)

// Deps are the Service's collaborators.
type Deps struct {
	DB *store.DB
	// Sealer seals the secret settings, bound to the app and the slug.
	Sealer *token.Sealer
	// CheckURL vets an OpenID issuer when it is saved: https, and no
	// private address outside development (webhook.Policy.CheckURL).
	CheckURL func(ctx context.Context, raw string) (string, error)
	// BaseURL is the server's public URL, for the redirect URI to register.
	BaseURL string
	// HTTP calls the providers: the SSRF-safe egress client (no private
	// address outside development), bounded in time.
	HTTP *http.Client
	// AllowHTTP lets providers' endpoints be http (development only).
	AllowHTTP bool
	// Hasher keys the stored hashes of states and browser bindings, and
	// derives each state's PKCE verifier and nonce.
	Hasher *token.Hasher
	// Limiter bounds the sign-ins an address starts (nil: no limit).
	Limiter ratelimit.Limiter
	// Endpoints are the fixed providers' addresses; zero: their own.
	Endpoints Endpoints
	Now       func() time.Time
	Log       *slog.Logger
}

// Service keeps the apps' social sign-in providers.
type Service struct {
	d    Deps
	now  store.Clock
	log  *slog.Logger
	oidc *OIDC
	// public caches each app's enabled providers for its public data.
	public *ttlcache.Cache[[]PublicProvider]
}

// New returns the Service.
func New(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Endpoints == (Endpoints{}) {
		d.Endpoints = DefaultEndpoints
	}
	if d.HTTP == nil {
		d.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	s := &Service{d: d, now: store.Clock(d.Now), log: d.Log}
	s.public = ttlcache.New[[]PublicProvider](publicTTL, s.now.Now)
	s.oidc = NewOIDC(d.HTTP, s.now.Now, d.AllowHTTP)
	return s
}

// Provider is one of an app's social sign-in providers as shown: secret
// settings as a hint, never in clear.
type Provider struct {
	Slug     string
	Type     string
	Name     string
	Enabled  bool
	ClientID string
	// Settings are the type's other settings (issuer, tenant, team_id,
	// key_id): plain as stored, secret ones (client_secret, private_key) as
	// a hint.
	Settings map[string]string
	Scopes   []string
	Color    string
	// LinkExisting: a first sign-in with this provider may join an existing
	// user with the same e-mail address, when the provider says it verified it.
	LinkExisting bool
	// RedirectURI is the address to register with the provider.
	RedirectURI          string
	CreatedAt, UpdatedAt time.Time
}

// Change is a provider as PUT: the whole of it but its secrets, which are
// kept when left out or sent back as their hint (unless the provider's
// destination or type changes: then they must be sent again).
type Change struct {
	Slug     string
	Type     string
	Enabled  bool
	Name     string
	ClientID string
	// Settings are the type's other settings; a key left out is cleared,
	// except a secret, which is kept.
	Settings map[string]string
	Scopes   string // space-separated; empty: the type's defaults
	Color    string
	// LinkExisting: nil keeps the default, true.
	LinkExisting *bool
}

// RedirectURI is the callback address of app's providers, to register with
// each of them (the same for all: the state says which provider answers).
func (s *Service) RedirectURI(appID string) string {
	return s.d.BaseURL + "/v1/auth/" + appID + "/oauth/callback"
}

func secretsAD(appID, slug string) []byte { return []byte("oauth-provider:" + appID + ":" + slug) }

// SecretHint is how a secret setting is shown (secretset.Hint).
func SecretHint(secret string) string { return secretset.Hint(secret) }

// settings returns a stored provider's settings in clear.
func (s *Service) settings(r store.OAuthProvider) (map[string]string, error) {
	out, err := secretset.Open(s.d.Sealer, r.Config, r.SecretsSealed, secretsAD(r.AppID, r.Slug))
	if err != nil {
		return nil, fmt.Errorf("oauth provider %s: %w", r.Slug, err)
	}
	return out, nil
}

// shown is a stored provider as the API shows it.
func (s *Service) shown(r store.OAuthProvider, settings map[string]string) Provider {
	k, _ := KindOf(r.Type)
	p := Provider{Slug: r.Slug, Type: r.Type, Name: r.Name, Enabled: r.Enabled, ClientID: settings["client_id"],
		Settings: map[string]string{}, Color: settings["color"], RedirectURI: s.RedirectURI(r.AppID),
		LinkExisting: settings["link_existing"] != "false",
		CreatedAt:    r.CreatedAt, UpdatedAt: r.UpdatedAt}
	p.Scopes, _ = k.parseScopes(settings["scopes"])
	for _, f := range k.Fields {
		v, ok := settings[f.Name]
		if !ok {
			continue
		}
		if f.Secret {
			v = SecretHint(v)
		}
		p.Settings[f.Name] = v
	}
	return p
}

// List lists the app's social sign-in providers, secrets as hints. Who may
// read the app may: its secret, its API keys, any member of its workspace.
func (s *Service) List(ctx context.Context, p access.Principal, appID string) (_ []Provider, err error) {
	defer errs.Wrap(&err, "list oauth providers")
	if err := access.App(ctx, s.d.DB.Queries, p, appID, access.Read); err != nil {
		return nil, err
	}
	rows, err := s.d.DB.ListOAuthProviders(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := make([]Provider, 0, len(rows))
	for _, r := range rows {
		settings, err := s.settings(r)
		if err != nil {
			return nil, err
		}
		out = append(out, s.shown(r, settings))
	}
	return out, nil
}

// Put creates or replaces one of the app's providers. Who may manage the
// app may (not its API keys). Every change is logged, with the names of the
// settings it changed and never a secret's value.
func (s *Service) Put(ctx context.Context, p access.Principal, appID string, in Change) (_ Provider, created bool, err error) {
	defer errs.Wrap(&err, "put oauth provider")
	var out Provider
	var changed []string
	err = s.d.DB.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, appID, access.Manage); err != nil {
			return err
		}
		if err := checkSlug(in.Slug); err != nil {
			return err
		}
		k, ok := KindOf(in.Type)
		if !ok {
			return errs.Invalidf("type", "must be one of %s", strings.Join(typeNames(), ", "))
		}
		app, err := tx.LockApp(ctx, appID)
		if err != nil {
			return notFound(err, ErrAppNotFound)
		}
		now := s.now.Now()
		row := store.OAuthProvider{AppID: appID, Slug: in.Slug, CreatedAt: now}
		stored := map[string]string{}
		old, err := tx.GetOAuthProvider(ctx, appID, in.Slug)
		switch {
		case err == nil:
			row = old
			if stored, err = s.settings(old); err != nil {
				return err
			}
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		created = old.Slug == ""
		merged, err := s.merge(ctx, k, old.Type, stored, in)
		if err != nil {
			return err
		}
		name := strings.TrimSpace(in.Name)
		if len(name) > maxName || !printable(name) {
			return errs.Invalidf("name", "must be at most %d printable characters", maxName)
		}
		if name == "" {
			name = defaultName(k, merged)
		}
		changed = diff(k, row, stored, in.Type, name, in.Enabled, merged)
		row.Type, row.Name, row.Enabled, row.UpdatedAt = k.Type, name, in.Enabled, now
		if err := s.seal(&row, k, merged); err != nil {
			return err
		}
		if err := tx.PutOAuthProvider(ctx, row); err != nil {
			return err
		}
		out = s.shown(row, merged)
		var before any
		if !created {
			before = auditProvider(s.shown(old, stored))
		}
		action := "oauth_provider.updated"
		if created {
			action = "oauth_provider.created"
		}
		return audit.Record(ctx, tx.Queries, now, p, audit.Change{WorkspaceID: app.WorkspaceID, AppID: appID, Action: action,
			TargetType: "oauth_provider", TargetID: in.Slug, Before: before, After: auditProvider(out)})
	})
	if err != nil {
		return Provider{}, false, err
	}
	s.public.Forget(appID)
	s.log.InfoContext(ctx, "oauth provider changed", "app_id", appID, "slug", out.Slug, "provider_type", out.Type,
		"enabled", out.Enabled, "created", created, "changed", changed, "by", string(p.Kind), "credential_id", p.CredentialID)
	return out, created, nil
}

// merge is the settings a change makes of the stored ones: the plain ones
// as sent, each secret as sent or, when left out or sent back as its hint,
// as stored, as long as the provider still sends it to the same place.
func (s *Service) merge(ctx context.Context, k Kind, oldType string, stored map[string]string, in Change) (map[string]string, error) {
	out := map[string]string{}
	for name, v := range in.Settings {
		if _, ok := k.field(name); !ok {
			return nil, errs.Invalidf(name, "is not a setting of %s providers", k.Type)
		}
		if v = strings.TrimSpace(v); v != "" {
			out[name] = v
		}
	}
	if id := strings.TrimSpace(in.ClientID); id != "" {
		out["client_id"] = id
	}
	if k.Type == TypeOIDC && out["issuer"] != "" {
		iss, err := s.checkIssuer(ctx, out["issuer"])
		if err != nil {
			return nil, err
		}
		out["issuer"] = iss
	}
	moved := oldType != "" && oldType != k.Type
	for _, f := range k.Destination {
		if !moved && stored[f] != out[f] && oldType != "" {
			moved = true
		}
	}
	for _, f := range k.Fields {
		if !f.Secret {
			continue
		}
		old, had := stored[f.Name]
		v, sent := out[f.Name]
		if sent && (!had || v != SecretHint(old)) {
			continue // a new secret
		}
		switch {
		case had && moved:
			return nil, errs.Invalidf(f.Name, "must be sent again: a stored secret never follows a provider to a new %s", movedWhat(k, oldType))
		case had:
			out[f.Name] = old
		}
	}
	scopes, err := k.parseScopes(in.Scopes)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Scopes) != "" {
		out["scopes"] = strings.Join(scopes, " ")
	}
	if c := strings.TrimSpace(in.Color); c != "" {
		if !colorPattern.MatchString(c) {
			return nil, errs.Invalidf("color", "must be a colour as #rrggbb")
		}
		out["color"] = strings.ToLower(c)
	}
	if in.LinkExisting != nil && !*in.LinkExisting {
		out["link_existing"] = "false"
	}
	settings := maps.Clone(out)
	delete(settings, "scopes")
	delete(settings, "color")
	delete(settings, "link_existing")
	if err := k.checkSettings(settings); err != nil {
		return nil, err
	}
	return out, nil
}

func movedWhat(k Kind, oldType string) string {
	if oldType != k.Type {
		return "type"
	}
	return strings.Join(k.Destination, " or ")
}

// checkIssuer refuses an issuer that is not an absolute https URL (http in
// development) on a public address, without query or fragment; it returns
// it without a trailing slash, as discovery documents name it.
func (s *Service) checkIssuer(ctx context.Context, raw string) (string, error) {
	if strings.ContainsAny(raw, "?#") {
		return "", errs.Invalidf("issuer", "must have no query or fragment")
	}
	if s.d.CheckURL != nil {
		u, err := s.d.CheckURL(ctx, raw)
		if err != nil {
			var inv *errs.Invalid
			if errors.As(err, &inv) {
				return "", errs.Invalidf("issuer", "%s", inv.Reason)
			}
			return "", errs.Invalidf("issuer", "is not allowed")
		}
		raw = u
	} else if !strings.HasPrefix(raw, "https://") {
		return "", errs.Invalidf("issuer", "must use https")
	}
	return strings.TrimRight(raw, "/"), nil
}

// diff names what a change changes, secrets by name only.
func diff(k Kind, row store.OAuthProvider, stored map[string]string, typ, name string, enabled bool, merged map[string]string) []string {
	var out []string
	if row.Type != typ {
		out = append(out, "type")
	}
	if row.Name != name {
		out = append(out, "name")
	}
	if row.Enabled != enabled {
		out = append(out, "enabled")
	}
	keys := slices.Sorted(maps.Keys(merged))
	for name := range stored {
		if _, ok := merged[name]; !ok {
			keys = append(keys, name)
		}
	}
	slices.Sort(keys)
	for _, name := range slices.Compact(keys) {
		if stored[name] != merged[name] {
			out = append(out, name)
		}
	}
	return out
}

// seal stores settings into row: the plain ones as JSON, the secret ones sealed.
func (s *Service) seal(row *store.OAuthProvider, k Kind, settings map[string]string) (err error) {
	row.Config, row.SecretsSealed, err = secretset.Seal(s.d.Sealer, settings, k.secret, secretsAD(row.AppID, row.Slug))
	return err
}

// Delete deletes one of the app's providers. Who may manage the app may.
func (s *Service) Delete(ctx context.Context, p access.Principal, appID, slug string) (err error) {
	defer errs.Wrap(&err, "delete oauth provider")
	err = s.d.DB.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, appID, access.Manage); err != nil {
			return err
		}
		row, err := tx.GetOAuthProvider(ctx, appID, slug)
		if err != nil {
			return notFound(err, ErrProviderNotFound)
		}
		settings, err := s.settings(row)
		if err != nil {
			return err
		}
		app, err := tx.GetApp(ctx, appID)
		if err != nil {
			return notFound(err, ErrAppNotFound)
		}
		if err := notFound(tx.DeleteOAuthProvider(ctx, appID, slug), ErrProviderNotFound); err != nil {
			return err
		}
		return audit.Record(ctx, tx.Queries, s.now.Now(), p, audit.Change{WorkspaceID: app.WorkspaceID, AppID: appID,
			Action: "oauth_provider.deleted", TargetType: "oauth_provider", TargetID: slug, Before: auditProvider(s.shown(row, settings))})
	})
	if err != nil {
		return err
	}
	s.public.Forget(appID)
	s.log.InfoContext(ctx, "oauth provider deleted", "app_id", appID, "slug", slug, "by", string(p.Kind), "credential_id", p.CredentialID)
	return nil
}

// defaultName is a provider's name when none is set: its type's label, or
// for an OpenID provider its issuer's host.
func defaultName(k Kind, settings map[string]string) string {
	if k.Type == TypeOIDC {
		host := strings.TrimPrefix(strings.TrimPrefix(settings["issuer"], "https://"), "http://")
		if i := strings.IndexByte(host, '/'); i >= 0 {
			host = host[:i]
		}
		if host != "" {
			return host
		}
	}
	return k.Label
}

func typeNames() []string {
	out := make([]string, 0, len(Kinds))
	for _, k := range Kinds {
		out = append(out, k.Type)
	}
	return out
}

// notFound maps store.ErrNotFound to the domain error e.
func notFound(err, e error) error {
	if errors.Is(err, store.ErrNotFound) {
		return e
	}
	return err
}

// PublicProvider is an enabled provider as the app's public data lists it
// for the sign-in buttons (client-compat §3): nothing secret.
type PublicProvider struct {
	Slug, Type, Name, Color string
}

// publicTTL is how long another replica's change takes to show in the
// public listing (this process's own changes show at once).
const publicTTL = 30 * time.Second

// Public lists the app's enabled providers, as the app's public data
// shows them; read at most every publicTTL per app.
func (s *Service) Public(ctx context.Context, appID string) ([]PublicProvider, error) {
	v, _, fresh, gen := s.public.Get(appID)
	if fresh {
		return v, nil
	}
	rows, err := s.d.DB.ListOAuthProviders(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := []PublicProvider{}
	for _, r := range rows {
		if !r.Enabled {
			continue
		}
		color := ""
		if settings, err := s.settings(r); err == nil {
			color = settings["color"]
		}
		out = append(out, PublicProvider{Slug: r.Slug, Type: r.Type, Name: r.Name, Color: color})
	}
	s.public.Put(appID, out, gen)
	return out, nil
}

// providerRecord is a provider as the audit log keeps it: secrets as their
// hints, as the API shows them.
type providerRecord struct {
	Type         string            `json:"type"`
	Name         string            `json:"name"`
	Enabled      bool              `json:"enabled"`
	ClientID     string            `json:"client_id"`
	Settings     map[string]string `json:"settings"`
	Scopes       []string          `json:"scopes"`
	Color        string            `json:"color"`
	LinkExisting bool              `json:"link_existing"`
}

func auditProvider(p Provider) providerRecord {
	return providerRecord{Type: p.Type, Name: p.Name, Enabled: p.Enabled, ClientID: p.ClientID, Settings: p.Settings,
		Scopes: p.Scopes, Color: p.Color, LinkExisting: p.LinkExisting}
}
