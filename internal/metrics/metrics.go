// Package metrics holds Gatehouse's Prometheus metrics beyond HTTP: sign-ins
// and refreshes by outcome, messages queued and sent, webhook deliveries,
// rate-limit and SMS-guard refusals, signing-key rotations, the send
// queue's backlog and the database pools. The assembly makes one Metrics
// on the server's registry and hands it to the services; a nil *Metrics
// counts nothing, so a service built without one works unchanged.
//
// Every label takes its values from a fixed list (anything else is counted
// as "other"), so no caller can grow a series per user, address or key.
// Nothing here runs a statement or holds a lock across I/O on a request's
// path: counters only; the queue's backlog is read when /metrics is scraped.
package metrics

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// Sign-in methods (the method label of gatehouse_signins_total).
const (
	MethodEmailCode  = "email_code"
	MethodSMSCode    = "sms_code"
	MethodMagicLink  = "magic_link"
	MethodPasskey    = "passkey"
	MethodTOTP       = "totp"
	MethodBackupCode = "backup_code"
	MethodPush       = "push"
	MethodInvite     = "invite"
	MethodOAuth      = "oauth"
	// MethodUnknown is a code answered when no challenge was found for it,
	// so its channel is not known.
	MethodUnknown = "unknown"
)

// Methods lists every sign-in method label.
var Methods = []string{MethodEmailCode, MethodSMSCode, MethodMagicLink, MethodPasskey, MethodTOTP, MethodBackupCode,
	MethodPush, MethodInvite, MethodOAuth, MethodUnknown}

// Sign-in and refresh results (the result labels).
const (
	ResultSuccess = "success"
	// ResultMFARequired: the first factor was right and a second one is asked for.
	ResultMFARequired = "mfa_required"
	// ResultInvalid: a wrong, used or unknown code, link, token or passkey answer.
	ResultInvalid = "invalid"
	// ResultExpired: the challenge had expired.
	ResultExpired = "expired"
	// ResultTooManyAttempts: the challenge's attempts or the hourly budget of wrong codes are spent.
	ResultTooManyAttempts = "too_many_attempts"
	// ResultLocked: code entry is locked for the user.
	ResultLocked = "locked"
	// ResultRateLimited: a rate limit refused the request before it was judged.
	ResultRateLimited = "rate_limited"
	// ResultDenied: the recipient of a magic link or push said it was not them.
	ResultDenied = "denied"
	// ResultReused: a spent refresh token came back: the session was revoked.
	ResultReused = "reused"
	// ResultError: the server failed (the database, say).
	ResultError = "error"
)

// SignInResults and RefreshResults list the result labels of each counter.
var (
	SignInResults = []string{ResultSuccess, ResultMFARequired, ResultInvalid, ResultExpired, ResultTooManyAttempts,
		ResultLocked, ResultRateLimited, ResultDenied, ResultError}
	RefreshResults = []string{ResultSuccess, ResultInvalid, ResultReused, ResultError}
)

// Message send results (gatehouse_message_sends_total).
const (
	SendSent             = "sent"
	SendTemporaryFailure = "temporary_failure"
	SendPermanentFailure = "permanent_failure"
)

// Webhook delivery attempt results (gatehouse_webhook_deliveries_total).
const (
	DeliveryDelivered = "delivered"
	DeliveryRetry     = "retry"
	DeliveryFailed    = "failed"
)

// Other stands for a label value outside its list.
const Other = "other"

// Metrics are the counters the services move.
type Metrics struct {
	signins      *prometheus.CounterVec
	refreshes    *prometheus.CounterVec
	queued       *prometheus.CounterVec
	sends        *prometheus.CounterVec
	sendSeconds  *prometheus.HistogramVec
	queueWait    *prometheus.HistogramVec
	deliveries   *prometheus.CounterVec
	deliverySecs *prometheus.HistogramVec
	rateLimited  *prometheus.CounterVec
	smsRefused   *prometheus.CounterVec
	rotations    *prometheus.CounterVec
	// messages are the messages' names (the built-in templates).
	messages []string
}

