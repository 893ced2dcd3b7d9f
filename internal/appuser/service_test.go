package appuser_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// issuer is the token issuer the test systems are configured with.
const issuer = "https://auth.example.test"

// opts builds every system of this file: the default test system with a
// fixed token issuer, so invitation claims can be checked exactly.
var opts = servertest.Options{Settings: map[string]string{"GATEHOUSE_TOKENS_ISSUER": issuer}}

// op is the operator, who may do anything.
var op = servertest.Operator

// testSchema declares the user_meta fields the apps accept.
// Users see every field but tier in the sign-up and profile forms; tier is
// the app's alone.
var testSchema = appuser.Schema{
	{ID: "1", Name: "Nickname", FieldName: "nick", FieldType: appuser.FieldString, VisibleRegistration: true, VisibleProfile: true},
	{ID: "2", Name: "Age", FieldName: "age", FieldType: appuser.FieldInteger, VisibleRegistration: true, VisibleProfile: true},
	{ID: "3", Name: "Newsletter", FieldName: "newsletter", FieldType: appuser.FieldBoolean, VisibleRegistration: true, VisibleProfile: true},
	{ID: "4", Name: "Company", FieldName: "company", FieldType: appuser.FieldString, Required: true, VisibleRegistration: true, VisibleProfile: true},
	{ID: "5", Name: "Tier", FieldName: "tier", FieldType: appuser.FieldString},
}

// newApp creates an app with testSchema through tenant, then lets mod change
// its settings first.
func newApp(t *testing.T, sys *servertest.System, workspaceID, name string, mod func(*tenant.AppSettings)) store.App {
	t.Helper()
	schema := slices.Clone(testSchema)
	return sys.App(t, workspaceID, name, func(s *tenant.AppSettings) {
		s.MetaSchema = &schema
		if mod != nil {
			mod(s)
		}
	})
}

// create adds a user as the operator.
func create(t *testing.T, sys *servertest.System, app store.App, in appuser.CreateInput) appuser.User {
	t.Helper()
	u, _, err := sys.Users.Create(context.Background(), op, app, in)
	if err != nil {
		t.Fatalf("Create(%+v): %v", in, err)
	}
	return u
}

// member adds a workspace member with role and returns the principal of a
// workspace secret acting for them.
func member(t *testing.T, sys *servertest.System, workspaceID, email, role string) access.Principal {
	t.Helper()
	m, err := sys.Tenants.AddMember(context.Background(), op, workspaceID, email, "Mo", role)
	if err != nil {
		t.Fatalf("AddMember(%s, %s): %v", email, role, err)
	}
	return sys.Principal(t, sys.WorkspaceSecret(t, workspaceID, m.ID))
}

// apiKey issues an API key for an app and returns its principal.
func apiKey(t *testing.T, sys *servertest.System, appID string) access.Principal {
	t.Helper()
	key, _, err := sys.Tenants.CreateAPIKey(context.Background(), op, appID, "tests")
	if err != nil {
		t.Fatalf("CreateAPIKey(%s): %v", appID, err)
	}
	return sys.Principal(t, key)
}

func ptr[T any](v T) *T { return &v }

// event is one webhook event an app emitted.
type event struct {
	Type string
	Data map[string]any
}

// eventLog sees the events of one app through a webhook endpoint subscribed
// to every event type: each event is recorded as a delivery to the endpoint
// in the transaction that emits it. The endpoint is never called (nothing
// runs the delivery workers).
type eventLog struct {
	sys               *servertest.System
	appID, endpointID string
	seen              map[string]bool // delivery ids already returned
}

// watchEvents starts recording the app's events.
func watchEvents(t *testing.T, sys *servertest.System, appID string) *eventLog {
	t.Helper()
	u := "http://127.0.0.1:9/events"
	ep, err := sys.Webhooks.Create(context.Background(), op, appID, webhook.Input{URL: &u})
	if err != nil {
		t.Fatalf("create the recording webhook endpoint: %v", err)
	}
	return &eventLog{sys: sys, appID: appID, endpointID: ep.ID, seen: map[string]bool{}}
}

// since returns the events emitted since the previous call (or since
// watchEvents), oldest first.
func (l *eventLog) since(t *testing.T) []event {
	t.Helper()
	ctx := context.Background()
	page, err := l.sys.Webhooks.Deliveries(ctx, op, l.appID, l.endpointID, 1, 100)
	if err != nil {
		t.Fatalf("read the recorded events: %v", err)
	}
	var out []event
	for _, d := range slices.Backward(page.Deliveries) {
		if l.seen[d.ID] {
			continue
		}
		l.seen[d.ID] = true
		w, err := l.sys.DB.GetDeliveryWork(ctx, d.ID)
		if err != nil {
			t.Fatalf("read the event of delivery %s: %v", d.ID, err)
		}
		var env struct {
			EventType string         `json:"event_type"`
			AppID     string         `json:"app_id"`
			Data      map[string]any `json:"data"`
		}
		if err := json.Unmarshal(w.Body, &env); err != nil {
			t.Fatalf("event body %s does not decode: %v", w.Body, err)
		}
		if env.EventType != d.EventType || env.AppID != l.appID {
			t.Fatalf("event body says %s of app %s; want %s of %s as its delivery says", env.EventType, env.AppID, d.EventType, l.appID)
		}
		out = append(out, event{Type: d.EventType, Data: env.Data})
	}
	if page.Total != len(l.seen) {
		t.Fatalf("recorded deliveries = %d, seen %d: more than a page of events at once", page.Total, len(l.seen))
	}
	return out
}

// types lists the types of events.
func types(evs []event) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// markVerified calls MarkVerified inside a transaction, as signin does.
func markVerified(sys *servertest.System, app store.App, id string, email, phone bool) (store.AppUser, error) {
	var u store.AppUser
	err := sys.DB.Tx(context.Background(), func(tx *store.Tx) (err error) {
		u, err = sys.Users.MarkVerified(context.Background(), tx, app, id, email, phone)
		return err
	})
	return u, err
}

// accept calls AcceptInvitation inside a transaction, as signin does.
func accept(sys *servertest.System, app store.App, tok string, meta map[string]any) (store.AppUser, error) {
	var u store.AppUser
	inv, err := sys.Users.ParseInvitation(app, tok)
	if err != nil {
		return u, err
	}
	err = sys.DB.Tx(context.Background(), func(tx *store.Tx) (err error) {
		u, err = sys.Users.AcceptInvitation(context.Background(), tx, app, inv, meta)
		return err
	})
	return u, err
}

func TestCreate(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "acme")
		app := newApp(t, sys, ws.ID, "shop", nil)
		now := servertest.Start().Truncate(time.Microsecond)

		for _, tc := range []struct {
			in           appuser.CreateInput
			email, phone string
		}{
			{appuser.CreateInput{Identifier: "  Alice@Example.COM "}, "alice@example.com", ""},
			{appuser.CreateInput{Identifier: "+1 (415) 555-2671"}, "", "+14155552671"},
			{appuser.CreateInput{Email: "BOB@example.com", Phone: "0044 20 7946 0018"}, "bob@example.com", "+442079460018"},
			{appuser.CreateInput{Identifier: "carol@example.com", Phone: "+49 151 23456789"}, "carol@example.com", "+4915123456789"},
		} {
			u, _, err := sys.Users.Create(ctx, op, app, tc.in)
			if err != nil {
				t.Errorf("Create(%+v) = %v; want nil", tc.in, err)
				continue
			}
			if u.Email != tc.email || u.Phone != tc.phone || u.Status != store.StatusActive || u.AppID != app.ID ||
				u.UserID == "" || !u.CreatedAt.Equal(now) || u.EmailVerified || u.PhoneVerified {
				t.Errorf("Create(%+v) = %+v; want active user %q %q created at %v", tc.in, u.AppUser, tc.email, tc.phone, now)
			}
			got, err := sys.Users.Get(ctx, op, app, u.ID)
			if err != nil || got.Email != tc.email || got.Phone != tc.phone || got.UserID != u.UserID || !got.CreatedAt.Equal(now) {
				t.Errorf("Get(%s) = %+v, %v; want what Create returned", u.ID, got.AppUser, err)
			}
		}

		for _, tc := range []struct {
			name string
			in   appuser.CreateInput
			want error
		}{
			{"same e-mail, other case", appuser.CreateInput{Identifier: "ALICE@example.com"}, appuser.ErrUserExists},
			{"same phone, other format", appuser.CreateInput{Phone: "+14155552671"}, appuser.ErrUserExists},
			{"new e-mail with a taken phone", appuser.CreateInput{Email: "new@example.com", Phone: "+44 20 7946 0018"}, appuser.ErrUserExists},
			{"taken e-mail with a new phone", appuser.CreateInput{Email: "alice@example.com", Phone: "+39 06 1234 5678"}, appuser.ErrUserExists},
			{"nothing", appuser.CreateInput{}, appuser.ErrInvalidIdentifier},
			{"bad identifier", appuser.CreateInput{Identifier: "alice"}, appuser.ErrInvalidIdentifier},
			{"bad e-mail field", appuser.CreateInput{Email: "+14155552671"}, appuser.ErrInvalidIdentifier},
			{"bad phone field", appuser.CreateInput{Phone: "alice@example.com"}, appuser.ErrInvalidIdentifier},
		} {
			if u, _, err := sys.Users.Create(ctx, op, app, tc.in); !errors.Is(err, tc.want) {
				t.Errorf("Create(%s) = %+v, %v; want %v", tc.name, u.AppUser, err, tc.want)
			}
		}
		page, err := sys.Users.List(ctx, op, app, appuser.Filter{}, 1, 100)
		if err != nil || page.Total != 4 {
			t.Errorf("List = %d users, %v; want 4 (refused creates leave nothing)", page.Total, err)
		}

		emailOnly := newApp(t, sys, ws.ID, "mail", func(a *tenant.AppSettings) { a.AllowedIdentifiers = &[]string{"email"} })
		phoneOnly := newApp(t, sys, ws.ID, "sms", func(a *tenant.AppSettings) { a.AllowedIdentifiers = &[]string{"phone"} })
		for _, tc := range []struct {
			app store.App
			in  appuser.CreateInput
		}{
			{emailOnly, appuser.CreateInput{Identifier: "+14155552671"}},
			{emailOnly, appuser.CreateInput{Email: "dan@example.com", Phone: "+14155552671"}},
			{phoneOnly, appuser.CreateInput{Identifier: "dan@example.com"}},
		} {
			if _, _, err := sys.Users.Create(ctx, op, tc.app, tc.in); !errors.Is(err, appuser.ErrIdentifierNotAllowed) {
				t.Errorf("Create(%+v) in %s = %v; want ErrIdentifierNotAllowed", tc.in, tc.app.Slug, err)
			}
		}
		if _, _, err := sys.Users.Create(ctx, op, emailOnly, appuser.CreateInput{Identifier: "dan@example.com"}); err != nil {
			t.Errorf("Create(e-mail) in the e-mail-only app = %v; want nil", err)
		}
	})
}

