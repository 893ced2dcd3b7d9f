package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// TestM2MClientAuthFailureLimits: failed client authentications at the
// token endpoint spend a budget per client id and one per client IP, taken
// before the secret is compared. 50 wrong secrets sent at once compare
// exactly the client's budget (10: 401 invalid_client) and refuse the rest
// with 429 and Retry-After; then the right secret is refused too, from any
// address, until the budget refills. A right secret gives its attempt back,
// and one address's failures across clients stop it alone. On each engine,
// and with the shared (database) limiter on SQLite too.
func TestM2MClientAuthFailureLimits(t *testing.T) {
	backends := []struct{ name, kind, backend string }{{"sqlite_memory", store.SQLite, "memory"}, {"sqlite_database", store.SQLite, "database"}}
	for _, kind := range storetest.Kinds(t) {
		if kind == store.Postgres {
			backends = append(backends, struct{ name, kind, backend string }{"postgres_database", kind, "database"})
		}
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			sys := newSystem(t, b.kind, servertest.Options{Serve: true, Settings: map[string]string{
				"GATEHOUSE_HTTP_TRUSTED_PROXIES":              "127.0.0.1/32",
				"GATEHOUSE_RATELIMIT_BACKEND":                 b.backend,
				"GATEHOUSE_RATELIMIT_M2M_FAILURES_PER_CLIENT": "10/10m",
				"GATEHOUSE_RATELIMIT_M2M_FAILURES_PER_IP":     "30/10m",
			}})
			e := envOf(t, sys, "m2mlimits")
			tokenURL := e.URL + e.authPath("/oauth/token")
			body := url.Values{"grant_type": {"client_credentials"}}.Encode()
			post := func(id, secret, ip string) (int, string) {
				req, err := http.NewRequest(http.MethodPost, tokenURL, strings.NewReader(body))
				if err != nil {
					return 0, err.Error()
				}
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Authorization", basicAuth(id, secret))
				req.Header.Set("X-Forwarded-For", ip)
				res, err := e.client.Do(req)
				if err != nil {
					return 0, err.Error()
				}
				res.Body.Close()
				return res.StatusCode, res.Header.Get("Retry-After")
			}

			// 50 wrong secrets at once, from one address.
			a, aSecret := e.m2mClient(t)
			statuses := make([]int, 50)
			retry := make([]string, 50)
			var wg sync.WaitGroup
			for i := range statuses {
				wg.Go(func() { statuses[i], retry[i] = post(a, "ghm_wrong", "203.0.113.1") })
			}
			wg.Wait()
			count := map[int]int{}
			for i, s := range statuses {
				count[s]++
				if s == http.StatusTooManyRequests && retry[i] == "" {
					t.Errorf("a 429 without Retry-After")
				}
			}
			if count[http.StatusUnauthorized] != 10 || count[http.StatusTooManyRequests] != 40 {
				t.Fatalf("50 parallel wrong secrets answered %v; want exactly 10 compared (401) and 40 refused (429)", count)
			}
			for _, ip := range []string{"203.0.113.1", "198.51.100.9"} {
				if s, ra := post(a, aSecret, ip); s != http.StatusTooManyRequests || ra == "" {
					t.Errorf("the right secret from %s once the client's budget is spent = %d (Retry-After %q); want 429", ip, s, ra)
				}
			}
			e.Clock.Advance(10 * time.Minute)
			if s, _ := post(a, aSecret, "198.51.100.9"); s != http.StatusOK {
				t.Errorf("the right secret once the budget refilled = %d; want 200", s)
			}

			// Right secrets give their attempt back: 9 failures, any number
			// of successes, and the 10th failure is still compared.
			b, bSecret := e.m2mClient(t)
			for range 9 {
				if s, _ := post(b, "ghm_wrong", "198.51.100.10"); s != http.StatusUnauthorized {
					t.Fatalf("a wrong secret within the budget = %d; want 401", s)
				}
			}
			for range 15 {
				if s, _ := post(b, bSecret, "198.51.100.10"); s != http.StatusOK {
					t.Fatalf("the right secret with budget left = %d; want 200", s)
				}
			}
			if s, _ := post(b, "ghm_wrong", "198.51.100.10"); s != http.StatusUnauthorized {
				t.Errorf("the 10th wrong secret after 15 right ones = %d; want 401 (compared)", s)
			}
			if s, _ := post(b, "ghm_wrong", "198.51.100.10"); s != http.StatusTooManyRequests {
				t.Errorf("the 11th wrong secret = %d; want 429", s)
			}

			// One address's failures across clients (and unknown ids): 30,
			// then that address is refused even with a right secret, while
			// another address is served.
			c, cSecret := e.m2mClient(t)
			ids := []string{c, "0190c7a2-5b1e-7c3d-9f00-000000000001", "0190c7a2-5b1e-7c3d-9f00-000000000002", "0190c7a2-5b1e-7c3d-9f00-000000000003"}
			for i := range 30 {
				if s, _ := post(ids[i%len(ids)], "ghm_wrong", "203.0.113.77"); s != http.StatusUnauthorized {
					t.Fatalf("failure %d from one address = %d; want 401", i+1, s)
				}
			}
			if s, ra := post(c, cSecret, "203.0.113.77"); s != http.StatusTooManyRequests || ra == "" {
				t.Errorf("the right secret from an address past its budget = %d (Retry-After %q); want 429", s, ra)
			}
			if s, _ := post(c, cSecret, "203.0.113.78"); s != http.StatusOK {
				t.Errorf("the right secret from another address = %d; want 200", s)
			}
		})
	}
}
