package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// update rewrites docs/configuration.md; a flag must be declared at package
// level so that "go test -update" parses it.
var update = flag.Bool("update", false, "rewrite docs/configuration.md from markdown()")

const docPath = "../../docs/configuration.md"

func TestConfigurationDocIsCurrent(t *testing.T) {
	want := markdown()
	if *update {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatalf("write %s: %v", docPath, err)
		}
		return
	}
	got, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("read %s: %v; run: go test ./internal/config -run TestConfigurationDocIsCurrent -update", docPath, err)
	}
	if string(got) != want {
		t.Errorf("docs/configuration.md is out of date; run: go test ./internal/config -run TestConfigurationDocIsCurrent -update")
	}
}

func TestMarkdownListsEverySetting(t *testing.T) {
	md := markdown()
	for _, s := range Settings() {
		row := "| `" + s.Key + "` | `" + s.Env + "` |"
		if !strings.Contains(md, row) {
			t.Errorf("markdown() has no row starting %q", row)
		}
		if s.Flag != "" && !strings.Contains(md, "`--"+s.Flag+"`") {
			t.Errorf("markdown() does not mention --%s", s.Flag)
		}
	}
	for _, s := range Settings() {
		if s.Secret && !strings.Contains(md, "| `"+s.Key+"` | `"+s.Env+"` |  |  | **Secret.**") {
			t.Errorf("markdown() does not mark %s as secret", s.Key)
		}
	}
}
