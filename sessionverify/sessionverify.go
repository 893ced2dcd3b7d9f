// Package sessionverify checks a Gatehouse access token in your own backend, without a round
// trip to Gatehouse for each request.
//
// A browser signed in with the client SDK holds an access token: a compact JWS with the header
// typ "at+jwt", signed by one of the keys Gatehouse publishes at
// GET /v1/auth/{app_id}/.well-known/jwks.json with ES256, RS256 or EdDSA (the app's
// access_token_alg). Its claims name the app (aud and aid: the app id), the issuer (iss: the
// server's tokens.issuer, by default its base_url), the user (sub and uuid), the session (sid)
// and the expiry (exp). A Verifier fetches the key set once, keeps it, and reads it again when a
// token names a key it does not hold (a new key after a rotation, or an app that switched
// algorithm), at most once a minute, so made-up key ids cost nothing.
//
// Local verification proves who signed the token and that it has not expired; it does not see a
// sign-out or a revoked session before the token expires (access tokens live minutes). A backend
// that must know at once asks Gatehouse: GET /v1/auth/{app_id}/current_user with the token.
//
// See examples/quickstart for a whole app, and docs/integrate.md for the browser side.
package sessionverify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Algorithms are the only signature algorithms Gatehouse signs access tokens with, and the only
// ones a Verifier accepts (never "none", never an HMAC).
var Algorithms = []string{"ES256", "RS256", "EdDSA"}

// TokenType is the typ header of an access token; refresh tokens (rt+jwt), API secrets and
// machine tokens carry other types and are refused.
const TokenType = "at+jwt"

// Defaults.
const (
	// DefaultLeeway is the clock skew tolerated on exp, nbf and iat, as Gatehouse tolerates it.
	DefaultLeeway = 30 * time.Second
	// RefetchInterval is the least time between two reads of the key set.
	RefetchInterval = time.Minute
	// MaxKeyAge is how long a key set is used before it is read again (on the next token), so
	// retired keys stop being trusted.
	MaxKeyAge = 10 * time.Minute
)

// Errors returned by Verify; test them with errors.Is, the returned errors add detail (never the
// token). ErrExpired is also an ErrInvalid.
var (
	ErrNoToken = errors.New("sessionverify: no access token")
	ErrInvalid = errors.New("sessionverify: invalid access token")
	ErrExpired = errors.New("sessionverify: access token expired")
	// ErrKeys means the key set could not be read (Gatehouse unreachable, or a bad answer) and
	// no key is held: the token may well be good, so answer 503, not 401.
	ErrKeys = errors.New("sessionverify: signing keys unavailable")
)

// expired is ErrExpired, which is also an ErrInvalid.
type expired struct{}

func (expired) Error() string        { return ErrExpired.Error() }
func (expired) Is(target error) bool { return target == ErrExpired || target == ErrInvalid }

// maxTokenLen bounds the work a caller can cause; Gatehouse's tokens are far shorter.
const maxTokenLen = 16 << 10

// maxJWKS bounds the key set read.
const maxJWKS = 1 << 20

// Config says which tokens a Verifier accepts.
type Config struct {
	// BaseURL is Gatehouse's base URL, written as the server's base_url setting is (the dev
	// server's is http://127.0.0.1:8080): it is also the expected issuer unless Issuer is set,
	// and issuers are compared exactly. Required.
	BaseURL string
	// AppID is the app whose users' tokens are accepted (the aud claim). Required.
	AppID string
	// Issuer is the expected iss claim: the server's tokens.issuer setting. Empty means
	// BaseURL, the server's default.
	Issuer string
	// JWKSURL overrides where the keys are read. Empty means
	// BaseURL + "/v1/auth/" + AppID + "/.well-known/jwks.json".
	JWKSURL string
	// HTTPClient reads the key set. Nil means a client with a 10 s timeout.
	HTTPClient *http.Client
	// Leeway is the clock skew tolerated on exp, nbf and iat; 0 means DefaultLeeway.
	Leeway time.Duration
	// Now is the clock; nil means time.Now. Tests move it instead of sleeping.
	Now func() time.Time
}

