package sessionverify_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/gatehouse-auth/gatehouse/sessionverify"
)

func ExampleVerifier_Middleware() {
	v, err := sessionverify.New(sessionverify.Config{
		BaseURL: os.Getenv("AUTH_BASE_URL"), // Gatehouse as the server's base_url, e.g. http://127.0.0.1:8080
		AppID:   os.Getenv("AUTH_APP_ID"),   // your app's id
	})
	if err != nil {
		log.Fatal(err)
	}
	me := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := sessionverify.ClaimsFrom(r.Context())
		fmt.Fprintf(w, "hello, user %s (session %s)\n", c.UserID, c.SessionID)
	})
	// The browser sends the SDK's access token as "Authorization: Bearer <token>".
	http.Handle("GET /api/me", v.Middleware(me))
}

// A self-contained run: a stand-in for Gatehouse serves one EdDSA key, and a token signed with it
// is checked now and after it expired.
func ExampleVerifier_Verify() {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA", Use: "sig"}}})
	gatehouse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(jwks) }))
	defer gatehouse.Close()

	issued := time.Unix(1700000000, 0)
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: priv, KeyID: "k1"}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	claims, _ := json.Marshal(map[string]any{
		"iss": gatehouse.URL, "aud": "app-1", "aid": "app-1", "sub": "user-1", "uuid": "user-1", "sid": "session-1",
		"iat": issued.Unix(), "exp": issued.Add(15 * time.Minute).Unix(),
	})
	obj, _ := signer.Sign(claims)
	access, _ := obj.CompactSerialize()

	now := issued.Add(time.Minute)
	v, _ := sessionverify.New(sessionverify.Config{BaseURL: gatehouse.URL, AppID: "app-1", Now: func() time.Time { return now }})
	c, err := v.Verify(context.Background(), access)
	fmt.Println(c.UserID, c.SessionID, err)

	now = issued.Add(time.Hour)
	_, err = v.Verify(context.Background(), access)
	fmt.Println("an hour later:", errors.Is(err, sessionverify.ErrExpired))
	// Output:
	// user-1 session-1 <nil>
	// an hour later: true
}
