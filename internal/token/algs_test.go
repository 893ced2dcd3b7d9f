package token

import (
	"context"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Keys of every algorithm, made once: an RSA-2048 key takes a while.
var algKeys = sync.OnceValues(func() (map[string]*Key, error) {
	out := map[string]*Key{}
	for _, alg := range Algorithms {
		k, err := GenerateKeyFor(alg)
		if err != nil {
			return nil, err
		}
		out[alg] = k
	}
	return out, nil
})

func keyFor(t *testing.T, alg string) *Key {
	t.Helper()
	keys, err := algKeys()
	if err != nil {
		t.Fatal(err)
	}
	return keys[alg]
}

func TestGenerateKeyForEveryAlgorithm(t *testing.T) {
	for _, alg := range Algorithms {
		t.Run(alg, func(t *testing.T) {
			key := keyFor(t, alg)
			if key.Alg != alg {
				t.Fatalf("Alg = %q; want %q", key.Alg, alg)
			}
			der, err := key.PrivateDER()
			if err != nil {
				t.Fatal(err)
			}
			again, err := KeyFromPrivateDER(der)
			if err != nil || again.ID != key.ID || again.Alg != alg {
				t.Fatalf("KeyFromPrivateDER(PrivateDER()) = %+v, %v; want the same %s key %s", again, err, alg, key.ID)
			}
		})
	}
	if _, err := GenerateKeyFor("HS256"); err == nil {
		t.Error("GenerateKeyFor(HS256) succeeded; want an error")
	}
}

// TestPublicJWKPerKeyType: each type publishes exactly its public members
// (never d, p, q, dp, dq, qi), and the kid is the RFC 7638 thumbprint of them.
func TestPublicJWKPerKeyType(t *testing.T) {
	wantMembers := map[string][]string{
		ES256: {"alg", "crv", "kid", "kty", "use", "x", "y"},
		RS256: {"alg", "e", "kid", "kty", "n", "use"},
		EdDSA: {"alg", "crv", "kid", "kty", "use", "x"},
	}
	for _, alg := range Algorithms {
		t.Run(alg, func(t *testing.T) {
			key := keyFor(t, alg)
			b, err := key.PublicJWK()
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]string
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("PublicJWK() = %s: %v", b, err)
			}
			var names []string
			for n := range m {
				names = append(names, n)
			}
			slices.Sort(names)
			if !slices.Equal(names, wantMembers[alg]) {
				t.Fatalf("members = %v; want %v", names, wantMembers[alg])
			}
			if m["alg"] != alg || m["use"] != "sig" || m["kid"] != key.ID {
				t.Errorf("alg, use, kid = %q, %q, %q; want %q, sig, %q", m["alg"], m["use"], m["kid"], alg, key.ID)
			}
			var canonical string
			switch alg {
			case ES256:
				canonical = `{"crv":"P-256","kty":"EC","x":"` + m["x"] + `","y":"` + m["y"] + `"}`
			case RS256:
				pub := key.Public.(*rsa.PublicKey)
				if m["kty"] != "RSA" || m["e"] != "AQAB" || m["n"] != base64.RawURLEncoding.EncodeToString(pub.N.Bytes()) {
					t.Errorf("RSA members = %v; want kty RSA, e AQAB and the modulus", m)
				}
				n, _ := base64.RawURLEncoding.DecodeString(m["n"])
				if new(big.Int).SetBytes(n).BitLen() != 2048 {
					t.Errorf("modulus has %d bits; want 2048", new(big.Int).SetBytes(n).BitLen())
				}
				canonical = `{"e":"` + m["e"] + `","kty":"RSA","n":"` + m["n"] + `"}`
			case EdDSA:
				if m["kty"] != "OKP" || m["crv"] != "Ed25519" || m["x"] != base64.RawURLEncoding.EncodeToString(key.Public.(ed25519.PublicKey)) {
					t.Errorf("OKP members = %v; want kty OKP, crv Ed25519 and the key", m)
				}
				canonical = `{"crv":"Ed25519","kty":"OKP","x":"` + m["x"] + `"}`
			}
			sum := sha256.Sum256([]byte(canonical))
			if want := base64.RawURLEncoding.EncodeToString(sum[:]); key.ID != want {
				t.Errorf("kid = %s; want the RFC 7638 thumbprint %s", key.ID, want)
			}
		})
	}
}

