package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/httpapi"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestHTTPServerTimeouts: every timeout of the HTTP server is set, and the
// write timeout (which runs from the end of the headers) outlasts reading
// the body and the longest deadline of a route, so that a request that runs
// out of time still gets its 503 written, whatever http.request_timeout is.
func TestHTTPServerTimeouts(t *testing.T) {
	for _, rt := range []time.Duration{10 * time.Millisecond, 15 * time.Second, 10 * time.Minute} {
		cfg, err := config.Load(nil, "", []string{"GATEHOUSE_HTTP_REQUEST_TIMEOUT=" + rt.String()})
		if err != nil {
			t.Fatal(err)
		}
		srv := (&Server{cfg: cfg}).httpServer(http.NotFoundHandler())
		if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
			t.Errorf("request timeout %v: http.Server %+v; want every timeout set", rt, srv)
		}
		if floor := srv.ReadTimeout + httpapi.LongestDeadline(rt); srv.WriteTimeout <= floor {
			t.Errorf("request timeout %v: WriteTimeout %v; want more than %v (reading the body and the longest route)", rt, srv.WriteTimeout, floor)
		}
	}
}

// TestDatabaseBoundDefaults: the store's own defaults (for a zero
// store.Options, as tools and tests open it) are the settings' defaults.
func TestDatabaseBoundDefaults(t *testing.T) {
	cfg, err := config.Load(nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Database
	if d.StatementTimeout != store.DefaultStatementTimeout || d.LockTimeout != store.DefaultLockTimeout ||
		d.IdleInTransactionTimeout != store.DefaultIdleInTransactionTimeout {
		t.Errorf("database.* defaults %v, %v, %v; store defaults %v, %v, %v", d.StatementTimeout, d.LockTimeout, d.IdleInTransactionTimeout,
			store.DefaultStatementTimeout, store.DefaultLockTimeout, store.DefaultIdleInTransactionTimeout)
	}
}
