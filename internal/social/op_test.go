package social

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// A real OpenID provider, zitadel/oidc's certified OP with its example
// in-memory storage, run in the test on 127.0.0.1: the code flow against it
// checks that what this package sends and checks is what a conforming
// provider speaks, not what a fake written here expects.

const (
	opClient      = "gatehouse"
	opOtherClient = "other-app"
	opSecret      = "op-client-secret-0123456789"
	opRedirect    = "http://127.0.0.1:9/v1/auth/app/oauth/callback" // never dialled: the flow stops at the redirect
)

// opUsers are the provider's accounts: one with a verified e-mail
// address, one without.
type opUsers map[string]*storage.User

func (u opUsers) GetUserByID(id string) *storage.User      { return u[id] }
func (u opUsers) GetUserByUsername(n string) *storage.User { return u[n] }
func (u opUsers) ExampleClientID() string                  { return storage.ServiceUserID }

// opStorage is the example storage with the e-mail claims in the ID token
// (the example's clients keep them to userinfo, as many providers do, which
// the flow also covers) and a way to make it sign another nonce.
type opStorage struct {
	*storage.Storage
	claimsInIDToken bool
	nonce           string // when set, the nonce the provider signs
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
	return claimsClient{Client: c, inIDToken: s.claimsInIDToken}, nil
}

type otherNonce struct {
	op.AuthRequest
	nonce string
}

func (r otherNonce) GetNonce() string { return r.nonce }

func (s *opStorage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	r, err := s.Storage.AuthRequestByCode(ctx, code)
	if err == nil && s.nonce != "" {
		r = otherNonce{AuthRequest: r, nonce: s.nonce}
	}
	return r, err
}

// startOP serves the provider; its issuer is its http://127.0.0.1 URL.
func startOP(t *testing.T) (*opStorage, string) {
	t.Helper()
	users := opUsers{
		"ada": {ID: "ada", Username: "ada", Password: "pw", Email: "ada@example.com", EmailVerified: true, FirstName: "Ada", LastName: "Lovelace"},
		"eve": {ID: "eve", Username: "eve", Password: "pw", Email: "eve@example.com", EmailVerified: false},
	}
	st := &opStorage{Storage: storage.NewStorageWithClients(users, map[string]*storage.Client{
		opClient:      storage.WebClient(opClient, opSecret, opRedirect),
		opOtherClient: storage.WebClient(opOtherClient, opSecret, opRedirect),
	})}
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	h = exampleop.SetupServer(srv.URL, st, slog.New(slog.DiscardHandler), false)
	return st, srv.URL
}

