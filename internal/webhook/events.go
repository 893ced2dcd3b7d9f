// Package webhook delivers an app's events to its endpoints: signed, durable
// (enqueued in the same transaction as the change), retried with backoff,
// and never sent to a non-public address.
package webhook

import (
	"slices"
	"strings"
)

// Event types (interface §6.3). Adding a type is one entry in Events, with its data's type.
const (
	UserCreated           = "user.created"
	UserUpdated           = "user.updated"
	UserIdentifierChanged = "user.identifier_changed"
	UserIdentityLinked    = "user.identity_linked"
	UserIdentityUnlinked  = "user.identity_unlinked"
	AuthLoginFailed       = "auth.login.failed"
	// ChallengeCreated, ChallengeCompleted and ChallengeFailed follow every
	// challenge: a code, a link, a passkey ceremony, a second factor, a
	// step-up or a push.
	ChallengeCreated   = "challenge.created"
	ChallengeCompleted = "challenge.completed"
	ChallengeFailed    = "challenge.failed"
	WebhookTest        = "webhook.test"
)

// Verification outcomes: the event type is "verification.{email|sms}.{outcome}".
const (
	OutcomeRequested      = "requested"
	OutcomeVerified       = "verified"
	OutcomeExpired        = "expired"
	OutcomeFailed         = "failed"
	OutcomeDeliveryFailed = "delivery_failed"
	// OutcomeDenied: the recipient refused a cross-device magic link.
	OutcomeDenied = "denied"
)

// Verification returns the verification event type for a channel ("email" or "sms").
func Verification(channel, outcome string) string { return "verification." + channel + "." + outcome }

// eventTypes is every event an endpoint may subscribe to (Events, payloads.go).
func eventTypes() []string {
	var out []string
	for _, e := range Events() {
		out = append(out, e.Type)
	}
	return out
}

// EventTypes lists the known event types, sorted.
func EventTypes() []string {
	out := eventTypes()
	slices.Sort(out)
	return out
}

// ValidPattern reports whether p names a known event type, or is a prefix
// pattern such as "verification.*" or "*" that matches at least one.
func ValidPattern(p string) bool {
	for _, t := range eventTypes() {
		if matches(p, t) {
			return true
		}
	}
	return false
}

// matches reports whether subscription pattern p selects event type t.
func matches(p, t string) bool {
	if p == "*" || p == t {
		return true
	}
	prefix, ok := strings.CutSuffix(p, "*")
	return ok && strings.HasSuffix(prefix, ".") && strings.HasPrefix(t, prefix)
}

// subscribed reports whether an endpoint with these patterns gets type t
// (no patterns: every event).
func subscribed(patterns []string, t string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if matches(p, t) {
			return true
		}
	}
	return false
}
