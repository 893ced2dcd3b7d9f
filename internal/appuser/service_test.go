package appuser_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/courier/couriertest"
	"github.com/gatehouse-auth/gatehouse/internal/fakeclock"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
)

const issuer = "https://auth.example.test"

// t0 is the fake clock's starting time; it has sub-second digits on purpose.
var t0 = time.Date(2031, 3, 14, 15, 9, 26, 535897000, time.UTC)

// env is an appuser service on a real store with a recording courier.
type env struct {
	db     *store.DB
	svc    *appuser.Service
	keys   *token.Keyring
	hasher *token.Hasher
	rec    *couriertest.Recorder
	clock  *fakeclock.Clock
	ctx    context.Context
}

func newEnv(t *testing.T, db *store.DB) *env {
	t.Helper()
	return newEnvWith(t, db, &couriertest.Recorder{})
}

func newEnvWith(t *testing.T, db *store.DB, rec *couriertest.Recorder) *env {
	t.Helper()
	_, hasher := tokentest.Keys(t)
	key, err := token.GenerateKey()
	if err != nil {
		t.Fatalf("GenerateKey: %v", err)
	}
	keys := token.NewKeyring()
	keys.Replace(key, nil, []*token.Key{key})
	templates, err := courier.LoadTemplates()
	if err != nil {
		t.Fatalf("LoadTemplates: %v", err)
	}
	e := &env{db: db, keys: keys, hasher: hasher, rec: rec, clock: fakeclock.New(t0), ctx: context.Background()}
	e.svc = appuser.New(appuser.Deps{DB: db, Courier: rec, Templates: templates, Keyring: keys, Hasher: e.hasher,
		Issuer: issuer, Now: e.clock.Now})
	return e
}

// workspace inserts a workspace straight into the store.
func (e *env) workspace(t *testing.T, slug string) store.Workspace {
	t.Helper()
	ws := store.Workspace{ID: uuid.NewString(), Name: slug, Slug: slug, Settings: []byte("{}"), PublicSignup: true,
		UserInfoRequirement: "none", CreatedAt: t0, UpdatedAt: t0}
	if err := e.db.CreateWorkspace(e.ctx, ws); err != nil {
		t.Fatalf("CreateWorkspace: %v", err)
	}
	return ws
}

// testSchema declares the user_meta fields the apps accept.
var testSchema = appuser.Schema{
	{ID: "1", Name: "Nickname", FieldName: "nick", FieldType: appuser.FieldString},
	{ID: "2", Name: "Age", FieldName: "age", FieldType: appuser.FieldInteger},
	{ID: "3", Name: "Newsletter", FieldName: "newsletter", FieldType: appuser.FieldBoolean},
	{ID: "4", Name: "Company", FieldName: "company", FieldType: appuser.FieldString, Required: true},
}

// app inserts an app (as tenant.CreateApp would make it) and lets mod change it first.
func (e *env) app(t *testing.T, workspaceID, slug string, mod func(*store.App)) store.App {
	t.Helper()
	schema, err := json.Marshal(testSchema)
	if err != nil {
		t.Fatalf("marshal schema: %v", err)
	}
	a := store.App{ID: uuid.NewString(), WorkspaceID: workspaceID, Name: "App " + slug, Slug: slug, Origin: "https://" + slug + ".example",
		AllowedOrigins: []string{}, PublicSignup: true, EmailAuthType: "magic", AutoRefresh: true, AccessExpiration: 900,
		RefreshExpiration: 7 * 24 * 3600, MagicLinkExpiration: 600, AllowedIdentifiers: []string{"email", "phone"},
		RequiredIdentifiers: []string{}, MetaSchema: schema, CreatedAt: t0, UpdatedAt: t0}
	if mod != nil {
		mod(&a)
	}
	if err := e.db.CreateApp(e.ctx, a); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
	return a
}

func (e *env) create(t *testing.T, app store.App, in appuser.CreateInput) appuser.User {
	t.Helper()
	u, _, err := e.svc.Create(e.ctx, app, in)
	if err != nil {
		t.Fatalf("Create(%+v): %v", in, err)
	}
	return u
}