func TestCreateBaseUser(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ws1, _ := sys.Workspace(t, "one")
		ws2, _ := sys.Workspace(t, "two")
		a1, a2, b1 := newApp(t, sys, ws1.ID, "a1", nil), newApp(t, sys, ws1.ID, "a2", nil), newApp(t, sys, ws2.ID, "b1", nil)

		u1 := create(t, sys, a1, appuser.CreateInput{Identifier: "pat@example.com"})
		u2 := create(t, sys, a2, appuser.CreateInput{Identifier: "Pat@Example.com"})
		u3 := create(t, sys, b1, appuser.CreateInput{Identifier: "pat@example.com"})
		if u1.ID == u2.ID {
			t.Errorf("users of two apps share id %s; want one each", u1.ID)
		}
		if u1.UserID != u2.UserID {
			t.Errorf("UserID in two apps of one workspace = %s and %s; want the same person", u1.UserID, u2.UserID)
		}
		if u3.UserID == u1.UserID {
			t.Errorf("UserID in another workspace = %s; want a different person", u3.UserID)
		}

		// A person first known by phone, then by phone and e-mail, is still one person.
		p1 := create(t, sys, a1, appuser.CreateInput{Identifier: "+14155552671"})
		p2 := create(t, sys, a2, appuser.CreateInput{Email: "sam@example.com", Phone: "+1 415 555 2671"})
		if p1.UserID != p2.UserID {
			t.Errorf("UserID by phone then by phone+e-mail = %s and %s; want the same", p1.UserID, p2.UserID)
		}

		// Two people, one known by e-mail and one by phone, joining a third app
		// with both: the e-mail's person is used, and the create succeeds.
		x := create(t, sys, a1, appuser.CreateInput{Identifier: "lee@example.com"})
		y := create(t, sys, a2, appuser.CreateInput{Identifier: "+39 06 1234 5678"})
		a3 := newApp(t, sys, ws1.ID, "a3", nil)
		z, _, err := sys.Users.Create(context.Background(), op, a3, appuser.CreateInput{Email: "lee@example.com", Phone: "+390612345678"})
		if err != nil {
			t.Fatalf("Create(e-mail of one person, phone of another) = %v; want nil", err)
		}
		if z.UserID != x.UserID && z.UserID != y.UserID {
			t.Errorf("UserID = %s; want one of the two existing people (%s, %s)", z.UserID, x.UserID, y.UserID)
		}
	})
}

func TestCreateMeta(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "meta")
		app := newApp(t, sys, ws.ID, "shop", nil)
		u, metaErrs, err := sys.Users.Create(ctx, op, app, appuser.CreateInput{Identifier: "m@example.com",
			Meta: map[string]any{"nick": " Al ", "age": "old", "shoe": 44.0, "newsletter": nil}})
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		wantErrs := []string{"age", "company", "shoe"}
		if len(metaErrs) != len(wantErrs) {
			t.Errorf("meta errors = %v; want keys %v", metaErrs, wantErrs)
		}
		for _, k := range wantErrs {
			if metaErrs[k] == "" {
				t.Errorf("meta errors = %v; want one for %q", metaErrs, k)
			}
		}
		want := map[string]any{"nick": " Al "}
		got, err := sys.Users.Get(ctx, op, app, u.ID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if !reflect.DeepEqual(u.Meta, want) || !reflect.DeepEqual(got.Meta, want) {
			t.Errorf("meta = %v (stored %v); want %v: bad keys dropped, nil values left out", u.Meta, got.Meta, want)
		}

		u, metaErrs, err = sys.Users.Create(ctx, op, app, appuser.CreateInput{Identifier: "n@example.com",
			Meta: map[string]any{"company": "Acme", "age": 41.0, "newsletter": true}})
		if err != nil || metaErrs != nil {
			t.Fatalf("Create(valid meta) = %v, %v; want no errors", metaErrs, err)
		}
		if want := map[string]any{"company": "Acme", "age": 41.0, "newsletter": true}; !reflect.DeepEqual(u.Meta, want) {
			t.Errorf("meta = %v; want %v", u.Meta, want)
		}

		big := map[string]any{}
		for i := range appuser.MaxMetaKeys + 1 {
			big[fmt.Sprintf("k%d", i)] = 1.0
		}
		if _, _, err := sys.Users.Create(ctx, op, app, appuser.CreateInput{Identifier: "big@example.com", Meta: big}); !errors.Is(err, appuser.ErrMetaTooLarge) {
			t.Errorf("Create(meta with too many keys) = %v; want ErrMetaTooLarge", err)
		}
		if u, err := sys.Users.Lookup(ctx, app, "big@example.com"); u != nil || err != nil {
			t.Errorf("Lookup after a refused create = %v, %v; want nil, nil", u, err)
		}
	})
}

// TestCreateConcurrent creates one e-mail from many goroutines: exactly one
// wins and the others see ErrUserExists, never a raw database error. The
// caller is a workspace admin, so every create also reads the admin's role
// in its transaction.
func TestCreateConcurrent(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "race")
		app, other := newApp(t, sys, ws.ID, "race", nil), newApp(t, sys, ws.ID, "other", nil)
		admin := member(t, sys, ws.ID, "admin@race.example", access.RoleAdmin)
		const n = 20
		start := make(chan struct{})
		errs := make([]error, n)
		users := make([]appuser.User, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				// Alternate the two apps' order of arrival to also race the shared base user.
				target := app
				if i%4 == 3 {
					target = other
				}
				users[i], _, errs[i] = sys.Users.Create(ctx, admin, target, appuser.CreateInput{Identifier: "Race@Example.com"})
			})
		}
		close(start)
		wg.Wait()

		won := map[string]int{}
		var person string
		for i, err := range errs {
			switch {
			case err == nil:
				won[users[i].AppID]++
				if person == "" {
					person = users[i].UserID
				} else if users[i].UserID != person {
					t.Errorf("winners have UserIDs %s and %s; want one person", person, users[i].UserID)
				}
			case errors.Is(err, appuser.ErrUserExists):
			default:
				t.Errorf("Create #%d = %v; want nil or ErrUserExists", i, err)
			}
		}
		if won[app.ID] != 1 || won[other.ID] != 1 {
			t.Errorf("successes per app = %v; want exactly one in each", won)
		}
		for _, a := range []store.App{app, other} {
			page, err := sys.Users.List(ctx, op, a, appuser.Filter{}, 1, 100)
			if err != nil || page.Total != 1 {
				t.Errorf("List(%s) = %d users, %v; want 1", a.Slug, page.Total, err)
			}
		}
	})
}

// invitationToken pulls the sct_magic token out of an invitation link.
func invitationToken(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatalf("invitation link does not parse: %v", err)
	}
	tok := u.Query().Get("sct_magic")
	if tok == "" {
		t.Fatalf("invitation link has no sct_magic parameter")
	}
	return tok
}

// invite invites a user as the operator and returns them with the token of
// the invitation they were sent.
func invite(t *testing.T, sys *servertest.System, app store.App, in appuser.CreateInput) (appuser.User, string) {
	t.Helper()
	u, _, err := sys.Users.Invite(context.Background(), op, app, in)
	if err != nil {
		t.Fatalf("Invite(%+v): %v", in, err)
	}
	to := u.Email
	if to == "" {
		to = u.Phone
	}
	m, ok := sys.Mail.Last(to)
	if !ok {
		t.Fatalf("no invitation sent to %s", to)
	}
	link := m.Link
	if code, short := strings.CutPrefix(link, sys.Config.BaseURL+appuser.ShortLinkPath); short {
		// By SMS: the short link stands for the invitation link.
		var err error
		if _, link, err = sys.SignIn.ResolveShortLink(context.Background(), code, signin.Client{}); err != nil {
			t.Fatalf("ResolveShortLink(%s): %v", m.Link, err)
		}
	}
	return u, invitationToken(t, link)
}

