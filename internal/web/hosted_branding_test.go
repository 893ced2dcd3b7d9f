package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// brandStyle is the page's branding <style> (the second one), "" without.
var brandStyle = regexp.MustCompile(`(?s)</style>\s*<style nonce="[^"]+">(.*?)</style>`)

func brandCSSOf(body string) string {
	if m := brandStyle.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return ""
}

// otpApp is hostedApp signing in by code (the page's code path).
func otpApp(t *testing.T, sys *servertest.System, mod func(*tenant.AppSettings)) (tenant.App, string) {
	return hostedApp(t, sys, func(s *tenant.AppSettings) {
		otp := "otp"
		s.EmailAuthType = &otp
		if mod != nil {
			mod(s)
		}
	})
}

func TestHostedBrandingAPI(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, _ := otpApp(t, sys, nil)
		auth := map[string]string{"Authorization": "Bearer " + sys.AppSecret(t, app.ID)}

		// Unset: the default look.
		status, body := api(t, sys, "GET", "/v1/apps/"+app.ID, nil, auth)
		br, _ := appOf(body)["branding"].(map[string]any)
		if status != http.StatusOK || br["color_scheme"] != "auto" || br["font"] != "system" || br["primary_color"] != "" {
			t.Fatalf("GET app: %d %v", status, body)
		}

		// Set: read back, lower-cased; a field left out keeps its value.
		status, body = api(t, sys, "PATCH", "/v1/apps/"+app.ID, map[string]any{"branding": map[string]any{
			"primary_color": "#0B7A5A", "background_color": "#fafafa", "color_scheme": "dark", "font": "serif"}}, auth)
		if status != http.StatusOK {
			t.Fatalf("PATCH: %d %v", status, body)
		}
		status, body = api(t, sys, "PATCH", "/v1/apps/"+app.ID, map[string]any{"app": map[string]any{"branding": map[string]any{"text_color_dark": "#eeeeee"}}}, auth)
		if status != http.StatusOK {
			t.Fatalf("PATCH wrapped: %d %v", status, body)
		}
		br, _ = appOf(body)["branding"].(map[string]any)
		want := map[string]string{"primary_color": "#0b7a5a", "background_color": "#fafafa", "text_color": "", "text_color_dark": "#eeeeee",
			"color_scheme": "dark", "font": "serif"}
		for k, v := range want {
			if br[k] != v {
				t.Errorf("branding.%s = %v, want %q (%v)", k, br[k], v, br)
			}
		}
		// The public configuration has it too.
		if status, body = api(t, sys, "GET", "/v1/apps/"+app.ID, nil, nil); status != http.StatusOK ||
			appOf(body)["branding"].(map[string]any)["primary_color"] != "#0b7a5a" {
			t.Fatalf("public app: %d %v", status, body)
		}

		// Refused: 400 naming the field, nothing saved.
		for field, value := range map[string]any{
			"primary_color":      "red",
			"background_color":   "#fff",
			"text_color":         "#00000g",
			"primary_color_dark": "#000000;}body{display:none",
			"color_scheme":       "sepia",
			"font":               "Comic Sans",
		} {
			status, body := api(t, sys, "PATCH", "/v1/apps/"+app.ID, map[string]any{"branding": map[string]any{field: value}}, auth)
			if status != http.StatusBadRequest || !strings.Contains(strings.ToLower(body["error"].(string)+" "+stringOf(body["field"])), field) {
				t.Errorf("branding.%s = %q: %d %v", field, value, status, body)
			}
		}
		if got, _ := sys.Tenants.GetApp(context.Background(), app.ID); got.Branding.PrimaryColor != "#0b7a5a" || got.Branding.Font != "serif" {
			t.Fatalf("a refused change saved: %+v", got.Branding)
		}
		// The tenant check itself (the console's path), naming the field.
		bad := "javascript:1"
		if _, err := sys.Tenants.UpdateApp(context.Background(), access.Operator(), app.WorkspaceID, app.ID,
			tenant.AppSettings{Branding: &tenant.BrandingSettings{BackgroundColor: &bad}}); err == nil || !strings.Contains(err.Error(), "branding.background_color") {
			t.Fatalf("tenant: %v", err)
		}
	})
}

