package httpapi_test

import (
	"os"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

func TestZZDump(t *testing.T) {
	e := newEnv(t, store.SQLite, true)
	r := scenario{method: "GET", path: "/v1/openapi.json", wantStatus: 200}.run(t, e)
	os.WriteFile("/tmp/openapi.json", r.raw, 0o644)
}
