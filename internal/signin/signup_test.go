package signin_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

// TestConcurrentSignUpsShareOnePerson: new addresses sign up with no read
// inside the send's transaction (the person and the user go out with its
// COMMIT), so concurrent sends of one new address, to two apps of one
// workspace, race on creating the person and the users. Every send succeeds
// (a loser looks up again and joins what the winner made), each app ends
// with one user, and both users are the same person.
func TestConcurrentSignUpsShareOnePerson(t *testing.T) {
	servertest.ForEach(t, options(), func(t *testing.T, sys *servertest.System) {
		ctx := t.Context()
		e := newEnv(t, sys, nil)
		other := e.newApp(t, "Blog", nil)
		for round := range 3 {
			addr := fmt.Sprintf("racer%d@example.com", round)
			var wg sync.WaitGroup
			for i := range 20 {
				app := e.app
				if i%2 == 1 {
					app = other
				}
				wg.Go(func() {
					if _, err := e.SignIn.SendOTP(ctx, app, addr, nil, e.client); err != nil {
						t.Errorf("SendOTP(%s, new address, concurrent) = %v; want nil", app.Name, err)
					}
				})
			}
			wg.Wait()
			shop, err := e.DB.FindAppUser(ctx, e.app.ID, addr, "")
			if err != nil {
				t.Fatalf("Shop's user %s: %v", addr, err)
			}
			blog, err := e.DB.FindAppUser(ctx, other.ID, addr, "")
			if err != nil {
				t.Fatalf("Blog's user %s: %v", addr, err)
			}
			if shop.UserID == "" || shop.UserID != blog.UserID {
				t.Errorf("%s: Shop's user is person %q, Blog's %q; want one person", addr, shop.UserID, blog.UserID)
			}
		}
	})
}