// New registers the metrics on reg. Sign-in and refresh series exist from
// the start at zero, so a rate over them is defined before the first one.
func New(reg prometheus.Registerer) *Metrics {
	latency := []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m := &Metrics{
		signins: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_signins_total",
			Help: "Sign-in attempts judged, by method (email_code, sms_code, magic_link, passkey, totp, backup_code, push, invite, unknown) and result (success, mfa_required, invalid, expired, too_many_attempts, locked, rate_limited, denied, error)."},
			[]string{"method", "result"}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_token_refreshes_total",
			Help: "Refresh-token exchanges, by result (success, invalid, reused, error)."}, []string{"result"}),
		queued: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_messages_queued_total",
			Help: "Messages committed to the send queue, by channel (email, sms) and message (its template)."},
			[]string{"channel", "message"}),
		sends: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_message_sends_total",
			Help: "Calls to an e-mail or SMS provider, by channel, provider (the server's: smtp, postmark, twilio, http, outbox, log; an app's own: app_<type>) and result (sent, temporary_failure, permanent_failure)."},
			[]string{"channel", "provider", "result"}),
		sendSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gatehouse_message_send_duration_seconds",
			Help: "How long a provider took to accept or refuse a message, by channel and provider.", Buckets: latency},
			[]string{"channel", "provider"}),
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gatehouse_message_queue_wait_seconds",
			Help:    "How long a message waited before its provider was called, by channel and try: direct (from its queueing, in the transaction that committed it, to the call right after the commit) or sweep (from when the row was due, a retry or a message a stopped process left, to the call).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}},
			[]string{"channel", "try"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_webhook_deliveries_total",
			Help: "Webhook delivery attempts, by result (delivered; retry: failed, another attempt is scheduled; failed: failed for good)."},
			[]string{"result"}),
		deliverySecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gatehouse_webhook_delivery_duration_seconds",
			Help: "How long a webhook delivery attempt took (connect to answer), by result.", Buckets: latency},
			[]string{"result"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_ratelimit_refusals_total",
			Help: "Requests a rate limit refused, by rule (the ratelimit.* setting's name, or magic_link_poll, provider_test)."},
			[]string{"rule"}),
		smsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_sms_guard_refusals_total",
			Help: "SMS the fraud guard refused before anything was sent, by reason (phone_country_not_allowed, phone_type_not_allowed, rate_limited, sms_prefix_cap_reached, sms_daily_cap_reached)."},
			[]string{"reason"}),
		rotations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_signing_key_rotations_total",
			Help: "Signing-key rotations this replica has loaded (a new active key of an algorithm replacing another), by algorithm."},
			[]string{"alg"}),
	}
	reg.MustRegister(m.signins, m.refreshes, m.queued, m.sends, m.sendSeconds, m.queueWait, m.deliveries, m.deliverySecs,
		m.rateLimited, m.smsRefused, m.rotations)
	for _, t := range courier.TemplateCatalog() {
		m.messages = append(m.messages, t.Name)
	}
	for _, method := range Methods {
		for _, r := range SignInResults {
			m.signins.WithLabelValues(method, r)
		}
	}
	for _, r := range RefreshResults {
		m.refreshes.WithLabelValues(r)
	}
	return m
}

// bounded is v when list holds it, else Other.
func bounded(v string, list []string) string {
	if slices.Contains(list, v) {
		return v
	}
	return Other
}

// SignIn counts one judged sign-in attempt.
func (m *Metrics) SignIn(method, result string) {
	if m == nil {
		return
	}
	m.signins.WithLabelValues(bounded(method, Methods), bounded(result, SignInResults)).Inc()
}

// Refresh counts one refresh-token exchange.
func (m *Metrics) Refresh(result string) {
	if m == nil {
		return
	}
	m.refreshes.WithLabelValues(bounded(result, RefreshResults)).Inc()
}

var channels = []string{string(courier.ChannelEmail), string(courier.ChannelSMS)}

// Queued counts a message committed to the send queue; message is its
// template (courier.TemplateCatalog's names).
func (m *Metrics) Queued(ch courier.Channel, message string) {
	if m == nil {
		return
	}
	m.queued.WithLabelValues(bounded(string(ch), channels), bounded(message, m.messages)).Inc()
}

