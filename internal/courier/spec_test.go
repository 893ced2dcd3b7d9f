package courier

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

// fullSpecs sets every field of every kind that has fields to a valid value.
var fullSpecs = map[string]map[string]string{
	"http": {"url": "https://sms.example.com/send", "channels": "email,sms", "token": "tok-secret-1", "secret": "hmac-secret-2", "from": "Acme"},
	"postmark": {"server_token": "pm-secret-3", "from": "Acme <no-reply@acme.example>", "message_stream": "outbound",
		"endpoint": "https://api.postmarkapp.com"},
	"smtp": {"host": "smtp.example.com", "port": "2525", "username": "u", "password": "smtp-secret-4", "auth_method": "login",
		"tls": "starttls", "from": "Acme <no-reply@acme.example>"},
	"twilio": {"account_sid": testAccountSID, "api_key_sid": testAPIKeySID, "api_key_secret": "twilio-secret-5", "from": "+15005550006",
		"messaging_service_sid": testServiceSID, "endpoint": "https://api.dublin.ie1.twilio.com"},
}

func TestKinds(t *testing.T) {
	ks := Kinds()
	types := make([]string, len(ks))
	for i, k := range ks {
		types[i] = k.Type
	}
	if want := []string{"http", "log", "outbox", "postmark", "smtp", "twilio"}; !slices.Equal(types, want) {
		t.Errorf("Kinds() types = %v; want %v (sorted)", types, want)
	}
	secrets := map[string]bool{"token": true, "secret": true, "server_token": true, "password": true, "auth_token": true, "api_key_secret": true}
	for _, k := range ks {
		if len(k.Channels) == 0 || k.Description == "" {
			t.Errorf("kind %s has no channels or description", k.Type)
		}
		for _, f := range k.Fields {
			if f.Secret != secrets[f.Name] {
				t.Errorf("%s.%s Secret = %v; want %v", k.Type, f.Name, f.Secret, secrets[f.Name])
			}
			if f.Description == "" {
				t.Errorf("%s.%s has no description", k.Type, f.Name)
			}
		}
		if len(k.Fields) > 0 {
			full := fullSpecs[k.Type]
			var names []string
			for _, f := range k.Fields {
				if k.Type == "twilio" && f.Name == "auth_token" { // the alternative to an API key, tested apart
					continue
				}
				names = append(names, f.Name)
			}
			if got := slices.Sorted(maps.Keys(full)); !slices.Equal(got, slices.Sorted(slices.Values(names))) {
				t.Errorf("fullSpecs[%s] sets %v; want every field %v", k.Type, got, names)
			}
		}
	}
	if k, ok := KindOf("twilio"); !ok || !k.Sends(ChannelSMS) || k.Sends(ChannelEmail) {
		t.Errorf("KindOf(twilio) = %+v, %v", k, ok)
	}
	if k, _ := KindOf("http"); !k.Sends(ChannelSMS) || !k.Sends(ChannelEmail) {
		t.Errorf("http kind channels = %v; want both", k.Channels)
	}
	if _, ok := KindOf("sendgrid"); ok {
		t.Errorf("KindOf(sendgrid) found")
	}
}

