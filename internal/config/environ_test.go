package config

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestUnknownVariables: every GATEHOUSE_* variable that is neither a setting
// nor a tool variable is reported once, by name, with the setting it is
// closest to; nothing else is, and no value is kept.
func TestUnknownVariables(t *testing.T) {
	environ := []string{
		"GATEHOUSE_DATABSE_URL=postgres://gh:hunter2@db/gh", // a letter missing
		"GATEHOUSE_DATABSE_URL=postgres://again",            // twice: reported once
		"GATEHOUSE_MASTERKEY=c2VjcmV0",                      // an underscore missing
		"GATEHOUSE_SMTP_PASWORD=s3cret",
		"GATEHOUSE_LOG_LEVLE=debug",                // two letters swapped
		"GATEHOUSE_TEST_IDENTITES_CODE=123456",     // a real setting under TEST_: not a tool variable
		"GATEHOUSE_ADDR=0.0.0.0:8080",              // the flag's name (--addr)
		"GATEHOUSE_METRICS_ADDRESS=127.0.0.1:9090", // three letters too many
		"GATEHOUSE_SOMETHING_ELSE=1",               // near nothing
		"GATEHOUSE_DB_URL=x",                       // too far from database.url to guess
		"GATEHOUSE_EMPTY=",                         // an empty value is still a wrong name
		// Settings, tool variables and other variables are not reported.
		"GATEHOUSE_DATABASE_URL=postgres://gh@db/gh",
		"GATEHOUSE_HTTP_ADDR=:8080",
		"GATEHOUSE_TEST_POSTGRES_URL=postgres://x",
		"GATEHOUSE_TEST_AS_MAIN=1",
		"GATEHOUSE_BIN=/tmp/gatehouse",
		"GATEHOUSE_WEBHOOK_SECRET=whsec",
		"GATEHOUSE_WEBHOOK_SECRET_OLD=whsec",
		"GATEHOUSE_E2E_DATABASE_URL=postgres://x",
		"GATEHOUSE_E2E_KEEP=1",
		"GATEHOUSE_CHAOS_KILLS=20",
		"GATEHOUSE_CHAOS_SEED=7",
		"gatehouse_databse_url=x",
		"DATABASE_URL=x",
		"GATEHOUSE_NOEQUALS",
		"PATH=/usr/bin",
	}
	want := []UnknownVariable{
		{"GATEHOUSE_ADDR", "GATEHOUSE_HTTP_ADDR"},
		{"GATEHOUSE_DATABSE_URL", "GATEHOUSE_DATABASE_URL"},
		{"GATEHOUSE_DB_URL", ""},
		{"GATEHOUSE_EMPTY", ""},
		{"GATEHOUSE_LOG_LEVLE", "GATEHOUSE_LOG_LEVEL"},
		{"GATEHOUSE_MASTERKEY", "GATEHOUSE_MASTER_KEY"},
		{"GATEHOUSE_METRICS_ADDRESS", "GATEHOUSE_METRICS_ADDR"},
		{"GATEHOUSE_SMTP_PASWORD", "GATEHOUSE_SMTP_PASSWORD"},
		{"GATEHOUSE_SOMETHING_ELSE", ""},
		{"GATEHOUSE_TEST_IDENTITES_CODE", "GATEHOUSE_TEST_IDENTITIES_CODE"},
	}
	got := UnknownVariables(environ)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("UnknownVariables =\n%v\nwant\n%v", got, want)
	}
	if got := UnknownVariables(nil); got != nil {
		t.Errorf("UnknownVariables(nil) = %v; want nil", got)
	}
	for _, u := range got {
		msg := u.Message()
		if !strings.HasPrefix(msg, u.Name+" is not a setting and is ignored") {
			t.Errorf("Message() = %q; want it to start with the name", msg)
		}
		if (u.Suggestion != "") != strings.Contains(msg, "did you mean "+u.Suggestion+"?") {
			t.Errorf("Message() = %q; want did you mean %q exactly when there is a suggestion", msg, u.Suggestion)
		}
		for _, secret := range []string{"hunter2", "c2VjcmV0", "s3cret", "postgres://"} {
			if strings.Contains(msg, secret) {
				t.Errorf("Message() = %q quotes a value", msg)
			}
		}
	}

	// Load itself still ignores them: the misspelt URL leaves the default.
	c, err := Load(nil, "", environ[:1])
	if err != nil || c.Database.URL != "" {
		t.Errorf("Load(misspelt database url) = %q, %v; want the default", c.Database.URL, err)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "ABC", 3},
		{"DATABASE_URL", "DATABASE_URL", 0},
		{"DATABSE_URL", "DATABASE_URL", 1},
		{"DATABAES_URL", "DATABASE_URL", 1},
		{"DATABASE_URI", "DATABASE_URL", 1},
		{"DB_URL", "DATABASE_URL", 6},
		{"CA", "ABC", 3}, // OSA, not true Damerau: a swapped pair is not edited again
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d; want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d; want %d", tt.b, tt.a, got, tt.want)
		}
	}
}

