package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// TestUserNameSearch: the console's name search finds the users each of
// whose words starts a word of their names (the user_meta keys that contain
// "name"), in any order and case, through app_user_names, which follows
// user_meta; wildcards in the words are literal. The backfill (users
// written without their rows) restores what a search finds.
func TestUserNameSearch(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, app := seed(t, db)
		users := []struct{ email, meta string }{
			{"ada@example.com", `{"first_name":"Ada","last_name":"Lovelace"}`},
			{"grace@example.com", `{"first_name":"Grace","last_name":"Brewster"}`},
			{"adam@example.com", `{"first_name":"Adam","last_name":"Smith","note":"analytical"}`},
			{"elodie@example.com", `{"display_name":"Élodie Durand"}`},
			{"x@example.com", `{"first_name":"Ann_a","last_name":"100%"}`},
			{"anna@example.com", `{"first_name":"Anna"}`},
			{"nobody@example.com", `{}`},
		}
		for i, u := range users {
			b := store.BaseUser{ID: fmt.Sprintf("nb%d", i), WorkspaceID: ws.ID, CreatedAt: t0}
			if err := db.CreateBaseUser(ctx, b); err != nil {
				t.Fatal(err)
			}
			if err := db.CreateAppUser(ctx, store.AppUser{ID: fmt.Sprintf("nu%d", i), AppID: app.ID, UserID: b.ID,
				Status: store.StatusActive, Email: u.email, Meta: []byte(u.meta),
				CreatedAt: t0.Add(time.Duration(i) * time.Second), UpdatedAt: t0}); err != nil {
				t.Fatal(err)
			}
		}
		// Grace's name changes: the rows follow user_meta.
		grace, err := db.GetAppUser(ctx, app.ID, "nu1")
		if err != nil {
			t.Fatal(err)
		}
		grace.Meta = []byte(`{"first_name":"Grace","last_name":"Hopper"}`)
		if _, err := db.UpdateAppUser(ctx, grace); err != nil {
			t.Fatal(err)
		}
		search := func(t *testing.T, f store.UserFilter) []string {
			t.Helper()
			got, total, err := db.ListAppUsers(ctx, app.ID, f, 50, 0)
			if err != nil {
				t.Fatalf("ListAppUsers(%+v): %v", f, err)
			}
			var emails []string
			for _, u := range got {
				emails = append(emails, u.Email)
			}
			if total != len(emails) {
				t.Errorf("total %d for %d users", total, len(emails))
			}
			return emails
		}
		// The backfill: rows lost (users written before the table) come
		// back; a second run, since the first, finds nothing to do.
		if err := db.ForgetNames(ctx); err != nil {
			t.Fatal(err)
		}
		if got := search(t, store.UserFilter{Name: "ada"}); got != nil {
			t.Fatalf("without rows: %v", got)
		}
		if n, err := db.BackfillUserNames(ctx, t0.Add(time.Hour)); err != nil || n != 6 {
			t.Fatalf("BackfillUserNames = %d, %v; want the 6 users with a name", n, err)
		}
		if n, err := db.BackfillUserNames(ctx, t0.Add(2*time.Hour)); err != nil || n != 0 {
			t.Fatalf("BackfillUserNames again = %d, %v; want 0 (nothing written since)", n, err)
		}
		for _, tc := range []struct {
			name string
			f    store.UserFilter
			want []string // newest first
		}{
			{"one word, any case", store.UserFilter{Name: "LOVELACE"}, []string{"ada@example.com"}},
			{"words in any order, across fields", store.UserFilter{Name: "lovelace ada"}, []string{"ada@example.com"}},
			{"the start of a word", store.UserFilter{Name: "ad"}, []string{"adam@example.com", "ada@example.com"}},
			{"not the middle of one", store.UserFilter{Name: "velace"}, nil},
			{"Unicode case", store.UserFilter{Name: "élodie"}, []string{"elodie@example.com"}},
			{"with the other filters", store.UserFilter{Name: "ann", EmailPrefix: "ann"}, []string{"anna@example.com"}},
			{"an underscore is literal", store.UserFilter{Name: "ann_"}, []string{"x@example.com"}},
			{"a percent sign is literal", store.UserFilter{Name: "100%"}, []string{"x@example.com"}},
			{"only keys that hold a name", store.UserFilter{Name: "analytical"}, nil},
			{"a name changed", store.UserFilter{Name: "hopper"}, []string{"grace@example.com"}},
			{"not the old one", store.UserFilter{Name: "brewster"}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				// Both ways of finding a page: from the matches (few), and
				// in order testing each user (every word common).
				for _, common := range []int{1000, 0} {
					restore := store.SetCommonWord(common)
					for _, sort := range []string{"", store.SortLastSignIn} {
						f := tc.f
						f.Sort = sort
						if got := search(t, f); !slices.Equal(got, tc.want) {
							t.Errorf("sort %q, common word past %d rows: %v; want %v", sort, common, got, tc.want)
						}
					}
					restore()
				}
			})
		}
		// A capped count says "more than" without reading every match.
		if got, total, err := db.ListAppUsers(ctx, app.ID, store.UserFilter{Name: "a", CountUpTo: 2}, 1, 0); err != nil ||
			len(got) != 1 || total != 3 {
			t.Errorf("a count up to 2 of 4 matches: %d users, total %d, %v; want 1 user, total 3", len(got), total, err)
		}
		if _, total, err := db.ListAppUsers(ctx, app.ID, store.UserFilter{Name: "ada", CountUpTo: 2}, 1, 0); err != nil || total != 2 {
			t.Errorf("a count up to 2 of 2 matches: total %d, %v; want 2", total, err)
		}
	})
}
