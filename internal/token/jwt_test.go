package token

import (
	"context"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// accessClaims is shaped like a real access token so tests and benchmarks use realistic sizes.
type accessClaims struct {
	Claims
	SessionID string   `json:"sid"`
	AuthTime  int64    `json:"auth_time"`
	AMR       []string `json:"amr"`
}

func sampleClaims() accessClaims {
	return accessClaims{
		Claims: Claims{
			Issuer:   "https://auth.example.com",
			Subject:  "0190c2d4-5a8e-7b3c-9d1e-2f3a4b5c6d7e",
			Audience: Audience{"app_0190c2d45a8e7b3c"},
			Expiry:   1_900_000_900,
			IssuedAt: 1_900_000_000,
			ID:       "jti_6f1c2a9b8e7d4c3b",
		},
		SessionID: "0190c2d4-6b9f-7c4d-8e2f-3a4b5c6d7e8f",
		AuthTime:  1_899_999_990,
		AMR:       []string{"otp", "email"},
	}
}

func newRing(t testing.TB) (*Keyring, *Key) {
	t.Helper()
	key := mustKey(t)
	ring := NewKeyring(nil)
	ring.Replace(key, nil, []*Key{key})
	return ring, key
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// craft builds a compact JWS by hand from a literal header, so tests can produce
// headers that our signer never would. sign receives the JWS signing input.
func craft(header, payload string, sign func(input []byte) []byte) string {
	input := b64(header) + "." + b64(payload)
	return input + "." + base64.RawURLEncoding.EncodeToString(sign([]byte(input)))
}

func signES256(t testing.TB, key *Key) func([]byte) []byte {
	return func(input []byte) []byte {
		sum := sha256.Sum256(input)
		r, s, err := ecdsa.Sign(rand.Reader, key.Private.(*ecdsa.PrivateKey), sum[:])
		if err != nil {
			t.Fatalf("ecdsa.Sign: %v", err)
		}
		out := make([]byte, 64)
		r.FillBytes(out[:32])
		s.FillBytes(out[32:])
		return out
	}
}

func splitJWS(t *testing.T, raw string) []string {
	t.Helper()
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts; want 3", len(parts))
	}
	return parts
}

func TestSignVerifyRoundTrip(t *testing.T) {
	ring, key := newRing(t)
	want := sampleClaims()
	raw, err := ring.Sign(TypeAccess, want)
	if err != nil {
		t.Fatalf("Sign() error: %v", err)
	}

	var got accessClaims
	kid, err := ring.Verify(raw, TypeAccess, &got)
	if err != nil {
		t.Fatalf("Verify(Sign()) error: %v", err)
	}
	if kid != key.ID {
		t.Errorf("Verify() kid = %q; want %q", kid, key.ID)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Verify() claims = %+v; want %+v", got, want)
	}

	// The header must be exactly {alg, kid, typ}: nothing that embeds key material.
	hb, err := base64.RawURLEncoding.DecodeString(splitJWS(t, raw)[0])
	if err != nil {
		t.Fatal(err)
	}
	var header map[string]any
	if err := json.Unmarshal(hb, &header); err != nil {
		t.Fatal(err)
	}
	wantHeader := map[string]any{"alg": "ES256", "kid": key.ID, "typ": TypeAccess}
	if !reflect.DeepEqual(header, wantHeader) {
		t.Errorf("header = %v; want %v", header, wantHeader)
	}
}

func TestVerifyTampered(t *testing.T) {
	ring, _ := newRing(t)
	raw, err := ring.Sign(TypeAccess, sampleClaims())
	if err != nil {
		t.Fatal(err)
	}
	parts := splitJWS(t, raw)

	forged := sampleClaims()
	forged.Subject = "someone-else"
	forgedPayload, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	sig := []byte(parts[2])
	if sig[10] == 'A' {
		sig[10] = 'B'
	} else {
		sig[10] = 'A'
	}
	tests := []struct {
		name string
		raw  string
	}{
		{"payload replaced", parts[0] + "." + base64.RawURLEncoding.EncodeToString(forgedPayload) + "." + parts[2]},
		{"signature changed", parts[0] + "." + parts[1] + "." + string(sig)},
		{"signature removed", parts[0] + "." + parts[1] + "."},
		{"signature truncated", parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-4]},
		{"header replaced", b64(`{"alg":"ES256","kid":"`+ring.SignerID()+`","typ":"at+jwt","x":1}`) + "." + parts[1] + "." + parts[2]},
		{"padding added", raw + "="},
		{"whitespace", raw[:20] + "\n" + raw[20:]},
		{"json serialization", `{"payload":"` + parts[1] + `","protected":"` + parts[0] + `","signature":"` + parts[2] + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got accessClaims
			if _, err := ring.Verify(tt.raw, TypeAccess, &got); !errors.Is(err, ErrInvalid) {
				t.Errorf("Verify(%s) error = %v; want ErrInvalid", tt.name, err)
			}
		})
	}
}

