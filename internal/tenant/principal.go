package tenant

import (
	"context"
	"errors"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// Kind of server-side credential.
type Kind string

// Credential kinds.
const (
	KindAppSecret       Kind = "app_secret"
	KindWorkspaceSecret Kind = "workspace_secret"
	KindAPIKey          Kind = "api_key"
)

// APIKeyPrefix starts every API key, so secret scanners can find leaked ones.
const APIKeyPrefix = "ghk_"

// Principal is the server-side caller behind an Authorization header.
type Principal struct {
	Kind         Kind
	CredentialID string
	AppID        string // app secrets and API keys
	WorkspaceID  string // workspace secrets
	MemberID     string
	Role         string // a workspace secret's member's current role
}

var roleRank = map[string]int{RoleMember: 1, RoleAdmin: 2, RoleOwner: 3}

// Require checks that p acts for workspaceID with at least role min.
func (p Principal) Require(workspaceID, min string) error {
	if p.Kind != KindWorkspaceSecret || p.WorkspaceID != workspaceID {
		return ErrForbidden
	}
	if roleRank[p.Role] < roleRank[min] {
		return ErrForbidden
	}
	return nil
}

// Access is what a principal may do with an app.
type Access int

// Access levels.
const (
	// AccessRead lists and reads.
	AccessRead Access = iota + 1
	// AccessWrite creates, changes and deletes users and other app data.
	AccessWrite
	// AccessManage creates credentials and changes the app's settings.
	AccessManage
)

// AuthorizeApp checks that p may act on app at level need. App secrets have
// full access to their own app; API keys may read and write data of theirs;
// workspace secrets follow the member's current role (member: read only).
// A credential for another app or workspace is ErrForbidden, whether or not
// the app exists, so ids cannot be probed.
func (p Principal) AuthorizeApp(app store.App, need Access) error {
	switch p.Kind {
	case KindAppSecret:
		if p.AppID == app.ID {
			return nil
		}
	case KindAPIKey:
		if p.AppID == app.ID && need <= AccessWrite {
			return nil
		}
	case KindWorkspaceSecret:
		if p.WorkspaceID == app.WorkspaceID {
			if need == AccessRead || roleRank[p.Role] >= roleRank[RoleAdmin] {
				return nil
			}
		}
	}
	return ErrForbidden
}

// secretClaims are the claims of an API secret.
type secretClaims struct {
	token.Claims
	Scope string `json:"scope"` // "app" or "workspace"
}

// Authenticate resolves a bearer credential (an API secret JWT or an API key).
// Anything unknown, malformed, revoked or of another token type is ErrUnauthorized.
func (s *Service) Authenticate(ctx context.Context, bearer string) (Principal, error) {
	if strings.HasPrefix(bearer, APIKeyPrefix) {
		k, err := s.db.GetAPIKeyByHash(ctx, s.hasher.Hash("api-key", bearer))
		if err != nil {
			return Principal{}, unauthorized(err)
		}
		if k.RevokedAt != nil {
			return Principal{}, ErrUnauthorized
		}
		return Principal{Kind: KindAPIKey, CredentialID: k.ID, AppID: k.AppID}, nil
	}
	if token.Peek(bearer) != token.TypeAPISecret {
		return Principal{}, ErrUnauthorized
	}
	var c secretClaims
	if _, err := s.keys.Verify(bearer, token.TypeAPISecret, &c); err != nil {
		return Principal{}, ErrUnauthorized
	}
	if len(c.Audience) != 1 || c.ID == "" {
		return Principal{}, ErrUnauthorized
	}
	// The issuer is not pinned for API secrets: each is bound by its signature
	// and its database row, and changing the public base URL must not
	// invalidate every secret. Time claims are still checked.
	if c.Issuer == "" {
		return Principal{}, ErrUnauthorized
	}
	if err := c.Validate(c.Issuer, c.Audience[0], s.now(), false); err != nil {
		return Principal{}, ErrUnauthorized
	}
	rec, err := s.db.GetAPISecret(ctx, c.ID)
	if err != nil {
		return Principal{}, unauthorized(err)
	}
	if rec.RevokedAt != nil {
		return Principal{}, ErrUnauthorized
	}
	switch {
	case c.Scope == "app" && rec.AppID != "" && rec.AppID == c.Audience[0]:
		return Principal{Kind: KindAppSecret, CredentialID: rec.ID, AppID: rec.AppID}, nil
	case c.Scope == "workspace" && rec.WorkspaceID != "" && rec.WorkspaceID == c.Audience[0] && rec.MemberRole != "":
		return Principal{Kind: KindWorkspaceSecret, CredentialID: rec.ID, WorkspaceID: rec.WorkspaceID,
			MemberID: rec.MemberID, Role: rec.MemberRole}, nil
	}
	return Principal{}, ErrUnauthorized
}

// unauthorized keeps real failures (a database outage) distinct from an unknown credential.
func unauthorized(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnauthorized
	}
	return err
}
