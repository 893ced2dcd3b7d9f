package webhook_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// TestPayloadWireFormat pins the JSON of the payload types to what the
// untyped maps they replaced produced: field names, null where a value is
// missing, absent where a field does not apply, false and 0 kept where the
// maps had them.
func TestPayloadWireFormat(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	t1 := t0.Add(42 * time.Second)
	ts, ts1 := `"2026-01-02T03:04:05.123456Z"`, `"2026-01-02T03:04:47.123456Z"`
	email, secs := "zoe@example.com", 42
	user := webhook.UserData{User: webhook.EventUser{ID: "u1", AppID: "a1", Status: "active", Email: &email,
		WebauthnTypes: []string{}, UserMeta: map[string]any{"n": 1.5}, CreatedAt: t0, UpdatedAt: t0}}
	userJSON := `{"user":{"id":"u1","app_id":"a1","user_id":"","status":"active","email":"zoe@example.com","phone":null,
		"email_verified":false,"phone_verified":false,"webauthn_enabled":false,"webauthn_types":[],"user_meta":{"n":1.5},
		"created_at":` + ts + `,"updated_at":` + ts + `}`
	testUser := user
	testUser.Test, testUser.User.Test = true, true
	v := webhook.VerificationData{VerificationID: "c1", Intent: "login", IPAddress: "203.0.113.7",
		MetaData: webhook.VerificationMeta{DeliveryMethod: "sms", ContactPhone: ptr("+14155552671"), TicketID: "c1", Method: "sms_otp", UserID: "u1"},
		Timing:   webhook.VerificationTiming{SentAt: t0}, Device: webhook.EventDevice{OS: "macOS", Browser: "Firefox"}}
	vJSON := `"verification_id":"c1","intent":"login","ip_address":"203.0.113.7",
		"meta_data":{"delivery_method":"sms","contact_phone":"+14155552671","ticket_id":"c1","method":"sms_otp","user_id":"u1"},
		"timing":{"sent_at":` + ts + `,"opened_at":null,"confirmed_at":null,"time_to_verify_seconds":null},
		"device":{"os":"macOS","browser":"Firefox"}`
	confirmed := v
	confirmed.Timing = webhook.VerificationTiming{SentAt: t0, OpenedAt: &t1, ConfirmedAt: &t1, TimeToVerifySeconds: &secs}
	confirmedJSON := `"verification_id":"c1","intent":"login","ip_address":"203.0.113.7",
		"meta_data":{"delivery_method":"sms","contact_phone":"+14155552671","ticket_id":"c1","method":"sms_otp","user_id":"u1"},
		"timing":{"sent_at":` + ts + `,"opened_at":` + ts1 + `,"confirmed_at":` + ts1 + `,"time_to_verify_seconds":42},
		"device":{"os":"macOS","browser":"Firefox"}`
	ch := webhook.ChallengeData{ChallengeID: "c1", Purpose: "authenticate", Method: "email_otp", UserID: "u1", Status: "failed",
		IPAddress: "203.0.113.7", CreatedAt: t0, ExpiresAt: t1}
	chJSON := `"challenge_id":"c1","purpose":"authenticate","method":"email_otp","user_id":"u1","intent":"","status":"failed",
		"ip_address":"203.0.113.7","device":{"os":"","browser":""},"created_at":` + ts + `,"expires_at":` + ts1
	by := webhook.DecidedBy{IPAddress: "198.51.100.1", Browser: "Safari", OS: "iOS"}
	byJSON := `{"ip_address":"198.51.100.1","browser":"Safari","os":"iOS"}`

	tests := []struct {
		name string
		data webhook.Payload
		want string
	}{
		{"user", user, userJSON + `}`},
		{"test user", testUser, `{"test":true,"user":{"id":"u1","app_id":"a1","user_id":"","status":"active","email":"zoe@example.com",
			"phone":null,"email_verified":false,"phone_verified":false,"webauthn_enabled":false,"webauthn_types":[],"user_meta":{"n":1.5},
			"created_at":` + ts + `,"updated_at":` + ts + `,"test":true}}`},
		{"user updated", webhook.UserUpdatedData{UserData: user}, userJSON + `}`},
		{"mfa added", webhook.UserUpdatedData{UserData: user, Change: "mfa_method_added", MFAMethod: "totp", MFAMethodID: "m1"},
			userJSON + `,"change":"mfa_method_added","mfa_method":"totp","mfa_method_id":"m1"}`},
		{"backup codes", webhook.UserUpdatedData{UserData: user, Change: "backup_codes_generated", MFAMethod: "backup_code"},
			userJSON + `,"change":"backup_codes_generated","mfa_method":"backup_code"}`},
		{"passkey added", webhook.UserUpdatedData{UserData: user, Change: "passkey_added", Passkey: &webhook.EventPasskey{ID: "p1", CredentialID: "cr", Name: ""}},
			userJSON + `,"change":"passkey_added","passkey":{"id":"p1","credential_id":"cr","name":"","authenticator_attachment":""}}`},
		{"identifier changed", webhook.UserIdentifierChangedData{UserData: user, Previous: webhook.PreviousIdentifiers{Phone: ptr("+14155552671")}},
			userJSON + `,"previous":{"email":null,"phone":"+14155552671"}}`},
		{"requested", webhook.VerificationRequestedData{VerificationData: v}, `{` + vJSON + `}`},
		{"resent", webhook.VerificationRequestedData{VerificationData: v, Resend: true}, `{` + vJSON + `,"resend":true}`},
		{"verified", webhook.VerificationVerifiedData{VerificationData: confirmed}, `{` + confirmedJSON + `}`},
		{"approved", webhook.VerificationVerifiedData{VerificationData: confirmed, ConsentDecision: "approved", DecidedBy: &by},
			`{` + confirmedJSON + `,"consent_decision":"approved","decided_by":` + byJSON + `}`},
		{"denied", webhook.VerificationDeniedData{VerificationData: confirmed, ConsentDecision: "denied", DenialReason: "not_requested", DecidedBy: by},
			`{` + confirmedJSON + `,"consent_decision":"denied","denial_reason":"not_requested","decided_by":` + byJSON + `}`},
		{"expired", webhook.VerificationExpiredData{VerificationData: v}, `{` + vJSON + `,"was_opened":false}`},
		{"failed", webhook.VerificationFailedData{VerificationData: v, Attempts: 5}, `{` + vJSON + `,"attempts":5}`},
		{"delivery failed", webhook.VerificationDeliveryFailedData{VerificationData: v, Error: "e", Channel: "sms"},
			`{` + vJSON + `,"error":"e","channel":"sms"}`},
		{"test verification", webhook.VerificationRequestedData{VerificationData: func() webhook.VerificationData { w := v; w.Test = true; return w }()},
			`{` + vJSON + `,"test":true}`},
		{"sms cap", webhook.SMSCapReachedData{Channel: "sms", Error: "sms_daily_cap_reached", MetaData: webhook.SMSCapMeta{DeliveryMethod: "sms"},
			Cap: webhook.SMSCap{Kind: "daily_cap", Limit: 0, WindowStart: t0, WindowEnd: t1}},
			`{"verification_id":null,"intent":null,"channel":"sms","error":"sms_daily_cap_reached","meta_data":{"delivery_method":"sms"},
			"cap":{"kind":"daily_cap","limit":0,"window_start":` + ts + `,"window_end":` + ts1 + `}}`},
		{"login failed", webhook.LoginFailedData{UserID: "u1", Method: "email_otp", VerificationID: "c1", Reason: "invalid_code", IPAddress: "203.0.113.7", Purpose: "mfa"},
			`{"user_id":"u1","method":"email_otp","verification_id":"c1","reason":"invalid_code","ip_address":"203.0.113.7","purpose":"mfa"}`},
		{"passkey refused", webhook.PasskeyLoginFailedData{Method: "webauthn", Purpose: "authenticate", Reason: "malformed", IPAddress: "203.0.113.7"},
			`{"user_id":null,"method":"webauthn","purpose":"authenticate","reason":"malformed","credential_id":null,"ip_address":"203.0.113.7"}`},
		{"passkey sign-in", webhook.PasskeySignInData{ChallengeID: "k1", Purpose: "authenticate", Method: "webauthn", UserID: "u1", PasskeyID: "p1",
			CredentialID: "cr", IPAddress: "203.0.113.7", CompletedAt: t1, Test: true},
			`{"challenge_id":"k1","purpose":"authenticate","method":"webauthn","user_id":"u1","passkey_id":"p1","credential_id":"cr",
			"ip_address":"203.0.113.7","device":{"os":"","browser":""},"completed_at":` + ts1 + `,"test":true}`},
		{"challenge created", webhook.ChallengeCreatedData{ChallengeData: ch, FirstFactor: "email_otp"}, `{` + chJSON + `,"first_factor":"email_otp"}`},
		{"custom challenge", webhook.ChallengeCreatedData{ChallengeData: func() webhook.ChallengeData { c := ch; c.Data = map[string]any{"k": "v"}; return c }()},
			`{` + chJSON + `,"data":{"k":"v"}}`},
		{"challenge completed", webhook.ChallengeCompletedData{ChallengeData: ch, CompletedAt: t1, ApprovedBySession: "s1"},
			`{` + chJSON + `,"completed_at":` + ts1 + `,"approved_by_session":"s1"}`},
		{"challenge expired", webhook.ChallengeFailedData{ChallengeData: ch, Reason: "expired"}, `{` + chJSON + `,"reason":"expired"}`},
		{"push denied", webhook.ChallengeFailedData{ChallengeData: ch, Reason: "denied", FailedAt: &t1, DeniedBySession: "s1"},
			`{` + chJSON + `,"reason":"denied","failed_at":` + ts1 + `,"denied_by_session":"s1"}`},
		{"webhook test", webhook.WebhookTestData{Message: "m", EndpointID: "e1"}, `{"message":"m","endpoint_id":"e1"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.data)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got, want any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
			t.Fatalf("%s: the wanted JSON: %v", tt.name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %s\nwant %s", tt.name, b, tt.want)
		}
	}
}

// TestEventsCoverEveryType: every event type an endpoint may subscribe to
// names the shapes of its data, and every payload type is some event's.
func TestEventsCoverEveryType(t *testing.T) {
	var types []string
	shapes := map[reflect.Type]bool{}
	for _, e := range webhook.Events() {
		types = append(types, e.Type)
		if len(e.Data) == 0 || e.When == "" {
			t.Errorf("%s: no data shape or no description", e.Type)
		}
		for _, d := range e.Data {
			shapes[reflect.TypeOf(d)] = true
		}
	}
	slices.Sort(types)
	if !slices.Equal(types, webhook.EventTypes()) || len(types) != 22 {
		t.Errorf("Events() = %v; want the %d event types %v", types, len(webhook.EventTypes()), webhook.EventTypes())
	}
	if len(shapes) != 18 {
		t.Errorf("Events() names %d payload types; want all 18 in payloads.go", len(shapes))
	}
}
