package doccheck

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the directory holding go.mod, above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// TestDocLinks: README.md and docs/**/*.md link only to files of the
// repository and to headings that exist, and cite no design document that
// readers of the repository cannot open.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d documentation files under %s: want README.md and docs/", len(files), root)
	}
	problems, err := Check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCheckerFindsProblems: the checker reports each kind of broken link,
// anchor and outside citation at its line, and accepts the good ones.
func TestCheckerFindsProblems(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", strings.Join([]string{
		"# Title",                                 // 1
		"See [guide](docs/guide.md#setting-up).",  // 2: fine
		"And [gone](docs/missing.md).",            // 3: no such file
		"And [bad anchor](docs/guide.md#nowhere)", // 4: no such heading
		"[ref]: docs/guide.md#faq-1",              // 5: fine (the second FAQ)
		"[ref2]: docs/guide.md#faq-2",             // 6: only two FAQs
		"<img src=\"docs/logo.png\">",             // 7: no such image
		"```sh",                                   // 8
		"[not a link](nowhere.md)",                // 9: in a fence
		"```",                                     // 10
		"`[code](nowhere.md)` and [web](https://example.com/x.md) [up](../outside.md)", // 11: outside
		"[dir](docs/) [self](#title) [self2](#titles)",                                 // 12: #titles is not a heading
		"The spec says so (interface.md §4.1); see `../shared/spec/client-compat.md`.", // 13
		"As interface §4.6 says; RFC 6749 §4.4 and §5.2 are fine, NIST 800-63B §5.2.2 too.",
		"The design's R-AC-3. See [security](docs/security.md#threats).", // 15
	}, "\n"))
	write("docs/guide.md", "# Guide\n\n## Setting up!\n\n## FAQ\n\n## FAQ\n\n## Threats\n")
	write("docs/security.md", "# Security\n\n## Threats\n")

	problems, err := Check(root, []string{"README.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []struct {
		line int
		text string
	}{
		{3, `"docs/missing.md": docs/missing.md does not exist`},
		{4, `docs/guide.md has no heading with the anchor #nowhere`},
		{6, `docs/guide.md has no heading with the anchor #faq-2`},
		{7, `"docs/logo.png": docs/logo.png does not exist`},
		{11, `"../outside.md" leads outside the repository`},
		{12, `README.md has no heading with the anchor #titles`},
		{13, `"interface.md"`},
		{13, `"interface.md §"`},
		{13, `"../shared/spec"`},
		{13, `"client-compat.md"`},
		{14, `"interface §"`},
		{15, `requirement R-AC-3`},
	}
	for _, w := range want {
		prefix := "README.md:" + strconv.Itoa(w.line) + ": "
		i := slices.IndexFunc(got, func(g string) bool { return strings.HasPrefix(g, prefix) && strings.Contains(g, w.text) })
		if i < 0 {
			t.Errorf("no problem %q at line %d; got:\n%s", w.text, w.line, strings.Join(got, "\n"))
			continue
		}
		got = slices.Delete(got, i, i+1)
	}
	for _, g := range got {
		t.Errorf("unexpected problem: %s", g)
	}
}

func TestSlug(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Concurrency: every guess counted before it is judged", "concurrency-every-guess-counted-before-it-is-judged"},
		{"Client SDK `@scute/core`", "client-sdk-scutecore"},
		{"Gatehouse's own routes (no Scute equivalent)", "gatehouses-own-routes-no-scute-equivalent"},
		{"Machine-to-machine (M2M)", "machine-to-machine-m2m"},
		{"snake_case and [a link](x.md)", "snake_case-and-a-link"},
		{"Größe ändern", "größe-ändern"},
		{"`@scute/ui-react`: the prebuilt `<Auth/>` and <b>`<Profile/>`</b>", "scuteui-react-the-prebuilt-auth-and-profile"},
	} {
		if got := Slug(tt.in); got != tt.want {
			t.Errorf("Slug(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
