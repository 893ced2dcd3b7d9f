package signin_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// statementCounter records the PostgreSQL statements run under a context
// that names an operation (counting), so that background work (the job
// queue's polls, the key reload) is left out.
type statementCounter struct {
	mu    sync.Mutex
	ops   map[string][]string
	trips map[string]int // round trips
}

type opKey struct{}

func (c *statementCounter) see(ctx context.Context, sql string, pipelined bool) {
	op, _ := ctx.Value(opKey{}).(string)
	if op == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	line := firstLine(sql)
	if pipelined {
		line = "+ " + line
	} else {
		c.trips[op]++
	}
	c.ops[op] = append(c.ops[op], line)
}

func (c *statementCounter) tripsOf(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trips[op]
}

func (c *statementCounter) of(op string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ops[op]...)
}

func firstLine(sql string) string {
	sql = strings.TrimSpace(sql)
	if i := strings.IndexByte(sql, '\n'); i > 0 {
		sql = sql[:i]
	}
	return sql
}

// TestStatementsPerOperation counts what a code login, a refresh and a
// current_user ask of PostgreSQL, BEGIN and COMMIT included:
// docs/performance.md records the figures, and the bounds here keep a
// change from adding a statement to the hot path unnoticed (raise them only
// with a reason written there). The send step (the Sender, after the
// commit) adds one delete for many sent messages at once (and a read of the
// challenge when the sweep, not the direct try, sends): not counted here.
func TestStatementsPerOperation(t *testing.T) {
	c := &statementCounter{ops: map[string][]string{}, trips: map[string]int{}}
	opts := options(func(o *servertest.Options) { o.OnStatement = c.see })
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		if sys.DB.Kind() != store.Postgres {
			t.Skip("statements are counted on PostgreSQL, whose driver reports each one")
		}
		e := newEnv(t, sys, nil)
		op := func(name string) context.Context { return context.WithValue(t.Context(), opKey{}, name) }

		res, err := e.SignIn.SendOTP(op("send, new user"), e.app, "new@example.com", nil, e.client)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := e.Mail.Last("new@example.com")
		if _, err := e.SignIn.VerifyOTP(op("verify, first sign-in"), e.app, res.UserID, m.Code, e.client); err != nil {
			t.Fatal(err)
		}
		res, err = e.SignIn.SendOTP(op("send, known user"), e.app, "new@example.com", nil, e.client)
		if err != nil {
			t.Fatal(err)
		}
		m, _ = e.Mail.Last("new@example.com")
		ts, err := e.SignIn.VerifyOTP(op("verify, known user"), e.app, res.UserID, m.Code, e.client)
		if err != nil {
			t.Fatal(err)
		}
		// A new address once the app's endpoints and templates are known: the
		// person and the user go out with the challenge's batch.
		if _, err := e.SignIn.SendOTP(op("send, another new user"), e.app, "another@example.com", nil, e.client); err != nil {
			t.Fatal(err)
		}
		if _, err := e.SignIn.Refresh(op("refresh"), e.app, ts.Refresh); err != nil {
			t.Fatal(err)
		}
		if _, err := e.SignIn.Authenticate(op("current_user"), e.app, ts.Access); err != nil {
			t.Fatal(err)
		}
		// Statements (BEGIN and COMMIT included) and round trips: the
		// pipelined transaction (store.Tx.Deferred) sends BEGIN with the
		// first statement and the deferred writes with the next one or the
		// COMMIT; a transaction that only queued writes sends them without
		// BEGIN and COMMIT (one implicit transaction: the sends once the
		// app's endpoints and templates are known). The first send of an
		// app also reads its templates.
		for _, b := range []struct {
			op         string
			max, trips int
		}{{"send, new user", 11, 6}, {"verify, first sign-in", 7, 3}, {"send, known user", 5, 4}, {"verify, known user", 7, 3},
			{"send, another new user", 7, 4},
			{"refresh", 2, 2}, {"current_user", 1, 1}} {
			got := c.of(b.op)
			t.Logf("%s: %d statements in %d round trips (+: in the one before):\n  %s", b.op, len(got), c.tripsOf(b.op),
				strings.Join(got, "\n  "))
			if len(got) > b.max {
				t.Errorf("%s ran %d statements; want at most %d (see docs/performance.md)", b.op, len(got), b.max)
			}
			if n := c.tripsOf(b.op); n > b.trips {
				t.Errorf("%s took %d round trips; want at most %d (see docs/performance.md)", b.op, n, b.trips)
			}
			if len(got) == 0 {
				t.Errorf("%s ran no statement: the counter is not wired", b.op)
			}
		}
	})
}
