package httpapi_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/httpapi"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

// forEach is servertest.ForEach with every error answered recorded
// (httpapi.RecordAnswers), for TestMain to check.
func forEach(t *testing.T, opts servertest.Options, fn func(t *testing.T, sys *servertest.System)) {
	t.Helper()
	opts.WrapAPI = httpapi.RecordAnswers
	servertest.ForEach(t, logRequests(opts), fn)
}

// newSystem is servertest.New with every error answered recorded.
func newSystem(t testing.TB, kind string, opts servertest.Options) *servertest.System {
	t.Helper()
	opts.WrapAPI = httpapi.RecordAnswers
	return servertest.New(t, kind, logRequests(opts))
}

// logRequests turns log.requests on unless opts set it: the suites' log
// scans (testLogScan) read the request lines for secrets.
func logRequests(opts servertest.Options) servertest.Options {
	settings := map[string]string{"GATEHOUSE_LOG_REQUESTS": "true"}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	opts.Settings = settings
	return opts
}

// TestSystemsRecordAnswers: a system built straight from servertest would
// answer unrecorded, and TestMain would miss its undocumented errors.
func TestSystemsRecordAnswers(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	direct := regexp.MustCompile(`servertest\.(ForEach|New)\(`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(direct.FindAll(b, -1)); f != "errdocs_test.go" && n > 0 {
			t.Errorf("%s builds %d systems with servertest.ForEach or New; use forEach or newSystem, which record every error answered", f, n)
		}
	}
}

// TestMain fails the package when a test was answered an error that its
// operation's documented responses do not list (export_test.go records
// every error answered): the reference's error codes stay true.
func TestMain(m *testing.M) {
	code := m.Run()
	httpapi.DumpAnswers()
	if bad := httpapi.UndocumentedAnswers(); len(bad) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d errors answered that the OpenAPI document does not list (operation status error_code):\n", len(bad))
		for _, b := range bad {
			fmt.Fprintln(os.Stderr, "\t"+b)
		}
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
