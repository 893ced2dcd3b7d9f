package social

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// The OpenID side of social sign-in: a provider's discovery document, its
// keys, the code exchange and the ID token's checks (OpenID Connect Core
// §3.1.3.7, RFC 9700). Every call goes through the client the assembly
// passes (SSRF-safe: no private address outside development), with a
// bounded time and answer size.

// ErrProvider is a provider that answered wrongly, or not at all: the
// sign-in fails with provider_error. Its message names a class of error,
// never what the provider sent (which may echo a secret).
var ErrProvider = errors.New("the provider's answer was not usable")

// ErrIDToken is an ID token that failed a check: the sign-in fails.
var ErrIDToken = errors.New("the ID token was refused")

// providerError is ErrProvider with its class.
func providerError(class string) error { return fmt.Errorf("%w: %s", ErrProvider, class) }

// idTokenError is ErrIDToken with the check that failed.
func idTokenError(check string) error { return fmt.Errorf("%w: %s", ErrIDToken, check) }

// Limits of the calls to providers.
const (
	maxProviderAnswer = 1 << 20 // discovery, keys, tokens, userinfo
	discoveryTTL      = time.Hour
	keysTTL           = time.Hour
	// keysRefreshMin spaces the fetches of a provider's keys caused by a
	// token signed with an unknown key, so forged kids cannot make us
	// hammer the provider.
	keysRefreshMin = time.Minute
	// clockSkew is allowed between the provider's clock and ours.
	clockSkew = 2 * time.Minute
)

