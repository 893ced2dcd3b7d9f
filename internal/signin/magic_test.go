package signin_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
)

// TestMagicLinkSameDevice: a link opened by the device that asked for it
// (same address, same browser) signs that device in with one click, and the
// poller in its other tab collects a session of its own.
func TestMagicLinkSameDevice(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		handle, tok := e.sendLink(t, "alice@example.com", false)
		if handle == tok || len(handle) < 22 {
			t.Fatalf("poll handle %d chars, same as token %v; want ≥128 bits, distinct", len(handle), handle == tok)
		}

		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client); !errors.Is(err, signin.ErrMagicLinkPending) {
			t.Errorf("MagicLinkStatus(before the link is opened) = %v; want ErrMagicLinkPending", err)
		}
		var rl *signin.RateLimitedError
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client); !errors.As(err, &rl) || rl.RetryAfter <= 0 || !rl.SlowDown {
			t.Errorf("MagicLinkStatus(polled again at once) = %v; want *RateLimitedError with SlowDown", err)
		}
		view, err := e.SignIn.OpenMagicLink(ctx, e.app, tok, e.client)
		if err != nil || !view.SameDevice || !strings.Contains(view.AppLink, "sct_magic="+tok) {
			t.Fatalf("OpenMagicLink(same device) = %+v, %v; want SameDevice and the app link with the token", view, err)
		}

		b, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, e.client)
		if err != nil {
			t.Fatalf("AuthenticateMagicLink = %v; want nil", err)
		}
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(used token) = %v; want ErrMagicLinkNotFound", err)
		}

		e.Clock.Advance(2 * time.Second)
		a, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client)
		if err != nil {
			t.Fatalf("MagicLinkStatus(after the link was opened) = %v; want nil", err)
		}
		ca, cb := e.caller(t, a.Access), e.caller(t, b.Access)
		if ca.User.ID != u.ID || cb.User.ID != u.ID || ca.Session.ID == cb.Session.ID || ca.Session.Method != signin.MethodMagic {
			t.Errorf("tab A: user %s session %s, tab B: user %s session %s; want alice in two magic sessions",
				ca.User.ID, ca.Session.ID, cb.User.ID, cb.Session.ID)
		}

		e.Clock.Advance(2 * time.Second)
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("MagicLinkStatus(tokens collected) = %v; want ErrMagicLinkNotFound", err)
		}
		for name, h := range map[string]string{"unknown handle": token.RandomString(32), "e-mailed token": tok, "empty": ""} {
			if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, h, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
				t.Errorf("MagicLinkStatus(%s) = %v; want ErrMagicLinkNotFound", name, err)
			}
		}
		got, err := e.get(t, u.ID)
		if err != nil || !got.EmailVerified {
			t.Errorf("user after magic link = %+v, %v; want a verified e-mail", got.AppUser, err)
		}
	})
}

// TestMagicLinkCrossDeviceTakeover is the attack of R-ML-4: an attacker asks
// for a link to the victim's address and polls; the victim opens the genuine
// e-mail on their own device. The victim's device may sign in, but the
// attacker's poll never receives a session: without consent the handle dies.
func TestMagicLinkCrossDeviceTakeover(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		victim := e.user(t, "victim@example.com")
		attacker := e.client
		handle, tok := e.sendLink(t, "victim@example.com", false)

		victimDevice := signin.Client{IP: "203.0.113.9", UserAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) Version/18.0 Mobile/15E148 Safari/604.1"}
		view, err := e.SignIn.OpenMagicLink(ctx, e.app, tok, victimDevice)
		if err != nil || view.SameDevice {
			t.Fatalf("OpenMagicLink(victim's device) = %+v, %v; want the consent page", view, err)
		}
		// Opening (a mail scanner's GET included) changes nothing.
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, attacker); !errors.Is(err, signin.ErrMagicLinkPending) {
			t.Errorf("MagicLinkStatus(after the page was opened) = %v; want ErrMagicLinkPending", err)
		}
		// The victim's app exchanges the token on the victim's device.
		b, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, victimDevice)
		if err != nil || e.caller(t, b.Access).User.ID != victim.ID {
			t.Fatalf("AuthenticateMagicLink(victim's device) = %v; want the victim signed in there", err)
		}
		for range 3 {
			e.Clock.Advance(2 * time.Second)
			if set, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, attacker); !errors.Is(err, signin.ErrMagicLinkNotFound) || set.Access != "" {
				t.Fatalf("attacker's poll after the victim opened the link = %v (access %t); want ErrMagicLinkNotFound and no tokens",
					err, set.Access != "")
			}
		}
		sessions := rows(t, e.DB, `SELECT ip FROM sessions WHERE app_user_id = $1`, victim.ID)
		if len(sessions) != 1 || sessions[0][0] != victimDevice.IP {
			t.Errorf("victim's sessions = %v; want one, on the victim's device", sessions)
		}
	})
}

