package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

// TestDemotedAdminCannotFinishAnAppUpdate: an admin's app update whose body
// is still on its way when the admin is demoted is refused. The role is read
// in the transaction that would write the app, after the body has arrived,
// not when the credential was checked.
func TestDemotedAdminCannotFinishAnAppUpdate(t *testing.T) {
	forEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		e := envOf(t, sys, "Acme")
		ctx := context.Background()
		admin, err := e.Tenants.AddMember(ctx, servertest.Operator, e.ws.ID, "admin@acme.test", "Ada", access.RoleAdmin)
		if err != nil {
			t.Fatalf("AddMember: %v", err)
		}
		adminSecret := e.workspaceSecret(t, e.ws.ID, admin.ID)
		appPath := "/v1/workspaces/" + e.ws.ID + "/apps/" + e.app.ID

		// The update starts: headers and the first half of the body.
		body, w := io.Pipe()
		req, err := http.NewRequest("PATCH", e.URL+appPath, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+adminSecret)
		req.Header.Set("Content-Type", "application/json")
		done := make(chan *http.Response, 1)
		go func() {
			res, err := e.client.Do(req)
			if err != nil {
				t.Errorf("PATCH %s: %v", appPath, err)
				done <- nil
				return
			}
			done <- res
		}()
		if _, err := io.WriteString(w, `{"name":`); err != nil {
			t.Fatal(err)
		}

		// Meanwhile the owner demotes the admin.
		scenario{method: "PATCH", path: "/v1/workspaces/" + e.ws.ID + "/members/" + admin.ID, headers: bearer(e.wsSecret),
			body: map[string]any{"role": "member"}, wantStatus: 200}.run(t, e)

		// The rest of the body arrives.
		if _, err := io.WriteString(w, `"Renamed by a former admin"}`); err != nil {
			t.Fatal(err)
		}
		_ = w.Close()
		res := <-done
		if res == nil {
			return
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			raw, _ := io.ReadAll(res.Body)
			t.Fatalf("PATCH %s by the demoted admin = %d %s; want 403", appPath, res.StatusCode, raw)
		}
		app, err := e.Tenants.GetApp(ctx, e.app.ID)
		if err != nil || app.Name != e.app.Name {
			t.Errorf("app after the refused update = %q, %v; want the name %q unchanged", app.Name, err, e.app.Name)
		}
		// The same credential, back to admin, may again.
		if _, err := e.Tenants.ChangeMemberRole(ctx, servertest.Operator, e.ws.ID, admin.ID, access.RoleAdmin); err != nil {
			t.Fatalf("ChangeMemberRole: %v", err)
		}
		scenario{method: "PATCH", path: appPath, headers: bearer(adminSecret), body: map[string]any{"name": "Renamed"},
			wantStatus: 200}.run(t, e)
	})
}