func TestCreate(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ws := e.workspace(t, "acme")
		app := e.app(t, ws.ID, "shop", nil)
		now := t0.Truncate(time.Microsecond)

		for _, tc := range []struct {
			in           appuser.CreateInput
			email, phone string
		}{
			{appuser.CreateInput{Identifier: "  Alice@Example.COM "}, "alice@example.com", ""},
			{appuser.CreateInput{Identifier: "+1 (415) 555-2671"}, "", "+14155552671"},
			{appuser.CreateInput{Email: "BOB@example.com", Phone: "0044 20 7946 0018"}, "bob@example.com", "+442079460018"},
			{appuser.CreateInput{Identifier: "carol@example.com", Phone: "+49 151 23456789"}, "carol@example.com", "+4915123456789"},
		} {
			u, _, err := e.svc.Create(e.ctx, app, tc.in)
			if err != nil {
				t.Errorf("Create(%+v) = %v; want nil", tc.in, err)
				continue
			}
			if u.Email != tc.email || u.Phone != tc.phone || u.Status != store.StatusActive || u.AppID != app.ID ||
				u.UserID == "" || !u.CreatedAt.Equal(now) || u.EmailVerified || u.PhoneVerified {
				t.Errorf("Create(%+v) = %+v; want active user %q %q created at %v", tc.in, u.AppUser, tc.email, tc.phone, now)
			}
			got, err := e.svc.Get(e.ctx, app, u.ID)
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
			if u, _, err := e.svc.Create(e.ctx, app, tc.in); !errors.Is(err, tc.want) {
				t.Errorf("Create(%s) = %+v, %v; want %v", tc.name, u.AppUser, err, tc.want)
			}
		}
		page, err := e.svc.List(e.ctx, app, store.UserFilter{}, 1, 100)
		if err != nil || page.Total != 4 {
			t.Errorf("List = %d users, %v; want 4 (refused creates leave nothing)", page.Total, err)
		}

		emailOnly := e.app(t, ws.ID, "mail", func(a *store.App) { a.AllowedIdentifiers = []string{"email"} })
		phoneOnly := e.app(t, ws.ID, "sms", func(a *store.App) { a.AllowedIdentifiers = []string{"phone"} })
		for _, tc := range []struct {
			app store.App
			in  appuser.CreateInput
		}{
			{emailOnly, appuser.CreateInput{Identifier: "+14155552671"}},
			{emailOnly, appuser.CreateInput{Email: "dan@example.com", Phone: "+14155552671"}},
			{phoneOnly, appuser.CreateInput{Identifier: "dan@example.com"}},
		} {
			if _, _, err := e.svc.Create(e.ctx, tc.app, tc.in); !errors.Is(err, appuser.ErrIdentifierNotAllowed) {
				t.Errorf("Create(%+v) in %s = %v; want ErrIdentifierNotAllowed", tc.in, tc.app.Slug, err)
			}
		}
		if _, _, err := e.svc.Create(e.ctx, emailOnly, appuser.CreateInput{Identifier: "dan@example.com"}); err != nil {
			t.Errorf("Create(e-mail) in the e-mail-only app = %v; want nil", err)
		}
	})
}

func TestCreateBaseUser(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ws1, ws2 := e.workspace(t, "one"), e.workspace(t, "two")
		a1, a2, b1 := e.app(t, ws1.ID, "a1", nil), e.app(t, ws1.ID, "a2", nil), e.app(t, ws2.ID, "b1", nil)

		u1 := e.create(t, a1, appuser.CreateInput{Identifier: "pat@example.com"})
		u2 := e.create(t, a2, appuser.CreateInput{Identifier: "Pat@Example.com"})
		u3 := e.create(t, b1, appuser.CreateInput{Identifier: "pat@example.com"})
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
		p1 := e.create(t, a1, appuser.CreateInput{Identifier: "+14155552671"})
		p2 := e.create(t, a2, appuser.CreateInput{Email: "sam@example.com", Phone: "+1 415 555 2671"})
		if p1.UserID != p2.UserID {
			t.Errorf("UserID by phone then by phone+e-mail = %s and %s; want the same", p1.UserID, p2.UserID)
		}

		// Two people, one known by e-mail and one by phone, joining a third app
		// with both: the e-mail's person is used, and the create succeeds.
		x := e.create(t, a1, appuser.CreateInput{Identifier: "lee@example.com"})
		y := e.create(t, a2, appuser.CreateInput{Identifier: "+39 06 1234 5678"})
		a3 := e.app(t, ws1.ID, "a3", nil)
		z, _, err := e.svc.Create(e.ctx, a3, appuser.CreateInput{Email: "lee@example.com", Phone: "+390612345678"})
		if err != nil {
			t.Fatalf("Create(e-mail of one person, phone of another) = %v; want nil", err)
		}
		if z.UserID != x.UserID && z.UserID != y.UserID {
			t.Errorf("UserID = %s; want one of the two existing people (%s, %s)", z.UserID, x.UserID, y.UserID)
		}
	})
}

