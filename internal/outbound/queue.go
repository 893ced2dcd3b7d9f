// The send queue (Queue) makes every outbound message (one-time codes, magic and
// invitation links, security notices) a durable row of queued_messages,
// inserted in the same transaction as the challenge or change that causes
// it. The process that committed it sends it right after the commit
// (Sender), and the row is the fallback that any replica sends once it is
// due: after a failed try's backoff, or when the direct try never ended. A
// request never waits for a provider, and a provider outage delays messages
// instead of losing them.
//
// The row never holds a code or a link in clear: the whole rendered message
// is sealed with the master key (AES-GCM), its additional data binding it
// to its app, challenge and version.
//
// Earlier releases queued messages as River jobs (QueueName, JobKind, Args);
// Worker still sends those, so a rolling upgrade loses none.

package outbound

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// QueueName is the River queue earlier releases queued messages on.
const QueueName = "messages"

// JobKind is the River kind of a message job.
const JobKind = "message"

// Args is a message job of an earlier release, and what a sealed message's
// additional data is made of. Everything but Sealed is safe to show (logs,
// the River tables): the recipient is masked.
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
	// Supersedes, when set, names the messages this one replaces: committing
	// a challenge with it superseded the earlier ones of the same name (a
	// resent sign-in code), so their messages, if not yet tried here, are
	// dropped without reading their challenges again. Empty: the direct
	// try reads the challenge like any other.
	Supersedes string
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
	sealer      *token.Sealer
	maxAttempts int
	now         func() time.Time
	// handoff takes committed messages to this process's Sender for their
	// direct try; when it is full (or no Sender runs: a command-line
	// process), the sweep sends them once their lease ends.
	handoff chan handoff
	// newest holds, by Ref.Supersedes, the challenge of the newest message
	// committed in this process (entries go once that message is done).
	newest sync.Map
	// senders counts the Senders running on this queue: with none (a
	// command-line process), a message is due at once, for the serving
	// replicas' sweeps, instead of waiting out a direct try's lease.
	senders atomic.Int32
}

// QueueDeps are the Queue's parts.
type QueueDeps struct {
	Sealer *token.Sealer
	// MaxAttempts bounds the tries of each message (0 means 10).
	MaxAttempts int
	Now         func() time.Time
}

// NewQueue returns a Queue.
func NewQueue(d QueueDeps) *Queue {
	if d.MaxAttempts <= 0 {
		d.MaxAttempts = 10
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Queue{sealer: d.Sealer, maxAttempts: d.MaxAttempts, now: d.Now, handoff: make(chan handoff, 4096)}
}

// ErrNoQueue is returned by a nil Queue.
var ErrNoQueue = errors.New("outbound: no send queue")

// Enqueue seals msg (what names it: its template) and inserts its row
// inside tx; once tx commits, the message is handed to this process's
// Sender, which tries it at once. It is not lost once tx has committed: the
// row stays until the message is sent or given up. Service.Send decides
// before that a message is to be sent at all (test identities get none).
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
	args := Args{AppID: msg.AppID, ChallengeID: ref.ChallengeID, Version: ref.Version}
	sealed, err := q.sealer.Seal(plain, additionalData(args))
	if err != nil {
		return fmt.Errorf("outbound: seal message: %w", err)
	}
	now := q.now()
	row := store.QueuedMessage{ID: uuid.Must(uuid.NewV7()).String(), AppID: msg.AppID, ChallengeID: ref.ChallengeID,
		Version: ref.Version, What: what, Channel: string(msg.Channel), Recipient: courier.MaskAddress(msg.To), Sealed: sealed,
		Attempts: 1, MaxAttempts: q.maxAttempts, RunAt: now.Add(Lease), CreatedAt: now}
	if q.senders.Load() == 0 {
		row.Attempts, row.RunAt = 0, now
	}
	// Deferred: the row goes out with the transaction's COMMIT, its
	// round trip shared (nothing reads the insert's answer).
	if err := tx.Deferred(nil).QueueMessage(ctx, row); err != nil {
		return err
	}
	if row.Attempts == 0 {
		return nil
	}
	tx.AfterCommit(func() {
		if ref.Supersedes != "" {
			q.newest.Store(ref.Supersedes, ref.ChallengeID)
		}
		select {
		case q.handoff <- handoff{row: row, msg: &msg, at: q.now(), supersedes: ref.Supersedes}:
		default: // full: the sweep sends it when its lease ends
		}
	})
	return nil
}

// additionalData binds a sealed message to its app, challenge and version:
// moved to another job's arguments it does not open.
func additionalData(a Args) []byte {
	return []byte("message\x00" + a.AppID + "\x00" + a.ChallengeID + "\x00" + a.Version)
}

// openRow unseals a queued message.
func openRow(sealer *token.Sealer, r store.QueuedMessage) (courier.Message, error) {
	return open(sealer, Args{AppID: r.AppID, ChallengeID: r.ChallengeID, Version: r.Version, Sealed: r.Sealed})
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