// TestRepositoryVariables keeps the tool variables true: every GATEHOUSE_*
// name written anywhere in the repository (code, scripts, docs, CI) is a
// setting, a tool variable, or one of the deliberate misspellings below
// that tests and docs use to show the warning. A new variable a script
// reads fails here until it is added to ToolVariables.
func TestRepositoryVariables(t *testing.T) {
	misspelt := []string{
		"GATEHOUSE_DATABSE_URL", "GATEHOUSE_MASTERKEY", "GATEHOUSE_SMTP_PASWORD", "GATEHOUSE_LOG_LEVLE",
		"GATEHOUSE_TEST_IDENTITES_CODE", "GATEHOUSE_ADDR", "GATEHOUSE_METRICS_ADDRESS", "GATEHOUSE_SOMETHING_ELSE",
		"GATEHOUSE_DB_URL", "GATEHOUSE_EMPTY", "GATEHOUSE_NOEQUALS", "GATEHOUSE_HTTP_ADDR_X", "GATEHOUSE_DATABASE",
		"GATEHOUSE_SMTP_PROT", "GATEHOUSE_SERVICE", "GATEHOUSE_PORTS", "GATEHOUSE_PORT_X_TCP", "GATEHOUSE_HTTP_ADRR",
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root %s: %v", root, err)
	}
	names := regexp.MustCompile(`GATEHOUSE_[A-Z0-9_]+`)
	seen := map[string]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if info, err := d.Info(); err != nil || !info.Mode().IsRegular() || info.Size() > 2<<20 {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil || bytes.IndexByte(b, 0) >= 0 {
			return err
		}
		for _, n := range names.FindAllString(string(b), -1) {
			if _, ok := seen[n]; !ok {
				seen[n], _ = filepath.Rel(root, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 10 {
		t.Fatalf("found only %d GATEHOUSE_* names under %s; the walk is broken", len(seen), root)
	}
	for n, file := range seen {
		// A name ending in _ is a prefix written in prose or in ToolVariables;
		// Kubernetes' service links are shown as what they are.
		if slices.Contains(misspelt, n) || strings.HasSuffix(n, "_") || (UnknownVariable{Name: n}).ServiceLink() {
			continue
		}
		if u := UnknownVariables([]string{n + "=x"}); len(u) > 0 {
			t.Errorf("%s (in %s) is neither a setting nor in ToolVariables: add it there if a tool reads it", n, file)
		}
	}
}

// TestServiceLinks: the variables Kubernetes makes for a Service named
// gatehouse (or gatehouse-…) have the service-link shape, misspelt settings
// do not.
func TestServiceLinks(t *testing.T) {
	for _, name := range []string{"GATEHOUSE_SERVICE_HOST", "GATEHOUSE_SERVICE_PORT", "GATEHOUSE_SERVICE_PORT_HTTP",
		"GATEHOUSE_PORT", "GATEHOUSE_PORT_8080_TCP", "GATEHOUSE_PORT_8080_TCP_PROTO", "GATEHOUSE_PORT_8080_TCP_PORT",
		"GATEHOUSE_PORT_8080_TCP_ADDR", "GATEHOUSE_API_SERVICE_HOST", "GATEHOUSE_API_PORT_9090_UDP"} {
		if !(UnknownVariable{Name: name}).ServiceLink() {
			t.Errorf("%s is not taken for a Kubernetes service link", name)
		}
	}
	for _, name := range []string{"GATEHOUSE_DATABSE_URL", "GATEHOUSE_SMTP_PROT", "GATEHOUSE_SERVICE", "GATEHOUSE_PORTS",
		"GATEHOUSE_PORT_X_TCP", "GATEHOUSE_HTTP_ADRR"} {
		if (UnknownVariable{Name: name}).ServiceLink() {
			t.Errorf("%s is taken for a Kubernetes service link", name)
		}
	}
}
