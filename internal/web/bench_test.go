package web_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/console"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// BenchmarkConsolePages renders the console's pages over HTTP for an app
// of GATEHOUSE_BENCH_USERS users (default 100 000), each with a session:
// the workspace home (counts), the users list, a search by the start of
// an address, a search by name, a pasted id, a user's detail, deep pages of the list (newest
// first and by last sign-in) and the audit log. docs/performance.md has the figures. Run it alone:
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
			app := sys.App(b, ws.ID, "Shop", func(s *tenant.AppSettings) {
				s.MetaSchema = &appuser.Schema{{Name: "First name", FieldName: "first_name", FieldType: appuser.FieldString},
					{Name: "Last name", FieldName: "last_name", FieldType: appuser.FieldString}}
			})
			start := time.Now()
			ids := seedUsers(b, sys, app, n)
			b.Logf("%s: %d users and sessions seeded in %s", kind, n, time.Since(start).Round(time.Second))
			o := signIn(b, sys, owner.Email)
			ap := "/console/w/" + ws.ID + "/apps/" + app.ID
			pages := map[string]string{
				"home":   "/console/w/" + ws.ID,
				"users":  ap + "/users",
				"search": ap + "/users?q=user5000",
				// A name: two words, each a range of app_user_names (about 12 users).
				"search_name": ap + "/users?in=names&q=ada+lovelace",
				// A broad one: every name with a word starting with "a" (about one user in five).
				"search_name_broad": ap + "/users?in=names&q=a",
				"pasted_id":         ap + "/users?q=" + ids[n/2],
				"user":              ap + "/users/" + ids[n/3],
				"deep_page":         ap + "/users?after=" + ids[n/2],
				// By last sign-in: the first page, a page deep among those who
				// signed in, and one deep among those who never did.
				"by_sign_in":            ap + "/users?sort=last_sign_in",
				"by_sign_in_deep":       ap + "/users?sort=last_sign_in&after=" + ids[n/2-n/2%3+1],
				"by_sign_in_deep_never": ap + "/users?sort=last_sign_in&after=" + ids[n/2-n/2%3],
				"audit_log":             "/console/w/" + ws.ID + "/audit",
				"settings":              ap,
			}
			b.Run("counts_query", func(b *testing.B) {
				for b.Loop() {
					now := time.Now()
					if _, err := sys.DB.CountAppActivity(context.Background(), app.ID, now, now.Add(-7*24*time.Hour)); err != nil {
						b.Fatal(err)
					}
				}
			})
			// The home page with counts past console.ActivityTTL: it shows them
			// and has them made again in the background (counts_query's cost).
			pages["home_counted"] = pages["home"]
			for name, path := range pages {
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						if name == "home_counted" {
							sys.Clock.Advance(console.ActivityTTL + time.Second)
						}
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

// seedUsers writes n users of app, each with a live session, straight
// into the store (thousands to a transaction: the domain's import path
// would take most of an hour at 100 000), and returns their ids. Every
// third user (j%3 == 0) never signed in; the others signed in when they
// signed up.
func seedUsers(b *testing.B, sys *servertest.System, app store.App, n int) []string {
	ctx := context.Background()
	ids := make([]string, 0, n)
	now := time.Now().UTC()
	for i := 0; i < n; i += 5000 {
		err := sys.DB.Tx(ctx, func(tx *store.Tx) error {
			for j := i; j < min(i+5000, n); j++ {
				at := now.Add(-time.Duration(n-j) * time.Minute)
				base := store.BaseUser{ID: uuid.Must(uuid.NewV7()).String(), WorkspaceID: app.WorkspaceID,
					Email: fmt.Sprintf("user%d@example.com", j), CreatedAt: at}
				if err := tx.CreateBaseUser(ctx, base); err != nil {
					return err
				}
				u := store.AppUser{ID: uuid.Must(uuid.NewV7()).String(), AppID: app.ID, UserID: base.ID, Status: store.StatusActive,
					Email: base.Email, EmailVerified: true, CreatedAt: at, UpdatedAt: at, LastUsedAt: &at,
					Meta: fmt.Appendf(nil, `{"first_name":%q,"last_name":%q}`, firstNames[j%len(firstNames)], lastNames[j%len(lastNames)])}
				if j%3 == 0 {
					u.LastUsedAt = nil
				}
				if err := tx.CreateAppUser(ctx, u); err != nil {
					return err
				}
				if err := tx.CreateSession(ctx, store.Session{ID: uuid.Must(uuid.NewV7()).String(), AppID: app.ID, AppUserID: u.ID,
					Method: "email_otp", CreatedAt: now, LastActiveAt: now, ExpiresAt: now.Add(24 * time.Hour)}); err != nil {
					return err
				}
				ids = append(ids, u.ID)
			}
			return nil
		})
		if err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	return ids
}

// Names of the seeded users: 93 × 92 pairs (coprime: every pair occurs), so a first or last name is
// about 1 in 93 users, and a pair (Ada Lovelace) about 1 in 8 556.
var (
	firstNames = strings.Fields(`Ada Grace Alan Barbara Edsger Donald Ken Dennis Linus Margaret Frances Radia Tim
		Vint Bjarne Guido James John Niklaus Leslie Tony Robin Shafi Silvio Whitfield Martin Adele Jean Kathleen
		Hedy Annie Joan Karen Mary Sophie Carol Lynn Evelyn Elizabeth Anita Sally Susan Marian Betty Katherine
		Dorothy Mildred Ruth Gladys Ida Alice Lois Nancy Patricia Sandra Sharon Cynthia Amy Angela Brenda Pamela
		Nicole Emma Olivia Ava Isabella Mia Charlotte Amelia Harper Evelina Abigail Emily Ella Madison Scarlett
		Victoria Aria Grete Chloe Camila Penelope Riley Layla Lillian Nora Zoey Mila Aubrey Hannah Lily Addison Eleanor`)
	lastNames = strings.Fields(`Lovelace Hopper Turing Liskov Dijkstra Knuth Thompson Ritchie Torvalds Hamilton
		Allen Perlman Berners Cerf Stroustrup Rossum Gosling McCarthy Wirth Lamport Hoare Milner Goldwasser Micali
		Diffie Hellman Goldberg Sammet Booth Lamarr Easley Clarke Jones Keller Wilson Sinclair Conway Berezin Estrin
		Borg Sherman Haibt Holberton Jennings Spence Teitelbaum Wescoff Lichterman Bilas Johnson Vaughan Jackson
		Darden Shetterly Granville Cannon Leavitt Fleming Maury Payne Burbidge Rubin Tinsley Gaillard Rees Meitner
		Franklin Hodgkin Lonsdale Elion Cori Yalow Montalcini Barre Blackburn Greider Tu Arnold Doudna Charpentier
		Ghez Strickland Ride Jemison Collins Ochoa Whitson Koch Meir Mirzakhani Uhlenbeck Daubechies`)
)