// TestMagicLinkConsentApprove: the user asked on device A and opens the
// e-mail on device B; the page shows A's details and the number A shows, and
// Approve releases a session to A's next poll, once.
func TestMagicLinkConsentApprove(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		ep := e.hook(t, e.app)
		u := e.user(t, "alice@example.com")
		a := signin.Client{IP: "198.51.100.7", UserAgent: e.client.UserAgent, Location: "Lisbon, PT"}
		res, err := e.SignIn.SendMagicLink(ctx, e.app, "alice@example.com", nil, false, a)
		if err != nil || res.MatchNumber < 10 || res.MatchNumber > 99 {
			t.Fatalf("SendMagicLink = %+v, %v; want a two-digit match number", res, err)
		}
		msg := e.Mail.Messages()[len(e.Mail.Messages())-1]
		tok := linkToken(t, msg.Link)
		if !strings.HasPrefix(msg.Link, e.Config.BaseURL+"/v1/auth/"+e.app.ID+"/magic_links/open?") {
			t.Errorf("e-mailed link %q; want this server's consent page", msg.Link)
		}
		if !strings.Contains(msg.Text, "Firefox on Linux, 198.51.100.7 (Lisbon, PT)") {
			t.Errorf("e-mail text %q; want it to name the requesting device", msg.Text)
		}

		b := signin.Client{IP: "203.0.113.9", UserAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) Version/18.0 Mobile/15E148 Safari/604.1"}
		view, err := e.SignIn.OpenMagicLink(ctx, e.app, tok, b)
		if err != nil || view.SameDevice || slices.Index(view.Choices, res.MatchNumber) < 0 || view.IP != a.IP ||
			view.Browser != "Firefox" || view.OS != "Linux" || view.Location != "Lisbon, PT" || view.Recipient == "alice@example.com" {
			t.Fatalf("OpenMagicLink(device B) = %+v, %v; want A's details, number %d among the choices, a masked address", view, err, res.MatchNumber)
		}
		for _, decision := range []string{"maybe", ""} {
			if _, err := e.SignIn.DecideMagicLink(ctx, e.app, tok, signin.ConsentAnswer{Decision: decision, Number: strconv.Itoa(res.MatchNumber)}, b); err == nil {
				t.Errorf("DecideMagicLink(decision %q) = nil; want an invalid-input error", decision)
			}
		}
		right := signin.ConsentAnswer{Decision: signin.DecisionApprove, Number: strconv.Itoa(res.MatchNumber)}
		if approved, err := e.SignIn.DecideMagicLink(ctx, e.app, tok, right, b); err != nil || !approved {
			t.Fatalf("DecideMagicLink(approve, the right number) = %t, %v; want approved", approved, err)
		}
		for name, try := range map[string]func() error{
			"approve again": func() error { _, err := e.SignIn.DecideMagicLink(ctx, e.app, tok, right, b); return err },
			"deny after": func() error {
				_, err := e.SignIn.DecideMagicLink(ctx, e.app, tok, signin.ConsentAnswer{Decision: signin.DecisionDeny}, b)
				return err
			},
			"exchange": func() error { _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, b); return err },
			"open":     func() error { _, err := e.SignIn.OpenMagicLink(ctx, e.app, tok, b); return err },
		} {
			if err := try(); !errors.Is(err, signin.ErrMagicLinkNotFound) {
				t.Errorf("%s after approval = %v; want ErrMagicLinkNotFound", name, err)
			}
		}
		set, err := e.SignIn.MagicLinkStatus(ctx, e.app, res.ChallengeID, a)
		if err != nil {
			t.Fatalf("MagicLinkStatus(after approval) = %v; want the token set", err)
		}
		if c := e.caller(t, set.Access); c.User.ID != u.ID || c.Session.IP != a.IP {
			t.Errorf("collected session = %+v; want alice on device A", c.Session)
		}
		e.Clock.Advance(2 * time.Second)
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, res.ChallengeID, a); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("MagicLinkStatus(collected) = %v; want ErrMagicLinkNotFound", err)
		}
		if n := len(rows(t, e.DB, `SELECT id FROM sessions WHERE app_user_id = $1`, u.ID)); n != 1 {
			t.Errorf("%d sessions; want 1 (approving signs in the asking device only)", n)
		}
		var verified *event
		evs := e.events(t, e.app, ep)
		for i := range evs {
			if evs[i].Type == "verification.email.verified" {
				verified = &evs[i]
			}
		}
		if verified == nil || verified.Data["consent_decision"] != "approved" || count(evs)["verification.email.verified"] != 1 {
			t.Fatalf("events %v; want one verification.email.verified with consent_decision approved", count(evs))
		}
		if by, _ := verified.Data["decided_by"].(map[string]any); by["ip_address"] != b.IP {
			t.Errorf("verified decided_by = %v; want device B", verified.Data["decided_by"])
		}
	})
}

