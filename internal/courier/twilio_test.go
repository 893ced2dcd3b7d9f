package courier

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	testAccountSID = "AC0123456789abcdef0123456789abcdef"
	testAPIKeySID  = "SK0123456789abcdef0123456789abcdef"
	testServiceSID = "MG0123456789abcdef0123456789abcdef"
	testAuthToken  = "twilio-auth-token-9c1e"
)

func newTestTwilio(t *testing.T, f *fakeAPI, edit func(*TwilioConfig)) *Twilio {
	t.Helper()
	cfg := TwilioConfig{AccountSID: testAccountSID, AuthToken: testAuthToken, From: "+15005550006", Endpoint: f.URL,
		Timeout: 2 * time.Second, Now: fixedNow}
	if edit != nil {
		edit(&cfg)
	}
	p, err := NewTwilio(cfg)
	if err != nil {
		t.Fatalf("NewTwilio() error = %v", err)
	}
	return p
}

// twilioCreated is a trimmed 201 answer of the Messages resource.
const twilioCreated = `{"account_sid":"` + testAccountSID + `","api_version":"2010-04-01","body":"x","direction":"outbound-api",` +
	`"error_code":null,"error_message":null,"from":"+15005550006","num_segments":"1","sid":"SM0123456789abcdef0123456789abcdef",` +
	`"status":"queued","to":"+14155552671","uri":"/2010-04-01/Accounts/` + testAccountSID + `/Messages/SM0123456789abcdef0123456789abcdef.json"}`

// twilioErrorBody is Twilio's error answer for code, with a message that names the number as Twilio's do.
func twilioErrorBody(code, status int, msg string) string {
	return `{"code":` + strconv.Itoa(code) + `,"message":"` + msg + `","more_info":"https://www.twilio.com/docs/errors/` + strconv.Itoa(code) + `","status":` + strconv.Itoa(status) + `}`
}

