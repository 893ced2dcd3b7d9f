package chaos

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
)

// checker collects broken invariants and reports each once, with examples.
type checker struct {
	t     *testing.T
	order []string
	cases map[string][]string
}

func (c *checker) fail(invariant, format string, args ...any) {
	if c.cases == nil {
		c.cases = map[string][]string{}
	}
	if _, ok := c.cases[invariant]; !ok {
		c.order = append(c.order, invariant)
	}
	c.cases[invariant] = append(c.cases[invariant], fmt.Sprintf(format, args...))
}

func (c *checker) report() {
	c.t.Helper()
	for _, inv := range c.order {
		ex := c.cases[inv]
		shown := ex[:min(len(ex), 8)]
		c.t.Errorf("%s: %d cases, e.g.\n\t%s", inv, len(ex), strings.Join(shown, "\n\t"))
	}
}

// envelope is an event as stored and sent.
type envelope struct {
	ID        string `json:"id"`
	EventType string `json:"event_type"`
	Data      struct {
		VerificationID string `json:"verification_id"`
		ChallengeID    string `json:"challenge_id"`
		Reason         string `json:"reason"`
		User           struct {
			ID       string `json:"id"`
			UserMeta struct {
				FirstName string `json:"first_name"`
			} `json:"user_meta"`
		} `json:"user"`
	} `json:"data"`
}

// channelOf is a challenge's verification channel, as the server names it.
func channelOf(c challengeRow) string {
	if c.method == "sms_otp" || strings.HasPrefix(c.recipient, "+") {
		return "sms"
	}
	return "email"
}

func initialAttempts(method string) int {
	if method == "magic_link" {
		return 1
	}
	return 5
}