// TestMagicLinkConsentDeny: Deny ends the request for good: the poller gets
// no tokens, the link no longer works, and verification.email.denied
// carries consent_decision and denial_reason.
func TestMagicLinkConsentDeny(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		ep := e.hook(t, e.app)
		e.user(t, "alice@example.com")
		handle, tok, number := e.sendNumberedLink(t, "alice@example.com")
		b := signin.Client{IP: "203.0.113.9", UserAgent: "curl/8.0"}
		deny := signin.ConsentAnswer{Decision: signin.DecisionDeny, Reason: signin.DenialNumberMismatch}
		if approved, err := e.SignIn.DecideMagicLink(ctx, e.app, tok, deny, b); err != nil || approved {
			t.Fatalf("DecideMagicLink(deny) = %t, %v; want denied", approved, err)
		}
		right := signin.ConsentAnswer{Decision: signin.DecisionApprove, Number: strconv.Itoa(number)}
		if _, err := e.SignIn.DecideMagicLink(ctx, e.app, tok, right, b); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("approve (the right number) after deny = %v; want ErrMagicLinkNotFound", err)
		}
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("exchange after deny = %v; want ErrMagicLinkNotFound", err)
		}
		set, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client)
		if !errors.Is(err, signin.ErrMagicLinkDenied) || !errors.Is(err, signin.ErrMagicLinkNotFound) || set.Access != "" {
			t.Errorf("MagicLinkStatus(denied) = %v; want ErrMagicLinkDenied (a not-found) and no tokens", err)
		}
		e.Clock.Advance(time.Hour)
		if err := e.SignIn.ExpireChallenges(ctx); err != nil {
			t.Fatal(err)
		}
		evs := e.events(t, e.app, ep)
		got := count(evs)
		if got["verification.email.denied"] != 1 || got["verification.email.verified"] != 0 || got["verification.email.expired"] != 0 {
			t.Fatalf("events %v; want one denied, no verified, no expired", got)
		}
		for _, ev := range evs {
			if ev.Type == "verification.email.denied" &&
				(ev.Data["consent_decision"] != "denied" || ev.Data["denial_reason"] != "number_mismatch") {
				t.Errorf("denied event data = %v; want consent_decision denied, denial_reason number_mismatch", ev.Data)
			}
		}
		if st := rows(t, e.DB, `SELECT status, consent FROM challenges WHERE method = 'magic_link'`); len(st) != 1 ||
			st[0][0] != "denied" || st[0][1] != "denied" {
			t.Errorf("challenge rows = %v; want one, denied", st)
		}
		if n := len(rows(t, e.DB, `SELECT id FROM sessions`)); n != 0 {
			t.Errorf("%d sessions after a denied link; want none", n)
		}
	})
}