// appOf is the app of an answer: wrapped in "app" or bare.
func appOf(body map[string]any) map[string]any {
	if a, ok := body["app"].(map[string]any); ok {
		return a
	}
	return body
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

func TestHostedBrandingPage(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, _ := otpApp(t, sys, nil)
		v := newVisitor(t, sys)

		// No branding: no second style, the footer shown.
		a := v.expect("GET", "/login/"+app.ID, nil, http.StatusOK)
		if brandCSSOf(a.body) != "" || !strings.Contains(a.body, "Secured by Gatehouse") {
			t.Fatalf("unbranded page:\n%s", a.body)
		}

		primary, bg, scheme, font, off := "#0b7a5a", "#fafafa", "light", "serif", false
		if _, err := sys.Tenants.UpdateApp(context.Background(), access.Operator(), app.WorkspaceID, app.ID, tenant.AppSettings{
			Branding:        &tenant.BrandingSettings{PrimaryColor: &primary, BackgroundColor: &bg, ColorScheme: &scheme, Font: &font},
			ServiceBranding: &off}); err != nil {
			t.Fatal(err)
		}
		a = v.expect("GET", "/login/"+app.ID, nil, http.StatusOK)
		checkHostedHeaders(t, "branded login", a, "https://shop.example https://www.shop.example")
		css := brandCSSOf(a.body)
		for _, want := range []string{"--accent:#0b7a5a", "--bg:#fafafa", "color-scheme:light", "font-family:Charter,", "button{color:#fff}"} {
			if !strings.Contains(css, want) {
				t.Errorf("branding CSS lacks %q:\n%s", want, css)
			}
		}
		if strings.Contains(a.body, "Secured by Gatehouse") {
			t.Error("service_branding off, and the page still says Secured by Gatehouse")
		}
		checkOnlyValidated(t, css)

		// A value that bypassed the checks (written to the store directly)
		// never reaches the CSS.
		stored, err := sys.DB.GetApp(context.Background(), app.ID)
		if err != nil {
			t.Fatal(err)
		}
		stored.Branding.PrimaryColor = "#000;}body{background:url(https://evil.example/x)}"
		stored.Branding.Font = `x;}</style><script>alert(1)</script>`
		stored.Branding.ColorScheme = "dark;}"
		if err := sys.DB.UpdateApp(context.Background(), stored); err != nil {
			t.Fatal(err)
		}
		sys.Clock.Advance(tenant.AppCacheTTL + time.Second) // past the app cache
		a = v.expect("GET", "/login/"+app.ID, nil, http.StatusOK)
		css = brandCSSOf(a.body)
		if strings.Contains(a.body, "evil.example") || strings.Contains(a.body, "alert(1)") || !strings.Contains(css, "--accent:#2f5bd3") {
			t.Fatalf("an unchecked value reached the page:\n%s", css)
		}
		checkOnlyValidated(t, css)
	})
}

// checkOnlyValidated: the branding CSS holds only custom properties with
// #hex values, the layout's palette, and the font stacks of tenant.Fonts.
func checkOnlyValidated(t *testing.T, css string) {
	t.Helper()
	rest := css
	for _, stack := range tenant.Fonts {
		rest = strings.ReplaceAll(rest, stack, "")
	}
	rest = regexp.MustCompile(`#[0-9a-f]{3}(?:[0-9a-f]{3})?\b`).ReplaceAllString(rest, "")
	rest = regexp.MustCompile(`--[a-z]+:|color-scheme:(light|dark)|@media \(prefers-color-scheme:dark\)|:root|body|button|color:|font-family:|[{};]`).ReplaceAllString(rest, "")
	if strings.TrimSpace(rest) != "" {
		t.Errorf("branding CSS has more than validated values: %q (of %q)", rest, css)
	}
}