// QueueWait records how long a message waited for its provider call: direct
// (since it was queued) or by the sweep (since it was due).
func (m *Metrics) QueueWait(ch string, direct bool, d time.Duration) {
	if m == nil {
		return
	}
	try := "sweep"
	if direct {
		try = "direct"
	}
	m.queueWait.WithLabelValues(bounded(ch, channels), try).Observe(d.Seconds())
}

// Delivery counts one webhook delivery attempt and how long it took.
func (m *Metrics) Delivery(result string, took time.Duration) {
	if m == nil {
		return
	}
	r := bounded(result, []string{DeliveryDelivered, DeliveryRetry, DeliveryFailed})
	m.deliveries.WithLabelValues(r).Inc()
	m.deliverySecs.WithLabelValues(r).Observe(took.Seconds())
}

// SMSRefused counts a send the SMS guard refused, by its error code
// (outbound.Reason).
func (m *Metrics) SMSRefused(reason string) {
	if m == nil || reason == "" {
		return
	}
	m.smsRefused.WithLabelValues(bounded(reason, []string{"phone_country_not_allowed", "phone_type_not_allowed",
		"rate_limited", "sms_prefix_cap_reached", "sms_daily_cap_reached"})).Inc()
}

// Provider wraps p, a provider of name (a bounded list of types: see the
// help of gatehouse_message_sends_total), counting each send by channel
// and result and timing it. It keeps p's courier.ChannelSender answer.
func (m *Metrics) Provider(p courier.Provider, name string) courier.Provider {
	if m == nil || p == nil {
		return p
	}
	return countingProvider{p: p, name: name, m: m}
}

type countingProvider struct {
	p    courier.Provider
	name string
	m    *Metrics
}

func (c countingProvider) Send(ctx context.Context, msg courier.Message) (string, error) {
	start := time.Now()
	id, err := c.p.Send(ctx, msg)
	ch := bounded(string(msg.Channel), channels)
	result := SendSent
	if err != nil {
		result = SendPermanentFailure
		if temporary, _ := courier.Temporary(err); temporary {
			result = SendTemporaryFailure
		}
	}
	c.m.sends.WithLabelValues(ch, c.name, result).Inc()
	c.m.sendSeconds.WithLabelValues(ch, c.name).Observe(time.Since(start).Seconds())
	return id, err
}

// Sends reports what the wrapped provider reports (courier.ChannelSender),
// or true for a provider that sends on every channel it is given.
func (c countingProvider) Sends(ch courier.Channel) bool {
	if cs, ok := c.p.(courier.ChannelSender); ok {
		return cs.Sends(ch)
	}
	return true
}

// limitRules names the rate-limit buckets by the prefix of their keys
// (signin, machine and outbound build them): the rule label.
var limitRules = []struct{ prefix, rule string }{
	{"send:id:", "send_per_identifier"},
	{"send:ip:", "send_per_ip"},
	{"verify:ip:", "verify_per_ip"},
	{"lookup:ip:", "lookup_per_ip"},
	{"challenge:ip:", "challenge_per_ip"},
	{"challenge:user:", "challenge_per_user"},
	{"challenge:anon:", "challenge_per_user"},
	{"challenge:unknown:", "unknown_identifier_per_ip"},
	{"short-link:ip:", "short_link_per_ip"},
	{"poll:", "magic_link_poll"},
	{"m2m-auth:client:", "m2m_failures_per_client"},
	{"m2m-auth:ip:", "m2m_failures_per_ip"},
	{"provider-test:", "provider_test"},
}

// Rule names the rule of a rate-limit key.
func Rule(key string) string {
	for _, r := range limitRules {
		if strings.HasPrefix(key, r.prefix) {
			return r.rule
		}
	}
	return Other
}

// Limiter wraps l, counting its refusals by rule.
func (m *Metrics) Limiter(l ratelimit.Limiter) ratelimit.Limiter {
	if m == nil || l == nil {
		return l
	}
	return countingLimiter{l, m}
}

type countingLimiter struct {
	ratelimit.Limiter
	m *Metrics
}

func (c countingLimiter) Allow(ctx context.Context, key string, r ratelimit.Rule) (ratelimit.Result, error) {
	res, err := c.Limiter.Allow(ctx, key, r)
	if err == nil && !res.Allowed {
		c.m.rateLimited.WithLabelValues(Rule(key)).Inc()
	}
	return res, err
}

