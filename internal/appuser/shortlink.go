package appuser

import (
	"encoding/base64"
	"errors"

	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// Short links. A link sent by SMS (a magic link, an invitation) would be
// some 700 characters, as it carries a signed token: five SMS segments. By
// SMS it is {base_url}/m/{code} instead, where code is 12 random bytes (96
// bits, 16 URL-safe characters). What the link stands for stores the code's
// keyed hash and the token sealed with the master key; opening the short
// link redirects to the long one, which behaves exactly as the e-mailed one.

// ShortLinkPath is the path of short links, before the code.
const ShortLinkPath = "/m/"

// shortCodeBytes is the randomness of a short link's code.
const shortCodeBytes = 12

// shortCodeLen is the length of a code, base64url without padding.
var shortCodeLen = base64.RawURLEncoding.EncodedLen(shortCodeBytes)

// Short is a new short link: the link to send, and what to store.
type Short struct {
	Link   string
	Hash   string // the code's keyed hash
	Sealed string // the token, sealed and base64-encoded
}

// NewShortLink makes a short link on baseURL for tok, sealed with the
// additional data ad (which binds it to what stores it).
func NewShortLink(sealer *token.Sealer, hasher *token.Hasher, baseURL, ad, tok string) (Short, error) {
	code := token.RandomString(shortCodeBytes)
	sealed, err := sealer.Seal([]byte(tok), []byte(ad))
	if err != nil {
		return Short{}, err
	}
	return Short{Link: baseURL + ShortLinkPath + code, Hash: hasher.Hash("magic-short", code),
		Sealed: base64.RawStdEncoding.EncodeToString(sealed)}, nil
}

// ShortLinkHash is the keyed hash a short link's code is stored under; ok
// is false for anything that is not a code.
func ShortLinkHash(hasher *token.Hasher, code string) (hash string, ok bool) {
	if len(code) != shortCodeLen {
		return "", false
	}
	if _, err := base64.RawURLEncoding.DecodeString(code); err != nil {
		return "", false
	}
	return hasher.Hash("magic-short", code), true
}

// OpenShortLink returns the token a short link's sealed value holds.
func OpenShortLink(sealer *token.Sealer, sealed, ad string) (string, error) {
	raw, err := base64.RawStdEncoding.DecodeString(sealed)
	if err != nil {
		return "", errors.New("short link: sealed token is not base64")
	}
	tok, err := sealer.Open(raw, []byte(ad))
	if err != nil {
		return "", err
	}
	return string(tok), nil
}
