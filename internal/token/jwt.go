package token

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Token types ("typ" JOSE header). Each verifier accepts only its own.
const (
	TypeAccess    = "at+jwt"
	TypeRefresh   = "rt+jwt"
	TypeAPISecret = "api-secret+jwt"
	TypeMagic     = "magic+jwt"
	TypeM2M       = "m2m+jwt"
)

// acceptedAlgs pins the algorithms each token type may carry (RFC 8725
// §3.1). Access and M2M tokens take the app's algorithm; every other type
// is only ever signed with the default. A key verifies only with its own
// algorithm besides, so one key's material can never be read as another kind.
func acceptedAlgs(typ string) []string {
	switch typ {
	case TypeAccess, TypeM2M:
		return Algorithms
	}
	return []string{Algorithm}
}

// ErrInvalid reports any failure to parse or verify a token or its claims.
// Callers match it with errors.Is; the wrapped detail is for logs and never holds the token.
var ErrInvalid = errors.New("token: invalid")

// maxTokenLen bounds the work an unauthenticated caller can make Verify do.
// Our own tokens are well under 2 KiB.
const maxTokenLen = 16 << 10

// leeway is the clock skew tolerated on exp, nbf and iat.
const leeway = 30 * time.Second

// forbiddenHeader reports header members that name key material or processing
// rules carried by the token itself. Keys come only from our keyring (RFC 8725
// §3.10), and we implement no critical extensions.
func forbiddenHeader(name string) bool {
	switch name {
	case "jwk", "jku", "x5u", "x5c", "crit", "b64":
		return true
	}
	return false
}

// Keyring holds the signing and verification keys in memory. It is safe for
// concurrent use; readers load an immutable snapshot without locking.
type Keyring struct {
	snap   atomic.Pointer[keySnapshot]
	source KeySource
	gate   reloadGate
	// reloading serialises reloads (periodic, after a rotation, for an
	// unknown kid), so an older read can never be installed after a newer
	// one. Verifications never wait for it.
	reloading sync.Mutex
	// now is the clock of the reload gate and of FreshJWKS (nil: time.Now);
	// tests move it instead of sleeping.
	now func() time.Time
	// signed and verified count the signatures made and checked, per
	// algorithm (the index in Algorithms): see Counts.
	signed, verified [3]atomic.Uint64
}

// Counts returns how many signatures of alg this keyring has made and how
// many it has checked (whatever their outcome) since it was created. They
// are what each algorithm's price scales with: one signature per token
// issued, one check per token verified that no cache answered.
func (k *Keyring) Counts(alg string) (signed, verified uint64) {
	i := slices.Index(Algorithms, alg)
	if i < 0 || i >= len(k.signed) {
		return 0, 0
	}
	return k.signed[i].Load(), k.verified[i].Load()
}

// count adds one to the counter of alg in c.
func count(c *[3]atomic.Uint64, alg string) {
	if i := slices.Index(Algorithms, alg); i >= 0 && i < len(c) {
		c[i].Add(1)
	}
}

func (k *Keyring) clock() time.Time {
	if k.now != nil {
		return k.now()
	}
	return time.Now()
}

// KeySet is what a keyring holds: the keys that sign new tokens (the first
// of each algorithm), the keys that verify (the signers are always among
// them), and the keys the JWKS publishes.
type KeySet struct {
	Signers   []*Key
	Verify    []*Key
	Published []*Key
}

// KeySource reads the current keys from wherever they are kept (it may do
// I/O; this package does none itself).
type KeySource func(ctx context.Context) (KeySet, error)

// keySnapshot is never modified after it is stored.
type keySnapshot struct {
	signers map[string]*Key // by algorithm
	verify  map[string]*Key // by kid
	jwks    []byte
	at      time.Time // when it was installed
}

const emptyJWKS = `{"keys":[]}`

// NewKeyring returns an empty keyring that loads its keys from source on
// Reload. When a token names a kid the keyring does not hold (another
// replica, or the command line, may just have made the key), Verify reloads
// once and looks again, at most once a second whatever the callers present,
// so made-up kids cost nothing. A nil source makes a keyring that holds what
// Replace gives it.
func NewKeyring(source KeySource) *Keyring {
	k := &Keyring{source: source}
	k.snap.Store(&keySnapshot{signers: map[string]*Key{}, verify: map[string]*Key{}, jwks: []byte(emptyJWKS)})
	return k
}

// load returns the current snapshot, treating a zero Keyring as empty.
func (k *Keyring) load() *keySnapshot {
	if s := k.snap.Load(); s != nil {
		return s
	}
	return &keySnapshot{jwks: []byte(emptyJWKS)}
}

