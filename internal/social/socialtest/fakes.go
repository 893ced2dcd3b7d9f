package socialtest

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Local fakes of the providers that are not plain OpenID providers, each
// speaking its provider's documented wire format: GitHub (OAuth 2 and its
// REST API), Sign in with Apple (form_post, a client secret that is an
// ES256 JWT, string booleans) and Microsoft Entra ID (a multi-tenant
// issuer template, tid, xms_edov). Each approves at once as the account
// the test chose, checks what the real provider checks (client
// credentials, the exact redirect URI, PKCE where offered) and refuses a
// code used twice.

// grant is an authorization the fake gave and not yet exchanged.
type grant struct {
	clientID, redirect, challenge, nonce, account string
}

type fakeBase struct {
	*httptest.Server
	mu     sync.Mutex
	grants map[string]grant
	// As is the account the next authorization approves.
	as string
}

func newBase(t testing.TB, h http.Handler) *fakeBase {
	f := &fakeBase{grants: map[string]grant{}}
	f.Server = httptest.NewServer(h)
	t.Cleanup(f.Close)
	return f
}

// SignInAs makes the next authorizations approve account.
func (f *fakeBase) SignInAs(account string) {
	f.mu.Lock()
	f.as = account
	f.mu.Unlock()
}

// authorize records a grant for the request's query and returns its code.
func (f *fakeBase) authorize(q url.Values) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	code := randomString()
	f.grants[code] = grant{clientID: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		nonce: q.Get("nonce"), account: f.as}
	return code
}

// take spends code: it must be of client, for redirect, and answer the
// PKCE challenge with verifier (when the authorization had one).
func (f *fakeBase) take(code, client, redirect, verifier string) (grant, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.grants[code]
	delete(f.grants, code)
	if !ok || g.clientID != client || g.redirect != redirect {
		return grant{}, false
	}
	if g.challenge != "" {
		sum := sha256.Sum256([]byte(verifier))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			return grant{}, false
		}
	}
	return g, true
}

func randomString() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// GitHubAccount is an account at the fake GitHub.
type GitHubAccount struct {
	ID     int64
	Login  string
	Name   string
	Emails []GitHubEmail
}

// GitHubEmail is one of /user/emails's entries.
type GitHubEmail struct {
	Email    string `json:"email"`
	Primary  bool   `json:"primary"`
	Verified bool   `json:"verified"`
}

// GitHub is the fake GitHub: its web host (authorize, access_token) and
// API at one URL.
type GitHub struct {
	*fakeBase
	ClientID, Secret string
	Accounts         map[string]GitHubAccount // by login
	tokens           map[string]string        // access token -> login
}

// StartGitHub serves the fake GitHub for client.
func StartGitHub(t testing.TB, clientID, secret string, accounts ...GitHubAccount) *GitHub {
	g := &GitHub{ClientID: clientID, Secret: secret, Accounts: map[string]GitHubAccount{}, tokens: map[string]string{}}
	for _, a := range accounts {
		g.Accounts[a.Login] = a
	}
	g.fakeBase = newBase(t, http.HandlerFunc(g.serve))
	return g
}

func (g *GitHub) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/login/oauth/authorize":
		q := r.URL.Query()
		if q.Get("client_id") != g.ClientID {
			http.Error(w, "unknown client", http.StatusNotFound)
			return
		}
		to, _ := url.Parse(q.Get("redirect_uri"))
		back := url.Values{"code": {g.authorize(q)}, "state": {q.Get("state")}}
		to.RawQuery = back.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	case "/login/oauth/access_token":
		_ = r.ParseForm()
		f := r.PostForm
		if r.Header.Get("Accept") != "application/json" {
			w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
			_, _ = w.Write([]byte("error=unsupported_accept"))
			return
		}
		if f.Get("client_id") != g.ClientID || f.Get("client_secret") != g.Secret {
			writeJSON(w, http.StatusOK, map[string]string{"error": "incorrect_client_credentials"})
			return
		}
		gr, ok := g.take(f.Get("code"), f.Get("client_id"), f.Get("redirect_uri"), f.Get("code_verifier"))
		if !ok {
			// GitHub answers a refused code with 200 and an error.
			writeJSON(w, http.StatusOK, map[string]string{"error": "bad_verification_code"})
			return
		}
		tok := "gho_" + randomString()
		g.mu.Lock()
		g.tokens[tok] = gr.account
		g.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]string{"access_token": tok, "token_type": "bearer", "scope": "read:user,user:email"})
	case "/user", "/user/emails":
		if r.Header.Get("User-Agent") == "" {
			writeJSON(w, http.StatusForbidden, map[string]string{"message": "Request forbidden by administrative rules. Please make sure your request has a User-Agent header"})
			return
		}
		g.mu.Lock()
		login, ok := g.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		a := g.Accounts[login]
		g.mu.Unlock()
		if !ok {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
			return
		}
		if r.URL.Path == "/user" {
			writeJSON(w, http.StatusOK, map[string]any{"login": a.Login, "id": a.ID, "name": a.Name, "email": nil, "type": "User"})
			return
		}
		writeJSON(w, http.StatusOK, a.Emails)
	default:
		http.NotFound(w, r)
	}
}