func TestVerifyTypeSeparation(t *testing.T) {
	ring, _ := newRing(t)
	types := []string{TypeAccess, TypeRefresh, TypeAPISecret, TypeMagic}
	for _, signed := range types {
		raw, err := ring.Sign(signed, sampleClaims())
		if err != nil {
			t.Fatal(err)
		}
		if got := Peek(raw); got != signed {
			t.Errorf("Peek(token of %q) = %q; want %q", signed, got, signed)
		}
		for _, verifier := range types {
			var got accessClaims
			_, err := ring.Verify(raw, verifier, &got)
			if verifier == signed && err != nil {
				t.Errorf("Verify(%q token, %q) error = %v; want nil", signed, verifier, err)
			}
			if verifier != signed && !errors.Is(err, ErrInvalid) {
				t.Errorf("Verify(%q token, %q) error = %v; want ErrInvalid", signed, verifier, err)
			}
		}
		var got accessClaims
		if _, err := ring.Verify(raw, "", &got); !errors.Is(err, ErrInvalid) {
			t.Errorf("Verify(%q token, \"\") error = %v; want ErrInvalid", signed, err)
		}
	}
}

// TestVerifyCraftedHeaders signs hand-made headers with the real key, so each
// refusal is due to the header alone. The "control" case proves the crafting works.
func TestVerifyCraftedHeaders(t *testing.T) {
	ring, key := newRing(t)
	other := mustKey(t)
	payload, err := json.Marshal(sampleClaims())
	if err != nil {
		t.Fatal(err)
	}
	kid := key.ID
	jwk, err := other.PublicJWK()
	if err != nil {
		t.Fatal(err)
	}
	pubJWK, err := key.PublicJWK()
	if err != nil {
		t.Fatal(err)
	}
	hs256 := func(secret []byte) func([]byte) []byte {
		return func(input []byte) []byte {
			m := hmac.New(sha256.New, secret)
			m.Write(input)
			return m.Sum(nil)
		}
	}
	none := func([]byte) []byte { return nil }
	es := signES256(t, key)

	tests := []struct {
		name   string
		header string
		sign   func([]byte) []byte
		ok     bool
	}{
		{"control", `{"alg":"ES256","kid":"` + kid + `","typ":"at+jwt"}`, es, true},
		{"control reordered", `{"typ":"at+jwt","kid":"` + kid + `","alg":"ES256"}`, es, true},
		{"alg none", `{"alg":"none","kid":"` + kid + `","typ":"at+jwt"}`, none, false},
		{"alg None", `{"alg":"None","kid":"` + kid + `","typ":"at+jwt"}`, none, false},
		{"alg HS256 with public jwk as secret", `{"alg":"HS256","kid":"` + kid + `","typ":"at+jwt"}`, hs256(pubJWK), false},
		{"alg HS256 with kid as secret", `{"alg":"HS256","kid":"` + kid + `","typ":"at+jwt"}`, hs256([]byte(kid)), false},
		{"alg lower case", `{"alg":"es256","kid":"` + kid + `","typ":"at+jwt"}`, es, false},
		{"alg ES384", `{"alg":"ES384","kid":"` + kid + `","typ":"at+jwt"}`, es, false},
		{"alg missing", `{"kid":"` + kid + `","typ":"at+jwt"}`, es, false},
		{"alg not a string", `{"alg":["ES256"],"kid":"` + kid + `","typ":"at+jwt"}`, es, false},
		{"typ upper case", `{"alg":"ES256","kid":"` + kid + `","typ":"AT+JWT"}`, es, false},
		{"typ JWT", `{"alg":"ES256","kid":"` + kid + `","typ":"JWT"}`, es, false},
		{"typ missing", `{"alg":"ES256","kid":"` + kid + `"}`, es, false},
		{"kid missing", `{"alg":"ES256","typ":"at+jwt"}`, es, false},
		{"kid empty", `{"alg":"ES256","kid":"","typ":"at+jwt"}`, es, false},
		{"kid unknown", `{"alg":"ES256","kid":"` + other.ID + `","typ":"at+jwt"}`, es, false},
		{"kid not a string", `{"alg":"ES256","kid":1,"typ":"at+jwt"}`, es, false},
		{"embedded jwk", `{"alg":"ES256","kid":"` + kid + `","typ":"at+jwt","jwk":` + string(jwk) + `}`, es, false},
		{"embedded own jwk", `{"alg":"ES256","kid":"` + kid + `","typ":"at+jwt","jwk":` + string(pubJWK) + `}`, es, false},
		{"jku", `{"alg":"ES256","kid":"` + kid + `","typ":"at+jwt","jku":"https://evil.example/jwks"}`, es, false},
		{"x5u", `{"alg":"ES256","kid":"` + kid + `","typ":"at+jwt","x5u":"https://evil.example/cert"}`, es, false},
		{"x5c", `{"alg":"ES256","kid":"` + kid + `","typ":"at+jwt","x5c":["MIIB"]}`, es, false},
		{"crit", `{"alg":"ES256","kid":"` + kid + `","typ":"at+jwt","crit":["exp"],"exp":1}`, es, false},
		{"b64 false", `{"alg":"ES256","kid":"` + kid + `","typ":"at+jwt","b64":false,"crit":["b64"]}`, es, false},
		{"duplicate kid", `{"alg":"ES256","kid":"` + other.ID + `","kid":"` + kid + `","typ":"at+jwt"}`, es, false},
		{"duplicate alg", `{"alg":"none","alg":"ES256","kid":"` + kid + `","typ":"at+jwt"}`, es, false},
		{"header not an object", `["alg","ES256"]`, es, false},
		{"header trailing data", `{"alg":"ES256","kid":"` + kid + `","typ":"at+jwt"}{}`, es, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := craft(tt.header, string(payload), tt.sign)
			var got accessClaims
			gotKid, err := ring.Verify(raw, TypeAccess, &got)
			if tt.ok {
				if err != nil || gotKid != kid {
					t.Errorf("Verify(%s) = %q, %v; want %q, nil", tt.header, gotKid, err, kid)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Verify(%s) error = %v; want ErrInvalid", tt.header, err)
			}
		})
	}
}

