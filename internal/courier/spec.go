package courier

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"syscall"
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
	// DialControl, when set, vets every address an SMTP provider dials
	// (net.Dialer.Control): the HTTP Client's guard, for SMTP hosts.
	DialControl func(network, address string, c syscall.RawConn) error
	Now         func() time.Time // optional clock (signatures, Retry-After dates); nil => time.Now
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
	{Type: "http", Description: "A JSON POST of each message to an HTTPS endpoint of yours (a gateway or an adapter in front of any carrier or mail API).",
		Channels: []Channel{ChannelEmail, ChannelSMS}, Fields: []Field{
			{Name: "url", Description: "Absolute https URL that receives each message: SMS as {channel, to, text, from}, e-mail as {channel, to, from, subject, text, html}", Required: true},
			{Name: "channels", Description: "What the endpoint accepts: sms (default), email, or email,sms"},
			{Name: "token", Description: "Sent as Authorization: Bearer <token>", Secret: true},
			{Name: "secret", Description: "HMAC-SHA256 key; set: every request carries X-Gatehouse-Signature: t=<unix>,v1=<hex HMAC of t.body>", Secret: true},
			{Name: "from", Description: "Default sender passed on as from (a sender id or an e-mail address)"},
		}},
	{Type: "log", Description: "Sends nothing: writes a line naming the masked recipient. For setups without a provider yet.",
		Channels: []Channel{ChannelEmail, ChannelSMS}},
	{Type: "outbox", Description: "Development only: keeps every message for /dev/outbox and sends nothing.",
		Channels: []Channel{ChannelEmail, ChannelSMS}},
	{Type: "postmark", Description: "Postmark's Email API (POST /email with a server token).",
		Channels: []Channel{ChannelEmail}, Fields: []Field{
			{Name: "server_token", Description: "Server API token (X-Postmark-Server-Token)", Required: true, Secret: true},
			{Name: "from", Description: "Sender with a confirmed Postmark sender signature or domain, e.g. Acme <no-reply@acme.example>", Required: true},
			{Name: "message_stream", Description: "Transactional message stream id; default outbound"},
			{Name: "endpoint", Description: "API base URL; default https://api.postmarkapp.com"},
		}},
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
	{Type: "twilio", Description: "Twilio Programmable Messaging (SMS through the Messages resource).",
		Channels: []Channel{ChannelSMS}, Fields: []Field{
			{Name: "account_sid", Description: "Account SID (AC…)", Required: true},
			{Name: "auth_token", Description: "Auth token of the account; or use api_key_sid and api_key_secret", Secret: true},
			{Name: "api_key_sid", Description: "API key SID (SK…), instead of the auth token"},
			{Name: "api_key_secret", Description: "API key secret, with api_key_sid", Secret: true},
			{Name: "from", Description: "Sender: E.164 number, short code or alphanumeric sender id; or use messaging_service_sid"},
			{Name: "messaging_service_sid", Description: "Messaging Service SID (MG…); Twilio picks the sender from its pool"},
			{Name: "endpoint", Description: "API base URL for another Twilio region, e.g. https://api.dublin.ie1.twilio.com; default https://api.twilio.com"},
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

// ChannelSender is implemented by providers whose settings narrow the
// channels of their Kind (an http provider set up for SMS only): routing
// should ask the provider, not only its Kind, before sending on a channel.
type ChannelSender interface {
	Sends(ch Channel) bool
}

// Sends reports whether k can send on ch.
func (k Kind) Sends(ch Channel) bool { return slices.Contains(k.Channels, ch) }

// ChannelsWith is what a provider of kind k with settings config sends: the
// Kind's channels, narrowed by a "channels" setting where the kind has one
// (an http provider sends SMS only unless told otherwise). Values that are
// not channels are ignored here; FromSpec refuses them.
func (k Kind) ChannelsWith(config map[string]string) []Channel {
	if !slices.ContainsFunc(k.Fields, func(f Field) bool { return f.Name == "channels" }) {
		return slices.Clone(k.Channels)
	}
	v := config["channels"]
	if v == "" {
		v = string(ChannelSMS)
	}
	var out []Channel
	for _, ch := range k.Channels { // in the Kind's order, each once
		for part := range strings.SplitSeq(v, ",") {
			if Channel(strings.TrimSpace(part)) == ch {
				out = append(out, ch)
				break
			}
		}
	}
	return out
}

// FromSpec validates s and builds its provider. A bad or missing setting is
// a *FieldError naming it; an unknown type is ErrUnknownType. Settings not
// in the Kind are refused too, so a typo does not pass silently.
func FromSpec(s Spec, env Env) (Provider, error) {
	k, ok := KindOf(s.Type)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownType, s.Type)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Config)) {
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
		return httpFromSpec(c, env)
	case "postmark":
		return postmarkFromSpec(c, env)
	case "smtp":
		return smtpFromSpec(c, env)
	case "twilio":
		return twilioFromSpec(c, env)
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownType, s.Type)
}
