package web_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/console"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// usersCell is the users count in an app's row on the home page.
var usersCell = regexp.MustCompile(`</code></td>\s*<td class="num">(\d+)</td>`)

// TestConsoleHomeCounts: the home page never waits for an app's counts
// beyond a moment: a first count shows "counting" with a row htmx fetches
// (which waits for it), counts are kept a minute, and older ones are shown
// while new ones are made in the background. Another workspace's operator
// cannot read an app's row.
func TestConsoleHomeCounts(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", nil)
		createUser(t, sys, app, "ann@shop.example")
		createUser(t, sys, app, "bob@shop.example")
		o := signIn(t, sys, owner.Email)
		home, row := "/console/w/"+ws.ID, "/console/w/"+ws.ID+"/apps/"+app.ID+"/activity"
		users := func(body string) string {
			t.Helper()
			m := usersCell.FindStringSubmatch(body)
			if m == nil {
				return ""
			}
			return m[1]
		}

		// The first view shows the counts if they come at once, else
		// "counting" and a row to fetch; that row waits for them.
		b := o.get(home, http.StatusOK).body
		if n := users(b); n == "" && !strings.Contains(b, `hx-get="`+row+`"`) {
			t.Fatalf("the first view shows neither counts nor a row to fetch:\n%s", b)
		} else if n != "" && n != "2" {
			t.Fatalf("users = %s; want 2", n)
		}
		r := o.get(row, http.StatusOK).body
		if users(r) != "2" || strings.Contains(r, "hx-get") || strings.Contains(r, "<html") {
			t.Fatalf("the fetched row: %s", r)
		}
		checkHeaders(t, "the fetched row", o.get(row, http.StatusOK))

		// Kept a minute: a new user is not counted yet.
		createUser(t, sys, app, "cat@shop.example")
		if n := users(o.get(home, http.StatusOK).body); n != "2" {
			t.Fatalf("within a minute users = %s; want the kept 2", n)
		}
		// Past it: the page shows the kept counts at once and has them made
		// again, which the next views show.
		sys.Clock.Advance(console.ActivityTTL + time.Second)
		if n := users(o.get(home, http.StatusOK).body); n != "2" {
			t.Fatalf("past a minute the page shows %s; want the kept 2 while counting again", n)
		}
		waitFor(t, "the counts made again", func() bool { return users(o.get(home, http.StatusOK).body) == "3" })

		// Another workspace's owner cannot read the row.
		_, stranger := sys.Workspace(t, "Other")
		s := signIn(t, sys, stranger.Email)
		if a := send(t, sys, s.cookie, "GET", row, nil, nil); a.status != http.StatusNotFound && a.status != http.StatusForbidden {
			t.Fatalf("a stranger's read of the row: %d %s", a.status, a.body)
		}
		if a := send(t, sys, s.cookie, "GET", "/console/w/"+ws.ID, nil, nil); a.status != http.StatusNotFound && a.status != http.StatusForbidden {
			t.Fatalf("a stranger's read of the home page: %d", a.status)
		}
	})
}

// TestConsoleNameSearch: with "In: names", the users search finds names
// in an app's name fields (every word, any case) and keeps that choice on
// the next page and the export; without it the box searches addresses,
// numbers and ids as before; an app without name fields offers no choice.
func TestConsoleNameSearch(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ctx := context.Background()
		ws, owner := sys.Workspace(t, "Acme")
		app := sys.App(t, ws.ID, "Shop", func(s *tenant.AppSettings) {
			s.MetaSchema = &appuser.Schema{{Name: "First name", FieldName: "first_name", FieldType: appuser.FieldString},
				{Name: "Last name", FieldName: "last_name", FieldType: appuser.FieldString},
				{Name: "Company", FieldName: "company", FieldType: appuser.FieldString}}
		})
		plain := sys.App(t, ws.ID, "Plain", nil)
		for _, u := range []struct{ email, first, last, company string }{
			{"ada@shop.example", "Ada", "Lovelace", "Analytical"},
			{"grace@shop.example", "Grace", "Hopper", "Lovelace Ltd"},
		} {
			id := createUser(t, sys, app, u.email)
			if _, err := sys.Users.Update(ctx, access.Operator(), app, id, appuser.UpdateInput{
				Meta: map[string]any{"first_name": u.first, "last_name": u.last, "company": u.company}}); err != nil {
				t.Fatal(err)
			}
		}
		createUser(t, sys, plain, "ada@plain.example")
		o := signIn(t, sys, owner.Email)
		list := func(appID, query string) string {
			return o.get("/console/w/"+ws.ID+"/apps/"+appID+"/users?"+query, http.StatusOK).body
		}
		for query, want := range map[string][]string{
			"in=names&q=lovelace":     {"ada@shop.example"}, // a name, not the company
			"in=names&q=LOVELACE+ada": {"ada@shop.example"},
			"in=names&q=hop":          {"grace@shop.example"},
			"in=names&q=gr":           {"grace@shop.example"},
			"in=names&q=analytical":   nil, // not a name field
			"in=names&q=":             {"ada@shop.example", "grace@shop.example"},
			"q=lovelace":              nil, // an address search
			"q=gr":                    {"grace@shop.example"},
		} {
			b := list(app.ID, query)
			for _, email := range []string{"ada@shop.example", "grace@shop.example"} {
				if got, wanted := strings.Contains(b, email), contains(want, email); got != wanted {
					t.Errorf("%s: %s listed %v; want %v", query, email, got, wanted)
				}
			}
		}
		b := list(app.ID, "in=names&q=lovelace")
		if !strings.Contains(b, `<option value="names" selected>`) || !strings.Contains(b, "users.csv?in=names&amp;q=lovelace") {
			t.Error("a name search does not keep its choice in the form and the export")
		}
		csv := o.get("/console/w/"+ws.ID+"/apps/"+app.ID+"/users.csv?in=names&q=lovelace", http.StatusOK).body
		if !strings.Contains(csv, "ada@shop.example") || strings.Contains(csv, "grace@shop.example") {
			t.Errorf("the export of a name search:\n%s", csv)
		}
		if b := list(plain.ID, "q=ada"); !strings.Contains(b, "ada@plain.example") || strings.Contains(b, `name="in"`) {
			t.Error("an app without name fields: the address search changed or a names choice is offered")
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