// Reload replaces the keys with what the source holds now.
func (k *Keyring) Reload(ctx context.Context) error {
	if k.source == nil {
		return nil
	}
	k.reloading.Lock()
	defer k.reloading.Unlock()
	set, err := k.source(ctx)
	if err != nil {
		return fmt.Errorf("token: reload keys: %w", err)
	}
	k.ReplaceSet(set)
	return nil
}

// reloadGate lets one unknown-kid reload run at a time and at most one a second.
type reloadGate struct {
	mu       sync.Mutex
	last     time.Time     // when the last reload started
	inflight chan struct{} // closed when the running reload ends; nil when none runs
}

// reloadTimeout bounds one unknown-kid reload. The reload serves every caller
// waiting for it, so it is not tied to any one request's context.
const reloadTimeout = 2 * time.Second

// reloadSoon reloads unless a reload started less than a second ago; a
// caller that finds one running waits for it. The source's I/O runs outside
// the gate's lock, so a slow database never holds other verifications.
func (k *Keyring) reloadSoon() {
	if k.source == nil {
		return
	}
	g := &k.gate
	g.mu.Lock()
	if ch := g.inflight; ch != nil {
		g.mu.Unlock()
		<-ch
		return
	}
	if k.clock().Sub(g.last) < time.Second {
		g.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	g.inflight, g.last = ch, k.clock()
	g.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), reloadTimeout)
	_ = k.Reload(ctx) // a failed reload leaves the keys as they were; the source reports it
	cancel()

	g.mu.Lock()
	g.inflight = nil
	g.mu.Unlock()
	close(ch)
}

// Replace installs a new snapshot with one signer: see ReplaceSet.
func (k *Keyring) Replace(signer *Key, verify []*Key, published []*Key) {
	k.ReplaceSet(KeySet{Signers: []*Key{signer}, Verify: verify, Published: published})
}

// ReplaceSet installs a new snapshot. The first usable signer of each
// algorithm signs new tokens of it (none makes Sign fail for it); Verify are
// the keys accepted for verification (the signers are always included);
// Published are the keys listed in the JWKS. Keys without an ID or a valid
// public key, or whose Alg does not match their key type, are skipped, and
// duplicate IDs are listed once.
func (k *Keyring) ReplaceSet(set KeySet) {
	s := &keySnapshot{signers: map[string]*Key{}, verify: make(map[string]*Key, len(set.Verify)+len(set.Signers))}
	for _, key := range set.Signers {
		if key = usableKey(key); key != nil && key.Private != nil && s.signers[key.Alg] == nil {
			s.signers[key.Alg] = key
		}
	}
	for _, key := range set.Verify {
		if key = usableKey(key); key != nil {
			s.verify[key.ID] = key
		}
	}
	for _, key := range s.signers {
		s.verify[key.ID] = key
	}

	var buf bytes.Buffer
	buf.WriteString(`{"keys":[`)
	seen := make(map[string]bool, len(set.Published))
	for _, key := range set.Published {
		if key = usableKey(key); key == nil || seen[key.ID] {
			continue
		}
		jwk, err := key.PublicJWK()
		if err != nil {
			continue // usableKey already checked the public key, so this cannot happen
		}
		if len(seen) > 0 {
			buf.WriteByte(',')
		}
		seen[key.ID] = true
		buf.Write(jwk)
	}
	buf.WriteString(`]}`)
	s.jwks = buf.Bytes()
	s.at = k.clock()

	k.snap.Store(s)
}

// usableKey returns a copy of key with its algorithm filled in from its
// public key, or nil when it cannot be put in a snapshot.
func usableKey(key *Key) *Key {
	if key == nil || key.ID == "" {
		return nil
	}
	alg, err := publicAlg(key.Public)
	if err != nil || (key.Alg != "" && key.Alg != alg) {
		return nil
	}
	c := *key
	c.Alg = alg
	return &c
}

// JWKS returns the precomputed JSON Web Key Set, `{"keys":[]}` when empty.
// The returned slice is a copy the caller may keep or modify.
func (k *Keyring) JWKS() []byte {
	return bytes.Clone(k.load().jwks)
}

// FreshJWKS is JWKS read again from the source first when the keys were
// loaded more than a second ago (at most one read a second, shared by every
// caller). A key another replica just made, for an app that chose a new
// algorithm or by a rotation, is then published here as soon as it can
// sign there: a verifier that meets its kid and reads the set again finds
// it, whichever replica answers. A failed read serves the keys held.
func (k *Keyring) FreshJWKS() []byte {
	if k.source != nil && k.clock().Sub(k.load().at) > time.Second {
		k.reloadSoon()
	}
	return k.JWKS()
}

