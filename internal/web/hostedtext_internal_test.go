package web

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// TestHostedTextCatalog: every text a hosted template passes to t has a
// row, and every row has German, French and Spanish with the same values
// (%s) as the English text.
func TestHostedTextCatalog(t *testing.T) {
	for en, row := range hostedText {
		for i, tr := range row {
			if tr == "" || strings.Count(tr, "%s") != strings.Count(en, "%s") || strings.Count(tr, "<") != strings.Count(en, "<") {
				t.Errorf("%q in %s: %q", en, hostedLanguages[i+1], tr)
			}
		}
	}
	lit := regexp.MustCompile(`\{\{t \$\.Lang "((?:[^"\\]|\\.)*)"`)
	files, _ := fs.Glob(templateFiles, "templates/hosted_*.html")
	for _, f := range files {
		b, _ := fs.ReadFile(templateFiles, f)
		for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
			key := strings.ReplaceAll(m[1], `\"`, `"`)
			if _, ok := hostedText[key]; !ok {
				t.Errorf("%s: %q is not in hostedText", f, key)
			}
		}
	}
}

func TestHostedLang(t *testing.T) {
	for _, c := range []struct {
		locale any
		accept string
		want   string
	}{
		{nil, "de-AT,de;q=0.9,en;q=0.8", "de"},
		{nil, "en;q=0.5, fr;q=0.9", "fr"}, // by q-value
		{nil, "pt-BR, es;q=0.5", "es"},
		{nil, "zh, ja", "en"},
		{nil, "", "en"},
		{"es_MX", "de", "es"},    // the user's locale first
		{"klingon!", "fr", "fr"}, // not a language tag: ignored
		{"pt", "", "en"},
	} {
		meta := map[string]any{}
		if c.locale != nil {
			meta["locale"] = c.locale
		}
		if got := hostedLang(meta, c.accept); got != c.want {
			t.Errorf("hostedLang(%v, %q) = %s, want %s", c.locale, c.accept, got, c.want)
		}
	}
	if got := tr("de", "Continue as %s", "<b>x</b>"); got != "Weiter als &lt;b&gt;x&lt;/b&gt;" {
		t.Errorf("tr escapes its values: %s", got)
	}
	if got := tr("fr", "<script>not in the catalog</script>"); got != "&lt;script&gt;not in the catalog&lt;/script&gt;" {
		t.Errorf("tr of an unknown text: %s", got)
	}
}
