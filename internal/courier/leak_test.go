package courier

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"
)

// TestErrorsNeverLeak sends a message full of secrets through every
// provider against servers that echo everything they got back in their
// error answers, and checks no error text holds a secret, the body, the
// subject, the full address or the provider's own words.
func TestErrorsNeverLeak(t *testing.T) {
	const (
		code      = "736150"
		link      = "https://acme.test/magic?t=lnk_Q9zzS3cr3t"
		token     = "tok_L3akMe"
		secret    = "hmac_L3akMe"
		authToken = "auth_L3akMe"
	)
	m := func(ch Channel, to string) Message {
		return Message{Channel: ch, To: to, Subject: "Code " + code, Text: "Your code is " + code + " or open " + link,
			HTML: "<a href=\"" + link + "\">" + code + "</a>", Code: code, Link: link}
	}
	forbidden := func(msg Message) []string {
		basic := base64.StdEncoding.EncodeToString([]byte(testAccountSID + ":" + authToken))
		return []string{code, link, "lnk_Q9zzS3cr3t", token, secret, authToken, basic, msg.To, msg.Subject, msg.Text, msg.HTML, "ECHO"}
	}
	// echo answers with everything the request carried.
	echo := func(status int) func(r *recorded) fakeAnswer {
		return func(r *recorded) fakeAnswer {
			body := fmt.Sprintf(`{"code":21211,"ErrorCode":300,"message":"ECHO %q %q","Message":"ECHO %q","more_info":"https://www.twilio.com/docs/errors/21211"}`,
				r.body, r.header, r.body)
			return fakeAnswer{status: status, body: body, header: map[string]string{"Retry-After": "1", "X-Echo": r.header.Get("Authorization")}}
		}
	}
	for _, status := range []int{400, 401, 422, 429, 500, 503} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			f := startFake(t, echo(status))
			providers := []struct {
				name string
				p    Provider
				msg  Message
			}{
				{"http", newTestHTTP(t, f, func(c *HTTPSMSConfig) { c.Token, c.Secret = token, secret }), m(ChannelSMS, "+14155552671")},
				{"postmark", newTestPostmark(t, f, func(c *PostmarkConfig) { c.ServerToken = token }), m(ChannelEmail, "ada.lovelace@example.com")},
				{"twilio", newTestTwilio(t, f, func(c *TwilioConfig) { c.AuthToken = authToken }), m(ChannelSMS, "+14155552671")},
			}
			for _, tt := range providers {
				_, err := tt.p.Send(context.Background(), tt.msg)
				se := sendErr(t, err)
				for _, s := range forbidden(tt.msg) {
					if strings.Contains(err.Error(), s) || strings.Contains(se.Code, s) {
						t.Errorf("%s: error %q (code %q) contains %q", tt.name, err, se.Code, s)
					}
				}
			}
		})
	}

	for _, reply := range []*smtp.SMTPError{
		{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "ECHO <ada.lovelace@example.com> unknown, code " + code},
		{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "ECHO " + link},
	} {
		ts := startServer(t, serverOptions{dataErr: reply})
		s := newTestSMTP(t, ts, TLSNone, func(c *SMTPConfig) { c.Password, c.Username = "", "" })
		msg := m(ChannelEmail, "Ada <ada.lovelace@example.com>")
		_, err := s.Send(context.Background(), msg)
		sendErr(t, err)
		for _, s := range append(forbidden(msg), "ada.lovelace@example.com") {
			if strings.Contains(err.Error(), s) {
				t.Errorf("smtp: error %q contains %q", err, s)
			}
		}
	}
}