// sendNumberedLink sends a magic link to identifier from e.client and
// returns its poll handle, token and the match number the asking device got.
func (e *env) sendNumberedLink(t testing.TB, identifier string) (handle, tok string, number int) {
	t.Helper()
	res, err := e.SignIn.SendMagicLink(t.Context(), e.app, identifier, nil, false, e.client)
	if err != nil || res.MatchNumber < 10 || res.MatchNumber > 99 {
		t.Fatalf("SendMagicLink(%q) = %+v, %v; want a two-digit match number", identifier, res, err)
	}
	m, ok := e.Mail.Last(identifier)
	if !ok {
		t.Fatalf("SendMagicLink(%q) sent nothing", identifier)
	}
	return res.ChallengeID, linkToken(t, m.Link), res.MatchNumber
}

// otherDevice is where the consent page is opened in these tests: not the
// device that asked.
var otherDevice = signin.Client{IP: "203.0.113.9", UserAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) Version/18.0 Mobile/15E148 Safari/604.1"}

// TestMagicLinkConsentChoices: the consent page offers three distinct
// two-digit numbers, the asking device's exactly once, and the same three in
// the same order however often and wherever the link is opened, so
// reloading cannot single out the right one.
func TestMagicLinkConsentChoices(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		for _, who := range []string{"alice@example.com", "bob@example.com", "carol@example.com"} {
			e.user(t, who)
			_, tok, number := e.sendNumberedLink(t, who)
			var first []int
			for i, c := range []signin.Client{otherDevice, otherDevice, {IP: "192.0.2.1", UserAgent: "curl/8.0"}} {
				view, err := e.SignIn.OpenMagicLink(ctx, e.app, tok, c)
				if err != nil {
					t.Fatalf("OpenMagicLink(%s, opening %d) = %v", who, i+1, err)
				}
				got := view.Choices
				sorted := slices.Sorted(slices.Values(got))
				if len(got) != 3 || len(slices.Compact(sorted)) != 3 || sorted[0] < 10 || sorted[2] > 99 {
					t.Fatalf("%s: choices %v; want three distinct two-digit numbers", who, got)
				}
				if n := len(slices.DeleteFunc(slices.Clone(got), func(c int) bool { return c != number })); n != 1 {
					t.Errorf("%s: choices %v hold the match number %d %d times; want once", who, got, number, n)
				}
				if first == nil {
					first = got
				} else if !slices.Equal(got, first) {
					t.Errorf("%s: opening %d offers %v, the first offered %v; want the same, in the same order", who, i+1, got, first)
				}
			}
		}
	})
}

