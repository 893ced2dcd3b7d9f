package courier

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Outbox is the development provider: it keeps every message where a
// developer can read it back (the dev server's /dev/outbox) and never sends
// anything. It is the only provider that keeps Code and Link.
type Outbox struct {
	keep OutboxStore

	mu      sync.Mutex
	changed chan struct{}            // closed and replaced after each kept message
	waiting map[string]chan struct{} // by recipient: closed when one is kept for them
}

// OutboxStore is where the Outbox keeps messages.
type OutboxStore interface {
	// Save keeps m and returns its id.
	Save(ctx context.Context, m Message) (id string, err error)
	// List returns the newest kept messages, only those to one recipient when to is set.
	List(ctx context.Context, to string, limit int) ([]Kept, error)
}

// Kept is a message the Outbox kept.
type Kept struct {
	ID string
	Message
	CreatedAt time.Time
}

// NewOutbox returns an Outbox that keeps messages in keep; the id Save
// returns becomes the provider id.
func NewOutbox(keep OutboxStore) *Outbox {
	return &Outbox{keep: keep, changed: make(chan struct{}), waiting: map[string]chan struct{}{}}
}

// Changed returns a channel closed when this process next keeps a message
// to the recipient to (any message when to is ""), so a reader can wait
// for one instead of polling. Waiting for one recipient is woken by its
// messages only, not by everyone's. (Messages kept by another replica do
// not close it.)
func (o *Outbox) Changed(to string) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if to == "" {
		return o.changed
	}
	ch := o.waiting[to]
	if ch == nil && len(o.waiting) >= 10000 {
		// Readers who gave up leave their recipients here: wake everyone
		// (each looks again and waits anew) rather than grow without end.
		for r, c := range o.waiting {
			close(c)
			delete(o.waiting, r)
		}
	}
	if ch == nil {
		ch = make(chan struct{})
		o.waiting[to] = ch
	}
	return ch
}

// Waiting reports whether a reader waits for a message to the recipient to
// (it asked Changed(to) and none has been kept since): a test sends one
// once it is true, so the reader is woken rather than served at once.
func (o *Outbox) Waiting(to string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.waiting[to] != nil
}

// Send keeps m.
func (o *Outbox) Send(ctx context.Context, m Message) (string, error) {
	if o == nil || o.keep == nil {
		return "", fmt.Errorf("%w: outbox has no store", ErrDelivery)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("%w: outbox: %w", ErrDelivery, err)
	}
	id, err := o.keep.Save(ctx, m)
	if err != nil {
		if errors.Is(err, ErrDelivery) {
			return "", err
		}
		return "", fmt.Errorf("%w: outbox save: %w", ErrDelivery, err)
	}
	o.mu.Lock()
	close(o.changed)
	o.changed = make(chan struct{})
	if ch := o.waiting[m.To]; ch != nil {
		close(ch)
		delete(o.waiting, m.To)
	}
	o.mu.Unlock()
	return id, nil
}

// List returns the newest kept messages, to one recipient when to is set.
func (o *Outbox) List(ctx context.Context, to string, limit int) ([]Kept, error) {
	return o.keep.List(ctx, to, limit)
}
