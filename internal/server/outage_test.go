package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// TestDatabaseOutageLogsOnceEachWay makes a serving system's database stop
// answering while its job queue polls it (the messages queue every 10 ms
// here) and requests that need it keep coming: the log gets one WARN when
// the outage starts, nothing from the queue, the other background loops or
// the failed requests (each answered 503) while it lasts, and one INFO
// once the database answers again. On PostgreSQL the connections go through a proxy
// that is cut (every pooled connection closed, every new one closed at
// once); on SQLite another process holds the database's write lock, as an
// operator's sqlite3 session or a backup tool in a transaction would.
func TestDatabaseOutageLogsOnceEachWay(t *testing.T) {
	for _, kind := range storetest.Kinds(t) {
		t.Run(kind, func(t *testing.T) {
			var cut func() (restore func())
			var failedConnects func() int
			settings := map[string]string{}
			if kind == store.Postgres {
				u, err := url.Parse(storetest.PostgresURL(t))
				if err != nil {
					t.Fatal(err)
				}
				p := newCutProxy(t, u.Host)
				u.Host = p.addr
				settings["GATEHOUSE_DATABASE_URL"] = u.String()
				cut = func() func() { p.setCut(true); return func() { p.setCut(false) } }
				failedConnects = p.refusedCount
			}
			sys := servertest.New(t, kind, servertest.Options{Serve: true, Settings: settings})
			if kind == store.SQLite {
				cut = func() func() { return lockSQLite(t, filepath.Join(sys.Config.DataDir, "gatehouse.db")) }
			}
			ws, _ := sys.Workspace(t, "Acme")
			app := sys.App(t, ws.ID, "Shop", nil)
			// Cut only once the log has been quiet a while: a probe that
			// found the database up is trusted for a second (trustProbe), and
			// one kicked while another ran may end up to its timeout (3 s)
			// after the last line; cut within that and the outage's first
			// lines pass (seen under a loaded full test run).
			quiet(t, sys, 5500*time.Millisecond)
			from := len(sys.Logs.Lines())

			restore := cut()
			// Sign-ins keep coming: each needs to write, and fails. On
			// PostgreSQL they find it unavailable at once, which starts the
			// check as well as the queue's failures do. On SQLite each waits
			// for the lock (database.lock_timeout) and times out: a timeout
			// alone is no outage (contention is not), so they come once the
			// outage is known, and are left out of the log.
			const requests = 20
			statuses := make(chan int, requests)
			signIns := func() {
				for i := range requests {
					go func() {
						res, err := http.Post(sys.URL+"/v1/auth/"+app.ID+"/otps/login", "application/json",
							strings.NewReader(fmt.Sprintf(`{"identifier":"user%d@example.com"}`, i)))
						if err != nil {
							statuses <- 0
							return
						}
						_, _ = io.Copy(io.Discard, res.Body)
						res.Body.Close()
						statuses <- res.StatusCode
					}()
				}
			}
			if kind == store.Postgres {
				signIns()
			}
			waitLine(t, sys, from, "database unreachable")
			if kind == store.SQLite {
				signIns()
			}
			for range requests {
				if code := <-statuses; code != http.StatusServiceUnavailable {
					t.Errorf("a sign-in during the outage answered %d; want 503", code)
				}
			}
			if failedConnects != nil {
				// Dozens of the queue's polls fail while the outage lasts:
				// each would have been an ERROR line.
				deadline := time.Now().Add(30 * time.Second)
				for failedConnects() < 40 && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if n := failedConnects(); n < 40 {
					t.Fatalf("%d connections to the database failed in 30 s; want at least 40", n)
				}
			}
			restore()
			back := waitLine(t, sys, from, "database reachable again")

			lines := sys.Logs.Lines()[from:]
			var during []string
			for _, l := range lines {
				during = append(during, l)
				if l == back {
					break
				}
			}
			var loud []string
			for _, l := range during {
				if level(l) == "WARN" || level(l) == "ERROR" {
					loud = append(loud, l)
				}
			}
			if len(loud) != 1 || !strings.Contains(loud[0], "database unreachable") {
				t.Errorf("warnings and errors during the outage = %d:\n%s\nwant the one saying the database is unreachable", len(loud), strings.Join(loud, "\n"))
			}
			var rec struct {
				Level    string
				LeftOut  int    `json:"log_lines_left_out"`
				Duration string `json:"unreachable_for"`
			}
			if err := json.Unmarshal([]byte(back), &rec); err != nil || rec.Level != "INFO" || rec.Duration == "" {
				t.Errorf("line saying the database is back = %s (%v); want an INFO with unreachable_for", back, err)
			}
			// The queue did fail while the database was away, and its lines
			// were left out rather than never written.
			if rec.LeftOut < 1 {
				t.Errorf("log_lines_left_out = %d; want the queue's failures counted", rec.LeftOut)
			}
			if n := len(sys.Logs.Lines("database reachable again")); n != 1 {
				t.Errorf("%d lines say the database is back; want 1", n)
			}
		})
	}
}

// waitLine waits (up to a minute) for a log line after line from holding
// part, and returns it.
func waitLine(t *testing.T, sys *servertest.System, from int, part string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		lines := sys.Logs.Lines()
		for _, l := range lines[min(from, len(lines)):] {
			if strings.Contains(l, part) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line says %q within a minute; log since the outage:\n%s", part, strings.Join(lines[min(from, len(lines)):], "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// quiet waits (up to a minute) until no warning or error has been logged
// for d.
func quiet(t *testing.T, sys *servertest.System, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	seen, since := len(sys.Logs.Lines()), time.Now()
	for time.Since(since) < d {
		if time.Now().After(deadline) {
			t.Fatalf("the log did not go quiet for %s within a minute", d)
		}
		time.Sleep(50 * time.Millisecond)
		lines := sys.Logs.Lines()
		for _, l := range lines[min(seen, len(lines)):] {
			if level(l) == "WARN" || level(l) == "ERROR" {
				since = time.Now()
			}
		}
		seen = len(lines)
	}
}

func level(line string) string {
	var rec struct{ Level string }
	_ = json.Unmarshal([]byte(line), &rec)
	return rec.Level
}

// lockSQLite takes the database's write lock from a connection of its own
// and returns what releases it.
func lockSQLite(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err == nil {
		_, err = conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE")
	}
	if err != nil {
		_ = db.Close()
		t.Fatalf("lock the database: %v", err)
	}
	return func() {
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			t.Errorf("release the database: %v", err)
		}
		_ = conn.Close()
		_ = db.Close()
	}
}

// cutProxy forwards TCP connections to target until cut: then it closes
// every open connection and closes each new one as soon as it is accepted
// (counting them), as a database behind a dead link or a restarting server
// would look.
type cutProxy struct {
	addr, target string

	mu      sync.Mutex
	cut     bool
	refused int
	conns   map[net.Conn]struct{}
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); p.setCut(true) })
	return p
}

func (p *cutProxy) forward(c net.Conn) {
	p.mu.Lock()
	if p.cut {
		p.refused++
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); _ = up.Close(); _ = c.Close() }()
	_, _ = io.Copy(c, up)
	_ = up.Close()
	_ = c.Close()
}

func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
		}
		clear(p.conns)
	}
}

func (p *cutProxy) refusedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}
