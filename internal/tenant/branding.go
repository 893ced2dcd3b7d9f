package tenant

import (
	"regexp"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Branding is an app's look on the hosted pages (store.Branding).
type Branding = store.Branding

// BrandingSettings are the writable branding fields; nil keeps the value,
// "" returns a field to the default look.
type BrandingSettings struct {
	PrimaryColor        *string
	BackgroundColor     *string
	TextColor           *string
	PrimaryColorDark    *string
	BackgroundColorDark *string
	TextColorDark       *string
	ColorScheme         *string
	Font                *string
}

// ColorSchemes are the values of Branding.ColorScheme: auto follows the
// browser (prefers-color-scheme), light and dark force one.
var ColorSchemes = []string{"auto", "light", "dark"}

// Fonts are the font choices of the hosted pages, each a stack of fonts
// installed on the reader's device: nothing is downloaded. The keys are
// what the API takes; the values are CSS font-family lists, written here
// and nowhere else (no app's input reaches the CSS).
var Fonts = map[string]string{
	"system":    `system-ui,-apple-system,"Segoe UI",Roboto,sans-serif`,
	"humanist":  `Seravek,"Gill Sans Nova",Ubuntu,Calibri,"DejaVu Sans",source-sans-pro,sans-serif`,
	"geometric": `Avenir,Montserrat,Corbel,"URW Gothic",source-sans-pro,sans-serif`,
	"serif":     `Charter,"Bitstream Charter","Sitka Text",Cambria,Georgia,serif`,
	"rounded":   `ui-rounded,"Hiragino Maru Gothic ProN",Quicksand,Comfortaa,Manjari,"Arial Rounded MT","Arial Rounded MT Bold",Calibri,source-sans-pro,sans-serif`,
	"monospace": `ui-monospace,"Cascadia Code","Source Code Pro",Menlo,Consolas,"DejaVu Sans Mono",monospace`,
}

// FontNames lists Fonts' keys in the order the console offers them.
var FontNames = []string{"system", "humanist", "geometric", "serif", "rounded", "monospace"}

// colorRe is the one form a colour takes: #rrggbb. Nothing else can reach
// the pages' CSS.
var colorRe = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// ValidColor reports whether c is a colour as stored (#rrggbb).
func ValidColor(c string) bool { return colorRe.MatchString(c) }

// applyBranding validates and copies every set field of in onto b.
func applyBranding(b *Branding, in *BrandingSettings) error {
	if in == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		in   *string
		out  *string
	}{
		{"branding.primary_color", in.PrimaryColor, &b.PrimaryColor},
		{"branding.background_color", in.BackgroundColor, &b.BackgroundColor},
		{"branding.text_color", in.TextColor, &b.TextColor},
		{"branding.primary_color_dark", in.PrimaryColorDark, &b.PrimaryColorDark},
		{"branding.background_color_dark", in.BackgroundColorDark, &b.BackgroundColorDark},
		{"branding.text_color_dark", in.TextColorDark, &b.TextColorDark},
	} {
		if f.in == nil {
			continue
		}
		v := strings.TrimSpace(*f.in)
		if v != "" && !ValidColor(v) {
			return errs.Invalidf(f.name, "must be a colour as #rrggbb (six hex digits), or empty for the default")
		}
		*f.out = strings.ToLower(v)
	}
	if in.ColorScheme != nil {
		v := *in.ColorScheme
		switch v {
		case "", "auto":
			b.ColorScheme = ""
		case "light", "dark":
			b.ColorScheme = v
		default:
			return errs.Invalidf("branding.color_scheme", "must be auto, light or dark")
		}
	}
	if in.Font != nil {
		v := *in.Font
		if _, ok := Fonts[v]; !ok && v != "" {
			return errs.Invalidf("branding.font", "must be one of system, humanist, geometric, serif, rounded, monospace")
		}
		if v == "system" {
			v = ""
		}
		b.Font = v
	}
	return nil
}
