package appuser_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// TestImport checks the service rules of Import that the HTTP scenarios do
// not reach: access before input, the app's identifier kinds, the person
// shared across a workspace's apps, required fields, and the batch bound.
func TestImport(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		ws, _ := sys.Workspace(t, "import")
		app := newApp(t, sys, ws.ID, "shop", nil)
		emailOnly := newApp(t, sys, ws.ID, "mail only", func(s *tenant.AppSettings) { s.AllowedIdentifiers = &[]string{"email"} })

		viewer := member(t, sys, ws.ID, "viewer@example.com", access.RoleMember)
		bad := []appuser.ImportRow{{Identifier: "not an address"}}
		if _, err := sys.Users.Import(ctx, viewer, app, bad); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("Import(member, invalid rows) = %v; want ErrForbidden before the rows are judged", err)
		}
		admin := member(t, sys, ws.ID, "admin@example.com", access.RoleAdmin)
		res, err := sys.Users.Import(ctx, admin, app, []appuser.ImportRow{{Email: "ann@example.com"}})
		if err != nil || len(res) != 1 || res[0].Outcome != appuser.ImportCreated || res[0].User.Status != appuser.StatusImported {
			t.Fatalf("Import(admin) = %+v, %v; want one user created, imported", res, err)
		}
		// Required metadata (company) may be missing: the user fills it in at sign-in.
		if got := res[0].User.Meta; len(got) != 0 {
			t.Errorf("imported user meta = %v; want none", got)
		}

		_, err = sys.Users.Import(ctx, op, emailOnly, []appuser.ImportRow{{Email: "ok@example.com"}, {Email: "b@example.com", Phone: "+14155552671"}})
		var invalid *appuser.ImportInvalidError
		if !errors.As(err, &invalid) || fmt.Sprint(invalid.Rows) != fmt.Sprint([]appuser.RowError{{Index: 1, Field: "phone", Code: "invalid_identifier",
			Reason: "this app does not accept phone numbers"}}) {
			t.Errorf("Import(a phone into an e-mail-only app) = %v (%+v); want row 1 phone refused", err, invalid)
		}

		// The same person in another app of the workspace keeps one base user.
		res2, err := sys.Users.Import(ctx, op, emailOnly, []appuser.ImportRow{{Identifier: "Ann@Example.com"}})
		if err != nil || len(res2) != 1 || res2[0].Outcome != appuser.ImportCreated || res2[0].User.UserID != res[0].User.UserID ||
			res2[0].User.ID == res[0].User.ID {
			t.Errorf("Import(ann into a second app) = %+v, %v; want a new app user of the same person %s", res2, err, res[0].User.UserID)
		}

		rows := make([]appuser.ImportRow, appuser.MaxImportRows+1)
		for i := range rows {
			rows[i] = appuser.ImportRow{Email: fmt.Sprintf("u%d@example.com", i)}
		}
		var inv *errs.Invalid
		if _, err := sys.Users.Import(ctx, op, app, rows); !errors.As(err, &inv) || inv.Field != "users" {
			t.Errorf("Import(%d rows) = %v; want users invalid", len(rows), err)
		}
		if _, err := sys.Users.Import(ctx, op, app, nil); !errors.As(err, &inv) || inv.Field != "users" {
			t.Errorf("Import(no rows) = %v; want users invalid", err)
		}
	})
}

// TestImportConcurrently sends one batch twice at once: on PostgreSQL the
// second transaction meets the first's users at insert, and Import tries
// again and answers exists, so both succeed with the same ids and every
// user is created once.
func TestImportConcurrently(t *testing.T) {
	servertest.ForEach(t, opts, func(t *testing.T, sys *servertest.System) {
		ws, _ := sys.Workspace(t, "import-race")
		app := newApp(t, sys, ws.ID, "shop", nil)
		rows := make([]appuser.ImportRow, 200)
		for i := range rows {
			rows[i] = appuser.ImportRow{Email: fmt.Sprintf("racer%03d@example.com", i)}
		}
		var wg sync.WaitGroup
		results := make([][]appuser.ImportResult, 2)
		errs := make([]error, 2)
		for i := range results {
			wg.Go(func() { results[i], errs[i] = sys.Users.Import(t.Context(), op, app, rows) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("import %d = %v; want both to succeed", i, err)
			}
		}
		created := 0
		for j := range rows {
			a, b := results[0][j], results[1][j]
			if a.User.ID != b.User.ID || a.Index != j || b.Index != j {
				t.Errorf("row %d answered %s and %s; want one user", j, a.User.ID, b.User.ID)
			}
			for _, r := range []appuser.ImportResult{a, b} {
				if r.Outcome == appuser.ImportCreated {
					created++
				}
			}
		}
		if created != len(rows) {
			t.Errorf("created %d users in all; want %d, each once", created, len(rows))
		}
	})
}
