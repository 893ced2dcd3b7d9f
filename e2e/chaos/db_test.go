package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver

	"github.com/gatehouse-auth/gatehouse/e2e/gatehousebin"
)

// The checks read the database directly, as an operator would: what the
// server stored is the truth the workload's ledger is held against.

func openDB(t *testing.T, dbURL, dir string) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	if dbURL != "" {
		db, err = sql.Open("pgx", dbURL)
	} else {
		path := (&url.URL{Path: filepath.Join(dir, "gatehouse.db")}).EscapedPath()
		db, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	}
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

type challengeRow struct {
	id, user, method, recipient, status string
	remaining                           int
	expires                             time.Time
	completed, collected                bool
}

type deliveryRow struct {
	id, endpoint, event, status string
	attempts, max               int
	late                        bool // delivered only after the snapshot
}

type attemptRow struct {
	delivery string
	attempt  int
	status   int // 0: no response
	err      string
}

type rateRow struct {
	tat, expires int64
}

type userRow struct {
	id, status, email, phone string
	emailVerified            bool
	phoneVerified            bool
}

// snapshot is the whole state the checks need, read in one transaction.
type snapshot struct {
	at         time.Time
	users      map[string]userRow
	challenges map[string]challengeRow
	sessions   map[string]sessionRow
	refresh    map[string]refreshRow
	events     map[string]eventRow
	deliveries []deliveryRow
	attempts   map[string][]attemptRow // by delivery id
	rates      map[string]rateRow
	outbox     []outboxRow
	jobs       map[string]int // "kind state" -> count
}

type sessionRow struct {
	id, user, method string
	revoked          bool
}

type refreshRow struct {
	id, session   string
	used, hasSucc bool
}

type eventRow struct {
	id, typ string
	body    []byte
}

type outboxRow struct {
	recipient, code, link string
}