func TestTwilioSend(t *testing.T) {
	f := startFake(t, func(*recorded) fakeAnswer { return fakeAnswer{status: 201, body: twilioCreated} })
	tests := []struct {
		name     string
		edit     func(*TwilioConfig)
		m        Message
		user     string
		pass     string
		wantForm url.Values
	}{
		{name: "auth token and from", m: Message{Channel: ChannelSMS, To: "+14155552671", Text: "482913 is your code"},
			user: testAccountSID, pass: testAuthToken,
			wantForm: url.Values{"To": {"+14155552671"}, "From": {"+15005550006"}, "Body": {"482913 is your code"}}},
		{name: "api key and messaging service", edit: func(c *TwilioConfig) {
			c.AuthToken, c.APIKeySID, c.APIKeySecret, c.From, c.MessagingServiceSID = "", testAPIKeySID, "key-secret", "", testServiceSID
		}, m: Message{Channel: ChannelSMS, To: "+447700900123", Text: "hi"},
			user: testAPIKeySID, pass: "key-secret",
			wantForm: url.Values{"To": {"+447700900123"}, "MessagingServiceSid": {testServiceSID}, "Body": {"hi"}}},
		{name: "from override", m: Message{Channel: ChannelSMS, To: "+14155552671", From: "Acme", Text: "hi"},
			user: testAccountSID, pass: testAuthToken,
			wantForm: url.Values{"To": {"+14155552671"}, "From": {"Acme"}, "Body": {"hi"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestTwilio(t, f, tt.edit)
			id, err := p.Send(context.Background(), tt.m)
			if err != nil || id != "SM0123456789abcdef0123456789abcdef" {
				t.Fatalf("Send() = %q, %v; want the message sid", id, err)
			}
			r := f.last(t)
			if r.method != http.MethodPost || r.path != "/2010-04-01/Accounts/"+testAccountSID+"/Messages.json" {
				t.Errorf("request %s %s; want POST to the account's Messages.json", r.method, r.path)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
				t.Errorf("Content-Type = %q; want form encoding", ct)
			}
			req := &http.Request{Header: r.header}
			if user, pass, ok := req.BasicAuth(); !ok || user != tt.user || pass != tt.pass {
				t.Errorf("basic auth = %q/%q (%v); want %q/%q", user, pass, ok, tt.user, tt.pass)
			}
			form, err := url.ParseQuery(string(r.body))
			if err != nil {
				t.Fatalf("body is not a form: %v", err)
			}
			if form.Encode() != tt.wantForm.Encode() {
				t.Errorf("form = %v; want %v", form, tt.wantForm)
			}
		})
	}
}

func TestTwilioErrors(t *testing.T) {
	tests := []struct {
		name   string
		answer fakeAnswer
		want   wantClass
	}{
		{"invalid To", fakeAnswer{status: 400, body: twilioErrorBody(21211, 400, "The 'To' number +14155552671 is not a valid phone number.")},
			wantClass{status: 400, code: "21211", msg: "not a valid phone number"}},
		{"region not enabled", fakeAnswer{status: 400, body: twilioErrorBody(21408, 400, "Permission to send an SMS has not been enabled for the region indicated by the 'To' number: +14155552671.")},
			wantClass{status: 400, code: "21408", msg: "geo permissions"}},
		{"unsubscribed", fakeAnswer{status: 400, body: twilioErrorBody(21610, 400, "Attempt to send to unsubscribed recipient")},
			wantClass{status: 400, code: "21610", msg: "unsubscribed"}},
		{"not mobile", fakeAnswer{status: 400, body: twilioErrorBody(21614, 400, "'To' number is not a valid mobile number")},
			wantClass{status: 400, code: "21614", msg: "not a mobile number"}},
		{"bad From", fakeAnswer{status: 400, body: twilioErrorBody(21606, 400, "The From phone number +15005550006 is not a valid, SMS-capable inbound phone number or short code for your account.")},
			wantClass{status: 400, code: "21606", msg: "From"}},
		{"From not Twilio", fakeAnswer{status: 400, body: twilioErrorBody(21659, 400, "'From' +15005550006 is not a Twilio phone number or Short Code country mismatch")},
			wantClass{status: 400, code: "21659", msg: "From"}},
		{"landline", fakeAnswer{status: 400, body: twilioErrorBody(21635, 400, "'To' number cannot be a landline")},
			wantClass{status: 400, code: "21635", msg: "landline"}},
		{"unknown code", fakeAnswer{status: 400, body: twilioErrorBody(21999, 400, "Something new")},
			wantClass{status: 400, code: "21999"}},
		{"auth", fakeAnswer{status: 401, body: twilioErrorBody(20003, 401, "Authenticate")},
			wantClass{status: 401, code: "20003", msg: "authentication failed"}},
		{"auth without body", fakeAnswer{status: 401}, wantClass{status: 401, msg: "authentication failed"}},
		{"account not found", fakeAnswer{status: 404, body: twilioErrorBody(20404, 404, "The requested resource /2010-04-01/Accounts/"+testAccountSID+"/Messages.json was not found")},
			wantClass{status: 404, code: "20404"}},
		{"too many requests", fakeAnswer{status: 429, header: map[string]string{"Retry-After": "7"}, body: twilioErrorBody(20429, 429, "Too Many Requests")},
			wantClass{status: 429, code: "20429", temporary: true, retry: 7 * time.Second}},
		{"20429 on a 400", fakeAnswer{status: 400, body: twilioErrorBody(20429, 400, "Too Many Requests")},
			wantClass{status: 400, code: "20429", temporary: true}},
		{"429 without body", fakeAnswer{status: 429}, wantClass{status: 429, temporary: true, msg: "too many requests"}},
		{"server error", fakeAnswer{status: 500, body: twilioErrorBody(20500, 500, "Internal Server Error")},
			wantClass{status: 500, code: "20500", temporary: true}},
		{"unavailable", fakeAnswer{status: 503, header: map[string]string{"Retry-After": "60", "Content-Type": "text/html"}, body: "<html>Service Unavailable</html>"},
			wantClass{status: 503, temporary: true, retry: time.Minute, msg: "server error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startFake(t, func(*recorded) fakeAnswer { return tt.answer })
			p := newTestTwilio(t, f, nil)
			_, err := p.Send(context.Background(), Message{Channel: ChannelSMS, To: "+14155552671", Text: "482913 is your code"})
			se := sendErr(t, err)
			tt.want.check(t, se)
			for _, leak := range []string{"+14155552671", "+15005550006", "482913", testAuthToken, testAccountSID, "twilio.com/docs"} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error %q contains %q", err, leak)
				}
			}
		})
	}
}

