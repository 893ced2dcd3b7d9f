package signin_test

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/passkey/passkeytest"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
)

// Refusal details the passkey sign-in answers with (the message after
// "Passkey verification failed: ").
const (
	unknownCeremony = "unknown, used or expired ceremony"
	anotherUsers    = "the passkey is another user's"
)

// beginLogin asks for sign-in options for identifier ("" for a
// discoverable sign-in) as client c.
func (e *env) beginLogin(t testing.TB, identifier string, c signin.Client) string {
	t.Helper()
	opts, err := e.SignIn.BeginPasskeyLogin(t.Context(), e.app, identifier, c)
	if err != nil {
		t.Fatalf("BeginPasskeyLogin(%q): %v", identifier, err)
	}
	return string(opts)
}

// sign answers options with a's passkey; anyCredential drops the allow
// list first, as an attacker's page may, so a signs with its own passkey
// whatever the options asked for.
func sign(t testing.TB, a *passkeytest.Authenticator, options string, anyCredential bool) string {
	t.Helper()
	if anyCredential {
		var o map[string]any
		if err := json.Unmarshal([]byte(options), &o); err != nil {
			t.Fatal(err)
		}
		delete(o, "allowCredentials")
		b, _ := json.Marshal(o)
		options = string(b)
	}
	body, err := a.Get(options)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// refusedLogin returns the detail of a refused passkey sign-in, failing
// the test when err is anything else.
func refusedLogin(t testing.TB, what string, err error) string {
	t.Helper()
	var pe *signin.PasskeyError
	if !errors.As(err, &pe) || !errors.Is(err, signin.ErrPasskeyVerification) {
		t.Fatalf("%s: %v; want a refused passkey sign-in", what, err)
	}
	return pe.Detail
}

// An assertion over an earlier ceremony's challenge fails once a newer
// ceremony began for the same identifier, whichever finishes first; the
// newer one signs in (security §18 item 23).
func TestPasskeyLoginNewerCeremonyReplacesEarlier(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "ada@example.com")
		a := e.registerPasskey(t, e.caller(t, e.signIn(t, u).Access))

		// The red team's order: two ceremonies, the newer finished, then an
		// assertion signed over the earlier one's challenge.
		earlier := e.beginLogin(t, "ada@example.com", e.client)
		newer := e.beginLogin(t, "ada@example.com", e.client)
		if got, err := e.SignIn.FinishPasskeyLogin(ctx, e.app, []byte(sign(t, a, newer, false)), e.client); err != nil || got.Access == "" {
			t.Fatalf("the newer ceremony: %+v, %v; want tokens", got, err)
		}
		_, err := e.SignIn.FinishPasskeyLogin(ctx, e.app, []byte(sign(t, a, earlier, false)), e.client)
		if d := refusedLogin(t, "the earlier ceremony after the newer finished", err); d != unknownCeremony {
			t.Errorf("the earlier ceremony after the newer finished: %q; want %q", d, unknownCeremony)
		}

		// The earlier answered first: it was replaced when the newer began,
		// and the newer still signs in.
		earlier = e.beginLogin(t, "ada@example.com", e.client)
		newer = e.beginLogin(t, "ada@example.com", e.client)
		_, err = e.SignIn.FinishPasskeyLogin(ctx, e.app, []byte(sign(t, a, earlier, false)), e.client)
		if d := refusedLogin(t, "the earlier ceremony before the newer finished", err); d != unknownCeremony {
			t.Errorf("the earlier ceremony before the newer finished: %q; want %q", d, unknownCeremony)
		}
		if got, err := e.SignIn.FinishPasskeyLogin(ctx, e.app, []byte(sign(t, a, newer, false)), e.client); err != nil || got.Access == "" {
			t.Fatalf("the newer ceremony after the earlier was refused: %+v, %v; want tokens", got, err)
		}
		// The refusals were of the ceremony, not the passkey.
		if list, err := e.SignIn.UserPasskeys(ctx, servertest.Operator, e.app, u.ID); err != nil || len(list) != 1 || list[0].SuspendedAt != nil {
			t.Errorf("passkeys after the refusals: %+v, %v; want one, not suspended", list, err)
		}
	})
}

// Replacing is the same for every identifier, so it tells nothing about
// who has an account or a passkey (security R-WA-7): an attacker holding
// a passkey of their own gets the same answers, for both ceremonies, for a
// user with a passkey, a user without one and an identifier nobody has.
// A stand-in's ceremony never signs anyone in.
func TestPasskeyLoginReplacingRevealsNothing(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		ada := e.user(t, "ada@example.com")
		e.registerPasskey(t, e.caller(t, e.signIn(t, ada).Access))
		e.user(t, "bob@example.com")
		mallory := e.user(t, "mallory@example.com")
		m := e.registerPasskey(t, e.caller(t, e.signIn(t, mallory).Access))

		answers := map[string][]string{}
		for _, target := range []string{"ada@example.com", "bob@example.com", "nobody@example.com"} {
			earlier := e.beginLogin(t, target, e.client)
			newer := e.beginLogin(t, target, e.client)
			for _, opts := range []string{earlier, newer} {
				got, err := e.SignIn.FinishPasskeyLogin(ctx, e.app, []byte(sign(t, m, opts, true)), e.client)
				if err == nil {
					t.Fatalf("mallory's passkey answering a ceremony for %s signed in %+v", target, got)
				}
				answers[target] = append(answers[target], refusedLogin(t, "mallory's passkey for "+target, err))
			}
		}
		want := []string{unknownCeremony, anotherUsers}
		for target, got := range answers {
			if !slices.Equal(got, want) {
				t.Errorf("mallory's answers to the earlier and newer ceremony for %s: %q; want %q", target, got, want)
			}
		}
	})
}

