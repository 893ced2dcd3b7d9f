package signin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// magicClaims are what the client SDK decodes from a magic-link token
// (client-compat §4.1); the server checks the signature and the single-use row.
type magicClaims struct {
	token.Claims
	UUID            string `json:"uuid"`
	UserStatus      string `json:"user_status"`
	Email           string `json:"email,omitempty"`
	Phone           string `json:"phone,omitempty"`
	WebauthnEnabled bool   `json:"webauthnEnabled"`
	Purpose         string `json:"purpose"`
}

// SendMagicLink e-mails (or texts) a link to the app's login page carrying a
// single-use token, and returns a separate polling handle to the device that
// asked, so it can collect its own session once the link is opened anywhere.
func (s *Service) SendMagicLink(ctx context.Context, app store.App, identifier string, meta map[string]any, webauthn bool, c Client) (_ SendResult, err error) {
	defer errs.Wrap(&err, "send magic link")
	r, err := s.resolve(ctx, app, identifier, meta, c)
	if err != nil {
		return SendResult{}, err
	}
	ttl := time.Duration(app.MagicLinkExpiration) * time.Second
	if r.User == nil {
		now := s.clock()
		return SendResult{ChallengeID: s.decoyHandle(now.Add(ttl)), SentAt: now, UserID: newID(), Sent: true, MetaErrors: r.MetaErrors}, nil
	}
	u := r.User
	ch := s.newChallenge(app, r, MethodMagicLink, 1, ttl, c)
	ch.WebauthnEnabled = webauthn
	tok, err := s.keys.Sign(token.TypeMagic, magicClaims{
		Claims: token.Claims{Issuer: s.settings.Issuer, Subject: u.ID, Audience: token.Audience{app.ID}, IssuedAt: ch.CreatedAt.Unix(),
			Expiry: ch.ExpiresAt.Unix(), ID: ch.ID},
		UUID: u.ID, UserStatus: u.Status, Email: u.Email, Phone: u.Phone, WebauthnEnabled: webauthn, Purpose: "magic_link",
	})
	if err != nil {
		return SendResult{}, err
	}
	handle := token.RandomString(32)
	ch.SecretHash, ch.PollHash = s.hasher.Hash("magic", tok), s.hasher.Hash("magic-poll", handle)
	link := appuser.AppLink(app, "sct_magic", tok)
	msg, err := s.message(app, r.ID, "magic_link", courier.LinkData{AppName: app.Name, Link: link, ExpiresIn: minutes(ttl)},
		fmt.Sprintf("Sign in to %s: %s (expires in %s)", app.Name, link, minutes(ttl)))
	if err != nil {
		return SendResult{}, err
	}
	msg.Link = link
	sent, err := s.issue(ctx, ch, []string{MethodMagicLink}, msg)
	if err != nil {
		return SendResult{}, err
	}
	return SendResult{ChallengeID: handle, SentAt: ch.CreatedAt, UserID: u.ID, Sent: sent, MetaErrors: r.MetaErrors}, nil
}

// parseMagic checks a magic-link token's signature, type, app and expiry;
// anything wrong is ErrMagicLinkNotFound, as the SDK expects.
func (s *Service) parseMagic(app store.App, tok string) (magicClaims, error) {
	var c magicClaims
	if _, err := s.keys.Verify(tok, token.TypeMagic, &c); err != nil {
		return c, ErrMagicLinkNotFound
	}
	if err := c.Validate(s.settings.Issuer, app.ID, s.now(), true); err != nil || c.Purpose != "magic_link" {
		return c, ErrMagicLinkNotFound
	}
	return c, nil
}

