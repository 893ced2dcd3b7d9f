package social

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/social/socialtest"
)

// A real OpenID provider (socialtest: zitadel/oidc's certified OP) on
// 127.0.0.1: the code flow against it checks that what this package sends
// and checks is what a conforming provider speaks.

const (
	opClient      = "gatehouse"
	opOtherClient = "other-app"
	opSecret      = "op-client-secret-0123456789"
	opRedirect    = "http://127.0.0.1:9/v1/auth/app/oauth/callback" // never dialled: the flow stops at the redirect
)

// startOP serves the provider: one account with a verified e-mail address,
// one without.
func startOP(t *testing.T) *socialtest.OP {
	t.Helper()
	return socialtest.Start(t, []socialtest.User{
		{ID: "ada", Email: "ada@example.com", EmailVerified: true, FirstName: "Ada", LastName: "Lovelace"},
		{ID: "eve", Email: "eve@example.com"},
	}, []socialtest.Client{{ID: opClient, Secret: opSecret, Redirects: []string{opRedirect}},
		{ID: opOtherClient, Secret: opSecret, Redirects: []string{opRedirect}}})
}

// signInAt runs the browser's part of the code flow at the provider for
// username, as client, and returns the code the provider redirects with.
func signInAt(t *testing.T, op *socialtest.OP, d Discovery, client, username, state, nonce, verifier string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"client_id": {client}, "redirect_uri": {opRedirect}, "response_type": {"code"},
		"scope": {"openid email profile"}, "state": {state}, "nonce": {nonce},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	cb, status, _ := op.Follow(t, socialtest.NewBrowser(), d.AuthorizationEndpoint+"?"+q.Encode(), username, opRedirect)
	if cb == nil || cb.Query().Get("state") != state || cb.Query().Get("code") == "" {
		t.Fatalf("the provider did not come back with a code and the state: %v (%d)", cb, status)
	}
	return cb.Query().Get("code")
}

// TestAgainstARealProvider: discovery, the code exchange with PKCE, the ID
// token's checks and userinfo against a real OpenID provider; a token of
// another client and a token with another nonce are refused.
func TestAgainstARealProvider(t *testing.T) {
	ctx := context.Background()
	op := startOP(t)
	o := NewOIDC(&http.Client{Timeout: 10 * time.Second}, time.Now, true)
	d, err := o.Discover(ctx, op.Issuer)
	if err != nil {
		t.Fatalf("Discover = %v", err)
	}
	const verifier = "pkce-verifier-0123456789-0123456789-0123456789"
	flow := func(t *testing.T, client, user, nonce string) (Tokens, error) {
		t.Helper()
		code := signInAt(t, op, d, client, user, "state-"+user, nonce, verifier)
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
		op.ClaimsInIDToken(true)
		defer op.ClaimsInIDToken(false)
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
		code := signInAt(t, op, d, opClient, "ada", "state-x", "nonce-x", verifier)
		if _, err := o.Exchange(ctx, d, opClient, opSecret, code, verifier, opRedirect); err != nil {
			t.Fatal(err)
		}
		if _, err := o.Exchange(ctx, d, opClient, opSecret, code, verifier, opRedirect); !errors.Is(err, ErrProvider) {
			t.Errorf("a code exchanged twice: err = %v; want ErrProvider", err)
		}
	})
	t.Run("a wrong verifier", func(t *testing.T) {
		code := signInAt(t, op, d, opClient, "ada", "state-y", "nonce-y", verifier)
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
		op.SignNonce("nonce-of-another-sign-in")
		defer op.SignNonce("")
		toks, err := flow(t, opClient, "ada", "nonce-ada-3")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.VerifyIDToken(ctx, d, opClient, "nonce-ada-3", toks.IDToken); !errors.Is(err, ErrIDToken) {
			t.Errorf("a token with another sign-in's nonce: err = %v; want ErrIDToken", err)
		}
	})
}
