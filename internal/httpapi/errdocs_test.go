package httpapi_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/httpapi"
)

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