func TestCreateMeta(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		app := e.app(t, e.workspace(t, "meta").ID, "shop", nil)
		u, metaErrs, err := e.svc.Create(e.ctx, app, appuser.CreateInput{Identifier: "m@example.com",
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
		got, err := e.svc.Get(e.ctx, app, u.ID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if !reflect.DeepEqual(u.Meta, want) || !reflect.DeepEqual(got.Meta, want) {
			t.Errorf("meta = %v (stored %v); want %v: bad keys dropped, nil values left out", u.Meta, got.Meta, want)
		}

		u, metaErrs, err = e.svc.Create(e.ctx, app, appuser.CreateInput{Identifier: "n@example.com",
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
		if _, _, err := e.svc.Create(e.ctx, app, appuser.CreateInput{Identifier: "big@example.com", Meta: big}); !errors.Is(err, appuser.ErrMetaTooLarge) {
			t.Errorf("Create(meta with too many keys) = %v; want ErrMetaTooLarge", err)
		}
		if u, err := e.svc.Lookup(e.ctx, app, "big@example.com"); u != nil || err != nil {
			t.Errorf("Lookup after a refused create = %v, %v; want nil, nil", u, err)
		}
	})
}

// TestCreateConcurrent creates one e-mail from many goroutines: exactly one
// wins and the others see ErrUserExists, never a raw database error.
func TestCreateConcurrent(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ws := e.workspace(t, "race")
		app, other := e.app(t, ws.ID, "race", nil), e.app(t, ws.ID, "other", nil)
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
				users[i], _, errs[i] = e.svc.Create(e.ctx, target, appuser.CreateInput{Identifier: "Race@Example.com"})
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
			page, err := e.svc.List(e.ctx, a, store.UserFilter{}, 1, 100)
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

func TestInvite(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		app := e.app(t, e.workspace(t, "inv").ID, "shop", func(a *store.App) { a.LoginURL = "https://shop.example/login?x=1" })
		now := t0.Truncate(time.Microsecond)

		u, _, err := e.svc.Invite(e.ctx, app, appuser.CreateInput{Identifier: "Guest@Example.com", Meta: map[string]any{"company": "Acme"}})
		if err != nil {
			t.Fatalf("Invite: %v", err)
		}
		if u.Status != store.StatusPending || u.Email != "guest@example.com" {
			t.Errorf("Invite = %+v; want a pending guest@example.com", u.AppUser)
		}
		msgs := e.rec.Messages()
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
		if _, err := e.keys.Verify(tok, token.TypeMagic, &claims); err != nil {
			t.Fatalf("Verify(invitation, magic) = %v; want nil", err)
		}
		if _, err := e.keys.Verify(tok, token.TypeAccess, &map[string]any{}); err == nil {
			t.Errorf("Verify(invitation, access) = nil; want an error")
		}
		for k, want := range map[string]any{"uuid": u.ID, "user_status": "pending", "email": "guest@example.com",
			"webauthnEnabled": false, "sub": u.ID, "aud": app.ID, "iss": issuer, "purpose": "invitation",
			"exp": float64(now.Add(7 * 24 * time.Hour).Unix()), "iat": float64(now.Unix())} {
			if got, ok := claims[k]; !ok || got != want {
				t.Errorf("invitation claim %s = %v (present %v); want %v", k, got, ok, want)
			}
		}

		inv, err := db.GetInvitationByHash(e.ctx, e.hasher.Hash("invitation", tok))
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
		if _, err := db.GetInvitationByHash(e.ctx, tok); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetInvitationByHash(plaintext token) = %v; want ErrNotFound", err)
		}

		// Inviting a still-pending user again sends a new link.
		e.clock.Advance(time.Hour)
		again, _, err := e.svc.Invite(e.ctx, app, appuser.CreateInput{Email: "GUEST@example.com"})
		if err != nil || again.ID != u.ID || again.Status != store.StatusPending {
			t.Fatalf("Invite(again) = %+v, %v; want the same pending user", again.AppUser, err)
		}
		msgs = e.rec.Messages()
		if len(msgs) != 2 || msgs[1].To != "guest@example.com" {
			t.Fatalf("messages after a second invite = %d; want 2, the new one to the guest", len(msgs))
		}
		tok2 := invitationToken(t, msgs[1].Link)
		if tok2 == tok {
			t.Errorf("second invitation reuses the first token")
		}
		if inv2, err := db.GetInvitationByHash(e.ctx, e.hasher.Hash("invitation", tok2)); err != nil || inv2.AppUserID != u.ID || inv2.ID == inv.ID {
			t.Errorf("second invitation = %+v, %v; want a new row for %s", inv2, err, u.ID)
		}

		// An active user is not invited.
		e.create(t, app, appuser.CreateInput{Identifier: "member@example.com"})
		if _, _, err := e.svc.Invite(e.ctx, app, appuser.CreateInput{Identifier: "Member@example.com"}); !errors.Is(err, appuser.ErrUserExists) {
			t.Errorf("Invite(active user) = %v; want ErrUserExists", err)
		}
		if _, err := e.svc.SetStatus(e.ctx, app, u.ID, store.StatusInactive); err != nil {
			t.Fatalf("SetStatus: %v", err)
		}
		if _, _, err := e.svc.Invite(e.ctx, app, appuser.CreateInput{Identifier: "guest@example.com"}); !errors.Is(err, appuser.ErrUserExists) {
			t.Errorf("Invite(inactive user) = %v; want ErrUserExists", err)
		}
		if n := len(e.rec.Messages()); n != 2 {
			t.Errorf("messages = %d; want still 2 (refused invites send nothing)", n)
		}
		if _, _, err := e.svc.Invite(e.ctx, app, appuser.CreateInput{Identifier: "nobody"}); !errors.Is(err, appuser.ErrInvalidIdentifier) {
			t.Errorf("Invite(bad identifier) = %v; want ErrInvalidIdentifier", err)
		}

		// A phone-only invitee gets an SMS with the link.
		p, _, err := e.svc.Invite(e.ctx, app, appuser.CreateInput{Identifier: "+1 415 555 2671"})
		if err != nil {
			t.Fatalf("Invite(phone): %v", err)
		}
		sms, ok := e.rec.Last("+14155552671")
		if !ok || sms.Channel != courier.ChannelSMS || !strings.Contains(sms.Text, sms.Link) {
			t.Fatalf("SMS invitation = %+v, %v; want an SMS carrying the link", sms.Channel, ok)
		}
		claims = nil
		if _, err := e.keys.Verify(invitationToken(t, sms.Link), token.TypeMagic, &claims); err != nil || claims["uuid"] != p.ID || claims["phone"] != "+14155552671" {
			t.Errorf("SMS invitation claims = %v, %v; want uuid %s and the phone", claims, err, p.ID)
		}
	})
}

func TestInviteCourierFailure(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		down := errors.New("smtp server down")
		e := newEnvWith(t, db, &couriertest.Recorder{Err: down})
		app := e.app(t, e.workspace(t, "down").ID, "shop", nil)
		_, _, err := e.svc.Invite(e.ctx, app, appuser.CreateInput{Identifier: "late@example.com"})
		if !errors.Is(err, courier.ErrDelivery) || !errors.Is(err, down) {
			t.Fatalf("Invite with a failing courier = %v; want an error wrapping ErrDelivery", err)
		}
		u, err := e.svc.Lookup(e.ctx, app, "late@example.com")
		if err != nil || u == nil || u.Status != store.StatusPending {
			t.Fatalf("Lookup after a failed delivery = %v, %v; want the pending user kept", u, err)
		}
		// Once the courier works again, inviting again reaches the user.
		e.rec.Err = nil
		again, _, err := e.svc.Invite(e.ctx, app, appuser.CreateInput{Identifier: "late@example.com"})
		if err != nil || again.ID != u.ID {
			t.Fatalf("Invite after recovery = %+v, %v; want the same user %s", again.AppUser, err, u.ID)
		}
		if _, ok := e.rec.Last("late@example.com"); !ok {
			t.Errorf("no invitation recorded after recovery")
		}
	})
}