// AuthenticateMagicLink signs in the device that opened a link: it spends
// the link and starts a session. The device that asked for the link gets its
// own session from MagicLinkStatus.
func (s *Service) AuthenticateMagicLink(ctx context.Context, app store.App, tok string, c Client) (_ TokenSet, err error) {
	defer errs.Wrap(&err, "authenticate magic link")
	if _, err := s.parseMagic(app, tok); err != nil {
		return TokenSet{}, err
	}
	ch, err := s.db.GetChallengeBySecret(ctx, s.hasher.Hash("magic", tok))
	if err != nil || ch.AppID != app.ID || ch.Method != MethodMagicLink {
		return TokenSet{}, notFound(err)
	}
	now := s.clock()
	var out TokenSet
	var spent bool
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		won, err := tx.CompleteChallenge(ctx, ch.ID, now)
		if err != nil {
			return err
		}
		if !won {
			// A genuine link, used again or after a newer one: a failed login
			// of that user, recorded (the transaction commits) and refused.
			spent = true
			return s.emitLoginFailed(ctx, tx, ch, "link_used_or_superseded")
		}
		out, err = s.signInVerified(ctx, tx, app, ch, MethodMagic, now, c, ErrMagicLinkNotFound)
		return err
	})
	if err == nil && spent {
		return TokenSet{}, ErrMagicLinkNotFound
	}
	return out, err
}

func notFound(err error) error {
	if err == nil || errors.Is(err, store.ErrNotFound) {
		return ErrMagicLinkNotFound
	}
	return err
}

// MagicLinkStatus is polled by the device that asked for a link: pending
// until the link is opened, then a token set for this device exactly once,
// then not found. Polling faster than the poll interval is refused.
func (s *Service) MagicLinkStatus(ctx context.Context, app store.App, handle string, c Client) (_ TokenSet, err error) {
	defer errs.Wrap(&err, "magic link status")
	pollHash := s.hasher.Hash("magic-poll", handle)
	// Pacing is per handle and the same for real handles and decoys, so the
	// answers cannot tell them apart.
	if s.limits.PollInterval > 0 {
		if err := s.allow(ctx, bucket{key: "poll:" + pollHash, rule: ratelimit.Rule{Limit: 1, Period: s.limits.PollInterval}}); err != nil {
			return TokenSet{}, err
		}
	}
	now := s.clock()
	ch, err := s.db.GetChallengeByPoll(ctx, pollHash)
	if errors.Is(err, store.ErrNotFound) && s.decoyPending(handle, now) {
		return TokenSet{}, ErrMagicLinkPending
	}
	if err != nil || ch.AppID != app.ID {
		return TokenSet{}, notFound(err)
	}
	switch {
	case ch.Status == store.ChallengePending && now.Before(ch.ExpiresAt):
		return TokenSet{}, ErrMagicLinkPending
	case ch.Status != store.ChallengeCompleted || ch.CollectedAt != nil:
		return TokenSet{}, ErrMagicLinkNotFound
	}
	var out TokenSet
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		won, err := tx.CollectChallenge(ctx, ch.ID, now)
		if err != nil {
			return err
		}
		if !won {
			return ErrMagicLinkNotFound
		}
		u, err := tx.GetAppUser(ctx, app.ID, ch.AppUserID)
		if err != nil || u.Status != store.StatusActive {
			return notFound(err)
		}
		client := Client{IP: ch.IP, UserAgent: ch.UserAgent}
		if c.IP != "" {
			client = c
		}
		out, err = s.startSession(ctx, tx, app, u, MethodMagic, client)
		return err
	})
	return out, err
}

// ConfirmInvite accepts an invitation (appuser spends it, stores the
// metadata the user gave and activates the user) and starts a session, in
// one transaction. A bad invitation is ErrMagicLinkNotFound, as the client
// SDK expects for any link.
func (s *Service) ConfirmInvite(ctx context.Context, app store.App, tok string, meta map[string]any, c Client) (_ TokenSet, err error) {
	defer errs.Wrap(&err, "confirm invite")
	var out TokenSet
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		u, err := s.users.AcceptInvitation(ctx, tx, app, tok, meta)
		if errors.Is(err, appuser.ErrInvitationNotFound) {
			return ErrMagicLinkNotFound
		}
		if err != nil {
			return err
		}
		out, err = s.startSession(ctx, tx, app, u, MethodInvite, c)
		return err
	})
	return out, err
}
