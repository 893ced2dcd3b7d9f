package machine_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/machine"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

var operator = servertest.Operator

// grant gets a token for a client as the token endpoint would.
func grant(t *testing.T, sys *servertest.System, app store.App, id, secret, scope string) machine.Grant {
	t.Helper()
	g, err := sys.Machines.IssueToken(t.Context(), app, machine.TokenRequest{GrantType: machine.GrantClientCredentials,
		ClientID: id, ClientSecret: secret, Scope: scope})
	if err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	return g
}

func TestClientSecretStoredHashed(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ws, _ := sys.Workspace(t, "Hash")
		app := sys.App(t, ws.ID, "A", nil)
		secret, c, err := sys.Machines.CreateClient(t.Context(), operator, app, machine.ClientInput{Name: " Worker ", Scopes: []string{"b", "a", "b"}})
		if err != nil {
			t.Fatalf("CreateClient: %v", err)
		}
		if !strings.HasPrefix(secret, machine.ClientSecretPrefix) || c.Name != "Worker" || !slices.Equal(c.Scopes, []string{"b", "a"}) {
			t.Errorf("CreateClient = %q, %+v; want a ghm_ secret, the trimmed name and scopes without repeats", secret, c)
		}
		rec, err := sys.DB.GetM2MClient(t.Context(), app.ID, c.ID)
		if err != nil {
			t.Fatalf("GetM2MClient: %v", err)
		}
		body := secret[len(machine.ClientSecretPrefix):]
		if rec.SecretHash == secret || strings.Contains(rec.SecretHash, body) || rec.SecretLast4 != secret[len(secret)-4:] {
			t.Errorf("stored client = %+v; want only a keyed hash and the last 4 characters", rec)
		}
	})
}

func TestClientAccess(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		ws, _ := sys.Workspace(t, "Access")
		app, other := sys.App(t, ws.ID, "A", nil), sys.App(t, ws.ID, "B", nil)
		key, _, err := sys.Tenants.CreateAPIKey(ctx, operator, app.ID, "k")
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		cases := []struct {
			name string
			p    access.Principal
			ok   bool
		}{
			{"operator", operator, true},
			{"app secret", sys.Principal(t, sys.AppSecret(t, app.ID)), true},
			{"another app's secret", sys.Principal(t, sys.AppSecret(t, other.ID)), false},
			{"api key", sys.Principal(t, key), false},
		}
		for _, tc := range cases {
			_, c, err := sys.Machines.CreateClient(ctx, tc.p, app, machine.ClientInput{})
			if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, access.ErrForbidden)) {
				t.Errorf("%s: CreateClient = %v; want allowed %v", tc.name, err, tc.ok)
			}
			if _, err := sys.Machines.ListClients(ctx, tc.p, app); tc.ok != (err == nil) {
				t.Errorf("%s: ListClients = %v; want allowed %v", tc.name, err, tc.ok)
			}
			if tc.ok {
				if _, err := sys.Machines.RevokeClient(ctx, tc.p, app, c.ID); err != nil {
					t.Errorf("%s: RevokeClient = %v", tc.name, err)
				}
			}
		}
		if _, err := sys.Machines.RevokeClient(ctx, operator, other, "nope"); !errors.Is(err, machine.ErrClientNotFound) {
			t.Errorf("RevokeClient(unknown) = %v; want ErrClientNotFound", err)
		}
		// A client of app A is unknown to app B.
		secret, c, _ := sys.Machines.CreateClient(ctx, operator, app, machine.ClientInput{})
		if _, err := sys.Machines.RevokeClient(ctx, operator, other, c.ID); !errors.Is(err, machine.ErrClientNotFound) {
			t.Errorf("RevokeClient(another app's client) = %v; want ErrClientNotFound", err)
		}
		if _, err := sys.Machines.IssueToken(ctx, other, machine.TokenRequest{GrantType: machine.GrantClientCredentials,
			ClientID: c.ID, ClientSecret: secret}); !errors.Is(err, machine.ErrInvalidClient) {
			t.Errorf("IssueToken at another app = %v; want ErrInvalidClient", err)
		}
	})
}

