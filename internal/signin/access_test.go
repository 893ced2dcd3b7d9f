package signin_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
)

// TestUserSessionsAccess checks the administrative session calls decide for
// their caller: the app's own secret and API key, and the workspace's owner,
// may list and revoke a user's sessions; a member (role member) may list but
// not revoke; another app's credentials and another workspace's owner may do
// neither. A refusal comes before anything is looked up, so it does not tell
// whether the user or session exists.
func TestUserSessionsAccess(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		other := e.newApp(t, "Other", nil)
		apiKey := func(appID string) string {
			key, _, err := e.Tenants.CreateAPIKey(ctx, servertest.Operator, appID, "tests")
			if err != nil {
				t.Fatalf("CreateAPIKey(%s): %v", appID, err)
			}
			return key
		}
		if _, err := e.Tenants.AddMember(ctx, servertest.Operator, e.ws.ID, "mia@acme.example", "Mia", access.RoleMember); err != nil {
			t.Fatalf("AddMember(member): %v", err)
		}
		_, globexOwner := e.Workspace(t, "Globex")

		alice := e.user(t, "alice@example.com")
		live := map[string]bool{}
		for _, tc := range []struct {
			name         string
			credential   string
			list, revoke error // nil: allowed
		}{
			{"app secret", e.AppSecret(t, e.app.ID), nil, nil},
			{"app API key", apiKey(e.app.ID), nil, nil},
			{"workspace owner", e.WorkspaceSecret(t, e.ws.ID, e.owner.ID), nil, nil},
			{"workspace member", e.WorkspaceSecret(t, e.ws.ID, "mia@acme.example"), nil, access.ErrForbidden},
			{"another app's secret", e.AppSecret(t, other.ID), access.ErrForbidden, access.ErrForbidden},
			{"another app's API key", apiKey(other.ID), access.ErrForbidden, access.ErrForbidden},
			{"another workspace's owner", e.WorkspaceSecret(t, globexOwner.WorkspaceID, globexOwner.ID), access.ErrForbidden, access.ErrForbidden},
		} {
			p := e.Principal(t, tc.credential)
			ts := e.signIn(t, alice)
			sid := e.caller(t, ts.Access).Session.ID
			live[sid] = true

			got, err := e.SignIn.UserSessions(ctx, p, e.app, alice.ID)
			if tc.list == nil {
				ids := make([]string, 0, len(got))
				for _, s := range got {
					ids = append(ids, s.ID)
				}
				slices.Sort(ids)
				if want := slices.Sorted(maps.Keys(live)); err != nil || !slices.Equal(ids, want) {
					t.Errorf("%s: UserSessions(alice) = %v, %v; want %v", tc.name, ids, err, want)
				}
				if _, err := e.SignIn.UserSessions(ctx, p, e.app, "no-such-user"); !errors.Is(err, appuser.ErrUserNotFound) {
					t.Errorf("%s: UserSessions(unknown user) = %v; want ErrUserNotFound", tc.name, err)
				}
			} else {
				if !errors.Is(err, tc.list) || got != nil {
					t.Errorf("%s: UserSessions(alice) = %d sessions, %v; want none, %v", tc.name, len(got), err, tc.list)
				}
				if _, err := e.SignIn.UserSessions(ctx, p, e.app, "no-such-user"); !errors.Is(err, tc.list) {
					t.Errorf("%s: UserSessions(unknown user) = %v; want %v", tc.name, err, tc.list)
				}
			}

			err = e.SignIn.RevokeUserSession(ctx, p, e.app, alice.ID, sid)
			if !errors.Is(err, tc.revoke) || (err != nil && !strings.HasPrefix(err.Error(), "revoke user session: ")) {
				t.Errorf("%s: RevokeUserSession(alice's session) = %v; want %v", tc.name, err, tc.revoke)
			}
			_, authErr := e.SignIn.Authenticate(ctx, e.app, ts.Access)
			if tc.revoke == nil {
				delete(live, sid)
				if !errors.Is(authErr, signin.ErrUnauthenticated) {
					t.Errorf("%s: Authenticate after the session was revoked = %v; want ErrUnauthenticated", tc.name, authErr)
				}
				if err := e.SignIn.RevokeUserSession(ctx, p, e.app, alice.ID, "no-such-session"); !errors.Is(err, signin.ErrSessionNotFound) {
					t.Errorf("%s: RevokeUserSession(unknown session) = %v; want ErrSessionNotFound", tc.name, err)
				}
				if err := e.SignIn.RevokeUserSession(ctx, p, e.app, "no-such-user", sid); !errors.Is(err, appuser.ErrUserNotFound) {
					t.Errorf("%s: RevokeUserSession(unknown user) = %v; want ErrUserNotFound", tc.name, err)
				}
			} else {
				if authErr != nil {
					t.Errorf("%s: Authenticate after a refused revocation = %v; want the session live", tc.name, authErr)
				}
				for what, ids := range map[string][2]string{"unknown session": {alice.ID, "no-such-session"}, "unknown user": {"no-such-user", sid}} {
					if err := e.SignIn.RevokeUserSession(ctx, p, e.app, ids[0], ids[1]); !errors.Is(err, tc.revoke) {
						t.Errorf("%s: RevokeUserSession(%s) = %v; want %v", tc.name, what, err, tc.revoke)
					}
				}
			}
		}
		if len(live) != 4 {
			t.Errorf("%d of alice's sessions live after the table; want the 4 whose revocation was refused", len(live))
		}
	})
}
