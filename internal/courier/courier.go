// Package courier sends outbound e-mail and SMS through pluggable providers.
//
// Messages carry secrets (one-time codes, magic and invitation links) in their bodies, so no provider except the
// development Outbox may log a body, code or link, and delivery errors never quote them.
package courier

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Channel is how a message travels.
type Channel string

// The channels a Message can use.
const (
	ChannelEmail Channel = "email"
	ChannelSMS   Channel = "sms"
)

// Message is one outbound message. Code and Link are the secret parts (one-time code, magic/invitation link); they are
// already rendered into Text/HTML by the caller or by Render; providers other than Outbox must never log them.
type Message struct {
	Channel Channel
	To      string // e-mail address or E.164 phone
	From    string // optional override; provider default otherwise
	Subject string // e-mail only
	Text    string
	HTML    string // e-mail only, optional
	Code    string // optional, kept only by the Outbox (dev) provider
	Link    string // optional, kept only by the Outbox (dev) provider
	AppID   string // optional, for the outbox and logs
}

// Provider delivers a message; it returns the provider's message id ("" if none).
type Provider interface {
	Send(ctx context.Context, m Message) (providerID string, err error)
}

// ErrDelivery wraps every provider failure (callers use errors.Is); the wrapped text must never include the message body.
var ErrDelivery = errors.New("courier: delivery failed")

// Router sends e-mail through one provider and SMS through another. A nil provider makes sends on its channel fail
// with ErrDelivery.
type Router struct {
	Email Provider
	SMS   Provider
}

// Send dispatches m by its channel. Failures always wrap ErrDelivery, even when a provider forgot to.
func (r Router) Send(ctx context.Context, m Message) (string, error) {
	var p Provider
	switch m.Channel {
	case ChannelEmail:
		p = r.Email
	case ChannelSMS:
		p = r.SMS
	default:
		return "", fmt.Errorf("%w: unknown channel %q", ErrDelivery, m.Channel)
	}
	if p == nil {
		return "", fmt.Errorf("%w: no provider for channel %q", ErrDelivery, m.Channel)
	}
	id, err := p.Send(ctx, m)
	if err != nil && !errors.Is(err, ErrDelivery) {
		return "", fmt.Errorf("%w: %s: %w", ErrDelivery, m.Channel, err)
	}
	return id, err
}

// SendError is a provider's answer that refused a message, classified for
// the send queue. Its text never holds the message body or full address.
type SendError struct {
	Provider   string        // provider type, e.g. "twilio"
	Status     int           // HTTP status or SMTP reply code; 0 when none
	Code       string        // the provider's own error code, when it gave one
	Temporary  bool          // the same message may go through later (timeouts, 429, 5xx)
	RetryAfter time.Duration // how long the provider asked to wait; 0 when it did not say
	Msg        string
}

func (e *SendError) Error() string {
	return ErrDelivery.Error() + ": " + e.Provider + ": " + e.Msg
}

func (e *SendError) Unwrap() error { return ErrDelivery }

// Temporary reports whether sending the same message again later may
// succeed, and how long the provider asked to wait (0 if it did not say).
// A failure no provider classified (a dropped connection, a timeout) counts
// as temporary; a *SendError says for itself.
func Temporary(err error) (bool, time.Duration) {
	var se *SendError
	if errors.As(err, &se) {
		return se.Temporary, se.RetryAfter
	}
	return err != nil, 0
}
