package httpapi

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
)

// MessageServiceProvider is one of an app's provider slots (interface §2.4).
type MessageServiceProvider struct {
	ProviderType string            `json:"provider_type" example:"smtp" doc:"The provider type; see the list in the operation's description."`
	Slug         string            `json:"slug" example:"smtp" doc:"Names the provider in PATCH and in the test action: the provider type (one slot per type and app)."`
	Name         string            `json:"name" example:"Acme mail" doc:"A name for people; the type until one is set."`
	Enabled      bool              `json:"enabled" doc:"The app's messages on the provider's channels go through it. One enabled provider per channel; a channel with none uses the server's own provider."`
	Configured   bool              `json:"configured" doc:"Settings were stored for it (false: an empty slot)."`
	Config       map[string]string `json:"config" example:"{\"host\":\"smtp.acme.example\",\"username\":\"mailer\",\"password\":\"****4e9f\",\"from\":\"Acme <no-reply@acme.example>\"}" doc:"Its settings. Secret ones are never returned: they show as a hint, the last 4 characters after **** when the secret has 16 or more, else ********."`
	Channels     []string          `json:"channels" example:"[\"email\"]" doc:"What it sends: email, sms or both."`
	UpdatedAt    *time.Time        `json:"updated_at" doc:"When its settings last changed; null for an empty slot."`
}

func providerOut(p outbound.MessageProvider) MessageServiceProvider {
	chs := make([]string, 0, len(p.Channels))
	for _, c := range p.Channels {
		chs = append(chs, string(c))
	}
	return MessageServiceProvider{ProviderType: p.Type, Slug: p.Slug, Name: p.Name, Enabled: p.Enabled, Configured: p.Configured,
		Config: p.Config, Channels: chs, UpdatedAt: p.UpdatedAt}
}

type providersOutput struct {
	Body struct {
		Providers []MessageServiceProvider `json:"message_service_providers" doc:"The app's e-mail and SMS providers."`
	}
}

var listMessageServiceProvidersOp = operation{id: "listMessageServiceProviders", method: "GET", path: "/v1/apps/{app_id}/message_service_providers", summary: "List message service providers", tag: "Apps",
	auth: authAppHidden,
	desc: listProvidersDoc(),
	resp: body(func(o *providersOutput) {
		o.Body.Providers = []MessageServiceProvider{{ProviderType: "smtp", Slug: "smtp", Name: "Acme mail", Enabled: true, Configured: true,
			Config:   map[string]string{"host": "smtp.example.com", "username": "mailer", "password": "****XMPL", "from": "Demo <no-reply@example.com>"},
			Channels: []string{"email"}, UpdatedAt: &exT1}}
	})}

func (s *Server) listProviders(ctx context.Context, _ *appIDInput) (*providersOutput, error) {
	ps, err := s.Outbound.Providers.List(ctx, principalFrom(ctx), appFrom(ctx).ID)
	if err != nil {
		return nil, err
	}
	out := &providersOutput{}
	out.Body.Providers = make([]MessageServiceProvider, 0, len(ps))
	for _, p := range ps {
		out.Body.Providers = append(out.Body.Providers, providerOut(p))
	}
	return out, nil
}

// ProviderKey names a provider: slug, or one of the names other clients use for it.
type ProviderKey struct {
	Slug         string `json:"slug,omitempty" maxLength:"64" example:"smtp" doc:"The provider's slug (its type)."`
	ProviderKey  string `json:"provider_key,omitempty" maxLength:"64" doc:"Same as slug."`
	Provider     string `json:"provider,omitempty" maxLength:"64" doc:"Same as slug."`
	ProviderType string `json:"provider_type,omitempty" maxLength:"64" doc:"Same as slug."`
}

// key is the slug the body names ("" when none); two different names are refused.
func (k ProviderKey) key() (string, error) {
	var slug string
	for _, v := range []string{k.Slug, k.ProviderKey, k.Provider, k.ProviderType} {
		v = strings.TrimSpace(v)
		switch {
		case v == "":
		case slug == "":
			slug = v
		case v != slug:
			return "", errs.Invalidf("slug", "and provider_key, provider or provider_type name different providers")
		}
	}
	return slug, nil
}

// ProviderPatchBody changes one provider.
type ProviderPatchBody struct {
	ProviderKey
	Name    *string        `json:"name,omitempty" maxLength:"100" doc:"A name for people; \"\" goes back to the type."`
	Enabled *bool          `json:"enabled,omitempty" doc:"true sends the app's messages through it (and disables the app's other providers of the same channel); false stops that."`
	Config  map[string]any `json:"config,omitempty" example:"{\"host\":\"smtp.acme.example\",\"username\":\"mailer\",\"password\":\"s3cret-app-password-4e9f\",\"from\":\"Acme <no-reply@acme.example>\"}" doc:"Settings to change, merged into the stored ones: a key left out keeps its value, \"\" or null clears it. Values are strings (numbers and booleans are taken as their text). A secret sent back as its hint keeps its value."`
}