// signInAt runs the browser's part of the code flow at the provider for
// username, as client, and returns the code the provider redirects with.
func signInAt(t *testing.T, d Discovery, client, username, state, nonce, verifier string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"client_id": {client}, "redirect_uri": {opRedirect}, "response_type": {"code"},
		"scope": {"openid email profile"}, "state": {state}, "nonce": {nonce},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	next := d.AuthorizationEndpoint + "?" + q.Encode()
	for range 10 {
		if strings.HasPrefix(next, opRedirect) {
			break
		}
		resp, err := c.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); loc != "" {
			u, _ := resp.Request.URL.Parse(loc)
			next = u.String()
			continue
		}
		// The provider's login page: its form posts the request id back.
		m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("the provider answered %d without a login form", resp.StatusCode)
		}
		resp, err = c.PostForm(strings.TrimSuffix(d.Issuer, "/")+"/login/username", url.Values{"id": {string(m[1])}, "username": {username}, "password": {"pw"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		u, _ := resp.Request.URL.Parse(resp.Header.Get("Location"))
		next = u.String()
	}
	cb, err := url.Parse(next)
	if err != nil || !strings.HasPrefix(next, opRedirect) || cb.Query().Get("state") != state || cb.Query().Get("code") == "" {
		t.Fatalf("the provider did not come back with a code and the state: %s", next)
	}
	return cb.Query().Get("code")
}

// TestAgainstARealProvider: discovery, the code exchange with PKCE, the ID
// token's checks and userinfo against a real OpenID provider; a token of
// another client and a token with another nonce are refused.
func TestAgainstARealProvider(t *testing.T) {
	ctx := context.Background()
	st, issuer := startOP(t)
	o := NewOIDC(&http.Client{Timeout: 10 * time.Second}, time.Now, true)
	d, err := o.Discover(ctx, issuer)
	if err != nil {
		t.Fatalf("Discover = %v", err)
	}
	const verifier = "pkce-verifier-0123456789-0123456789-0123456789"
	flow := func(t *testing.T, client, user, nonce string) (Tokens, error) {
		t.Helper()
		code := signInAt(t, d, client, user, "state-"+user, nonce, verifier)
		return o.Exchange(ctx, d, client, opSecret, code, verifier, opRedirect)
	}

	t.Run("e-mail in userinfo", func(t *testing.T) {
		toks, err := flow(t, opClient, "ada", "nonce-ada-1")
		if err != nil {
			t.Fatalf("Exchange = %v", err)
		}
		c, err := o.VerifyIDToken(ctx, d, opClient, "nonce-ada-1", toks.IDToken)
		if err != nil || c.Subject != "ada" {
			t.Fatalf("VerifyIDToken = %+v, %v", c, err)
		}
		info, err := o.Userinfo(ctx, d, toks.AccessToken, c.Subject)
		if err != nil || info.Email != "ada@example.com" || !bool(info.EmailVerified) {
			t.Fatalf("Userinfo = %+v, %v; want ada@example.com, verified", info, err)
		}
	})
	t.Run("e-mail in the ID token; an unverified one says so", func(t *testing.T) {
		st.claimsInIDToken = true
		defer func() { st.claimsInIDToken = false }()
		toks, err := flow(t, opClient, "eve", "nonce-eve-1")
		if err != nil {
			t.Fatal(err)
		}
		c, err := o.VerifyIDToken(ctx, d, opClient, "nonce-eve-1", toks.IDToken)
		if err != nil || c.Email != "eve@example.com" || bool(c.EmailVerified) {
			t.Fatalf("VerifyIDToken = %+v, %v; want eve@example.com, not verified", c, err)
		}
	})
	t.Run("the code is single use", func(t *testing.T) {
		code := signInAt(t, d, opClient, "ada", "state-x", "nonce-x", verifier)
		if _, err := o.Exchange(ctx, d, opClient, opSecret, code, verifier, opRedirect); err != nil {
			t.Fatal(err)
		}
		if _, err := o.Exchange(ctx, d, opClient, opSecret, code, verifier, opRedirect); !errors.Is(err, ErrProvider) {
			t.Errorf("a code exchanged twice: err = %v; want ErrProvider", err)
		}
	})
	t.Run("a wrong verifier", func(t *testing.T) {
		code := signInAt(t, d, opClient, "ada", "state-y", "nonce-y", verifier)
		if _, err := o.Exchange(ctx, d, opClient, opSecret, code, verifier+"x", opRedirect); !errors.Is(err, ErrProvider) {
			t.Errorf("a wrong PKCE verifier: err = %v; want ErrProvider", err)
		}
	})
	t.Run("a token of another client", func(t *testing.T) {
		toks, err := flow(t, opOtherClient, "ada", "nonce-ada-2")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.VerifyIDToken(ctx, d, opClient, "nonce-ada-2", toks.IDToken); !errors.Is(err, ErrIDToken) {
			t.Errorf("another client's token: err = %v; want ErrIDToken (audience)", err)
		}
	})
	t.Run("another nonce", func(t *testing.T) {
		st.nonce = "nonce-of-another-sign-in"
		defer func() { st.nonce = "" }()
		toks, err := flow(t, opClient, "ada", "nonce-ada-3")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.VerifyIDToken(ctx, d, opClient, "nonce-ada-3", toks.IDToken); !errors.Is(err, ErrIDToken) {
			t.Errorf("a token with another sign-in's nonce: err = %v; want ErrIDToken", err)
		}
	})
}
