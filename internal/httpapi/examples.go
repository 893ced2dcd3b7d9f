package httpapi

import (
	"reflect"
	"time"
)

// The example values operations share (their req and resp, operation.go).

// body builds an output type's Body with f: body(func(o *userOutput) { ... }).
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
		OAuthProviders: []OAuthProvider{{Provider: "google", ID: "google", Type: "google", Name: "Google", Icon: "/v1/assets/oauth/google.svg"}}, MFAPolicy: "optional", MFAMethodsAllowed: []string{"totp", "backup_code", "webauthn"},
		Branding: Branding{PrimaryColor: "#0b7a5a", ColorScheme: "auto", Font: "system"}, CreatedAt: exT0, UpdatedAt: exT1},
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
