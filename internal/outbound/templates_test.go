package outbound_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/fakeclock"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

var t0 = time.Date(2026, 11, 21, 8, 30, 0, 0, time.UTC)

func setup(t *testing.T, db *store.DB) (*outbound.Templates, *fakeclock.Clock) {
	t.Helper()
	ctx := context.Background()
	if err := db.CreateWorkspace(ctx, store.Workspace{ID: "ws1", Name: "W", Slug: "w", Settings: []byte(`{}`), UserInfoRequirement: "none",
		CreatedAt: t0, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateApp(ctx, store.App{ID: "app1", WorkspaceID: "ws1", Name: "Acme", Slug: "acme", AccessExpiration: 900,
		RefreshExpiration: 86400, MagicLinkExpiration: 600, MetaSchema: []byte(`[]`), CreatedAt: t0, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	tpl, err := courier.LoadTemplates()
	if err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(t0)
	return outbound.NewTemplates(outbound.TemplatesDeps{DB: db, Templates: tpl, BaseURL: "https://auth.example.com", Now: clock.Now}), clock
}

// Render reads an app's overrides once per CacheTTL: a change through the
// Service shows at once, a change elsewhere (another replica) within the TTL.
func TestRenderCachesOverrides(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s, clock := setup(t, db)
		op := access.Operator()
		v := courier.Vars{AppName: "Acme", Code: "123456"}
		render := func() string {
			t.Helper()
			r, err := s.Render(ctx, db.Queries, "app1", courier.TemplateLoginCode, courier.ChannelSMS, []string{"fr"}, v)
			if err != nil {
				t.Fatal(err)
			}
			return r.Text
		}
		if got := render(); got != "123456 est votre code Acme." {
			t.Errorf("built-in = %q", got)
		}
		if _, err := s.Put(ctx, op, "app1", courier.Override{Name: courier.TemplateLoginCode, Channel: courier.ChannelSMS, Locale: "FR", Text: "A {{.Code}}"}); err != nil {
			t.Fatal(err)
		}
		if got := render(); got != "A 123456" {
			t.Errorf("after Put = %q; want the override at once", got)
		}
		// Another replica deletes it: this one keeps its copy for CacheTTL,
		// without reading the database.
		if err := db.DeleteMessageTemplate(ctx, "app1", courier.TemplateLoginCode, "sms", "fr"); err != nil {
			t.Fatal(err)
		}
		if got := render(); got != "A 123456" {
			t.Errorf("within the TTL = %q; want the cached override", got)
		}
		clock.Advance(outbound.TemplateCacheTTL)
		if got := render(); got != "123456 est votre code Acme." {
			t.Errorf("after the TTL = %q; want the built-in again", got)
		}
	})
}

func TestServiceChecksAndAuthorises(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s, _ := setup(t, db)
		key := access.Principal{Kind: access.KindAPIKey, AppID: "app1"}
		ov := courier.Override{Name: courier.TemplateLoginCode, Channel: courier.ChannelSMS, Locale: "de", Text: "{{.Code}}"}
		if _, err := s.Put(ctx, key, "app1", ov); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("Put with an API key = %v; want ErrForbidden", err)
		}
		if _, err := s.List(ctx, access.Principal{Kind: access.KindAppSecret, AppID: "other"}, "app1"); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("List with another app's secret = %v; want ErrForbidden", err)
		}
		var inv *errs.Invalid
		bad := ov
		bad.Text = "{{.Nope}}"
		if _, err := s.Put(ctx, access.Operator(), "app1", bad); !errors.As(err, &inv) || inv.Field != "text" || !strings.Contains(inv.Reason, ".Nope") {
			t.Errorf("Put(bad) = %v; want Invalid on text naming .Nope", err)
		}
		if err := s.Delete(ctx, access.Operator(), "app1", ov.Name, ov.Channel, "de"); !errors.Is(err, outbound.ErrTemplateNotFound) {
			t.Errorf("Delete(none) = %v; want ErrTemplateNotFound", err)
		}
		p, err := s.Preview(ctx, access.Operator(), "app1", outbound.PreviewRequest{Name: courier.TemplateMagicLink, Channel: courier.ChannelSMS})
		if err != nil || p.SMS == nil || p.SMS.Segments != 1 || !strings.Contains(p.Text, "https://auth.example.com/m/") || p.Locale != "en" {
			t.Errorf("Preview(magic_link sms) = %+v, %v", p, err)
		}
	})
}

func TestLanguages(t *testing.T) {
	got := outbound.Languages(map[string]any{"locale": "pt_br"}, []string{"de", "en"})
	if strings.Join(got, ",") != "pt-BR,de,en" {
		t.Errorf("Languages = %v", got)
	}
	if got := outbound.Languages(map[string]any{"locale": 3}, []string{"de"}); strings.Join(got, ",") != "de" {
		t.Errorf("Languages(bad locale) = %v", got)
	}
}

// BenchmarkRender is the cost a send pays for its text: an SMS code with
// the app's overrides in the cache (no database read).
func BenchmarkRender(b *testing.B) {
	db := storetest.Open(b, "sqlite")
	ctx := context.Background()
	if err := db.CreateWorkspace(ctx, store.Workspace{ID: "ws1", Name: "W", Slug: "w", Settings: []byte(`{}`), UserInfoRequirement: "none",
		CreatedAt: t0, UpdatedAt: t0}); err != nil {
		b.Fatal(err)
	}
	if err := db.CreateApp(ctx, store.App{ID: "app1", WorkspaceID: "ws1", Name: "Acme", Slug: "acme", AccessExpiration: 900,
		RefreshExpiration: 86400, MagicLinkExpiration: 600, MetaSchema: []byte(`[]`), CreatedAt: t0, UpdatedAt: t0}); err != nil {
		b.Fatal(err)
	}
	tpl, err := courier.LoadTemplates()
	if err != nil {
		b.Fatal(err)
	}
	s := outbound.NewTemplates(outbound.TemplatesDeps{DB: db, Templates: tpl, Now: fakeclock.New(t0).Now})
	v := courier.Vars{AppName: "Acme", Code: "123456", ExpiresIn: 10 * time.Minute}
	for b.Loop() {
		if _, err := s.Render(ctx, db.Queries, "app1", courier.TemplateLoginCode, courier.ChannelSMS, []string{"de-AT", "en"}, v); err != nil {
			b.Fatal(err)
		}
	}
}
