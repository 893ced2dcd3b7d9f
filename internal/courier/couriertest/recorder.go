// Package couriertest provides an in-memory courier provider for other packages' tests.
package couriertest

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
)

// Recorder is a courier.Provider that keeps every message it is asked to send, so tests can read codes and links
// back. It is safe for concurrent use. The zero value is ready to use.
type Recorder struct {
	// Err, when non-nil, makes Send fail with an error wrapping both courier.ErrDelivery and Err; nothing is
	// recorded then. Set it before the Recorder is shared between goroutines.
	Err error

	mu   sync.Mutex
	msgs []courier.Message
}

// Send records m and returns an id of the form "rec-N", where N counts recorded messages from 1.
func (r *Recorder) Send(ctx context.Context, m courier.Message) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("%w: recorder: %w", courier.ErrDelivery, err)
	}
	if r.Err != nil {
		return "", fmt.Errorf("%w: recorder: %w", courier.ErrDelivery, r.Err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m)
	return "rec-" + strconv.Itoa(len(r.msgs)), nil
}

// Messages returns a copy of the recorded messages, oldest first.
func (r *Recorder) Messages() []courier.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]courier.Message, len(r.msgs))
	copy(out, r.msgs)
	return out
}

// Last returns the most recent message sent to the address to, and whether there was one.
func (r *Recorder) Last(to string) (courier.Message, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.msgs) - 1; i >= 0; i-- {
		if r.msgs[i].To == to {
			return r.msgs[i], true
		}
	}
	return courier.Message{}, false
}
