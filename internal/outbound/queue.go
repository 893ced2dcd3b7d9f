// The send queue (Queue) makes every outbound message (one-time codes, magic and
// invitation links, security notices) a durable River job, inserted in the
// same transaction as the challenge or change that causes it, and sends it
// from workers with retries. A request never waits for a provider, and a
// provider outage delays messages instead of losing them.
//
// The job row never holds a code or a link in clear: the whole rendered
// message is sealed with the master key (AES-GCM), its additional data
// binding it to the job's app and challenge.

package outbound

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/riverqueue/river"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/queue"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// QueueName is the River queue messages are sent from.
const QueueName = "messages"

// JobKind is the River kind of a message job.
const JobKind = "message"

// Args is a message job. Everything but Sealed is safe to show (logs, the
// River tables): the recipient is masked.
type Args struct {
	AppID string `json:"app_id"`
	// ChallengeID is the challenge the message carries a code or link for;
	// empty for messages that answer none (invitations, notices).
	ChallengeID string `json:"challenge_id,omitempty"`
	// Version is the fingerprint of the challenge's secret the message
	// carries: a resend replaces the secret, and the older message, if still
	// queued, is not sent.
	Version string `json:"version,omitempty"`
	// What the message is: the template it was rendered from (login_code,
	// magic_link, invitation, security_notice, code_locked, ...).
	What    string `json:"what"`
	Channel string `json:"channel"`
	To      string `json:"to"` // masked (courier.MaskAddress)
	// Sealed is the whole courier.Message as JSON, sealed with the master key.
	Sealed []byte `json:"sealed"`
}

// Kind names the job for River.
func (Args) Kind() string { return JobKind }

// Ref says what a message belongs to.
type Ref struct {
	// ChallengeID is the challenge whose code or link the message carries
	// ("" for none): the message is not sent once it is no longer pending,
	// and verification.{channel}.delivery_failed fires for it when it
	// cannot be sent.
	ChallengeID string
	// Version is Fingerprint(the challenge's SecretHash) when ChallengeID is set.
	Version string
}

// Fingerprint is the short form of a challenge's secret hash that a message
// job carries as its Version.
func Fingerprint(secretHash string) string {
	if len(secretHash) > 16 {
		return secretHash[:16]
	}
	return secretHash
}

// Queue enqueues messages. A nil *Queue refuses to.
type Queue struct {
	jobs        *queue.Queue
	sealer      *token.Sealer
	maxAttempts int
}

// NewQueue returns a Queue inserting on jobs; each message is tried at most
// maxAttempts times (0 means 10).
func NewQueue(jobs *queue.Queue, sealer *token.Sealer, maxAttempts int) *Queue {
	if maxAttempts <= 0 {
		maxAttempts = 10
	}
	return &Queue{jobs: jobs, sealer: sealer, maxAttempts: maxAttempts}
}

// ErrNoQueue is returned by a nil Queue.
var ErrNoQueue = errors.New("outbound: no send queue")

// Enqueue seals msg (what names it: its template) and inserts its job
// inside tx: it is sent, by a worker, only if tx commits, and is not lost
// once it has. Service.Send decides before that a message is to be sent at
// all (test identities get none).
func (q *Queue) Enqueue(ctx context.Context, tx *store.Tx, msg courier.Message, ref Ref, what string) error {
	if q == nil {
		return ErrNoQueue
	}
	if msg.AppID == "" {
		return errors.New("outbound: a message needs its app id")
	}
	plain, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	args := Args{AppID: msg.AppID, ChallengeID: ref.ChallengeID, Version: ref.Version, What: what,
		Channel: string(msg.Channel), To: courier.MaskAddress(msg.To)}
	if args.Sealed, err = q.sealer.Seal(plain, additionalData(args)); err != nil {
		return fmt.Errorf("outbound: seal message: %w", err)
	}
	return q.jobs.InsertTx(ctx, tx, args, &river.InsertOpts{Queue: QueueName, MaxAttempts: q.maxAttempts})
}

// additionalData binds a sealed message to its app, challenge and version:
// moved to another job's arguments it does not open.
func additionalData(a Args) []byte {
	return []byte("message\x00" + a.AppID + "\x00" + a.ChallengeID + "\x00" + a.Version)
}

// open unseals a job's message.
func open(sealer *token.Sealer, a Args) (courier.Message, error) {
	var msg courier.Message
	plain, err := sealer.Open(a.Sealed, additionalData(a))
	if err != nil {
		return msg, err
	}
	err = json.Unmarshal(plain, &msg)
	return msg, err
}