// TestSignWithEachAlgorithm: an access token signed with each algorithm
// verifies, names its algorithm and signer in the header, and the JWKS lists
// every published key once.
func TestSignWithEachAlgorithm(t *testing.T) {
	var keys []*Key
	for _, alg := range Algorithms {
		keys = append(keys, keyFor(t, alg))
	}
	ring := NewKeyring(nil)
	ring.ReplaceSet(KeySet{Signers: keys, Published: append(slices.Clone(keys), keys[0])})
	for _, key := range keys {
		raw, kid, err := ring.SignWith(key.Alg, TypeAccess, sampleClaims())
		if err != nil || kid != key.ID || ring.SignerIDFor(key.Alg) != key.ID {
			t.Fatalf("SignWith(%s) = %v, kid %q; want the %s key", key.Alg, err, kid, key.ID)
		}
		header, err := parseHeader(raw)
		if err != nil {
			t.Fatal(err)
		}
		if alg, _ := headerString(header, "alg"); alg != key.Alg {
			t.Errorf("header alg = %q; want %q", alg, key.Alg)
		}
		var got accessClaims
		if kid, err := ring.Verify(raw, TypeAccess, &got); err != nil || kid != key.ID || got.Subject != sampleClaims().Subject {
			t.Errorf("Verify(%s token) = %q, %v; want %q", key.Alg, kid, err, key.ID)
		}
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(ring.JWKS(), &set); err != nil || len(set.Keys) != len(keys) {
		t.Fatalf("JWKS = %s, %v; want %d keys", ring.JWKS(), err, len(keys))
	}
	for i, k := range set.Keys {
		if k["kid"] != keys[i].ID || k["alg"] != keys[i].Alg {
			t.Errorf("JWKS key %d = %v; want %s %s", i, k, keys[i].Alg, keys[i].ID)
		}
	}
}

// TestAlgorithmIsPinnedPerTypeAndKey: only access tokens take RS256 or
// EdDSA; a header naming one algorithm with another algorithm's key fails
// (key type confusion), and so does a token re-signed by hand with HS256
// using the RSA public key as the MAC secret.
func TestAlgorithmIsPinnedPerTypeAndKey(t *testing.T) {
	ec, rsaKey, ed := keyFor(t, ES256), keyFor(t, RS256), keyFor(t, EdDSA)
	ring := NewKeyring(nil)
	ring.ReplaceSet(KeySet{Signers: []*Key{ec, rsaKey, ed}})

	for _, typ := range []string{TypeRefresh, TypeAPISecret, TypeMagic} {
		for _, alg := range []string{RS256, EdDSA} {
			if _, _, err := ring.SignWith(alg, typ, sampleClaims()); err == nil {
				t.Errorf("SignWith(%s, %s) succeeded; want a refusal", alg, typ)
			}
			// Signed anyway (as an access token, then relabelled): refused on the header.
			raw := relabel(t, ring, alg, TypeAccess, typ)
			var got accessClaims
			if _, err := ring.Verify(raw, typ, &got); !errors.Is(err, ErrInvalid) {
				t.Errorf("Verify(%s %s token) = %v; want ErrInvalid", alg, typ, err)
			}
		}
	}

	// alg swapped in the header to name another key type's algorithm.
	raw, _, err := ring.SignWith(RS256, TypeAccess, sampleClaims())
	if err != nil {
		t.Fatal(err)
	}
	for _, alg := range []string{ES256, EdDSA, "HS256", "PS256", "none"} {
		forged := withHeader(t, raw, map[string]any{"alg": alg, "kid": rsaKey.ID, "typ": TypeAccess})
		var got accessClaims
		if _, err := ring.Verify(forged, TypeAccess, &got); !errors.Is(err, ErrInvalid) {
			t.Errorf("Verify(RS256 token relabelled %s) = %v; want ErrInvalid", alg, err)
		}
	}
	// An ES256 header pointing at the RSA key's kid.
	esRaw, _, _ := ring.SignWith(ES256, TypeAccess, sampleClaims())
	forged := withHeader(t, esRaw, map[string]any{"alg": ES256, "kid": rsaKey.ID, "typ": TypeAccess})
	var got accessClaims
	if _, err := ring.Verify(forged, TypeAccess, &got); !errors.Is(err, ErrInvalid) {
		t.Errorf("Verify(ES256 header with the RSA kid) = %v; want ErrInvalid", err)
	}
	// An RSA key given with a wrong Alg is not installed.
	bad := *rsaKey
	bad.Alg = ES256
	other := NewKeyring(nil)
	other.ReplaceSet(KeySet{Signers: []*Key{&bad}, Verify: []*Key{&bad}, Published: []*Key{&bad}})
	if other.Signs(ES256) || other.Has(rsaKey.ID) || string(other.JWKS()) != emptyJWKS {
		t.Error("a key whose Alg does not match its type was installed")
	}
}

// TestSignWithNeverReadsTheSource: tokens are signed inside transactions,
// so SignWith must not wait for the key source (a database read on another
// connection): an algorithm with no key loaded fails at once, and signs
// once a Reload (the app read at the request's start) has loaded it.
func TestSignWithNeverReadsTheSource(t *testing.T) {
	ec, rsaKey := keyFor(t, ES256), keyFor(t, RS256)
	var mu sync.Mutex
	calls, current := 0, KeySet{Signers: []*Key{ec}}
	ring := NewKeyring(func(context.Context) (KeySet, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return current, nil
	})
	if err := ring.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	current = KeySet{Signers: []*Key{ec, rsaKey}} // another replica made the key
	mu.Unlock()
	if _, _, err := ring.SignWith(RS256, TypeAccess, sampleClaims()); err == nil || calls != 1 {
		t.Fatalf("SignWith(RS256) with no RS256 key loaded = %v after %d reads; want an error and no read", err, calls)
	}
	if err := ring.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, kid, err := ring.SignWith(RS256, TypeAccess, sampleClaims()); err != nil || kid != rsaKey.ID || calls != 2 {
		t.Errorf("SignWith(RS256) after a reload = %q, %v after %d reads; want %s after 2", kid, err, calls, rsaKey.ID)
	}
}

// relabel signs claims as typ "from" with alg and rewrites the typ header to "to".
func relabel(t *testing.T, ring *Keyring, alg, from, to string) string {
	t.Helper()
	raw, kid, err := ring.SignWith(alg, from, sampleClaims())
	if err != nil {
		t.Fatal(err)
	}
	return withHeader(t, raw, map[string]any{"alg": alg, "kid": kid, "typ": to})
}

// withHeader replaces the protected header of raw, keeping payload and signature.
func withHeader(t *testing.T, raw string, header map[string]any) string {
	t.Helper()
	b, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(raw, ".")
	return base64.RawURLEncoding.EncodeToString(b) + "." + parts[1] + "." + parts[2]
}

// TestFreshJWKSReadsNewKeys: the JWKS a replica serves is read again when
// its keys are more than a second old, so a key another replica just made
// is published everywhere as soon as it signs; within the second, and
// without a source, the keys held are served without a read.
func TestFreshJWKSReadsNewKeys(t *testing.T) {
	ec, rsaKey := keyFor(t, ES256), keyFor(t, RS256)
	var mu sync.Mutex
	calls, current := 0, KeySet{Signers: []*Key{ec}, Published: []*Key{ec}}
	ring := NewKeyring(func(context.Context) (KeySet, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return current, nil
	})
	now := time.Unix(1_900_000_000, 0)
	ring.now = func() time.Time { return now }
	if err := ring.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	current = KeySet{Signers: []*Key{ec, rsaKey}, Published: []*Key{ec, rsaKey}} // another replica made an RS256 key
	mu.Unlock()
	kids := func() []string {
		var set struct{ Keys []struct{ Kid string } }
		if err := json.Unmarshal(ring.FreshJWKS(), &set); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range set.Keys {
			out = append(out, k.Kid)
		}
		return out
	}
	now = now.Add(500 * time.Millisecond)
	if got := kids(); len(got) != 1 || calls != 1 {
		t.Fatalf("FreshJWKS within a second of the load = %v after %d reads; want the held key, no read", got, calls)
	}
	now = now.Add(time.Second)
	if got := kids(); len(got) != 2 || got[1] != rsaKey.ID || calls != 2 {
		t.Fatalf("FreshJWKS after a second = %v after %d reads; want the new RS256 key after one more read", got, calls)
	}
	if got := kids(); len(got) != 2 || calls != 2 {
		t.Errorf("FreshJWKS again at once = %v after %d reads; want no read", got, calls)
	}
}

// TestRSAKeysArePrecomputed: every RSA key the package makes or loads has
// its CRT values, so a signature does not derive them again (which made
// one take 1.3–1.8× as long), and so does a key built without them.
func TestRSAKeysArePrecomputed(t *testing.T) {
	made := keyFor(t, RS256)
	der, err := made.PrivateDER()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := KeyFromPrivateDER(der)
	if err != nil {
		t.Fatal(err)
	}
	src := made.Private.(*rsa.PrivateKey)
	bare := &rsa.PrivateKey{PublicKey: src.PublicKey, D: new(big.Int).Set(src.D),
		Primes: []*big.Int{new(big.Int).Set(src.Primes[0]), new(big.Int).Set(src.Primes[1])}}
	if bare.Precomputed.Dp != nil {
		t.Fatal("the bare key has CRT values before newKey")
	}
	wrapped, err := newKey(bare)
	if err != nil {
		t.Fatal(err)
	}
	ring := NewKeyring(func(context.Context) (KeySet, error) {
		return KeySet{Signers: []*Key{loaded}, Published: []*Key{loaded}}, nil
	})
	if err := ring.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	inRing := ring.load().signers[RS256]
	for name, k := range map[string]*Key{"generated": made, "parsed": loaded, "built bare": wrapped, "keyring signer": inRing} {
		p, ok := k.Private.(*rsa.PrivateKey)
		if !ok {
			t.Fatalf("%s: Private is %T; want *rsa.PrivateKey", name, k.Private)
		}
		if p.Precomputed.Dp == nil || p.Precomputed.Dq == nil || p.Precomputed.Qinv == nil {
			t.Errorf("%s key: CRT values missing (Dp %v, Dq %v, Qinv %v)", name, p.Precomputed.Dp != nil, p.Precomputed.Dq != nil, p.Precomputed.Qinv != nil)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s key: Validate = %v", name, err)
		}
		if got := p.N.BitLen(); got != 2048 && name == "generated" {
			t.Errorf("generated key has %d bits; want 2048", got)
		}
	}
}

// TestCounts: Counts tells the signatures made and checked per algorithm,
// failed checks included, and nothing for an unknown algorithm.
func TestCounts(t *testing.T) {
	if n := len(NewKeyring(nil).signed); n != len(Algorithms) {
		t.Fatalf("the keyring counts %d algorithms; Algorithms has %d", n, len(Algorithms))
	}
	ring := NewKeyring(nil)
	var signers []*Key
	for _, alg := range Algorithms {
		signers = append(signers, keyFor(t, alg))
	}
	ring.ReplaceSet(KeySet{Signers: signers, Published: signers})
	raw, _, err := ring.SignWith(RS256, TypeAccess, sampleClaims())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ring.SignWith(EdDSA, TypeAccess, sampleClaims()); err != nil {
		t.Fatal(err)
	}
	var c accessClaims
	for range 2 {
		if _, err := ring.Verify(raw, TypeAccess, &c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ring.Verify(raw[:len(raw)-4]+"AAAA", TypeAccess, &c); err == nil {
		t.Fatal("a forged signature verified")
	}
	for alg, want := range map[string][2]uint64{RS256: {1, 3}, EdDSA: {1, 0}, ES256: {0, 0}, "HS256": {0, 0}} {
		if s, v := ring.Counts(alg); s != want[0] || v != want[1] {
			t.Errorf("Counts(%s) = %d signed, %d verified; want %d, %d", alg, s, v, want[0], want[1])
		}
	}
}
