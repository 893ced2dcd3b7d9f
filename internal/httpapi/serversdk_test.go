package httpapi_test

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/token/tokentest"
)

// Access tokens as Scute's Python and Ruby server SDKs check them
// (server-sdk-compat §2), with a verifier written from that page alone and
// the standard library: the JWKS's RSA keys only, RS256 only, the key named
// by kid, exp with 30 s of leeway, aid equal to the app's id, uuid set, m2m
// absent or false, wid read as the workspace. An app that chose RS256 passes
// it; one on ES256 (or EdDSA) is refused, as the SDKs refuse it.

func TestServerSDKTokenCheck(t *testing.T) {
	runGroups(t, challengeOptions(), []group{
		{"algorithms", testAccessTokenAlgorithms},
		{"signatures per operation", testSignaturesPerOperation},
	})
}

// sdkClaims is what the SDKs read from a verified token.
type sdkClaims struct {
	Exp  *float64 `json:"exp"`
	AID  string   `json:"aid"`
	UUID string   `json:"uuid"`
	WID  string   `json:"wid"`
	M2M  *bool    `json:"m2m"`
}

// sdkVerify checks an access token as the server SDKs do, with the JWKS and
// the app as this server serves them, at now. It returns the workspace id.
func (e *env) sdkVerify(t *testing.T, access string, now time.Time) (string, error) {
	t.Helper()
	parts := strings.Split(access, ".")
	if len(parts) != 3 {
		return "", errors.New("not a JWT")
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return "", err
	}
	var header struct{ Alg, Kid string }
	if err := json.Unmarshal(hb, &header); err != nil {
		return "", err
	}
	if header.Alg != "RS256" {
		return "", fmt.Errorf("alg %q is not RS256", header.Alg)
	}
	jwks := e.do(t, "GET", e.authPath("/.well-known/jwks.json"), map[string]string{"Accept": "application/json"}, nil)
	if jwks.status != 200 {
		t.Fatalf("JWKS = %d %s", jwks.status, jwks.raw)
	}
	var set struct {
		Keys []struct{ Kty, Alg, Use, Kid, N, E string }
	}
	if err := json.Unmarshal([]byte(jwks.raw), &set); err != nil {
		t.Fatalf("JWKS %s: %v", jwks.raw, err)
	}
	var key *rsa.PublicKey
	for _, k := range set.Keys {
		if k.Kty != "RSA" || (k.Alg != "" && k.Alg != "RS256") || k.Kid != header.Kid {
			continue // EC and OKP keys are ignored; with a kid only that key is tried
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil || k.Use != "sig" {
			t.Fatalf("RSA JWK %+v is malformed", k)
		}
		key = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	if key == nil {
		return "", fmt.Errorf("no RSA key %q in the JWKS", header.Kid)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig); err != nil {
		return "", err
	}
	pb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", err
	}
	var c sdkClaims
	if err := json.Unmarshal(pb, &c); err != nil {
		return "", err
	}
	app := e.do(t, "GET", "/v1/apps/"+e.app.ID, map[string]string{"Accept": "application/json"}, nil)
	switch {
	case c.Exp == nil || now.After(time.Unix(int64(*c.Exp), 0).Add(30*time.Second)):
		return "", errors.New("expired")
	case c.AID == "" || c.AID != app.str("id"):
		return "", fmt.Errorf("aid %q is not the app's id %q", c.AID, app.str("id"))
	case c.M2M != nil && *c.M2M:
		return "", errors.New("an M2M token is not a user session")
	case c.UUID == "":
		return "", errors.New("no uuid")
	}
	return c.WID, nil
}

func testAccessTokenAlgorithms(t *testing.T, e *env) {
	alg := func(t *testing.T, access string) string { return tokentest.Header(t, access)["alg"].(string) }
	reload := func(t *testing.T) {
		a, err := e.Tenants.App(t.Context(), e.app.ID)
		if err != nil {
			t.Fatal(err)
		}
		e.app = a
	}

	// On the default (ES256), the SDKs refuse the token: there is no RSA key for it.
	userID, esAccess, _ := e.signIn(t, "algs@example.com", "user.created", "verification.email.requested", "challenge.created")
	if got := alg(t, esAccess); got != "ES256" {
		t.Fatalf("default access token alg = %s; want ES256", got)
	}
	if _, err := e.sdkVerify(t, esAccess, e.Clock.Now()); err == nil {
		t.Error("the SDK check accepted an ES256 token")
	}

	// Bad values name the field and change nothing.
	for _, bad := range []string{"HS256", "rs256", "none"} {
		scenario{method: "PATCH", path: "/v1/apps/" + e.app.ID, headers: bearer(e.appSecret),
			body: map[string]any{"app": map[string]any{"access_token_alg": bad}}, wantStatus: 400, wantCode: "invalid_request"}.run(t, e)
	}

	// The app's own secret switches it to RS256 (server-sdk-compat §4).
	r := e.setApp(t, map[string]any{"access_token_alg": "RS256"})
	if a := r.obj("app"); a["access_token_alg"] != "RS256" || a["access_token_alg_default"] != false {
		t.Fatalf("PATCH app = %s; want access_token_alg RS256 chosen by the app", r.raw)
	}
	reload(t)
	pub := e.do(t, "GET", "/v1/apps/"+e.app.ID, nil, nil)
	if _, ok := pub.body["access_token_alg"]; ok {
		t.Errorf("the public app view shows access_token_alg: %s", pub.raw)
	}

	// The JWKS lists the EC and the RSA key, each with kty, alg, use, kid and no private member.
	jwks := e.do(t, "GET", "/.well-known/jwks.json", nil, nil)
	var set struct{ Keys []map[string]any }
	if err := json.Unmarshal([]byte(jwks.raw), &set); err != nil {
		t.Fatal(err)
	}
	kinds, kids := map[string]bool{}, map[string]bool{}
	for _, k := range set.Keys {
		for _, m := range []string{"kty", "alg", "use", "kid"} {
			if k[m] == nil || k[m] == "" {
				t.Errorf("JWK %v has no %s", k, m)
			}
		}
		for _, private := range []string{"d", "p", "q", "dp", "dq", "qi"} {
			if _, ok := k[private]; ok {
				t.Errorf("JWK %v has the private member %s", k, private)
			}
		}
		if kids[k["kid"].(string)] {
			t.Errorf("kid %v listed twice", k["kid"])
		}
		kids[k["kid"].(string)] = true
		kinds[fmt.Sprint(k["kty"], "/", k["alg"])] = true
	}
	if !kinds["EC/ES256"] || !kinds["RSA/RS256"] {
		t.Errorf("JWKS key types = %v; want EC/ES256 and RSA/RS256", kinds)
	}

	// A new sign-in gets an RS256 token that the SDK check accepts, with wid.
	_, access, refresh := e.signIn(t, "algs@example.com", "verification.email.requested", "challenge.created")
	if got := alg(t, access); got != "RS256" {
		t.Fatalf("access token alg after choosing RS256 = %s", got)
	}
	wid, err := e.sdkVerify(t, access, e.Clock.Now())
	if err != nil || wid != e.app.WorkspaceID {
		t.Fatalf("SDK check of an RS256 token = %q, %v; want the workspace %s", wid, err, e.app.WorkspaceID)
	}
	if _, err := e.sdkVerify(t, access, e.Clock.Now().Add(time.Duration(e.app.AccessExpiration)*time.Second+31*time.Second)); err == nil {
		t.Error("the SDK check accepted the token after exp + 30 s")
	}
	// Tampering with the payload breaks the signature.
	parts := strings.Split(access, ".")
	claims := tokentest.Payload(t, access)
	claims["uuid"] = "someone-else"
	forged, _ := json.Marshal(claims)
	if _, err := e.sdkVerify(t, parts[0]+"."+base64.RawURLEncoding.EncodeToString(forged)+"."+parts[2], e.Clock.Now()); err == nil {
		t.Error("the SDK check accepted a token with an altered payload")
	}

	// The server accepts both (current_user), and refresh keeps the app's algorithm.
	for _, tok := range []string{esAccess, access} {
		if got := e.currentUser(t, tok); got["id"] != userID {
			t.Errorf("current_user with a %s token = %v", alg(t, tok), got)
		}
	}
	rr := scenario{method: "POST", path: e.authPath("/tokens/refresh"), headers: map[string]string{"X-Refresh-Token": refresh},
		wantStatus: 200}.run(t, e)
	next, _ := e.tokenSet(t, rr, userID)
	if got := alg(t, next); got != "RS256" {
		t.Errorf("refreshed access token alg = %s; want RS256", got)
	}
	if _, err := e.sdkVerify(t, next, e.Clock.Now()); err != nil {
		t.Errorf("SDK check of the refreshed token: %v", err)
	}
	if h := tokentest.Header(t, rr.str("refresh")); h["alg"] != "HS256" || h["kid"] != nil {
		t.Errorf("refresh token header = %v; want HS256 and no kid whatever the app chose (only the server reads it)", h)
	}

	// EdDSA works for the server (and the SDKs refuse it); default goes back to ES256.
	e.setApp(t, map[string]any{"access_token_alg": "EdDSA"})
	reload(t)
	_, edAccess, _ := e.signIn(t, "algs@example.com", "verification.email.requested", "challenge.created")
	if got := alg(t, edAccess); got != "EdDSA" {
		t.Errorf("access token alg after choosing EdDSA = %s", got)
	}
	if got := e.currentUser(t, edAccess); got["id"] != userID {
		t.Errorf("current_user with an EdDSA token = %v", got)
	}
	if _, err := e.sdkVerify(t, edAccess, e.Clock.Now()); err == nil {
		t.Error("the SDK check accepted an EdDSA token")
	}
	r = e.setApp(t, map[string]any{"access_token_alg": "default"})
	if a := r.obj("app"); a["access_token_alg"] != "ES256" || a["access_token_alg_default"] != true {
		t.Errorf("PATCH app back to default = %s; want ES256 from the server default", r.raw)
	}
	reload(t)
	_, back, _ := e.signIn(t, "algs@example.com", "verification.email.requested", "challenge.created")
	if got := alg(t, back); got != "ES256" {
		t.Errorf("access token alg back on the default = %s", got)
	}
	// RS256 tokens issued before the switch still work until they expire.
	if got := e.currentUser(t, next); got["id"] != userID {
		t.Errorf("current_user with an RS256 token after the switch back = %v", got)
	}
}

// testSignaturesPerOperation: what an app's algorithm costs is one signature
// per access token issued, and nothing else. With RS256 chosen, a sign-in
// and a refresh each make exactly one RS256 signature and a refresh no
// other (its refresh token is an HS256 MAC token whatever the app chose),
// current_user checks an RS256 signature once per token however often it
// is presented, and the JWKS costs none.
func testSignaturesPerOperation(t *testing.T, e *env) {
	e.setApp(t, map[string]any{"access_token_alg": "RS256"})
	a, err := e.Tenants.App(t.Context(), e.app.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.app = a
	ring := e.Keyring()
	type counts struct{ rsSigned, rsVerified, esSigned, esVerified uint64 }
	read := func() counts {
		var c counts
		c.rsSigned, c.rsVerified = ring.Counts("RS256")
		c.esSigned, c.esVerified = ring.Counts("ES256")
		return c
	}
	step := func(t *testing.T, name string, want counts, do func()) {
		t.Helper()
		before := read()
		do()
		after := read()
		got := counts{after.rsSigned - before.rsSigned, after.rsVerified - before.rsVerified,
			after.esSigned - before.esSigned, after.esVerified - before.esVerified}
		if got.rsSigned != want.rsSigned || got.rsVerified != want.rsVerified {
			t.Errorf("%s: %d RS256 signatures made, %d checked; want %d, %d", name, got.rsSigned, got.rsVerified, want.rsSigned, want.rsVerified)
		}
		if want.esSigned != ^uint64(0) && (got.esSigned != want.esSigned || got.esVerified != want.esVerified) {
			t.Errorf("%s: %d ES256 signatures made, %d checked; want %d, %d", name, got.esSigned, got.esVerified, want.esSigned, want.esVerified)
		}
	}
	const anyES = ^uint64(0) // the sign-in's own internal tokens are not counted here

	var userID, access, refresh string
	step(t, "code sign-in", counts{1, 0, anyES, 0}, func() {
		userID, access, refresh = e.signIn(t, "price@example.com", "user.created", "verification.email.requested", "challenge.created")
	})
	if h := tokentest.Header(t, access); h["alg"] != "RS256" {
		t.Fatalf("access token alg = %v; want RS256", h["alg"])
	}
	var next string
	step(t, "refresh", counts{1, 0, 0, 0}, func() {
		rr := scenario{method: "POST", path: e.authPath("/tokens/refresh"), headers: map[string]string{"X-Refresh-Token": refresh},
			wantStatus: 200}.run(t, e)
		next, _ = e.tokenSet(t, rr, userID)
	})
	step(t, "current_user three times", counts{0, 1, 0, 0}, func() {
		for range 3 {
			if got := e.currentUser(t, next); got["id"] != userID {
				t.Fatalf("current_user = %v; want %s", got, userID)
			}
		}
	})
	step(t, "JWKS twice", counts{0, 0, 0, 0}, func() {
		for _, path := range []string{"/.well-known/jwks.json", e.authPath("/.well-known/jwks.json")} {
			if r := e.do(t, "GET", path, nil, nil); r.status != 200 {
				t.Fatalf("GET %s = %d", path, r.status)
			}
		}
	})
	e.setApp(t, map[string]any{"access_token_alg": "default"})
}