func TestInvite(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "inv")
		app := newApp(t, sys, ws.ID, "shop", func(a *tenant.AppSettings) { a.LoginURL = ptr("https://shop.example/login?x=1") })
		now := servertest.Start().Truncate(time.Microsecond)
		_, hasher, err := token.FromMasterKey(sys.MasterKey)
		if err != nil {
			t.Fatalf("FromMasterKey: %v", err)
		}

		u, _, err := sys.Users.Invite(ctx, op, app, appuser.CreateInput{Identifier: "Guest@Example.com", Meta: map[string]any{"company": "Acme"}})
		if err != nil {
			t.Fatalf("Invite: %v", err)
		}
		if u.Status != store.StatusPending || u.Email != "guest@example.com" {
			t.Errorf("Invite = %+v; want a pending guest@example.com", u.AppUser)
		}
		msgs := sys.Mail.Messages()
		if len(msgs) != 1 {
			t.Fatalf("messages sent = %d; want 1", len(msgs))
		}
		m := msgs[0]
		if m.To != "guest@example.com" || m.Channel != courier.ChannelEmail || m.AppID != app.ID || m.Subject == "" {
			t.Errorf("invitation = to %q by %q for %q, subject %q; want an e-mail to guest@example.com for %s", m.To, m.Channel, m.AppID, m.Subject, app.ID)
		}
		if !strings.HasPrefix(m.Link, "https://shop.example/login?") || !strings.Contains(m.Link, "x=1") {
			t.Errorf("invitation link = %q; want the app's login URL with its query kept", m.Link)
		}
		tok := invitationToken(t, m.Link)
		if !strings.Contains(m.Text, m.Link) && !strings.Contains(m.Text, tok) {
			t.Errorf("invitation text does not carry the link")
		}

		var claims map[string]any
		if _, err := sys.Keyring().Verify(tok, token.TypeMagic, &claims); err != nil {
			t.Fatalf("Verify(invitation, magic) = %v; want nil", err)
		}
		if _, err := sys.Keyring().Verify(tok, token.TypeAccess, &map[string]any{}); err == nil {
			t.Errorf("Verify(invitation, access) = nil; want an error")
		}
		for k, want := range map[string]any{"uuid": u.ID, "user_status": "pending", "email": "guest@example.com",
			"webauthnEnabled": false, "sub": u.ID, "aud": app.ID, "iss": issuer, "purpose": "invitation",
			"exp": float64(now.Add(7 * 24 * time.Hour).Unix()), "iat": float64(now.Unix())} {
			if got, ok := claims[k]; !ok || got != want {
				t.Errorf("invitation claim %s = %v (present %v); want %v", k, got, ok, want)
			}
		}

		inv, err := sys.DB.GetInvitationByHash(ctx, hasher.Hash("invitation", tok))
		if err != nil {
			t.Fatalf("GetInvitationByHash(keyed hash) = %v; want the invitation", err)
		}
		if inv.AppUserID != u.ID || inv.AppID != app.ID || inv.UsedAt != nil || !inv.ExpiresAt.Equal(now.Add(appuser.InvitationTTL)) ||
			inv.ID != claims["jti"] {
			t.Errorf("invitation = %+v; want one for %s expiring at %v with the token's jti", inv, u.ID, now.Add(appuser.InvitationTTL))
		}
		if inv.TokenHash == tok || strings.Contains(inv.TokenHash, tok) {
			t.Errorf("the invitations table holds the token itself")
		}
		if _, err := sys.DB.GetInvitationByHash(ctx, tok); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetInvitationByHash(plaintext token) = %v; want ErrNotFound", err)
		}

		// Inviting a still-pending user again sends a new link.
		sys.Clock.Advance(time.Hour)
		again, _, err := sys.Users.Invite(ctx, op, app, appuser.CreateInput{Email: "GUEST@example.com"})
		if err != nil || again.ID != u.ID || again.Status != store.StatusPending {
			t.Fatalf("Invite(again) = %+v, %v; want the same pending user", again.AppUser, err)
		}
		msgs = sys.Mail.Messages()
		if len(msgs) != 2 || msgs[1].To != "guest@example.com" {
			t.Fatalf("messages after a second invite = %d; want 2, the new one to the guest", len(msgs))
		}
		tok2 := invitationToken(t, msgs[1].Link)
		if tok2 == tok {
			t.Errorf("second invitation reuses the first token")
		}
		if inv2, err := sys.DB.GetInvitationByHash(ctx, hasher.Hash("invitation", tok2)); err != nil || inv2.AppUserID != u.ID || inv2.ID == inv.ID {
			t.Errorf("second invitation = %+v, %v; want a new row for %s", inv2, err, u.ID)
		}

		// An active user is not invited.
		create(t, sys, app, appuser.CreateInput{Identifier: "member@example.com"})
		if _, _, err := sys.Users.Invite(ctx, op, app, appuser.CreateInput{Identifier: "Member@example.com"}); !errors.Is(err, appuser.ErrUserExists) {
			t.Errorf("Invite(active user) = %v; want ErrUserExists", err)
		}
		if _, err := sys.Users.SetStatus(ctx, op, app, u.ID, store.StatusInactive); err != nil {
			t.Fatalf("SetStatus: %v", err)
		}
		if _, _, err := sys.Users.Invite(ctx, op, app, appuser.CreateInput{Identifier: "guest@example.com"}); !errors.Is(err, appuser.ErrUserExists) {
			t.Errorf("Invite(inactive user) = %v; want ErrUserExists", err)
		}
		if n := len(sys.Mail.Messages()); n != 2 {
			t.Errorf("messages = %d; want still 2 (refused invites send nothing)", n)
		}
		if _, _, err := sys.Users.Invite(ctx, op, app, appuser.CreateInput{Identifier: "nobody"}); !errors.Is(err, appuser.ErrInvalidIdentifier) {
			t.Errorf("Invite(bad identifier) = %v; want ErrInvalidIdentifier", err)
		}

		// A phone-only invitee gets an SMS with the link: a short link to
		// the invitation link.
		p, _, err := sys.Users.Invite(ctx, op, app, appuser.CreateInput{Identifier: "+1 415 555 2671"})
		if err != nil {
			t.Fatalf("Invite(phone): %v", err)
		}
		sms, ok := sys.Mail.Last("+14155552671")
		prefix := sys.Config.BaseURL + appuser.ShortLinkPath
		if !ok || sms.Channel != courier.ChannelSMS || !strings.Contains(sms.Text, sms.Link) || !strings.HasPrefix(sms.Link, prefix) {
			t.Fatalf("SMS invitation = %+v %q, %v; want an SMS carrying a short link", sms.Channel, sms.Link, ok)
		}
		appID, long, err := sys.SignIn.ResolveShortLink(ctx, strings.TrimPrefix(sms.Link, prefix), signin.Client{})
		if err != nil || appID != app.ID {
			t.Fatalf("ResolveShortLink(invitation) = %q, %q, %v", appID, long, err)
		}
		claims = nil
		if _, err := sys.Keyring().Verify(invitationToken(t, long), token.TypeMagic, &claims); err != nil || claims["uuid"] != p.ID || claims["phone"] != "+14155552671" {
			t.Errorf("SMS invitation claims = %v, %v; want uuid %s and the phone", claims, err, p.ID)
		}
	})
}

func TestInviteCourierFailure(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		down := errors.New("smtp server down")
		sys.Mail.Fail(down)
		ws, _ := sys.Workspace(t, "down")
		app := newApp(t, sys, ws.ID, "shop", nil)
		// The invitation is committed to the send queue: the answer does not
		// depend on the provider.
		if _, _, err := sys.Users.Invite(ctx, op, app, appuser.CreateInput{Identifier: "late@example.com"}); err != nil {
			t.Fatalf("Invite with a failing courier = %v; want nil (accepted for delivery)", err)
		}
		if _, ok := sys.Mail.Last("late@example.com"); ok {
			t.Fatalf("an invitation was recorded while the courier failed")
		}
		if got := sys.Logs.Lines("message not delivered", `"message":"invitation"`); len(got) != 1 {
			t.Errorf("log lines for the undelivered invitation = %q; want 1", got)
		}
		u, err := sys.Users.Lookup(ctx, app, "late@example.com")
		if err != nil || u == nil || u.Status != store.StatusPending {
			t.Fatalf("Lookup after a failed delivery = %v, %v; want the pending user kept", u, err)
		}
		// Once the courier works again, inviting again reaches the user.
		sys.Mail.Fail(nil)
		again, _, err := sys.Users.Invite(ctx, op, app, appuser.CreateInput{Identifier: "late@example.com"})
		if err != nil || again.ID != u.ID {
			t.Fatalf("Invite after recovery = %+v, %v; want the same user %s", again.AppUser, err, u.ID)
		}
		if _, ok := sys.Mail.Last("late@example.com"); !ok {
			t.Errorf("no invitation recorded after recovery")
		}
	})
}

func TestList(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "list")
		app, other := newApp(t, sys, ws.ID, "list", nil), newApp(t, sys, ws.ID, "other", nil)
		var ids []string // oldest first
		for i := range 7 {
			in := appuser.CreateInput{Identifier: fmt.Sprintf("user%d@%s.example", i, []string{"alpha", "beta"}[i%2])}
			var u appuser.User
			var err error
			if i == 5 {
				u, _, err = sys.Users.Invite(ctx, op, app, in)
			} else {
				u, _, err = sys.Users.Create(ctx, op, app, in)
			}
			if err != nil {
				t.Fatalf("create user %d: %v", i, err)
			}
			ids = append(ids, u.ID)
			sys.Clock.Advance(time.Second)
		}
		create(t, sys, other, appuser.CreateInput{Identifier: "user0@alpha.example"})
		if _, err := sys.Users.SetStatus(ctx, op, app, ids[6], store.StatusInactive); err != nil {
			t.Fatalf("SetStatus: %v", err)
		}
		before := servertest.Start().Add(3 * time.Second)

		pageIDs := func(p appuser.Page) []string {
			var out []string
			for _, u := range p.Users {
				out = append(out, u.ID)
			}
			return out
		}
		for _, tc := range []struct {
			name          string
			f             appuser.Filter
			page, perPage int
			want          []int // indexes into ids
			total, pages  int
			wantPage, per int
		}{
			{"first page", appuser.Filter{}, 1, 3, []int{6, 5, 4}, 7, 3, 1, 3},
			{"second page", appuser.Filter{}, 2, 3, []int{3, 2, 1}, 7, 3, 2, 3},
			{"last page", appuser.Filter{}, 3, 3, []int{0}, 7, 3, 3, 3},
			{"past the end", appuser.Filter{}, 4, 3, nil, 7, 3, 4, 3},
			{"defaults", appuser.Filter{}, 0, 0, []int{6, 5, 4, 3, 2, 1, 0}, 7, 1, 1, appuser.DefaultPerPage},
			{"per page capped", appuser.Filter{}, 1, 1000, []int{6, 5, 4, 3, 2, 1, 0}, 7, 1, 1, appuser.MaxPerPage},
			{"e-mail substring, any case", appuser.Filter{Email: "BETA"}, 1, 10, []int{5, 3, 1}, 3, 1, 1, 10},
			{"e-mail with a LIKE wildcard", appuser.Filter{Email: "user_"}, 1, 10, nil, 0, 0, 1, 10},
			{"pending", appuser.Filter{Status: appuser.StatusPending}, 1, 10, []int{5}, 1, 1, 1, 10},
			{"inactive", appuser.Filter{Status: appuser.StatusInactive}, 1, 10, []int{6}, 1, 1, 1, 10},
			{"active", appuser.Filter{Status: appuser.StatusActive}, 1, 2, []int{4, 3}, 5, 3, 1, 2},
			{"by id", appuser.Filter{ID: ids[2]}, 1, 10, []int{2}, 1, 1, 1, 10},
			{"created before", appuser.Filter{CreatedBefore: &before}, 1, 10, []int{2, 1, 0}, 3, 1, 1, 10},
			{"search, any case", appuser.Search(appuser.Filter{}, " USER1"), 1, 10, []int{1}, 1, 1, 1, 10},
			{"search for a whole address, not the other app's", appuser.Search(appuser.Filter{}, "user0@alpha.example"), 1, 10, []int{0}, 1, 1, 1, 10},
			{"search, second page", appuser.Search(appuser.Filter{}, "user"), 2, 3, []int{3, 2, 1}, 7, 3, 2, 3},
			{"search with a status", appuser.Search(appuser.Filter{Status: appuser.StatusActive}, "user"), 1, 10, []int{4, 3, 2, 1, 0}, 5, 1, 1, 10},
			{"search is a prefix, not a substring", appuser.Search(appuser.Filter{}, "alpha"), 1, 10, nil, 0, 0, 1, 10},
		} {
			p, err := sys.Users.List(ctx, op, app, tc.f, tc.page, tc.perPage)
			if err != nil {
				t.Errorf("List(%s) = %v", tc.name, err)
				continue
			}
			var want []string
			for _, i := range tc.want {
				want = append(want, ids[i])
			}
			if got := pageIDs(p); !reflect.DeepEqual(got, want) || p.Total != tc.total || p.TotalPages != tc.pages ||
				p.Page != tc.wantPage || p.PerPage != tc.per {
				t.Errorf("List(%s) = users %v, total %d, pages %d, page %d, per page %d; want %v, %d, %d, %d, %d",
					tc.name, got, p.Total, p.TotalPages, p.Page, p.PerPage, want, tc.total, tc.pages, tc.wantPage, tc.per)
			}
		}
		if _, err := sys.Users.List(ctx, op, app, appuser.Filter{Status: "deleted"}, 1, 10); !errors.Is(err, appuser.ErrInvalidStatus) {
			t.Errorf("List(status deleted) = %v; want ErrInvalidStatus", err)
		}
	})
}

