// The SMS fraud guard (Guard) decides whether an SMS may be sent, before anything is
// stored or sent (security R-RL-3, SMS pumping and toll fraud): the number's
// country must be one the app allows, its line must be a mobile one by the
// phone-number metadata, the number must not be asked too often (three
// sends, then waits that double up to a ceiling), and neither the app's
// daily cap nor the hourly cap of the number's prefix may be spent. A
// refused send costs nothing: the caller stores no challenge and calls no
// provider. When a cap trips, an alert is logged and
// verification.sms.delivery_failed is emitted once per window.

package outbound

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/nyaruka/phonenumbers"

	"github.com/gatehouse-auth/gatehouse/internal/metrics"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// Refusals. httpapi maps each to its response.
var (
	// ErrCountryNotAllowed: the number's country is not in the app's
	// allowed countries (400 phone_country_not_allowed).
	ErrCountryNotAllowed = errors.New("sms to this country is not allowed")
	// ErrLineTypeNotAllowed: the number is not a mobile line by the
	// phone-number metadata: fixed line, premium rate, toll free, shared
	// cost, personal number, pager, UAN, voicemail, VoIP (unless allowed)
	// or unknown (400 phone_type_not_allowed).
	ErrLineTypeNotAllowed = errors.New("sms to this kind of number is not allowed")
)

// Limit names which limit refused a send.
type Limit string

// The limits behind a LimitError.
const (
	// LimitNumber: the number's waits (429 rate_limited).
	LimitNumber Limit = "number"
	// LimitDaily: the app's SMS per UTC day (429 sms_daily_cap_reached).
	LimitDaily Limit = "daily_cap"
	// LimitPrefix: the SMS of one number prefix per hour (429 sms_prefix_cap_reached).
	LimitPrefix Limit = "prefix_cap"
)

// LimitError refuses a send over a limit until RetryAfter has passed.
type LimitError struct {
	Limit      Limit
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("sms %s reached; retry after %s", e.Limit, e.RetryAfter)
}

// GuardSettings are the server's guard settings (the sms.* settings).
type GuardSettings struct {
	// AllowedCountries is the default list of ISO 3166-1 alpha-2 codes of
	// apps that set none; "*" allows every country.
	AllowedCountries []string
	// AllowVoIP lets numbers the metadata calls VoIP through.
	AllowVoIP bool
	// Burst is how many SMS one number of one app gets within Window before
	// the waits start; 0 turns the waits off.
	Burst  int
	Window time.Duration
	// FirstWait is the first wait after the burst's window; each send
	// doubles it, up to MaxWait.
	FirstWait time.Duration
	MaxWait   time.Duration
	// Quiet is how long a number must go without an SMS for its waits to
	// start over.
	Quiet time.Duration
	// DailyCap is the default cap on an app's SMS per UTC day; 0: none.
	DailyCap int
	// PrefixHourlyCap caps an app's SMS to one number prefix (Prefix) per
	// clock hour; 0: none.
	PrefixHourlyCap int
}

// Guard decides whether an SMS may be sent.
type Guard struct {
	db       *store.DB
	events   *webhook.Emitter
	settings GuardSettings
	now      store.Clock
	jitter   func(d time.Duration) time.Duration
	log      *slog.Logger
	ownSMS   func(ctx context.Context, appID string) bool
	metrics  *metrics.Metrics
}

// GuardDeps are the Guard's collaborators.
type GuardDeps struct {
	DB *store.DB
	// Events receives the caps' alerts; nil emits nothing.
	Events   *webhook.Emitter
	Settings GuardSettings
	Now      func() time.Time
	// Jitter returns a wait shortened by a random part of at most a tenth
	// (nil: random); tests fix it.
	Jitter func(d time.Duration) time.Duration
	Log    *slog.Logger
	// Metrics counts the refusals by reason; nil counts nothing.
	Metrics *metrics.Metrics
	// OwnsSMS reports whether an app sends SMS through a provider of its own
	// (nil: none does). Only such an app may go past the server's countries
	// and daily cap: the others spend the operator's provider.
	OwnsSMS func(ctx context.Context, appID string) bool
}