func TestVerifyBadPayload(t *testing.T) {
	ring, key := newRing(t)
	header := `{"alg":"ES256","kid":"` + key.ID + `","typ":"at+jwt"}`
	for _, payload := range []string{"", "not json", `{"exp":"soon"}`, `{"aud":5}`} {
		raw := craft(header, payload, signES256(t, key))
		var got accessClaims
		if _, err := ring.Verify(raw, TypeAccess, &got); !errors.Is(err, ErrInvalid) {
			t.Errorf("Verify(payload %q) error = %v; want ErrInvalid", payload, err)
		}
	}
}

func TestVerifyUnknownKid(t *testing.T) {
	ringA, _ := newRing(t)
	ringB, _ := newRing(t)
	raw, err := ringB.Sign(TypeAccess, sampleClaims())
	if err != nil {
		t.Fatal(err)
	}
	var got accessClaims
	if _, err := ringA.Verify(raw, TypeAccess, &got); !errors.Is(err, ErrInvalid) {
		t.Errorf("Verify(token from another keyring) error = %v; want ErrInvalid", err)
	}
	if _, err := NewKeyring(nil).Verify(raw, TypeAccess, &got); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty keyring Verify() error = %v; want ErrInvalid", err)
	}
	var zero Keyring
	if _, err := zero.Verify(raw, TypeAccess, &got); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero Keyring Verify() error = %v; want ErrInvalid", err)
	}
}