func TestUpdate(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "upd")
		app := newApp(t, sys, ws.ID, "shop", nil)
		u := create(t, sys, app, appuser.CreateInput{Identifier: "kim@example.com", Meta: map[string]any{"company": "Acme", "nick": "K", "age": 30.0}})
		taken := create(t, sys, app, appuser.CreateInput{Email: "taken@example.com", Phone: "+14155552671"})
		sys.Clock.Advance(time.Minute)

		got, err := sys.Users.Update(ctx, op, app, u.ID, appuser.UpdateInput{Meta: map[string]any{"age": 31.0, "nick": nil, "newsletter": true}})
		if err != nil {
			t.Fatalf("Update(meta): %v", err)
		}
		want := map[string]any{"company": "Acme", "age": 31.0, "newsletter": true}
		if !reflect.DeepEqual(got.Meta, want) {
			t.Errorf("meta after merge = %v; want %v", got.Meta, want)
		}
		if !got.UpdatedAt.Equal(servertest.Start().Add(time.Minute).Truncate(time.Microsecond)) || !got.CreatedAt.Equal(u.CreatedAt) {
			t.Errorf("times = created %v updated %v; want created kept and updated by the clock", got.CreatedAt, got.UpdatedAt)
		}
		if stored, _ := sys.Users.Get(ctx, op, app, u.ID); !reflect.DeepEqual(stored.Meta, want) {
			t.Errorf("stored meta = %v; want %v", stored.Meta, want)
		}

		_, err = sys.Users.Update(ctx, op, app, u.ID, appuser.UpdateInput{Meta: map[string]any{"shoe": 44.0, "age": 1.5, "company": "Other"}})
		var mie *appuser.MetaInvalidError
		if !errors.As(err, &mie) || mie.Errors["shoe"] == "" || mie.Errors["age"] == "" || mie.Errors["company"] != "" {
			t.Errorf("Update(undeclared and wrong-typed meta) = %v; want *MetaInvalidError on shoe and age", err)
		}
		if stored, _ := sys.Users.Get(ctx, op, app, u.ID); !reflect.DeepEqual(stored.Meta, want) {
			t.Errorf("stored meta after a refused update = %v; want %v unchanged (refused whole)", stored.Meta, want)
		}

		newEmail, newPhone := " Kim.New@Example.com ", "+44 20 7946 0018"
		got, err = sys.Users.Update(ctx, op, app, u.ID, appuser.UpdateInput{Email: &newEmail, Phone: &newPhone})
		if err != nil || got.Email != "kim.new@example.com" || got.Phone != "+442079460018" {
			t.Errorf("Update(contacts) = %+v, %v; want normalised e-mail and phone", got.AppUser, err)
		}
		if !reflect.DeepEqual(got.Meta, want) {
			t.Errorf("meta after a contact update = %v; want %v untouched", got.Meta, want)
		}
		if l, err := sys.Users.Lookup(ctx, app, "kim@example.com"); l != nil || err != nil {
			t.Errorf("Lookup(old e-mail) = %v, %v; want nil, nil", l, err)
		}

		for _, tc := range []struct {
			name string
			in   appuser.UpdateInput
			want error
		}{
			{"taken e-mail", appuser.UpdateInput{Email: ptr("TAKEN@example.com")}, appuser.ErrUserExists},
			{"taken phone", appuser.UpdateInput{Phone: ptr("+1 415 555 2671")}, appuser.ErrUserExists},
			{"bad e-mail", appuser.UpdateInput{Email: ptr("kim")}, appuser.ErrInvalidIdentifier},
			{"bad phone", appuser.UpdateInput{Phone: ptr("12345")}, appuser.ErrInvalidIdentifier},
			{"both removed", appuser.UpdateInput{Email: ptr(""), Phone: ptr("")}, appuser.ErrInvalidIdentifier},
		} {
			if _, err := sys.Users.Update(ctx, op, app, u.ID, tc.in); !errors.Is(err, tc.want) {
				t.Errorf("Update(%s) = %v; want %v", tc.name, err, tc.want)
			}
		}
		if stored, _ := sys.Users.Get(ctx, op, app, u.ID); stored.Email != "kim.new@example.com" || stored.Phone != "+442079460018" {
			t.Errorf("contacts after refused updates = %q %q; want unchanged", stored.Email, stored.Phone)
		}
		got, err = sys.Users.Update(ctx, op, app, u.ID, appuser.UpdateInput{Phone: ptr("")})
		if err != nil || got.Phone != "" || got.Email != "kim.new@example.com" {
			t.Errorf("Update(remove phone only) = %+v, %v; want the e-mail kept", got.AppUser, err)
		}
		if _, err := sys.Users.Update(ctx, op, app, "nope", appuser.UpdateInput{Email: ptr("x@example.com")}); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("Update(unknown) = %v; want ErrUserNotFound", err)
		}
		if _, err := sys.Users.Get(ctx, op, app, taken.ID); err != nil {
			t.Errorf("Get(other user) = %v", err)
		}

		// An app that accepts only e-mail does not take a phone on update either.
		mailWS, _ := sys.Workspace(t, "mail")
		mailOnly := newApp(t, sys, mailWS.ID, "mail", func(a *tenant.AppSettings) { a.AllowedIdentifiers = &[]string{"email"} })
		m := create(t, sys, mailOnly, appuser.CreateInput{Identifier: "m@example.com"})
		if _, err := sys.Users.Update(ctx, op, mailOnly, m.ID, appuser.UpdateInput{Phone: ptr("+14155552671")}); !errors.Is(err, appuser.ErrIdentifierNotAllowed) {
			t.Errorf("Update(phone in an e-mail-only app) = %v; want ErrIdentifierNotAllowed", err)
		}
	})
}

func TestSetStatusAndDelete(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "life")
		app, other := newApp(t, sys, ws.ID, "life", nil), newApp(t, sys, ws.ID, "other", nil)
		u := create(t, sys, app, appuser.CreateInput{Identifier: "life@example.com"})
		sys.Clock.Advance(time.Hour)

		got, err := sys.Users.SetStatus(ctx, op, app, u.ID, store.StatusInactive)
		if err != nil || got.Status != store.StatusInactive || !got.UpdatedAt.Equal(servertest.Start().Add(time.Hour).Truncate(time.Microsecond)) {
			t.Errorf("SetStatus(inactive) = %+v, %v; want inactive, updated now", got.AppUser, err)
		}
		if got, err := sys.Users.SetStatus(ctx, op, app, u.ID, store.StatusActive); err != nil || got.Status != store.StatusActive {
			t.Errorf("SetStatus(active) = %+v, %v; want active", got.AppUser, err)
		}
		if _, err := sys.Users.SetStatus(ctx, op, app, u.ID, "banned"); !errors.Is(err, appuser.ErrInvalidStatus) {
			t.Errorf("SetStatus(banned) = %v; want ErrInvalidStatus", err)
		}
		if _, err := sys.Users.SetStatus(ctx, op, other, u.ID, store.StatusInactive); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("SetStatus(through another app) = %v; want ErrUserNotFound", err)
		}
		if _, err := sys.Users.Get(ctx, op, other, u.ID); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("Get(through another app) = %v; want ErrUserNotFound", err)
		}
		if err := sys.Users.Delete(ctx, op, other, u.ID); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("Delete(through another app) = %v; want ErrUserNotFound", err)
		}

		if err := sys.Users.Delete(ctx, op, app, u.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := sys.Users.Get(ctx, op, app, u.ID); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("Get(deleted) = %v; want ErrUserNotFound", err)
		}
		if l, err := sys.Users.LookupByID(ctx, app, u.ID); l != nil || err != nil {
			t.Errorf("LookupByID(deleted) = %v, %v; want nil, nil", l, err)
		}
		if err := sys.Users.Delete(ctx, op, app, u.ID); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("Delete(twice) = %v; want ErrUserNotFound", err)
		}
		if _, err := sys.Users.SetStatus(ctx, op, app, u.ID, store.StatusActive); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("SetStatus(deleted) = %v; want ErrUserNotFound", err)
		}
		// The address can sign up again, as the same person.
		again := create(t, sys, app, appuser.CreateInput{Identifier: "life@example.com"})
		if again.ID == u.ID || again.UserID != u.UserID {
			t.Errorf("re-created user = id %s person %s; want a new id for the same person %s", again.ID, again.UserID, u.UserID)
		}
	})
}

