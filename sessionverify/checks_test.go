package sessionverify_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/gatehouse-auth/gatehouse/sessionverify"
)

// Each check on its own: a stand-in key set holds one key per algorithm, and every case signs a
// token that is right in all but one respect, so no other check can refuse it in its place.
func TestEachCheck(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rs, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	keys := map[string]crypto.Signer{"ES256": ec, "RS256": rs, "EdDSA": ed}
	var set jose.JSONWebKeySet
	for alg, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Public(), KeyID: "kid-" + alg, Algorithm: alg, Use: "sig"})
	}
	jwks, _ := json.Marshal(set)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(jwks) }))
	defer srv.Close()

	now := time.Unix(1700000000, 0)
	v, err := sessionverify.New(sessionverify.Config{BaseURL: srv.URL, AppID: "app-1", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	good := map[string]any{"iss": srv.URL, "aud": "app-1", "aid": "app-1", "sub": "user-1", "uuid": "user-1", "sid": "s-1",
		"wid": "w-1", "iat": now.Unix(), "exp": now.Add(15 * time.Minute).Unix(), "auth_time": now.Unix(), "amr": []string{"email_otp"}}
	with := func(k string, v any) map[string]any {
		c := maps.Clone(good)
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	// sign signs claims with the key of alg, under kid, with the header fields extra.
	sign := func(alg, kid string, extra map[string]any, claims map[string]any) string {
		opts := &jose.SignerOptions{}
		opts.WithType("at+jwt")
		for k, v := range extra {
			if v == nil {
				delete(opts.ExtraHeaders, jose.HeaderKey(k))
			} else {
				opts.WithHeader(jose.HeaderKey(k), v)
			}
		}
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(alg), Key: jose.JSONWebKey{Key: keys[alg], KeyID: kid}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		payload, _ := json.Marshal(claims)
		obj, err := signer.Sign(payload)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := obj.CompactSerialize()
		return raw
	}

	for _, alg := range []string{"ES256", "RS256", "EdDSA"} {
		if c, err := v.Verify(t.Context(), sign(alg, "kid-"+alg, nil, good)); err != nil || c.UserID != "user-1" || c.WorkspaceID != "w-1" {
			t.Fatalf("a good %s token: %+v, %v", alg, c, err)
		}
	}
	cases := []struct {
		name string
		tok  string
	}{
		{"typ rt+jwt", sign("ES256", "kid-ES256", map[string]any{"typ": "rt+jwt"}, good)},
		{"no typ", sign("ES256", "kid-ES256", map[string]any{"typ": nil}, good)},
		{"ES256 key named for an RS256 token", sign("RS256", "kid-ES256", nil, good)},
		{"no kid", sign("ES256", "", nil, good)},
		{"jku header", sign("ES256", "kid-ES256", map[string]any{"jku": srv.URL}, good)},
		{"other issuer", sign("ES256", "kid-ES256", nil, with("iss", "https://other.example"))},
		{"other audience", sign("ES256", "kid-ES256", nil, with("aud", "app-2"))},
		{"no audience", sign("ES256", "kid-ES256", nil, with("aud", nil))},
		{"other aid", sign("ES256", "kid-ES256", nil, with("aid", "app-2"))},
		{"no exp", sign("ES256", "kid-ES256", nil, with("exp", nil))},
		{"expired", sign("ES256", "kid-ES256", nil, with("exp", now.Add(-31*time.Second).Unix()))},
		{"not yet valid", sign("ES256", "kid-ES256", nil, with("nbf", now.Add(31*time.Second).Unix()))},
		{"issued in the future", sign("ES256", "kid-ES256", nil, with("iat", now.Add(31*time.Second).Unix()))},
		{"no session", sign("ES256", "kid-ES256", nil, with("sid", nil))},
		{"uuid is not sub", sign("ES256", "kid-ES256", nil, with("uuid", "user-2"))},
	}
	for _, tc := range cases {
		_, err := v.Verify(t.Context(), tc.tok)
		if !errors.Is(err, sessionverify.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
		}
		t.Logf("%s: %v", tc.name, err)
	}
	if _, err := v.Verify(t.Context(), sign("ES256", "kid-ES256", nil, with("exp", now.Add(-29*time.Second).Unix()))); err != nil {
		t.Errorf("expired 29 s ago (within the leeway): %v", err)
	}

	// Many requests at once on a fresh verifier: one read of the key set serves them all.
	var reads atomic.Int32
	counted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reads.Add(1); w.Write(jwks) }))
	defer counted.Close()
	fresh, _ := sessionverify.New(sessionverify.Config{BaseURL: srv.URL, JWKSURL: counted.URL, AppID: "app-1", Now: func() time.Time { return now }})
	tok := sign("EdDSA", "kid-EdDSA", nil, good)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := fresh.Verify(t.Context(), tok); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if reads.Load() != 1 {
		t.Errorf("%d reads of the key set, want 1", reads.Load())
	}
}