// KeySource wraps a keyring's source, counting a rotation whenever a load
// finds another signing key for an algorithm than the load before (the
// first load counts none). Keys are rotated by the command line or another
// replica; every replica counts the rotations it loads.
func (m *Metrics) KeySource(src token.KeySource) token.KeySource {
	if m == nil || src == nil {
		return src
	}
	var mu sync.Mutex
	var last map[string]string // kid by algorithm; nil before the first load
	return func(ctx context.Context) (token.KeySet, error) {
		set, err := src(ctx)
		if err != nil {
			return set, err
		}
		now := map[string]string{}
		for _, k := range set.Signers {
			if _, seen := now[k.Alg]; !seen {
				now[k.Alg] = k.ID
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if last != nil {
			for alg, kid := range now {
				if prev, ok := last[alg]; ok && prev != kid {
					m.rotations.WithLabelValues(bounded(alg, token.Algorithms)).Inc()
				}
			}
		}
		last = now
		return set, nil
	}
}

// Backlog reads a send queue's depth and the age of its oldest message.
type Backlog func(ctx context.Context) (depth int, oldest time.Duration, err error)

// backlogTimeout bounds the scrape-time read of the backlog.
const backlogTimeout = 2 * time.Second

// RegisterQueue registers the send queue's gauges, read by backlog when
// /metrics is scraped (within two seconds). A failed read leaves both out
// of that scrape, silently: a database outage is logged elsewhere, once.
func RegisterQueue(reg prometheus.Registerer, backlog Backlog) {
	reg.MustRegister(queueCollector{backlog})
}

var (
	depthDesc = prometheus.NewDesc("gatehouse_message_queue_depth",
		"Messages waiting to be sent, being sent or due for a retry.", nil, nil)
	oldestDesc = prometheus.NewDesc("gatehouse_message_queue_oldest_age_seconds",
		"Age of the oldest message not yet sent or given up (0 when none waits).", nil, nil)
)

type queueCollector struct{ backlog Backlog }

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- depthDesc; ch <- oldestDesc }

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
	defer cancel()
	depth, oldest, err := c.backlog(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(depth))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, oldest.Seconds())
}

// RegisterPools registers the database pools' gauges and counters, read
// from stats (no statement) when /metrics is scraped.
func RegisterPools(reg prometheus.Registerer, stats func() []store.PoolStats) {
	reg.MustRegister(poolCollector{stats})
}

var (
	poolMaxDesc = prometheus.NewDesc("gatehouse_db_pool_max_connections",
		"The most connections a database pool opens (pool: main on PostgreSQL; writer, reader on SQLite).", []string{"pool"}, nil)
	poolConnsDesc = prometheus.NewDesc("gatehouse_db_pool_connections",
		"Open connections of a database pool, by state (in_use, idle).", []string{"pool", "state"}, nil)
	poolWaitsDesc = prometheus.NewDesc("gatehouse_db_pool_waits_total",
		"Requests for a connection that found none free and waited.", []string{"pool"}, nil)
	poolWaitDesc = prometheus.NewDesc("gatehouse_db_pool_wait_seconds_total",
		"Time spent waiting for a free connection, in all.", []string{"pool"}, nil)
)

type poolCollector struct{ stats func() []store.PoolStats }

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolMaxDesc
	ch <- poolConnsDesc
	ch <- poolWaitsDesc
	ch <- poolWaitDesc
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.stats() {
		ch <- prometheus.MustNewConstMetric(poolMaxDesc, prometheus.GaugeValue, float64(p.Max), p.Pool)
		ch <- prometheus.MustNewConstMetric(poolConnsDesc, prometheus.GaugeValue, float64(p.InUse), p.Pool, "in_use")
		ch <- prometheus.MustNewConstMetric(poolConnsDesc, prometheus.GaugeValue, float64(p.Idle), p.Pool, "idle")
		ch <- prometheus.MustNewConstMetric(poolWaitsDesc, prometheus.CounterValue, float64(p.Waits), p.Pool)
		ch <- prometheus.MustNewConstMetric(poolWaitDesc, prometheus.CounterValue, p.WaitTime.Seconds(), p.Pool)
	}
}
