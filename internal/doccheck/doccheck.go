// Package doccheck checks the repository's Markdown documentation: every
// relative link and image must lead to a file or directory of the
// repository, every #anchor to a heading of its target, and no page may cite
// design documents that are not part of the repository.
package doccheck

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Problem is one finding, at a file (slash-separated, relative to the
// repository root) and a 1-based line.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// Files lists the documentation the check covers: README.md and every
// Markdown file under docs/, relative to root, slash-separated and sorted.
func Files(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	slices.Sort(files)
	return files, nil
}

// Check reads each file (relative to root) and reports its broken links
// and anchors and its citations of documents outside the repository.
func Check(root string, files []string) ([]Problem, error) {
	c := &checker{root: root, anchors: map[string]map[string]bool{}}
	var out []Problem
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		out = append(out, c.file(f, string(raw))...)
	}
	return out, nil
}

type checker struct {
	root    string
	anchors map[string]map[string]bool // by slash path relative to root
}

var (
	fence      = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	inlineLink = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)`)
	refDef     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	htmlAttr   = regexp.MustCompile(`(?i)\b(?:src|href)\s*=\s*(?:"([^"]*)"|'([^']*)')`)
	htmlID     = regexp.MustCompile(`(?i)<a\s[^>]*\b(?:name|id)\s*=\s*"([^"]*)"`)
	atx        = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setext     = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	scheme     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
)

// The design documents that live beside the repository, never in it.
var (
	outsideName = regexp.MustCompile(`(?i)(\.\./)*\bshared/(spec|design|hooks)\b|\b(interface|client-compat|server-sdk-compat|architecture|stack|style-anchors)\.md\b|\b(client-compat|server-sdk-compat)\b`)
	// A citation by section or requirement of a document named without
	// ".md": "interface §4.3", "security §18", "security.md R-AC-3".
	outsideCite = regexp.MustCompile(`(?i)\b(interface|security|architecture)(\.md)?\s+(§|R-[A-Z]+-\d)`)
	// A requirement id of the security design ("R-BC-2").
	requirement = regexp.MustCompile(`\bR-[A-Z]{2,4}-\d+\b`)
	// A section sign is fine after a standard it belongs to ("RFC 6749
	// §4.4", "NIST 800-63B §5.2.2", "§4.4 and §5.2" after one).
	section     = regexp.MustCompile(`§\s*\d`)
	sectionHost = regexp.MustCompile(`(?i)(\bRFC\s*\d+|\bNIST\b[^§]*|\b800-63[A-C]?)(\s*§\s*[\d.]+(\s*(,|and|or)\s*)?)*\s*$`)
)

// lines splits a document into lines and marks those inside fenced code.
func lines(text string) ([]string, []bool) {
	ls := strings.Split(text, "\n")
	inCode := make([]bool, len(ls))
	open := ""
	for i, l := range ls {
		m := fence.FindStringSubmatch(l)
		switch {
		case open == "" && m != nil:
			open = m[1]
			inCode[i] = true
		case open != "":
			inCode[i] = true
			if m != nil && m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(l[strings.Index(l, m[1])+len(m[1]):]) == "" {
				open = ""
			}
		}
	}
	return ls, inCode
}

