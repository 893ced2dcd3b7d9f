package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/knadh/koanf/parsers/yaml"

	"github.com/gatehouse-auth/gatehouse/internal/config"
)

// TestVersionMatchesChangelog: the version constant is CHANGELOG.md's newest
// release, so a release cannot bump one and forget the other.
func TestVersionMatchesChangelog(t *testing.T) {
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+[^\]]*)\]`).FindSubmatch(b)
	if m == nil {
		t.Fatal("CHANGELOG.md has no release heading (## [X.Y.Z])")
	}
	if string(m[1]) != version {
		t.Errorf("CHANGELOG.md's newest release is %s; the version constant is %s", m[1], version)
	}
	if !strings.Contains(string(b), "## [Unreleased]") {
		t.Errorf("CHANGELOG.md has no [Unreleased] section")
	}
}

// TestDeploymentFilesNameRealSettings: every GATEHOUSE_* variable the
// compose example and the Dockerfile set is a setting, since an unknown one
// would be silently ignored; the compose file parses and gives the
// settings serve needs outside --dev.
func TestDeploymentFilesNameRealSettings(t *testing.T) {
	known := map[string]bool{}
	for _, s := range config.Settings() {
		known[s.Env] = true
	}
	name := regexp.MustCompile(`GATEHOUSE_[A-Z0-9_]+`)
	for _, file := range []string{"../../docs/compose.yaml", "../../Dockerfile"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range name.FindAllString(string(b), -1) {
			if !known[n] {
				t.Errorf("%s sets %s, which is no setting", file, n)
			}
		}
	}

	b, err := os.ReadFile("../../docs/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := yaml.Parser().Unmarshal(b)
	if err != nil {
		t.Fatalf("docs/compose.yaml: %v", err)
	}
	services, _ := doc["services"].(map[string]any)
	for _, s := range []string{"gatehouse", "postgres", "mailpit"} {
		if _, ok := services[s]; !ok {
			t.Errorf("docs/compose.yaml has no %s service", s)
		}
	}
	gh, _ := services["gatehouse"].(map[string]any)
	envs, _ := gh["environment"].(map[string]any)
	for _, n := range []string{"GATEHOUSE_MASTER_KEY", "GATEHOUSE_DATABASE_URL", "GATEHOUSE_BASE_URL", "GATEHOUSE_MAIL_PROVIDER", "GATEHOUSE_SMTP_HOST"} {
		if _, ok := envs[n]; !ok {
			t.Errorf("docs/compose.yaml: the gatehouse service does not set %s", n)
		}
	}
	var environ []string
	for k, v := range envs {
		if k != "GATEHOUSE_MASTER_KEY" { // ${…} is filled in by compose
			environ = append(environ, k+"="+fmt.Sprint(v))
		}
	}
	if _, err := config.Load(nil, "", environ); err != nil {
		t.Errorf("docs/compose.yaml's settings do not load: %v", err)
	}
}

// TestDockerfilesShipTheSameImage: the Dockerfile (built from source) and
// Dockerfile.prebuilt (CI's offline build of a binary made beforehand) end
// in the same final stage, apart from where its files come from, so the
// image CI tests is the image users build.
func TestDockerfilesShipTheSameImage(t *testing.T) {
	final := func(name string, sources *strings.Replacer) []string {
		b, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		_, stage, ok := strings.Cut(string(b), "\nFROM scratch\n")
		if !ok {
			t.Fatalf("%s has no FROM scratch stage", name)
		}
		var out []string
		for _, line := range strings.Split(stage, "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, sources.Replace(line))
			}
		}
		return out
	}
	fromSource := final("Dockerfile", strings.NewReplacer("--from=build ", "", "/etc/ssl/certs/ca-certificates.crt /etc", "ca-certificates.crt /etc",
		"/out/gatehouse", "gatehouse", "/out/data", "data"))
	prebuilt := final("Dockerfile.prebuilt", strings.NewReplacer())
	if strings.Join(fromSource, "\n") != strings.Join(prebuilt, "\n") {
		t.Errorf("the final stages differ:\nDockerfile:\n%s\n\nDockerfile.prebuilt:\n%s", strings.Join(fromSource, "\n"), strings.Join(prebuilt, "\n"))
	}
	if len(prebuilt) < 10 {
		t.Errorf("the final stage has %d lines; want the whole image", len(prebuilt))
	}
}