// SignerID returns the kid of the current signer of the default algorithm,
// or "" if there is none.
func (k *Keyring) SignerID() string { return k.SignerIDFor(Algorithm) }

// SignerIDFor returns the kid of the current signer of alg, or "" if there is none.
func (k *Keyring) SignerIDFor(alg string) string {
	if s := k.load().signers[alg]; s != nil {
		return s.ID
	}
	return ""
}

// Signs reports whether the keyring holds a signer for alg.
func (k *Keyring) Signs(alg string) bool { return k.load().signers[alg] != nil }

// Has reports whether kid is in the verification set.
func (k *Keyring) Has(kid string) bool {
	_, ok := k.load().verify[kid]
	return ok
}

// Sign serialises claims (any JSON-marshalable value) as a compact JWS
// signed with the default algorithm, with the protected header {alg, kid, typ}.
func (k *Keyring) Sign(typ string, claims any) (string, error) {
	raw, _, err := k.SignWith(Algorithm, typ, claims)
	return raw, err
}

// SignWith is Sign with the algorithm chosen, returning the signer's kid
// too. It never reads the key source: tokens are signed inside
// transactions, which must not wait for another connection. Whoever reads
// an app that chose an algorithm whose key this keyring lacks (another
// replica may just have made it) reloads first (tenant.Service.App).
func (k *Keyring) SignWith(alg, typ string, claims any) (raw, kid string, err error) {
	if typ == "" {
		return "", "", errors.New("token: sign: empty typ")
	}
	if !slices.Contains(acceptedAlgs(typ), alg) {
		return "", "", fmt.Errorf("token: sign: %s tokens are not signed with %q", typ, alg)
	}
	signer := k.load().signers[alg]
	if signer == nil {
		return "", "", fmt.Errorf("token: sign: no signing key for %s", alg)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", "", fmt.Errorf("token: sign: marshal claims: %w", err)
	}
	count(&k.signed, alg)
	if raw, err = signCompact(signer, typ, payload); err != nil {
		return "", "", fmt.Errorf("token: sign: %w", err)
	}
	return raw, signer.ID, nil
}

// Verify parses raw as a compact JWS, requires header typ == typ exactly, an
// alg that typ accepts, and a kid present in the verification set whose key
// is of that alg; refuses headers carrying
// jwk, jku, x5u, x5c, crit or b64, verifies the signature and unmarshals the
// payload into dst. It returns the kid. It does not check time, issuer or
// audience claims: see Claims.Validate. Every failure wraps ErrInvalid.
func (k *Keyring) Verify(raw, typ string, dst any) (kid string, err error) {
	if len(raw) > maxTokenLen {
		return "", fmt.Errorf("%w: token too long", ErrInvalid)
	}
	header, err := parseHeader(raw)
	if err != nil {
		return "", err
	}
	for name := range header {
		if forbiddenHeader(name) {
			return "", fmt.Errorf("%w: header %q not allowed", ErrInvalid, name)
		}
	}
	if got, _ := headerString(header, "typ"); typ == "" || got != typ {
		return "", fmt.Errorf("%w: wrong typ", ErrInvalid)
	}
	alg, _ := headerString(header, "alg")
	if !slices.Contains(acceptedAlgs(typ), alg) {
		return "", fmt.Errorf("%w: alg not allowed", ErrInvalid)
	}
	kid, ok := headerString(header, "kid")
	if !ok || kid == "" {
		return "", fmt.Errorf("%w: missing kid", ErrInvalid)
	}
	key, ok := k.load().verify[kid]
	if !ok {
		k.reloadSoon()
		if key, ok = k.load().verify[kid]; !ok {
			return "", fmt.Errorf("%w: unknown kid", ErrInvalid)
		}
	}
	if key.Alg != alg {
		return "", fmt.Errorf("%w: alg does not match the key", ErrInvalid)
	}

	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
	if err != nil {
		return "", fmt.Errorf("%w: parse: %v", ErrInvalid, err)
	}
	// Cross-check go-jose's view of the header against ours so that a parser
	// difference cannot make us verify with one key and trust another.
	if len(jws.Signatures) != 1 {
		return "", fmt.Errorf("%w: want exactly one signature", ErrInvalid)
	}
	h := jws.Signatures[0].Protected
	if h.KeyID != kid || h.Algorithm != alg || h.JSONWebKey != nil {
		return "", fmt.Errorf("%w: inconsistent header", ErrInvalid)
	}
	count(&k.verified, alg)
	payload, err := jws.Verify(key.Public)
	if err != nil {
		return "", fmt.Errorf("%w: signature: %v", ErrInvalid, err)
	}
	if err := json.Unmarshal(payload, dst); err != nil {
		return "", fmt.Errorf("%w: decode claims: %v", ErrInvalid, err)
	}
	return kid, nil
}