// Claims are what a verified access token says.
type Claims struct {
	Issuer      string   `json:"iss"`
	Subject     string   `json:"sub"`
	Audience    Audience `json:"aud"`
	ExpiresAt   int64    `json:"exp"` // unix seconds
	NotBefore   int64    `json:"nbf,omitempty"`
	IssuedAt    int64    `json:"iat"`
	ID          string   `json:"jti"`
	UserID      string   `json:"uuid"` // the app user's id, equal to sub
	AppID       string   `json:"aid"`
	SessionID   string   `json:"sid"`
	WorkspaceID string   `json:"wid"`
	AuthTime    int64    `json:"auth_time,omitempty"` // when the user last proved who they are
	// AMR lists how the user signed in at AuthTime: email_otp, sms_otp, magic_link,
	// webauthn, totp, backup_code, push, invite.
	AMR []string `json:"amr,omitempty"`
}

// Verifier checks access tokens for one app. It is safe for concurrent use.
type Verifier struct {
	cfg     Config
	jwksURL string
	issuer  string

	set     atomic.Pointer[keySet] // nil until the first successful read
	mu      sync.Mutex             // held while the key set is read, so one read serves every waiter
	triedAt time.Time              // the last read, successful or not (under mu)
}

// keySet is one read of the key set; it is never modified after it is stored.
type keySet struct {
	keys      map[string]jose.JSONWebKey // by kid
	fetchedAt time.Time
}