// OIDCFake is a fake of a provider that speaks OpenID with its own quirks:
// Apple or Microsoft (NewApple, NewMicrosoft).
type OIDCFake struct {
	*fakeBase
	ClientID string
	// Claims are the next ID tokens' claims of each account (sub and the
	// rest); iss, aud, iat, exp and nonce are the fake's.
	Claims map[string]map[string]any
	// issuer is the ID tokens' iss (per tenant for Microsoft).
	issuer   func(claims map[string]any) string
	doc      map[string]any
	docPath  string
	key      *rsa.PrivateKey
	checkTok func(f url.Values, r *http.Request) error
	formPost bool
	// User is what Apple posts as user on a first sign-in ("" for none).
	User string
	// forge, when set, makes the next ID tokens wrong on purpose (Forge).
	forge string
}

// Forge makes the next ID tokens wrong on purpose: "none" (unsigned, alg
// none) or "audience" (issued to another client); "" stops it.
func (o *OIDCFake) Forge(how string) {
	o.mu.Lock()
	o.forge = how
	o.mu.Unlock()
}

func newOIDCFake(t testing.TB, clientID string) *OIDCFake {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	o := &OIDCFake{ClientID: clientID, Claims: map[string]map[string]any{}, key: key}
	o.fakeBase = newBase(t, http.HandlerFunc(o.serve))
	return o
}

// NewApple is a fake Sign in with Apple for the Services ID clientID,
// whose client secrets must be signed by teamKey (the .p8 key of teamID,
// keyID).
func NewApple(t testing.TB, clientID, teamID, keyID string, teamKey *ecdsa.PublicKey) *OIDCFake {
	o := newOIDCFake(t, clientID)
	o.issuer = func(map[string]any) string { return o.URL }
	o.docPath = "/.well-known/openid-configuration"
	o.doc = map[string]any{"issuer": o.URL, "authorization_endpoint": o.URL + "/auth/authorize", "token_endpoint": o.URL + "/auth/token",
		"jwks_uri": o.URL + "/auth/keys", "response_types_supported": []string{"code", "code id_token"},
		"response_modes_supported": []string{"query", "fragment", "form_post"}, "subject_types_supported": []string{"pairwise"},
		"id_token_signing_alg_values_supported": []string{"RS256"}, "scopes_supported": []string{"openid", "email", "name"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_post"}, "claims_supported": []string{"aud", "email",
			"email_verified", "exp", "iat", "is_private_email", "iss", "nonce", "nonce_supported", "real_user_status", "sub", "transfer_sub"}}
	o.formPost = true
	o.checkTok = func(f url.Values, _ *http.Request) error {
		// Apple's client secret: an ES256 JWT by the team's key.
		tok, err := jwt.ParseSigned(f.Get("client_secret"), []jose.SignatureAlgorithm{jose.ES256})
		if err != nil || len(tok.Headers) != 1 || tok.Headers[0].KeyID != keyID {
			return fmt.Errorf("invalid_client")
		}
		var c jwt.Claims
		if err := tok.Claims(teamKey, &c); err != nil || c.Issuer != teamID || c.Subject != clientID ||
			!c.Audience.Contains("https://appleid.apple.com") || c.Validate(jwt.Expected{Time: time.Now()}) != nil {
			return fmt.Errorf("invalid_client")
		}
		return nil
	}
	return o
}

// NewMicrosoft is a fake Entra ID whose multi-tenant endpoints (common)
// name the issuer https://<fake>/{tenantid}/v2.0.
func NewMicrosoft(t testing.TB, clientID, secret string) *OIDCFake {
	o := newOIDCFake(t, clientID)
	o.issuer = func(c map[string]any) string { return o.URL + "/" + fmt.Sprint(c["tid"]) + "/v2.0" }
	o.docPath = "/common/v2.0/.well-known/openid-configuration"
	o.doc = map[string]any{"issuer": o.URL + "/{tenantid}/v2.0", "authorization_endpoint": o.URL + "/common/oauth2/v2.0/authorize",
		"token_endpoint": o.URL + "/common/oauth2/v2.0/token", "jwks_uri": o.URL + "/common/discovery/v2.0/keys",
		"userinfo_endpoint": o.URL + "/oidc/userinfo", "response_modes_supported": []string{"query", "fragment", "form_post"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"},
		"code_challenge_methods_supported":      []string{"plain", "S256"}}
	o.checkTok = func(f url.Values, r *http.Request) error {
		id, sec, ok := r.BasicAuth()
		if !ok {
			id, sec = f.Get("client_id"), f.Get("client_secret")
		}
		if id != clientID || sec != secret {
			return fmt.Errorf("invalid_client")
		}
		return nil
	}
	return o
}

// NewGeneric is a fake of a plain OpenID provider (client_secret_basic,
// PKCE), for ID tokens a conforming provider would never send (Forge).
func NewGeneric(t testing.TB, clientID, secret string) *OIDCFake {
	o := newOIDCFake(t, clientID)
	o.issuer = func(map[string]any) string { return o.URL }
	o.docPath = "/.well-known/openid-configuration"
	o.doc = map[string]any{"issuer": o.URL, "authorization_endpoint": o.URL + "/authorize", "token_endpoint": o.URL + "/token",
		"jwks_uri": o.URL + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"client_secret_basic"}}
	o.checkTok = func(_ url.Values, r *http.Request) error {
		if id, sec, ok := r.BasicAuth(); !ok || id != clientID || sec != secret {
			return fmt.Errorf("invalid_client")
		}
		return nil
	}
	return o
}