func TestLookup(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "look")
		app, other := newApp(t, sys, ws.ID, "look", nil), newApp(t, sys, ws.ID, "other", nil)
		byMail := create(t, sys, app, appuser.CreateInput{Identifier: "Jo@Example.com", Meta: map[string]any{"nick": "J"}})
		byPhone := create(t, sys, app, appuser.CreateInput{Identifier: "+442079460018"})

		for _, tc := range []struct {
			identifier string
			want       string // user id, "" for none
		}{
			{"jo@example.com", byMail.ID},
			{"  JO@EXAMPLE.COM ", byMail.ID},
			{"+44 20 7946 0018", byPhone.ID},
			{"0044 (20) 7946-0018", byPhone.ID},
			{"+44 (0)20 7946 0018", byPhone.ID},
			{"someone@example.com", ""},
			{"+14155552671", ""},
			{"not an identifier", ""},
			{"", ""},
			{"jo@", ""},
		} {
			u, err := sys.Users.Lookup(ctx, app, tc.identifier)
			switch {
			case err != nil:
				t.Errorf("Lookup(%q) = %v; want no error", tc.identifier, err)
			case tc.want == "" && u != nil:
				t.Errorf("Lookup(%q) = %s; want nil", tc.identifier, u.ID)
			case tc.want != "" && (u == nil || u.ID != tc.want):
				t.Errorf("Lookup(%q) = %v; want %s", tc.identifier, u, tc.want)
			}
		}
		if u, _ := sys.Users.Lookup(ctx, app, "jo@example.com"); u == nil || u.Meta["nick"] != "J" {
			t.Errorf("Lookup meta = %v; want it decoded", u)
		}
		if u, err := sys.Users.Lookup(ctx, other, "jo@example.com"); u != nil || err != nil {
			t.Errorf("Lookup(in another app) = %v, %v; want nil, nil", u, err)
		}
		if u, err := sys.Users.LookupByID(ctx, app, byPhone.ID); err != nil || u == nil || u.Phone != "+442079460018" {
			t.Errorf("LookupByID = %v, %v; want the phone user", u, err)
		}
		if u, err := sys.Users.LookupByID(ctx, app, "nope"); u != nil || err != nil {
			t.Errorf("LookupByID(unknown) = %v, %v; want nil, nil", u, err)
		}
	})
}

// TestSignUpAndOwnMeta covers the self-service paths signin uses: SignUp
// creates an active user as Create does, UpdateOwnMeta changes the user's
// own metadata as Update does, and MetaComplete says when every required
// field is filled in. None asks for a principal.
func TestSignUpAndOwnMeta(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "self")
		app, other := newApp(t, sys, ws.ID, "shop", nil), newApp(t, sys, ws.ID, "other", nil)
		mailOnly := newApp(t, sys, ws.ID, "mail", func(a *tenant.AppSettings) { a.AllowedIdentifiers = &[]string{"email"} })
		log := watchEvents(t, sys, app.ID)
		now := servertest.Start().Truncate(time.Microsecond)

		u, metaErrs, err := sys.Users.SignUp(ctx, app, " Sue@Example.com ", map[string]any{"nick": "S", "shoe": 44.0})
		if err != nil {
			t.Fatalf("SignUp: %v", err)
		}
		if u.Status != appuser.StatusActive || u.Email != "sue@example.com" || u.Phone != "" || u.AppID != app.ID || u.UserID == "" ||
			!u.CreatedAt.Equal(now) || u.EmailVerified {
			t.Errorf("SignUp = %+v; want an active, unverified sue@example.com created at %v", u.AppUser, now)
		}
		// A person signing up hears of what they sent, not of required fields
		// they left out (the lookup's required_fields says that).
		if len(metaErrs) != 1 || metaErrs["shoe"] == "" {
			t.Errorf("SignUp meta errors = %v; want shoe (undeclared) only", metaErrs)
		}
		if want := map[string]any{"nick": "S"}; !reflect.DeepEqual(u.Meta, want) {
			t.Errorf("SignUp meta = %v; want %v", u.Meta, want)
		}
		if evs := log.since(t); len(evs) != 1 || evs[0].Type != webhook.UserCreated || eventUserID(evs[0]) != u.ID {
			t.Errorf("events after SignUp = %v; want one user.created for %s", evs, u.ID)
		}
		for _, tc := range []struct {
			name       string
			app        store.App
			identifier string
			want       error
		}{
			{"the same e-mail, other case", app, "SUE@example.com", appuser.ErrUserExists},
			{"no identifier", app, "sue", appuser.ErrInvalidIdentifier},
			{"a phone where only e-mail is allowed", mailOnly, "+14155552671", appuser.ErrIdentifierNotAllowed},
		} {
			if got, _, err := sys.Users.SignUp(ctx, tc.app, tc.identifier, nil); !errors.Is(err, tc.want) {
				t.Errorf("SignUp(%s) = %+v, %v; want %v", tc.name, got.AppUser, err, tc.want)
			}
		}
		if evs := log.since(t); len(evs) != 0 {
			t.Errorf("events after refused sign-ups = %v; want none", types(evs))
		}

		if done, err := sys.Users.MetaComplete(ctx, app, u.ID); err != nil || done {
			t.Errorf("MetaComplete(company missing) = %v, %v; want false", done, err)
		}
		sys.Clock.Advance(time.Minute)
		got, err := sys.Users.UpdateOwnMeta(ctx, app, u.ID, map[string]any{"company": "Acme", "nick": nil})
		if err != nil {
			t.Fatalf("UpdateOwnMeta: %v", err)
		}
		want := map[string]any{"company": "Acme"}
		if !reflect.DeepEqual(got.Meta, want) || !got.UpdatedAt.Equal(now.Add(time.Minute)) || got.Email != u.Email {
			t.Errorf("UpdateOwnMeta = %+v meta %v; want meta %v (nick removed), updated at %v", got.AppUser, got.Meta, want, now.Add(time.Minute))
		}
		if evs := log.since(t); len(evs) != 1 || evs[0].Type != webhook.UserUpdated || eventUserID(evs[0]) != u.ID {
			t.Errorf("events after UpdateOwnMeta = %v; want one user.updated for %s", evs, u.ID)
		}
		if done, err := sys.Users.MetaComplete(ctx, app, u.ID); err != nil || !done {
			t.Errorf("MetaComplete(company given) = %v, %v; want true", done, err)
		}

		var mie *appuser.MetaInvalidError
		if _, err := sys.Users.UpdateOwnMeta(ctx, app, u.ID, map[string]any{"shoe": 44.0, "nick": "S2"}); !errors.As(err, &mie) || mie.Errors["shoe"] == "" {
			t.Errorf("UpdateOwnMeta(undeclared key) = %v; want *MetaInvalidError on shoe", err)
		}
		if stored, err := sys.Users.Get(ctx, op, app, u.ID); err != nil || !reflect.DeepEqual(stored.Meta, want) {
			t.Errorf("stored meta after a refused update = %v, %v; want %v unchanged", stored.Meta, err, want)
		}
		if _, err := sys.Users.UpdateOwnMeta(ctx, other, u.ID, map[string]any{"company": "Elsewhere"}); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("UpdateOwnMeta(through another app) = %v; want ErrUserNotFound", err)
		}
		if done, err := sys.Users.MetaComplete(ctx, other, u.ID); !errors.Is(err, appuser.ErrUserNotFound) || done {
			t.Errorf("MetaComplete(through another app) = %v, %v; want false, ErrUserNotFound", done, err)
		}
		if evs := log.since(t); len(evs) != 0 {
			t.Errorf("events after refused updates = %v; want none", types(evs))
		}

		// An app with no required field: every user is complete.
		plain := sys.App(t, ws.ID, "plain", nil)
		p, _, err := sys.Users.SignUp(ctx, plain, "plain@example.com", nil)
		if err != nil {
			t.Fatalf("SignUp(plain): %v", err)
		}
		if done, err := sys.Users.MetaComplete(ctx, plain, p.ID); err != nil || !done {
			t.Errorf("MetaComplete(no required fields) = %v, %v; want true", done, err)
		}
	})
}

