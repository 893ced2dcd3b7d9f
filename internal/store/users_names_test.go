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

// TestUserNameSearch: the console's search box finds users by the words
// of their name fields (every word, any order, ASCII case folded); an
// unsafe key is ignored, not spliced into
// the statement; wildcards in the words are literal.
func TestUserNameSearch(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, app := seed(t, db)
		users := []struct{ email, meta string }{
			{"ada@example.com", `{"first_name":"Ada","last_name":"Lovelace"}`},
			{"grace@example.com", `{"first_name":"Grace","last_name":"Hopper"}`},
			{"adam@example.com", `{"first_name":"Adam","last_name":"Smith","note":"lovelace"}`},
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
		keys := []string{"first_name", "last_name"}
		for _, tc := range []struct {
			name string
			f    store.UserFilter
			want []string // newest first
		}{
			{"one word, any case", store.UserFilter{Name: "LOVELACE", NameKeys: keys}, []string{"ada@example.com"}},
			{"words in any order, across fields", store.UserFilter{Name: "lovelace ada", NameKeys: keys}, []string{"ada@example.com"}},
			{"a word inside a name", store.UserFilter{Name: "ad", NameKeys: keys}, []string{"adam@example.com", "ada@example.com"}},
			{"with the other filters", store.UserFilter{Name: "ann", EmailPrefix: "ann", NameKeys: keys}, []string{"anna@example.com"}},
			{"an underscore is literal", store.UserFilter{Name: "n_a", NameKeys: keys}, []string{"x@example.com"}},
			{"a percent sign is literal", store.UserFilter{Name: "0%", NameKeys: keys}, []string{"x@example.com"}},
			{"only the name keys", store.UserFilter{Name: "lovelace", NameKeys: []string{"first_name"}}, nil},
			{"an unsafe key is ignored", store.UserFilter{Name: "ada", NameKeys: []string{"x') OR 1=1 --"}}, all(users)},
			{"no keys: no name search", store.UserFilter{Name: "ada", EmailPrefix: "ada"}, []string{"adam@example.com", "ada@example.com"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, sort := range []string{"", store.SortLastSignIn} {
					f := tc.f
					f.Sort = sort
					got, total, err := db.ListAppUsers(ctx, app.ID, f, 50, 0)
					if err != nil {
						t.Fatalf("ListAppUsers(%+v): %v", f, err)
					}
					var emails []string
					for _, u := range got {
						emails = append(emails, u.Email)
					}
					if !slices.Equal(emails, tc.want) || total != len(tc.want) {
						t.Errorf("sort %q: %v (total %d); want %v", sort, emails, total, tc.want)
					}
				}
			})
		}
	})
}

// all is every address of users, newest first.
func all(users []struct{ email, meta string }) []string {
	var out []string
	for _, u := range slices.Backward(users) {
		out = append(out, u.email)
	}
	return out
}