// Issuer is where the fake's discovery document is (Apple) or its host
// (Microsoft).
func (o *OIDCFake) Issuer() string { return o.URL }

func (o *OIDCFake) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == o.docPath:
		writeJSON(w, http.StatusOK, o.doc)
	case r.URL.Path == strings.TrimPrefix(o.doc["jwks_uri"].(string), o.URL):
		writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &o.key.PublicKey, KeyID: "fake-1", Algorithm: "RS256", Use: "sig"}}})
	case r.URL.Path == strings.TrimPrefix(o.doc["authorization_endpoint"].(string), o.URL):
		q := r.URL.Query()
		if q.Get("client_id") != o.ClientID {
			http.Error(w, "invalid_client", http.StatusBadRequest)
			return
		}
		code := o.authorize(q)
		if !o.formPost || q.Get("response_mode") != "form_post" {
			to, _ := url.Parse(q.Get("redirect_uri"))
			to.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
			http.Redirect(w, r, to.String(), http.StatusFound)
			return
		}
		// Apple's answer: a page whose form posts itself to the redirect URI.
		fields := map[string]string{"code": code, "state": q.Get("state")}
		if o.User != "" {
			fields["user"] = o.User
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = formPage.Execute(w, map[string]any{"Action": q.Get("redirect_uri"), "Fields": fields})
	case r.URL.Path == strings.TrimPrefix(o.doc["token_endpoint"].(string), o.URL):
		_ = r.ParseForm()
		f := r.PostForm
		if err := o.checkTok(f, r); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		client := f.Get("client_id")
		if client == "" {
			client, _, _ = r.BasicAuth()
		}
		g, ok := o.take(f.Get("code"), client, f.Get("redirect_uri"), f.Get("code_verifier"))
		if !ok || f.Get("grant_type") != "authorization_code" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		o.mu.Lock()
		claims := map[string]any{}
		for k, v := range o.Claims[g.account] {
			claims[k] = v
		}
		o.mu.Unlock()
		now := time.Now()
		claims["iss"], claims["aud"], claims["iat"], claims["exp"] = o.issuer(claims), o.ClientID, now.Unix(), now.Add(10*time.Minute).Unix()
		if g.nonce != "" {
			claims["nonce"] = g.nonce
		}
		o.mu.Lock()
		forge := o.forge
		o.mu.Unlock()
		if forge == "audience" {
			claims["aud"] = "another-client"
		}
		signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: o.key, KeyID: "fake-1"}},
			(&jose.SignerOptions{}).WithType("JWT"))
		idToken, err := jwt.Signed(signer).Claims(claims).Serialize()
		if forge == "none" {
			payload, _ := json.Marshal(claims)
			idToken = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"fake-1"}`)) + "." +
				base64.RawURLEncoding.EncodeToString(payload) + "."
		}
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "server_error"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"access_token": "at-" + randomString(), "token_type": "Bearer", "expires_in": 3600,
			"id_token": idToken})
	default:
		http.NotFound(w, r)
	}
}

var formPage = template.Must(template.New("form").Parse(`<!DOCTYPE html><html><body onload="document.forms[0].submit()">
<form method="post" action="{{.Action}}">{{range $k, $v := .Fields}}<input type="hidden" name="{{$k}}" value="{{$v}}">{{end}}</form></body></html>`))

// SubmitForm posts the self-submitting form of a page (Apple's form_post
// answer) with b, as the browser's script would, and returns the answer.
func SubmitForm(t testing.TB, b *http.Client, page string) *http.Response {
	t.Helper()
	action := between(page, `action="`, `"`)
	form := url.Values{}
	for rest := page; ; {
		i := strings.Index(rest, `<input type="hidden" name="`)
		if i < 0 {
			break
		}
		rest = rest[i+len(`<input type="hidden" name="`):]
		name := rest[:strings.IndexByte(rest, '"')]
		form.Set(name, html.UnescapeString(between(rest, `value="`, `"`)))
	}
	resp, err := b.PostForm(html.UnescapeString(action), form)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	if j := strings.Index(s, end); j >= 0 {
		return s[:j]
	}
	return s
}