func TestList(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ws := e.workspace(t, "list")
		app, other := e.app(t, ws.ID, "list", nil), e.app(t, ws.ID, "other", nil)
		var ids []string // oldest first
		for i := range 7 {
			in := appuser.CreateInput{Identifier: fmt.Sprintf("user%d@%s.example", i, []string{"alpha", "beta"}[i%2])}
			var u appuser.User
			var err error
			if i == 5 {
				u, _, err = e.svc.Invite(e.ctx, app, in)
			} else {
				u, _, err = e.svc.Create(e.ctx, app, in)
			}
			if err != nil {
				t.Fatalf("create user %d: %v", i, err)
			}
			ids = append(ids, u.ID)
			e.clock.Advance(time.Second)
		}
		e.create(t, other, appuser.CreateInput{Identifier: "user0@alpha.example"})
		if _, err := e.svc.SetStatus(e.ctx, app, ids[6], store.StatusInactive); err != nil {
			t.Fatalf("SetStatus: %v", err)
		}
		before := t0.Add(3 * time.Second)

		pageIDs := func(p appuser.Page) []string {
			var out []string
			for _, u := range p.Users {
				out = append(out, u.ID)
			}
			return out
		}
		for _, tc := range []struct {
			name          string
			f             store.UserFilter
			page, perPage int
			want          []int // indexes into ids
			total, pages  int
			wantPage, per int
		}{
			{"first page", store.UserFilter{}, 1, 3, []int{6, 5, 4}, 7, 3, 1, 3},
			{"second page", store.UserFilter{}, 2, 3, []int{3, 2, 1}, 7, 3, 2, 3},
			{"last page", store.UserFilter{}, 3, 3, []int{0}, 7, 3, 3, 3},
			{"past the end", store.UserFilter{}, 4, 3, nil, 7, 3, 4, 3},
			{"defaults", store.UserFilter{}, 0, 0, []int{6, 5, 4, 3, 2, 1, 0}, 7, 1, 1, appuser.DefaultPerPage},
			{"per page capped", store.UserFilter{}, 1, 1000, []int{6, 5, 4, 3, 2, 1, 0}, 7, 1, 1, appuser.MaxPerPage},
			{"e-mail substring, any case", store.UserFilter{Email: "BETA"}, 1, 10, []int{5, 3, 1}, 3, 1, 1, 10},
			{"e-mail with a LIKE wildcard", store.UserFilter{Email: "user_"}, 1, 10, nil, 0, 0, 1, 10},
			{"pending", store.UserFilter{Status: store.StatusPending}, 1, 10, []int{5}, 1, 1, 1, 10},
			{"inactive", store.UserFilter{Status: store.StatusInactive}, 1, 10, []int{6}, 1, 1, 1, 10},
			{"active", store.UserFilter{Status: store.StatusActive}, 1, 2, []int{4, 3}, 5, 3, 1, 2},
			{"by id", store.UserFilter{ID: ids[2]}, 1, 10, []int{2}, 1, 1, 1, 10},
			{"created before", store.UserFilter{CreatedBefore: &before}, 1, 10, []int{2, 1, 0}, 3, 1, 1, 10},
		} {
			p, err := e.svc.List(e.ctx, app, tc.f, tc.page, tc.perPage)
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
		if _, err := e.svc.List(e.ctx, app, store.UserFilter{Status: "deleted"}, 1, 10); !errors.Is(err, appuser.ErrInvalidStatus) {
			t.Errorf("List(status deleted) = %v; want ErrInvalidStatus", err)
		}
	})
}

