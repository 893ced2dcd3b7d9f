package signin_test

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// refuseSessions makes the database refuse every new session, so a
// transaction that starts one fails after everything before it (appuser's
// writes and events included) has run in it. allow drops the refusal.
func refuseSessions(t *testing.T, db *store.DB) (allow func()) {
	t.Helper()
	if db.Kind() == store.Postgres {
		exec(t, db,
			`CREATE FUNCTION refuse_sessions() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'sessions refused by the test'; END $$`,
			`CREATE TRIGGER refuse_sessions BEFORE INSERT ON sessions FOR EACH ROW EXECUTE FUNCTION refuse_sessions()`)
		return func() { exec(t, db, `DROP TRIGGER refuse_sessions ON sessions`, `DROP FUNCTION refuse_sessions()`) }
	}
	exec(t, db, `CREATE TRIGGER refuse_sessions BEFORE INSERT ON sessions BEGIN SELECT RAISE(ABORT, 'sessions refused by the test'); END`)
	return func() { exec(t, db, `DROP TRIGGER refuse_sessions`) }
}

// TestConfirmInviteEmitsUserUpdated checks that accepting an invitation is a
// change of the user like any other: it emits user.updated exactly once,
// with the metadata the user gave and status active, in the transaction
// that starts the session, so the event and the session commit together or
// not at all. A bad invitation is ErrMagicLinkNotFound and emits and
// changes nothing.
func TestConfirmInviteEmitsUserUpdated(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		other := e.newApp(t, "Other", nil)
		ep, otherEP := e.hook(t, e.app), e.hook(t, other)

		invited, tok := e.invite(t, "ivy@example.com")
		gone, goneTok := e.invite(t, "gone@example.com")
		if _, err := e.Users.SetStatus(ctx, servertest.Operator, e.app, gone.ID, store.StatusInactive); err != nil {
			t.Fatalf("SetStatus(inactive): %v", err)
		}
		e.user(t, "alice@example.com")
		_, magicTok := e.sendLink(t, "alice@example.com", false)
		if _, _, err := e.Users.Invite(ctx, servertest.Operator, other, appuser.CreateInput{Identifier: "olga@example.com"}); err != nil {
			t.Fatalf("Invite(other app): %v", err)
		}
		otherMsg, _ := e.Mail.Last("olga@example.com")
		otherTok := linkToken(t, otherMsg.Link)

		// unchanged checks that neither app's events nor Ivy moved.
		events, otherEvents := e.events(t, e.app, ep), e.events(t, other, otherEP)
		if got := count(events); got[webhook.UserCreated] != 3 || got[webhook.UserUpdated] != 1 {
			t.Fatalf("events before confirming = %v; want 3 user.created (ivy, gone, alice) and 1 user.updated (gone's deactivation)", got)
		}
		unchanged := func(after string) {
			t.Helper()
			if got := count(e.events(t, e.app, ep)); !maps.Equal(got, count(events)) {
				t.Errorf("events after %s = %v; want none new (%v)", after, got, count(events))
			}
			if got := count(e.events(t, other, otherEP)); !maps.Equal(got, count(otherEvents)) {
				t.Errorf("other app's events after %s = %v; want none new (%v)", after, got, count(otherEvents))
			}
			u, err := e.get(t, invited.ID)
			if err != nil || u.Status != store.StatusPending || u.EmailVerified || len(u.Meta) != 0 || !u.UpdatedAt.Equal(invited.UpdatedAt) {
				t.Errorf("ivy after %s = %+v (meta %v), %v; want still pending, unverified, no meta, not updated", after, u.AppUser, u.Meta, err)
			}
			if sessions, err := e.SignIn.UserSessions(ctx, servertest.Operator, e.app, invited.ID); err != nil || len(sessions) != 0 {
				t.Errorf("ivy's sessions after %s = %d, %v; want none", after, len(sessions), err)
			}
		}

		// role is undeclared; plan is declared but the app's alone: the
		// invitee may set neither.
		meta := map[string]any{"nick": "Ivy", "age": 30, "role": "admin", "plan": "enterprise"}
		for _, tc := range []struct {
			name string
			app  store.App
			tok  string
		}{
			{"garbage", e.app, "not-a-token"},
			{"signature flipped", e.app, flip(tok, len(tok)-3)},
			{"magic sign-in token", e.app, magicTok},
			{"another app's invitation", e.app, otherTok},
			{"ivy's invitation on another app", other, tok},
			{"deactivated user's invitation", e.app, goneTok},
		} {
			_, err := e.SignIn.ConfirmInvite(ctx, tc.app, tc.tok, meta, e.client)
			if !errors.Is(err, signin.ErrMagicLinkNotFound) || !strings.HasPrefix(err.Error(), "confirm invite: ") {
				t.Errorf("ConfirmInvite(%s) = %v; want confirm invite: ErrMagicLinkNotFound", tc.name, err)
			}
			unchanged("ConfirmInvite(" + tc.name + ")")
		}
		if u, err := e.get(t, gone.ID); err != nil || u.Status != store.StatusInactive || u.EmailVerified {
			t.Errorf("deactivated user after ConfirmInvite = %+v, %v; want still inactive and unverified", u.AppUser, err)
		}

		// The session cannot be stored: the whole acceptance rolls back,
		// its event with it, and the invitation stays unspent.
		allow := refuseSessions(t, e.DB)
		_, err := e.SignIn.ConfirmInvite(ctx, e.app, tok, meta, e.client)
		if err == nil || errors.Is(err, signin.ErrMagicLinkNotFound) || !strings.HasPrefix(err.Error(), "confirm invite: ") {
			t.Errorf("ConfirmInvite(sessions refused) = %v; want a confirm invite: error from the store", err)
		}
		unchanged("a ConfirmInvite whose session failed")
		allow()

		e.Clock.Advance(time.Minute)
		ts, err := e.SignIn.ConfirmInvite(ctx, e.app, tok, meta, e.client)
		if err != nil {
			t.Fatalf("ConfirmInvite = %v; want nil", err)
		}
		if c := e.caller(t, ts.Access); c.User.ID != invited.ID || c.Session.Method != signin.MethodInvite {
			t.Errorf("ConfirmInvite signed in %s by %q; want %s by invite", c.User.ID, c.Session.Method, invited.ID)
		}
		after := e.events(t, e.app, ep)
		if len(after) != len(events)+1 || after[len(after)-1].Type != webhook.UserUpdated {
			t.Fatalf("events after ConfirmInvite = %v; want exactly one more, user.updated (before: %v)", count(after), count(events))
		}
		user, _ := after[len(after)-1].Data["user"].(map[string]any)
		wantMeta := map[string]any{"nick": "Ivy", "age": float64(30)}
		if user["id"] != invited.ID || user["app_id"] != e.app.ID || user["status"] != store.StatusActive ||
			user["email"] != "ivy@example.com" || user["email_verified"] != true || user["phone_verified"] != false ||
			!reflect.DeepEqual(user["user_meta"], wantMeta) {
			t.Errorf("user.updated data = %v; want ivy (%s), active, e-mail verified, user_meta %v", after[len(after)-1].Data, invited.ID, wantMeta)
		}
		updated, err := e.get(t, invited.ID)
		if err != nil || updated.Status != store.StatusActive || !updated.UpdatedAt.Equal(e.Clock.Now().Truncate(time.Microsecond)) {
			t.Errorf("ivy after ConfirmInvite = %+v, %v; want active, updated now (%v)", updated.AppUser, err, e.Clock.Now())
		}
		if user["updated_at"] != updated.UpdatedAt.Format(time.RFC3339Nano) {
			t.Errorf("user.updated updated_at = %v; want the stored %v", user["updated_at"], updated.UpdatedAt.Format(time.RFC3339Nano))
		}
		if got := count(e.events(t, other, otherEP)); !maps.Equal(got, count(otherEvents)) {
			t.Errorf("other app's events after ConfirmInvite = %v; want none new (%v)", got, count(otherEvents))
		}

		// Spent: a second use is refused and emits nothing more.
		if _, err := e.SignIn.ConfirmInvite(ctx, e.app, tok, meta, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
			t.Errorf("ConfirmInvite(used invitation) = %v; want ErrMagicLinkNotFound", err)
		}
		if got := e.events(t, e.app, ep); len(got) != len(after) {
			t.Errorf("events after a used invitation = %v; want none new (%v)", count(got), count(after))
		}
	})
}

