package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct {
		prefix, end string
		ok          bool
	}{
		{"ann", "ano", true},
		{"+1415", "+1416", true},
		{"a%", "a&", true},
		{"é", "ê", true},
		{"a\u007f", "a\u0080", true}, // one byte to two
		{"k\uD7FF", "k\uE000", true}, // over the surrogates
		{"k\U0010FFFF", "l", true},   // the last rune has no successor
		{"k\U0010FFFF\U0010FFFF", "l", true},
		{"\U0010FFFF", "", false}, // no upper end at all
		{"", "", false},
	} {
		end, ok := store.PrefixEnd(tc.prefix)
		if end != tc.end || ok != tc.ok {
			t.Errorf("prefixEnd(%q) = %q, %v; want %q, %v", tc.prefix, end, ok, tc.end, tc.ok)
		}
	}
}

// searchUsers are the users TestUserPrefixSearch finds, in creation order.
// Some are not addresses the API would store (the store takes what it is
// given): they put runes at the edges of the byte ranges.
var searchUsers = []struct{ email, phone string }{
	{"ann@example.com", ""},
	{"ann+x@example.org", ""},
	{"anna@example.com", "+14155552671"},
	{"a%b@example.com", ""},
	{"a_b@example.com", ""},
	{"axb@example.com", "+14155552672"},
	{"ano@example.com", ""}, // prefixEnd("ann"): just outside its range
	{"", "+442079460018"},
	{"é@example.com", ""},
	{"ê@example.com", ""},
	{"k\uD7FF@example.com", ""},
	{"k\uE000@example.com", ""},
	{"k\U0010FFFF@example.com", ""},
	{"l@example.com", ""},
	{"bob@example.com", "+14155550100"},
}