func TestUpdate(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		app := e.app(t, e.workspace(t, "upd").ID, "shop", nil)
		u := e.create(t, app, appuser.CreateInput{Identifier: "kim@example.com", Meta: map[string]any{"company": "Acme", "nick": "K", "age": 30.0}})
		taken := e.create(t, app, appuser.CreateInput{Email: "taken@example.com", Phone: "+14155552671"})
		e.clock.Advance(time.Minute)

		got, err := e.svc.Update(e.ctx, app, u.ID, appuser.UpdateInput{Meta: map[string]any{"age": 31.0, "nick": nil, "newsletter": true}})
		if err != nil {
			t.Fatalf("Update(meta): %v", err)
		}
		want := map[string]any{"company": "Acme", "age": 31.0, "newsletter": true}
		if !reflect.DeepEqual(got.Meta, want) {
			t.Errorf("meta after merge = %v; want %v", got.Meta, want)
		}
		if !got.UpdatedAt.Equal(t0.Add(time.Minute).Truncate(time.Microsecond)) || !got.CreatedAt.Equal(u.CreatedAt) {
			t.Errorf("times = created %v updated %v; want created kept and updated by the clock", got.CreatedAt, got.UpdatedAt)
		}
		if stored, _ := e.svc.Get(e.ctx, app, u.ID); !reflect.DeepEqual(stored.Meta, want) {
			t.Errorf("stored meta = %v; want %v", stored.Meta, want)
		}

		_, err = e.svc.Update(e.ctx, app, u.ID, appuser.UpdateInput{Meta: map[string]any{"shoe": 44.0, "age": 1.5, "company": "Other"}})
		var mie *appuser.MetaInvalidError
		if !errors.As(err, &mie) || mie.Errors["shoe"] == "" || mie.Errors["age"] == "" || mie.Errors["company"] != "" {
			t.Errorf("Update(undeclared and wrong-typed meta) = %v; want *MetaInvalidError on shoe and age", err)
		}
		if stored, _ := e.svc.Get(e.ctx, app, u.ID); !reflect.DeepEqual(stored.Meta, want) {
			t.Errorf("stored meta after a refused update = %v; want %v unchanged (refused whole)", stored.Meta, want)
		}

		newEmail, newPhone := " Kim.New@Example.com ", "+44 20 7946 0018"
		got, err = e.svc.Update(e.ctx, app, u.ID, appuser.UpdateInput{Email: &newEmail, Phone: &newPhone})
		if err != nil || got.Email != "kim.new@example.com" || got.Phone != "+442079460018" {
			t.Errorf("Update(contacts) = %+v, %v; want normalised e-mail and phone", got.AppUser, err)
		}
		if !reflect.DeepEqual(got.Meta, want) {
			t.Errorf("meta after a contact update = %v; want %v untouched", got.Meta, want)
		}
		if l, err := e.svc.Lookup(e.ctx, app, "kim@example.com"); l != nil || err != nil {
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
			if _, err := e.svc.Update(e.ctx, app, u.ID, tc.in); !errors.Is(err, tc.want) {
				t.Errorf("Update(%s) = %v; want %v", tc.name, err, tc.want)
			}
		}
		if stored, _ := e.svc.Get(e.ctx, app, u.ID); stored.Email != "kim.new@example.com" || stored.Phone != "+442079460018" {
			t.Errorf("contacts after refused updates = %q %q; want unchanged", stored.Email, stored.Phone)
		}
		got, err = e.svc.Update(e.ctx, app, u.ID, appuser.UpdateInput{Phone: ptr("")})
		if err != nil || got.Phone != "" || got.Email != "kim.new@example.com" {
			t.Errorf("Update(remove phone only) = %+v, %v; want the e-mail kept", got.AppUser, err)
		}
		if _, err := e.svc.Update(e.ctx, app, "nope", appuser.UpdateInput{Email: ptr("x@example.com")}); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("Update(unknown) = %v; want ErrUserNotFound", err)
		}
		if _, err := e.svc.Get(e.ctx, app, taken.ID); err != nil {
			t.Errorf("Get(other user) = %v", err)
		}

		// An app that accepts only e-mail does not take a phone on update either.
		mailOnly := e.app(t, e.workspace(t, "mail").ID, "mail", func(a *store.App) { a.AllowedIdentifiers = []string{"email"} })
		m := e.create(t, mailOnly, appuser.CreateInput{Identifier: "m@example.com"})
		if _, err := e.svc.Update(e.ctx, mailOnly, m.ID, appuser.UpdateInput{Phone: ptr("+14155552671")}); !errors.Is(err, appuser.ErrIdentifierNotAllowed) {
			t.Errorf("Update(phone in an e-mail-only app) = %v; want ErrIdentifierNotAllowed", err)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestSetStatusAndDelete(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ws := e.workspace(t, "life")
		app, other := e.app(t, ws.ID, "life", nil), e.app(t, ws.ID, "other", nil)
		u := e.create(t, app, appuser.CreateInput{Identifier: "life@example.com"})
		e.clock.Advance(time.Hour)

		got, err := e.svc.SetStatus(e.ctx, app, u.ID, store.StatusInactive)
		if err != nil || got.Status != store.StatusInactive || !got.UpdatedAt.Equal(t0.Add(time.Hour).Truncate(time.Microsecond)) {
			t.Errorf("SetStatus(inactive) = %+v, %v; want inactive, updated now", got.AppUser, err)
		}
		if got, err := e.svc.SetStatus(e.ctx, app, u.ID, store.StatusActive); err != nil || got.Status != store.StatusActive {
			t.Errorf("SetStatus(active) = %+v, %v; want active", got.AppUser, err)
		}
		if _, err := e.svc.SetStatus(e.ctx, app, u.ID, "banned"); !errors.Is(err, appuser.ErrInvalidStatus) {
			t.Errorf("SetStatus(banned) = %v; want ErrInvalidStatus", err)
		}
		if _, err := e.svc.SetStatus(e.ctx, other, u.ID, store.StatusInactive); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("SetStatus(through another app) = %v; want ErrUserNotFound", err)
		}
		if _, err := e.svc.Get(e.ctx, other, u.ID); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("Get(through another app) = %v; want ErrUserNotFound", err)
		}
		if err := e.svc.Delete(e.ctx, other, u.ID); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("Delete(through another app) = %v; want ErrUserNotFound", err)
		}

		if err := e.svc.Delete(e.ctx, app, u.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := e.svc.Get(e.ctx, app, u.ID); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("Get(deleted) = %v; want ErrUserNotFound", err)
		}
		if l, err := e.svc.LookupByID(e.ctx, app, u.ID); l != nil || err != nil {
			t.Errorf("LookupByID(deleted) = %v, %v; want nil, nil", l, err)
		}
		if err := e.svc.Delete(e.ctx, app, u.ID); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("Delete(twice) = %v; want ErrUserNotFound", err)
		}
		if _, err := e.svc.SetStatus(e.ctx, app, u.ID, store.StatusActive); !errors.Is(err, appuser.ErrUserNotFound) {
			t.Errorf("SetStatus(deleted) = %v; want ErrUserNotFound", err)
		}
		// The address can sign up again, as the same person.
		again := e.create(t, app, appuser.CreateInput{Identifier: "life@example.com"})
		if again.ID == u.ID || again.UserID != u.UserID {
			t.Errorf("re-created user = id %s person %s; want a new id for the same person %s", again.ID, again.UserID, u.UserID)
		}
	})
}

