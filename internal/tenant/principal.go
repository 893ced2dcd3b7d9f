package tenant

import (
	"context"
	"errors"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// APIKeyPrefix starts every API key, so secret scanners can find leaked ones.
const APIKeyPrefix = "ghk_"

// secretClaims are the claims of an API secret.
type secretClaims struct {
	token.Claims
	Scope string `json:"scope"` // "app" or "workspace"
}

// Authenticate resolves a bearer credential (an API secret JWT or an API key)
// into the principal it stands for. Anything unknown, malformed, revoked or of
// another token type is ErrUnauthorized. What the principal may do is decided
// later, by the method it calls.
func (s *Service) Authenticate(ctx context.Context, bearer string) (_ access.Principal, err error) {
	defer errs.Wrap(&err, "authenticate")
	if strings.HasPrefix(bearer, APIKeyPrefix) {
		k, err := s.db.GetAPIKeyByHash(ctx, s.hasher.Hash("api-key", bearer))
		if err != nil {
			return access.Principal{}, unauthorized(err)
		}
		if k.RevokedAt != nil {
			return access.Principal{}, ErrUnauthorized
		}
		return access.Principal{Kind: access.KindAPIKey, CredentialID: k.ID, AppID: k.AppID}, nil
	}
	if token.Peek(bearer) != token.TypeAPISecret {
		return access.Principal{}, ErrUnauthorized
	}
	var c secretClaims
	if _, err := s.keys.Verify(bearer, token.TypeAPISecret, &c); err != nil {
		return access.Principal{}, ErrUnauthorized
	}
	if len(c.Audience) != 1 || c.ID == "" {
		return access.Principal{}, ErrUnauthorized
	}
	// The issuer is not pinned for API secrets: each is bound by its signature
	// and its database row, and changing the public base URL must not
	// invalidate every secret. Time claims are still checked.
	if c.Issuer == "" {
		return access.Principal{}, ErrUnauthorized
	}
	if err := c.Validate(c.Issuer, c.Audience[0], s.now.Read(), false); err != nil {
		return access.Principal{}, ErrUnauthorized
	}
	rec, err := s.db.GetAPISecret(ctx, c.ID)
	if err != nil {
		return access.Principal{}, unauthorized(err)
	}
	if rec.RevokedAt != nil {
		return access.Principal{}, ErrUnauthorized
	}
	switch {
	case c.Scope == "app" && rec.AppID != "" && rec.AppID == c.Audience[0]:
		return access.Principal{Kind: access.KindAppSecret, CredentialID: rec.ID, AppID: rec.AppID}, nil
	case c.Scope == "workspace" && rec.WorkspaceID != "" && rec.WorkspaceID == c.Audience[0] && rec.MemberRole != "":
		return access.Principal{Kind: access.KindWorkspaceSecret, CredentialID: rec.ID, WorkspaceID: rec.WorkspaceID,
			MemberID: rec.MemberID}, nil
	}
	return access.Principal{}, ErrUnauthorized
}

// unauthorized keeps real failures (a database outage) distinct from an unknown credential.
func unauthorized(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnauthorized
	}
	return err
}
