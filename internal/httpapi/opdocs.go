package httpapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
)

// opDoc is what the API reference says of an operation beyond its summary:
// a description where register() or plain() was given none, and examples of
// its request body and of its success response. An example is either a Go
// value (the handler's own output type, so the compiler keeps it in shape)
// or raw JSON in a string; opdocs_test.go validates each against its schema.
type opDoc struct {
	summary string // replaces the one given at registration, when set
	desc    string
	req     any
	resp    any
}

// applyOpDocs fills in the served document after every route is registered:
// the description of each operation that has none, and the request and
// success-response examples. It runs once, from registerRoutes.
func (s *Server) applyOpDocs() {
	for _, item := range s.api.OpenAPI().Paths {
		for _, o := range []*huma.Operation{item.Get, item.Put, item.Post, item.Delete, item.Patch} {
			if o == nil {
				continue
			}
			for _, p := range o.Parameters {
				if p.Description == "" && p.In == "path" {
					p.Description = pathParamDocs[p.Name]
				}
			}
			d, ok := opDocs[o.OperationID]
			if !ok {
				continue
			}
			// smsGuarded() stands in "Summary." for a missing description.
			if stub := o.Summary + "."; d.desc != "" && (o.Description == "" || strings.HasPrefix(o.Description, stub+"\n")) {
				o.Description = d.desc + strings.TrimPrefix(o.Description, stub)
			}
			if d.summary != "" {
				o.Summary = d.summary
			}
			// An example set where the operation is registered stays.
			if d.req != nil && o.RequestBody != nil {
				if mt := o.RequestBody.Content["application/json"]; mt != nil && mt.Example == nil && len(mt.Examples) == 0 {
					mt.Example = exampleValue(d.req)
				}
			}
			if d.resp != nil {
				if mt := successJSON(o); mt != nil && mt.Example == nil && len(mt.Examples) == 0 {
					mt.Example = exampleValue(d.resp)
				}
			}
		}
	}
}

// pathParamDocs describes the path parameters of plain() routes, which
// have no input struct to carry a doc tag.
var pathParamDocs = map[string]string{
	"app_id": "The app id.",
	"code":   "The short code from the SMS.",
	"asset":  "A file of the page: its script or its stylesheet.",
}

// successJSON is the JSON media type of an operation's 2xx answer, if any.
func successJSON(o *huma.Operation) *huma.MediaType {
	for code, r := range o.Responses {
		if strings.HasPrefix(code, "2") && r != nil && r.Content != nil {
			if mt := r.Content["application/json"]; mt != nil {
				return mt
			}
		}
	}
	return nil
}

// exampleValue turns a Go value or raw JSON into plain JSON data, so the
// document shows exactly what the wire carries.
func exampleValue(v any) any {
	raw, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			panic("opdocs: " + err.Error())
		}
		raw = string(b)
	}
	var out any
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		panic("opdocs: bad example JSON: " + err.Error() + ": " + raw)
	}
	return out
}

// body builds an output type's Body with f: ex(func(o *userOutput) { ... }).
func body[O any](f func(*O)) any {
	var o O
	f(&o)
	return reflect.ValueOf(o).FieldByName("Body").Interface()
}