// asymmetric are the signature algorithms an ID token may use: never
// none, never HMAC (whose key would be the client secret, RFC 9700 §4.5.1
// and OpenID Core §10.1).
var asymmetric = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// Discovery is what a provider's discovery document says, of what sign-in
// uses (OpenID Connect Discovery §3).
type Discovery struct {
	Issuer                string   `json:"issuer"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	UserinfoEndpoint      string   `json:"userinfo_endpoint"`
	JWKSURI               string   `json:"jwks_uri"`
	IDTokenAlgs           []string `json:"id_token_signing_alg_values_supported"`
	TokenAuthMethods      []string `json:"token_endpoint_auth_methods_supported"`
	CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
	// IssParameter: the provider adds iss to its authorization answers
	// (RFC 9207), which the callback then checks (mix-up defence).
	IssParameter bool `json:"authorization_response_iss_parameter_supported"`
}

// OIDC talks to OpenID providers, caching their discovery documents and
// keys.
type OIDC struct {
	client *http.Client
	now    func() time.Time
	// allowHTTP lets endpoints use http (development, and the tests' local
	// provider); else every endpoint must be https.
	allowHTTP bool

	mu        sync.Mutex
	discovery map[string]cached[Discovery]
	keys      map[string]cachedKeys
}

type cached[T any] struct {
	v  T
	at time.Time
}

type cachedKeys struct {
	set     jose.JSONWebKeySet
	at      time.Time
	fetched bool
}

// NewOIDC returns an OIDC client that calls providers with client, whose
// answers are bounded in time by the client's timeout.
func NewOIDC(client *http.Client, now func() time.Time, allowHTTP bool) *OIDC {
	if now == nil {
		now = time.Now
	}
	return &OIDC{client: client, now: now, allowHTTP: allowHTTP,
		discovery: map[string]cached[Discovery]{}, keys: map[string]cachedKeys{}}
}

// Discover returns issuer's discovery document, fetched at most once an
// hour. The document must name issuer exactly (Discovery §4.3) and its
// endpoints must be https (http only when allowed).
func (o *OIDC) Discover(ctx context.Context, issuer string) (Discovery, error) {
	// Stored issuers have no trailing slash; some providers' (Auth0's) have one.
	return o.discover(ctx, issuer, func(named string) bool { return strings.TrimRight(named, "/") == strings.TrimRight(issuer, "/") })
}

// discoverMicrosoft returns the discovery document of Entra ID's tenant
// at host. A multi-tenant one (common, organizations, consumers) names its
// issuer with a {tenantid} placeholder; a domain's names its directory id.
func (o *OIDC) discoverMicrosoft(ctx context.Context, host, tenant string) (Discovery, error) {
	base := host + "/" + url.PathEscape(tenant) + "/v2.0"
	return o.discover(ctx, base, func(named string) bool {
		if named == base {
			return true
		}
		mid, ok := strings.CutPrefix(named, host+"/")
		mid, ok2 := strings.CutSuffix(mid, "/v2.0")
		return ok && ok2 && (mid == "{tenantid}" || tenantID.MatchString(mid))
	})
}

// discover fetches (or reads from the cache) the discovery document under
// base, whose issuer must be one accept takes.
func (o *OIDC) discover(ctx context.Context, base string, accept func(string) bool) (Discovery, error) {
	o.mu.Lock()
	c, ok := o.discovery[base]
	o.mu.Unlock()
	if ok && o.now().Sub(c.at) < discoveryTTL {
		return c.v, nil
	}
	var d Discovery
	if err := o.getJSON(ctx, strings.TrimRight(base, "/")+"/.well-known/openid-configuration", "", &d); err != nil {
		return Discovery{}, err
	}
	if d.Issuer == "" || !accept(d.Issuer) {
		return Discovery{}, providerError("the discovery document names another issuer")
	}
	for _, e := range []string{d.AuthorizationEndpoint, d.TokenEndpoint, d.JWKSURI} {
		if !o.endpointOK(e) {
			return Discovery{}, providerError("the discovery document lacks an endpoint or names one that is not https")
		}
	}
	if d.UserinfoEndpoint != "" && !o.endpointOK(d.UserinfoEndpoint) {
		return Discovery{}, providerError("the discovery document's userinfo endpoint is not https")
	}
	if len(d.CodeChallengeMethods) > 0 && !slices.Contains(d.CodeChallengeMethods, "S256") {
		return Discovery{}, providerError("the provider does not offer PKCE with S256")
	}
	o.mu.Lock()
	o.discovery[base] = cached[Discovery]{v: d, at: o.now()}
	o.mu.Unlock()
	return d, nil
}

func (o *OIDC) endpointOK(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return false
	}
	return u.Scheme == "https" || (o.allowHTTP && u.Scheme == "http")
}

// Tokens is a token endpoint's answer.
type Tokens struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	IDToken     string `json:"id_token"`
}

// Exchange trades an authorization code for tokens at d's token endpoint,
// with the PKCE verifier, authenticating with the client secret (HTTP
// Basic unless the provider offers only client_secret_post).
func (o *OIDC) Exchange(ctx context.Context, d Discovery, clientID, secret, code, verifier, redirectURI string) (Tokens, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}, "code_verifier": {verifier}}
	basic := len(d.TokenAuthMethods) == 0 || slices.Contains(d.TokenAuthMethods, "client_secret_basic")
	if !basic {
		form.Set("client_id", clientID)
		form.Set("client_secret", secret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return Tokens{}, providerError("the token endpoint is not a valid URL")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		// RFC 6749 §2.3.1: both form-encoded before Basic encoding.
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	}
	var t Tokens
	if err := o.do(req, &t); err != nil {
		return Tokens{}, err
	}
	if t.AccessToken == "" {
		return Tokens{}, providerError("the token endpoint answered no access token")
	}
	return t, nil
}

// IDClaims are the claims of an ID token (or a userinfo answer) that
// sign-in reads.
type IDClaims struct {
	Issuer        string           `json:"iss"`
	Subject       string           `json:"sub"`
	Audience      jwt.Audience     `json:"aud"`
	Expiry        *jwt.NumericDate `json:"exp"`
	IssuedAt      *jwt.NumericDate `json:"iat"`
	Nonce         string           `json:"nonce"`
	AuthorizedBy  string           `json:"azp"`
	Email         string           `json:"email"`
	EmailVerified flexBool         `json:"email_verified"`
	Name          string           `json:"name"`
	Locale        string           `json:"locale"`
	// Microsoft: the user's tenant, and whether the domain's owner vouches
	// for the e-mail address (the optional claim xms_edov).
	TenantID            string   `json:"tid"`
	DomainOwnerVerified flexBool `json:"xms_edov"`
}

// flexBool reads a boolean claim some providers send as a string ("true").
type flexBool bool

func (b *flexBool) UnmarshalJSON(p []byte) error {
	switch strings.Trim(string(p), `"`) {
	case "true":
		*b = true
	case "false", "null", "":
		*b = false
	default:
		return errors.New("not a boolean")
	}
	return nil
}

// VerifyIDToken checks an ID token of d's provider issued to clientID for
// the sign-in that sent nonce: signed with one of the provider's keys by an
// asymmetric algorithm it advertises, by the issuer, for this client (azp
// when there are other audiences), with the nonce, not expired, issued
// within the allowed skew. A token signed with a key not yet known makes
// the keys be fetched again (at most once a minute), for key rotation.
func (o *OIDC) VerifyIDToken(ctx context.Context, d Discovery, clientID, nonce, raw string) (IDClaims, error) {
	algs := allowedAlgs(d.IDTokenAlgs)
	tok, err := jwt.ParseSigned(raw, algs)
	if err != nil {
		return IDClaims{}, idTokenError("not a JWS signed with an algorithm the provider advertises")
	}
	if len(tok.Headers) != 1 {
		return IDClaims{}, idTokenError("not exactly one signature")
	}
	h := tok.Headers[0]
	key, err := o.key(ctx, d.JWKSURI, h.KeyID, h.Algorithm)
	if err != nil {
		return IDClaims{}, err
	}
	var c IDClaims
	if err := tok.Claims(key, &c); err != nil {
		return IDClaims{}, idTokenError("bad signature")
	}
	now := o.now()
	switch {
	case !d.issuerMatches(c.Issuer, c.TenantID):
		return IDClaims{}, idTokenError("wrong issuer")
	case c.Subject == "" || len(c.Subject) > 255:
		return IDClaims{}, idTokenError("no subject")
	case !c.Audience.Contains(clientID):
		return IDClaims{}, idTokenError("wrong audience")
	case len(c.Audience) > 1 && c.AuthorizedBy != clientID, c.AuthorizedBy != "" && c.AuthorizedBy != clientID:
		return IDClaims{}, idTokenError("wrong authorized party")
	case nonce == "" || subtle.ConstantTimeCompare([]byte(c.Nonce), []byte(nonce)) != 1:
		return IDClaims{}, idTokenError("wrong nonce")
	case c.Expiry == nil || !now.Before(c.Expiry.Time().Add(clockSkew)):
		return IDClaims{}, idTokenError("expired")
	case c.IssuedAt == nil || c.IssuedAt.Time().After(now.Add(clockSkew)):
		return IDClaims{}, idTokenError("issued in the future")
	}
	return c, nil
}