func TestLookup(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ws := e.workspace(t, "look")
		app, other := e.app(t, ws.ID, "look", nil), e.app(t, ws.ID, "other", nil)
		byMail := e.create(t, app, appuser.CreateInput{Identifier: "Jo@Example.com", Meta: map[string]any{"nick": "J"}})
		byPhone := e.create(t, app, appuser.CreateInput{Identifier: "+442079460018"})

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
			u, err := e.svc.Lookup(e.ctx, app, tc.identifier)
			switch {
			case err != nil:
				t.Errorf("Lookup(%q) = %v; want no error", tc.identifier, err)
			case tc.want == "" && u != nil:
				t.Errorf("Lookup(%q) = %s; want nil", tc.identifier, u.ID)
			case tc.want != "" && (u == nil || u.ID != tc.want):
				t.Errorf("Lookup(%q) = %v; want %s", tc.identifier, u, tc.want)
			}
		}
		if u, _ := e.svc.Lookup(e.ctx, app, "jo@example.com"); u == nil || u.Meta["nick"] != "J" {
			t.Errorf("Lookup meta = %v; want it decoded", u)
		}
		if u, err := e.svc.Lookup(e.ctx, other, "jo@example.com"); u != nil || err != nil {
			t.Errorf("Lookup(in another app) = %v, %v; want nil, nil", u, err)
		}
		if u, err := e.svc.LookupByID(e.ctx, app, byPhone.ID); err != nil || u == nil || u.Phone != "+442079460018" {
			t.Errorf("LookupByID = %v, %v; want the phone user", u, err)
		}
		if u, err := e.svc.LookupByID(e.ctx, app, "nope"); u != nil || err != nil {
			t.Errorf("LookupByID(unknown) = %v, %v; want nil, nil", u, err)
		}
	})
}
