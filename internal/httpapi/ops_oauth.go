package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/social"
)

// OAuthProviderConfig is one of an app's social sign-in providers as the
// API shows it: secrets as a hint, never in clear.
type OAuthProviderConfig struct {
	Slug         string    `json:"slug" example:"google" doc:"Names the provider within the app: what the sign-in link's provider parameter says."`
	Type         string    `json:"type" enum:"google,apple,microsoft,github,oidc" example:"google" doc:"The provider type."`
	Name         string    `json:"name" example:"Google" doc:"The name on the sign-in button: the type's (or, for oidc, the issuer's host) until one is set."`
	Enabled      bool      `json:"enabled" doc:"Offered to the app's users."`
	ClientID     string    `json:"client_id" example:"1234567890-abc.apps.googleusercontent.com" doc:"The client id the provider issued (Apple: the Services ID)."`
	ClientSecret string    `json:"client_secret,omitempty" example:"****XMPL" doc:"A hint of the client secret: the last 4 characters after **** when it has 16 or more, else ********. Not for apple."`
	Issuer       string    `json:"issuer,omitempty" doc:"oidc only: the OpenID issuer, whose discovery document says everything else."`
	Tenant       string    `json:"tenant,omitempty" doc:"microsoft only: common (the default), organizations, consumers, a directory (tenant) id or a domain name."`
	TeamID       string    `json:"team_id,omitempty" doc:"apple only: the Apple developer team id."`
	KeyID        string    `json:"key_id,omitempty" doc:"apple only: the id of the Sign in with Apple key."`
	PrivateKey   string    `json:"private_key,omitempty" doc:"apple only: a hint of the .p8 private key."`
	Scopes       []string  `json:"scopes" example:"[\"openid\",\"email\",\"profile\"]" doc:"The scopes asked for."`
	Color        string    `json:"color,omitempty" example:"#4285f4" doc:"The button's colour, if set."`
	RedirectURI  string    `json:"redirect_uri" example:"https://auth.example.com/v1/auth/app_123/oauth/callback" doc:"The redirect (callback) URI to register with the provider, exactly as shown."`
	CreatedAt    time.Time `json:"created_at" doc:"When it was added (RFC 3339)."`
	UpdatedAt    time.Time `json:"updated_at" doc:"When it last changed (RFC 3339)."`
}