// Example values. Ids, tokens and secrets are obviously made up: the
// tokens below decode to {"alg":"ES256","kid":"example"} and a fake
// signature, and no secret here works anywhere.
var (
	exT0       = time.Date(2026, 11, 26, 9, 30, 0, 0, time.UTC)
	exT1       = exT0.Add(2 * time.Hour)
	exLater    = exT1.Add(15 * time.Minute)
	exAppID    = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a01"
	exWSID     = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a02"
	exUserID   = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a03"
	exEmail    = "ada@example.com"
	exPhone    = "+14155550123"
	exAccess   = "eyJhbGciOiJFUzI1NiIsImtpZCI6ImV4YW1wbGUifQ.eyJ1dWlkIjoiZXhhbXBsZSJ9.ZmFrZS1zaWduYXR1cmU"
	exRefresh  = "eyJhbGciOiJFUzI1NiIsImtpZCI6ImV4YW1wbGUifQ.eyJ0eXAiOiJyZWZyZXNoIn0.ZmFrZS1zaWduYXR1cmU"
	exCSRF     = "example-csrf-0000000000000000"
	exKeyID    = "example-kid-1"
	exChallTok = "example-challenge-token-00000000000000000"
	exMagicTok = "eyJhbGciOiJFUzI1NiIsImtpZCI6ImV4YW1wbGUifQ.eyJ0eXAiOiJtYWdpYyJ9.ZmFrZS1zaWduYXR1cmU"

	exUser = User{ID: exUserID, AppID: exAppID, UserID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a04", Status: "active",
		Email: &exEmail, EmailVerified: true, Phone: nil, WebauthnTypes: []string{},
		Meta: map[string]any{"first_name": "Ada"}, UserMeta: map[string]any{"first_name": "Ada"},
		RequiredFields: []RequiredField{}, Sessions: []Session{}, SignupDate: exT0, LastUsedAt: &exT1,
		CreatedAt: exT0, UpdatedAt: exT1}
	exTokens = TokenSet{Access: exAccess, Refresh: exRefresh, CSRF: exCSRF, AccessExpiresAt: &exLater,
		RefreshExpiresAt: ptr(exT1.Add(30 * 24 * time.Hour)), UserID: exUserID, KeyID: exKeyID, Message: "ok"}
	exSession = Session{ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a05", DisplayName: "Firefox on macOS", Nickname: "Firefox on macOS",
		Type: "otp", UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:133.0) Gecko/20100101 Firefox/133.0",
		UserAgentShortname: "Firefox", Platform: "macOS", Browser: "Firefox", IPAddress: "203.0.113.7", LastUsedAtIP: "203.0.113.7",
		Current: true, CreatedAt: exT0, UpdatedAt: exT1, LastActiveAt: exT1, LastUsedAt: exT1}
	exDevice = Device{ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a06", CredentialID: "kLv3yZ0aQ1mXc9eT8uJ2hA", Name: "Chrome on macOS",
		Nickname: "Chrome on macOS", DisplayName: "Chrome on macOS", Type: "webauthn", AuthenticatorAttachment: "platform",
		Transports: []string{"internal", "hybrid"}, AAGUID: "00000000-0000-0000-0000-000000000000", AttestationFormat: "none",
		BackupEligible: true, BackedUp: true, Browser: "Chrome", Platform: "macOS",
		UserAgent:    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
		LastUsedAtIP: "203.0.113.7", CreatedAt: exT0, UpdatedAt: exT1, LastUsedAt: &exT1}
	exChallenge = Challenge{ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a07", Token: exChallTok, Status: "pending", Purpose: "step_up",
		Method: "email_otp", ExpiresAt: exT0.Add(10 * time.Minute), RemainingAttempts: 5, TimeRemaining: 597, Intent: "delete_account"}
	exApp = AppFull{AppPublic: AppPublic{ID: exAppID, Name: "Demo", Slug: "demo", Origin: "https://app.example.com",
		Logo: "https://app.example.com/logo.svg", LoginURL: "https://app.example.com/login", CallbackURL: "https://app.example.com/welcome",
		PublicSignup: true, ProfileManagement: true, EmailAuthType: "otp", AutoRefresh: true, AccessExpiration: 900,
		RefreshExpiration: 2592000, MagicLinkExpiration: 300, RefreshPayload: true, AllowedIdentifiers: []string{"email", "phone"},
		RequiredIdentifiers: []string{"email"}, UserMetaDataSchema: []MetaField{{ID: "first_name", Name: "First name",
			FieldName: "first_name", FieldType: "string", VisibleProfile: true, VisibleRegistration: true}},
		OAuthProviders: []OAuthProvider{}, MFAPolicy: "optional", MFAMethodsAllowed: []string{"totp", "backup_code", "webauthn"},
		CreatedAt: exT0, UpdatedAt: exT1},
		WorkspaceID: exWSID, AllowedOrigins: []string{}, WebauthnUserVerification: "required", WebauthnAttestation: "none",
		MFAReverifyMinutes: 10, AccessTokenAlg: "ES256", AccessTokenAlgDefault: true, SMSAllowedCountries: []string{"US", "CA"},
		SMSAllowedCountriesDefault: true, SMSDailyCap: 1000, SMSDailyCapDefault: true}
	exWorkspace = Workspace{ID: exWSID, Name: "Acme", Slug: "acme", Membership: &Membership{Role: "owner", CreatedAt: exT0},
		Settings: map[string]any{}, UserInfoRequirement: "none", CreatedAt: exT0, UpdatedAt: exT1}
	exMember = Member{ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a08", Email: "grace@example.com", Name: "Grace", Role: "admin",
		CreatedAt: exT0, UpdatedAt: exT1}
	exAPIKey  = APIKey{ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a09", Nickname: "CI", Last4: "XMPL", CreatedAt: exT0}
	exWebhook = Webhook{ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a0a", URL: "https://hooks.example.com/gatehouse",
		EventTypes: []string{"user.created", "verification.*"}, RetryLimit: 3, Description: "CRM sync",
		Metadata: map[string]any{"team": "growth"}, Enabled: true, CreatedAt: exT0, UpdatedAt: exT1}
	exDelivery = Delivery{ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a0b", EventID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a0c",
		EventType: "user.created", Status: "delivered", AttemptCount: 1, MaxAttempts: 4, CreatedAt: exT0, UpdatedAt: exT0,
		DeliveredAt: &exT0, Attempts: []Attempt{{Attempt: 1, StartedAt: exT0, DurationMs: 84, ResponseStatus: ptr(200), ResponseBody: "ok"}}}
	exEnrollment = Enrollment{ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a0d", Method: "totp", Name: "My phone", CreatedAt: exT0}
	exM2MClient  = M2MClient{ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a0e", Name: "Billing worker",
		Scopes: []string{"invoices:read", "invoices:write"}, CreatedAt: exT0, SecretLast4: "XMPL"}
	exOptions = `{"challenge":"ZXhhbXBsZS1jaGFsbGVuZ2U","timeout":300000,"rpId":"example.com","userVerification":"required","allowCredentials":[]}`
)

func ptr[T any](v T) *T { return &v }

func verified(e Enrollment) Enrollment { e.Verified, e.VerifiedAt = true, &exT1; return e }

// opDocs says, by operationId, what register() and plain() do not. A new
// operation gets an entry here (opdocs_test.go fails until it has one).
var opDocs = map[string]opDoc{
	// Operations and discovery.
	"health":  {resp: `{"status":"ok","version":"0.1.0","commit":"5a1f99d0a1b2","build_date":"2026-11-26T14:25:46Z","go_version":"go1.26.0"}`},
	"ready":   {resp: `{"status":"ready"}`},
	"jwks":    {resp: `{"keys":[{"kty":"EC","crv":"P-256","x":"ZXhhbXBsZS14LWNvb3JkaW5hdGUtMDAwMDAwMDAwMDA","y":"ZXhhbXBsZS15LWNvb3JkaW5hdGUtMDAwMDAwMDAwMDA","alg":"ES256","use":"sig","kid":"example-kid-1"}]}`},
	"appJwks": {resp: `{"keys":[{"kty":"EC","crv":"P-256","x":"ZXhhbXBsZS14LWNvb3JkaW5hdGUtMDAwMDAwMDAwMDA","y":"ZXhhbXBsZS15LWNvb3JkaW5hdGUtMDAwMDAwMDAwMDA","alg":"ES256","use":"sig","kid":"example-kid-1"}]}`},
	"openapi": {resp: `{"openapi":"3.1.0","info":{"title":"Gatehouse API","version":"v1.0.0"},"servers":[{"url":"https://auth.example.com"}],"paths":{},"components":{"schemas":{},"securitySchemes":{}}}`},
	"devOutbox": {desc: "Development servers only (`--dev`; elsewhere the route does not exist). The e-mails and SMS the server would have sent, newest first, with the code or link each carries pulled out, so tests and the example app can sign in without a mailbox. `to` finds an address or phone number however it is written (a `+` sent unescaped is read as one); `since` and `wait_ms` (up to 10 s) let a test wait for a message instead of polling. No credentials.",
		resp: body(func(o *devOutboxOutput) {
			o.Body.Messages = []OutboxMessage{{ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a10", Channel: "email", To: exEmail,
				Subject: "Your Demo code", Text: "123456 is your Demo code.", HTML: "<p>Your code: <b>123456</b></p>",
				Code: "123456", CreatedAt: exT0}}
		})},

	// Apps.
	"getApp": {desc: "An app's public configuration, as the client SDK reads it before showing a sign-in form: name, branding, identifiers, sign-up and MFA policy, token lifetimes and the user metadata schema. No credentials; never anything secret. 404 app_not_found for an unknown id.",
		resp: exApp.AppPublic},
	"createApiKey": {desc: "Makes an API key for the app and returns it (`token`) this once; only its last four characters are kept in view. An API key may manage the app's users, sessions and webhooks, not its settings or credentials. With the app's API secret or a workspace secret of an owner or admin; API keys may not make keys (403). Body optional.",
		req: `{"nickname":"CI"}`, resp: body(func(o *apiKeyOutput) {
			k := exAPIKey
			k.Token = "ghk_EXAMPLE_not_a_real_key_0000XMPL"
			o.Body.APIKey = k
		})},
	"listApiKeys": {desc: "The app's API keys, newest first, revoked ones included (with revoked_at); never their tokens. Credentials as for creating one.",
		resp: body(func(o *apiKeysOutput) { o.Body.APIKeys = []APIKey{exAPIKey} })},
	"revokeApiKey": {desc: "Revokes an API key: it is refused from the next request on. Revoking it again answers the same; an unknown id is 404 api_key_not_found. Credentials as for creating one.",
		resp: okBody},
	"updateApp": {req: `{"app":{"name":"Demo","mfa_policy":"optional","email_auth_type":"otp"}}`,
		resp: body(func(o *appFullOutput) { o.Body.App = exApp })},
	"listMessageServiceProviders": {resp: body(func(o *providersOutput) {
		o.Body.Providers = []MessageServiceProvider{{ProviderType: "smtp", Slug: "smtp", Name: "Acme mail", Enabled: true, Configured: true,
			Config:   map[string]string{"host": "smtp.example.com", "username": "mailer", "password": "****XMPL", "from": "Demo <no-reply@example.com>"},
			Channels: []string{"email"}, UpdatedAt: &exT1}}
	})},
	"updateMessageServiceProvider": {req: `{"slug":"smtp","enabled":true,"config":{"host":"smtp.example.com","username":"mailer","password":"example-password-XMPL","from":"Demo <no-reply@example.com>"}}`,
		resp: body(func(o *providerOutput) {
			o.Body.Provider = MessageServiceProvider{ProviderType: "smtp", Slug: "smtp", Name: "Acme mail", Enabled: true, Configured: true,
				Config:   map[string]string{"host": "smtp.example.com", "username": "mailer", "password": "****XMPL", "from": "Demo <no-reply@example.com>"},
				Channels: []string{"email"}, UpdatedAt: &exT1}
		})},
	"testMessageServiceProvider": {req: `{"slug":"smtp","to":"ops@example.com"}`,
		resp: body(func(o *providerTestOutput) {
			o.Body.Test = ProviderTestResult{Slug: "smtp", Channel: "email", To: "o***@example.com", Delivered: true, ProviderMessageID: "example-message-id"}
		})},

	// Machine-to-machine.
	"createM2mClient": {req: `{"client":{"name":"Billing worker","scopes":["invoices:read","invoices:write"]}}`,
		resp: body(func(o *createM2MClientOutput) {
			o.Body.Client, o.Body.ClientSecret = exM2MClient, "ghm_EXAMPLE_not_a_real_secret_00000000XMPL"
		})},
	"listM2mClients":  {resp: body(func(o *m2mClientsOutput) { o.Body.Clients = []M2MClient{exM2MClient} })},
	"revokeM2mClient": {resp: okBody},
	"m2mToken": {resp: body(func(o *m2mTokenOutput) {
		o.Body.AccessToken, o.Body.TokenType, o.Body.ExpiresIn, o.Body.Scope = exAccess, "Bearer", 600, "invoices:read"
	})},
	"m2mSession": {summary: "Get the M2M session of the calling token", resp: body(func(o *m2mSessionOutput) {
		o.Body.Session = M2MSession{ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a11", ClientID: exM2MClient.ID, Scopes: []string{"invoices:read"},
			CreatedAt: exT0, ExpiresAt: exT0.Add(10 * time.Minute)}
	})},
	"revokeM2mSession": {resp: body(func(o *m2mRevokeOutput) { o.Body.Message, o.Body.Verified = "ok", true })},
	"introspectM2m": {req: `{"token":"` + exAccess + `"}`,
		resp: body(func(o *introspectOutput) {
			b := &o.Body
			b.Active, b.ClientID, b.Scope, b.IssuedAt, b.ExpiresAt = true, exM2MClient.ID, "invoices:read", exT0.Unix(), exT0.Add(10*time.Minute).Unix()
			b.SessionID, b.TokenType = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a11", "Bearer"
		})},

	// Workspaces, members and their apps.
	"listWorkspaces": {desc: "The workspaces the caller belongs to, each with the caller's membership. With a workspace API secret (it acts for one member).",
		resp: body(func(o *workspacesOutput) { o.Body.Workspaces = []Workspace{exWorkspace} })},
	"createWorkspace": {desc: "Creates a workspace owned by the calling member (matched by e-mail address) and returns it with a workspace API secret for it, shown this once: a secret is scoped to one workspace. With a workspace API secret; 409 slug_taken when the slug is in use.",
		req: `{"name":"Acme","slug":"acme"}`,
		resp: body(func(o *createWorkspaceOutput) {
			o.Body.Workspace, o.Body.APISecret = exWorkspace, "eyJhbGciOiJFUzI1NiIsImtpZCI6ImV4YW1wbGUifQ.eyJ0eXAiOiJ3b3Jrc3BhY2Vfc2VjcmV0In0.ZmFrZS1zaWduYXR1cmU"
		})},
	"getWorkspace": {desc: "A workspace with the caller's membership. Any member may read it; others get 403 or 404.",
		resp: body(func(o *workspaceOutput) { o.Body.Workspace = exWorkspace })},
	"updateWorkspace": {desc: "Changes a workspace's name, slug, settings and defaults; omitted fields keep their value and `settings` is merged. Owners and admins only; 409 slug_taken when the slug is in use.",
		req:  `{"name":"Acme Inc.","settings":{"support_email":"help@example.com"}}`,
		resp: body(func(o *workspaceOutput) { o.Body.Workspace = exWorkspace })},
	"listMembers": {desc: "The workspace's members with their roles. Any member may list them.",
		resp: body(func(o *membersOutput) { o.Body.Members = []Member{exMember} })},
	"addMember": {desc: "Adds a member by e-mail address with a role (default member). Owners and admins may add admins and members; only owners may add owners. 409 member_exists when the address is already a member.",
		req:  `{"email":"grace@example.com","name":"Grace","role":"admin"}`,
		resp: body(func(o *memberOutput) { o.Body.Member = exMember })},
	"updateMember": {desc: "Changes a member's role. Owners and admins may; only owners may grant or take away the owner role, and the last owner cannot be demoted (409 last_owner).",
		req:  `{"role":"member"}`,
		resp: body(func(o *memberOutput) { m := exMember; m.Role = "member"; o.Body.Member = m })},
	"removeMember": {desc: "Removes a member from the workspace; the member's workspace secrets stop working with it. Owners and admins may; only owners may remove an owner, and never the last one (409 last_owner).",
		resp: okBody},
	"listWorkspaceApps": {desc: "The workspace's apps with their private settings. Any member may list them.",
		resp: body(func(o *appsOutput) { o.Body.Apps = []AppFull{exApp} })},
	"createWorkspaceApp": {desc: "Creates an app in the workspace; `name` and `origin` are required, every other setting has a default. The app's first signing key is made with it. Owners and admins only; 409 slug_taken when the slug is in use in the workspace. Make its credentials next: an API secret (CLI) or API keys.",
		req:  `{"name":"Demo","origin":"https://app.example.com","allowed_identifiers":["email","phone"],"email_auth_type":"otp","public_signup":true}`,
		resp: body(func(o *appFullOutput) { o.Body.App = exApp })},
	"getWorkspaceApp": {desc: "An app with its private settings (allowed origins, WebAuthn, MFA, token algorithm, SMS guards). Any member may read it.",
		resp: body(func(o *appFullOutput) { o.Body.App = exApp })},
	"updateWorkspaceApp": {desc: "Changes an app's settings; omitted fields keep their value, and user_meta_data_schema replaces the whole list. Owners and admins only. Changes take effect on every replica within seconds; choosing a new access_token_alg publishes its first key in the JWKS at once.",
		req:  `{"mfa_policy":"optional","mfa_methods_allowed":["totp","backup_code","webauthn"],"access_expiration":900}`,
		resp: body(func(o *appFullOutput) { o.Body.App = exApp })},
	"deleteWorkspaceApp": {desc: "Deletes an app with its users, sessions, credentials, webhooks and templates; its tokens stop working. Owners and admins only. Cannot be undone.",
		resp: okBody},

	// Users of apps.
	"createUser": {desc: "Creates an active user of the app from an `identifier` (or `email` and `phone`), with optional metadata checked against the app's schema: unknown keys or wrong types are dropped and reported in `user_meta_errors`. Nothing is sent to the user. 400 user_exists when the identifier is taken, invalid_identifier when it is not a valid address or number or not one the app allows. With the app's API secret, an API key or a workspace secret. Emits `user.created`.",
		req:  `{"identifier":"ada@example.com","user_meta":{"first_name":"Ada"}}`,
		resp: body(func(o *userWithErrorsOutput) { o.Body.User = exUser })},
	"importUsers": {
		req: `{"users":[{"email":"ada@example.com","email_verified":true,"user_meta":{"first_name":"Ada"}},{"phone":"+14155552671"}]}`,
		resp: body(func(o *importUsersOutput) {
			ada, phone := exEmail, "+14155552671"
			o.Body.Users = []ImportedUser{
				{Index: 0, Outcome: "created", ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a21", UserID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a22", Status: "imported", Email: &ada},
				{Index: 1, Outcome: "exists", ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a23", UserID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a24", Status: "active", Phone: &phone},
			}
			o.Body.Created, o.Body.Existing = 1, 1
		})},
	"createUserAuth": {desc: "The same as POST /v1/{app_id}/users, at the path the client SDK's createUser uses.",
		req:  `{"email":"ada@example.com"}`,
		resp: body(func(o *userWithErrorsOutput) { o.Body.User = exUser })},
	"inviteUser": {desc: "Creates a pending user and sends an invitation (e-mail, or SMS with a short link) that signs them in when opened and accepted (POST /magic_links/confirm_invite). Inviting a still-pending user again sends a new invitation and ends the old one; anyone else who exists is 400 user_exists. With the app's API secret, an API key or a workspace secret. Emits `user.created`.",
		req: `{"identifier":"ada@example.com","user_meta":{"first_name":"Ada"}}`,
		resp: body(func(o *userWithErrorsOutput) {
			u := exUser
			u.Status, u.EmailVerified, u.LastUsedAt = "pending", false, nil
			o.Body.User = u
		})},
	"listUsers": {resp: body(func(o *listUsersOutput) {
		o.Body.Users, o.Body.TotalCount, o.Body.TotalPages, o.Body.CurrentPage, o.Body.PerPage = []User{exUser}, 1, 1, 1, 25
	})},
	"getUser": {resp: body(func(o *userOutput) {
		u := exUser
		s := exSession
		s.Current = false
		u.Sessions = []Session{s}
		o.Body.User = u
	})},
	"updateUser": {desc: "Changes a user's metadata (merged; null removes a key; keys outside the app's schema are refused with 422), e-mail address or phone number (\"\" removes one, but a user keeps at least one of them: else 400 invalid_identifier; a new one is unverified; 400 user_exists when another user has it). With the app's API secret, an API key or a workspace secret. Emits `user.updated`, and `user.identifier_changed` when the e-mail or phone changed.",
		req:  `{"user_meta":{"first_name":"Ada"},"phone":"+14155550123"}`,
		resp: body(func(o *userOutput) { u := exUser; u.Phone = &exPhone; o.Body.User = u })},
	"activateUser": {desc: "Sets a user's status to active, so the user can sign in. Open invitations end with the change. Emits `user.updated`.",
		resp: body(func(o *userOutput) { o.Body.User = exUser })},
	"deactivateUser": {desc: "Sets a user's status to inactive: every session of the user ends at once and the user cannot sign in until activated again (which does not revive the sessions). Open invitations end too. Emits `user.updated`.",
		resp: body(func(o *userOutput) { u := exUser; u.Status = "inactive"; o.Body.User = u })},
	"deleteUser": {desc: "Deletes a user with the user's sessions, passkeys, second factors and pending challenges; the user's tokens stop working. With the app's API secret, an API key or a workspace secret. Cannot be undone.",
		resp: okBody},
	"lookupUser": {resp: body(func(o *lookupUserOutput) {
		o.Body.User = &LookupUser{ID: exUserID, Status: "active", Email: &exEmail, EmailVerified: true, RequiredFields: []RequiredField{}}
	})},
	"listUserSessions": {desc: "A user's live sessions (not expired, not revoked), newest first, as a bare array (the server SDKs' shape). With the app's API secret, an API key or a workspace secret.",
		resp: []Session{exSession}},
	"listUserSessionsApp": {desc: "The same list as GET /v1/apps/{app_id}/users/{id}/sessions, at the path the Ruby server SDK uses.",
		resp: []Session{exSession}},
	"revokeUserSession": {desc: "Ends one of a user's sessions for an administrator: its refresh token is refused from now on and its access tokens fail on the next request on every replica. 404 session_not_found for another user's or an unknown session.",
		resp: okBody},

	// Message templates.
	"listMessageTemplates": {resp: body(func(o *messageTemplatesOutput) {
		o.Body.Locales = []string{"de", "en", "es", "fr"}
		o.Body.Messages = []MessageTemplateInfo{{Name: "login_code", Description: "A one-time sign-in code.", Channels: []string{"email", "sms"},
			Variables: []TemplateVariable{{Name: "Code", Description: "The code.", Secret: true, Example: "123456"}},
			Builtin:   map[string]map[string]TemplateParts{"email": {"en": {Subject: "Your {{.AppName}} code", Text: "{{.Code}} is your {{.AppName}} code."}}}}}
		o.Body.Overrides = []MessageTemplate{{Name: "login_code", Channel: "sms", Locale: "de", Text: "{{.Code}} ist Ihr Code für {{.AppName}}.", CreatedAt: exT0, UpdatedAt: exT1}}
	})},
	"putMessageTemplate": {req: `{"template":{"text":"{{.Code}} ist Ihr Code für {{.AppName}}."}}`,
		resp: body(func(o *messageTemplateOutput) {
			o.Body.Template = MessageTemplate{Name: "login_code", Channel: "sms", Locale: "de", Text: "{{.Code}} ist Ihr Code für {{.AppName}}.", CreatedAt: exT0, UpdatedAt: exT1}
		})},
	"deleteMessageTemplate": {resp: okBody},
	"previewMessageTemplate": {req: `{"name":"login_code","channel":"sms","locale":"de"}`,
		resp: body(func(o *previewMessageTemplateOutput) {
			b := &o.Body
			b.Name, b.Channel, b.Locale, b.Override, b.Text = "login_code", "sms", "de", true, "123456 ist Ihr Code für Demo."
			b.SMS = ptr(courier.MeasureSMS(b.Text))
		})},

	// Webhooks.
	"createWebhook": {desc: "Adds a webhook endpoint: events of the app are POSTed to its https `url`, signed with HMAC-SHA256 (`X-Webhook-Signature: t=…,v1=…`). The response is the only one that shows the signing `secret`. `event_types` omitted or empty: every event. Retries follow `retry_limit` (0 to 10, default 3) with exponential backoff; a 4xx answer is not retried. 409 webhook_limit_reached when the app has as many endpoints as allowed. With the app's API secret, an API key or a workspace secret of an owner or admin.",
		req: `{"webhook":{"url":"https://hooks.example.com/gatehouse","event_types":["user.created","verification.*"],"description":"CRM sync"}}`,
		resp: body(func(o *webhookOutput) {
			w := exWebhook
			w.Secret = "whsec_EXAMPLEnotARealSecretEXAMPLE000000"
			o.Body.Webhook = w
		})},
	"listWebhooks":      {desc: "The app's webhook endpoints, without their secrets.", resp: body(func(o *webhooksOutput) { o.Body.Webhooks = []Webhook{exWebhook} })},
	"webhookEventTypes": {summary: "List the webhook event types", desc: "Every event type an endpoint may subscribe to (verification.{email,sms}.{outcome}, challenge.*, user.*, webhook.test and the others).", resp: `{"event_types":["challenge.completed","challenge.created","challenge.failed","user.created","user.updated","webhook.test"]}`},
	"getWebhook":        {desc: "One webhook endpoint, without its secret. 404 webhook_not_found for an unknown id.", resp: body(func(o *webhookOutput) { o.Body.Webhook = exWebhook })},
	"updateWebhook": {desc: "Changes an endpoint's url, event types, retry limit, description, metadata or enabled flag; omitted fields keep their value. A disabled endpoint gets no new events. The secret does not change (see rotate_secret).",
		req:  `{"webhook":{"enabled":false}}`,
		resp: body(func(o *webhookOutput) { w := exWebhook; w.Enabled = false; o.Body.Webhook = w })},
	"deleteWebhook": {desc: "Deletes an endpoint: nothing more is sent to it.", resp: okBody},
	"testWebhook": {desc: "Sends a `webhook.test` event to this endpoint only (even if it is not subscribed to it) and answers the queued delivery; follow it in the deliveries list.",
		resp: body(func(o *deliveryOutput) {
			d := exDelivery
			d.EventType, d.Status, d.AttemptCount, d.DeliveredAt, d.Attempts = "webhook.test", "pending", 0, nil, []Attempt{}
			o.Body.Delivery = d
		})},
	"listWebhookDeliveries": {summary: "List a webhook endpoint's deliveries", desc: "The endpoint's deliveries, newest first, each with its attempts (status, duration, the first KiB of the answer, error), a page at a time (`page`, `limit`: default 25, at most 100).",
		resp: body(func(o *deliveriesOutput) {
			o.Body.Deliveries, o.Body.TotalCount, o.Body.TotalPages, o.Body.CurrentPage, o.Body.PerPage = []Delivery{exDelivery}, 1, 1, 1, 25
		})},
	"redeliverWebhook": {desc: "Queues a finished delivery again: the same event, with the same envelope id, and a fresh retry budget. 409 delivery_in_progress while it is still queued or being retried.",
		resp: body(func(o *deliveryOutput) {
			d := exDelivery
			d.Status, d.DeliveredAt = "pending", nil
			o.Body.Delivery = d
		})},
	"rotateWebhookSecret": {desc: "Gives the endpoint a new signing secret, returned this once. For 24 hours the previous secret signs too (one `v1=` each in the signature header), so a receiver can switch without losing events.",
		resp: body(func(o *webhookOutput) {
			w := exWebhook
			w.Secret, w.PreviousExpiresAt = "whsec_EXAMPLEnotARealSecretEXAMPLE000001", ptr(exT1.Add(24*time.Hour))
			o.Body.Webhook = w
		})},

	// Sign-in.
	"sendOtp": {desc: "Sends a one-time code to an e-mail address or phone number; answer it with POST /otps/verify and the returned `user_id`. An unknown identifier signs up a new user when the app has public_signup (with `user_meta`: visible_registration fields only; emits `user.created`); otherwise nothing is sent, and the answer looks the same. A new code ends the user's previous one. Rate limited per identifier and per IP. Emits `challenge.created` and `verification.{channel}.requested`. No credentials.",
		req: `{"identifier":"ada@example.com"}`,
		resp: body(func(o *sendOTPOutput) {
			o.Body.OTP = otpSent{Success: true, SentAt: exT0, ID: exChallenge.ID}
			o.Body.UserID = exUserID
		})},
	"verifyOtp": {desc: "Checks a one-time code and signs the user in: a token set, or `mfa_required` with a second-factor challenge when the app's policy asks for one. Each code takes one of the challenge's 5 attempts (and of the user's hourly budget per source) before it is compared, also under parallel requests: a code compared and wrong, or expired, is 422 invalid_code; a code refused uncompared because a budget is spent is 429 too_many_attempts (the right one too), and 100 consecutive wrong codes lock sign-in by code (429 code_entry_locked) until the user signs in another way. Emits `verification.{channel}.verified` and `challenge.completed` (or `verification.{channel}.failed`). No credentials.",
		req:  `{"otp":"123456","user_id":"` + exUserID + `"}`,
		resp: exTokens},
	"sendLoginMagicLink": {desc: "Sends a sign-in link to an e-mail address (or an SMS short link to a phone number). The requesting device polls POST /magic_links/status with `magic_link.id` until the link is opened and approved; the device that opens it signs in with PATCH /magic_links/authenticate. Show `match_number` on the requesting device: the consent page shows the same. Unknown identifiers are treated as by POST /otps/login. Rate limited. Emits `challenge.created` and `verification.{channel}.requested`. No credentials.",
		req: `{"identifier":"ada@example.com","webauthn_enabled":true}`,
		resp: body(func(o *magicLinkOutput) {
			o.Body.MagicLink.ID, o.Body.MagicLink.MatchNumber, o.Body.UserID = exChallenge.ID, 42, exUserID
		})},
	"sendRegisterMagicLink": {desc: "The sign-up flavour of POST /magic_links/login (the client SDK's register path): the same request, answer and limits, with `user_meta` for a user it creates.",
		req: `{"identifier":"ada@example.com","user_meta":{"first_name":"Ada"}}`,
		resp: body(func(o *magicLinkOutput) {
			o.Body.MagicLink.ID, o.Body.MagicLink.MatchNumber, o.Body.UserID = exChallenge.ID, 42, exUserID
		})},
	"authenticateMagicLink": {desc: "Signs in the device that opened a magic link, with the `sct_magic` token from its URL. Spends the link (404 magic_link_not_found_or_expired after that, or when it expired). Verifies the e-mail address or phone number; emits `verification.{channel}.verified`. Answers a token set, or `mfa_required`. No credentials.",
		req: `{"token":"` + exMagicTok + `"}`, resp: exTokens},
	"magicLinkStatus": {desc: "Polled by the device that asked for a magic link, with its `magic_link.id`: 409 magic_link_pending until the link is approved, then a token set (once), or `mfa_required`. 404 when the link was denied (magic_link_denied), used, or expired. Rate limited per IP. No credentials.",
		req: `{"id":"` + exChallenge.ID + `"}`, resp: exTokens},
	"confirmInvite": {desc: "Accepts an invitation with the `sct_magic` token from the invitation link: the pending user becomes active, the contact verified, and the device signs in (a token set). `user_meta` may fill in visible_registration fields. 404 magic_link_not_found_or_expired when the invitation is unknown, used, replaced or expired. Emits `user.updated`. No credentials.",
		req: `{"token":"` + exMagicTok + `","user_meta":{"first_name":"Ada"}}`, resp: exTokens},
	"refreshTokens": {desc: "Rotates a refresh token (`X-Refresh-Token`) into a new token set; the old one is spent. A client that retries within the grace window (10 s) gets the same new set; presenting a spent token after that is reuse and ends the session (401). Refresh tokens never outlive the session's absolute lifetime. 401 for an expired, revoked or unknown token. No other credentials.",
		resp: exTokens},
	"forceRefreshTokens": {desc: "The same as POST /tokens/refresh, at the path the client SDK's forced refresh uses.",
		resp: exTokens},
	"rotateAccess": {resp: func() TokenSet { t := exTokens; t.Refresh, t.RefreshExpiresAt = "", nil; return t }()},
	"verifyRefresh": {desc: "Checks a refresh token (`Authorization: Bearer <refresh token>`) without spending it: 200 `{message: ok, verified: true}` while it would refresh, 401 otherwise (expired, revoked, spent or unknown).",
		resp: body(func(o *verifyRefreshOutput) { o.Body.Message, o.Body.Verified = "ok", true })},
	"currentUser": {summary: "Get the signed-in user", desc: "The user the access token in `X-Authorization` belongs to. For a browser (a User-Agent with Mozilla/) `sessions` lists the user's live sessions with `current` marking this one; for other callers it is empty. 401 for an expired or revoked token.",
		resp: body(func(o *userOutput) { u := exUser; u.Sessions = []Session{exSession}; o.Body.User = u })},
	"updateCurrentUserMeta": {desc: "The signed-in user changes their own metadata: only fields with visible_profile, and only when the app has profile_management on; any other key refuses the whole update (422 invalid_user_meta). Merged; null removes a key. Emits `user.updated`.",
		req:  `{"user_meta":{"first_name":"Ada"}}`,
		resp: body(func(o *userOutput) { o.Body.User = exUser })},
	"signOut": {desc: "Ends the session of the access token in `X-Authorization`: its refresh token is refused from now on and its access tokens fail on the next request on every replica.",
		resp: okBody},
	"listSessions": {desc: "The signed-in user's live sessions, newest first; `current` marks the caller's.",
		resp: body(func(o *sessionsOutput) { o.Body.Sessions = []Session{exSession} })},
	"revokeSession": {desc: "Ends one of the signed-in user's sessions (\"sign out that device\"); ending the current one is the same as signing out. 404 session_not_found for an unknown id or another user's session.",
		resp: okBody},

	// Passkeys.
	"registerDevice":             {resp: `{"options":` + exOptions + `,"user_verification":"required"}`},
	"finalizeDevice":             {req: exCredential, resp: exDevice},
	"listDevices":                {resp: body(func(o *devicesOutput) { o.Body.Devices = []Device{exDevice} })},
	"renameDevice":               {req: `{"name":"Work laptop"}`, resp: body(func(o *deviceWrappedOutput) { d := exDevice; d.Name = "Work laptop"; o.Body.Device = d })},
	"deleteDevice":               {resp: okBody},
	"webauthnLoginInitialize":    {req: `{"identifier":"ada@example.com"}`, resp: `{"options":` + exOptions + `}`},
	"webauthnLoginFinalize":      {req: exCredential, resp: exTokens},
	"webauthnRegisterInitialize": {req: `{"identifier":"ada@example.com","user_meta":{"first_name":"Ada"}}`, resp: `{"user_verification":"required","options":` + exOptions + `,"user_meta_errors":null,"user_id":"` + exUserID + `"}`},
	"webauthnRegisterFinalize": {req: exCredential, resp: body(func(o *registerFinalizeOutput) {
		o.Body.TokenSet, o.Body.Device = exTokens, exDevice
	})},
	"listUserDevices":     {resp: body(func(o *devicesOutput) { o.Body.Devices = []Device{exDevice} })},
	"listUserDevicesApps": {resp: body(func(o *devicesOutput) { o.Body.Devices = []Device{exDevice} })},
	"deleteUserDevice":    {resp: okBody},

	// Challenges and second factors.
	"createChallenge": {req: `{"purpose":"step_up","method":"email_otp","intent":"delete_account"}`,
		resp: body(func(o *challengeOutput) { o.Body.Challenge = exChallenge })},
	"getChallenge":    {resp: body(func(o *challengeOutput) { o.Body.Challenge = exChallenge })},
	"verifyChallenge": {req: `{"code":"123456"}`, resp: exVerifyAnswer()},
	"resendChallenge": {req: `{}`, resp: body(func(o *challengeOutput) { o.Body.Challenge = exChallenge })},
	"cancelChallenge": {resp: body(func(o *challengeOutput) {
		c := exChallenge
		c.Status, c.TimeRemaining = "cancelled", 0
		o.Body.Challenge = c
	})},
	"enrollMfa": {req: `{"method":"totp","name":"My phone"}`,
		resp: body(func(o *enrollOutput) {
			o.Body.Enrollment, o.Body.Secret = exEnrollment, "EXAMPLEEXAMPLEEXAMPLEEXAMPLE2345"
			o.Body.ProvisioningURI = "otpauth://totp/Demo:ada@example.com?algorithm=SHA1&digits=6&issuer=Demo&period=30&secret=EXAMPLEEXAMPLEEXAMPLEEXAMPLE2345"
		})},
	"verifyMfaEnrollment": {req: `{"enrollment_id":"` + exEnrollment.ID + `","code":"123456"}`,
		resp: body(func(o *enrollmentOutput) { o.Body.Enrollment = verified(exEnrollment) })},
	"createBackupCodes": {req: `{}`, resp: body(func(o *backupCodesOutput) {
		o.Body.BackupCodes = []string{"XMPL1-AAAAA", "XMPL2-BBBBB", "XMPL3-CCCCC", "XMPL4-DDDDD", "XMPL5-EEEEE", "XMPL6-FFFFF", "XMPL7-GGGGG", "XMPL8-HHHHH", "XMPL9-JJJJJ", "XMPLA-KKKKK"}
	})},
	"listMfaMethods": {resp: body(func(o *mfaMethodsOutput) {
		o.Body.MFAEnabled, o.Body.BackupCodesAvailable = true, 10
		o.Body.Methods = []MFAMethod{{ID: exEnrollment.ID, Method: "totp", Name: "My phone", Verified: true, CreatedAt: exT0, LastUsedAt: &exT1}}
	})},
	"mfaStatus": {summary: "Get the signed-in user's MFA state", resp: body(func(o *mfaStatusOutput) {
		o.Body.MFAEnabled, o.Body.MFAPolicy, o.Body.Methods, o.Body.BackupCodesAvailable = true, "optional", []string{"totp", "backup_code"}, 10
	})},
	"pendingPush": {resp: body(func(o *pendingPushOutput) {
		p := PendingPush{ID: exChallenge.ID, Purpose: "authenticate", RequestedAt: exT0, ExpiresAt: exT0.Add(2 * time.Minute), IPAddress: "203.0.113.7", Location: "Lisbon, PT"}
		p.Device.Browser, p.Device.OS = "Firefox", "macOS"
		o.Body.Challenges = []PendingPush{p}
	})},
	"approvePush": {req: `{"match_number":42}`, resp: body(func(o *challengeOutput) {
		c := exChallenge
		c.Status, c.Purpose, c.Method, c.TimeRemaining, c.Intent = "completed", "authenticate", "push", 0, ""
		o.Body.Challenge = c
	})},
	"denyPush": {resp: body(func(o *challengeOutput) {
		c := exChallenge
		c.Status, c.Purpose, c.Method, c.TimeRemaining, c.Intent = "denied", "authenticate", "push", 0, ""
		o.Body.Challenge = c
	})},
	"reportError": {desc: "Accepts an error report from the client SDK and answers `{}`. Only its arrival is logged (app and request id), never its content. No credentials.",
		req: `{"payload":{"message":"Network request failed","where":"refreshTokens"}}`, resp: `{}`},
	"userMetafields": {summary: "Check whether a user has filled in the required metadata", desc: "Whether a user has filled in every metadata field the app requires (the client SDK asks while signing in, to show a form for the rest). No credentials; shares the anonymous lookup budget per IP with GET /users (429 with Retry-After).",
		resp: `{"meta":true}`},
}

// exCredential is a WebAuthn credential as the browser hands it over
// (PublicKeyCredential.toJSON()), with made-up bytes.
const exCredential = `{"id":"kLv3yZ0aQ1mXc9eT8uJ2hA","rawId":"kLv3yZ0aQ1mXc9eT8uJ2hA","type":"public-key","authenticatorAttachment":"platform",` +
	`"response":{"clientDataJSON":"ZXhhbXBsZS1jbGllbnQtZGF0YQ","authenticatorData":"ZXhhbXBsZS1hdXRoLWRhdGE","signature":"ZXhhbXBsZS1zaWduYXR1cmU","userHandle":"ZXhhbXBsZQ"},` +
	`"clientExtensionResults":{}}`

func exVerifyAnswer() VerifyAnswer {
	c := exChallenge
	c.Status, c.TimeRemaining = "completed", 0
	t := exTokens
	return VerifyAnswer{Status: "completed", Challenge: c, Access: t.Access, Refresh: t.Refresh, CSRF: t.CSRF,
		AccessExpiresAt: t.AccessExpiresAt, RefreshExpiresAt: t.RefreshExpiresAt, UserID: t.UserID, KeyID: t.KeyID, Message: "ok"}
}
