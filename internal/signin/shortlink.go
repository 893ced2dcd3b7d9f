package signin

import (
	"context"
	"errors"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// A magic link sent by SMS is a short link (appuser.NewShortLink): the
// challenge stores the code's keyed hash and the magic token sealed;
// opening it redirects to the consent link, which behaves exactly as the
// e-mailed one (single use is the magic link's). It works while its
// challenge is pending and unexpired. An invitation sent by SMS is one too
// (appuser resolves those).

// shortLink gives ch a short link for the magic token tok and returns it.
func (s *Service) shortLink(ch *store.Challenge, tok string) (string, error) {
	short, err := appuser.NewShortLink(s.sealer, s.hasher, s.settings.BaseURL, "magic-short:"+ch.ID, tok)
	if err != nil {
		return "", err
	}
	ch.ShortHash, ch.ShortTokenSealed = short.Hash, short.Sealed
	return short.Link, nil
}

// ErrShortLinkNotFound is a short link that is unknown, used or expired.
var ErrShortLinkNotFound = errors.New("link not found or expired")

// ResolveShortLink returns the link a short link stands for: a magic
// link's consent link, or an invitation's link to the app. A link whose
// challenge or invitation is no longer open is ErrShortLinkNotFound, with
// the app's id so the answer can name the app; an unknown code is
// ErrShortLinkNotFound with no app. Every opening takes one from c's
// per-IP budget (ShortLinkPerIP) before the code is looked up, so once it
// is spent a guess learns nothing, a right one included (*RateLimitedError).
func (s *Service) ResolveShortLink(ctx context.Context, code string, c Client) (appID, link string, err error) {
	defer errs.Wrap(&err, "resolve short link")
	if err := s.allow(ctx, bucket{"short-link:ip:" + c.IP, s.limits.ShortLinkPerIP}); err != nil {
		return "", "", err
	}
	hash, ok := appuser.ShortLinkHash(s.hasher, code)
	if !ok {
		return "", "", ErrShortLinkNotFound
	}
	ch, sealed, err := s.db.GetChallengeByShortLink(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		appID, link, err = s.users.ResolveInvitationShortLink(ctx, hash)
		if errors.Is(err, appuser.ErrInvitationNotFound) {
			return appID, "", ErrShortLinkNotFound
		}
		return appID, link, err
	} else if err != nil {
		return "", "", err
	}
	if ch.Status != store.ChallengePending || !s.now.Read().Before(ch.ExpiresAt) {
		return ch.AppID, "", ErrShortLinkNotFound
	}
	tok, err := appuser.OpenShortLink(s.sealer, sealed, "magic-short:"+ch.ID)
	if err != nil {
		return "", "", err
	}
	app, err := s.db.GetApp(ctx, ch.AppID)
	if err != nil {
		return "", "", err
	}
	return app.ID, s.consentLink(app, tok), nil
}
