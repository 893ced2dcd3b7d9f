package social

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// fakeOP is an OpenID provider's discovery document, keys, token and
// userinfo endpoints, with what the test decides: for the ID token checks,
// which a conforming provider never lets a test get wrong.
type fakeOP struct {
	*httptest.Server
	mu        sync.Mutex
	doc       map[string]any
	keys      []jose.JSONWebKey
	tokens    func(r *http.Request) (int, string)
	userinfo  string
	keyFetch  atomic.Int32
	discFetch atomic.Int32
}

func newFakeOP(t *testing.T) *fakeOP {
	t.Helper()
	op := &fakeOP{}
	op.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op.mu.Lock()
		defer op.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			op.discFetch.Add(1)
			_ = json.NewEncoder(w).Encode(op.doc)
		case "/keys":
			op.keyFetch.Add(1)
			_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: op.keys})
		case "/token":
			status, body := op.tokens(r)
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		case "/userinfo":
			_, _ = w.Write([]byte(op.userinfo))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(op.Close)
	op.doc = map[string]any{"issuer": op.URL, "authorization_endpoint": op.URL + "/auth", "token_endpoint": op.URL + "/token",
		"userinfo_endpoint": op.URL + "/userinfo", "jwks_uri": op.URL + "/keys",
		"id_token_signing_alg_values_supported": []string{"ES256", "RS256"}, "code_challenge_methods_supported": []string{"S256"}}
	return op
}

func (op *fakeOP) set(f func(op *fakeOP)) {
	op.mu.Lock()
	defer op.mu.Unlock()
	f(op)
}

type testKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv any
	pub  any
}

func newECKey(t *testing.T, kid string) testKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{kid: kid, alg: jose.ES256, priv: k, pub: &k.PublicKey}
}

func newRSAKey(t *testing.T, kid string) testKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{kid: kid, alg: jose.RS256, priv: k, pub: &k.PublicKey}
}

func (k testKey) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.pub, KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
}

// sign is claims as a JWS signed with k.
func (k testKey) sign(t *testing.T, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(claims)
	jws, err := s.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// handMade is a compact JWS with the header and signature the test gives.
func handMade(header, claims map[string]any, sign func(input string) []byte) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	input := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	return input + "." + base64.RawURLEncoding.EncodeToString(sign(input))
}