// TestMagicLinkConsentWrongNumber: Approve with any number but the asking
// device's (another choice, none, or something that is not a number) is the
// link's one guess: it denies the request for good, with denial_reason
// number_mismatch, as Deny does; the right number cannot approve afterwards.
func TestMagicLinkConsentWrongNumber(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		cases := []struct {
			name   string
			number func(right int, choices []int) string
		}{
			{"a decoy", func(right int, choices []int) string {
				return strconv.Itoa(slices.DeleteFunc(slices.Clone(choices), func(c int) bool { return c == right })[0])
			}},
			{"missing", func(int, []int) string { return "" }},
			{"not a number", func(int, []int) string { return "4x" }},
			{"a leading zero", func(right int, _ []int) string { return "0" + strconv.Itoa(right) }},
			{"signed", func(right int, _ []int) string { return "+" + strconv.Itoa(right) }},
			{"spaces", func(right int, _ []int) string { return " " + strconv.Itoa(right) }},
			{"out of range", func(int, []int) string { return "100" }},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ep := e.hook(t, e.app)
				who := fmt.Sprintf("user%d@example.com", i)
				e.user(t, who)
				handle, tok, number := e.sendNumberedLink(t, who)
				view, err := e.SignIn.OpenMagicLink(ctx, e.app, tok, otherDevice)
				if err != nil {
					t.Fatal(err)
				}
				wrong := tc.number(number, view.Choices)
				approved, err := e.SignIn.DecideMagicLink(ctx, e.app, tok, signin.ConsentAnswer{Decision: signin.DecisionApprove, Number: wrong}, otherDevice)
				if err != nil || approved {
					t.Fatalf("DecideMagicLink(approve, number %q; right %d) = %t, %v; want denied, no error", wrong, number, approved, err)
				}
				right := signin.ConsentAnswer{Decision: signin.DecisionApprove, Number: strconv.Itoa(number)}
				if _, err := e.SignIn.DecideMagicLink(ctx, e.app, tok, right, otherDevice); !errors.Is(err, signin.ErrMagicLinkNotFound) {
					t.Errorf("the right number after a wrong one = %v; want ErrMagicLinkNotFound", err)
				}
				if _, err := e.SignIn.OpenMagicLink(ctx, e.app, tok, otherDevice); !errors.Is(err, signin.ErrMagicLinkNotFound) {
					t.Errorf("OpenMagicLink(after a wrong number) = %v; want ErrMagicLinkNotFound", err)
				}
				e.Clock.Advance(3 * time.Second)
				if set, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client); !errors.Is(err, signin.ErrMagicLinkDenied) || set.Access != "" {
					t.Errorf("MagicLinkStatus(after a wrong number) = %v; want ErrMagicLinkDenied and no tokens", err)
				}
				evs := e.events(t, e.app, ep)
				if got := count(evs); got["verification.email.denied"] != 1 || got["challenge.failed"] != 1 || got["verification.email.verified"] != 0 {
					t.Fatalf("events %v; want one verification.email.denied and one challenge.failed, nothing verified", got)
				}
				for _, ev := range evs {
					if ev.Type == "verification.email.denied" && (ev.Data["consent_decision"] != "denied" ||
						ev.Data["denial_reason"] != "number_mismatch" || ev.Data["decided_by"] == nil) {
						t.Errorf("denied event data = %v; want consent_decision denied, denial_reason number_mismatch, decided_by", ev.Data)
					}
				}
				if st := rows(t, e.DB, `SELECT status, consent FROM challenges WHERE method = 'magic_link' AND recipient = $1`, who); len(st) != 1 || st[0][0] != "denied" || st[0][1] != "denied" {
					t.Errorf("challenge rows = %v; want one, denied", st)
				}
			})
		}
		if n := len(rows(t, e.DB, `SELECT id FROM sessions`)); n != 0 {
			t.Errorf("%d sessions after wrong numbers only; want none", n)
		}
	})
}

// TestMagicLinkConsentConcurrentDecisions: 50 answers to one link at once,
// right and wrong numbers and denials mixed: exactly one is recorded, the
// challenge ends in that one terminal state with its events once, and the
// poller gets what that answer decided.
func TestMagicLinkConsentConcurrentDecisions(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		for round := range 3 {
			ep := e.hook(t, e.app)
			who := fmt.Sprintf("racer%d@example.com", round)
			e.user(t, who)
			handle, tok, number := e.sendNumberedLink(t, who)
			answers := make([]signin.ConsentAnswer, 50)
			for i := range answers {
				switch i % 5 {
				case 0, 1:
					answers[i] = signin.ConsentAnswer{Decision: signin.DecisionApprove, Number: strconv.Itoa(number)}
				case 2:
					answers[i] = signin.ConsentAnswer{Decision: signin.DecisionApprove, Number: strconv.Itoa(10 + (number-10+1+i)%90)}
				case 3:
					answers[i] = signin.ConsentAnswer{Decision: signin.DecisionApprove}
				default:
					answers[i] = signin.ConsentAnswer{Decision: signin.DecisionDeny}
				}
			}
			var mu sync.Mutex
			var wg sync.WaitGroup
			won, approvals, refused := 0, 0, 0
			for _, a := range answers {
				wg.Go(func() {
					approved, err := e.SignIn.DecideMagicLink(ctx, e.app, tok, a, otherDevice)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						won++
						if approved {
							approvals++
						}
					case errors.Is(err, signin.ErrMagicLinkNotFound):
						refused++
					default:
						t.Errorf("DecideMagicLink(concurrent %+v) = %v; want nil or ErrMagicLinkNotFound", a, err)
					}
				})
			}
			wg.Wait()
			if won != 1 || refused != len(answers)-1 {
				t.Fatalf("round %d: %d concurrent answers: %d recorded, %d refused; want 1 and %d", round, len(answers), won, refused, len(answers)-1)
			}
			got := count(e.events(t, e.app, ep))
			st := rows(t, e.DB, `SELECT status, consent FROM challenges WHERE method = 'magic_link' AND recipient = $1`, who)
			e.Clock.Advance(3 * time.Second)
			set, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client)
			if approvals == 1 {
				if got["verification.email.verified"] != 1 || got["verification.email.denied"] != 0 ||
					len(st) != 1 || st[0][0] != "completed" || st[0][1] != "approved" || err != nil || set.Access == "" {
					t.Errorf("round %d, approved: events %v, challenge %v, poll %v; want one verified, completed and approved, tokens", round, got, st, err)
				}
			} else if got["verification.email.denied"] != 1 || got["verification.email.verified"] != 0 ||
				len(st) != 1 || st[0][0] != "denied" || !errors.Is(err, signin.ErrMagicLinkDenied) {
				t.Errorf("round %d, denied: events %v, challenge %v, poll %v; want one denied, denied, ErrMagicLinkDenied", round, got, st, err)
			}
		}
	})
}