// New returns a Verifier for cfg. It reads nothing yet: the key set is read on the first Verify.
func New(cfg Config) (*Verifier, error) {
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.BaseURL == "" || cfg.AppID == "" {
		return nil, errors.New("sessionverify: Config needs BaseURL and AppID")
	}
	v := &Verifier{cfg: cfg, jwksURL: cfg.JWKSURL, issuer: cfg.Issuer}
	if v.jwksURL == "" {
		v.jwksURL = cfg.BaseURL + "/v1/auth/" + cfg.AppID + "/.well-known/jwks.json"
	}
	if v.issuer == "" {
		v.issuer = cfg.BaseURL
	}
	if v.cfg.HTTPClient == nil {
		v.cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if v.cfg.Leeway <= 0 {
		v.cfg.Leeway = DefaultLeeway
	}
	if v.cfg.Now == nil {
		v.cfg.Now = time.Now
	}
	return v, nil
}

// Verify checks raw, an access token as the client SDK holds it, and returns its claims: the
// header (typ at+jwt, an alg of Algorithms matching the key's, a kid, nothing that carries its
// own key), the signature by a key of the app's key set, then iss, aud (the app id), exp, nbf
// and iat with Leeway, and that it names a user and a session.
func (v *Verifier) Verify(ctx context.Context, raw string) (*Claims, error) {
	if raw == "" {
		return nil, ErrNoToken
	}
	if len(raw) > maxTokenLen {
		return nil, fmt.Errorf("%w: too long", ErrInvalid)
	}
	jws, err := jose.ParseSignedCompact(raw, algs())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%w: want one signature", ErrInvalid)
	}
	h := jws.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != TokenType {
		return nil, fmt.Errorf("%w: typ %q is not %s", ErrInvalid, typ, TokenType)
	}
	// Keys come only from the key set, never from the token (RFC 8725 §3.10).
	if h.JSONWebKey != nil || h.ExtraHeaders["jku"] != nil || h.ExtraHeaders["x5u"] != nil || h.ExtraHeaders["crit"] != nil {
		return nil, fmt.Errorf("%w: header carries key material or critical extensions", ErrInvalid)
	}
	if h.KeyID == "" {
		return nil, fmt.Errorf("%w: no kid", ErrInvalid)
	}
	key, err := v.key(ctx, h.KeyID)
	if err != nil {
		return nil, err
	}
	// A key verifies only with its own algorithm, so an RSA key is never read as anything else.
	if key.Algorithm != h.Algorithm {
		return nil, fmt.Errorf("%w: alg %s does not match key %s", ErrInvalid, h.Algorithm, key.Algorithm)
	}
	payload, err := jws.Verify(key.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrInvalid, err)
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: claims: %v", ErrInvalid, err)
	}
	if err := v.validate(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

// validate checks the claims against the configuration and the clock.
func (v *Verifier) validate(c *Claims) error {
	now, leeway := v.cfg.Now(), v.cfg.Leeway
	switch {
	case c.Issuer != v.issuer:
		return fmt.Errorf("%w: issuer %q is not %q", ErrInvalid, c.Issuer, v.issuer)
	case !slices.Contains(c.Audience, v.cfg.AppID):
		return fmt.Errorf("%w: audience is not app %s", ErrInvalid, v.cfg.AppID)
	case c.ExpiresAt == 0:
		return fmt.Errorf("%w: no exp", ErrInvalid)
	case !now.Before(time.Unix(c.ExpiresAt, 0).Add(leeway)):
		return expired{}
	case c.NotBefore != 0 && now.Before(time.Unix(c.NotBefore, 0).Add(-leeway)):
		return fmt.Errorf("%w: not valid yet", ErrInvalid)
	case c.IssuedAt != 0 && now.Before(time.Unix(c.IssuedAt, 0).Add(-leeway)):
		return fmt.Errorf("%w: issued in the future", ErrInvalid)
	case c.Subject == "" || c.UserID != c.Subject || c.SessionID == "":
		return fmt.Errorf("%w: not a user session", ErrInvalid)
	case c.AppID != "" && c.AppID != v.cfg.AppID:
		return fmt.Errorf("%w: aid is not app %s", ErrInvalid, v.cfg.AppID)
	}
	return nil
}

// key returns the key kid from the key set, reading the set first when it is older than
// MaxKeyAge or lacks kid, at most once per RefetchInterval. A failed read keeps the keys held.
// Tokens of known keys never wait for a read.
func (v *Verifier) key(ctx context.Context, kid string) (jose.JSONWebKey, error) {
	if s := v.set.Load(); s != nil {
		if k, ok := s.keys[kid]; ok && v.cfg.Now().Sub(s.fetchedAt) < MaxKeyAge {
			return k, nil
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.cfg.Now()
	s := v.set.Load()
	if s == nil && !v.triedAt.IsZero() && now.Sub(v.triedAt) < time.Second {
		// Gatehouse was unreachable a moment ago: do not queue every request behind another try.
		return jose.JSONWebKey{}, fmt.Errorf("%w: the last read failed less than a second ago", ErrKeys)
	}
	if s == nil || now.Sub(v.triedAt) >= RefetchInterval {
		v.triedAt = now
		// The read serves every waiting request, so one caller giving up must not cancel it.
		keys, err := v.fetch(context.WithoutCancel(ctx))
		switch {
		case err == nil:
			s = &keySet{keys: keys, fetchedAt: now}
			v.set.Store(s)
		case s == nil:
			return jose.JSONWebKey{}, fmt.Errorf("%w: %v", ErrKeys, err)
		}
		// After a failed read the keys held still serve; the next read waits RefetchInterval.
	}
	k, ok := s.keys[kid]
	if !ok {
		return k, fmt.Errorf("%w: unknown kid", ErrInvalid)
	}
	return k, nil
}

// fetch reads the key set and keeps the signing keys of the accepted algorithms, by kid.
func (v *Verifier) fetch(ctx context.Context) (map[string]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.jwksURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", v.jwksURL, res.Status)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxJWKS))
	if err != nil {
		return nil, err
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("GET %s: %v", v.jwksURL, err)
	}
	keys := make(map[string]jose.JSONWebKey, len(set.Keys))
	for _, k := range set.Keys {
		if k.KeyID == "" || !k.IsPublic() || !slices.Contains(Algorithms, k.Algorithm) || (k.Use != "" && k.Use != "sig") {
			continue
		}
		keys[k.KeyID] = k
	}
	return keys, nil
}

func algs() []jose.SignatureAlgorithm {
	out := make([]jose.SignatureAlgorithm, len(Algorithms))
	for i, a := range Algorithms {
		out[i] = jose.SignatureAlgorithm(a)
	}
	return out
}

// Audience is the aud claim, which may be a JSON string or an array of strings.
type Audience []string

// UnmarshalJSON implements json.Unmarshaler.
func (a *Audience) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*a = Audience{s}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New("aud must be a string or an array of strings")
	}
	*a = list
	return nil
}
