package web

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/gatehouse-auth/gatehouse/internal/signin"
)

// TestHostedTextCatalog: every text a hosted template passes to t has a
// row, and every row has German, French and Spanish with the same values
// (%s) as the English text.
func TestHostedTextCatalog(t *testing.T) {
	for plural, one := range hostedSingular {
		if _, ok := hostedText[plural]; !ok {
			t.Errorf("hostedSingular: %q is not in hostedText", plural)
		}
		if _, ok := hostedText[one]; !ok || strings.Count(one, "%s") != strings.Count(plural, "%s") {
			t.Errorf("hostedSingular[%q] = %q: not in hostedText, or another number of values", plural, one)
		}
	}
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

// hostedTextAllowed are the literals of hosted*.go that look like a
// page's text but are not one, each with the reason.
var hostedTextAllowed = map[string]string{
	"Not saved: ": "refuseHosted trims this prefix off the API's invalid-input texts",
	// pushRefusal (hosted_push.go) ends each of these with one of the two
	// endings below; TestHostedTextGo checks every sentence it makes.
	"Too many wrong numbers were chosen on your other device, so this request has ended.": "pushRefusal's start",
	"This request was denied on your other device: nothing was approved.":                 "pushRefusal's start",
	"This request has ended (it expired or was used).":                                    "pushRefusal's start",
	"The device that approved has signed out since, so its approval no longer counts.":    "pushRefusal's start",
	" Ask again, or choose another way.":                                                  "pushRefusal's ending",
	" Start again.":                                                                       "pushRefusal's ending",
}

// hostedLooksLikeText reports whether a literal of the Go code reads like
// a sentence or a heading of a page: it has a space, and begins with a
// capital letter or ends as a sentence does.
func hostedLooksLikeText(s string) bool {
	if !strings.Contains(s, " ") {
		return false
	}
	first := []rune(strings.TrimSpace(s) + " ")[0]
	return unicode.IsUpper(first) || strings.HasSuffix(s, ".") || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "…") || strings.HasSuffix(s, ":")
}

// TestHostedTextGo: every text the hosted pages' Go code (hosted*.go)
// gives a page is a key of hostedText, so that t translates it. It reads
// the files' string literals (go/parser) and takes as a page's text
//   - a literal given as a hostedView's Title, Message or Notice, or as
//     hostedf's format;
//   - any other literal that reads like a sentence or a heading
//     (hostedLooksLikeText): the msg of refusals, titles chosen before the
//     view is made, the notices, the step-up's choices.
//
// Not a page's text, by rule: the literals inside calls of h.Log (log
// lines), writeJSON (the bodies of the JSON routes that hosted.js calls:
// their "error" is shown as it is, as the API's error texts are, and
// stays English) and panic (a programming error), and hostedtext.go (the
// catalog). The API's error texts (h.Describe) are not literals here at
// all. hostedTextAllowed lists the other exceptions.
func TestHostedTextGo(t *testing.T) {
	files, err := filepath.Glob("hosted*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no hosted*.go: %v", err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "hostedtext.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		forced := map[*ast.BasicLit]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if hostedNotText(n.Fun) {
					return false
				}
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "hostedf" && len(n.Args) > 0 {
					if lit, ok := n.Args[0].(*ast.BasicLit); ok {
						forced[lit] = true
					}
				}
			case *ast.CompositeLit:
				if id, ok := n.Type.(*ast.Ident); ok && id.Name == "hostedView" {
					for _, e := range n.Elts {
						kv, ok := e.(*ast.KeyValueExpr)
						if !ok {
							continue
						}
						if k, ok := kv.Key.(*ast.Ident); ok && (k.Name == "Title" || k.Name == "Message" || k.Name == "Notice") {
							if lit, ok := kv.Value.(*ast.BasicLit); ok {
								forced[lit] = true
							}
						}
					}
				}
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					t.Fatalf("%s: %v", fset.Position(n.Pos()), err)
				}
				if !forced[n] && !hostedLooksLikeText(s) {
					return true
				}
				checked++
				if _, ok := hostedText[s]; !ok && hostedTextAllowed[s] == "" {
					t.Errorf("%s: %q is not in hostedText", fset.Position(n.Pos()), s)
				}
			}
			return true
		})
	}
	if checked < 50 {
		t.Errorf("only %d texts found in hosted*.go: does the test still read them?", checked)
	}

	// The sentences pushRefusal puts together.
	for _, err := range []error{signin.ErrChallengePending, signin.ErrTooManyAttempts,
		&signin.ChallengeClosedError{Status: "denied"}, &signin.ChallengeClosedError{Status: "expired"}, signin.ErrUnauthenticated} {
		for _, signIn := range []bool{true, false} {
			if _, msg, _, ok := pushRefusal(err, signIn); !ok || hostedText[msg] == [3]string{} {
				t.Errorf("pushRefusal(%v, %v) = %q, not in hostedText", err, signIn, msg)
			}
		}
	}
}

// hostedNotText reports whether the literals in a call of fun are no
// page's text (see TestHostedTextGo): h.Log's, writeJSON's, panic's.
func hostedNotText(fun ast.Expr) bool {
	switch f := fun.(type) {
	case *ast.Ident:
		return f.Name == "writeJSON" || f.Name == "panic"
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.SelectorExpr); ok {
			return x.Sel.Name == "Log"
		}
	}
	return false
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
	// A message with values (hostedf): the same English as fmt.Sprintf, the
	// values escaped, the key translated.
	wait := hostedf("Too many attempts. Wait %s seconds, then try again.", 30)
	if got := tr("en", wait); got != "Too many attempts. Wait 30 seconds, then try again." {
		t.Errorf("tr of a hostedf message in English: %s", got)
	}
	if got := tr("es", wait); got != "Demasiados intentos. Espera 30 segundos y vuelve a intentarlo." {
		t.Errorf("tr of a hostedf message in Spanish: %s", got)
	}
	if got := tr("de", hostedf("A code by e-mail to %s", "<a@b.example>")); got != "Ein Code per E-Mail an &lt;a@b.example&gt;" {
		t.Errorf("tr escapes a hostedf message's values: %s", got)
	}
}
