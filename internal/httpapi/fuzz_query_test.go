package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2/queryparam"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

// queryUsers are the users FuzzListUsersQuery searches: addresses with the
// LIKE wildcards % and _ in them, and a look-alike without.
var queryUsers = []struct{ email, phone string }{
	{"a_b@example.com", "+14155552671"},
	{"a%b@example.com", "+442079460018"},
	{"axb@example.com", ""},
	{"kate@example.com", "+4915123456789"},
	{"ann+x@example.org", ""},
}

// asciiLower folds only A-Z: e-mail addresses are stored in lower-case ASCII,
// and the filter is documented as case-insensitive.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// queryValue is how the API reads a list filter: trimmed, with the client
// SDK's "undefined" and "null" meaning absent.
func queryValue(q url.Values, key string) string {
	v := strings.TrimSpace(q.Get(key))
	if v == "undefined" || v == "null" {
		return ""
	}
	return v
}

// FuzzListUsersQuery sends any query string to GET /v1/{app}/users on the
// real system (SQLite, and PostgreSQL when configured): it never fails with
// 5xx, refuses a parameter holding text a database cannot store however the
// query is spelled, the email and phone filters find exactly the users
// whose address contains the text, wildcards and all, and the search (q, or
// search) exactly those whose address starts with it as appuser.Search
// reads it.
func FuzzListUsersQuery(f *testing.F) {
	for _, s := range []string{
		"", "email=a_b", "email=a%25b", "email=%25", "email=_", "email=%5C", "email=A_B", "email=KATE", "email=%E2%84%AA",
		"phone=%2B1", "phone=%25", "phone=4", "email=undefined&phone=null", "email=+kate+", "email=%00", "email=%ff",
		"%ff=1", "email=a;b", "page=2&limit=1", "page=-1", "limit=1000001", "page=99999999999999999999", "status=active",
		"status=weird", "created_before=2031-03-14T15:09:26Z", "created_before=yesterday", "id=nope", "email=a&email=b",
		"email=example.com&phone=%2B44", "email=%C3%A9", "email=a%5C_b", "email=%00;x", "email=%ff;x", "x=%00;&email=a", "email=%zz", "email=a=b",
		"q=a_", "q=A%25", "q=%2B1", "q=1415", "q=+44+20", "q=0049", "search=kate", "q=a&search=a", "q=a&search=b", "q=ann%2Bx%40example.org",
		"q=%E2%84%AA", "q=%F4%8F%BF%BF", "q=a%F4%8F%BF%BF", "q=%ED%9F%BF", "per_page=2", "limit=2&per_page=3", "q=a&email=b&per_page=1&page=2",
	} {
		f.Add(s)
	}
	type target struct {
		handler http.Handler
		path    string
		secret  string
	}
	var targets []target
	for _, kind := range storetest.Kinds(f) {
		sys := newSystem(f, kind, servertest.Options{})
		ws, _ := sys.Workspace(f, "Acme")
		app := sys.App(f, ws.ID, "Demo", nil)
		for _, u := range queryUsers {
			if _, _, err := sys.Users.Create(context.Background(), servertest.Operator, app, appuser.CreateInput{Email: u.email, Phone: u.phone}); err != nil {
				f.Fatalf("create %s: %v", u.email, err)
			}
		}
		targets = append(targets, target{sys.API().Handler(), "/v1/" + app.ID + "/users", sys.AppSecret(f, app.ID)})
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if strings.IndexFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '#' }) >= 0 {
			return // a request line cannot carry these in its query
		}
		// The parameters as the API reads them (huma splits on "&" only).
		q := url.Values{}
		clean := true
		for _, key := range []string{"id", "email", "phone", "status", "created_before", "page", "limit", "q", "search", "per_page"} {
			v := queryparam.Get(raw, key)
			q.Set(key, v)
			if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
				clean = false
			}
		}
		for _, tg := range targets {
			r := httptest.NewRequest("GET", tg.path+"?"+raw, nil)
			r.Header.Set("Authorization", "Bearer "+tg.secret)
			w := httptest.NewRecorder()
			tg.handler.ServeHTTP(w, r)
			if w.Code >= 500 {
				t.Fatalf("GET users?%s = %d %s", raw, w.Code, w.Body)
			}
			if !clean {
				if w.Code != http.StatusBadRequest {
					t.Fatalf("GET users?%s (text no database can store) = %d; want 400", raw, w.Code)
				}
				continue
			}
			search := queryValue(q, "q")
			if other := queryValue(q, "search"); search == "" {
				search = other
			} else if other != "" && other != search {
				if w.Code != http.StatusBadRequest {
					t.Fatalf("GET users?%s (q %q, search %q) = %d; want 400", raw, search, other, w.Code)
				}
				continue
			}
			if w.Code != http.StatusOK {
				continue
			}
			prefix := appuser.Search(appuser.Filter{}, search)
			var body struct {
				Users []struct {
					Email *string `json:"email"`
					Phone *string `json:"phone"`
				} `json:"users"`
				TotalCount int `json:"total_count"`
				PerPage    int `json:"per_page"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("GET users?%s: %v in %s", raw, err, w.Body)
			}
			if body.PerPage < 1 || body.PerPage > appuser.MaxPerPage || len(body.Users) > body.PerPage || body.TotalCount < len(body.Users) {
				t.Fatalf("GET users?%s: %d users, per_page %d, total %d", raw, len(body.Users), body.PerPage, body.TotalCount)
			}
			email, phone := queryValue(q, "email"), queryValue(q, "phone")
			want := 0
			matches := func(e, p string) bool {
				return strings.Contains(e, asciiLower(email)) && (phone == "" || strings.Contains(p, phone)) &&
					(prefix.EmailPrefix == "" || e != "" && strings.HasPrefix(e, prefix.EmailPrefix)) &&
					(prefix.PhonePrefix == "" || p != "" && strings.HasPrefix(p, prefix.PhonePrefix))
			}
			for _, u := range queryUsers {
				if matches(u.email, u.phone) {
					want++
				}
			}
			for _, u := range body.Users {
				e, p := "", ""
				if u.Email != nil {
					e = *u.Email
				}
				if u.Phone != nil {
					p = *u.Phone
				}
				if !matches(e, p) {
					t.Fatalf("GET users?%s returned %q %q, which does not match email %q phone %q search %q", raw, e, p, email, phone, search)
				}
			}
			if q.Get("id") == "" && q.Get("status") == "" && q.Get("created_before") == "" && body.TotalCount != want {
				t.Fatalf("GET users?%s: total_count = %d; want %d (email %q, phone %q, search %q)", raw, body.TotalCount, want, email, phone, search)
			}
		}
	})
}
