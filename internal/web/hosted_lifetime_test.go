package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
)

// TestHostedSessionLifetime: a hosted session left unused past the app's
// refresh lifetime is over (the idle limit the app's own sessions have
// through their refresh tokens); one in use lives on; and the app session
// a hand-off opens ends no later than the hosted session it came from.
func TestHostedSessionLifetime(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		app, email := hostedApp(t, sys, nil)
		idle := time.Duration(app.RefreshExpiration) * time.Second

		// In use within the idle limit: the session lives on.
		v := newVisitor(t, sys)
		v.signIn(app.ID, "?return=%2Faccount%2F"+app.ID, email)
		for range 3 {
			sys.Clock.Advance(idle - time.Hour)
			v.expect("GET", "/account/"+app.ID, nil, http.StatusOK)
		}
		// A hand-off now: its session ends with the hosted one, not a full
		// session lifetime from now.
		page := v.expect("GET", "/login/"+app.ID, nil, http.StatusOK)
		a := v.expect("POST", "/login/"+app.ID+"/continue", url.Values{"csrf": {csrfOf(t, page)}}, http.StatusSeeOther)
		loc, _ := url.Parse(a.header.Get("Location"))
		status, set := api(t, sys, "PATCH", "/v1/auth/"+app.ID+"/magic_links/authenticate",
			map[string]string{"token": loc.Query().Get("sct_magic")}, nil)
		if status != http.StatusOK {
			t.Fatalf("hand-off: %d %v", status, set)
		}
		var claims struct {
			SID string `json:"sid"`
		}
		parts := strings.Split(set["access"].(string), ".")
		if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err != nil || json.Unmarshal(b, &claims) != nil || claims.SID == "" {
			t.Fatalf("the access token's sid: %v", err)
		}
		handed, _, err := sys.DB.GetSessionWithUser(context.Background(), app.ID, claims.SID)
		if err != nil {
			t.Fatal(err)
		}
		// The hosted session began at the start; it ends a session lifetime later.
		if limit := servertest.Start().Add(sys.Config.Tokens.SessionLifetime); handed.ExpiresAt.After(limit) {
			t.Errorf("the hand-off's session ends %s, after the hosted session's %s", handed.ExpiresAt, limit)
		}

		// Unused past the idle limit: over.
		sys.Clock.Advance(idle + time.Minute)
		if a := v.expect("GET", "/account/"+app.ID, nil, http.StatusSeeOther); a.header.Get("Location") == "" {
			t.Fatal("an idle hosted session still reads the account page")
		}
	})
}
