package outbound_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/courier/couriertest"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestMessageRouterAcrossReplicas checks the bound on how stale the router's
// providers may be: a change made through the same Service applies to the
// next message; one made by another replica (peer: same database and
// clock) within outbound.ProviderCacheTTL. Messages of other apps and of no
// app go to the fallback throughout.
func TestMessageRouterAcrossReplicas(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		peer := servertest.New(t, sys.DB.Kind(), servertest.Options{Peer: sys})
		ws, _ := sys.Workspace(t, "Route")
		a := sys.App(t, ws.ID, "Shop", nil)
		b := sys.App(t, ws.ID, "Other", nil)
		fallback := &couriertest.Recorder{}
		router := sys.Outbound.Providers.Router(fallback)
		sms := func(appID, to string) courier.Message {
			return courier.Message{Channel: courier.ChannelSMS, AppID: appID, To: to, Text: "code"}
		}
		reached := func(to string) bool { _, ok := fallback.Last(to); return ok }
		send := func(m courier.Message) {
			t.Helper()
			if _, err := router.Send(ctx, m); err != nil {
				t.Fatalf("Send(%s) error = %v", m.To, err)
			}
		}

		send(sms(a.ID, "+14155550001"))
		if !reached("+14155550001") {
			t.Fatalf("an app without providers: the fallback got nothing")
		}

		// The peer enables the log provider (SMS and e-mail) for app a.
		sys.Clock.Advance(500 * time.Millisecond)
		if _, err := peer.Outbound.Providers.Update(ctx, operator, a.ID, outbound.ProviderChange{Slug: "log", Enabled: ptr(true)}); err != nil {
			t.Fatalf("peer Update: %v", err)
		}
		// Within the bound sys may still use what it built...
		sys.Clock.Advance(outbound.ProviderCacheTTL - 500*time.Millisecond - time.Nanosecond)
		send(sms(a.ID, "+14155550002"))
		if !reached("+14155550002") {
			t.Errorf("just under %v after reading: the cached (fallback) routing was not used", outbound.ProviderCacheTTL)
		}
		// ...and once it is reached, it reads the change.
		sys.Clock.Advance(time.Nanosecond)
		send(sms(a.ID, "+14155550003"))
		if reached("+14155550003") {
			t.Errorf("%v after reading: the peer's provider was not used", outbound.ProviderCacheTTL)
		}
		send(sms(b.ID, "+14155550004"))
		send(courier.Message{Channel: courier.ChannelEmail, To: "ops@example.com", Subject: "s", Text: "t"})
		if !reached("+14155550004") || !reached("ops@example.com") {
			t.Errorf("another app's message or one of no app missed the fallback")
		}

		// A change through sys applies at once.
		if _, err := sys.Outbound.Providers.Update(ctx, operator, a.ID, outbound.ProviderChange{Slug: "log", Enabled: ptr(false)}); err != nil {
			t.Fatalf("Update: %v", err)
		}
		send(sms(a.ID, "+14155550005"))
		if !reached("+14155550005") {
			t.Errorf("right after disabling through this Service: the fallback got nothing")
		}
	})
}

// TestMessageProviderSecretsAtRest: secret settings are sealed, bound to
// the app and the slug; the rest is plain JSON.
func TestMessageProviderSecretsAtRest(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		ws, _ := sys.Workspace(t, "Rest")
		a := sys.App(t, ws.ID, "Shop", nil)
		secret := "smtp-password-0123456789abcdef"
		_, err := sys.Outbound.Providers.Update(ctx, operator, a.ID, outbound.ProviderChange{Slug: "smtp",
			Config: map[string]*string{"host": ptr("smtp.shop.example"), "from": ptr("shop@shop.example"), "username": ptr("shop"), "password": ptr(secret)}})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		rows, err := sys.DB.ListMessageProviders(ctx, a.ID)
		if err != nil || len(rows) != 1 {
			t.Fatalf("ListMessageProviders = %v, %v; want one row", rows, err)
		}
		r := rows[0]
		if bytes.Contains(r.Config, []byte(secret)) || bytes.Contains(r.SecretsSealed, []byte(secret)) || len(r.SecretsSealed) == 0 {
			t.Errorf("row = config %s, sealed %d bytes; want the password sealed, not in clear", r.Config, len(r.SecretsSealed))
		}
		// Sealed for another app's slot, it does not open.
		b := sys.App(t, ws.ID, "Other", nil)
		moved := store.MessageProvider{AppID: b.ID, Slug: "smtp", Type: "smtp", Config: r.Config, SecretsSealed: r.SecretsSealed,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
		if err := sys.DB.PutMessageProvider(ctx, moved); err != nil {
			t.Fatalf("PutMessageProvider: %v", err)
		}
		if _, err := sys.Outbound.Providers.List(ctx, operator, b.ID); err == nil {
			t.Errorf("List with secrets sealed for another app = nil error; want the seal to refuse")
		}

		// A refused setting names itself.
		_, err = sys.Outbound.Providers.Update(ctx, operator, a.ID, outbound.ProviderChange{Slug: "smtp",
			Config: map[string]*string{"port": ptr("99999")}})
		var inv *errs.Invalid
		if !errors.As(err, &inv) || inv.Field != "config.port" {
			t.Errorf("Update(port 99999) = %v; want invalid config.port", err)
		}

		// A stored secret never follows the provider to a new destination:
		// moving the host (or port, or TLS) without sending the password again
		// is refused, naming it, and the hint sent back does not count.
		for _, change := range []map[string]*string{
			{"host": ptr("smtp.attacker.example")},
			{"port": ptr("2525")},
			{"tls": ptr("none")},
			{"host": ptr("smtp.attacker.example"), "password": ptr(outbound.SecretHint(secret))},
		} {
			_, err = sys.Outbound.Providers.Update(ctx, operator, a.ID, outbound.ProviderChange{Slug: "smtp", Config: change})
			if !errors.As(err, &inv) || inv.Field != "config.password" {
				t.Errorf("Update(%v) = %v; want invalid config.password", keys(change), err)
			}
		}
		// With the secret sent again, the move is the caller's own.
		if _, err = sys.Outbound.Providers.Update(ctx, operator, a.ID, outbound.ProviderChange{Slug: "smtp",
			Config: map[string]*string{"host": ptr("smtp2.shop.example"), "password": ptr("another-password-0123")}}); err != nil {
			t.Errorf("Update(host and password) = %v; want nil", err)
		}
		// Changing what is not a destination keeps the secret.
		if _, err = sys.Outbound.Providers.Update(ctx, operator, a.ID, outbound.ProviderChange{Slug: "smtp",
			Config: map[string]*string{"from": ptr("hello@shop.example")}}); err != nil {
			t.Errorf("Update(from) = %v; want nil", err)
		}
	})
}

func keys(m map[string]*string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSecretHint(t *testing.T) {
	tests := []struct{ secret, want string }{
		{"", "********"},
		{"short", "********"},
		{"fifteen-chars-x", "********"},
		{"sixteen-chars-xy", "****s-xy"},
		{"SG.abcdefghijklmnopqrstuvwxyz0123", "****0123"},
	}
	for _, tt := range tests {
		if got := outbound.SecretHint(tt.secret); got != tt.want {
			t.Errorf("SecretHint(%q) = %q; want %q", tt.secret, got, tt.want)
		}
	}
}

var operator = servertest.Operator

func ptr[T any](v T) *T { return &v }
