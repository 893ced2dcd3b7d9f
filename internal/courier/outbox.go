package courier

import (
	"context"
	"errors"
	"fmt"
)

// Outbox is the development provider: it hands every message to save (which persists it) and never sends anything.
// It is the only provider that keeps Code and Link, so that a developer can read them back.
type Outbox struct {
	save func(ctx context.Context, m Message) (id string, err error)
}

// NewOutbox returns an Outbox that persists messages with save; the id save returns becomes the provider id.
func NewOutbox(save func(ctx context.Context, m Message) (string, error)) *Outbox {
	return &Outbox{save: save}
}

// Send stores m through the save function.
func (o *Outbox) Send(ctx context.Context, m Message) (string, error) {
	if o == nil || o.save == nil {
		return "", fmt.Errorf("%w: outbox has no save function", ErrDelivery)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("%w: outbox: %w", ErrDelivery, err)
	}
	id, err := o.save(ctx, m)
	if err != nil {
		if errors.Is(err, ErrDelivery) {
			return "", err
		}
		return "", fmt.Errorf("%w: outbox save: %w", ErrDelivery, err)
	}
	return id, nil
}