// TestVerifyWrongKeyForKid covers a kid that is known but whose key did not sign the token.
func TestVerifyWrongKeyForKid(t *testing.T) {
	ring, key := newRing(t)
	other := mustKey(t)
	payload, err := json.Marshal(sampleClaims())
	if err != nil {
		t.Fatal(err)
	}
	raw := craft(`{"alg":"ES256","kid":"`+key.ID+`","typ":"at+jwt"}`, string(payload), signES256(t, other))
	var got accessClaims
	if _, err := ring.Verify(raw, TypeAccess, &got); !errors.Is(err, ErrInvalid) {
		t.Errorf("Verify(signed by other key) error = %v; want ErrInvalid", err)
	}
}

func TestKeyRotation(t *testing.T) {
	oldKey, newKey := mustKey(t), mustKey(t)
	ring := NewKeyring(nil)
	ring.Replace(oldKey, nil, []*Key{oldKey})
	oldTok, err := ring.Sign(TypeAccess, sampleClaims())
	if err != nil {
		t.Fatal(err)
	}

	// New key signs; old key is still accepted and published.
	ring.Replace(newKey, []*Key{oldKey}, []*Key{oldKey, newKey})
	if got := ring.SignerID(); got != newKey.ID {
		t.Errorf("SignerID() = %q; want %q", got, newKey.ID)
	}
	newTok, err := ring.Sign(TypeAccess, sampleClaims())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		raw     string
		wantKid string
	}{{oldTok, oldKey.ID}, {newTok, newKey.ID}} {
		var got accessClaims
		kid, err := ring.Verify(tc.raw, TypeAccess, &got)
		if err != nil || kid != tc.wantKid {
			t.Errorf("Verify() = %q, %v; want %q, nil", kid, err, tc.wantKid)
		}
	}
	if !ring.Has(oldKey.ID) || !ring.Has(newKey.ID) {
		t.Errorf("Has(old), Has(new) = %v, %v; want true, true", ring.Has(oldKey.ID), ring.Has(newKey.ID))
	}

	// Old key retired: its tokens stop verifying, new ones keep working.
	ring.Replace(newKey, nil, []*Key{newKey})
	var got accessClaims
	if _, err := ring.Verify(oldTok, TypeAccess, &got); !errors.Is(err, ErrInvalid) {
		t.Errorf("Verify(retired key token) error = %v; want ErrInvalid", err)
	}
	if _, err := ring.Verify(newTok, TypeAccess, &got); err != nil {
		t.Errorf("Verify(current key token) error = %v; want nil", err)
	}
	if ring.Has(oldKey.ID) {
		t.Errorf("Has(retired kid) = true; want false")
	}
}

func TestVerifyOnlySignerAndNoSigner(t *testing.T) {
	key := mustKey(t)
	ring := NewKeyring(nil)
	if _, err := ring.Sign(TypeAccess, sampleClaims()); err == nil {
		t.Errorf("Sign() on empty keyring: err = nil; want error")
	}
	if got := ring.SignerID(); got != "" {
		t.Errorf("SignerID() on empty keyring = %q; want \"\"", got)
	}
	ring.Replace(&Key{ID: key.ID, Public: key.Public}, nil, nil)
	if _, err := ring.Sign(TypeAccess, sampleClaims()); err == nil {
		t.Errorf("Sign() with verify-only signer: err = nil; want error")
	}
	ring.Replace(key, nil, nil)
	if _, err := ring.Sign("", sampleClaims()); err == nil {
		t.Errorf("Sign(\"\") err = nil; want error")
	}
	if _, err := ring.Sign(TypeAccess, func() {}); err == nil {
		t.Errorf("Sign(unmarshalable) err = nil; want error")
	}
}