// New returns a Guard.
func NewGuard(d GuardDeps) *Guard {
	if d.Jitter == nil {
		d.Jitter = func(d time.Duration) time.Duration { return d - rand.N(d/10+1) }
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Guard{db: d.DB, events: d.Events, settings: d.Settings, now: d.Now, jitter: d.Jitter, log: d.Log, ownSMS: d.OwnsSMS, metrics: d.Metrics}
}

// Settings returns the server's guard settings.
func (g *Guard) Settings() GuardSettings { return g.settings }

// AllowedCountries is the list app sends SMS to: the server's, or the app's
// own. An app that sends through the server's provider may only narrow the
// server's list (its countries that the server allows too); one with its
// own SMS provider may choose freely.
func (g *Guard) AllowedCountries(ctx context.Context, app store.App) []string {
	server := g.settings.AllowedCountries
	own := app.SMSAllowedCountries
	switch {
	case own == nil:
		return server
	case g.ownsSMS(ctx, app.ID) || slices.Contains(server, "*"):
		return own
	case slices.Contains(own, "*"):
		return server
	}
	out := []string{}
	for _, c := range own {
		if slices.Contains(server, c) {
			out = append(out, c)
		}
	}
	return out
}

// DailyCap is app's cap on SMS per UTC day (0: none): the server's, or the
// app's own. An app that sends through the server's provider may only
// lower the server's cap; one with its own SMS provider may raise it.
func (g *Guard) DailyCap(ctx context.Context, app store.App) int {
	server, own := g.settings.DailyCap, app.SMSDailyCap
	switch {
	case own <= 0:
		return server
	case server <= 0 || g.ownsSMS(ctx, app.ID):
		return own
	}
	return min(own, server)
}

func (g *Guard) ownsSMS(ctx context.Context, appID string) bool {
	return g.ownSMS != nil && g.ownSMS(ctx, appID)
}

// Check refuses a number app may not send SMS to at all: a country the app
// does not allow (ErrCountryNotAllowed), or a line that is not a mobile one
// (ErrLineTypeNotAllowed). number is in E.164 form. It reads and writes
// nothing, so a caller that must answer the same for known and unknown
// numbers may call it before looking anyone up.
func (g *Guard) Check(ctx context.Context, app store.App, number string) error {
	p, err := phonenumbers.Parse(number, "")
	if err != nil {
		return ErrLineTypeNotAllowed // callers pass parsed numbers; nothing else can be sent to
	}
	region := phonenumbers.GetRegionCodeForNumber(p)
	allowed := g.AllowedCountries(ctx, app)
	if !slices.Contains(allowed, "*") && !slices.Contains(allowed, region) {
		return ErrCountryNotAllowed
	}
	if !MobileType(phonenumbers.GetNumberType(p), g.settings.AllowVoIP) {
		return ErrLineTypeNotAllowed
	}
	return nil
}

// MobileType reports whether an SMS may go to a number of type t: a mobile
// line, or a number whose plan does not tell fixed from mobile (all of
// North America, where an SMS to a landline fails for nothing), and VoIP
// when voip is set. Fixed lines cannot take an SMS; premium-rate, shared-cost,
// toll-free, personal (UK 070, a favourite of revenue-share fraud), pager,
// UAN and voicemail numbers are what toll fraud dials; unknown is refused
// because nothing says it is mobile.
func MobileType(t phonenumbers.PhoneNumberType, voip bool) bool {
	switch t {
	case phonenumbers.MOBILE, phonenumbers.FIXED_LINE_OR_MOBILE:
		return true
	case phonenumbers.VOIP:
		return voip
	}
	return false
}

// Prefix is the number block the hourly velocity cap counts: the country
// calling code and the national number without its last four digits (the
// block of 10,000 numbers in which ranges are assigned to carriers, NANP's
// NPA-NXX, and in which pumping ranges are rented). A national number of
// four digits or fewer is counted by its country code alone.
func Prefix(number string) string {
	p, err := phonenumbers.Parse(number, "")
	if err != nil {
		return number
	}
	nsn := phonenumbers.GetNationalSignificantNumber(p)
	keep := max(len(nsn)-4, 0)
	return fmt.Sprintf("+%d%s", p.GetCountryCode(), nsn[:keep])
}

// maskedPrefix is a prefix as logs and events show it, with its last four
// digits starred: it names a block, never a number.
func maskedPrefix(prefix string) string { return prefix + "****" }

// Take lets one SMS to number (E.164) go for app, or refuses it: Check's
// refusals, then a *LimitError for the number's waits, the prefix's hourly
// cap or the app's daily cap. An allowed send is counted against all three
// in one transaction; a refused one counts against none. The first refusal
// by a cap in its window logs an alert and emits
// verification.sms.delivery_failed.
func (g *Guard) Take(ctx context.Context, app store.App, number string) (err error) {
	defer func() { g.metrics.SMSRefused(Reason(err)) }()
	if err := g.Check(ctx, app, number); err != nil {
		g.refused(ctx, app, number, err)
		return err
	}
	prefix := Prefix(number)
	var trip *budget
	err = g.db.Tx(ctx, func(tx *store.Tx) error {
		now := g.now.Read().UTC()
		if g.settings.Burst > 0 {
			key := "sms:number:" + app.ID + ":" + number
			st, err := tx.LockSMSNumber(ctx, key)
			if err != nil {
				return err
			}
			// The clock is read once the row is ours: a send that waited for
			// the lock must not come "before" the one that held it.
			now = g.now.Read().UTC()
			next, wait := g.step(st, now.UnixMilli())
			if wait > 0 {
				return &LimitError{Limit: LimitNumber, RetryAfter: wait}
			}
			if err := tx.SaveSMSNumber(ctx, key, next); err != nil {
				return err
			}
		}
		for _, c := range g.caps(ctx, app, prefix, now) {
			n, err := tx.CountSMS(ctx, c.key, c.window.UnixMilli())
			if err != nil {
				return err
			}
			if n > c.limit {
				trip = &c
				return &LimitError{Limit: c.kind, RetryAfter: c.window.Add(c.length).Sub(now)}
			}
		}
		return nil
	})
	if err != nil {
		if trip != nil {
			g.alert(ctx, app, *trip)
		} else {
			g.refused(ctx, app, number, err)
		}
	}
	return err
}

// step is the number's state after one more send at nowMs, or how long
// until the next send may go. The first Burst sends of a run are free; the
// next waits until Window after the run's first send; each later one waits
// FirstWait, then twice as long as the wait before, up to MaxWait, each
// shortened by jitter. A run ends after Quiet without a send.
func (g *Guard) step(st store.SMSNumberState, nowMs int64) (store.SMSNumberState, time.Duration) {
	s := g.settings
	if st.Sends == 0 || nowMs-st.LastAt >= s.Quiet.Milliseconds() {
		st = store.SMSNumberState{FirstAt: nowMs}
	}
	if nowMs < st.NextAt {
		return st, time.Duration(st.NextAt-nowMs) * time.Millisecond
	}
	st.Sends++
	st.LastAt, st.NextAt = nowMs, nowMs
	switch {
	case st.Sends == s.Burst:
		st.NextAt = max(nowMs, st.FirstAt+s.Window.Milliseconds())
	case st.Sends > s.Burst:
		wait := s.FirstWait
		for i := s.Burst + 1; i < st.Sends && wait < s.MaxWait; i++ {
			wait *= 2
		}
		st.NextAt = nowMs + g.jitter(min(wait, s.MaxWait)).Milliseconds()
	}
	return st, 0
}

// budget is one counted cap for a send.
type budget struct {
	kind   Limit
	key    string
	limit  int
	window time.Time // the window's start
	length time.Duration
	prefix string // prefix caps: the prefix
}

// caps are the caps a send at now counts against: the prefix's hour first
// (the narrower one), then the app's UTC day.
func (g *Guard) caps(ctx context.Context, app store.App, prefix string, now time.Time) []budget {
	var out []budget
	if n := g.settings.PrefixHourlyCap; n > 0 {
		out = append(out, budget{kind: LimitPrefix, key: "sms:prefix:" + app.ID + ":" + prefix, limit: n,
			window: now.Truncate(time.Hour), length: time.Hour, prefix: prefix})
	}
	if n := g.DailyCap(ctx, app); n > 0 {
		day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		out = append(out, budget{kind: LimitDaily, key: "sms:daily:" + app.ID, limit: n, window: day, length: 24 * time.Hour})
	}
	return out
}

// refused logs a refusal that is not a cap's: the telemetry of every
// refused send (no provider was called).
func (g *Guard) refused(ctx context.Context, app store.App, number string, err error) {
	if errors.Is(err, ErrCountryNotAllowed) || errors.Is(err, ErrLineTypeNotAllowed) || errors.As(err, new(*LimitError)) {
		g.log.InfoContext(ctx, "sms refused before sending", "app_id", app.ID, "reason", Reason(err), "to", maskNumber(number))
	}
}

// alert raises a tripped cap's alert once per window: a WARN log line and
// verification.sms.delivery_failed, whichever replica sees the cap first.
// Later refusals in the window log at debug level only.
func (g *Guard) alert(ctx context.Context, app store.App, c budget) {
	var first bool
	err := g.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		if first, err = tx.MarkSMSAlert(ctx, c.key, c.window.UnixMilli()); err != nil || !first {
			return err
		}
		return g.events.Emit(ctx, tx, app.ID, webhook.Verification("sms", webhook.OutcomeDeliveryFailed), alertData(c))
	})
	attrs := []any{"app_id", app.ID, "cap", string(c.kind), "limit", c.limit, "window_start", c.window,
		"window_end", c.window.Add(c.length)}
	if c.prefix != "" {
		attrs = append(attrs, "prefix", maskedPrefix(c.prefix))
	}
	switch {
	case err != nil:
		g.log.ErrorContext(ctx, "sms cap alert not recorded", append(attrs, "err", err)...)
	case first:
		g.log.WarnContext(ctx, "sms cap reached: SMS refused until the window ends", attrs...)
	default:
		g.log.DebugContext(ctx, "sms refused by a cap", attrs...)
	}
}