func TestClientInputRules(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ws, _ := sys.Workspace(t, "Rules")
		app := sys.App(t, ws.ID, "A", nil)
		many := make([]string, machine.MaxScopes+1)
		for i := range many {
			many[i] = "s" + strings.Repeat("x", i)
		}
		for name, in := range map[string]machine.ClientInput{
			"long name":       {Name: strings.Repeat("n", machine.MaxNameLen+1)},
			"empty scope":     {Scopes: []string{""}},
			"scope too long":  {Scopes: []string{strings.Repeat("s", machine.MaxScopeLen+1)}},
			"scope backslash": {Scopes: []string{`a\b`}},
			"scope non-ASCII": {Scopes: []string{"café"}},
			"too many scopes": {Scopes: many},
		} {
			var invalid *errs.Invalid
			if _, _, err := sys.Machines.CreateClient(t.Context(), operator, app, in); !errors.As(err, &invalid) {
				t.Errorf("%s: CreateClient = %v; want *errs.Invalid", name, err)
			}
		}
		if _, _, err := sys.Machines.CreateClient(t.Context(), operator, app, machine.ClientInput{Scopes: many[:machine.MaxScopes]}); err != nil {
			t.Errorf("CreateClient(%d scopes) = %v; want nil", machine.MaxScopes, err)
		}
	})
}

func TestIssueTokenScopes(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ws, _ := sys.Workspace(t, "Scopes")
		app := sys.App(t, ws.ID, "A", nil)
		secret, c, err := sys.Machines.CreateClient(t.Context(), operator, app, machine.ClientInput{Scopes: []string{"r", "w"}})
		if err != nil {
			t.Fatalf("CreateClient: %v", err)
		}
		for _, tc := range []struct {
			scope string
			want  []string
			err   error
		}{
			{"", []string{}, nil},
			{"r", []string{"r"}, nil},
			{"w  r r", []string{"w", "r"}, nil},
			{"r x", nil, machine.ErrInvalidScope},
			{"r\tw", nil, machine.ErrInvalidScope},
		} {
			g, err := sys.Machines.IssueToken(t.Context(), app, machine.TokenRequest{GrantType: machine.GrantClientCredentials,
				ClientID: c.ID, ClientSecret: secret, Scope: tc.scope})
			if !errors.Is(err, tc.err) || (err == nil && !slices.Equal(g.Scopes, tc.want)) {
				t.Errorf("IssueToken(scope %q) = %v, %v; want %v, %v", tc.scope, g.Scopes, err, tc.want, tc.err)
			}
		}
		for _, tc := range []struct {
			name string
			r    machine.TokenRequest
			err  error
		}{
			{"no grant type", machine.TokenRequest{ClientID: c.ID, ClientSecret: secret}, nil},
			{"password grant", machine.TokenRequest{GrantType: "password", ClientID: c.ID, ClientSecret: secret}, machine.ErrUnsupportedGrantType},
			{"no secret", machine.TokenRequest{GrantType: machine.GrantClientCredentials, ClientID: c.ID}, machine.ErrInvalidClient},
			{"long client id", machine.TokenRequest{GrantType: machine.GrantClientCredentials, ClientID: strings.Repeat("c", 200), ClientSecret: secret}, machine.ErrInvalidClient},
		} {
			_, err := sys.Machines.IssueToken(t.Context(), app, tc.r)
			var invalid *errs.Invalid
			if tc.err == nil && !errors.As(err, &invalid) || tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("%s: IssueToken = %v; want %v (nil: *errs.Invalid)", tc.name, err, tc.err)
			}
		}
	})
}