func TestHostedLanguage(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := otpApp(t, sys, nil)
		v := newVisitor(t, sys)
		for _, c := range []struct {
			accept, lang, text string
		}{
			{"de-CH, en;q=0.5", "de", "Bei Shop anmelden"},
			{"fr", "fr", "Envoyez-moi un code"},
			{"es-MX,es;q=0.9", "es", "Iniciar sesión en Shop"},
			{"en-GB", "en", "Send me a code"},
			{"zh-CN, ja;q=0.8", "en", "Sign in to Shop"}, // unknown languages: English
			{"", "en", "Sign in to Shop"},
		} {
			a := v.do("GET", "/login/"+app.ID, nil, map[string]string{"Accept-Language": c.accept})
			if a.status != http.StatusOK || !strings.Contains(a.body, `<html lang="`+c.lang+`">`) || !strings.Contains(a.body, c.text) {
				t.Errorf("Accept-Language %q: %d, want lang %s and %q:\n%s", c.accept, a.status, c.lang, c.text, a.body)
			}
		}
		// German: the field's label and the footer too.
		a := v.do("GET", "/login/"+app.ID, nil, map[string]string{"Accept-Language": "de"})
		for _, want := range []string{"E-Mail-Adresse", "Code senden", "Geschützt durch Gatehouse", "Zum Inhalt springen"} {
			if !strings.Contains(a.body, want) {
				t.Errorf("German login page lacks %q", want)
			}
		}
		// An error page of no app: Accept-Language still.
		if a := v.do("GET", "/login/0190aaaa-0000-7000-8000-000000000000", nil, map[string]string{"Accept-Language": "es"}); !strings.Contains(a.body, `lang="es"`) ||
			!strings.Contains(a.body, "Aquí no hay ninguna aplicación.") {
			t.Errorf("Spanish 404:\n%s", a.body)
		}

		// The code step in German.
		page := v.do("GET", "/login/"+app.ID, nil, map[string]string{"Accept-Language": "de"})
		if s := v.do("POST", "/login/"+app.ID, url.Values{"csrf": {csrfOf(t, page)}, "identifier": {email}}, map[string]string{"Accept-Language": "de"}); s.status != http.StatusSeeOther {
			t.Fatalf("send: %d\n%s", s.status, s.body)
		}
		code := v.do("GET", "/login/"+app.ID+"/code", nil, map[string]string{"Accept-Language": "de"})
		if !strings.Contains(code.body, "Code eingeben") || !strings.Contains(code.body, "<strong>"+email+"</strong>") {
			t.Errorf("German code page:\n%s", code.body)
		}
	})
}

func TestHostedLanguageUserLocale(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, _ := otpApp(t, sys, func(s *tenant.AppSettings) {
			s.MetaSchema = &appuser.Schema{{Name: "Language", FieldName: "locale", FieldType: appuser.FieldString, VisibleProfile: true}}
		})
		email := "claire@shop.example"
		if _, _, err := sys.Users.Create(context.Background(), access.Operator(), app, appuser.CreateInput{Identifier: email,
			Meta: map[string]any{"locale": "fr-CA"}}); err != nil {
			t.Fatal(err)
		}
		v := newVisitor(t, sys)
		if a := v.signIn(app.ID, "?return=%2Faccount%2F"+app.ID, email); a.header.Get("Location") != "/account/"+app.ID {
			t.Fatalf("sign-in: %q", a.header.Get("Location"))
		}
		// The user's locale (fr-CA → fr) wins over Accept-Language.
		a := v.do("GET", "/account/"+app.ID, nil, map[string]string{"Accept-Language": "de"})
		if a.status != http.StatusOK || !strings.Contains(a.body, `<html lang="fr">`) || !strings.Contains(a.body, "Votre compte") ||
			!strings.Contains(a.body, "Où vous êtes connecté") {
			t.Fatalf("account page with locale fr-CA and Accept-Language de: %d\n%s", a.status, a.body)
		}
		// Signed out, the same browser gets Accept-Language again.
		alice := newVisitor(t, sys)
		if a := alice.do("GET", "/login/"+app.ID, nil, map[string]string{"Accept-Language": "de"}); !strings.Contains(a.body, `<html lang="de">`) {
			t.Fatalf("login page for nobody:\n%s", a.body)
		}
	})
}