func TestMagicLinkHandleIsNotTheToken(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		e.user(t, "alice@example.com")
		handle, tok := e.sendLink(t, "alice@example.com", false)
		// The token cannot stand in for the handle even before the link is used.
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, tok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("MagicLinkStatus(e-mailed token) = %v; want ErrMagicLinkNotFound", err)
		}
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, handle, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(poll handle) = %v; want ErrMagicLinkNotFound", err)
		}
		dot := strings.LastIndex(tok, ".")
		for name, bad := range map[string]string{"signature flipped": flip(tok, dot+3), "payload flipped": flip(tok, dot-3)} {
			if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, bad, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
				t.Errorf("AuthenticateMagicLink(%s) = %v; want ErrMagicLinkNotFound", name, err)
			}
		}
		other := e.newApp(t, "Other", nil)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, other, tok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(other app) = %v; want ErrMagicLinkNotFound", err)
		}
		if _, err := e.SignIn.MagicLinkStatus(ctx, other, handle, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("MagicLinkStatus(other app) = %v; want ErrMagicLinkNotFound", err)
		}
		// None of that spent the link.
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, e.client); err != nil {
			t.Errorf("AuthenticateMagicLink(good token) = %v; want nil", err)
		}
	})
}

func TestMagicLinkResendSupersedes(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		e.user(t, "alice@example.com")
		oldHandle, oldTok := e.sendLink(t, "alice@example.com", false)
		newHandle, newTok := e.sendLink(t, "alice@example.com", false)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, oldTok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(superseded link) = %v; want ErrMagicLinkNotFound", err)
		}
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, oldHandle, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("MagicLinkStatus(superseded link) = %v; want ErrMagicLinkNotFound", err)
		}
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, newTok, e.client); err != nil {
			t.Errorf("AuthenticateMagicLink(newest link) = %v; want nil", err)
		}
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, newHandle, e.client); err != nil {
			t.Errorf("MagicLinkStatus(newest link, opened) = %v; want nil", err)
		}
	})
}

func TestMagicLinkExpiry(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		e.user(t, "alice@example.com")
		e.user(t, "bob@example.com")
		aliceHandle, aliceTok := e.sendLink(t, "alice@example.com", false)
		bobHandle, bobTok := e.sendLink(t, "bob@example.com", false)
		ttl := time.Duration(e.app.MagicLinkExpiration) * time.Second

		e.Clock.Advance(ttl - time.Second)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, bobTok, e.client); err != nil {
			t.Errorf("AuthenticateMagicLink(1 s before expiry) = %v; want nil", err)
		}
		e.Clock.Advance(2 * time.Second)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, aliceTok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(1 s after expiry) = %v; want ErrMagicLinkNotFound", err)
		}
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, aliceHandle, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("MagicLinkStatus(expired link) = %v; want ErrMagicLinkNotFound", err)
		}
		// Past the token's own exp (and the verifier's leeway) as well.
		e.Clock.Advance(time.Minute)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, aliceTok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(a minute after expiry) = %v; want ErrMagicLinkNotFound", err)
		}
		// Bob opened his link in time, so his device still collects once.
		if _, err := e.SignIn.MagicLinkStatus(ctx, e.app, bobHandle, e.client); err != nil {
			t.Errorf("MagicLinkStatus(opened in time) = %v; want nil", err)
		}
	})
}