// TestUserPrefixSearch: EmailPrefix and PhonePrefix find exactly the app's
// users whose stored value starts with the prefix, byte for byte, on both
// engines, with the other filters and pages; and the indexes serve them.
func TestUserPrefixSearch(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, app := seed(t, db)
		other := store.App{ID: "app2", WorkspaceID: ws.ID, Name: "Other", Slug: "other", Origin: "http://localhost:3001",
			EmailAuthType: "magic", AccessExpiration: 900, RefreshExpiration: 86400, MagicLinkExpiration: 600,
			AllowedIdentifiers: []string{"email", "phone"}, CreatedAt: t0, UpdatedAt: t0}
		if err := db.CreateApp(ctx, other); err != nil {
			t.Fatalf("CreateApp: %v", err)
		}
		for i, u := range searchUsers {
			for _, a := range []store.App{app, other} {
				id := fmt.Sprintf("%s-u%02d", a.ID, i)
				b := store.BaseUser{ID: "b-" + id, WorkspaceID: ws.ID, CreatedAt: t0}
				if err := db.CreateBaseUser(ctx, b); err != nil {
					t.Fatalf("CreateBaseUser: %v", err)
				}
				status := store.StatusActive
				if i%4 == 3 {
					status = store.StatusInactive
				}
				err := db.CreateAppUser(ctx, store.AppUser{ID: id, AppID: a.ID, UserID: b.ID, Status: status,
					Email: u.email, Phone: u.phone, CreatedAt: t0.Add(time.Duration(i) * time.Second), UpdatedAt: t0})
				if err != nil {
					t.Fatalf("CreateAppUser %q: %v", u.email, err)
				}
			}
		}
		// want lists the users matching f, newest first, by their email (or phone).
		want := func(f store.UserFilter) []string {
			var out []string
			for i, u := range slices.Backward(searchUsers) {
				if f.EmailPrefix != "" && (u.email == "" || !strings.HasPrefix(u.email, f.EmailPrefix)) ||
					f.PhonePrefix != "" && (u.phone == "" || !strings.HasPrefix(u.phone, f.PhonePrefix)) ||
					f.Status == store.StatusInactive && i%4 != 3 {
					continue
				}
				out = append(out, u.email+u.phone)
			}
			return out
		}
		list := func(t *testing.T, f store.UserFilter, limit, offset int) ([]string, int) {
			t.Helper()
			users, total, err := db.ListAppUsers(ctx, app.ID, f, limit, offset)
			if err != nil {
				t.Fatalf("ListAppUsers(%+v): %v", f, err)
			}
			var out []string
			for _, u := range users {
				if u.AppID != app.ID {
					t.Errorf("ListAppUsers(%+v) returned %s of app %s", f, u.ID, u.AppID)
				}
				out = append(out, u.Email+u.Phone)
			}
			return out, total
		}
		for _, tc := range []struct {
			name string
			f    store.UserFilter
			n    int // how many match, stated rather than only computed
		}{
			{"a prefix", store.UserFilter{EmailPrefix: "ann"}, 3},
			{"a whole address", store.UserFilter{EmailPrefix: "ann@example.com"}, 1},
			{"a whole address and one character more", store.UserFilter{EmailPrefix: "ann@example.comx"}, 0},
			{"a plus", store.UserFilter{EmailPrefix: "ann+"}, 1},
			{"a percent sign is no wildcard", store.UserFilter{EmailPrefix: "a%"}, 1},
			{"an underscore is no wildcard", store.UserFilter{EmailPrefix: "a_"}, 1},
			{"one letter", store.UserFilter{EmailPrefix: "a"}, 7},
			{"nothing matches", store.UserFilter{EmailPrefix: "zz"}, 0},
			{"non-ASCII", store.UserFilter{EmailPrefix: "é"}, 1},
			{"below the surrogates", store.UserFilter{EmailPrefix: "k\uD7FF"}, 1},
			{"the last rune", store.UserFilter{EmailPrefix: "k\U0010FFFF"}, 1},
			{"only the last rune", store.UserFilter{EmailPrefix: "\U0010FFFF"}, 0},
			{"case matters in the store", store.UserFilter{EmailPrefix: "ANN"}, 0},
			{"a phone prefix", store.UserFilter{PhonePrefix: "+1415"}, 3},
			{"a whole number", store.UserFilter{PhonePrefix: "+14155552671"}, 1},
			{"every phone", store.UserFilter{PhonePrefix: "+"}, 4},
			{"a phone prefix that matches nothing", store.UserFilter{PhonePrefix: "+49"}, 0},
			{"with a status", store.UserFilter{EmailPrefix: "a", Status: store.StatusInactive}, 1},
		} {
			t.Run(tc.name, func(t *testing.T) {
				w := want(tc.f)
				if len(w) != tc.n {
					t.Fatalf("the test's own model finds %d users; the case says %d", len(w), tc.n)
				}
				got, total := list(t, tc.f, 100, 0)
				if !slices.Equal(got, w) || total != tc.n {
					t.Errorf("got %q (total %d); want %q (total %d)", got, total, w, tc.n)
				}
				// Page by page, the same users in the same order.
				var paged []string
				for off := 0; off < tc.n+2; off += 2 {
					page, total := list(t, tc.f, 2, off)
					if total != tc.n || len(page) > 2 {
						t.Fatalf("page at %d: %d users, total %d; want at most 2, total %d", off, len(page), total, tc.n)
					}
					paged = append(paged, page...)
				}
				if !slices.Equal(paged, w) {
					t.Errorf("paged = %q; want %q", paged, w)
				}
			})
		}

		// The ranges are index scans: the prefix indexes on PostgreSQL, the
		// UNIQUE (app_id, email) and (app_id, phone) indexes on SQLite. With
		// a few thousand users the planner weighs the range against walking
		// the app's users newest first (app_users_app_created) and filtering.
		err := db.Tx(ctx, func(tx *store.Tx) error {
			for i := range 3000 {
				id := fmt.Sprintf("bulk%04d", i)
				if err := tx.CreateBaseUser(ctx, store.BaseUser{ID: "b-" + id, WorkspaceID: ws.ID, CreatedAt: t0}); err != nil {
					return err
				}
				err := tx.CreateAppUser(ctx, store.AppUser{ID: id, AppID: app.ID, UserID: "b-" + id, Status: store.StatusActive,
					Email: id + "@bulk.test", Phone: fmt.Sprintf("+4930%07d", i), CreatedAt: t0.Add(time.Hour), UpdatedAt: t0})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("bulk users: %v", err)
		}
		for _, tc := range []struct {
			f      store.UserFilter
			pg, sq string
		}{
			{store.UserFilter{EmailPrefix: "ann"}, "app_users_email_prefix_set", "(app_id=? AND email>? AND email<?)"},
			{store.UserFilter{PhonePrefix: "+1415"}, "app_users_phone_prefix_set", "(app_id=? AND phone>? AND phone<?)"},
		} {
			count, page, err := db.UserListPlans(ctx, app.ID, tc.f, 25, 0)
			if err != nil {
				t.Fatalf("UserListPlans: %v", err)
			}
			index := tc.pg
			if db.Kind() == store.SQLite {
				index = tc.sq
			}
			// The range is the index's condition: filtering rows that an
			// index found by app_id alone would not be a range scan.
			for _, plan := range []string{count, page} {
				if !strings.Contains(plan, index) || strings.Contains(plan, "Filter:") {
					t.Errorf("plan for %+v does not scan the range on %s:\n%s", tc.f, index, plan)
				}
			}
		}

		// Keyset pages (After): every user once, in the list's order, though
		// 3000 of them share one creation time; the total stays the whole
		// list's; a page reads the index from the cursor on.
		all, total, err := db.ListAppUsers(ctx, app.ID, store.UserFilter{}, 5000, 0)
		if err != nil {
			t.Fatal(err)
		}
		var keyset []string
		var after *store.UserCursor
		for {
			page, n, err := db.ListAppUsers(ctx, app.ID, store.UserFilter{After: after}, 700, 0)
			if err != nil {
				t.Fatal(err)
			}
			if n != total {
				t.Fatalf("total with a cursor %d, want %d", n, total)
			}
			for _, u := range page {
				keyset = append(keyset, u.ID)
			}
			if len(page) < 700 {
				break
			}
			last := page[len(page)-1]
			after = &store.UserCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		inOrder := make([]string, 0, len(all))
		for _, u := range all {
			inOrder = append(inOrder, u.ID)
		}
		if !slices.Equal(keyset, inOrder) {
			t.Fatalf("keyset pages list %d users, want the %d of the list in its order", len(keyset), len(inOrder))
		}
		_, plan, err := db.UserListPlans(ctx, app.ID, store.UserFilter{After: &store.UserCursor{CreatedAt: t0.Add(time.Hour), ID: "bulk1500"}}, 25, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan, "app_users_app_created") {
			t.Errorf("a keyset page does not read app_users_app_created:\n%s", plan)
		}

		// By last sign-in: those who signed in, most recent first (ties by
		// id), then those who never did, newest first; by offset and by
		// keyset, the same list, each user once, across the boundary.
		signedIn := map[string]time.Time{}
		for i := 0; i < 3000; i += 7 {
			id := fmt.Sprintf("bulk%04d", i)
			at := t0.Add(2*time.Hour + time.Duration(i%50)*time.Minute) // ties: 50 distinct times
			if err := db.TouchAppUser(ctx, app.ID, id, at); err != nil {
				t.Fatal(err)
			}
			signedIn[id] = at
		}
		var wantOrder []string
		for _, u := range all {
			if _, ok := signedIn[u.ID]; ok {
				wantOrder = append(wantOrder, u.ID)
			}
		}
		slices.SortStableFunc(wantOrder, func(a, b string) int {
			if c := signedIn[b].Compare(signedIn[a]); c != 0 {
				return c
			}
			return strings.Compare(b, a)
		})
		var never []string
		for _, u := range all {
			if _, ok := signedIn[u.ID]; !ok {
				never = append(never, u.ID)
			}
		}
		slices.SortFunc(never, func(a, b string) int { return strings.Compare(b, a) })
		wantOrder = append(wantOrder, never...)
		bySignIn := store.UserFilter{Sort: store.SortLastSignIn}
		var offsetPaged, keysetPaged []string
		for off := 0; off < len(wantOrder); off += 333 {
			page, n, err := db.ListAppUsers(ctx, app.ID, bySignIn, 333, off)
			if err != nil || n != total {
				t.Fatalf("by last sign-in at %d: total %d, %v", off, n, err)
			}
			for _, u := range page {
				offsetPaged = append(offsetPaged, u.ID)
			}
		}
		for f := bySignIn; ; {
			page, _, err := db.ListAppUsers(ctx, app.ID, f, 333, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range page {
				keysetPaged = append(keysetPaged, u.ID)
			}
			if len(page) < 333 {
				break
			}
			last := page[len(page)-1]
			f.After = &store.UserCursor{CreatedAt: last.CreatedAt, LastUsedAt: last.LastUsedAt, ID: last.ID}
		}
		if !slices.Equal(offsetPaged, wantOrder) {
			t.Errorf("offset pages by last sign-in: %d users, first %q; want %d, first %q", len(offsetPaged), offsetPaged[:3], len(wantOrder), wantOrder[:3])
		}
		if !slices.Equal(keysetPaged, wantOrder) {
			t.Errorf("keyset pages by last sign-in: %d users; want %d in order", len(keysetPaged), len(wantOrder))
		}
		// A filter still applies to both parts.
		page, n, err := db.ListAppUsers(ctx, app.ID, store.UserFilter{Sort: store.SortLastSignIn, EmailPrefix: "bulk000"}, 20, 0)
		if err != nil || n != 10 || len(page) != 10 || page[0].ID != "bulk0007" || page[1].ID != "bulk0000" || page[2].ID != "bulk0009" {
			ids := []string{}
			for _, u := range page {
				ids = append(ids, u.ID)
			}
			t.Errorf("by last sign-in under a prefix: %d of %d %q, %v; want bulk0007, bulk0000, then the rest newest first", len(page), n, ids, err)
		}
	})
}
