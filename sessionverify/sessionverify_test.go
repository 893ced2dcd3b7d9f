package sessionverify_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/sessionverify"
)

// The verifier against a real Gatehouse (served on a loopback port, both engines): users sign in
// by e-mail code over HTTP on apps signing with ES256, RS256 and EdDSA, and their access tokens
// are checked as an integrator's backend would, with a clock of the test's own.

// signIn signs email in to app by a code read from the mailbox and returns the token set.
func signIn(t *testing.T, sys *servertest.System, appID, email string) (access, refresh string) {
	t.Helper()
	post(t, sys.URL+"/v1/auth/"+appID+"/otps/login", map[string]any{"identifier": email}, nil)
	msg, ok := sys.Mail.Last(email)
	if !ok || msg.Code == "" {
		t.Fatalf("no code sent to %s", email)
	}
	var lookup struct{ User struct{ ID string } }
	get(t, sys.URL+"/v1/auth/"+appID+"/users?identifier="+url.QueryEscape(email), &lookup)
	var set struct{ Access, Refresh string }
	post(t, sys.URL+"/v1/auth/"+appID+"/otps/verify", map[string]any{"otp": msg.Code, "user_id": lookup.User.ID}, &set)
	if set.Access == "" || set.Refresh == "" {
		t.Fatalf("verify answered no tokens")
	}
	return set.Access, set.Refresh
}

func post(t *testing.T, u string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	res, err := http.Post(u, "application/json", bytes.NewReader(b))
	decode(t, res, err, out)
}

func get(t *testing.T, u string, out any) {
	t.Helper()
	res, err := http.Get(u)
	decode(t, res, err, out)
}

func decode(t *testing.T, res *http.Response, err error, out any) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s %s = %d %s", res.Request.Method, res.Request.URL.Path, res.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
	}
}

