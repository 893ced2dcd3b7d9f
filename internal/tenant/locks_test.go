package tenant_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// TestMemberChangeDoesNotDeadlockWithCreates (PostgreSQL): a change made by
// an admin holds the admin's member row (the role it read, FOR SHARE) and
// then inserts rows that reference the workspace; a role change by the owner
// meanwhile locks the workspace row and waits for the admin's member row.
// The workspace lock must not block those inserts (FOR NO KEY UPDATE, not
// FOR UPDATE, which conflicts with a foreign key's check), or the two
// deadlock and one of them fails.
func TestMemberChangeDoesNotDeadlockWithCreates(t *testing.T) {
	servertest.ForEach(t, servertest.Options{}, func(t *testing.T, sys *servertest.System) {
		if sys.DB.Kind() != store.Postgres {
			t.Skip("SQLite runs one write transaction at a time")
		}
		ctx := t.Context()
		tm := newTeam(t, sys, "Locks")
		conn, err := pgx.Connect(ctx, sys.Config.Database.URL)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = conn.Close(context.Background()) })

		// The admin's change, by hand, in the order CreateApp takes its locks:
		// first the role it is allowed by...
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(context.Background()) }()
		var role string
		if err := tx.QueryRow(ctx, `SELECT role FROM workspace_members WHERE workspace_id = $1 AND id = $2 FOR SHARE`,
			tm.ws.ID, tm.admin.ID).Scan(&role); err != nil || role != access.RoleAdmin {
			t.Fatalf("read the admin's role = %q, %v", role, err)
		}
		// ...then the owner demotes the admin: it locks the workspace and waits.
		demoted := make(chan error, 1)
		go func() {
			_, err := sys.Tenants.ChangeMemberRole(ctx, tm.pOwner, tm.ws.ID, tm.admin.ID, access.RoleMember)
			demoted <- err
		}()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
				AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
				t.Fatalf("pg_stat_activity: %v", err)
			}
			if n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the demotion never waited for the admin's member row")
			}
		}
		// ...and then the admin's change inserts a row of the workspace.
		app := tenant.App{ID: "01a20000-0000-7000-8000-00000000a0a0", WorkspaceID: tm.ws.ID, Name: "Locked", Slug: "locked",
			Origin: "https://locked.example", EmailAuthType: "magic", AccessExpiration: 900, RefreshExpiration: 3600,
			MagicLinkExpiration: 600, CreatedAt: sys.Clock.Now(), UpdatedAt: sys.Clock.Now()}
		if _, err := tx.Exec(ctx, `INSERT INTO apps (id, workspace_id, name, slug, origin, email_auth_type, access_expiration,
			refresh_expiration, magic_link_expiration, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			app.ID, app.WorkspaceID, app.Name, app.Slug, app.Origin, app.EmailAuthType, app.AccessExpiration,
			app.RefreshExpiration, app.MagicLinkExpiration, app.CreatedAt, app.UpdatedAt); err != nil {
			t.Fatalf("insert a row of the locked workspace = %v; want it to go ahead", err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatalf("commit the admin's change: %v", err)
		}
		if err := <-demoted; err != nil {
			t.Errorf("ChangeMemberRole after the admin's change = %v; want nil", err)
		}
		if got := roles(t, sys, tm.ws.ID)[tm.admin.ID]; got != access.RoleMember {
			t.Errorf("admin's role = %q; want member", got)
		}
	})
}
