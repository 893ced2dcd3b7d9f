package courier

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Spec names a provider and its settings as an app stores them: a type and
// flat string settings. Secret settings (Field.Secret) arrive here in clear;
// whoever stores a Spec encrypts them and never shows them again.
type Spec struct {
	Type   string
	Config map[string]string
}

// Kind describes one provider type that apps may configure.
type Kind struct {
	Type        string
	Description string
	Channels    []Channel // what the type can send
	Fields      []Field
}

// Field is one setting of a Kind.
type Field struct {
	Name        string
	Description string
	Required    bool
	Secret      bool // stored encrypted, never returned (shown as a redacted hint)
}

// Env is what FromSpec needs from outside a Spec. Client dials every HTTP
// provider: the assembly passes one that refuses private addresses, since
// app admins choose the URLs. Dial, when set, is used for SMTP for the same
// reason.
type Env struct {
	Outbox *Outbox
	Log    *slog.Logger
	Client *http.Client
}

// FieldError is a Spec setting that is missing or wrong; Field is the
// setting's name, so callers can answer "config.<field>: <reason>".
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return "config." + e.Field + ": " + e.Reason }

// ErrUnknownType is a Spec whose Type is not one of Kinds.
var ErrUnknownType = errors.New("courier: unknown provider type")

// kinds is every provider type an app may configure, sorted by type.
var kinds = []Kind{
	{Type: "http", Description: "A JSON POST of each message to an HTTPS endpoint of yours (a gateway or an adapter in front of any carrier).",
		Channels: []Channel{ChannelSMS}, Fields: []Field{
			{Name: "url", Description: "Absolute https URL that receives {to, text, from}", Required: true},
			{Name: "token", Description: "Sent as Authorization: Bearer <token>", Secret: true},
			{Name: "from", Description: "Sender id passed on as from"},
		}},
	{Type: "log", Description: "Sends nothing: writes a line naming the masked recipient. For setups without a provider yet.",
		Channels: []Channel{ChannelEmail, ChannelSMS}},
	{Type: "outbox", Description: "Development only: keeps every message for /dev/outbox and sends nothing.",
		Channels: []Channel{ChannelEmail, ChannelSMS}},
	{Type: "smtp", Description: "Any SMTP server (STARTTLS, implicit TLS or plain).",
		Channels: []Channel{ChannelEmail}, Fields: []Field{
			{Name: "host", Description: "SMTP server host name", Required: true},
			{Name: "port", Description: "Port; default 587, 465 with tls, 25 with none"},
			{Name: "username", Description: "User for SMTP AUTH; empty sends without AUTH"},
			{Name: "password", Description: "Password for SMTP AUTH", Secret: true},
			{Name: "auth_method", Description: "plain (default), login or cram-md5"},
			{Name: "tls", Description: "starttls-required (default), starttls, tls or none"},
			{Name: "from", Description: "Sender, e.g. Acme <no-reply@acme.example>", Required: true},
		}},
}

// Kinds returns every provider type an app may configure, sorted by type.
func Kinds() []Kind { return slices.Clone(kinds) }

// KindOf returns the Kind of typ.
func KindOf(typ string) (Kind, bool) {
	i := slices.IndexFunc(kinds, func(k Kind) bool { return k.Type == typ })
	if i < 0 {
		return Kind{}, false
	}
	return kinds[i], true
}

// Sends reports whether k can send on ch.
func (k Kind) Sends(ch Channel) bool { return slices.Contains(k.Channels, ch) }

// FromSpec validates s and builds its provider. A bad or missing setting is
// a *FieldError naming it; an unknown type is ErrUnknownType. Settings not
// in the Kind are refused too, so a typo does not pass silently.
func FromSpec(s Spec, env Env) (Provider, error) {
	k, ok := KindOf(s.Type)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownType, s.Type)
	}
	for name := range s.Config {
		if !slices.ContainsFunc(k.Fields, func(f Field) bool { return f.Name == name }) {
			return nil, &FieldError{Field: name, Reason: "is not a setting of " + s.Type + " providers"}
		}
	}
	for _, f := range k.Fields {
		if f.Required && s.Config[f.Name] == "" {
			return nil, &FieldError{Field: f.Name, Reason: "is required"}
		}
	}
	c := s.Config
	switch s.Type {
	case "log":
		return NewLog(env.Log), nil
	case "outbox":
		if env.Outbox == nil {
			return nil, &FieldError{Field: "type", Reason: "outbox is available in development mode only"}
		}
		return env.Outbox, nil
	case "http":
		p, err := NewHTTPSMS(HTTPSMSConfig{URL: c["url"], Token: c["token"], From: c["from"], Client: env.Client})
		if err != nil {
			return nil, &FieldError{Field: "url", Reason: "must be an absolute https URL"}
		}
		return p, nil
	case "smtp":
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
		p, err := NewSMTP(SMTPConfig{Host: c["host"], Port: port, Username: c["username"], Password: c["password"],
			AuthMethod: c["auth_method"], TLS: tlsPolicy, From: c["from"], Timeout: 10 * time.Second})
		if err != nil {
			return nil, &FieldError{Field: "host", Reason: err.Error()}
		}
		return p, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownType, s.Type)
}