func TestJWKS(t *testing.T) {
	if got := string(NewKeyring(nil).JWKS()); got != `{"keys":[]}` {
		t.Errorf("empty JWKS() = %s; want {\"keys\":[]}", got)
	}
	var zero Keyring
	if got := string(zero.JWKS()); got != `{"keys":[]}` {
		t.Errorf("zero Keyring JWKS() = %s; want {\"keys\":[]}", got)
	}

	a, b, unpublished := mustKey(t), mustKey(t), mustKey(t)
	ring := NewKeyring(nil)
	ring.Replace(a, []*Key{unpublished}, []*Key{a, b, a, nil})
	raw := ring.JWKS()

	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatalf("JWKS() = %s; not JSON: %v", raw, err)
	}
	var kids []string
	for _, k := range set.Keys {
		for _, private := range []string{"d", "p", "q", "dp", "dq", "qi", "k"} {
			if _, ok := k[private]; ok {
				t.Errorf("JWKS key %v has private member %q", k["kid"], private)
			}
		}
		kid, _ := k["kid"].(string)
		kids = append(kids, kid)
	}
	slices.Sort(kids)
	want := []string{a.ID, b.ID}
	slices.Sort(want)
	if !slices.Equal(kids, want) {
		t.Errorf("JWKS() kids = %v; want %v (distinct, published only)", kids, want)
	}

	// The result is a copy: changing it must not change the keyring.
	raw[0] = 'X'
	if ring.JWKS()[0] != '{' {
		t.Errorf("JWKS() returned shared storage")
	}

	// Interop: a third-party JWKS consumer finds the key by kid and verifies our token.
	var jwks jose.JSONWebKeySet
	if err := json.Unmarshal(ring.JWKS(), &jwks); err != nil {
		t.Fatalf("jose.JSONWebKeySet unmarshal: %v", err)
	}
	tok, err := ring.Sign(TypeAccess, sampleClaims())
	if err != nil {
		t.Fatal(err)
	}
	found := jwks.Key(a.ID)
	if len(found) != 1 || !found[0].IsPublic() {
		t.Fatalf("jwks.Key(%q) = %v; want one public key", a.ID, found)
	}
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jws.Verify(found[0]); err != nil {
		t.Errorf("verifying with the published JWK: %v", err)
	}
}