func readSnapshot(t *testing.T, db *sql.DB) *snapshot {
	t.Helper()
	ctx := context.Background()
	tx, err := beginSnapshot(ctx, db)
	if err != nil {
		t.Fatalf("begin snapshot: %v", err)
	}
	defer func() { _ = tx.Rollback() }()
	s := &snapshot{at: time.Now(), users: map[string]userRow{}, challenges: map[string]challengeRow{},
		sessions: map[string]sessionRow{}, refresh: map[string]refreshRow{}, events: map[string]eventRow{},
		attempts: map[string][]attemptRow{}, rates: map[string]rateRow{}, jobs: map[string]int{}}
	q := func(query string, scan func(r *sql.Rows) error) {
		t.Helper()
		rows, err := tx.QueryContext(ctx, query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	q(`SELECT id, status, COALESCE(email, ''), COALESCE(phone, ''), email_verified, phone_verified FROM app_users`, func(r *sql.Rows) error {
		var u userRow
		err := r.Scan(&u.id, &u.status, &u.email, &u.phone, &u.emailVerified, &u.phoneVerified)
		s.users[u.id] = u
		return err
	})
	q(`SELECT id, app_user_id, method, recipient, status, remaining_attempts, expires_at,
		CASE WHEN completed_at IS NULL THEN 0 ELSE 1 END, CASE WHEN collected_at IS NULL THEN 0 ELSE 1 END FROM challenges`,
		func(r *sql.Rows) error {
			var c challengeRow
			var completed, collected int
			err := r.Scan(&c.id, &c.user, &c.method, &c.recipient, &c.status, &c.remaining, &c.expires, &completed, &collected)
			c.completed, c.collected = completed == 1, collected == 1
			s.challenges[c.id] = c
			return err
		})
	q(`SELECT id, app_user_id, method, CASE WHEN revoked_at IS NULL THEN 0 ELSE 1 END FROM sessions`, func(r *sql.Rows) error {
		var x sessionRow
		var revoked int
		err := r.Scan(&x.id, &x.user, &x.method, &revoked)
		x.revoked = revoked == 1
		s.sessions[x.id] = x
		return err
	})
	q(`SELECT id, session_id, CASE WHEN used_at IS NULL THEN 0 ELSE 1 END, CASE WHEN successor_sealed IS NULL THEN 0 ELSE 1 END
		FROM refresh_tokens`, func(r *sql.Rows) error {
		var x refreshRow
		var used, succ int
		err := r.Scan(&x.id, &x.session, &used, &succ)
		x.used, x.hasSucc = used == 1, succ == 1
		s.refresh[x.id] = x
		return err
	})
	q(`SELECT id, event_type, body FROM webhook_events`, func(r *sql.Rows) error {
		var e eventRow
		var body string
		err := r.Scan(&e.id, &e.typ, &body)
		e.body = []byte(body)
		s.events[e.id] = e
		return err
	})
	q(`SELECT id, endpoint_id, event_id, status, attempts, max_attempts FROM webhook_deliveries`, func(r *sql.Rows) error {
		var d deliveryRow
		err := r.Scan(&d.id, &d.endpoint, &d.event, &d.status, &d.attempts, &d.max)
		s.deliveries = append(s.deliveries, d)
		return err
	})
	q(`SELECT delivery_id, attempt, COALESCE(response_status, 0), error FROM webhook_attempts`, func(r *sql.Rows) error {
		var a attemptRow
		err := r.Scan(&a.delivery, &a.attempt, &a.status, &a.err)
		s.attempts[a.delivery] = append(s.attempts[a.delivery], a)
		return err
	})
	q(`SELECT key, tat, expires_at FROM rate_limits`, func(r *sql.Rows) error {
		var k string
		var x rateRow
		err := r.Scan(&k, &x.tat, &x.expires)
		s.rates[k] = x
		return err
	})
	q(`SELECT recipient, code, link FROM outbox_messages`, func(r *sql.Rows) error {
		var o outboxRow
		err := r.Scan(&o.recipient, &o.code, &o.link)
		s.outbox = append(s.outbox, o)
		return err
	})
	q(`SELECT kind, state, COUNT(*) FROM river_job GROUP BY kind, state`, func(r *sql.Rows) error {
		var kind, state string
		var n int
		err := r.Scan(&kind, &state, &n)
		s.jobs[kind+" "+state] = n
		return err
	})
	return s
}

// beginSnapshot opens a read transaction that sees one consistent state:
// REPEATABLE READ on PostgreSQL; on SQLite (WAL) every read transaction does.
func beginSnapshot(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	if strings.Contains(fmt.Sprintf("%T", db.Driver()), "sqlite") {
		return db.BeginTx(ctx, nil)
	}
	return db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
}

// settled reports whether the system has finished what the kills left:
// every delivery delivered, the sentinel link expired, and every challenge
// whose time ran out closed by the sweep. why says what is missing.
func settled(db *sql.DB, fx fixture) (ok bool, why string) {
	ctx := context.Background()
	var problems []string
	rows, err := db.QueryContext(ctx, `SELECT status, COUNT(*) FROM webhook_deliveries GROUP BY status`)
	if err != nil {
		return false, err.Error()
	}
	byStatus := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			rows.Close()
			return false, err.Error()
		}
		byStatus[st] = n
	}
	rows.Close()
	for st, n := range byStatus {
		if st != "delivered" {
			problems = append(problems, fmt.Sprintf("%d deliveries %s", n, st))
		}
	}
	// Every message committed is sent (or dropped, its challenge no longer
	// pending) in the end, whichever process was killed while it held it:
	// none is left queued, none given up (the dev outbox never refuses).
	var queued, failed int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FILTER (WHERE failed_at IS NULL), COUNT(*) FILTER (WHERE failed_at IS NOT NULL)
		FROM queued_messages`).Scan(&queued, &failed); err != nil {
		return false, "queued messages: " + err.Error()
	}
	if queued > 0 {
		problems = append(problems, fmt.Sprintf("%d messages still queued", queued))
	}
	if failed > 0 {
		problems = append(problems, fmt.Sprintf("%d messages given up", failed))
	}
	var sentinel string
	if err := db.QueryRowContext(ctx, `SELECT status FROM challenges WHERE id = '`+fx.sentinelChallID+`'`).Scan(&sentinel); err != nil {
		return false, "sentinel challenge: " + err.Error()
	}
	if sentinel != "expired" {
		problems = append(problems, "the sentinel link is "+sentinel)
	}
	rows, err = db.QueryContext(ctx, `SELECT expires_at FROM challenges WHERE status = 'pending'`)
	if err != nil {
		return false, err.Error()
	}
	overdue := 0
	for rows.Next() {
		var exp time.Time
		if err := rows.Scan(&exp); err != nil {
			rows.Close()
			return false, err.Error()
		}
		if exp.Before(time.Now().Add(-sweepSlack)) {
			overdue++
		}
	}
	rows.Close()
	if overdue > 0 {
		problems = append(problems, fmt.Sprintf("%d challenges expired over %s ago still pending", overdue, sweepSlack))
	}
	sort.Strings(problems)
	return len(problems) == 0, strings.Join(problems, "; ")
}

// drain waits until the system has settled after the last restart.
func drain(t *testing.T, db *sql.DB, fx fixture, p *proc) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, why := settled(db, fx)
		if ok {
			return time.Since(start)
		}
		select {
		case <-p.Done:
			t.Fatalf("the last process exited while settling (%v); log:\n%s", p.Cmd.ProcessState, gatehousebin.Tail(p.Log(), 50))
		case <-time.After(500 * time.Millisecond):
		}
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("not settled 3 minutes after the last restart: %s; queue jobs: %v; log's end:\n%s", why, jobStates(db), gatehousebin.Tail(p.Log(), 50))
		}
	}
}

// waitDelivered waits for the deliveries of events the snapshot caught
// being made (the sweep may have just expired a challenge).
func waitDelivered(t *testing.T, db *sql.DB, s *snapshot, p *proc) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		pending := map[string]bool{}
		for _, d := range s.deliveries {
			if d.status != "delivered" {
				pending[d.id] = true
			}
		}
		if len(pending) == 0 {
			return
		}
		rows, err := db.Query(`SELECT id, status FROM webhook_deliveries`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id, st string
			if err := rows.Scan(&id, &st); err != nil {
				t.Fatal(err)
			}
			if st == "delivered" {
				delete(pending, id)
			}
		}
		rows.Close()
		if len(pending) == 0 {
			for i, d := range s.deliveries {
				if d.status != "delivered" {
					s.deliveries[i].status, s.deliveries[i].late = "delivered", true
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries of the snapshot not delivered a minute later; log's end:\n%s", len(pending), gatehousebin.Tail(p.Log(), 50))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// jobStates counts the queue's jobs by kind and state, for failure messages.
func jobStates(db *sql.DB) map[string]int {
	out := map[string]int{}
	rows, err := db.Query(`SELECT kind, state, COUNT(*) FROM river_job GROUP BY kind, state`)
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var kind, state string
		var n int
		if rows.Scan(&kind, &state, &n) == nil {
			out[kind+" "+state] = n
		}
	}
	return out
}
