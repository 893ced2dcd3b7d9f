package server

import (
	"errors"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
)

// The server-wide providers (the default of apps without their own) are
// built from the settings; a setting the provider refuses names itself.
func TestServerWideProviders(t *testing.T) {
	base := func() config.Config {
		return config.Config{Mail: config.Mail{From: "Acme <no-reply@acme.example>"},
			Postmark: config.Postmark{MessageStream: "outbound"}}
	}

	c := base()
	c.Mail.Provider, c.Postmark.ServerToken = "postmark", "0b5a3c1e-6f4d-4c2a-9e1b-7d8f9a0b1c2d"
	c.SMS.Provider, c.Twilio.AccountSID, c.Twilio.AuthToken = "twilio", "AC"+hex32, "a-twilio-auth-token"
	c.Twilio.MessagingServiceSID = "MG" + hex32
	p, err := newCourier(c, nil, nil, nil)
	if err != nil {
		t.Fatalf("newCourier(postmark, twilio) = %v", err)
	}
	r, ok := p.(courier.Router)
	if !ok {
		t.Fatalf("newCourier = %T; want a courier.Router", p)
	}
	if _, ok := r.Email.(*courier.Postmark); !ok {
		t.Errorf("e-mail provider = %T; want *courier.Postmark", r.Email)
	}
	if _, ok := r.SMS.(*courier.Twilio); !ok {
		t.Errorf("SMS provider = %T; want *courier.Twilio", r.SMS)
	}

	c = base()
	c.SMS.Provider, c.Twilio.AccountSID, c.Twilio.AuthToken, c.SMS.From = "twilio", "not-a-sid", "tok", "+14155550100"
	var se *config.SettingError
	if _, err := newCourier(c, nil, nil, nil); !errors.As(err, &se) || se.Key != "twilio.account_sid" {
		t.Errorf("newCourier(bad account sid) = %v; want a SettingError for twilio.account_sid", err)
	}
}

const hex32 = "0123456789abcdef0123456789abcdef"
