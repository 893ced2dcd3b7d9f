package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// TestAuditLog: entries are appended, filtered and paged newest first, and
// the database itself refuses to change or delete one, on both engines.
func TestAuditLog(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
		var ids []string
		for i, action := range []string{"app.created", "app.updated", "api_key.created", "app.updated"} {
			id := uuid.Must(uuid.NewV7()).String()
			ids = append(ids, id)
			e := store.AuditEntry{ID: id, WorkspaceID: "ws1", AppID: "app1", ActorKind: "workspace_secret", ActorID: "sec1",
				MemberID: "mem1", Action: action, TargetType: "app", TargetID: "app1", After: []byte(`{"n":1}`), CreatedAt: at.Add(time.Duration(i) * time.Second)}
			if i == 3 {
				e.AppID, e.ActorID, e.MemberID, e.Before = "app2", "sec2", "mem2", []byte(`{"n":0}`)
			}
			if err := db.AddAuditEntry(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.AddAuditEntry(ctx, store.AuditEntry{ID: uuid.Must(uuid.NewV7()).String(), WorkspaceID: "ws2", ActorKind: "operator",
			Action: "app.created", TargetType: "app", TargetID: "x", CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
		list := func(f store.AuditFilter) []string {
			t.Helper()
			if f.Limit == 0 {
				f.Limit = 10
			}
			es, err := db.ListAuditEntries(ctx, "ws1", f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, e := range es {
				out = append(out, e.ID)
			}
			return out
		}
		same := func(name string, got, want []string) {
			t.Helper()
			if len(got) != len(want) {
				t.Errorf("%s = %v; want %v", name, got, want)
				return
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%s = %v; want %v", name, got, want)
					return
				}
			}
		}
		same("all, newest first", list(store.AuditFilter{}), []string{ids[3], ids[2], ids[1], ids[0]})
		same("an action", list(store.AuditFilter{Action: "app.updated"}), []string{ids[3], ids[1]})
		same("a family", list(store.AuditFilter{Action: "app."}), []string{ids[3], ids[1], ids[0]})
		same("an app", list(store.AuditFilter{AppID: "app2"}), []string{ids[3]})
		same("an actor by member", list(store.AuditFilter{ActorID: "mem1"}), []string{ids[2], ids[1], ids[0]})
		same("an actor by credential", list(store.AuditFilter{ActorID: "sec2"}), []string{ids[3]})
		same("a page", list(store.AuditFilter{Limit: 2}), []string{ids[3], ids[2]})
		same("the next page", list(store.AuditFilter{Limit: 2, Before: ids[2]}), []string{ids[1], ids[0]})
		es, err := db.ListAuditEntries(ctx, "ws1", store.AuditFilter{Limit: 1})
		if err != nil || string(es[0].Before) != `{"n":0}` || string(es[0].After) != `{"n":1}` || !es[0].CreatedAt.Equal(at.Add(3*time.Second)) {
			t.Errorf("entry = %+v, %v", es, err)
		}

		upd, del := db.TamperAuditLog(ctx)
		if upd == nil || del == nil {
			t.Errorf("tampering: update err = %v, delete err = %v; want both refused", upd, del)
		}
		same("after tampering", list(store.AuditFilter{Action: "app."}), []string{ids[3], ids[1], ids[0]})
	})
}