// TestVerifyIDToken is the ID token's checks (OpenID Core §3.1.3.7): each
// way a token can be wrong is refused, and a right one passes.
func TestVerifyIDToken(t *testing.T) {
	op := newFakeOP(t)
	ec, rsaKey := newECKey(t, "ec1"), newRSAKey(t, "rsa1")
	op.set(func(op *fakeOP) { op.keys = []jose.JSONWebKey{ec.jwk(), rsaKey.jwk()} })
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clock := now
	o := NewOIDC(op.Client(), func() time.Time { return clock }, true)
	ctx := context.Background()
	d, err := o.Discover(ctx, op.URL)
	if err != nil {
		t.Fatal(err)
	}
	claims := func(change func(c map[string]any)) map[string]any {
		c := map[string]any{"iss": op.URL, "sub": "user-1", "aud": "client-1", "nonce": "n-0123456789",
			"exp": now.Add(5 * time.Minute).Unix(), "iat": now.Unix(), "email": "ada@example.com", "email_verified": "true"}
		if change != nil {
			change(c)
		}
		return c
	}
	verify := func(raw string) (IDClaims, error) { return o.VerifyIDToken(ctx, d, "client-1", "n-0123456789", raw) }

	got, err := verify(ec.sign(t, claims(nil)))
	if err != nil || got.Subject != "user-1" || got.Email != "ada@example.com" || !bool(got.EmailVerified) {
		t.Fatalf("a right ES256 token: %+v, %v", got, err)
	}
	if _, err := verify(rsaKey.sign(t, claims(func(c map[string]any) { c["aud"] = []string{"client-1", "other"}; c["azp"] = "client-1" }))); err != nil {
		t.Fatalf("a right RS256 token with another audience and azp: %v", err)
	}
	if _, err := verify(ec.sign(t, claims(func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() }))); err != nil {
		t.Fatalf("a token expired within the allowed skew: %v", err)
	}

	hmacWith := func(key []byte) func(string) []byte {
		return func(input string) []byte { m := hmac.New(sha256.New, key); m.Write([]byte(input)); return m.Sum(nil) }
	}
	rsaPubDER, _ := json.Marshal(rsaKey.jwk())
	for name, raw := range map[string]string{
		"alg none":                 handMade(map[string]any{"alg": "none", "kid": "ec1"}, claims(nil), func(string) []byte { return nil }),
		"HS256 with the secret":    handMade(map[string]any{"alg": "HS256", "kid": "rsa1"}, claims(nil), hmacWith([]byte("client-secret"))),
		"HS256 with the RSA key":   handMade(map[string]any{"alg": "HS256", "kid": "rsa1"}, claims(nil), hmacWith(rsaPubDER)),
		"wrong issuer":             ec.sign(t, claims(func(c map[string]any) { c["iss"] = "https://evil.example" })),
		"wrong audience":           ec.sign(t, claims(func(c map[string]any) { c["aud"] = "client-2" })),
		"other audiences, no azp":  ec.sign(t, claims(func(c map[string]any) { c["aud"] = []string{"client-1", "other"} })),
		"azp of another client":    ec.sign(t, claims(func(c map[string]any) { c["azp"] = "client-2" })),
		"wrong nonce":              ec.sign(t, claims(func(c map[string]any) { c["nonce"] = "n-evil" })),
		"no nonce":                 ec.sign(t, claims(func(c map[string]any) { delete(c, "nonce") })),
		"expired":                  ec.sign(t, claims(func(c map[string]any) { c["exp"] = now.Add(-3 * time.Minute).Unix() })),
		"no expiry":                ec.sign(t, claims(func(c map[string]any) { delete(c, "exp") })),
		"issued in the future":     ec.sign(t, claims(func(c map[string]any) { c["iat"] = now.Add(5 * time.Minute).Unix() })),
		"no subject":               ec.sign(t, claims(func(c map[string]any) { delete(c, "sub") })),
		"an unknown key":           newECKey(t, "ec-unknown").sign(t, claims(nil)),
		"a known kid, another key": newECKey(t, "ec1").sign(t, claims(nil)),
		"bad signature": func() string {
			raw := ec.sign(t, claims(nil))
			return raw[:len(raw)-4] + "AAAA"
		}(),
	} {
		if _, err := verify(raw); !errors.Is(err, ErrIDToken) {
			t.Errorf("%s: err = %v; want ErrIDToken", name, err)
		}
	}
	// The expected nonce must be there too.
	if _, err := o.VerifyIDToken(ctx, d, "client-1", "", ec.sign(t, claims(func(c map[string]any) { c["nonce"] = "" }))); !errors.Is(err, ErrIDToken) {
		t.Errorf("an empty nonce on both sides: err = %v; want ErrIDToken", err)
	}
	// An algorithm the provider does not advertise is refused, key or not.
	dES := d
	dES.IDTokenAlgs = []string{"ES256"}
	if _, err := o.VerifyIDToken(ctx, dES, "client-1", "n-0123456789", rsaKey.sign(t, claims(nil))); !errors.Is(err, ErrIDToken) {
		t.Errorf("RS256 from a provider that advertises ES256 only: err = %v; want ErrIDToken", err)
	}
	// Only HMAC advertised: nothing passes.
	dHS := d
	dHS.IDTokenAlgs = []string{"HS256"}
	if _, err := o.VerifyIDToken(ctx, dHS, "client-1", "n-0123456789", ec.sign(t, claims(nil))); !errors.Is(err, ErrIDToken) {
		t.Errorf("a provider advertising HS256 only: err = %v; want ErrIDToken", err)
	}

	// Key rotation: a token signed with a new key is refused while the keys
	// were fetched under a minute ago (forged kids cannot make us fetch
	// them on every request), and accepted once they are fetched again.
	fetched := op.keyFetch.Load()
	rotated := newECKey(t, "ec2")
	op.set(func(op *fakeOP) { op.keys = append(op.keys, rotated.jwk()) })
	clock = now.Add(30 * time.Second)
	if _, err := verify(rotated.sign(t, claims(nil))); !errors.Is(err, ErrIDToken) {
		t.Errorf("a new key within a minute of the last fetch: err = %v; want ErrIDToken", err)
	}
	if op.keyFetch.Load() != fetched {
		t.Errorf("the keys were fetched again within a minute")
	}
	clock = now.Add(90 * time.Second)
	if _, err := verify(rotated.sign(t, claims(func(c map[string]any) { c["exp"] = clock.Add(time.Minute).Unix() }))); err != nil {
		t.Errorf("a new key a minute later: %v; want it fetched and accepted", err)
	}
	if op.keyFetch.Load() != fetched+1 {
		t.Errorf("keys fetched %d times after the rotation; want once", op.keyFetch.Load()-fetched)
	}
}