type updateProviderInput struct {
	AppID string             `path:"app_id" doc:"The app id."`
	Body  *ProviderPatchBody `required:"false"`
}

type providerOutput struct {
	Body struct {
		Provider MessageServiceProvider `json:"message_service_provider" doc:"The provider as saved."`
	}
}

var updateMessageServiceProviderOp = operation{id: "updateMessageServiceProvider", method: "PATCH", path: "/v1/apps/{app_id}/message_service_providers", summary: "Update a message service provider", tag: "Apps",
	auth: authAppHidden, errors: []string{errorsShape, "provider_not_found"},
	desc: updateProviderDoc(),
	req:  `{"slug":"smtp","enabled":true,"config":{"host":"smtp.example.com","username":"mailer","password":"example-password-XMPL","from":"Demo <no-reply@example.com>"}}`,
	resp: body(func(o *providerOutput) {
		o.Body.Provider = MessageServiceProvider{ProviderType: "smtp", Slug: "smtp", Name: "Acme mail", Enabled: true, Configured: true,
			Config:   map[string]string{"host": "smtp.example.com", "username": "mailer", "password": "****XMPL", "from": "Demo <no-reply@example.com>"},
			Channels: []string{"email"}, UpdatedAt: &exT1}
	})}

func (s *Server) updateProvider(ctx context.Context, in *updateProviderInput) (*providerOutput, error) {
	body := in.Body
	if body == nil {
		body = &ProviderPatchBody{}
	}
	slug, err := body.key()
	if err != nil {
		return nil, err
	}
	config := make(map[string]*string, len(body.Config))
	for name, v := range body.Config {
		switch v := v.(type) {
		case nil:
			config[name] = nil
		case string:
			config[name] = &v
		case float64:
			t := strconv.FormatFloat(v, 'f', -1, 64)
			config[name] = &t
		case bool:
			t := strconv.FormatBool(v)
			config[name] = &t
		default:
			return nil, errs.Invalidf("config."+name, "must be a string")
		}
	}
	p, err := s.Outbound.Providers.Update(ctx, principalFrom(ctx), appFrom(ctx).ID,
		outbound.ProviderChange{Slug: slug, Name: body.Name, Enabled: body.Enabled, Config: config})
	if err != nil {
		return nil, err
	}
	out := &providerOutput{}
	out.Body.Provider = providerOut(p)
	return out, nil
}

type testProviderInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Body  struct {
		ProviderKey
		To string `json:"to" maxLength:"320" example:"ops@acme.example" doc:"Where to send it: an e-mail address for an e-mail provider, an international phone number (+…) for an SMS provider."`
	}
}

// ProviderTestResult is what a test message did.
type ProviderTestResult struct {
	Slug              string               `json:"slug" example:"smtp" doc:"The provider that sent it."`
	Channel           string               `json:"channel" example:"email" doc:"email or sms, from the recipient."`
	To                string               `json:"to" example:"o***@acme.example" doc:"The recipient, masked."`
	Delivered         bool                 `json:"delivered" doc:"The provider accepted the message."`
	ProviderMessageID string               `json:"provider_message_id,omitempty" example:"0100019a-4c1e-7d5e" doc:"The provider's id for the message, when it gave one."`
	Failure           *ProviderTestFailure `json:"failure,omitempty" doc:"Why the provider did not take it."`
}

// ProviderTestFailure is a provider's refusal, as classified for retries.
type ProviderTestFailure struct {
	Message           string `json:"message" example:"courier: delivery failed: smtp: 535 authentication failed" doc:"What went wrong (never a secret setting)."`
	Temporary         bool   `json:"temporary" doc:"The same message may go through later (timeouts, rate limits, 5xx): real messages would be retried."`
	RetryAfterSeconds int    `json:"retry_after_seconds,omitempty" doc:"How long the provider asked to wait."`
	Status            int    `json:"status,omitempty" example:"535" doc:"The provider's HTTP status or SMTP reply code."`
	ProviderCode      string `json:"provider_code,omitempty" example:"21211" doc:"The provider's own error code, when it gave one."`
}

type providerTestOutput struct {
	Body struct {
		Test ProviderTestResult `json:"test_message" doc:"What happened to the test message."`
	}
}

var testMessageServiceProviderOp = operation{id: "testMessageServiceProvider", method: "POST", path: "/v1/apps/{app_id}/message_service_providers/test", summary: "Send a test message through a provider", tag: "Apps",
	auth: authAppHidden, errors: []string{"provider_not_found", "rate_limited"},
	desc: testProviderDoc,
	req:  `{"slug":"smtp","to":"ops@example.com"}`,
	resp: body(func(o *providerTestOutput) {
		o.Body.Test = ProviderTestResult{Slug: "smtp", Channel: "email", To: "o***@example.com", Delivered: true, ProviderMessageID: "example-message-id"}
	})}

