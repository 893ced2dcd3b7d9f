package signin_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// flakyCourier hands every message to next (so the test still learns the
// secret) and then, while fail is set, reports a permanent refusal whose
// text quotes the message (as a careless provider might): it must reach no
// log line, event or job row.
type flakyCourier struct {
	next courier.Provider
	fail *atomic.Bool
}

func (f flakyCourier) Send(ctx context.Context, m courier.Message) (string, error) {
	id, err := f.next.Send(ctx, m)
	if err == nil && f.fail.Load() {
		return "", &courier.SendError{Provider: "smtp", Status: 554, Code: "5.7.1", Msg: "rejected: " + m.Text + " " + m.Link}
	}
	return id, err
}

// secretFlow runs every sign-in path that logs something, and returns every
// secret it saw: codes, link tokens, poll handles, access, refresh and CSRF tokens.
func secretFlow(t *testing.T, e *env, fail *atomic.Bool) []string {
	t.Helper()
	ctx := t.Context()
	var secrets []string
	keep := func(ts signin.TokenSet) { secrets = append(secrets, ts.Access, ts.Refresh, ts.CSRF) }
	u := e.user(t, "alice@example.com")

	// A challenge that fails after five wrong codes.
	_, code := e.sendCode(t, "alice@example.com")
	for _, c := range wrongCodes(code, 5) {
		if _, err := e.SignIn.VerifyOTP(ctx, e.app, u.ID, c, e.client); err == nil {
			t.Fatalf("VerifyOTP(wrong code) = nil; want an error")
		}
	}
	ts := e.signIn(t, u)
	keep(ts)

	// Rotation, then reuse outside the grace window.
	next, err := e.SignIn.Refresh(ctx, e.app, ts.Refresh)
	if err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	keep(next)
	e.Clock.Advance(time.Minute)
	if _, err := e.SignIn.Refresh(ctx, e.app, ts.Refresh); !errors.Is(err, signin.ErrUnauthenticated) {
		t.Fatalf("Refresh(reused) = %v; want ErrUnauthenticated", err)
	}

	// A magic link opened on one device and collected on the other.
	handle, tok := e.sendLink(t, "alice@example.com", false)
	secrets = append(secrets, handle)
	opened, err := e.SignIn.AuthenticateMagicLink(ctx, e.app, tok, e.client)
	if err != nil {
		t.Fatalf("AuthenticateMagicLink: %v", err)
	}
	keep(opened)
	polled, err := e.SignIn.MagicLinkStatus(ctx, e.app, handle, e.client)
	if err != nil {
		t.Fatalf("MagicLinkStatus: %v", err)
	}
	keep(polled)
	e.Clock.Advance(2 * time.Minute) // the next request records session activity
	e.caller(t, polled.Access)
	backend := servertest.Operator // with a credential, rotate_access mints a refresh token too
	rotated, err := e.SignIn.RotateAccess(ctx, &backend, e.app, polled.Access)
	if err != nil {
		t.Fatalf("RotateAccess: %v", err)
	}
	keep(rotated)

	// Deliveries that fail, of a code, a link and an invitation.
	fail.Store(true)
	e.sendCode(t, "alice@example.com")
	e.sendLink(t, "alice@example.com", false)
	if _, _, err := e.Users.Invite(ctx, servertest.Operator, e.app, appuser.CreateInput{Identifier: "ivy@example.com"}); err != nil {
		t.Fatalf("Invite with a failing courier = %v; want nil (accepted for delivery)", err)
	}
	e.Mail.Settle() // every refusal is recorded before the courier works again
	fail.Store(false)

	for _, m := range e.Mail.Messages() {
		if m.Code != "" {
			secrets = append(secrets, m.Code)
		}
		if m.Link != "" {
			secrets = append(secrets, linkToken(t, m.Link))
		}
	}
	return secrets
}

func TestSecretsNeverLogged(t *testing.T) {
	var fail atomic.Bool
	opts := options(func(o *servertest.Options) {
		o.Courier = func(p courier.Provider) courier.Provider { return flakyCourier{next: p, fail: &fail} }
	})
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		fail.Store(false) // the engines run one after the other
		e := newEnv(t, sys, nil)
		secrets := secretFlow(t, e, &fail)
		logs := e.Logs.String()
		// The flow must have logged, or the test proves nothing.
		for _, want := range []string{"refresh token reused", "challenge failed after its last wrong answer", `"msg":"message not delivered","app_id"`,
			`"message":"invitation"`, `"message":"magic_link"`, `"message":"login_code"`} {
			if !strings.Contains(logs, want) {
				t.Errorf("logs lack %q; want every logging path exercised:\n%s", want, logs)
			}
		}
		if len(secrets) < 20 {
			t.Fatalf("the flow saw %d secrets; want at least 20", len(secrets))
		}
		for _, s := range secrets {
			if servertest.Leaks(logs, s) {
				t.Errorf("logs contain a secret (%d chars):\n%s", len(s), logs)
			}
		}
	})
}

func TestSecretsNotStored(t *testing.T) {
	var fail atomic.Bool
	opts := options(func(o *servertest.Options) {
		o.Courier = func(p courier.Provider) courier.Provider { return flakyCourier{next: p, fail: &fail} }
	})
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		fail.Store(false) // the engines run one after the other
		e := newEnv(t, sys, nil)
		// With an endpoint, every event of the flow is stored too, and dumped.
		ep := e.hook(t, e.app)
		secrets := append(secretFlow(t, e, &fail), ep.Secret)
		all := dump(t, e.DB)
		// The failed invitation's message is kept, sealed, in the send
		// queue (its masked recipient is in no other table).
		for _, want := range []string{"alice@example.com", webhook.Verification("email", webhook.OutcomeVerified), courier.MaskAddress("ivy@example.com")} {
			if !strings.Contains(all, want) {
				t.Fatalf("the dump does not show %q; the dump is broken", want)
			}
		}
		for _, s := range secrets {
			if servertest.Leaks(all, s) {
				t.Errorf("the database holds a secret (%d chars) in plain text", len(s))
			}
		}
	})
}