// TestInvitationLinksDie checks that only the newest invitation link of a
// pending user works: inviting again kills the older link, and no link works
// once the user is active, whether they signed in another way or an
// administrator activated them (setting them back to pending does not
// revive an old link).
func TestInvitationLinksDie(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		refused := func(name, tok string) {
			t.Helper()
			if _, err := e.SignIn.ConfirmInvite(ctx, e.app, tok, nil, e.client); !errors.Is(err, signin.ErrMagicLinkNotFound) {
				t.Errorf("ConfirmInvite(%s) = %v; want ErrMagicLinkNotFound", name, err)
			}
		}

		ivy, oldTok := e.invite(t, "ivy@example.com")
		_, newTok := e.invite(t, "ivy@example.com")
		refused("an invitation replaced by a newer one", oldTok)

		bob, bobTok := e.invite(t, "bob@example.com")
		e.signIn(t, bob)
		if u, err := e.get(t, bob.ID); err != nil || u.Status != store.StatusActive {
			t.Fatalf("bob after signing in with a code = %+v, %v; want active", u.AppUser, err)
		}
		refused("an active user's invitation", bobTok)

		carl, carlTok := e.invite(t, "carl@example.com")
		for _, status := range []string{store.StatusActive, store.StatusPending} {
			if _, err := e.Users.SetStatus(ctx, servertest.Operator, e.app, carl.ID, status); err != nil {
				t.Fatalf("SetStatus(%s): %v", status, err)
			}
		}
		refused("an invitation sent before the user was activated and set back to pending", carlTok)

		ts, err := e.SignIn.ConfirmInvite(ctx, e.app, newTok, nil, e.client)
		if err != nil {
			t.Fatalf("ConfirmInvite(newest invitation) = %v; want nil", err)
		}
		if c := e.caller(t, ts.Access); c.User.ID != ivy.ID {
			t.Errorf("ConfirmInvite(newest invitation) signed in %s; want ivy (%s)", c.User.ID, ivy.ID)
		}
	})
}