func (s *Server) testProvider(ctx context.Context, in *testProviderInput) (*providerTestOutput, error) {
	slug, err := in.Body.key()
	if err != nil {
		return nil, err
	}
	r, err := s.Outbound.Providers.Test(ctx, principalFrom(ctx), appFrom(ctx).ID, slug, in.Body.To)
	if err != nil {
		return nil, err
	}
	out := &providerTestOutput{}
	out.Body.Test = ProviderTestResult{Slug: r.Slug, Channel: string(r.Channel), To: r.To, Delivered: r.Delivered,
		ProviderMessageID: r.MessageID}
	if f := r.Error; f != nil {
		out.Body.Test.Failure = &ProviderTestFailure{Message: f.Message, Temporary: f.Temporary, Status: f.Status, ProviderCode: f.Code}
		if f.RetryAfter > 0 {
			out.Body.Test.Failure.RetryAfterSeconds = ratelimit.RetryAfterSeconds(f.RetryAfter)
		}
	}
	return out, nil
}

// providerTypesDoc lists the provider types and their settings, from courier.Kinds.
func providerTypesDoc() string {
	var b strings.Builder
	b.WriteString("Provider types (slugs) and their `config` settings (secret ones are write-only):\n\n")
	for _, k := range courier.Kinds() {
		chs := make([]string, 0, len(k.Channels))
		for _, c := range k.Channels {
			chs = append(chs, string(c))
		}
		b.WriteString("- `" + k.Type + "` (" + strings.Join(chs, ", ") + "): " + k.Description)
		if k.Type == "outbox" {
			b.WriteString(" Listed in development mode only.")
		}
		b.WriteString("\n")
		for _, f := range k.Fields {
			b.WriteString("  - `" + f.Name + "`")
			var notes []string
			if f.Required {
				notes = append(notes, "required")
			}
			if f.Secret {
				notes = append(notes, "secret")
			}
			if len(notes) > 0 {
				b.WriteString(" (" + strings.Join(notes, ", ") + ")")
			}
			b.WriteString(": " + f.Description + "\n")
		}
	}
	return b.String()
}

const providersAuthDoc = "Credentials: `Authorization: Bearer <app API secret or workspace API secret>`, and/or an API key in " +
	"`X-Authorization` (interface §4.5: beside a secret it must be of the same app and adds no right; alone it stands in). " +
	"An app the credential does not reach, whether it exists or not, is 404 `app_not_found`."

func listProvidersDoc() string {
	return "Lists the app's message service providers (interface §4.5): one slot per provider type, configured or not, with its " +
		"`slug`, `enabled`, `config` and `channels`. Secret settings are never returned, only a hint (`****` and the last 4 " +
		"characters when the secret has 16 or more, else `********`). The app's messages on a channel go through its enabled " +
		"provider for that channel, else through the server's own provider.\n\n" +
		"Who may read the app may list them: its API secret, its API keys, any member's workspace secret.\n\n" +
		providersAuthDoc + "\n\n" + providerTypesDoc()
}

func updateProviderDoc() string {
	return "Updates one of the app's providers (interface §4.6), named by `slug` (or `provider_key`, `provider`, " +
		"`provider_type`); without one the answer is 400 `{\"errors\": \"...\"}` (the key is `errors`, as §4.6 has it). " +
		"`config` is merged into the stored settings: a key left out keeps its value, `\"\"` or null clears it, and a secret sent " +
		"back as its hint keeps it. When the change touches `config` or leaves the provider enabled, the settings must make a " +
		"working provider: otherwise 400 `invalid_request` naming the setting (`config.url must be ...`). Enabling a provider " +
		"disables the app's other providers that send one of its channels, in the same change (one provider per channel). " +
		"Changes apply to the app's next message on this replica, within 2 s on the others. Every change is logged (app, slug, " +
		"enabled, the names of the changed settings, never a secret value); no webhook event fits it, so none is sent.\n\n" +
		"Needs the right to manage the app: its API secret, or the workspace secret of an owner or admin; API keys and members get 403. " +
		providersAuthDoc + "\n\n" + providerTypesDoc()
}

const testProviderDoc = "Sends one short test message through one of the app's providers, enabled or not, with its stored settings, " +
	"and answers what happened: `delivered` with the provider's message id, or the `failure` as the send queue would classify it " +
	"(`temporary`, the provider's status and code). The channel follows `to`: an e-mail address or an international phone number; " +
	"it must be one the provider sends. The message names the app and nothing else; no webhook event is sent. At most 10 per app " +
	"and hour (429 `rate_limited` with Retry-After). Needs the right to manage the app, like PATCH. " + providersAuthDoc