func (c *checker) file(name, text string) []Problem {
	var out []Problem
	report := func(line int, format string, args ...any) {
		out = append(out, Problem{File: name, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	ls, inCode := lines(text)
	for i, l := range ls {
		before := len(out)
		for _, m := range outsideName.FindAllString(l, -1) {
			report(i+1, "cites %q, a document outside the repository: say what it says instead", m)
		}
		for _, m := range outsideCite.FindAllString(l, -1) {
			report(i+1, "cites %q, a section of a document outside the repository: say what it says instead", m)
		}
		for _, m := range requirement.FindAllString(l, -1) {
			report(i+1, "cites requirement %s of a design document outside the repository: say what it says instead", m)
		}
		cited := before
		for _, loc := range section.FindAllStringIndex(l, -1) {
			// One finding a line: a section of a document already named
			// above is the same citation.
			if len(out) == cited && !sectionHost.MatchString(l[:loc[0]]) {
				report(i+1, "cites a section (%s…) of a document outside the repository: name a standard (RFC, NIST) or say what it says", l[loc[0]:loc[1]])
			}
		}
		if inCode[i] {
			continue
		}
		plain := stripCode(l)
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(plain, -1) {
			targets = append(targets, strings.Trim(m[2], "<>"))
		}
		if m := refDef.FindStringSubmatch(plain); m != nil {
			targets = append(targets, strings.Trim(m[1], "<>"))
		}
		for _, m := range htmlAttr.FindAllStringSubmatch(plain, -1) {
			targets = append(targets, m[1]+m[2])
		}
		for _, t := range targets {
			if msg := c.target(name, t); msg != "" {
				report(i+1, "%s", msg)
			}
		}
	}
	return out
}

// target checks one link destination of the file name; it answers what is
// wrong, or "".
func (c *checker) target(name, dest string) string {
	if dest == "" || scheme.MatchString(dest) {
		return "" // http(s), mailto and other absolute URLs are not checked
	}
	if strings.HasPrefix(dest, "/") {
		return fmt.Sprintf("link %q is absolute: make it relative to %s", dest, name)
	}
	p, frag, _ := strings.Cut(dest, "#")
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	p, err := url.PathUnescape(p)
	if err != nil {
		return fmt.Sprintf("link %q: %v", dest, err)
	}
	target := name
	if p != "" {
		target = path.Clean(path.Join(path.Dir(name), p))
		if target == ".." || strings.HasPrefix(target, "../") {
			return fmt.Sprintf("link %q leads outside the repository", dest)
		}
		if _, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(target))); err != nil {
			return fmt.Sprintf("link %q: %s does not exist", dest, target)
		}
	}
	if frag == "" || !strings.HasSuffix(target, ".md") {
		return ""
	}
	frag, err = url.PathUnescape(frag)
	if err != nil {
		return fmt.Sprintf("link %q: %v", dest, err)
	}
	anchors, err := c.anchorsOf(target)
	if err != nil {
		return fmt.Sprintf("link %q: %v", dest, err)
	}
	if !anchors[frag] {
		return fmt.Sprintf("link %q: %s has no heading with the anchor #%s", dest, target, frag)
	}
	return ""
}

// anchorsOf answers the anchors GitHub gives the headings of a Markdown
// file, and those of its explicit <a name> or <a id> elements.
func (c *checker) anchorsOf(file string) (map[string]bool, error) {
	if a, ok := c.anchors[file]; ok {
		return a, nil
	}
	raw, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	a := Anchors(string(raw))
	c.anchors[file] = a
	return a, nil
}

// Anchors answers the heading anchors of a Markdown document by GitHub's
// rules: each heading's slug (see Slug), a repeated slug followed by -1,
// -2, …; and the names of explicit <a name="…"> or <a id="…"> elements.
func Anchors(text string) map[string]bool {
	ls, inCode := lines(text)
	seen := map[string]int{}
	out := map[string]bool{}
	add := func(heading string) {
		s := Slug(heading)
		n := seen[s]
		seen[s]++
		if n > 0 {
			s = fmt.Sprintf("%s-%d", s, n)
		}
		out[s] = true
	}
	for i, l := range ls {
		if inCode[i] {
			continue
		}
		for _, m := range htmlID.FindAllStringSubmatch(stripCode(l), -1) {
			out[m[1]] = true
		}
		if m := atx.FindStringSubmatch(l); m != nil {
			add(m[2])
			continue
		}
		// A setext heading: a paragraph line underlined with = or -.
		if i > 0 && !inCode[i-1] && setext.MatchString(l) {
			prev := strings.TrimSpace(ls[i-1])
			if prev != "" && !strings.HasPrefix(prev, "|") && !strings.HasPrefix(prev, "#") && !strings.HasPrefix(prev, ">") &&
				!strings.HasPrefix(prev, "- ") && !strings.HasPrefix(prev, "* ") && !setext.MatchString(prev) {
				add(prev)
			}
		}
	}
	return out
}

// Slug is GitHub's anchor for a heading: its text as rendered (links and
// images by their text, without code-span backticks or HTML tags), lower
// case, with every character other than a letter, mark, digit, connector
// punctuation ("_"), "-" or space dropped, and each space made a "-".
func Slug(heading string) string {
	var h string
	for i, part := range splitCode(heading) {
		if i%2 == 1 { // a code span: its text as is
			h += part
		} else {
			h += htmlTag.ReplaceAllString(inlineLink.ReplaceAllString(part, "$1"), "")
		}
	}
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r) || unicode.IsNumber(r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// stripCode drops a line's code spans.
func stripCode(l string) string {
	var b strings.Builder
	for i, part := range splitCode(l) {
		if i%2 == 0 {
			b.WriteString(part)
		}
	}
	return b.String()
}

// splitCode splits a line into text and code spans, alternately (text
// first): a code span is a run of backticks up to the next run of the same
// length, given here without them; an unmatched run is text.
func splitCode(l string) []string {
	var parts []string
	text := ""
	for {
		i := strings.IndexByte(l, '`')
		if i < 0 {
			return append(parts, text+l)
		}
		n := i
		for n < len(l) && l[n] == '`' {
			n++
		}
		run := l[i:n]
		start, end := -1, -1
		for j := n; j < len(l); {
			k := strings.Index(l[j:], run)
			if k < 0 {
				break
			}
			k += j
			m := k + len(run)
			if m < len(l) && l[m] == '`' {
				for m < len(l) && l[m] == '`' {
					m++
				}
				j = m
				continue
			}
			start, end = k, m
			break
		}
		if end < 0 {
			text += l[:n]
			l = l[n:]
			continue
		}
		parts = append(parts, text+l[:i], l[n:start])
		text, l = "", l[end:]
	}
}
