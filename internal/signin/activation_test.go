package signin_test

import (
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// TestSignInActivatesUser checks that a user who proves an identifier by
// signing in gets it marked verified and, when pending or imported, is
// activated (appuser writes the row, inside sign-in's transaction), in the
// same step as the session and the verified event.
func TestSignInActivatesUser(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		ep := e.hook(t, e.app)
		for _, tc := range []struct {
			name, identifier, status string
			sms, link                bool
		}{
			{"invited, one-time code by e-mail", "ivy@example.com", store.StatusPending, false, false},
			{"imported, one-time code by SMS", "+14155552671", store.StatusImported, true, false},
			{"invited, magic link", "lina@example.com", store.StatusPending, false, true},
			{"active, one-time code by e-mail", "alice@example.com", store.StatusActive, false, false},
		} {
			var u appuser.User
			switch tc.status {
			case store.StatusPending:
				u, _ = e.invite(t, tc.identifier)
			case store.StatusImported:
				created := e.user(t, tc.identifier)
				var err error
				if u, err = e.Users.SetStatus(ctx, servertest.Operator, e.app, created.ID, store.StatusImported); err != nil {
					t.Fatalf("%s: SetStatus(imported): %v", tc.name, err)
				}
			default:
				u = e.user(t, tc.identifier)
			}
			if u.Status != tc.status || u.EmailVerified || u.PhoneVerified {
				t.Fatalf("%s: user before signing in = %+v; want %s, nothing verified", tc.name, u.AppUser, tc.status)
			}

			var ts signin.TokenSet
			var err error
			if tc.link {
				_, tok := e.sendLink(t, tc.identifier, false)
				before := len(e.events(t, e.app, ep))
				e.Clock.Advance(time.Minute)
				ts, err = e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, e.client)
				checkVerifiedEvents(t, tc.name, e.events(t, e.app, ep)[before:], "email", u.ID)
			} else {
				_, code := e.sendCode(t, tc.identifier)
				before := len(e.events(t, e.app, ep))
				e.Clock.Advance(time.Minute)
				ts, err = e.SignIn.VerifyOTP(ctx, e.app, u.ID, code, e.client)
				channel := "email"
				if tc.sms {
					channel = "sms"
				}
				checkVerifiedEvents(t, tc.name, e.events(t, e.app, ep)[before:], channel, u.ID)
			}
			if err != nil {
				t.Fatalf("%s: sign-in = %v; want nil", tc.name, err)
			}
			if c := e.caller(t, ts.Access); c.User.ID != u.ID || c.User.Status != store.StatusActive {
				t.Errorf("%s: signed in %s (%s); want %s, active", tc.name, c.User.ID, c.User.Status, u.ID)
			}
			got, err := e.get(t, u.ID)
			if err != nil || got.Status != store.StatusActive || got.EmailVerified != !tc.sms || got.PhoneVerified != tc.sms ||
				!got.UpdatedAt.Equal(e.Clock.Now().Truncate(time.Microsecond)) {
				t.Errorf("%s: user after signing in = %+v, %v; want active, e-mail verified %v, phone verified %v, updated now (%v)",
					tc.name, got.AppUser, err, !tc.sms, tc.sms, e.Clock.Now())
			}
		}
	})
}

// checkVerifiedEvents checks the events of one successful sign-in: the
// verified event of its channel for the user, and nothing else (the
// verification event says the identifier is verified; no user.updated).
func checkVerifiedEvents(t *testing.T, name string, events []event, channel, userID string) {
	t.Helper()
	types := make([]string, 0, len(events))
	for _, ev := range events {
		types = append(types, ev.Type)
	}
	if want := []string{webhook.Verification(channel, webhook.OutcomeVerified), webhook.ChallengeCompleted}; !slices.Equal(types, want) {
		t.Errorf("%s: events of the sign-in = %v; want %v", name, types, want)
		return
	}
	if meta, _ := events[0].Data["meta_data"].(map[string]any); meta["user_id"] != userID {
		t.Errorf("%s: verified event data = %v; want meta_data.user_id %s", name, events[0].Data, userID)
	}
}