// alertData is the delivery_failed event of a tripped cap: the verification
// event's shape (interface §6.4) with no verification behind it, error the
// refusal's error_code, and the cap.
func alertData(c budget) webhook.SMSCapReachedData {
	d := webhook.SMSCapReachedData{Channel: "sms", Error: Reason(&LimitError{Limit: c.kind}),
		MetaData: webhook.SMSCapMeta{DeliveryMethod: "sms"},
		Cap:      webhook.SMSCap{Kind: string(c.kind), Limit: c.limit, WindowStart: c.window, WindowEnd: c.window.Add(c.length)}}
	if c.prefix != "" {
		d.Cap.Prefix = maskedPrefix(c.prefix)
	}
	return d
}

// Reason is the error_code of a refusal ("" for another error).
func Reason(err error) string {
	var le *LimitError
	switch {
	case errors.Is(err, ErrCountryNotAllowed):
		return "phone_country_not_allowed"
	case errors.Is(err, ErrLineTypeNotAllowed):
		return "phone_type_not_allowed"
	case errors.As(err, &le) && le.Limit == LimitDaily:
		return "sms_daily_cap_reached"
	case errors.As(err, &le) && le.Limit == LimitPrefix:
		return "sms_prefix_cap_reached"
	case errors.As(err, &le):
		return "rate_limited"
	}
	return ""
}

// maskNumber keeps the country code and last two digits of a number.
func maskNumber(n string) string {
	if len(n) < 8 {
		return strings.Repeat("*", len(n))
	}
	return n[:4] + strings.Repeat("*", len(n)-6) + n[len(n)-2:]
}

// Prune deletes the waits of numbers that have been quiet long enough to
// start over, and the counters of windows that have ended.
func (g *Guard) Prune(ctx context.Context) error {
	now := g.now.Read()
	return g.db.PruneSMS(ctx, now.Add(-g.settings.Quiet).UnixMilli(), now.Add(-48*time.Hour).UnixMilli())
}
