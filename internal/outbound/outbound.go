package outbound

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/metrics"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Service is what domain code sends through: Guard before anything is
// stored, Send inside the transaction of the change. The admin API reaches
// its parts (Templates, Providers, the Guard's settings) directly.
type Service struct {
	// Templates render messages and keep the apps' overrides.
	Templates *Templates
	// Providers keep the apps' own providers and route every message.
	Providers *Providers
	// SMS guards every code, link and invitation by SMS; nil lets all through.
	SMS    *Guard
	queue  *Queue
	db     *store.DB
	exempt func(app store.App, to string) bool
	log    *slog.Logger
	// metrics counts the messages queued; nil counts nothing.
	metrics *metrics.Metrics
}

// Deps are the Service's parts.
type Deps struct {
	Templates *Templates
	Providers *Providers
	SMS       *Guard
	// Queue is the send queue messages are committed to.
	Queue *Queue
	// Exempt reports whether to is a test identity of app: nothing is ever
	// sent to one, and the SMS guard lets it through (nil: none is).
	Exempt func(app store.App, to string) bool
	// DB is read for the send queue's health (Health).
	DB  *store.DB
	Log *slog.Logger
	// Metrics counts the messages queued (committed by a transaction that
	// may still roll back); nil counts nothing.
	Metrics *metrics.Metrics
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Exempt == nil {
		d.Exempt = func(store.App, string) bool { return false }
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{Templates: d.Templates, Providers: d.Providers, SMS: d.SMS, queue: d.Queue, db: d.DB, exempt: d.Exempt, log: d.Log, metrics: d.Metrics}
}

// Request is one message to send.
type Request struct {
	// Template is the message (courier.TemplateLoginCode, ...); it also
	// names the message in logs and on its job.
	Template string
	// To is a normalised e-mail address or E.164 number: the channel follows.
	To string
	// Vars fill the template; AppName is the app's. Code and Link are also
	// kept on the message (the development outbox shows them).
	Vars courier.Vars
	// Langs are the recipient's languages, most preferred first (Languages).
	Langs []string
	// Ref is the challenge whose code or link the message carries, if any.
	Ref Ref
}

// ErrNotRendered wraps a failure to render a message: nothing was queued.
var ErrNotRendered = errors.New("message not rendered")

// Send renders r for app in the recipient's language (the app's override
// or the built-in template), seals it and commits it to the send queue
// inside tx: a worker sends it once tx commits, through the app's own
// provider or the server's, and retries while the provider fails. Nothing
// is ever sent to a test identity of app, and that counts as sent.
// Callers guard an SMS (Guard) before they store anything.
func (s *Service) Send(ctx context.Context, tx *store.Tx, app store.App, r Request) error {
	ch := channelOf(r.To)
	if s.exempt(app, r.To) {
		s.log.DebugContext(ctx, "message to a test identity not sent", "app_id", app.ID, "message", r.Template, "channel", ch)
		return nil
	}
	v := r.Vars
	v.AppName = app.Name
	out, err := s.Templates.Render(ctx, tx.Queries, app.ID, r.Template, ch, r.Langs, v)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotRendered, err)
	}
	msg := courier.Message{Channel: ch, To: r.To, AppID: app.ID, Subject: out.Subject, Text: out.Text, HTML: out.HTML,
		Code: v.Code, Link: v.Link}
	if err := s.queue.Enqueue(ctx, tx, msg, r.Ref, r.Template); err != nil {
		return err
	}
	s.metrics.Queued(ch, r.Template)
	return nil
}

// Guard lets one code, link or invitation to to go for app, or refuses it:
// by SMS, the guard's refusals (country, line type, the number's waits, the
// caps), counting it when it goes; by e-mail, never. Every message a
// stranger may ask for asks here first, before anything is stored or sent,
// so a refused send costs nothing. A test identity of app passes.
func (s *Service) Guard(ctx context.Context, app store.App, to string) error {
	if s.SMS == nil || channelOf(to) != courier.ChannelSMS || s.exempt(app, to) {
		return nil
	}
	return s.SMS.Take(ctx, app, to)
}

// Check refuses a number app may never send SMS to (country, line type),
// reading and counting nothing: for callers that must answer alike whether
// or not the number has an account, before they look it up.
func (s *Service) Check(ctx context.Context, app store.App, to string) error {
	if s.SMS == nil || channelOf(to) != courier.ChannelSMS || s.exempt(app, to) {
		return nil
	}
	err := s.SMS.Check(ctx, app, to)
	s.SMS.metrics.SMSRefused(Reason(err))
	return err
}

// Prune forgets the SMS guard's state that no longer counts.
func (s *Service) Prune(ctx context.Context) error {
	if s.SMS == nil {
		return nil
	}
	return s.SMS.Prune(ctx)
}
