package courier

import (
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The per-type halves of FromSpec: each checks its settings, naming the
// setting in a *FieldError, and builds the provider. Reasons never quote a
// value, since some are secrets.

// specTimeout bounds every send of a provider built from a Spec.
const specTimeout = 10 * time.Second

// headerSafe reports whether v can travel in an HTTP header: no spaces and
// no control characters.
func headerSafe(v string) bool {
	return !strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })
}

// endpointField checks an optional URL setting; "" keeps the default.
func endpointField(c map[string]string, name string) error {
	if v := c[name]; v != "" {
		if _, err := checkEndpoint(v); err != nil {
			return &FieldError{Field: name, Reason: err.Error()}
		}
	}
	return nil
}

// secretField checks an optional secret setting that travels in a header.
func secretField(c map[string]string, name string) error {
	if !headerSafe(c[name]) {
		return &FieldError{Field: name, Reason: "must not contain spaces or control characters"}
	}
	return nil
}

func httpFromSpec(c map[string]string, env Env) (Provider, error) {
	if _, err := checkEndpoint(c["url"]); err != nil {
		return nil, &FieldError{Field: "url", Reason: err.Error()}
	}
	for _, name := range []string{"token", "secret"} {
		if err := secretField(c, name); err != nil {
			return nil, err
		}
	}
	var channels []Channel
	if v := c["channels"]; v != "" {
		for _, part := range strings.Split(v, ",") {
			ch := Channel(strings.TrimSpace(part))
			if ch != ChannelSMS && ch != ChannelEmail {
				return nil, &FieldError{Field: "channels", Reason: "must be sms, email, or email,sms"}
			}
			if !slices.Contains(channels, ch) {
				channels = append(channels, ch)
			}
		}
	}
	if strings.ContainsFunc(c["from"], unicode.IsControl) {
		return nil, &FieldError{Field: "from", Reason: "must not contain control characters"}
	}
	p, err := NewHTTPSMS(HTTPSMSConfig{URL: c["url"], Token: c["token"], Secret: c["secret"], From: c["from"],
		Channels: channels, Timeout: specTimeout, Client: env.Client, Now: env.Now})
	if err != nil {
		return nil, &FieldError{Field: "url", Reason: "must be an absolute https URL"}
	}
	return p, nil
}

func postmarkFromSpec(c map[string]string, env Env) (Provider, error) {
	if err := secretField(c, "server_token"); err != nil {
		return nil, err
	}
	if _, err := mail.ParseAddress(c["from"]); err != nil {
		return nil, &FieldError{Field: "from", Reason: "must be an e-mail address, e.g. Acme <no-reply@acme.example>"}
	}
	if v := c["message_stream"]; v != "" && !headerSafe(v) {
		return nil, &FieldError{Field: "message_stream", Reason: "must be a message stream id"}
	}
	if err := endpointField(c, "endpoint"); err != nil {
		return nil, err
	}
	p, err := NewPostmark(PostmarkConfig{ServerToken: c["server_token"], From: c["from"], MessageStream: c["message_stream"],
		Endpoint: c["endpoint"], Timeout: specTimeout, Client: env.Client, Now: env.Now})
	if err != nil {
		return nil, &FieldError{Field: "server_token", Reason: "is invalid"}
	}
	return p, nil
}

func twilioFromSpec(c map[string]string, env Env) (Provider, error) {
	for _, name := range []string{"auth_token", "api_key_secret"} {
		if err := secretField(c, name); err != nil {
			return nil, err
		}
	}
	if err := endpointField(c, "endpoint"); err != nil {
		return nil, err
	}
	p, err := NewTwilio(TwilioConfig{AccountSID: c["account_sid"], AuthToken: c["auth_token"], APIKeySID: c["api_key_sid"],
		APIKeySecret: c["api_key_secret"], From: c["from"], MessagingServiceSID: c["messaging_service_sid"],
		Endpoint: c["endpoint"], Timeout: specTimeout, Client: env.Client, Now: env.Now})
	if err != nil {
		if field, reason, ok := twilioField(err); ok {
			return nil, &FieldError{Field: field, Reason: reason}
		}
		return nil, &FieldError{Field: "account_sid", Reason: "is invalid"}
	}
	return p, nil
}

func smtpFromSpec(c map[string]string, env Env) (Provider, error) {
	port := 0
	if v := c["port"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return nil, &FieldError{Field: "port", Reason: "must be a port number (1-65535)"}
		}
		port = n
	}
	tlsPolicy := TLSPolicy(c["tls"])
	if tlsPolicy == "" {
		tlsPolicy = TLSMandatory
	}
	if !tlsPolicy.Valid() {
		return nil, &FieldError{Field: "tls", Reason: "must be starttls-required, starttls, tls or none"}
	}
	if h := c["host"]; strings.TrimSpace(h) != h || strings.ContainsFunc(h, func(r rune) bool { return unicode.IsSpace(r) || r == '/' }) {
		return nil, &FieldError{Field: "host", Reason: "must be a host name"}
	}
	if _, err := mail.ParseAddress(c["from"]); err != nil {
		return nil, &FieldError{Field: "from", Reason: "must be an e-mail address, e.g. Acme <no-reply@acme.example>"}
	}
	switch strings.ToLower(c["auth_method"]) {
	case "", "plain", "login", "cram-md5":
	default:
		return nil, &FieldError{Field: "auth_method", Reason: "must be plain, login or cram-md5"}
	}
	if c["username"] == "" {
		for _, name := range []string{"password", "auth_method"} {
			if c[name] != "" {
				return nil, &FieldError{Field: name, Reason: "needs a username"}
			}
		}
	}
	p, err := NewSMTP(SMTPConfig{Host: c["host"], Port: port, Username: c["username"], Password: c["password"],
		AuthMethod: c["auth_method"], TLS: tlsPolicy, From: c["from"], Timeout: specTimeout, DialControl: env.DialControl})
	if err != nil {
		return nil, &FieldError{Field: "host", Reason: "is invalid"}
	}
	return p, nil
}