// TestDiscoverAndExchange: the discovery document is checked and cached,
// the code exchange sends what RFC 6749 and PKCE say, and the provider's
// wrong answers are refused without echoing them.
func TestDiscoverAndExchange(t *testing.T) {
	ctx := context.Background()
	op := newFakeOP(t)
	o := NewOIDC(op.Client(), time.Now, true)
	if _, err := o.Discover(ctx, op.URL); err != nil {
		t.Fatal(err)
	}
	d, err := o.Discover(ctx, op.URL)
	if err != nil || op.discFetch.Load() != 1 {
		t.Fatalf("second Discover = %v, %d fetches; want the cached document", err, op.discFetch.Load())
	}
	for name, change := range map[string]func(doc map[string]any){
		"another issuer":    func(doc map[string]any) { doc["issuer"] = "https://evil.example" },
		"no token endpoint": func(doc map[string]any) { delete(doc, "token_endpoint") },
		"no S256":           func(doc map[string]any) { doc["code_challenge_methods_supported"] = []string{"plain"} },
	} {
		op2 := newFakeOP(t)
		op2.set(func(op *fakeOP) { change(op.doc) })
		if _, err := NewOIDC(op2.Client(), time.Now, true).Discover(ctx, op2.URL); !errors.Is(err, ErrProvider) {
			t.Errorf("discovery with %s: err = %v; want ErrProvider", name, err)
		}
	}
	if _, err := NewOIDC(op.Client(), time.Now, false).Discover(ctx, op.URL); !errors.Is(err, ErrProvider) {
		t.Errorf("http endpoints where only https is allowed: err = %v; want ErrProvider", err)
	}

	var got *http.Request
	var form map[string][]string
	op.set(func(op *fakeOP) {
		op.tokens = func(r *http.Request) (int, string) {
			_ = r.ParseForm()
			got, form = r, r.PostForm
			return 200, `{"access_token":"at-1","token_type":"Bearer","id_token":"x.y.z"}`
		}
	})
	toks, err := o.Exchange(ctx, d, "client:1", "s3cret/+", "code-1", "verifier-1", "https://gh.example/cb")
	if err != nil || toks.AccessToken != "at-1" || toks.IDToken != "x.y.z" {
		t.Fatalf("Exchange = %+v, %v", toks, err)
	}
	user, pass, _ := got.BasicAuth()
	if user != "client%3A1" || pass != "s3cret%2F%2B" || form["client_secret"] != nil {
		t.Errorf("client authentication: basic %q:%q, form secret %v; want both form-encoded in HTTP Basic only", user, pass, form["client_secret"])
	}
	if form["grant_type"][0] != "authorization_code" || form["code"][0] != "code-1" || form["code_verifier"][0] != "verifier-1" ||
		form["redirect_uri"][0] != "https://gh.example/cb" {
		t.Errorf("form = %v", form)
	}
	dPost := d
	dPost.TokenAuthMethods = []string{"client_secret_post"}
	if _, err := o.Exchange(ctx, dPost, "client-1", "s3cret", "c", "v", "https://gh.example/cb"); err != nil {
		t.Fatal(err)
	}
	if _, _, basic := got.BasicAuth(); basic || form["client_secret"][0] != "s3cret" || form["client_id"][0] != "client-1" {
		t.Errorf("client_secret_post: basic %v, form %v; want the secret in the form only", basic, form)
	}
	for name, answer := range map[string]struct {
		status int
		body   string
	}{
		"an error":        {400, `{"error":"invalid_grant","error_description":"code s3cret-echo expired"}`},
		"no access token": {200, `{"token_type":"Bearer"}`},
		"not JSON":        {200, `<html>`},
		"a huge answer":   {200, `{"access_token":"` + strings.Repeat("a", maxProviderAnswer) + `"}`},
	} {
		op.set(func(op *fakeOP) { op.tokens = func(*http.Request) (int, string) { return answer.status, answer.body } })
		_, err := o.Exchange(ctx, d, "client-1", "s3cret", "c", "v", "https://gh.example/cb")
		if !errors.Is(err, ErrProvider) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("token endpoint answering %s: err = %v; want ErrProvider, nothing of the answer in it", name, err)
		}
	}

	op.set(func(op *fakeOP) { op.userinfo = `{"sub":"user-2","email":"eve@example.com","email_verified":true}` })
	if _, err := o.Userinfo(ctx, d, "at-1", "user-1"); !errors.Is(err, ErrProvider) {
		t.Errorf("userinfo of another subject: err = %v; want ErrProvider", err)
	}
	if c, err := o.Userinfo(ctx, d, "at-1", "user-2"); err != nil || c.Email != "eve@example.com" || !bool(c.EmailVerified) {
		t.Errorf("Userinfo = %+v, %v", c, err)
	}
}