// allowedAlgs is what the provider advertises of the asymmetric
// algorithms, RS256 when it advertises none (OpenID Discovery's default).
func allowedAlgs(advertised []string) []jose.SignatureAlgorithm {
	if len(advertised) == 0 {
		return []jose.SignatureAlgorithm{jose.RS256}
	}
	var out []jose.SignatureAlgorithm
	for _, a := range asymmetric {
		if slices.Contains(advertised, string(a)) {
			out = append(out, a)
		}
	}
	return out
}

// key finds the provider's key kid for alg, fetching the key set when it
// is not cached, is old, or (at most once a minute) lacks kid.
func (o *OIDC) key(ctx context.Context, uri, kid, alg string) (any, error) {
	o.mu.Lock()
	c := o.keys[uri]
	o.mu.Unlock()
	now := o.now()
	if k, ok := pick(c.set, kid, alg); ok && c.fetched && now.Sub(c.at) < keysTTL {
		return k, nil
	}
	if c.fetched && now.Sub(c.at) < keysRefreshMin {
		return nil, idTokenError("signed with a key the provider does not publish")
	}
	var set jose.JSONWebKeySet
	if err := o.getJSON(ctx, uri, "", &set); err != nil {
		return nil, err
	}
	o.mu.Lock()
	o.keys[uri] = cachedKeys{set: set, at: now, fetched: true}
	o.mu.Unlock()
	if k, ok := pick(set, kid, alg); ok {
		return k, nil
	}
	return nil, idTokenError("signed with a key the provider does not publish")
}

// pick is the public signing key of set named kid (or the only one, when
// the token names none) that suits alg.
func pick(set jose.JSONWebKeySet, kid, alg string) (any, bool) {
	var found []jose.JSONWebKey
	for _, k := range set.Keys {
		if (kid == "" || k.KeyID == kid) && k.Valid() && k.IsPublic() && (k.Use == "" || k.Use == "sig") &&
			(k.Algorithm == "" || k.Algorithm == alg) {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		return nil, false
	}
	return found[0].Key, true
}

// Userinfo reads the signed-in user's claims from d's userinfo endpoint,
// for providers whose ID token carries no e-mail address. They must be of
// subject, the ID token's (OpenID Core §5.3.2): else they are refused.
func (o *OIDC) Userinfo(ctx context.Context, d Discovery, accessToken, subject string) (IDClaims, error) {
	if d.UserinfoEndpoint == "" {
		return IDClaims{}, providerError("the provider has no userinfo endpoint")
	}
	var c IDClaims
	if err := o.getJSON(ctx, d.UserinfoEndpoint, accessToken, &c); err != nil {
		return IDClaims{}, err
	}
	if c.Subject != subject {
		return IDClaims{}, providerError("the userinfo answer is of another subject")
	}
	return c, nil
}

// getJSON GETs a JSON document (with a bearer token when not empty).
func (o *OIDC) getJSON(ctx context.Context, u, bearer string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return providerError("not a valid URL")
	}
	req.Header.Set("Accept", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return o.do(req, v)
}

// do sends req and decodes its JSON answer into v: a 200 whose body is at
// most maxProviderAnswer bytes of JSON.
func (o *OIDC) do(req *http.Request, v any) error {
	resp, err := o.client.Do(req)
	if err != nil {
		return providerError("the provider could not be reached")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProviderAnswer+1))
	switch {
	case err != nil:
		return providerError("the provider's answer could not be read")
	case len(body) > maxProviderAnswer:
		return providerError("the provider's answer is too large")
	case resp.StatusCode != http.StatusOK:
		return providerError(fmt.Sprintf("the provider answered %d", resp.StatusCode))
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "" && ct != "application/json" && !strings.HasSuffix(ct, "+json") {
		return providerError("the provider's answer is not JSON")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return providerError("the provider's answer is not valid JSON")
	}
	return nil
}
