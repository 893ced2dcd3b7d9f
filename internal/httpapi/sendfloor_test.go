package httpapi_test

import (
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

// TestSendMinTime: a send of a code or a magic link answers no sooner than
// ratelimit.send_min_time, to a known address as to a new one (which signs
// it up), so that the timing does not tell them apart. It checks the floor
// is applied (a lower bound), not how fast anything is.
func TestSendMinTime(t *testing.T) {
	const floor = 300 * time.Millisecond
	opts := servertest.Options{Serve: true, Settings: map[string]string{"GATEHOUSE_RATELIMIT_SEND_MIN_TIME": floor.String()}}
	forEach(t, opts, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		known := "known@example.com"
		if _, _, err := e.Users.Create(t.Context(), servertest.Operator, e.app, appuser.CreateInput{Identifier: known}); err != nil {
			t.Fatalf("Create(%s): %v", known, err)
		}
		for _, tc := range []struct{ name, path, to string }{
			{"code to a known address", "/otps/login", known},
			{"code to a new address", "/otps/login", "new1@example.com"},
			{"magic link to a known address", "/magic_links/login", known},
			{"magic link to a new address", "/magic_links/login", "new2@example.com"},
		} {
			start := time.Now()
			r := e.do(t, "POST", e.authPath(tc.path), browser, map[string]any{"identifier": tc.to})
			if took := time.Since(start); r.status != 200 || took < floor {
				t.Errorf("%s = %d in %s; want 200 no sooner than %s", tc.name, r.status, took, floor)
			}
		}
	})
}