// check holds the final state against the invariants and the ledger.
func check(ck *checker, s *snapshot, l *ledger, receipts map[string]map[string][]receipt, bad []string, fx fixture) {
	t := ck.t
	for _, o := range l.oddities {
		ck.fail("the server answered as it never should", "%s", o)
	}
	for _, b := range bad {
		ck.fail("the receiver got a request it could not verify", "%s", b)
	}

	// Events and their deliveries: each event stored once, delivered (the
	// receiver accepted it) with the stored bytes, under its own id; nothing
	// left pending or processing.
	envs := map[string]envelope{}
	for id, ev := range s.events {
		var e envelope
		if err := json.Unmarshal(ev.body, &e); err != nil || e.ID != id || e.EventType != ev.typ {
			ck.fail("a stored event is not its own envelope", "event %s (%s): %v %.200s", id, ev.typ, err, ev.body)
			continue
		}
		envs[id] = e
	}
	type delivery struct{ path, event string }
	perEvent := map[delivery]int{}
	byStatus := map[string]int{}
	maxAttempts := 0
	for _, d := range s.deliveries {
		path, ok := fx.endpoints[d.endpoint]
		if !ok {
			ck.fail("a delivery to an endpoint the test did not make", "delivery %s to %s", d.id, d.endpoint)
			continue
		}
		perEvent[delivery{path, d.event}]++
		byStatus[path+" "+d.status]++
		if d.status != "delivered" {
			ck.fail("a delivery did not end delivered", "delivery %s of event %s to %s is %s after %d attempts", d.id, d.event, path, d.status, d.attempts)
			continue
		}
		if d.late {
			continue
		}
		maxAttempts = max(maxAttempts, d.attempts)
		var nums []int
		last := attemptRow{}
		for _, a := range s.attempts[d.id] {
			nums = append(nums, a.attempt)
			if a.attempt > last.attempt {
				last = a
			}
		}
		sort.Ints(nums)
		want := make([]int, d.attempts)
		for i := range want {
			want[i] = i + 1
		}
		if !slices.Equal(nums, want) {
			ck.fail("a delivery's attempt history has gaps or repeats", "delivery %s to %s: attempt_count %d, recorded attempts %v", d.id, path, d.attempts, nums)
		} else if last.status != 200 {
			ck.fail("a delivered delivery's last attempt was not a 2xx", "delivery %s to %s: last attempt %+v", d.id, path, last)
		}
	}
	dups := 0
	for _, path := range []string{flaky, lastTry} {
		got := receipts[path]
		for id := range s.events {
			if n := perEvent[delivery{path, id}]; n != 1 {
				ck.fail("an event does not have exactly one delivery per endpoint", "event %s to %s: %d", id, path, n)
			}
			list := got[id]
			switch {
			case !accepted(list):
				ck.fail("an event was lost: the endpoint never accepted it", "event %s (%s) to %s: %d requests", id, s.events[id].typ, path, len(list))
			case !sameBodies(list, s.events[id].body):
				ck.fail("an event was sent with different bytes on different attempts", "event %s to %s", id, path)
			}
		}
		for id, list := range got {
			if _, ok := s.events[id]; !ok {
				ck.fail("the receiver got an event the server has no record of", "event %s (%s) to %s", id, list[0].eventType, path)
			}
			n := 0
			for _, r := range list {
				if r.answered == 200 {
					n++
				}
			}
			dups += max(n-1, 0)
		}
	}
	t.Logf("%d events, deliveries by endpoint and status %v, at most %d attempts for one delivery; %d deliveries accepted more than once (at-least-once allows it)",
		len(s.events), byStatus, maxAttempts, dups)
	t.Logf("queue jobs by kind and state: %v", s.jobs)

	// Events per change.
	created := map[string]int{}
	type key struct{ id, what string }
	perChallenge := map[key]int{}
	channels := map[string][]string{}
	metaEvents := map[string]int{}
	for id, e := range envs {
		switch {
		case e.EventType == "user.created":
			created[e.Data.User.ID]++
		case e.EventType == "user.updated":
			v := e.Data.User.UserMeta.FirstName
			metaEvents[v]++
			if who, ok := l.metaSent[v]; !ok || who != e.Data.User.ID {
				ck.fail("a user.updated event no request explains", "event %s: user %s first_name %q", id, e.Data.User.ID, v)
			}
		case e.EventType == "auth.login.failed":
			perChallenge[key{e.Data.VerificationID, "login.failed " + e.Data.Reason}]++
		case strings.HasPrefix(e.EventType, "verification."):
			parts := strings.Split(e.EventType, ".")
			perChallenge[key{e.Data.VerificationID, parts[2]}]++
			channels[e.Data.VerificationID] = append(channels[e.Data.VerificationID], parts[1])
		case strings.HasPrefix(e.EventType, "challenge."):
			perChallenge[key{e.Data.ChallengeID, e.EventType}]++
		default:
			ck.fail("an event of a type the workload never causes", "event %s: %s", id, e.EventType)
		}
	}
	for id := range s.users {
		if created[id] != 1 {
			ck.fail("a user does not have exactly one user.created", "user %s: %d", id, created[id])
		}
	}
	for id, n := range created {
		if _, ok := s.users[id]; !ok {
			ck.fail("user.created for a user that does not exist", "user %s (%d events)", id, n)
		}
	}
	for v, n := range metaEvents {
		if n > l.metaTries[v] {
			ck.fail("one metadata change has several user.updated events", "first_name %q: %d events for %d requests", v, n, l.metaTries[v])
		}
	}
	for v := range l.metaAcked {
		if metaEvents[v] == 0 {
			ck.fail("an acknowledged metadata change has no user.updated event", "first_name %q", v)
		}
	}

	// Challenges: each in one consistent state, with exactly the events of
	// the transitions it went through.
	type userKey struct{ user, group string }
	pending := map[userKey]int{}
	completedBy := map[string]map[string]int{} // user -> session method -> sign-ins the challenges account for
	statuses := map[string]int{}
	for id, c := range s.challenges {
		statuses[c.method+" "+c.status]++
		init := initialAttempts(c.method)
		ev := func(what string) int { return perChallenge[key{id, what}] }
		// Every code and link is also a challenge: created, then completed
		// or failed (too many attempts, or expired) beside its verification event.
		want := map[string]int{"requested": 1, "verified": 0, "failed": 0, "expired": 0, "delivery_failed": 0,
			"challenge.created": 1, "challenge.completed": 0, "challenge.failed": 0}
		switch c.status {
		case "completed":
			want["verified"], want["challenge.completed"] = 1, 1
		case "failed":
			want["failed"], want["challenge.failed"] = 1, 1
		case "expired":
			want["expired"], want["challenge.failed"] = 1, 1
		case "pending", "superseded":
		default:
			ck.fail("a challenge has an unknown status", "challenge %s: %q", id, c.status)
		}
		for what, n := range want {
			if got := ev(what); got != n {
				ck.fail("a challenge's verification events do not match its status",
					"challenge %s (%s, %s): %d %s events, want %d", id, c.method, c.status, got, what, n)
			}
		}
		for _, ch := range channels[id] {
			if ch != channelOf(c) {
				ck.fail("a verification event names the wrong channel", "challenge %s (%s to %s): %s", id, c.method, c.recipient, ch)
			}
		}
		if got, want := ev("login.failed invalid_code"), init-c.remaining; got != want {
			ck.fail("remaining attempts disagree with the wrong codes recorded",
				"challenge %s (%s): remaining %d of %d, %d auth.login.failed invalid_code events", id, c.status, c.remaining, init, got)
		}
		switch {
		case c.remaining < 0 || c.remaining > init:
			ck.fail("remaining attempts out of range", "challenge %s: %d of %d", id, c.remaining, init)
		case (c.status == "failed") != (c.remaining == 0):
			ck.fail("a challenge failed without spending its attempts, or spent them without failing", "challenge %s: %s with %d remaining", id, c.status, c.remaining)
		case c.completed != (c.status == "completed"):
			ck.fail("completed_at disagrees with the status", "challenge %s: %s, completed_at set %v", id, c.status, c.completed)
		case c.collected && (c.status != "completed" || c.method != "magic_link"):
			ck.fail("tokens collected from a challenge that is not a completed magic link", "challenge %s: %s %s", id, c.method, c.status)
		case c.status == "pending" && c.expires.Before(s.at.Add(-sweepSlack)):
			ck.fail("an expired challenge was never closed by the sweep", "challenge %s expired at %s, snapshot at %s", id, c.expires, s.at)
		}
		group := "code"
		if c.method == "magic_link" {
			group = "link"
		}
		if c.status == "pending" {
			pending[userKey{c.user, group}]++
		}
		if completedBy[c.user] == nil {
			completedBy[c.user] = map[string]int{}
		}
		if c.status == "completed" {
			if group == "code" {
				completedBy[c.user]["otp"]++
			} else {
				completedBy[c.user]["magic"]++
				if c.collected {
					completedBy[c.user]["magic"]++ // the polling device's session
				}
			}
			u := s.users[c.user]
			if u.status != "active" || (channelOf(c) == "email" && !u.emailVerified) || (channelOf(c) == "sms" && !u.phoneVerified) {
				ck.fail("a user who passed a challenge is not active and verified", "user %s after challenge %s (%s): %+v", c.user, id, channelOf(c), u)
			}
		}
	}
	t.Logf("challenges by method and status: %v", statuses)
	for k, n := range pending {
		if n > 1 {
			ck.fail("a user has several live challenges of one kind (a resend must supersede)", "user %s: %d pending %s challenges", k.user, n, k.group)
		}
	}
	if c := s.challenges[fx.sentinelChallID]; c.status != "expired" || perChallenge[key{fx.sentinelChallID, "expired"}] != 1 {
		ck.fail("the unopened sentinel link did not expire exactly once across the kills", "challenge %+v", c)
	}

	// Sessions: exactly one per completed code challenge, one per opened
	// link plus one per collected poll; each with one live refresh token.
	sessionsBy := map[string]map[string]int{}
	live := map[string]int{}
	tokens := map[string]int{}
	used := map[string]int{}
	for _, r := range s.refresh {
		tokens[r.session]++
		if r.used {
			used[r.session]++
			if !r.hasSucc {
				ck.fail("a spent refresh token keeps no successor", "token %s", r.id)
			}
		} else {
			live[r.session]++
		}
	}
	revoked := 0
	for id, x := range s.sessions {
		if sessionsBy[x.user] == nil {
			sessionsBy[x.user] = map[string]int{}
		}
		sessionsBy[x.user][x.method]++
		if _, ok := s.users[x.user]; !ok {
			ck.fail("a session of a user that does not exist", "session %s", id)
		}
		if x.revoked {
			revoked++
			continue
		}
		if live[id] != 1 || tokens[id] != used[id]+1 {
			ck.fail("a session's refresh tokens are not one chain with one live end",
				"session %s: %d tokens, %d spent, %d live", id, tokens[id], used[id], live[id])
		}
	}
	for user := range s.users {
		for _, m := range []string{"otp", "magic"} {
			if got, want := sessionsBy[user][m], completedBy[user][m]; got != want {
				ck.fail("sessions do not match the challenges that were passed",
					"user %s: %d %s sessions, challenges account for %d", user, got, m, want)
			}
		}
	}
	t.Logf("%d users, %d sessions (%d revoked by refresh reuse), %d refresh tokens", len(s.users), len(s.sessions), revoked, len(s.refresh))

	// Everything acknowledged is there.
	for id, ident := range l.users {
		u, ok := s.users[id]
		if !ok || (u.email != ident && u.phone != ident) {
			ck.fail("an acknowledged user is missing", "user %s (%s): %+v", id, ident, u)
		}
	}
	for id, r := range l.otp {
		c, ok := s.challenges[id]
		spent := initialAttempts(c.method) - c.remaining
		switch {
		case !ok:
			ck.fail("an acknowledged code challenge is missing", "challenge %s for %s", id, r.ident)
		case c.user != r.user || c.recipient != r.ident:
			ck.fail("an acknowledged code challenge changed hands", "challenge %s: %+v, sent to %s/%s", id, c, r.user, r.ident)
		case spent < r.wrongRefused || spent > r.wrongTried:
			ck.fail("wrong codes counted differ from those sent",
				"challenge %s: %d attempts spent; %d wrong codes refused (422), %d sent in all", id, spent, r.wrongRefused, r.wrongTried)
		case r.tooMany && c.status != "failed":
			ck.fail("a challenge answered too_many_attempts is not failed", "challenge %s: %s", id, c.status)
		case r.verified && c.status != "completed":
			ck.fail("an acknowledged sign-in's challenge is not completed", "challenge %s: %s", id, c.status)
		case c.status == "completed" && r.rightTried == 0:
			ck.fail("a challenge completed without the right code being sent", "challenge %s", id)
		}
	}
	for id, r := range l.magic {
		c, ok := s.challenges[id]
		switch {
		case !ok:
			ck.fail("an acknowledged magic link's challenge is missing", "challenge %s for %s", id, r.ident)
		case c.user != r.user || c.method != "magic_link":
			ck.fail("an acknowledged magic link changed hands", "challenge %s: %+v, sent to %s", id, c, r.user)
		case r.opened && c.status != "completed":
			ck.fail("an acknowledged link opening is not recorded", "challenge %s: %s", id, c.status)
		case r.collected && !c.collected:
			ck.fail("an acknowledged poll's collection is not recorded", "challenge %s", id)
		case c.status == "completed" && r.openTried == 0:
			ck.fail("a link completed without being opened", "challenge %s", id)
		}
	}
	for sid, kind := range l.sessions {
		if x, ok := s.sessions[sid]; !ok || x.method != kind {
			ck.fail("an acknowledged session is missing", "session %s (%s): %+v", sid, kind, x)
		}
	}
	for jti, sid := range l.refresh {
		if r, ok := s.refresh[jti]; !ok || r.session != sid {
			ck.fail("an acknowledged refresh token is missing", "token %s of session %s: %+v", jti, sid, r)
		}
	}
	for jti := range l.spent {
		if !s.refresh[jti].used {
			ck.fail("an acknowledged rotation did not spend the old token", "token %s", jti)
		}
	}

	// Rate-limit buckets count every request that reached them: one GCRA
	// step each, so tat lies between first + n_answered×interval and
	// last + n_tried×interval (the cut-off ones may or may not have counted).
	bucket := func(name, k string, r *rate, interval int64) {
		row, ok := s.rates[k]
		if !ok {
			if r.answered > 0 {
				ck.fail("a rate-limit bucket is missing", "%s: %d answered requests", name, r.answered)
			}
			return // every request was cut off before it reached the bucket
		}
		const tol = 5 // ms: the server and the test read one clock, in whole ms
		lo := r.first.UnixMilli() + int64(r.answered)*interval - tol
		hi := r.last.UnixMilli() + int64(r.tried)*interval + tol
		if row.expires-row.tat != bucketWindow || row.tat < lo || row.tat > hi {
			ck.fail("a rate-limit counter disagrees with the requests made",
				"%s: tat %d (window %d), want %d..%d for %d answered / %d tried requests", name, row.tat, row.expires-row.tat, lo, hi, r.answered, r.tried)
		}
	}
	for ident, r := range l.sends {
		bucket("sends to "+ident, "send:id:"+fx.appID+":"+ident, r, sendPerIdentInterval)
	}
	bucket("sends from 127.0.0.1", "send:ip:127.0.0.1", &l.sendIP, ipInterval)
	bucket("verifications from 127.0.0.1", "verify:ip:127.0.0.1", &l.verifyIP, ipInterval)

	// Reported, not failed: challenges with no message in the outbox. A
	// message is a row committed with its challenge, so a kill loses none
	// (settled checks that none is left queued); what is left are messages
	// the send queue dropped on purpose (their challenge was superseded,
	// answered or expired before its turn) or still queued when the
	// snapshot was taken.
	links := map[string]bool{}
	codes := map[string]int{}
	for _, o := range s.outbox {
		if u, err := url.Parse(o.link); err == nil && o.link != "" {
			links[claims(u.Query().Get("sct_magic")).Jti] = true
		}
		if o.code != "" {
			codes[o.recipient]++
		}
	}
	orphans := 0
	perRecipient := map[string]int{}
	for id, c := range s.challenges {
		if c.method == "magic_link" && !links[id] {
			orphans++
		}
		if c.method != "magic_link" {
			perRecipient[c.recipient]++
		}
	}
	for r, n := range perRecipient {
		orphans += max(n-codes[r], 0)
	}
	t.Logf("challenges whose message is not in the outbox (dropped as no longer pending, or still queued): %d", orphans)
}
