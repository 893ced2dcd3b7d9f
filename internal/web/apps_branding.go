package web

import (
	"bytes"
	"net/http"
	"net/url"

	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// The console's branding settings (app.html, "Hosted pages"): the form's
// fields, and the preview of the hosted login card that htmx refreshes
// with the flow on every change (previewFlow). The preview is an SVG whose
// colours and font are presentation attributes (fill, font-family), not
// style attributes, so the console's CSP (styles by nonce only) holds; it
// uses only values that pass the same checks as a save.

// brandingFrom reads the form's branding fields (nil: not on the form).
func brandingFrom(f *form) *tenant.BrandingSettings {
	if !f.has("branding.shown") {
		return nil
	}
	return &tenant.BrandingSettings{PrimaryColor: f.textp("primary_color"), BackgroundColor: f.textp("background_color"),
		TextColor: f.textp("text_color"), PrimaryColorDark: f.textp("primary_color_dark"),
		BackgroundColorDark: f.textp("background_color_dark"), TextColorDark: f.textp("text_color_dark"),
		ColorScheme: f.textp("color_scheme"), Font: f.textp("font")}
}

// previewBranding is b with the query's valid branding values; a value
// that would not save is left out of the preview.
func previewBranding(b tenant.Branding, q url.Values) tenant.Branding {
	for _, c := range []struct {
		key string
		out *string
	}{{"primary_color", &b.PrimaryColor}, {"background_color", &b.BackgroundColor}, {"text_color", &b.TextColor},
		{"primary_color_dark", &b.PrimaryColorDark}, {"background_color_dark", &b.BackgroundColorDark}, {"text_color_dark", &b.TextColorDark}} {
		if v, ok := q[c.key]; ok && (v[0] == "" || tenant.ValidColor(v[0])) {
			*c.out = v[0]
		}
	}
	switch v := q.Get("color_scheme"); v {
	case "auto", "light", "dark":
		b.ColorScheme = v
	}
	if v := q.Get("font"); v != "" {
		if _, ok := tenant.Fonts[v]; ok {
			b.Font = v
		}
	}
	return b
}

// cardColors is one rendering of the login card.
type cardColors struct {
	Mode                                  string // "light" or "dark"
	Fg, Bg, Card, Line, Accent, On, Muted string
}

// brandCard is the preview of the hosted login card.
type brandCard struct {
	Name      string
	Font      string
	PoweredBy bool
	Cards     []cardColors
}

func brandCardOf(a tenant.App) brandCard {
	br := a.Branding
	font := tenant.Fonts["system"]
	if s, ok := tenant.Fonts[br.Font]; ok {
		font = s
	}
	card := func(mode string, p palette) cardColors {
		return cardColors{Mode: mode, Fg: p.fg, Bg: p.bg, Card: p.card, Line: p.line, Accent: p.accent, On: onColor(p.accent), Muted: p.muted}
	}
	light := card("light", branded(lightPalette, br.PrimaryColor, br.BackgroundColor, br.TextColor))
	dark := card("dark", branded(darkPalette, br.PrimaryColorDark, br.BackgroundColorDark, br.TextColorDark))
	if !tenant.ValidColor(br.PrimaryColor) {
		light.On = "#fff" // the layout's own button text
	}
	if !tenant.ValidColor(br.PrimaryColorDark) {
		dark.On = "#fff"
	}
	out := brandCard{Name: a.Name, Font: font, PoweredBy: a.ServiceBranding}
	switch br.ColorScheme {
	case "light":
		out.Cards = []cardColors{light}
	case "dark":
		out.Cards = []cardColors{dark}
	default:
		out.Cards = []cardColors{light, dark}
	}
	return out
}

// previewData is what the preview fragment shows: the flow and the card.
type previewData struct {
	Flow  []step
	Brand brandCard
}

// preview writes the settings page's preview fragment (app.html).
func (h *Handler) preview(w http.ResponseWriter, r *http.Request, a tenant.App) {
	var buf bytes.Buffer
	if err := h.page.pages["app"].ExecuteTemplate(&buf, "preview", previewData{Flow: flowOf(a), Brand: brandCardOf(a)}); err != nil {
		h.Log.ErrorContext(r.Context(), "console fragment failed to render", "fragment", "preview", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}