// TestUsersCannotWriteAppOnlyMeta: a field the app's users are not shown is
// the app's alone. Signing up, accepting an invitation and changing one's own
// metadata cannot set it (nor clear it); with profile_management off, users
// change nothing at all; an administrator writes every field.
func TestUsersCannotWriteAppOnlyMeta(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "rules")
		app := newApp(t, sys, ws.ID, "shop", nil)
		locked := newApp(t, sys, ws.ID, "locked", func(a *tenant.AppSettings) { a.ProfileManagement = ptr(false) })
		regOnly := append(slices.Clone(testSchema), appuser.MetaField{ID: "6", Name: "Referrer", FieldName: "referrer",
			FieldType: appuser.FieldString, VisibleRegistration: true})
		mixed := sys.App(t, ws.ID, "mixed", func(a *tenant.AppSettings) { a.MetaSchema = &regOnly })

		// Sign-up: tier is dropped and reported, the rest is kept.
		u, metaErrs, err := sys.Users.SignUp(ctx, app, "mallory@example.com", map[string]any{"nick": "M", "company": "Evil", "tier": "gold"})
		if err != nil {
			t.Fatalf("SignUp: %v", err)
		}
		if want := (appuser.MetaErrors{"tier": "may only be set by the app"}); !reflect.DeepEqual(metaErrs, want) {
			t.Errorf("SignUp meta errors = %v; want %v", metaErrs, want)
		}
		if want := map[string]any{"nick": "M", "company": "Evil"}; !reflect.DeepEqual(u.Meta, want) {
			t.Errorf("SignUp meta = %v; want %v (no tier)", u.Meta, want)
		}
		clean, regErrs, err := appuser.RegistrationMeta(app, map[string]any{"nick": "M", "tier": "gold", "shoe": 1.0})
		if err != nil || !reflect.DeepEqual(clean, map[string]any{"nick": "M"}) ||
			!reflect.DeepEqual(regErrs, appuser.MetaErrors{"tier": "may only be set by the app", "shoe": "is not a declared field"}) {
			t.Errorf("RegistrationMeta = %v, %v, %v; want nick kept, tier and shoe reported", clean, regErrs, err)
		}

		// The app sets tier; the user can neither change nor clear it.
		if _, err := sys.Users.Update(ctx, op, app, u.ID, appuser.UpdateInput{Meta: map[string]any{"tier": "bronze"}}); err != nil {
			t.Fatalf("Update(tier) as the operator: %v", err)
		}
		for _, patch := range []map[string]any{{"tier": "gold"}, {"tier": nil}, {"nick": "M2", "tier": "gold"}} {
			var mie *appuser.MetaInvalidError
			if _, err := sys.Users.UpdateOwnMeta(ctx, app, u.ID, patch); !errors.As(err, &mie) || mie.Errors["tier"] != "may only be set by the app" {
				t.Errorf("UpdateOwnMeta(%v) = %v; want *MetaInvalidError on tier", patch, err)
			}
		}
		if got, err := sys.Users.UpdateOwnMeta(ctx, app, u.ID, map[string]any{"nick": "M3"}); err != nil || got.Meta["nick"] != "M3" || got.Meta["tier"] != "bronze" {
			t.Errorf("UpdateOwnMeta(nick) = %v, %v; want nick M3, tier still bronze", got.Meta, err)
		}

		// A field shown at registration only: settable when signing up, not later.
		m, metaErrs, err := sys.Users.SignUp(ctx, mixed, "ref@example.com", map[string]any{"referrer": "ads"})
		if err != nil || metaErrs != nil || m.Meta["referrer"] != "ads" {
			t.Errorf("SignUp(referrer) = %v, %v, %v; want referrer kept", m.Meta, metaErrs, err)
		}
		var mie *appuser.MetaInvalidError
		if _, err := sys.Users.UpdateOwnMeta(ctx, mixed, m.ID, map[string]any{"referrer": "friend"}); !errors.As(err, &mie) || mie.Errors["referrer"] == "" {
			t.Errorf("UpdateOwnMeta(referrer) = %v; want *MetaInvalidError on referrer", err)
		}

		// Profile management off: users change nothing, the app still does.
		l := create(t, sys, locked, appuser.CreateInput{Identifier: "lock@example.com", Meta: map[string]any{"nick": "L", "tier": "gold"}})
		if _, err := sys.Users.UpdateOwnMeta(ctx, locked, l.ID, map[string]any{"nick": "L2"}); !errors.As(err, &mie) || mie.Errors["nick"] == "" {
			t.Errorf("UpdateOwnMeta with profile management off = %v; want *MetaInvalidError on nick", err)
		}
		if stored, err := sys.Users.Get(ctx, op, locked, l.ID); err != nil || stored.Meta["nick"] != "L" || stored.Meta["tier"] != "gold" {
			t.Errorf("stored meta = %v, %v; want nick L and tier gold, as the operator created them", stored.Meta, err)
		}
	})
}

// eventUserID is the id of the user a user.* event carries.
func eventUserID(e event) any {
	u, _ := e.Data["user"].(map[string]any)
	return u["id"]
}

// callers are the principals of the access tests, from the point of view of
// app "shop" of workspace "acme".
type caller struct {
	name        string
	p           access.Principal
	read, write bool // what it may do to shop's users
}

func callers(t *testing.T, sys *servertest.System) (store.App, []caller) {
	t.Helper()
	ws, owner := sys.Workspace(t, "acme")
	app := newApp(t, sys, ws.ID, "shop", nil)
	other := newApp(t, sys, ws.ID, "other", nil)
	elsewhere, _ := sys.Workspace(t, "elsewhere")
	return app, []caller{
		{"the app's secret", sys.Principal(t, sys.AppSecret(t, app.ID)), true, true},
		{"an API key of the app", apiKey(t, sys, app.ID), true, true},
		{"another app's secret", sys.Principal(t, sys.AppSecret(t, other.ID)), false, false},
		{"an API key of another app", apiKey(t, sys, other.ID), false, false},
		{"a member", member(t, sys, ws.ID, "mo@acme.example", access.RoleMember), true, false},
		{"an admin", member(t, sys, ws.ID, "ada@acme.example", access.RoleAdmin), true, true},
		{"the owner", sys.Principal(t, sys.WorkspaceSecret(t, ws.ID, owner.ID)), true, true},
		{"an admin of another workspace", member(t, sys, elsewhere.ID, "ed@elsewhere.example", access.RoleAdmin), false, false},
		{"the operator", op, true, true},
		// A user's own principal is for SignUp and UpdateOwnMeta only, and
		// the zero value is nobody: neither reaches an administrator's method.
		{"the user themselves (access.Self)", access.Self(), false, false},
		{"no principal (the zero value)", access.Principal{}, false, false},
	}
}

// TestAccess runs every method that takes a principal as each kind of
// caller: allowed calls succeed and emit their event; refused ones are
// access.ErrForbidden and change, send and emit nothing.
func TestAccess(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		app, cs := callers(t, sys)
		log := watchEvents(t, sys, app.ID)

		ops := []struct {
			name  string
			write bool
			event string // what an allowed call emits; "" for nothing
			run   func(p access.Principal, target appuser.User, fresh string) error
		}{
			{"Get", false, "", func(p access.Principal, target appuser.User, _ string) error {
				u, err := sys.Users.Get(ctx, p, app, target.ID)
				if err == nil && u.ID != target.ID {
					return fmt.Errorf("got user %s; want %s", u.ID, target.ID)
				}
				return err
			}},
			{"List", false, "", func(p access.Principal, target appuser.User, _ string) error {
				page, err := sys.Users.List(ctx, p, app, appuser.Filter{ID: target.ID}, 1, 10)
				if err == nil && (len(page.Users) != 1 || page.Users[0].ID != target.ID) {
					return fmt.Errorf("listed %d users; want the target", len(page.Users))
				}
				return err
			}},
			{"Create", true, webhook.UserCreated, func(p access.Principal, _ appuser.User, fresh string) error {
				_, _, err := sys.Users.Create(ctx, p, app, appuser.CreateInput{Identifier: fresh, Meta: map[string]any{"company": "Acme"}})
				return err
			}},
			{"Invite", true, webhook.UserCreated, func(p access.Principal, _ appuser.User, fresh string) error {
				_, _, err := sys.Users.Invite(ctx, p, app, appuser.CreateInput{Identifier: fresh})
				if _, sent := sys.Mail.Last(fresh); err == nil && !sent {
					return errors.New("no invitation sent")
				}
				return err
			}},
			{"Update", true, webhook.UserUpdated, func(p access.Principal, target appuser.User, _ string) error {
				u, err := sys.Users.Update(ctx, p, app, target.ID, appuser.UpdateInput{Meta: map[string]any{"nick": "changed"}})
				if err == nil && u.Meta["nick"] != "changed" {
					return fmt.Errorf("meta = %v; want nick changed", u.Meta)
				}
				return err
			}},
			{"SetStatus", true, webhook.UserUpdated, func(p access.Principal, target appuser.User, _ string) error {
				u, err := sys.Users.SetStatus(ctx, p, app, target.ID, appuser.StatusInactive)
				if err == nil && u.Status != appuser.StatusInactive {
					return fmt.Errorf("status = %s; want inactive", u.Status)
				}
				return err
			}},
			{"Delete", true, "", func(p access.Principal, target appuser.User, _ string) error {
				err := sys.Users.Delete(ctx, p, app, target.ID)
				if _, gerr := sys.Users.Get(ctx, op, app, target.ID); err == nil && !errors.Is(gerr, appuser.ErrUserNotFound) {
					return fmt.Errorf("user still there after Delete: %v", gerr)
				}
				return err
			}},
		}
		n := 0
		for _, c := range cs {
			for _, o := range ops {
				n++
				target := create(t, sys, app, appuser.CreateInput{Identifier: fmt.Sprintf("target%d@example.com", n), Meta: map[string]any{"company": "Acme"}})
				fresh := fmt.Sprintf("new%d@example.com", n)
				before, err := sys.Users.Get(ctx, op, app, target.ID)
				if err != nil {
					t.Fatalf("Get(target): %v", err)
				}
				log.since(t) // the target's user.created
				mails := len(sys.Mail.Messages())

				err = o.run(c.p, target, fresh)
				evs := types(log.since(t))
				if allowed := c.read && !o.write || c.write && o.write; allowed {
					if err != nil {
						t.Errorf("%s by %s = %v; want nil", o.name, c.name, err)
					}
					want := []string{}
					if o.event != "" {
						want = []string{o.event}
					}
					if err == nil && !slices.Equal(evs, want) {
						t.Errorf("events of %s by %s = %v; want %v", o.name, c.name, evs, want)
					}
					continue
				}
				if !errors.Is(err, access.ErrForbidden) {
					t.Errorf("%s by %s = %v; want access.ErrForbidden", o.name, c.name, err)
				}
				if after, err := sys.Users.Get(ctx, op, app, target.ID); err != nil || !reflect.DeepEqual(after, before) {
					t.Errorf("target after a refused %s by %s = %+v, %v; want %+v unchanged", o.name, c.name, after, err, before)
				}
				if u, err := sys.Users.Lookup(ctx, app, fresh); u != nil || err != nil {
					t.Errorf("Lookup(%s) after a refused %s by %s = %v, %v; want nil, nil", fresh, o.name, c.name, u, err)
				}
				if got := len(sys.Mail.Messages()); got != mails {
					t.Errorf("messages after a refused %s by %s = %d; want %d (nothing sent)", o.name, c.name, got, mails)
				}
				if len(evs) != 0 {
					t.Errorf("events of a refused %s by %s = %v; want none", o.name, c.name, evs)
				}
			}
		}
	})
}

