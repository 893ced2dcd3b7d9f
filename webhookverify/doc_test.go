package webhookverify

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// firstFencedBlock returns the contents of the first ``` block after the line heading in
// markdown, failing if another heading comes first: the block must belong to that section.
func firstFencedBlock(markdown, heading string) (string, error) {
	lines := strings.Split(markdown, "\n")
	start := -1
	for i, l := range lines {
		if l == heading {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return "", fmt.Errorf("heading %q not found", heading)
	}
	for i := start; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "#") {
			return "", fmt.Errorf("no code block under %q before %q", heading, l)
		}
		if !strings.HasPrefix(l, "```") {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if lines[j] == "```" {
				return strings.Join(lines[i+1:j], "\n") + "\n", nil
			}
		}
		return "", fmt.Errorf("unclosed code block under %q", heading)
	}
	return "", fmt.Errorf("no code block under %q", heading)
}

// TestDocSnippetsMatchFiles keeps the code in docs/webhooks.md and the scripts that
// TestScripts runs identical, so the documented code is the tested code.
func TestDocSnippetsMatchFiles(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "webhooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		heading string
		file    string
	}{
		{"### Node", filepath.Join("testdata", "verify.mjs")},
		{"### Python", filepath.Join("testdata", "verify.py")},
	}
	for _, tt := range tests {
		t.Run(tt.heading, func(t *testing.T) {
			got, err := firstFencedBlock(string(doc), tt.heading)
			if err != nil {
				t.Fatalf("docs/webhooks.md: %v", err)
			}
			want, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("code under %q in docs/webhooks.md differs from %s:\n%s", tt.heading, tt.file, firstDiff(got, string(want)))
			}
		})
	}
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("line %d: doc %q; file %q", i+1, gl, wl)
		}
	}
	return "identical"
}
