package web

import (
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// An app's branding on its hosted pages (docs/hosted-pages.md, "Branding
// and language"): its colours, colour scheme and font become CSS custom
// properties in a second <style> of the page, with the page's nonce (the
// CSP allows no style attribute). Only values that pass tenant's checks
// again here reach the CSS: a colour is #rrggbb, a font is a key of
// tenant.Fonts whose stack is written in Go. Nothing an app typed is
// copied into the CSS otherwise.

// palette is one colour scheme's custom properties.
type palette struct{ fg, bg, card, line, accent, err, muted string }

// The hosted layout's own palettes (hosted_layout.html).
var (
	lightPalette = palette{fg: "#1b1f24", bg: "#f4f5f7", card: "#fff", line: "#d0d5dd", accent: "#2f5bd3", err: "#b42318", muted: "#5d6673"}
	darkPalette  = palette{fg: "#e6e8eb", bg: "#111418", card: "#1b1f24", line: "#3a414b", accent: "#7ea2ff", err: "#ff8a80", muted: "#a3acb8"}
)

// color is c when it is a valid colour, else def.
func color(c, def string) string {
	if tenant.ValidColor(c) {
		return strings.ToLower(c)
	}
	return def
}

// onColor is the text colour that reads on a background of colour c
// (#rrggbb): black on light colours, white on dark ones.
func onColor(c string) string {
	v, err := strconv.ParseUint(c[1:], 16, 32)
	if err != nil {
		return "#fff"
	}
	lin := func(x uint64) float64 {
		f := float64(x) / 255
		if f <= 0.03928 {
			return f / 12.92
		}
		return math.Pow((f+0.055)/1.055, 2.4)
	}
	l := 0.2126*lin(v>>16&0xff) + 0.7152*lin(v>>8&0xff) + 0.0722*lin(v&0xff)
	// Contrast with white (1.05/(l+.05)) against black ((l+.05)/.05).
	if (l+0.05)*(l+0.05) > 1.05*0.05 {
		return "#000"
	}
	return "#fff"
}

// branded is a palette with b's colours (light or dark ones) over def.
func branded(def palette, primary, bg, fg string) palette {
	def.accent, def.bg, def.fg = color(primary, def.accent), color(bg, def.bg), color(fg, def.fg)
	return def
}

func (p palette) css(b *strings.Builder, primarySet bool) {
	b.WriteString(":root{--fg:" + p.fg + ";--bg:" + p.bg + ";--card:" + p.card + ";--line:" + p.line + ";--accent:" + p.accent +
		";--err:" + p.err + ";--muted:" + p.muted + "}")
	if primarySet {
		b.WriteString("button{color:" + onColor(p.accent) + "}")
	}
}

// brandCSS is the CSS of app's branding, "" when it has none. The result
// is built from validated values only (see above).
func brandCSS(app tenant.App) template.CSS {
	br := app.Branding
	if br == (tenant.Branding{}) {
		return ""
	}
	light := branded(lightPalette, br.PrimaryColor, br.BackgroundColor, br.TextColor)
	dark := branded(darkPalette, br.PrimaryColorDark, br.BackgroundColorDark, br.TextColorDark)
	lightPrimary, darkPrimary := tenant.ValidColor(br.PrimaryColor), tenant.ValidColor(br.PrimaryColorDark)
	var b strings.Builder
	switch br.ColorScheme {
	case "light": // both media: the layout's dark block must not apply
		b.WriteString(":root{color-scheme:light}")
		light.css(&b, lightPrimary)
		b.WriteString("@media (prefers-color-scheme:dark){")
		light.css(&b, lightPrimary)
		b.WriteString("}")
	case "dark":
		b.WriteString(":root{color-scheme:dark}")
		dark.css(&b, darkPrimary)
		b.WriteString("@media (prefers-color-scheme:dark){")
		dark.css(&b, darkPrimary)
		b.WriteString("}")
	default:
		light.css(&b, lightPrimary)
		b.WriteString("@media (prefers-color-scheme:dark){")
		dark.css(&b, darkPrimary)
		b.WriteString("}")
	}
	if stack, ok := tenant.Fonts[br.Font]; ok && br.Font != "" {
		b.WriteString("body{font-family:" + stack + "}")
	}
	return template.CSS(b.String())
}

// Scheme is the page's colour scheme: auto, light or dark.
func (v hostedView) Scheme() string {
	if s := v.App.Branding.ColorScheme; s == "light" || s == "dark" {
		return s
	}
	return "auto"
}

// PoweredBy reports whether the page shows "Secured by Gatehouse": the
// app's service_branding, and always on a page of no app.
func (v hostedView) PoweredBy() bool { return v.App.ID == "" || v.App.ServiceBranding }