func TestConsoleBranding(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		o := signIn(t, sys, owner.Email)
		ap := "/console/w/" + ws.ID + "/apps/" + app.ID
		page := o.get(ap, http.StatusOK)
		checkHeaders(t, "settings", page)
		if !strings.Contains(page.body, `name="primary_color"`) || !strings.Contains(page.body, `<svg`) {
			t.Fatalf("the settings page has no branding fields or card preview:\n%s", page.body)
		}

		// The preview follows the form without saving; a bad colour is left out.
		prev := o.get(ap+"/preview?branding.shown=1&primary_color=%23ff0000&background_color=nope&color_scheme=dark&font=monospace", http.StatusOK).body
		if !strings.Contains(prev, `fill="#ff0000"`) && !strings.Contains(prev, `data-mode="dark"`) {
			t.Fatalf("preview: %s", prev)
		}
		if strings.Contains(prev, "nope") || strings.Contains(prev, `data-mode="light"`) || !strings.Contains(prev, "Cascadia Code") || strings.Contains(prev, " style=") {
			t.Fatalf("preview: %s", prev)
		}
		prev = o.get(ap+"/preview?primary_color=%23ff0000", http.StatusOK).body
		if !strings.Contains(prev, `fill="#ff0000"`) || !strings.Contains(prev, `data-mode="light"`) || !strings.Contains(prev, `data-mode="dark"`) {
			t.Fatalf("preview (auto): %s", prev)
		}
		if got, _ := sys.Tenants.GetApp(ctx, app.ID); got.Branding != (tenant.Branding{}) {
			t.Fatal("the preview saved")
		}

		// A bad colour: 400 naming the field, nothing saved, no audit entry.
		a := o.post(ap, url.Values{"branding.shown": {"1"}, "primary_color": {"blue"}}, http.StatusBadRequest)
		if !strings.Contains(a.body, "branding.primary_color") {
			t.Fatalf("bad colour: %s", a.body)
		}
		if auditCount(t, sys, ws.ID, "app.updated") != 0 {
			t.Fatal("a refused save wrote an audit entry")
		}

		// A save: one audit entry, read back by the API and the page.
		o.post(ap, url.Values{"branding.shown": {"1"}, "primary_color": {"#0B7A5A"}, "background_color": {""}, "text_color": {""},
			"primary_color_dark": {""}, "background_color_dark": {"#101010"}, "text_color_dark": {""}, "color_scheme": {"auto"},
			"font": {"rounded"}, "service_branding.shown": {"1"}, "logo_dark": {"https://shop.example/logo-dark.png"}}, http.StatusSeeOther)
		got, _ := sys.Tenants.GetApp(ctx, app.ID)
		want := tenant.Branding{PrimaryColor: "#0b7a5a", BackgroundColorDark: "#101010", Font: "rounded"}
		if got.Branding != want || got.ServiceBranding || got.LogoDark != "https://shop.example/logo-dark.png" {
			t.Fatalf("saved %+v service_branding %v logo_dark %q", got.Branding, got.ServiceBranding, got.LogoDark)
		}
		list, err := sys.Tenants.AuditLog(ctx, access.Operator(), ws.ID, tenant.AuditFilter{Action: "app.updated", Limit: 10})
		if err != nil || len(list) != 1 || !strings.Contains(string(list[0].After), `"primary_color":"#0b7a5a"`) {
			t.Fatalf("audit: %v %d entries %+v", err, len(list), list)
		}
		if page := o.get(ap, http.StatusOK); !strings.Contains(page.body, `value="#0b7a5a"`) {
			t.Fatal("the settings page does not show the saved colour")
		}
	})
}