func TestTwilioTransportErrors(t *testing.T) {
	slow := startFake(t, func(*recorded) fakeAnswer {
		return fakeAnswer{status: 201, body: twilioCreated, delay: 5 * time.Second}
	})
	p := newTestTwilio(t, slow, func(c *TwilioConfig) { c.Timeout = 100 * time.Millisecond })
	_, err := p.Send(context.Background(), Message{Channel: ChannelSMS, To: "+14155552671", Text: "t"})
	wantClass{temporary: true, msg: "timed out"}.check(t, sendErr(t, err))

	down := startFake(t, func(*recorded) fakeAnswer { return fakeAnswer{status: 201} })
	p = newTestTwilio(t, down, nil)
	down.Close()
	_, err = p.Send(context.Background(), Message{Channel: ChannelSMS, To: "+14155552671", Text: "t"})
	se := sendErr(t, err)
	wantClass{temporary: true, msg: "unreachable"}.check(t, se)
	if strings.Contains(err.Error(), testAccountSID) {
		t.Errorf("error %q quotes the URL with the account SID", err)
	}
}

func TestTwilioRefusesBadMessages(t *testing.T) {
	f := startFake(t, func(*recorded) fakeAnswer { return fakeAnswer{status: 201, body: twilioCreated} })
	p := newTestTwilio(t, f, nil)
	for name, m := range map[string]Message{
		"email":        {Channel: ChannelEmail, To: "ada@example.com", Text: "t"},
		"not E.164":    {Channel: ChannelSMS, To: "04155552671", Text: "t"},
		"bad override": {Channel: ChannelSMS, To: "+14155552671", From: "Far too long sender", Text: "t"},
	} {
		_, err := p.Send(context.Background(), m)
		if se := sendErr(t, err); se.Temporary || strings.Contains(se.Error(), m.To) {
			t.Errorf("Send(%s) = %v; want a permanent error without the full number", name, se)
		}
	}
	if len(f.reqs) != 0 {
		t.Errorf("the fake got %d requests; want none", len(f.reqs))
	}
}

func TestNewTwilioValidation(t *testing.T) {
	base := TwilioConfig{AccountSID: testAccountSID, AuthToken: "tok", From: "+15005550006"}
	tests := []struct {
		name      string
		edit      func(*TwilioConfig)
		wantField string
	}{
		{"valid", func(*TwilioConfig) {}, ""},
		{"valid alphanumeric from", func(c *TwilioConfig) { c.From = "Acme Corp" }, ""},
		{"valid short code", func(c *TwilioConfig) { c.From = "89757" }, ""},
		{"valid service only", func(c *TwilioConfig) { c.From, c.MessagingServiceSID = "", testServiceSID }, ""},
		{"valid api key", func(c *TwilioConfig) { c.AuthToken, c.APIKeySID, c.APIKeySecret = "", testAPIKeySID, "s" }, ""},
		{"bad account", func(c *TwilioConfig) { c.AccountSID = "AC123" }, "account_sid"},
		{"no credentials", func(c *TwilioConfig) { c.AuthToken = "" }, "auth_token"},
		{"token and key", func(c *TwilioConfig) { c.APIKeySID, c.APIKeySecret = testAPIKeySID, "s" }, "auth_token"},
		{"bad key sid", func(c *TwilioConfig) { c.AuthToken, c.APIKeySID, c.APIKeySecret = "", "SK1", "s" }, "api_key_sid"},
		{"key without secret", func(c *TwilioConfig) { c.AuthToken, c.APIKeySID = "", testAPIKeySID }, "api_key_secret"},
		{"secret without key", func(c *TwilioConfig) { c.AuthToken, c.APIKeySecret = "", "s" }, "api_key_sid"},
		{"no sender", func(c *TwilioConfig) { c.From = "" }, "from"},
		{"bad from", func(c *TwilioConfig) { c.From = "+1 415 555" }, "from"},
		{"digits only alpha", func(c *TwilioConfig) { c.From = "12345678901" }, "from"},
		{"bad service", func(c *TwilioConfig) { c.MessagingServiceSID = "MGxyz" }, "messaging_service_sid"},
		{"http endpoint", func(c *TwilioConfig) { c.Endpoint = "http://api.twilio.com" }, "endpoint"},
	}
	for _, tt := range tests {
		cfg := base
		tt.edit(&cfg)
		_, err := NewTwilio(cfg)
		field, _, _ := twilioField(err)
		if field != tt.wantField || (tt.wantField == "") != (err == nil) {
			t.Errorf("NewTwilio(%s) error = %v; want field %q", tt.name, err, tt.wantField)
		}
	}
}