func TestPeek(t *testing.T) {
	ring, _ := newRing(t)
	raw, err := ring.Sign(TypeAPISecret, sampleClaims())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   string
		want string
	}{
		{raw, TypeAPISecret},
		{"", ""},
		{"ghk_abcdef", ""},
		{"a.b", ""},
		{"a.b.c.d", ""},
		{"!!!.b.c", ""},
		{b64(`{"typ":5}`) + ".e30.", ""},
		{b64(`{"typ":"magic+jwt"}`) + ".e30.", TypeMagic},
		{b64(`not json`) + ".e30.", ""},
	}
	for _, tt := range tests {
		if got := Peek(tt.in); got != tt.want {
			t.Errorf("Peek(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestKeyringConcurrent(t *testing.T) {
	keys := []*Key{mustKey(t), mustKey(t), mustKey(t)}
	ring := NewKeyring(nil)
	ring.Replace(keys[0], keys, keys)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if g == 0 {
					ring.Replace(keys[i%len(keys)], keys, keys)
					continue
				}
				raw, err := ring.Sign(TypeAccess, sampleClaims())
				if err != nil {
					errs <- err
					return
				}
				var got accessClaims
				if _, err := ring.Verify(raw, TypeAccess, &got); err != nil {
					errs <- err
					return
				}
				_ = ring.JWKS()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent sign/verify: %v", err)
	}
}

func TestClaimsValidate(t *testing.T) {
	const (
		iss = "https://auth.example.com"
		aud = "app_1"
		t0  = 1_900_000_000
	)
	now := time.Unix(t0, 0)
	base := Claims{Issuer: iss, Audience: Audience{aud}, Expiry: t0 + 600, IssuedAt: t0 - 5, NotBefore: t0 - 5}
	with := func(f func(*Claims)) Claims {
		c := base
		c.Audience = slices.Clone(base.Audience)
		f(&c)
		return c
	}
	tests := []struct {
		name       string
		claims     Claims
		issuer     string
		audience   string
		now        time.Time
		requireExp bool
		ok         bool
	}{
		{"valid", base, iss, aud, now, true, true},
		{"expired", with(func(c *Claims) { c.Expiry = t0 - 60 }), iss, aud, now, true, false},
		{"exp 29s ago within leeway", with(func(c *Claims) { c.Expiry = t0 - 29 }), iss, aud, now, true, true},
		{"exp 30s ago at leeway edge", with(func(c *Claims) { c.Expiry = t0 - 30 }), iss, aud, now, true, false},
		{"exp just inside leeway", with(func(c *Claims) { c.Expiry = t0 - 30 }), iss, aud, now.Add(-time.Nanosecond), true, true},
		{"exp equals now", with(func(c *Claims) { c.Expiry = t0 }), iss, aud, now, true, true},
		{"missing exp required", with(func(c *Claims) { c.Expiry = 0 }), iss, aud, now, true, false},
		{"missing exp optional", with(func(c *Claims) { c.Expiry = 0 }), iss, aud, now, false, true},
		{"expired though optional", with(func(c *Claims) { c.Expiry = t0 - 31 }), iss, aud, now, false, false},
		{"nbf in future", with(func(c *Claims) { c.NotBefore = t0 + 60 }), iss, aud, now, true, false},
		{"nbf 30s ahead at leeway edge", with(func(c *Claims) { c.NotBefore = t0 + 30 }), iss, aud, now, true, true},
		{"nbf 31s ahead", with(func(c *Claims) { c.NotBefore = t0 + 31 }), iss, aud, now, true, false},
		{"nbf just beyond leeway", with(func(c *Claims) { c.NotBefore = t0 + 30 }), iss, aud, now.Add(-time.Nanosecond), true, false},
		{"iat 30s ahead at leeway edge", with(func(c *Claims) { c.IssuedAt = t0 + 30 }), iss, aud, now, true, true},
		{"iat 31s ahead", with(func(c *Claims) { c.IssuedAt = t0 + 31 }), iss, aud, now, true, false},
		{"wrong issuer", base, "https://evil.example", aud, now, true, false},
		{"missing issuer claim", with(func(c *Claims) { c.Issuer = "" }), iss, aud, now, true, false},
		{"empty expected issuer", with(func(c *Claims) { c.Issuer = "" }), "", aud, now, true, false},
		{"wrong audience", base, iss, "app_2", now, true, false},
		{"missing audience", with(func(c *Claims) { c.Audience = nil }), iss, aud, now, true, false},
		{"empty expected audience", with(func(c *Claims) { c.Audience = nil }), iss, "", now, true, false},
		{"audience in array", with(func(c *Claims) { c.Audience = Audience{"app_0", aud} }), iss, aud, now, true, true},
		{"audience prefix only", with(func(c *Claims) { c.Audience = Audience{aud + "0"} }), iss, aud, now, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.claims.Validate(tt.issuer, tt.audience, tt.now, tt.requireExp)
			if tt.ok && err != nil {
				t.Errorf("Validate(%q, %q, %v, %v) = %v; want nil", tt.issuer, tt.audience, tt.now, tt.requireExp, err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalid) {
				t.Errorf("Validate(%q, %q, %v, %v) = %v; want ErrInvalid", tt.issuer, tt.audience, tt.now, tt.requireExp, err)
			}
		})
	}
}

// TestClaimsValidateAudienceForms checks aud decoded from a JSON string and from an array.
func TestClaimsValidateAudienceForms(t *testing.T) {
	now := time.Unix(1_900_000_000, 0)
	for _, js := range []string{
		`{"iss":"i","aud":"app_1","exp":1900000100}`,
		`{"iss":"i","aud":["app_0","app_1"],"exp":1900000100}`,
	} {
		var c Claims
		if err := json.Unmarshal([]byte(js), &c); err != nil {
			t.Fatalf("Unmarshal(%s): %v", js, err)
		}
		if err := c.Validate("i", "app_1", now, true); err != nil {
			t.Errorf("Validate(app_1) for %s = %v; want nil", js, err)
		}
		if err := c.Validate("i", "app_2", now, true); !errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(app_2) for %s = %v; want ErrInvalid", js, err)
		}
	}
}