func TestMagicLinkPayload(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		e := newEnv(t, sys, nil)
		u := e.user(t, "alice@example.com")
		for _, webauthn := range []bool{false, true} {
			_, tok := e.sendLink(t, "alice@example.com", webauthn)
			p := tokentest.Payload(t, tok)
			if p["uuid"] != u.ID || p["user_status"] != store.StatusActive || p["email"] != "alice@example.com" {
				t.Errorf("magic token payload = %v; want uuid %s, user_status active, email alice@example.com", p, u.ID)
			}
			if got, ok := p["webauthnEnabled"].(bool); !ok || got != webauthn {
				t.Errorf("magic token payload webauthnEnabled = %v (present %v); want %v", p["webauthnEnabled"], ok, webauthn)
			}
			if exp, ok := p["exp"].(float64); !ok || int64(exp) != e.Clock.Now().Unix()+e.app.MagicLinkExpiration {
				t.Errorf("magic token exp = %v; want now + %d s", p["exp"], e.app.MagicLinkExpiration)
			}
		}
	})
}

func TestConfirmInvite(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		invited, _, err := e.Users.Invite(ctx, servertest.Operator, e.app, appuser.CreateInput{Identifier: "ivy@example.com"})
		if err != nil {
			t.Fatalf("Invite: %v", err)
		}
		if invited.Status != store.StatusPending {
			t.Fatalf("invited user status = %q; want pending", invited.Status)
		}
		msg, ok := e.Mail.Last("ivy@example.com")
		if !ok {
			t.Fatalf("no invitation was sent")
		}
		inviteTok := linkToken(t, msg.Link)

		// An invitation is not a magic sign-in link, and the reverse.
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, inviteTok, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("AuthenticateMagicLink(invitation token) = %v; want ErrMagicLinkNotFound", err)
		}
		e.user(t, "alice@example.com")
		_, magicTok := e.sendLink(t, "alice@example.com", false)
		if _, err := e.SignIn.ConfirmInvite(ctx, e.app, magicTok, nil, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("ConfirmInvite(magic sign-in token) = %v; want ErrMagicLinkNotFound", err)
		}
		if _, err := e.SignIn.ConfirmInvite(ctx, e.newApp(t, "Other", nil), inviteTok, nil, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("ConfirmInvite(other app) = %v; want ErrMagicLinkNotFound", err)
		}

		ts, err := e.SignIn.ConfirmInvite(ctx, e.app, inviteTok, map[string]any{"nick": "Ivy", "role": "admin"}, e.client)
		if err != nil {
			t.Fatalf("ConfirmInvite = %v; want nil", err)
		}
		c := e.caller(t, ts.Access)
		if c.User.ID != invited.ID || c.Session.Method != signin.MethodInvite {
			t.Errorf("ConfirmInvite signed in %s by %q; want %s by invite", c.User.ID, c.Session.Method, invited.ID)
		}
		got, err := e.get(t, invited.ID)
		if err != nil || got.Status != store.StatusActive || !got.EmailVerified || got.Meta["nick"] != "Ivy" {
			t.Errorf("user after ConfirmInvite = %+v (meta %v), %v; want active, verified, nick Ivy", got.AppUser, got.Meta, err)
		}
		if _, ok := got.Meta["role"]; ok {
			t.Errorf("user meta = %v; want the undeclared key role dropped", got.Meta)
		}
		if _, err := e.SignIn.ConfirmInvite(ctx, e.app, inviteTok, nil, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("ConfirmInvite(used invitation) = %v; want ErrMagicLinkNotFound", err)
		}
	})
}