// header decodes a token's JOSE header.
func header(t *testing.T, tok string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// testClock is the verifier's clock; tests move it.
type testClock struct{ t atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Unix(0, c.t.Load()) }
func (c *testClock) Set(t time.Time)         { c.t.Store(t.UnixNano()) }
func (c *testClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// countingClient counts the key set reads.
func countingClient(n *atomic.Int32) *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/.well-known/jwks.json") {
			n.Add(1)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestVerifyAgainstGatehouse(t *testing.T) {
	servertest.ForEach(t, servertest.Options{Serve: true}, func(t *testing.T, sys *servertest.System) {
		ws, _ := sys.Workspace(t, "Acme")
		algs := []string{"ES256", "RS256", "EdDSA"}
		apps := map[string]tenant.App{}
		for _, alg := range algs {
			apps[alg] = sys.App(t, ws.ID, "App "+alg, func(s *tenant.AppSettings) { s.AccessTokenAlg = &alg })
		}
		clock := &testClock{}
		clock.Set(sys.Clock.Now())
		var fetches atomic.Int32
		newVerifier := func(t *testing.T, appID string, mod func(*sessionverify.Config)) *sessionverify.Verifier {
			cfg := sessionverify.Config{BaseURL: sys.URL, AppID: appID, HTTPClient: countingClient(&fetches), Now: clock.Now}
			if mod != nil {
				mod(&cfg)
			}
			v, err := sessionverify.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}

		for _, alg := range algs {
			t.Run(alg, func(t *testing.T) {
				app := apps[alg]
				access, refresh := signIn(t, sys, app.ID, "ada-"+strings.ToLower(alg)+"@example.com")
				if got := header(t, access)["alg"]; got != alg {
					t.Fatalf("the app signs with %v, want %s", got, alg)
				}
				v := newVerifier(t, app.ID, nil)
				c, err := v.Verify(t.Context(), access)
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if c.UserID == "" || c.UserID != c.Subject || c.AppID != app.ID || c.SessionID == "" || c.WorkspaceID != ws.ID ||
					len(c.AMR) != 1 || c.AMR[0] != "email_otp" {
					t.Fatalf("claims = %+v", c)
				}

				// The refresh token (HS256, a MAC only the server can check) is refused.
				if _, err := v.Verify(t.Context(), refresh); !errors.Is(err, sessionverify.ErrInvalid) {
					t.Fatalf("a refresh token as access: %v, want ErrInvalid", err)
				}
				// Expiry, with 30 s of leeway, on the verifier's clock.
				exp := time.Unix(c.ExpiresAt, 0)
				clock.Set(exp.Add(29 * time.Second))
				if _, err := v.Verify(t.Context(), access); err != nil {
					t.Fatalf("29 s after exp: %v", err)
				}
				clock.Set(exp.Add(30 * time.Second))
				if _, err := v.Verify(t.Context(), access); !errors.Is(err, sessionverify.ErrExpired) || !errors.Is(err, sessionverify.ErrInvalid) {
					t.Fatalf("30 s after exp: %v, want ErrExpired", err)
				}
				clock.Set(sys.Clock.Now())
				// Another app's verifier (wrong audience), another issuer.
				other := apps["ES256"].ID
				if alg == "ES256" {
					other = apps["RS256"].ID
				}
				if _, err := newVerifier(t, other, nil).Verify(t.Context(), access); !errors.Is(err, sessionverify.ErrInvalid) {
					t.Fatalf("another app's verifier: %v, want ErrInvalid", err)
				}
				if _, err := newVerifier(t, app.ID, func(c *sessionverify.Config) { c.Issuer = "https://other.example" }).Verify(t.Context(), access); !errors.Is(err, sessionverify.ErrInvalid) {
					t.Fatalf("another issuer: %v, want ErrInvalid", err)
				}
				// A changed claim breaks the signature.
				parts := strings.Split(access, ".")
				payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
				forged := bytes.Replace(payload, []byte(c.UserID), []byte(strings.Repeat("0", len(c.UserID))), 1)
				tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(forged) + "." + parts[2]
				if _, err := v.Verify(t.Context(), tampered); !errors.Is(err, sessionverify.ErrInvalid) {
					t.Fatalf("tampered claims: %v, want ErrInvalid", err)
				}
			})
		}

		t.Run("wrong alg", func(t *testing.T) {
			app := apps["ES256"]
			access, _ := signIn(t, sys, app.ID, "alg@example.com")
			v := newVerifier(t, app.ID, nil)
			parts := strings.Split(access, ".")
			kid := header(t, access)["kid"].(string)
			withHeader := func(h map[string]any, sig string) string {
				b, _ := json.Marshal(h)
				return base64.RawURLEncoding.EncodeToString(b) + "." + parts[1] + "." + sig
			}
			for name, tok := range map[string]string{
				"none":                  withHeader(map[string]any{"alg": "none", "typ": "at+jwt", "kid": kid}, ""),
				"HS256":                 withHeader(map[string]any{"alg": "HS256", "typ": "at+jwt", "kid": kid}, parts[2]),
				"RS256 on an ES256 key": withHeader(map[string]any{"alg": "RS256", "typ": "at+jwt", "kid": kid}, parts[2]),
				"no typ":                withHeader(map[string]any{"alg": "ES256", "kid": kid}, parts[2]),
			} {
				if _, err := v.Verify(t.Context(), tok); !errors.Is(err, sessionverify.ErrInvalid) {
					t.Errorf("%s: %v, want ErrInvalid", name, err)
				}
			}
		})

		t.Run("unknown kid", func(t *testing.T) {
			app := apps["ES256"]
			access, _ := signIn(t, sys, app.ID, "kid@example.com")
			clock.Set(sys.Clock.Now())
			v := newVerifier(t, app.ID, nil)
			before := fetches.Load()
			c, err := v.Verify(t.Context(), access)
			if err != nil || fetches.Load() != before+1 {
				t.Fatalf("first Verify: %v after %d reads, want one", err, fetches.Load()-before)
			}
			// A token with the same claims under a key of its own, and a kid no set holds.
			forged := signWithOwnKey(t, "made-up-kid", c)
			if _, err := v.Verify(t.Context(), forged); !errors.Is(err, sessionverify.ErrInvalid) || fetches.Load() != before+1 {
				t.Fatalf("made-up kid within a minute: %v after %d reads, want ErrInvalid and no read", err, fetches.Load()-before)
			}
			clock.Advance(sessionverify.RefetchInterval)
			if _, err := v.Verify(t.Context(), forged); !errors.Is(err, sessionverify.ErrInvalid) || fetches.Load() != before+2 {
				t.Fatalf("made-up kid a minute later: %v after %d reads, want ErrInvalid after one more read", err, fetches.Load()-before)
			}
			if _, err := v.Verify(t.Context(), forged); !errors.Is(err, sessionverify.ErrInvalid) || fetches.Load() != before+2 {
				t.Fatalf("made-up kid again: %v, %d reads", err, fetches.Load()-before)
			}

			// A rotation: the new key's first token is unknown to the verifier, which reads the
			// set again (a minute after its last read) and finds it.
			if _, err := sys.Tenants.RotateSigningKeys(t.Context(), servertest.Operator, "ES256"); err != nil {
				t.Fatal(err)
			}
			rotated, _ := signIn(t, sys, app.ID, "kid@example.com")
			if header(t, rotated)["kid"] == header(t, access)["kid"] {
				t.Fatal("the rotation made no new key")
			}
			if _, err := v.Verify(t.Context(), rotated); !errors.Is(err, sessionverify.ErrInvalid) {
				t.Fatalf("new kid within a minute of the last read: %v, want ErrInvalid", err)
			}
			clock.Advance(sessionverify.RefetchInterval)
			if _, err := v.Verify(t.Context(), rotated); err != nil || fetches.Load() != before+3 {
				t.Fatalf("new kid a minute later: %v after %d reads", err, fetches.Load()-before)
			}
			// The old key still verifies: a retired key stays listed until its tokens expire.
			if _, err := v.Verify(t.Context(), access); err != nil {
				t.Fatalf("the token of the previous key: %v", err)
			}
			// Keys held for MaxKeyAge are read again on the next token, known kid or not.
			clock.Advance(sessionverify.MaxKeyAge)
			if _, err := v.Verify(t.Context(), rotated); err != nil || fetches.Load() != before+4 {
				t.Fatalf("after MaxKeyAge: %v after %d reads", err, fetches.Load()-before)
			}
			if _, err := v.Verify(t.Context(), rotated); err != nil || fetches.Load() != before+4 {
				t.Fatalf("right after: %v after %d reads", err, fetches.Load()-before)
			}
		})

		t.Run("middleware", func(t *testing.T) {
			app := apps["EdDSA"]
			access, _ := signIn(t, sys, app.ID, "mw@example.com")
			clock.Set(sys.Clock.Now())
			v := newVerifier(t, app.ID, nil)
			srv := httptest.NewServer(v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c, _ := sessionverify.ClaimsFrom(r.Context())
				io.WriteString(w, c.UserID)
			})))
			defer srv.Close()
			call := func(h, value string) (int, string) {
				req, _ := http.NewRequest("GET", srv.URL, nil)
				if h != "" {
					req.Header.Set(h, value)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				return res.StatusCode, string(b)
			}
			c, _ := v.Verify(t.Context(), access)
			for _, tc := range []struct {
				header, value string
				want          int
			}{
				{"Authorization", "Bearer " + access, 200},
				{"X-Authorization", access, 200},
				{"", "", 401},
				{"Authorization", "Basic " + access, 401},
				{"Authorization", "Bearer " + access[:len(access)-4] + "AAAA", 401},
			} {
				code, body := call(tc.header, tc.value)
				if code != tc.want || (code == 200 && body != c.UserID) {
					t.Errorf("%s %.12q: %d %q, want %d", tc.header, tc.value, code, body, tc.want)
				}
				if code == 401 && strings.Contains(body, access) {
					t.Errorf("the 401 answer repeats the token")
				}
			}
		})

		t.Run("keys unavailable", func(t *testing.T) {
			access, _ := signIn(t, sys, apps["ES256"].ID, "down@example.com")
			v := newVerifier(t, apps["ES256"].ID, func(c *sessionverify.Config) { c.JWKSURL = sys.URL + "/no-such-jwks" })
			if _, err := v.Verify(t.Context(), access); !errors.Is(err, sessionverify.ErrKeys) {
				t.Fatalf("no key set: %v, want ErrKeys", err)
			}
			w := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/api/me", nil)
			req.Header.Set("Authorization", "Bearer "+access)
			v.Middleware(http.NotFoundHandler()).ServeHTTP(w, req)
			if w.Code != http.StatusServiceUnavailable {
				t.Fatalf("the middleware without keys: %d, want 503", w.Code)
			}
		})
	})
}

// signWithOwnKey signs claims as an access token with a fresh P-256 key the server never saw.
func signWithOwnKey(t *testing.T, kid string, c *sessionverify.Claims) string {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: priv, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(c)
	obj, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