// TestAccessBeforeInput sends invalid input as callers that may not make
// the call: they get access.ErrForbidden, never the verdict on their input
// (which would let them probe users and settings). The operator, sending
// the same, gets the verdict: the input really is wrong.
func TestAccessBeforeInput(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		app, cs := callers(t, sys)
		existing := create(t, sys, app, appuser.CreateInput{Identifier: "exists@example.com", Meta: map[string]any{"company": "Acme"}})
		big := map[string]any{}
		for i := range appuser.MaxMetaKeys + 1 {
			big[fmt.Sprintf("k%d", i)] = 1.0
		}
		is := func(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }
		metaInvalid := func(err error) bool {
			var mie *appuser.MetaInvalidError
			return errors.As(err, &mie)
		}

		for _, tc := range []struct {
			name    string
			write   bool
			verdict func(error) bool // recognises what the operator gets
			run     func(p access.Principal) error
		}{
			{"Create with a bad identifier", true, is(appuser.ErrInvalidIdentifier), func(p access.Principal) error {
				_, _, err := sys.Users.Create(ctx, p, app, appuser.CreateInput{Identifier: "alice"})
				return err
			}},
			{"Create with too much meta", true, is(appuser.ErrMetaTooLarge), func(p access.Principal) error {
				_, _, err := sys.Users.Create(ctx, p, app, appuser.CreateInput{Identifier: "big@example.com", Meta: big})
				return err
			}},
			{"Create of an existing user", true, is(appuser.ErrUserExists), func(p access.Principal) error {
				_, _, err := sys.Users.Create(ctx, p, app, appuser.CreateInput{Identifier: "EXISTS@example.com"})
				return err
			}},
			{"Invite with a bad identifier", true, is(appuser.ErrInvalidIdentifier), func(p access.Principal) error {
				_, _, err := sys.Users.Invite(ctx, p, app, appuser.CreateInput{Identifier: "nobody"})
				return err
			}},
			{"Invite of an active user", true, is(appuser.ErrUserExists), func(p access.Principal) error {
				_, _, err := sys.Users.Invite(ctx, p, app, appuser.CreateInput{Identifier: "exists@example.com"})
				return err
			}},
			{"Update with undeclared meta", true, metaInvalid, func(p access.Principal) error {
				_, err := sys.Users.Update(ctx, p, app, existing.ID, appuser.UpdateInput{Meta: map[string]any{"shoe": 44.0}})
				return err
			}},
			{"Update with a bad e-mail", true, is(appuser.ErrInvalidIdentifier), func(p access.Principal) error {
				_, err := sys.Users.Update(ctx, p, app, existing.ID, appuser.UpdateInput{Email: ptr("kim")})
				return err
			}},
			{"Update of an unknown user", true, is(appuser.ErrUserNotFound), func(p access.Principal) error {
				_, err := sys.Users.Update(ctx, p, app, "nope", appuser.UpdateInput{Meta: map[string]any{"nick": "N"}})
				return err
			}},
			{"SetStatus to an unknown status", true, is(appuser.ErrInvalidStatus), func(p access.Principal) error {
				_, err := sys.Users.SetStatus(ctx, p, app, existing.ID, "banned")
				return err
			}},
			{"SetStatus of an unknown user", true, is(appuser.ErrUserNotFound), func(p access.Principal) error {
				_, err := sys.Users.SetStatus(ctx, p, app, "nope", appuser.StatusInactive)
				return err
			}},
			{"Delete of an unknown user", true, is(appuser.ErrUserNotFound), func(p access.Principal) error {
				return sys.Users.Delete(ctx, p, app, "nope")
			}},
			{"Get of an unknown user", false, is(appuser.ErrUserNotFound), func(p access.Principal) error {
				_, err := sys.Users.Get(ctx, p, app, "nope")
				return err
			}},
			{"List by an unknown status", false, is(appuser.ErrInvalidStatus), func(p access.Principal) error {
				_, err := sys.Users.List(ctx, p, app, appuser.Filter{Status: "deleted"}, 1, 10)
				return err
			}},
		} {
			if err := tc.run(op); !tc.verdict(err) {
				t.Errorf("%s by the operator = %v; want the input refused", tc.name, err)
			}
			for _, c := range cs {
				if c.write || !tc.write && c.read {
					continue // may make the call
				}
				if err := tc.run(c.p); !errors.Is(err, access.ErrForbidden) || tc.verdict(err) {
					t.Errorf("%s by %s = %v; want access.ErrForbidden (access is decided first)", tc.name, c.name, err)
				}
			}
		}
		if got, err := sys.Users.Get(ctx, op, app, existing.ID); err != nil || got.Status != appuser.StatusActive || got.Email != existing.Email ||
			!reflect.DeepEqual(got.Meta, existing.Meta) {
			t.Errorf("existing user after the refused calls = %+v, %v; want it unchanged", got, err)
		}
	})
}

// TestMarkVerified records verified contacts inside a transaction: it
// activates pending and imported users (not deactivated ones), keeps flags
// already set, and emits no webhook event.
func TestMarkVerified(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "verify")
		app, other := newApp(t, sys, ws.ID, "shop", nil), newApp(t, sys, ws.ID, "other", nil)
		log := watchEvents(t, sys, app.ID)

		pending, _ := invite(t, sys, app, appuser.CreateInput{Email: "pen@example.com", Phone: "+14155552671"})
		imported := create(t, sys, app, appuser.CreateInput{Identifier: "+442079460018"})
		inactive := create(t, sys, app, appuser.CreateInput{Identifier: "off@example.com"})
		active := create(t, sys, app, appuser.CreateInput{Identifier: "on@example.com"})
		for id, status := range map[string]string{imported.ID: appuser.StatusImported, inactive.ID: appuser.StatusInactive} {
			if _, err := sys.Users.SetStatus(ctx, op, app, id, status); err != nil {
				t.Fatalf("SetStatus(%s): %v", status, err)
			}
		}
		stranger := create(t, sys, other, appuser.CreateInput{Identifier: "far@example.com"})
		log.since(t) // the fixtures' events
		sys.Clock.Advance(time.Minute)
		now := servertest.Start().Add(time.Minute).Truncate(time.Microsecond)

		for _, tc := range []struct {
			name           string
			id             string
			email, phone   bool
			status         string
			emailV, phoneV bool
		}{
			{"pending, by e-mail", pending.ID, true, false, appuser.StatusActive, true, false},
			{"pending again, by phone", pending.ID, false, true, appuser.StatusActive, true, true},
			{"imported, by phone", imported.ID, false, true, appuser.StatusActive, false, true},
			{"active, by e-mail", active.ID, true, false, appuser.StatusActive, true, false},
			{"inactive, by e-mail", inactive.ID, true, false, appuser.StatusInactive, true, false},
		} {
			got, err := markVerified(sys, app, tc.id, tc.email, tc.phone)
			if err != nil {
				t.Errorf("MarkVerified(%s) = %v; want nil", tc.name, err)
				continue
			}
			if got.ID != tc.id || got.Status != tc.status || got.EmailVerified != tc.emailV || got.PhoneVerified != tc.phoneV ||
				!got.UpdatedAt.Equal(now) || got.LastUsedAt == nil || !got.LastUsedAt.Equal(now) {
				t.Errorf("MarkVerified(%s) = %+v; want %s, e-mail verified %v, phone verified %v, updated and used at %v",
					tc.name, got, tc.status, tc.emailV, tc.phoneV, now)
			}
			stored, err := sys.Users.Get(ctx, op, app, tc.id)
			if err != nil || stored.Status != tc.status || stored.EmailVerified != tc.emailV || stored.PhoneVerified != tc.phoneV {
				t.Errorf("stored after MarkVerified(%s) = %+v, %v; want %s, %v, %v", tc.name, stored.AppUser, err, tc.status, tc.emailV, tc.phoneV)
			}
		}

		for name, id := range map[string]string{"unknown user": "nope", "user of another app": stranger.ID} {
			if got, err := markVerified(sys, app, id, true, false); !errors.Is(err, appuser.ErrUserNotFound) {
				t.Errorf("MarkVerified(%s) = %+v, %v; want ErrUserNotFound", name, got, err)
			}
		}
		if got, err := sys.Users.Get(ctx, op, other, stranger.ID); err != nil || got.EmailVerified {
			t.Errorf("the other app's user = %+v, %v; want it unverified", got.AppUser, err)
		}
		if evs := log.since(t); len(evs) != 0 {
			t.Errorf("events of MarkVerified = %v; want none", types(evs))
		}
	})
}

// tamper returns tok with claims of its payload replaced, and its signature
// kept: a forgery.
func tamper(t *testing.T, tok string, set map[string]any) string {
	t.Helper()
	claims := tokentest.Payload(t, tok)
	for k, v := range set {
		claims[k] = v
	}
	raw, err := json.Marshal(claims)
	if err != nil {
		t.Fatalf("token payload: %v", err)
	}
	parts := strings.Split(tok, ".")
	parts[1] = base64.RawURLEncoding.EncodeToString(raw)
	return strings.Join(parts, ".")
}

