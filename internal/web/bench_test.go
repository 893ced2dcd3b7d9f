package web_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// BenchmarkConsolePages renders the console's pages over HTTP for an app
// of GATEHOUSE_BENCH_USERS users (default 100 000), each with a session:
// the workspace home (counts), the users list, a search by the start of
// an address, a pasted id, a user's detail, a deep page of the list and
// the audit log. docs/performance.md has the figures. Seeding takes a few
// minutes; run it alone:
//
//	go test ./internal/web -run '^$' -bench ConsolePages -benchtime 200x
func BenchmarkConsolePages(b *testing.B) {
	n := 100_000
	if v := os.Getenv("GATEHOUSE_BENCH_USERS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	for _, kind := range storetest.Kinds(b) {
		b.Run(kind, func(b *testing.B) {
			sys := servertest.New(b, kind, servertest.Options{Serve: true})
			ws, owner := sys.Workspace(b, "Acme")
			app := sys.App(b, ws.ID, "Shop", nil)
			start := time.Now()
			ids := seedUsers(b, sys, app, n)
			b.Logf("%s: %d users and sessions seeded in %s", kind, n, time.Since(start).Round(time.Second))
			o := signIn(b, sys, owner.Email)
			ap := "/console/w/" + ws.ID + "/apps/" + app.ID
			pages := map[string]string{
				"home":      "/console/w/" + ws.ID,
				"users":     ap + "/users",
				"search":    ap + "/users?q=user5000",
				"pasted_id": ap + "/users?q=" + ids[n/2],
				"user":      ap + "/users/" + ids[n/3],
				"deep_page": ap + "/users?page=" + strconv.Itoa(n/25/2),
				"audit_log": "/console/w/" + ws.ID + "/audit",
				"settings":  ap,
			}
			for name, path := range pages {
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						req, _ := http.NewRequest("GET", sys.URL+path, nil)
						req.Header.Set("Cookie", "__Host-gatehouse_console="+o.cookie)
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							b.Fatal(err)
						}
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							b.Fatalf("%s: %d", path, resp.StatusCode)
						}
					}
				})
			}
		})
	}
}

// seedUsers imports n users in batches (appuser.Import, the API's bulk
// path) and gives each a live session, written directly.
func seedUsers(b *testing.B, sys *servertest.System, app store.App, n int) []string {
	ctx := context.Background()
	ids := make([]string, 0, n)
	for i := 0; i < n; i += appuser.MaxImportRows {
		rows := make([]appuser.ImportRow, 0, appuser.MaxImportRows)
		for j := i; j < min(i+appuser.MaxImportRows, n); j++ {
			rows = append(rows, appuser.ImportRow{Identifier: fmt.Sprintf("user%d@example.com", j), EmailVerified: true})
		}
		res, err := sys.Users.Import(ctx, access.Operator(), app, rows)
		if err != nil {
			b.Fatalf("import: %v", err)
		}
		now := time.Now()
		err = sys.DB.Tx(ctx, func(tx *store.Tx) error {
			for _, r := range res {
				ids = append(ids, r.User.ID)
				if err := tx.CreateSession(ctx, store.Session{ID: uuid.Must(uuid.NewV7()).String(), AppID: app.ID, AppUserID: r.User.ID,
					Method: "email_otp", CreatedAt: now, LastActiveAt: now, ExpiresAt: now.Add(24 * time.Hour)}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatalf("sessions: %v", err)
		}
	}
	return ids
}
