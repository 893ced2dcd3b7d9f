package servertest

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/courier/couriertest"
)

// settleTimeout is the longest a reader of the Mailbox waits for the send
// queue to empty.
const settleTimeout = 15 * time.Second

// Mailbox is the recording courier of a test system: the send queue's
// workers hand it every message. Messages are sent after the request that
// caused them has answered, so its readers (Messages, Last) first wait, with
// a deadline, until the send queue has nothing left to send or retry: what
// they return is then everything the requests so far caused.
type Mailbox struct {
	rec couriertest.Recorder

	mu     sync.Mutex
	err    error
	settle func(context.Context) error
}

// Send records m, or fails while Fail is in force.
func (m *Mailbox) Send(ctx context.Context, msg courier.Message) (string, error) {
	m.mu.Lock()
	err := m.err
	m.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("%w: recorder: %w", courier.ErrDelivery, err)
	}
	return m.rec.Send(ctx, msg)
}

// Fail makes every Send fail with an error wrapping courier.ErrDelivery and
// err (a temporary failure, as an unclassified error is); nil ends it.
func (m *Mailbox) Fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = err
}

// Settle waits until the send queue has nothing left to send or retry, and
// panics after settleTimeout: a test reading messages cannot go on.
func (m *Mailbox) Settle() {
	if m.settle == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := m.settle(ctx); err != nil {
		panic(fmt.Sprintf("servertest: the send queue did not empty: %v", err))
	}
}

// Messages waits for the send queue to settle and returns every message
// sent so far, oldest first.
func (m *Mailbox) Messages() []courier.Message {
	m.Settle()
	return m.rec.Messages()
}

// Last waits for the send queue to settle and returns the newest message to
// the address to, and whether there was one.
func (m *Mailbox) Last(to string) (courier.Message, bool) {
	m.Settle()
	return m.rec.Last(to)
}

// LastCode waits for the send queue to settle and returns the code of the
// newest message to to that carries one: a notice sent by the same request
// (a security notice, say) may arrive after the code.
func (m *Mailbox) LastCode(to string) (string, bool) {
	msgs := m.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].To != to {
			continue
		}
		if msgs[i].Code != "" {
			return msgs[i].Code, true
		}
		if c := sixDigits.FindString(msgs[i].Text); c != "" {
			return c, true
		}
	}
	return "", false
}

// sixDigits is a code in a message's text (the recorder keeps no Code).
var sixDigits = regexp.MustCompile(`\b\d{6}\b`)
