package signin

import (
	"context"
	"encoding/base64"
	"errors"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// Short links. A magic link sent by SMS would be some 700 characters (the
// consent link carries the signed sct_magic token): five SMS segments. By
// SMS it is {base_url}/m/{code} instead, where code is 12 random bytes
// (96 bits, 16 URL-safe characters). The challenge stores the code's keyed
// hash and the token sealed with the master key; opening the short link
// redirects to the consent link, which behaves exactly as the e-mailed one
// (single use is the magic link's). The short link works while its
// challenge is pending and unexpired.

// shortCodeBytes is the randomness of a short link's code.
const shortCodeBytes = 12

// shortCodeLen is the length of a code, base64url without padding.
var shortCodeLen = base64.RawURLEncoding.EncodedLen(shortCodeBytes)

// ShortLinkPath is the path of short links, before the code.
const ShortLinkPath = "/m/"

// shortLink gives ch a short link for the magic token tok and returns it.
func (s *Service) shortLink(ch *store.Challenge, tok string) (string, error) {
	code := token.RandomString(shortCodeBytes)
	sealed, err := s.sealer.Seal([]byte(tok), []byte("magic-short:"+ch.ID))
	if err != nil {
		return "", err
	}
	ch.ShortHash, ch.ShortTokenSealed = s.hasher.Hash("magic-short", code), base64.RawStdEncoding.EncodeToString(sealed)
	return s.settings.BaseURL + ShortLinkPath + code, nil
}

// ErrShortLinkNotFound is a short link that is unknown, used or expired.
var ErrShortLinkNotFound = errors.New("link not found or expired")

// ResolveShortLink returns the consent link a short link stands for. A link
// whose challenge is no longer pending or has expired is
// ErrShortLinkNotFound, with the app's id so the answer can name the app;
// an unknown code is ErrShortLinkNotFound with no app.
func (s *Service) ResolveShortLink(ctx context.Context, code string) (appID, link string, err error) {
	defer errs.Wrap(&err, "resolve short link")
	if len(code) != shortCodeLen {
		return "", "", ErrShortLinkNotFound
	}
	if _, err := base64.RawURLEncoding.DecodeString(code); err != nil {
		return "", "", ErrShortLinkNotFound
	}
	ch, sealed, err := s.db.GetChallengeByShortLink(ctx, s.hasher.Hash("magic-short", code))
	if errors.Is(err, store.ErrNotFound) {
		return "", "", ErrShortLinkNotFound
	} else if err != nil {
		return "", "", err
	}
	if ch.Status != store.ChallengePending || !s.now().Before(ch.ExpiresAt) {
		return ch.AppID, "", ErrShortLinkNotFound
	}
	raw, err := base64.RawStdEncoding.DecodeString(sealed)
	if err != nil {
		return "", "", err
	}
	tok, err := s.sealer.Open(raw, []byte("magic-short:"+ch.ID))
	if err != nil {
		return "", "", err
	}
	app, err := s.db.GetApp(ctx, ch.AppID)
	if err != nil {
		return "", "", err
	}
	return app.ID, s.consentLink(app, string(tok)), nil
}