// Peek returns the typ header of a compact JWS without verifying anything, so a
// bearer value can be routed to the right verifier. It returns "" if raw is not a JWS.
func Peek(raw string) (typ string) {
	if len(raw) > maxTokenLen {
		return ""
	}
	header, err := parseHeader(raw)
	if err != nil {
		return ""
	}
	typ, _ = headerString(header, "typ")
	return typ
}

// parseHeader checks that raw has the compact JWS shape and decodes its protected
// header, refusing duplicate member names (parsers disagree on which one wins).
func parseHeader(raw string) (map[string]json.RawMessage, error) {
	if strings.Count(raw, ".") != 2 {
		return nil, fmt.Errorf("%w: not a compact JWS", ErrInvalid)
	}
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return nil, fmt.Errorf("%w: not base64url", ErrInvalid)
		}
	}
	encoded, _, _ := strings.Cut(raw, ".")
	b, err := base64.RawURLEncoding.Strict().DecodeString(encoded)
	if err != nil {
		return nil, fmt.Errorf("%w: header encoding: %v", ErrInvalid, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("%w: header is not a JSON object", ErrInvalid)
	}
	header := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: header: %v", ErrInvalid, err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%w: header member name", ErrInvalid)
		}
		if _, dup := header[name]; dup {
			return nil, fmt.Errorf("%w: duplicate header %q", ErrInvalid, name)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: header: %v", ErrInvalid, err)
		}
		header[name] = v
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, fmt.Errorf("%w: header is not a JSON object", ErrInvalid)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after header", ErrInvalid)
	}
	return header, nil
}

// headerString returns a header member that must be a JSON string.
func headerString(header map[string]json.RawMessage, name string) (string, bool) {
	v, ok := header[name]
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}

// Claims are the registered claims Gatehouse uses; embed it in token-specific claim structs.
type Claims struct {
	Issuer    string   `json:"iss,omitempty"`
	Subject   string   `json:"sub,omitempty"`
	Audience  Audience `json:"aud,omitempty"`
	Expiry    int64    `json:"exp,omitempty"` // unix seconds; 0 = none
	NotBefore int64    `json:"nbf,omitempty"`
	IssuedAt  int64    `json:"iat,omitempty"`
	ID        string   `json:"jti,omitempty"`
}

// Validate checks, against now and with a 30 s leeway, that iss equals issuer,
// aud contains audience, exp is present when requireExp and not passed when set
// (a token is expired from exp+30s on), and nbf and iat are not more than 30 s
// in the future. Empty issuer or audience arguments fail, so a forgotten
// argument cannot match a token that lacks the claim. Failures wrap ErrInvalid.
func (c Claims) Validate(issuer, audience string, now time.Time, requireExp bool) error {
	if issuer == "" || audience == "" {
		return fmt.Errorf("%w: validation needs an issuer and an audience", ErrInvalid)
	}
	if c.Issuer != issuer {
		return fmt.Errorf("%w: wrong issuer", ErrInvalid)
	}
	if !slices.Contains(c.Audience, audience) {
		return fmt.Errorf("%w: wrong audience", ErrInvalid)
	}
	if c.Expiry == 0 && requireExp {
		return fmt.Errorf("%w: missing exp", ErrInvalid)
	}
	if c.Expiry != 0 && !now.Before(time.Unix(c.Expiry, 0).Add(leeway)) {
		return fmt.Errorf("%w: expired", ErrInvalid)
	}
	if c.NotBefore != 0 && now.Before(time.Unix(c.NotBefore, 0).Add(-leeway)) {
		return fmt.Errorf("%w: not valid yet", ErrInvalid)
	}
	if c.IssuedAt != 0 && now.Before(time.Unix(c.IssuedAt, 0).Add(-leeway)) {
		return fmt.Errorf("%w: issued in the future", ErrInvalid)
	}
	return nil
}

// Audience is the "aud" claim. It encodes as a JSON string when it holds one
// value and as an array otherwise, and decodes from either form.
type Audience []string

// MarshalJSON implements json.Marshaler.
func (a Audience) MarshalJSON() ([]byte, error) {
	if len(a) == 1 {
		return json.Marshal(a[0])
	}
	if a == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]string(a))
}

// UnmarshalJSON implements json.Unmarshaler.
func (a *Audience) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*a = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*a = Audience{s}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("token: aud must be a string or an array of strings: %w", err)
	}
	*a = list
	return nil
}