// TestAcceptInvitation spends invitations inside a transaction: once, only
// in their app, only before they expire, only when genuine; it merges the
// metadata the schema accepts, verifies the invited contact, activates the
// user and emits exactly one user.updated carrying the updated user.
func TestAcceptInvitation(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "accept")
		app, other := newApp(t, sys, ws.ID, "shop", nil), newApp(t, sys, ws.ID, "other", nil)
		log := watchEvents(t, sys, app.ID)

		guest, tok := invite(t, sys, app, appuser.CreateInput{Email: "Guest@Example.com", Phone: "+14155552671",
			Meta: map[string]any{"company": "Acme", "nick": "G"}})
		visitor, visitorTok := invite(t, sys, other, appuser.CreateInput{Identifier: "visitor@example.com"})
		texted, textedTok := invite(t, sys, app, appuser.CreateInput{Identifier: "+44 7400 123456"})
		quitter, quitterTok := invite(t, sys, app, appuser.CreateInput{Identifier: "quit@example.com"})
		if _, err := sys.Users.SetStatus(ctx, op, app, quitter.ID, appuser.StatusInactive); err != nil {
			t.Fatalf("SetStatus: %v", err)
		}
		late, lateTok := invite(t, sys, app, appuser.CreateInput{Identifier: "late@example.com"})
		log.since(t) // the fixtures' events
		sys.Clock.Advance(time.Hour)
		now := servertest.Start().Add(time.Hour).Truncate(time.Microsecond)

		// The genuine token, with metadata: only what the schema accepts is merged.
		got, err := accept(sys, app, tok, map[string]any{"age": 41.0, "nick": nil, "shoe": 44.0, "newsletter": "yes"})
		if err != nil {
			t.Fatalf("AcceptInvitation = %v; want nil", err)
		}
		wantMeta := map[string]any{"company": "Acme", "age": 41.0}
		if meta := sys.Users.Decode(app, got).Meta; got.ID != guest.ID || got.Status != appuser.StatusActive || !got.EmailVerified || got.PhoneVerified ||
			!got.UpdatedAt.Equal(now) || !reflect.DeepEqual(meta, wantMeta) {
			t.Errorf("AcceptInvitation = %+v meta %v; want %s active, e-mail verified (it was invited by e-mail), meta %v, updated at %v",
				got, meta, guest.ID, wantMeta, now)
		}
		stored, err := sys.Users.Get(ctx, op, app, guest.ID)
		if err != nil || stored.Status != appuser.StatusActive || !stored.EmailVerified || stored.PhoneVerified || !reflect.DeepEqual(stored.Meta, wantMeta) {
			t.Errorf("stored after AcceptInvitation = %+v meta %v, %v; want what it returned", stored.AppUser, stored.Meta, err)
		}
		evs := log.since(t)
		if len(evs) != 1 || evs[0].Type != webhook.UserUpdated {
			t.Fatalf("events of AcceptInvitation = %v; want exactly one user.updated", types(evs))
		}
		var want map[string]any
		b, _ := json.Marshal(appuser.EventData(got, false))
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("EventData: %v", err)
		}
		if !reflect.DeepEqual(evs[0].Data, want) {
			t.Errorf("user.updated data = %v; want the updated user %v", evs[0].Data, want)
		}
		if u, _ := evs[0].Data["user"].(map[string]any); u["status"] != "active" || u["email_verified"] != true {
			t.Errorf("user.updated user = %v; want it active and e-mail verified", u)
		}

		// Refused tokens: each is ErrInvitationNotFound and changes nothing.
		unrecorded, err := sys.Keyring().Sign(token.TypeMagic, map[string]any{"iss": issuer, "sub": texted.ID, "aud": []string{app.ID},
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": "00000000-0000-7000-8000-000000000000",
			"uuid": texted.ID, "user_status": "pending", "phone": texted.Phone, "webauthnEnabled": false, "purpose": "invitation"})
		if err != nil {
			t.Fatalf("Sign: %v", err)
		}
		for _, tc := range []struct {
			name string
			app  store.App
			tok  string
		}{
			{"used already", app, tok},
			{"of another app", app, visitorTok},
			{"with its user changed", app, tamper(t, textedTok, map[string]any{"uuid": late.ID, "sub": late.ID})},
			{"of another app, retargeted at this one", app, tamper(t, visitorTok, map[string]any{"aud": []string{app.ID}})},
			{"signed but never issued", app, unrecorded},
			{"of a deactivated user", app, quitterTok},
			{"not a token", app, "not-a-token"},
			{"empty", app, ""},
		} {
			if got, err := accept(sys, tc.app, tc.tok, map[string]any{"nick": "X"}); !errors.Is(err, appuser.ErrInvitationNotFound) {
				t.Errorf("AcceptInvitation(%s) = %+v, %v; want ErrInvitationNotFound", tc.name, got, err)
			}
		}
		if evs := log.since(t); len(evs) != 0 {
			t.Errorf("events of refused invitations = %v; want none", types(evs))
		}
		for id, status := range map[string]string{texted.ID: appuser.StatusPending, late.ID: appuser.StatusPending, quitter.ID: appuser.StatusInactive} {
			if got, err := sys.Users.Get(ctx, op, app, id); err != nil || got.Status != status || got.EmailVerified || got.PhoneVerified || len(got.Meta) != 0 {
				t.Errorf("user %s after refused invitations = %+v meta %v, %v; want still %s, unverified, no meta", id, got.AppUser, got.Meta, err, status)
			}
		}

		// The refusals spent nothing: the phone invitation, and the other
		// app's in its own app, still work; a phone invitation verifies the phone.
		got, err = accept(sys, app, textedTok, nil)
		if err != nil || got.ID != texted.ID || got.Status != appuser.StatusActive || !got.PhoneVerified || got.EmailVerified {
			t.Errorf("AcceptInvitation(phone) = %+v, %v; want %s active with the phone verified", got, err, texted.ID)
		}
		if evs := log.since(t); len(evs) != 1 || evs[0].Type != webhook.UserUpdated || eventUserID(evs[0]) != texted.ID {
			t.Errorf("events of the phone acceptance = %v; want one user.updated for %s", evs, texted.ID)
		}
		if got, err := accept(sys, other, visitorTok, nil); err != nil || got.ID != visitor.ID || got.Status != appuser.StatusActive {
			t.Errorf("AcceptInvitation(in its own app) = %+v, %v; want %s active", got, err, visitor.ID)
		}

		// An address changed after the invitation was sent is not proven by
		// the old link: the user is activated, the new address stays unverified.
		moved, movedTok := invite(t, sys, app, appuser.CreateInput{Identifier: "moved@example.com"})
		if _, err := sys.Users.Update(ctx, op, app, moved.ID, appuser.UpdateInput{Email: ptr("elsewhere@example.com")}); err != nil {
			t.Fatalf("Update: %v", err)
		}
		log.since(t)
		got, err = accept(sys, app, movedTok, nil)
		if err != nil || got.Status != appuser.StatusActive || got.EmailVerified || got.Email != "elsewhere@example.com" {
			t.Errorf("AcceptInvitation(address changed since) = %+v, %v; want active with elsewhere@example.com unverified", got, err)
		}
		log.since(t)

		// Past its lifetime, an invitation no longer works.
		sys.Clock.Advance(appuser.InvitationTTL)
		if got, err := accept(sys, app, lateTok, nil); !errors.Is(err, appuser.ErrInvitationNotFound) {
			t.Errorf("AcceptInvitation(expired) = %+v, %v; want ErrInvitationNotFound", got, err)
		}
		if got, err := sys.Users.Get(ctx, op, app, late.ID); err != nil || got.Status != appuser.StatusPending {
			t.Errorf("user after an expired invitation = %+v, %v; want still pending", got.AppUser, err)
		}
		if evs := log.since(t); len(evs) != 0 {
			t.Errorf("events of an expired invitation = %v; want none", types(evs))
		}
	})
}

// TestErrorsNameTheOperation checks that every method wraps its errors with
// its operation, once, and that the sentinels stay reachable.
func TestErrorsNameTheOperation(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, _ := sys.Workspace(t, "errs")
		app := newApp(t, sys, ws.ID, "shop", nil)
		existing := create(t, sys, app, appuser.CreateInput{Identifier: "exists@example.com"})
		reader := member(t, sys, ws.ID, "mo@errs.example", access.RoleMember)

		for _, tc := range []struct {
			name   string
			run    func() error
			prefix string
			want   error
		}{
			{"Get of an unknown user", func() error { _, err := sys.Users.Get(ctx, op, app, "nope"); return err }, "get user: ", appuser.ErrUserNotFound},
			{"List by an unknown status", func() error {
				_, err := sys.Users.List(ctx, op, app, appuser.Filter{Status: "deleted"}, 1, 10)
				return err
			}, "list users: ", appuser.ErrInvalidStatus},
			{"Create with a bad identifier", func() error {
				_, _, err := sys.Users.Create(ctx, op, app, appuser.CreateInput{Identifier: "alice"})
				return err
			}, "create user: ", appuser.ErrInvalidIdentifier},
			{"Create by a member", func() error {
				_, _, err := sys.Users.Create(ctx, reader, app, appuser.CreateInput{Identifier: "new@example.com"})
				return err
			}, "create user: ", access.ErrForbidden},
			{"Invite of an active user", func() error {
				_, _, err := sys.Users.Invite(ctx, op, app, appuser.CreateInput{Identifier: "exists@example.com"})
				return err
			}, "invite user: ", appuser.ErrUserExists},
			{"Update of an unknown user", func() error {
				_, err := sys.Users.Update(ctx, op, app, "nope", appuser.UpdateInput{Meta: map[string]any{"nick": "N"}})
				return err
			}, "update user: ", appuser.ErrUserNotFound},
			{"SetStatus of an unknown user", func() error {
				_, err := sys.Users.SetStatus(ctx, op, app, "nope", appuser.StatusInactive)
				return err
			}, "set user status: ", appuser.ErrUserNotFound},
			{"Delete of an unknown user", func() error { return sys.Users.Delete(ctx, op, app, "nope") }, "delete user: ", appuser.ErrUserNotFound},
			{"SignUp of an existing user", func() error {
				_, _, err := sys.Users.SignUp(ctx, app, "exists@example.com", nil)
				return err
			}, "sign up: ", appuser.ErrUserExists},
			{"UpdateOwnMeta of an unknown user", func() error {
				_, err := sys.Users.UpdateOwnMeta(ctx, app, "nope", map[string]any{"nick": "N"})
				return err
			}, "update own metadata: ", appuser.ErrUserNotFound},
			{"MetaComplete of an unknown user", func() error { _, err := sys.Users.MetaComplete(ctx, app, "nope"); return err },
				"check user metadata: ", appuser.ErrUserNotFound},
			{"MarkVerified of an unknown user", func() error { _, err := markVerified(sys, app, "nope", true, false); return err },
				"mark user verified: ", appuser.ErrUserNotFound},
			{"AcceptInvitation of a bad token", func() error { _, err := accept(sys, app, "not-a-token", nil); return err },
				"accept invitation: ", appuser.ErrInvitationNotFound},
		} {
			err := tc.run()
			if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), tc.prefix) || strings.Count(err.Error(), tc.prefix) != 1 {
				t.Errorf("%s = %v; want %v, named once as %q", tc.name, err, tc.want, tc.prefix)
			}
		}

		// A typed error stays reachable through the wrapping too.
		_, err := sys.Users.Update(ctx, op, app, existing.ID, appuser.UpdateInput{Meta: map[string]any{"shoe": 44.0}})
		var mie *appuser.MetaInvalidError
		if !errors.As(err, &mie) || mie.Errors["shoe"] == "" || !strings.HasPrefix(err.Error(), "update user: ") {
			t.Errorf("Update(undeclared meta) = %v; want a *MetaInvalidError on shoe, named \"update user: \"", err)
		}
	})
}