// A newer registration ceremony replaces the user's earlier one.
func TestPasskeyRegistrationNewerCeremonyReplacesEarlier(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		c := e.caller(t, e.signIn(t, e.user(t, "ada@example.com")).Access)
		var bodies []string
		for range 2 {
			opts, err := e.SignIn.BeginDeviceRegistration(ctx, e.app, c)
			if err != nil {
				t.Fatal(err)
			}
			body, _, err := passkeytest.New("shop.example", e.app.Origin).Create(string(opts.Options))
			if err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, body)
		}
		var pe *signin.PasskeyError
		if _, err := e.SignIn.FinishDeviceRegistration(ctx, e.app, c, []byte(bodies[0]), e.client); !errors.As(err, &pe) ||
			!errors.Is(err, signin.ErrPasskeyRegistration) || pe.Detail != unknownCeremony {
			t.Errorf("the earlier registration: %v; want refused as an %s", err, unknownCeremony)
		}
		if _, err := e.SignIn.FinishDeviceRegistration(ctx, e.app, c, []byte(bodies[1]), e.client); err != nil {
			t.Errorf("the newer registration: %v", err)
		}
	})
}

// A discoverable ceremony is finished only by the client that began it
// (its address and user agent); another client's answer leaves it for
// that one. It names nobody, so it replaces nothing: two from one client
// both sign in.
func TestPasskeyDiscoverableBoundToClient(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "ada@example.com")
		a := e.registerPasskey(t, e.caller(t, e.signIn(t, u).Access))

		answer := sign(t, a, e.beginLogin(t, "", e.client), false)
		otherAddress, otherBrowser := e.client, e.client
		otherAddress.IP = "203.0.113.9"
		otherBrowser.UserAgent = "Mozilla/5.0 (Macintosh; Intel Mac OS X 15_0) Safari/605.1.15"
		for name, c := range map[string]signin.Client{"another address": otherAddress, "another browser": otherBrowser} {
			_, err := e.SignIn.FinishPasskeyLogin(ctx, e.app, []byte(answer), c)
			if d := refusedLogin(t, "finished from "+name, err); d != unknownCeremony {
				t.Errorf("finished from %s: %q; want %q", name, d, unknownCeremony)
			}
		}
		if got, err := e.SignIn.FinishPasskeyLogin(ctx, e.app, []byte(answer), e.client); err != nil || got.Access == "" {
			t.Fatalf("finished by the client that began it: %+v, %v; want tokens", got, err)
		}

		first := e.beginLogin(t, "", e.client)
		second := e.beginLogin(t, "", e.client)
		for i, opts := range []string{first, second} {
			if _, err := e.SignIn.FinishPasskeyLogin(ctx, e.app, []byte(sign(t, a, opts, false)), e.client); err != nil {
				t.Errorf("discoverable ceremony %d of one client: %v", i+1, err)
			}
		}
	})
}

// Of 50 ceremonies begun at once for one identifier, one remains: their
// 50 answers, sent at once, sign in once.
func TestPasskeyLoginReplacingUnderRace(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		u := e.user(t, "ada@example.com")
		a := e.registerPasskey(t, e.caller(t, e.signIn(t, u).Access))
		const n = 50
		opts := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				o, err := e.SignIn.BeginPasskeyLogin(ctx, e.app, "ada@example.com", e.client)
				if err != nil {
					t.Errorf("BeginPasskeyLogin %d: %v", i, err)
				}
				opts[i] = string(o)
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		if got := rows(t, e.DB, "SELECT id FROM passkey_ceremonies WHERE kind = 'login'"); len(got) != 1 {
			t.Errorf("%d login ceremonies stored after %d begun at once; want 1", len(got), n)
		}
		answers := make([]string, n)
		for i, o := range opts {
			answers[i] = sign(t, a, o, false)
		}
		var (
			mu       sync.Mutex
			won      int
			refusals = map[string]int{}
		)
		for _, body := range answers {
			wg.Go(func() {
				_, err := e.SignIn.FinishPasskeyLogin(ctx, e.app, []byte(body), e.client)
				mu.Lock()
				defer mu.Unlock()
				var pe *signin.PasskeyError
				switch {
				case err == nil:
					won++
				case errors.As(err, &pe):
					refusals[pe.Detail]++
				default:
					refusals[err.Error()]++
				}
			})
		}
		wg.Wait()
		if won != 1 || refusals[unknownCeremony] != n-1 {
			t.Errorf("%d answers at once: %d signed in, refusals %v; want 1 and %d %q", n, won, refusals, n-1, unknownCeremony)
		}
	})
}