// TestRevocationReachesEveryReplica: a session revoked on one replica fails
// on another at its next request (no cache), as does a revoked client's.
func TestRevocationReachesEveryReplica(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		peer := servertest.New(t, sys.DB.Kind(), servertest.Options{Peer: sys})
		ws, _ := sys.Workspace(t, "Replicas")
		app := sys.App(t, ws.ID, "A", nil)
		secret, c, err := sys.Machines.CreateClient(ctx, operator, app, machine.ClientInput{})
		if err != nil {
			t.Fatalf("CreateClient: %v", err)
		}
		g1, g2 := grant(t, sys, app, c.ID, secret, ""), grant(t, sys, app, c.ID, secret, "")

		sess, err := peer.Machines.Authenticate(ctx, app, g1.AccessToken)
		if err != nil || sess.ID != g1.Session.ID {
			t.Fatalf("peer Authenticate = %+v, %v; want session %s", sess, err, g1.Session.ID)
		}
		if err := sys.Machines.RevokeSession(ctx, app, sess); err != nil {
			t.Fatalf("RevokeSession: %v", err)
		}
		if _, err := peer.Machines.Authenticate(ctx, app, g1.AccessToken); !errors.Is(err, machine.ErrUnauthenticated) {
			t.Errorf("peer Authenticate after the revocation = %v; want ErrUnauthenticated", err)
		}
		if err := peer.Machines.RevokeSession(ctx, app, sess); !errors.Is(err, machine.ErrUnauthenticated) {
			t.Errorf("RevokeSession again = %v; want ErrUnauthenticated", err)
		}
		if _, err := peer.Machines.Authenticate(ctx, app, g2.AccessToken); err != nil {
			t.Fatalf("peer Authenticate(other session) = %v", err)
		}
		if _, err := sys.Machines.RevokeClient(ctx, operator, app, c.ID); err != nil {
			t.Fatalf("RevokeClient: %v", err)
		}
		if _, err := peer.Machines.Authenticate(ctx, app, g2.AccessToken); !errors.Is(err, machine.ErrUnauthenticated) {
			t.Errorf("peer Authenticate after the client's revocation = %v; want ErrUnauthenticated", err)
		}
	})
}

// TestRevokeRace: of two revocations of one session racing, exactly one
// succeeds.
func TestRevokeRace(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		ws, _ := sys.Workspace(t, "Race")
		app := sys.App(t, ws.ID, "A", nil)
		secret, c, err := sys.Machines.CreateClient(ctx, operator, app, machine.ClientInput{})
		if err != nil {
			t.Fatalf("CreateClient: %v", err)
		}
		g := grant(t, sys, app, c.ID, secret, "")
		sess, err := sys.Machines.Authenticate(ctx, app, g.AccessToken)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		const n = 8
		var wg sync.WaitGroup
		errc := make(chan error, n)
		for range n {
			wg.Go(func() { errc <- sys.Machines.RevokeSession(ctx, app, sess) })
		}
		wg.Wait()
		close(errc)
		won := 0
		for err := range errc {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, machine.ErrUnauthenticated):
				t.Errorf("RevokeSession = %v", err)
			}
		}
		if won != 1 {
			t.Errorf("%d revocations succeeded; want exactly 1", won)
		}
	})
}

func TestPurgeSessions(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		ws, _ := sys.Workspace(t, "Purge")
		app := sys.App(t, ws.ID, "A", nil)
		secret, c, err := sys.Machines.CreateClient(ctx, operator, app, machine.ClientInput{})
		if err != nil {
			t.Fatalf("CreateClient: %v", err)
		}
		old := grant(t, sys, app, c.ID, secret, "")
		sys.Clock.Advance(5 * time.Minute)
		young := grant(t, sys, app, c.ID, secret, "")
		sys.Clock.Advance(5 * time.Minute) // old has just expired; young has 5 minutes left
		if err := sys.Machines.PurgeSessions(ctx); err != nil {
			t.Fatalf("PurgeSessions: %v", err)
		}
		if _, err := sys.DB.GetM2MSession(ctx, old.Session.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("expired session after the purge: %v; want ErrNotFound", err)
		}
		if _, err := sys.DB.GetM2MSession(ctx, young.Session.ID); err != nil {
			t.Errorf("live session after the purge: %v; want it kept", err)
		}
		if _, err := sys.Machines.Authenticate(ctx, app, young.AccessToken); err != nil {
			t.Errorf("Authenticate(live token) after the purge = %v", err)
		}
	})
}