func TestConfirmInviteExpiredOrDeactivated(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		late, _, err := e.Users.Invite(ctx, servertest.Operator, e.app, appuser.CreateInput{Identifier: "late@example.com"})
		if err != nil {
			t.Fatalf("Invite: %v", err)
		}
		gone, _, err := e.Users.Invite(ctx, servertest.Operator, e.app, appuser.CreateInput{Identifier: "gone@example.com"})
		if err != nil {
			t.Fatalf("Invite: %v", err)
		}
		lateMsg, _ := e.Mail.Last("late@example.com")
		goneMsg, _ := e.Mail.Last("gone@example.com")
		if _, err := e.Users.SetStatus(ctx, servertest.Operator, e.app, gone.ID, store.StatusInactive); err != nil {
			t.Fatalf("SetStatus: %v", err)
		}
		if _, err := e.SignIn.ConfirmInvite(ctx, e.app, linkToken(t, goneMsg.Link), nil, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("ConfirmInvite(deactivated user) = %v; want ErrMagicLinkNotFound", err)
		}
		e.Clock.Advance(appuser.InvitationTTL + time.Minute)
		if _, err := e.SignIn.ConfirmInvite(ctx, e.app, linkToken(t, lateMsg.Link), nil, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("ConfirmInvite(expired invitation) = %v; want ErrMagicLinkNotFound", err)
		}
		if got, err := e.get(t, late.ID); err != nil || got.Status != store.StatusPending {
			t.Errorf("user after expired invitation = %q, %v; want still pending", got.Status, err)
		}
	})
}

// TestMagicLinkConcurrentUse checks a link and an invitation each start
// exactly one session however many requests race to use them.
func TestMagicLinkConcurrentUse(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		e.user(t, "alice@example.com")
		_, magicTok := e.sendLink(t, "alice@example.com", false)
		if _, _, err := e.Users.Invite(ctx, servertest.Operator, e.app, appuser.CreateInput{Identifier: "ivy@example.com"}); err != nil {
			t.Fatalf("Invite: %v", err)
		}
		msg, _ := e.Mail.Last("ivy@example.com")
		inviteTok := linkToken(t, msg.Link)

		for name, use := range map[string]func() (signin.TokenSet, error){
			"AuthenticateMagicLink": func() (signin.TokenSet, error) {
				return e.SignIn.AuthenticateMagicLink(ctx, e.app, magicTok, e.client)
			},
			"ConfirmInvite": func() (signin.TokenSet, error) {
				return e.SignIn.ConfirmInvite(ctx, e.app, inviteTok, nil, e.client)
			},
		} {
			const n = 20
			var mu sync.Mutex
			var wg sync.WaitGroup
			won, refused := 0, 0
			for range n {
				wg.Go(func() {
					_, err := use()
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						won++
					case errors.Is(err, signin.ErrMagicLinkNotFound):
						refused++
					default:
						t.Errorf("%s(concurrent) = %v; want nil or ErrMagicLinkNotFound", name, err)
					}
				})
			}
			wg.Wait()
			if won != 1 || refused != n-1 {
				t.Errorf("%d concurrent %s: %d succeeded, %d refused; want 1 and %d", n, name, won, refused, n-1)
			}
		}
	})
}

// TestMagicLinkConcurrentPolls checks the token set is handed out once even
// when polls race with no poll interval to hold them apart.
func TestMagicLinkConcurrentPolls(t *testing.T) {
	servertest.ForEach(t, options(func(o *servertest.Options) { o.Limits.PollInterval = 0 }), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		e.user(t, "alice@example.com")
		handle, tok := e.sendLink(t, "alice@example.com", false)
		if _, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, e.client); err != nil {
			t.Fatalf("AuthenticateMagicLink: %v", err)
		}
		const n = 20
		var mu sync.Mutex
		var wg sync.WaitGroup
		won, refused := 0, 0
		for range n {
			wg.Go(func() {
				_, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case errors.Is(err, signin.ErrMagicLinkNotFound):
					refused++
				default:
					t.Errorf("MagicLinkStatus(concurrent) = %v; want nil or ErrMagicLinkNotFound", err)
				}
			})
		}
		wg.Wait()
		if won != 1 || refused != n-1 {
			t.Errorf("%d concurrent polls: %d token sets, %d not found; want 1 and %d", n, won, refused, n-1)
		}
	})
}