func TestFromSpec(t *testing.T) {
	with := func(typ string, edit map[string]string) Spec {
		c := maps.Clone(fullSpecs[typ])
		for k, v := range edit {
			if v == "-" {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return Spec{Type: typ, Config: c}
	}
	tests := []struct {
		name      string
		spec      Spec
		wantField string // "" => valid
	}{
		// http
		{"http full", with("http", nil), ""},
		{"http minimal", Spec{Type: "http", Config: map[string]string{"url": "https://sms.example.com/send"}}, ""},
		{"http local gateway", with("http", map[string]string{"url": "http://127.0.0.1:9000/sms"}), ""},
		{"http missing url", with("http", map[string]string{"url": "-"}), "url"},
		{"http plain remote url", with("http", map[string]string{"url": "http://sms.example.com/send"}), "url"},
		{"http url with password", with("http", map[string]string{"url": "https://u:pw@sms.example.com/send"}), "url"},
		{"http bad channels", with("http", map[string]string{"channels": "sms,fax"}), "channels"},
		{"http token with newline", with("http", map[string]string{"token": "a\nb"}), "token"},
		{"http secret with space", with("http", map[string]string{"secret": "a b"}), "secret"},
		{"http unknown field", with("http", map[string]string{"headers": "x"}), "headers"},
		// postmark
		{"postmark full", with("postmark", nil), ""},
		{"postmark missing token", with("postmark", map[string]string{"server_token": "-"}), "server_token"},
		{"postmark missing from", with("postmark", map[string]string{"from": "-"}), "from"},
		{"postmark bad from", with("postmark", map[string]string{"from": "Acme"}), "from"},
		{"postmark bad endpoint", with("postmark", map[string]string{"endpoint": "api.postmarkapp.com"}), "endpoint"},
		{"postmark bad stream", with("postmark", map[string]string{"message_stream": "a b"}), "message_stream"},
		{"postmark unknown field", with("postmark", map[string]string{"api_key": "x"}), "api_key"},
		// smtp
		{"smtp full", with("smtp", nil), ""},
		{"smtp missing host", with("smtp", map[string]string{"host": "-"}), "host"},
		{"smtp bad host", with("smtp", map[string]string{"host": "smtp.example.com/x"}), "host"},
		{"smtp bad port", with("smtp", map[string]string{"port": "70000"}), "port"},
		{"smtp bad tls", with("smtp", map[string]string{"tls": "ssl"}), "tls"},
		{"smtp bad from", with("smtp", map[string]string{"from": "nobody"}), "from"},
		{"smtp bad auth method", with("smtp", map[string]string{"auth_method": "xoauth2"}), "auth_method"},
		{"smtp password without user", with("smtp", map[string]string{"username": "-"}), "password"},
		{"smtp unknown field", with("smtp", map[string]string{"helo": "x"}), "helo"},
		// twilio
		{"twilio full", with("twilio", nil), ""},
		{"twilio auth token", Spec{Type: "twilio", Config: map[string]string{"account_sid": testAccountSID, "auth_token": "t", "from": "Acme"}}, ""},
		{"twilio missing account", with("twilio", map[string]string{"account_sid": "-"}), "account_sid"},
		{"twilio bad account", with("twilio", map[string]string{"account_sid": "AC1"}), "account_sid"},
		{"twilio no credentials", with("twilio", map[string]string{"api_key_sid": "-", "api_key_secret": "-"}), "auth_token"},
		{"twilio key without secret", with("twilio", map[string]string{"api_key_secret": "-"}), "api_key_secret"},
		{"twilio no sender", with("twilio", map[string]string{"from": "-", "messaging_service_sid": "-"}), "from"},
		{"twilio bad from", with("twilio", map[string]string{"from": "+1 (415) 555"}), "from"},
		{"twilio bad service", with("twilio", map[string]string{"messaging_service_sid": "MG1"}), "messaging_service_sid"},
		{"twilio bad endpoint", with("twilio", map[string]string{"endpoint": "http://api.twilio.com"}), "endpoint"},
		{"twilio secret with newline", with("twilio", map[string]string{"api_key_secret": "x\r\ny"}), "api_key_secret"},
		{"twilio unknown field", with("twilio", map[string]string{"sid": "x"}), "sid"},
		// others
		{"log", Spec{Type: "log"}, ""},
		{"log with a field", Spec{Type: "log", Config: map[string]string{"level": "warn"}}, "level"},
		{"outbox outside development", Spec{Type: "outbox"}, "type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := FromSpec(tt.spec, Env{})
			if tt.wantField == "" {
				if err != nil || p == nil {
					t.Fatalf("FromSpec() = %v, %v; want a provider", p, err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.wantField {
				t.Fatalf("FromSpec() error = %v; want a FieldError for %q", err, tt.wantField)
			}
			if !strings.HasPrefix(err.Error(), "config."+tt.wantField+": ") || fe.Reason == "" {
				t.Errorf("FromSpec() error text = %q", err)
			}
			for k, v := range tt.spec.Config {
				if len(v) > 3 && k != "from" && k != "host" && strings.Contains(err.Error(), v) {
					t.Errorf("FromSpec() error %q quotes the value of %s", err, k)
				}
			}
		})
	}
	if _, err := FromSpec(Spec{Type: "sendgrid"}, Env{}); !errors.Is(err, ErrUnknownType) {
		t.Errorf("FromSpec(sendgrid) error = %v; want ErrUnknownType", err)
	}
	// Several unknown fields: the first in name order is named, every time.
	for range 5 {
		_, err := FromSpec(Spec{Type: "http", Config: map[string]string{"url": "https://x.example", "zeta": "1", "alpha": "1", "mid": "1"}}, Env{})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "alpha" {
			t.Fatalf("FromSpec(unknown fields) error = %v; want alpha named", err)
		}
	}
}

func TestFromSpecBuildsWorkingProviders(t *testing.T) {
	f := startFake(t, func(r *recorded) fakeAnswer {
		switch {
		case strings.HasSuffix(r.path, "/email"):
			return fakeAnswer{status: 200, body: `{"ErrorCode":0,"Message":"OK","MessageID":"pm-1"}`}
		case strings.HasSuffix(r.path, "/Messages.json"):
			return fakeAnswer{status: 201, body: `{"sid":"SM1"}`}
		}
		return fakeAnswer{status: 200, body: `{"id":"h-1"}`}
	})
	env := Env{Client: f.Client(), Now: fixedNow}
	tests := []struct {
		spec Spec
		m    Message
		want string
	}{
		{Spec{Type: "http", Config: map[string]string{"url": f.URL + "/hook", "channels": "email"}},
			Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "s", Text: "t"}, "h-1"},
		{Spec{Type: "postmark", Config: map[string]string{"server_token": "x", "from": "a@acme.test", "endpoint": f.URL}},
			Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "s", Text: "t"}, "pm-1"},
		{Spec{Type: "twilio", Config: map[string]string{"account_sid": testAccountSID, "auth_token": "x", "from": "Acme", "endpoint": f.URL}},
			Message{Channel: ChannelSMS, To: "+14155552671", Text: "t"}, "SM1"},
	}
	for _, tt := range tests {
		p, err := FromSpec(tt.spec, env)
		if err != nil {
			t.Fatalf("FromSpec(%s) error = %v", tt.spec.Type, err)
		}
		if id, err := p.Send(context.Background(), tt.m); err != nil || id != tt.want {
			t.Errorf("%s Send() = %q, %v; want %q", tt.spec.Type, id, err, tt.want)
		}
	}
	p, _ := FromSpec(Spec{Type: "http", Config: map[string]string{"url": f.URL + "/hook", "channels": "email"}}, env)
	if cs, ok := p.(ChannelSender); !ok || cs.Sends(ChannelSMS) || !cs.Sends(ChannelEmail) {
		t.Errorf("http provider for e-mail only: ChannelSender %v", ok)
	}
}
