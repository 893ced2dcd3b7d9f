// Package socialtest runs a real OpenID provider for tests: zitadel/oidc's
// certified OP with its example in-memory storage, on 127.0.0.1, and a
// browser that signs in at it. Tests check against it that what Gatehouse
// sends and checks is what a conforming provider speaks, not what a fake
// written beside the test expects.
package socialtest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Password is every account's password at the provider.
const Password = "pw"

// users are the provider's accounts.
type users map[string]*storage.User

func (u users) GetUserByID(id string) *storage.User      { return u[id] }
func (u users) GetUserByUsername(n string) *storage.User { return u[n] }
func (u users) ExampleClientID() string                  { return storage.ServiceUserID }

// OP is a running provider.
type OP struct {
	// Issuer is its http://127.0.0.1 URL.
	Issuer string
	// Handler serves it.
	Handler http.Handler
	st      *opStorage
}

// opStorage is the example storage with the e-mail claims in the ID token
// or not, and a way to make it sign another nonce.
type opStorage struct {
	*storage.Storage
	mu              sync.Mutex
	claimsInIDToken bool
	nonce           string
}

type claimsClient struct {
	op.Client
	inIDToken bool
}

func (c claimsClient) IDTokenUserinfoClaimsAssertion() bool { return c.inIDToken }

func (s *opStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return claimsClient{Client: c, inIDToken: s.claimsInIDToken}, nil
}

type otherNonce struct {
	op.AuthRequest
	nonce string
}

func (r otherNonce) GetNonce() string { return r.nonce }

func (s *opStorage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	r, err := s.Storage.AuthRequestByCode(ctx, code)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.nonce != "" {
		r = otherNonce{AuthRequest: r, nonce: s.nonce}
	}
	return r, err
}

// User is an account at the provider.
type User struct {
	ID, Email           string
	EmailVerified       bool
	FirstName, LastName string
}

// Client is a client registered at the provider.
type Client struct {
	ID, Secret string
	Redirects  []string
}

// Start serves a provider with accounts and clients until the test ends.
func Start(t testing.TB, accounts []User, clients []Client) *OP {
	t.Helper()
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	op := New(srv.URL, accounts, clients)
	h = op.Handler
	return op
}

// New is a provider at issuer (the address it is served on), for
// programs that serve it themselves (e2e's testop).
func New(issuer string, accounts []User, clients []Client) *OP {
	us := users{}
	for _, u := range accounts {
		us[u.ID] = &storage.User{ID: u.ID, Username: u.ID, Password: Password, Email: u.Email, EmailVerified: u.EmailVerified,
			FirstName: u.FirstName, LastName: u.LastName}
	}
	cs := map[string]*storage.Client{}
	for _, c := range clients {
		cs[c.ID] = storage.WebClient(c.ID, c.Secret, c.Redirects...)
	}
	st := &opStorage{Storage: storage.NewStorageWithClients(us, cs)}
	return &OP{Issuer: issuer, st: st, Handler: exampleop.SetupServer(issuer, st, slog.New(slog.DiscardHandler), false)}
}

// ClaimsInIDToken puts the e-mail claims in the ID token (true) or only in
// userinfo (false, the default, as many providers do).
func (o *OP) ClaimsInIDToken(in bool) {
	o.st.mu.Lock()
	o.st.claimsInIDToken = in
	o.st.mu.Unlock()
}

// SignNonce makes the provider sign nonce instead of the one asked for
// ("" restores it).
func (o *OP) SignNonce(nonce string) {
	o.st.mu.Lock()
	o.st.nonce = nonce
	o.st.mu.Unlock()
}

// NewBrowser is an HTTP client with a cookie jar that does not follow
// redirects (Follow does, one at a time).
func NewBrowser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Follow walks b from start through redirects, signing in as username
// when the provider's login page comes, until a redirect to an address
// that starts with stop (never dialled), which it returns. A page that is
// neither a redirect nor the login form ends the walk: it returns nil and
// that answer's status and body.
func (o *OP) Follow(t testing.TB, b *http.Client, start, username, stop string) (*url.URL, int, string) {
	t.Helper()
	next := start
	for range 20 {
		if strings.HasPrefix(next, stop) {
			u, err := url.Parse(next)
			if err != nil {
				t.Fatal(err)
			}
			return u, 0, ""
		}
		resp, err := b.Get(next)
		if err != nil {
			t.Fatalf("GET %s: %v", next, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode/100 == 3 {
			u, _ := resp.Request.URL.Parse(loc)
			next = u.String()
			continue
		}
		m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindSubmatch(body)
		if m == nil || !strings.HasPrefix(next, o.Issuer) {
			return nil, resp.StatusCode, string(body)
		}
		resp, err = b.PostForm(o.Issuer+"/login/username", url.Values{"id": {string(m[1])}, "username": {username}, "password": {Password}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		u, _ := resp.Request.URL.Parse(resp.Header.Get("Location"))
		next = u.String()
	}
	t.Fatalf("no end after 20 redirects, at %s", next)
	return nil, 0, ""
}