func TestAudienceJSON(t *testing.T) {
	marshal := []struct {
		in   Audience
		want string
	}{
		{Audience{"a"}, `"a"`},
		{Audience{"a", "b"}, `["a","b"]`},
		{Audience{}, `[]`},
		{nil, `[]`},
	}
	for _, tt := range marshal {
		got, err := json.Marshal(tt.in)
		if err != nil || string(got) != tt.want {
			t.Errorf("json.Marshal(%#v) = %s, %v; want %s, nil", tt.in, got, err, tt.want)
		}
	}
	got, err := json.Marshal(Claims{Issuer: "i"})
	if err != nil || string(got) != `{"iss":"i"}` {
		t.Errorf("json.Marshal(Claims without aud) = %s, %v; want {\"iss\":\"i\"}, nil", got, err)
	}

	unmarshal := []struct {
		in      string
		want    Audience
		wantErr bool
	}{
		{`"a"`, Audience{"a"}, false},
		{`["a"]`, Audience{"a"}, false},
		{`["a","b"]`, Audience{"a", "b"}, false},
		{`[]`, Audience{}, false},
		{`null`, nil, false},
		{`5`, nil, true},
		{`["a",5]`, nil, true},
		{`{"a":1}`, nil, true},
	}
	for _, tt := range unmarshal {
		var got Audience
		err := json.Unmarshal([]byte(tt.in), &got)
		if tt.wantErr {
			if err == nil {
				t.Errorf("json.Unmarshal(%s) = %#v, nil; want error", tt.in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("json.Unmarshal(%s) = %#v, %v; want %#v, nil", tt.in, got, err, tt.want)
		}
	}
}

func FuzzVerify(f *testing.F) {
	ring, key := newRing(f)
	valid, err := ring.Sign(TypeAccess, sampleClaims())
	if err != nil {
		f.Fatal(err)
	}
	parts := strings.Split(valid, ".")
	seeds := []string{
		valid,
		"",
		".",
		"..",
		"a.b.c",
		parts[0] + "." + parts[1] + ".",
		b64(`{"alg":"none","typ":"at+jwt","kid":"`+key.ID+`"}`) + "." + parts[1] + ".",
		b64(`{"alg":"ES256","typ":"at+jwt","kid":"`+key.ID+`","jwk":{}}`) + "." + parts[1] + "." + parts[2],
		b64(`{"alg":"ES256","typ":"at+jwt","kid":"`+key.ID+`"}`) + "." + b64(`{"aud":[[[]]]}`) + "." + parts[2],
		// RFC 7515 A.3 example (ES256, no kid).
		"eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q",
	}
	for _, s := range seeds {
		f.Add(s, TypeAccess)
	}
	f.Add(valid, TypeRefresh)
	f.Fuzz(func(t *testing.T, raw, typ string) {
		var claims accessClaims
		kid, err := ring.Verify(raw, typ, &claims)
		if err == nil {
			// Only a correctly signed token of the requested type may pass.
			if kid != key.ID || typ != TypeAccess || Peek(raw) != typ {
				t.Errorf("Verify(%q, %q) accepted with kid %q", raw, typ, kid)
			}
		} else if !errors.Is(err, ErrInvalid) {
			t.Errorf("Verify(%q, %q) error = %v; want ErrInvalid", raw, typ, err)
		}
		_ = Peek(raw)
	})
}

// BenchmarkSign and BenchmarkVerify measure an access token with each
// algorithm (docs/performance.md). Besides ns/op they report cpu-ns/op, the
// process's CPU time per operation, which a busy machine does not inflate.
func BenchmarkSign(b *testing.B) {
	for _, alg := range Algorithms {
		b.Run(alg, func(b *testing.B) {
			ring := benchRing(b, alg)
			claims := sampleClaims()
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if _, _, err := ring.SignWith(alg, TypeAccess, claims); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reportCPU starts counting the process's CPU time; the function it returns
// reports it per operation as cpu-ns/op.
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		if used := processCPU() - start; used > 0 && b.N > 0 {
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	for _, alg := range Algorithms {
		b.Run(alg, func(b *testing.B) {
			ring := benchRing(b, alg)
			raw, _, err := ring.SignWith(alg, TypeAccess, sampleClaims())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				var got accessClaims
				if _, err := ring.Verify(raw, TypeAccess, &got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkKeyFromPrivateDER is what loading one stored key costs (the
// keyring's source opens and parses each key it has not loaded before).
func BenchmarkKeyFromPrivateDER(b *testing.B) {
	for _, alg := range Algorithms {
		b.Run(alg, func(b *testing.B) {
			key, err := GenerateKeyFor(alg)
			if err != nil {
				b.Fatal(err)
			}
			der, err := key.PrivateDER()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := KeyFromPrivateDER(der); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchRing(b *testing.B, alg string) *Keyring {
	key, err := GenerateKeyFor(alg)
	if err != nil {
		b.Fatal(err)
	}
	ring := NewKeyring(nil)
	ring.Replace(key, nil, []*Key{key})
	return ring
}

// ExampleKeyring_Sign shows the intended flow: sign, verify by type, then validate claims.
func ExampleKeyring_Sign() {
	key, _ := GenerateKey()
	ring := NewKeyring(nil)
	ring.Replace(key, nil, []*Key{key})
	now := time.Unix(1_900_000_000, 0)
	raw, _ := ring.Sign(TypeAccess, Claims{Issuer: "https://auth.example.com", Audience: Audience{"app_1"}, Expiry: now.Unix() + 900})

	var c Claims
	_, err := ring.Verify(raw, TypeAccess, &c)
	fmt.Println(err, c.Validate("https://auth.example.com", "app_1", now, true))
	// Output: <nil> <nil>
}

// TestVerifyUnknownKidReloads: a token signed with a key the keyring does not
// hold yet verifies once the source has been read again; a made-up kid
// within the next second does not read the source again.
func TestVerifyUnknownKidReloads(t *testing.T) {
	old, newKey := mustKey(t), mustKey(t)
	var mu sync.Mutex
	calls, current := 0, KeySet{Signers: []*Key{old}, Published: []*Key{old}}
	ring := NewKeyring(func(context.Context) (KeySet, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return current, nil
	})
	if err := ring.Reload(context.Background()); err != nil || calls != 1 {
		t.Fatalf("Reload = %v (source calls %d); want nil, 1", err, calls)
	}
	other := NewKeyring(nil)
	other.Replace(newKey, nil, nil)
	raw, err := other.Sign(TypeAccess, sampleClaims())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	current = KeySet{Signers: []*Key{newKey}, Verify: []*Key{old}, Published: []*Key{newKey, old}}
	mu.Unlock()
	var got accessClaims
	kid, err := ring.Verify(raw, TypeAccess, &got)
	if err != nil || kid != newKey.ID || calls != 2 {
		t.Fatalf("Verify(new kid) = %q, %v (source calls %d); want %q, nil, 2", kid, err, calls, newKey.ID)
	}
	if _, err := ring.Verify(raw, TypeAccess, &got); err != nil || calls != 2 {
		t.Errorf("second Verify = %v, source calls %d; want nil and no new call", err, calls)
	}
	stranger := NewKeyring(nil)
	stranger.Replace(mustKey(t), nil, nil)
	forged, _ := stranger.Sign(TypeAccess, sampleClaims())
	if _, err := ring.Verify(forged, TypeAccess, &got); !errors.Is(err, ErrInvalid) || calls != 2 {
		t.Errorf("Verify(unknown kid within a second of the last reload) = %v, source calls %d; want ErrInvalid, 2", err, calls)
	}
}

// TestReloadWaitsOutsideTheLock: while one unknown-kid reload waits on a
// slow source, verifications of known kids go on, and other callers with
// unknown kids wait for that reload instead of starting their own.
func TestReloadWaitsOutsideTheLock(t *testing.T) {
	key, newKey := mustKey(t), mustKey(t)
	release := make(chan struct{})
	var calls atomic.Int32
	ring := NewKeyring(func(context.Context) (KeySet, error) {
		calls.Add(1)
		<-release
		return KeySet{Signers: []*Key{newKey}, Verify: []*Key{key}, Published: []*Key{newKey, key}}, nil
	})
	ring.Replace(key, nil, []*Key{key})
	known, _ := ring.Sign(TypeAccess, sampleClaims())
	other := NewKeyring(nil)
	other.Replace(newKey, nil, nil)
	fresh, _ := other.Sign(TypeAccess, sampleClaims())

	done := make(chan error, 2)
	for range 2 {
		go func() {
			var c accessClaims
			_, err := ring.Verify(fresh, TypeAccess, &c)
			done <- err
		}()
	}
	for calls.Load() == 0 {
		runtime.Gosched()
	}
	var c accessClaims
	if _, err := ring.Verify(known, TypeAccess, &c); err != nil {
		t.Fatalf("Verify(known kid) during a reload = %v; want nil", err)
	}
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("Verify(new kid) = %v; want nil once the reload is done", err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("source calls = %d; want 1 (the second caller waits for the first reload)", n)
	}
}