func oauthProviderOut(p social.Provider) OAuthProviderConfig {
	return OAuthProviderConfig{Slug: p.Slug, Type: p.Type, Name: p.Name, Enabled: p.Enabled, ClientID: p.ClientID,
		ClientSecret: p.Settings["client_secret"], Issuer: p.Settings["issuer"], Tenant: p.Settings["tenant"],
		TeamID: p.Settings["team_id"], KeyID: p.Settings["key_id"], PrivateKey: p.Settings["private_key"],
		Scopes: nonNil(p.Scopes), Color: p.Color, RedirectURI: p.RedirectURI, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

var exOAuthProvider = OAuthProviderConfig{Slug: "google", Type: "google", Name: "Google", Enabled: true,
	ClientID: "1234567890-abc.apps.googleusercontent.com", ClientSecret: "****XMPL", Scopes: []string{"openid", "email", "profile"},
	RedirectURI: "https://auth.example.com/v1/auth/app_123/oauth/callback", CreatedAt: exT1, UpdatedAt: exT1}

type oauthProvidersOutput struct {
	Body struct {
		Providers []OAuthProviderConfig `json:"oauth_providers" doc:"The app's social sign-in providers, by slug."`
	}
}

const oauthProvidersDoc = "The app's social sign-in providers (docs/social-sign-in.md), secrets as a hint. " +
	"With the app's API secret, an API key or a workspace secret of a member. " +
	"Signing in through them (`GET /v1/auth/{app_id}/oauth/authorize`) is not served yet: until it is, they are not listed in the app's public data (`oauth_providers` stays empty)."

var listOauthProvidersOp = operation{id: "listOauthProviders", method: "GET", path: "/v1/apps/{app_id}/oauth_providers", summary: "List social sign-in providers", tag: "Apps",
	auth: authAppHidden,
	desc: oauthProvidersDoc,
	resp: body(func(o *oauthProvidersOutput) { o.Body.Providers = []OAuthProviderConfig{exOAuthProvider} })}

func (s *Server) listOAuthProviders(ctx context.Context, _ *appIDInput) (*oauthProvidersOutput, error) {
	ps, err := s.Social.List(ctx, principalFrom(ctx), appFrom(ctx).ID)
	if err != nil {
		return nil, err
	}
	out := &oauthProvidersOutput{}
	out.Body.Providers = make([]OAuthProviderConfig, 0, len(ps))
	for _, p := range ps {
		out.Body.Providers = append(out.Body.Providers, oauthProviderOut(p))
	}
	return out, nil
}

// OAuthProviderBody is a social sign-in provider as PUT: all of it. A
// secret left out, or sent back as its hint, keeps its stored value, unless
// the type, the issuer (oidc) or the tenant (microsoft) changes.
type OAuthProviderBody struct {
	Type         string   `json:"type" enum:"google,apple,microsoft,github,oidc" doc:"The provider type."`
	Enabled      *bool    `json:"enabled,omitempty" doc:"Offered to the app's users; default true."`
	Name         string   `json:"name,omitempty" maxLength:"100" doc:"The name on the sign-in button; default the type's (for oidc, the issuer's host)."`
	ClientID     string   `json:"client_id" maxLength:"255" doc:"The client id the provider issued (Apple: the Services ID)."`
	ClientSecret string   `json:"client_secret,omitempty" maxLength:"8192" doc:"The client secret (not for apple). Required when the provider is created or its type, issuer or tenant changes."`
	Issuer       string   `json:"issuer,omitempty" maxLength:"2048" doc:"oidc only, required: the OpenID issuer (https; http only in development), without a trailing /.well-known path."`
	Tenant       string   `json:"tenant,omitempty" maxLength:"255" doc:"microsoft only: common (default), organizations, consumers, a directory (tenant) id or a domain name."`
	TeamID       string   `json:"team_id,omitempty" maxLength:"10" doc:"apple only, required: the developer team id (10 characters)."`
	KeyID        string   `json:"key_id,omitempty" maxLength:"10" doc:"apple only, required: the Sign in with Apple key's id (10 characters)."`
	PrivateKey   string   `json:"private_key,omitempty" maxLength:"8192" doc:"apple only, required when created: the .p8 key file's contents (PEM, P-256)."`
	Scopes       []string `json:"scopes,omitempty" maxItems:"20" doc:"Scopes to ask for; default the type's (openid email profile; github read:user user:email; apple name email). OpenID types always ask for openid."`
	Color        string   `json:"color,omitempty" doc:"The button's colour, #rrggbb."`
}

type putOAuthProviderInput struct {
	AppID string            `path:"app_id" doc:"The app id."`
	Slug  string            `path:"slug" maxLength:"40" doc:"The provider's slug: 1 to 40 lower-case letters, digits and hyphens."`
	Body  OAuthProviderBody `required:"true"`
}

type oauthProviderOutput struct {
	Status int
	Body   struct {
		Provider OAuthProviderConfig `json:"oauth_provider" doc:"The provider as saved."`
	}
}

var putOauthProviderOp = operation{id: "putOauthProvider", method: "PUT", path: "/v1/apps/{app_id}/oauth_providers/{slug}", summary: "Add or replace a social sign-in provider", tag: "Apps",
	auth: authAppHidden, errors: []string{errorsShape},
	desc: "Adds the provider named by `slug` (201) or replaces it (200). Each type takes its own settings: `google` and `github` a client id and secret; " +
		"`microsoft` also a `tenant`; `oidc` an `issuer` (any conforming OpenID provider: Keycloak, Authentik, Okta, Auth0, Dex, Zitadel…; several per app under different slugs); " +
		"`apple` a Services ID as `client_id`, `team_id`, `key_id` and the `.p8` `private_key` (its client secret is minted from the key). A setting of another type is refused, naming it. " +
		"Secrets are sealed and never shown again: a secret left out or sent back as its hint keeps its value, but a change of type, issuer or tenant needs the secrets sent again (a stored secret never follows a provider to a new destination). " +
		"Register `redirect_uri` from the answer with the provider. Every change is logged with the names of the settings it changed. " +
		"Who may manage the app may: its API secret, or a workspace secret of an owner or admin; not an API key.",
	req:  `{"type":"google","client_id":"1234567890-abc.apps.googleusercontent.com","client_secret":"GOCSPX-example-secret-XMPL"}`,
	resp: body(func(o *oauthProviderOutput) { o.Body.Provider = exOAuthProvider })}

func (s *Server) putOAuthProvider(ctx context.Context, in *putOAuthProviderInput) (*oauthProviderOutput, error) {
	b := in.Body
	enabled := b.Enabled == nil || *b.Enabled
	settings := map[string]string{}
	for name, v := range map[string]string{"client_secret": b.ClientSecret, "issuer": b.Issuer, "tenant": b.Tenant,
		"team_id": b.TeamID, "key_id": b.KeyID, "private_key": b.PrivateKey} {
		if v != "" {
			settings[name] = v
		}
	}
	p, created, err := s.Social.Put(ctx, principalFrom(ctx), appFrom(ctx).ID, social.Change{Slug: in.Slug, Type: b.Type,
		Enabled: enabled, Name: b.Name, ClientID: b.ClientID, Settings: settings, Scopes: strings.Join(b.Scopes, " "), Color: b.Color})
	if err != nil {
		return nil, err
	}
	out := &oauthProviderOutput{Status: http.StatusOK}
	if created {
		out.Status = http.StatusCreated
	}
	out.Body.Provider = oauthProviderOut(p)
	return out, nil
}

type oauthProviderSlugInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Slug  string `path:"slug" maxLength:"40" doc:"The provider's slug."`
}

var deleteOauthProviderOp = operation{id: "deleteOauthProvider", method: "DELETE", path: "/v1/apps/{app_id}/oauth_providers/{slug}", summary: "Delete a social sign-in provider", tag: "Apps",
	auth: authAppHidden, errors: []string{"oauth_provider_not_found"},
	desc: "Deletes the provider: it is no longer offered, and its settings are gone. 404 oauth_provider_not_found when the app has none by that slug. Who may manage the app may.",
	resp: okBody}

func (s *Server) deleteOAuthProvider(ctx context.Context, in *oauthProviderSlugInput) (*okOutput, error) {
	if err := s.Social.Delete(ctx, principalFrom(ctx), appFrom(ctx).ID, in.Slug); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}
