package tenant

import (
	"context"
	"errors"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// APISecret is an API secret's record; the token itself is shown only once.
type APISecret = store.APISecret

// APIKey is an API key's record; the key itself is shown only once.
type APIKey = store.APIKey

// CreateAppSecret issues an API secret for one app.
func (s *Service) CreateAppSecret(ctx context.Context, appID, name string) (string, APISecret, error) {
	if _, err := s.GetApp(ctx, appID); err != nil {
		return "", APISecret{}, err
	}
	rec := APISecret{ID: newID(), AppID: appID, Name: strings.TrimSpace(name), CreatedAt: s.clock()}
	tok, err := s.mintSecret(rec, appID, "app")
	if err != nil {
		return "", APISecret{}, err
	}
	return tok, rec, s.db.CreateAPISecret(ctx, rec)
}

// CreateWorkspaceSecret issues an API secret for a workspace, acting for one
// member whose role is checked on every request. memberID "" picks the first owner.
func (s *Service) CreateWorkspaceSecret(ctx context.Context, workspaceID, memberID, name string) (string, APISecret, error) {
	if _, err := s.GetWorkspace(ctx, workspaceID); err != nil {
		return "", APISecret{}, err
	}
	members, err := s.db.ListMembers(ctx, workspaceID)
	if err != nil {
		return "", APISecret{}, err
	}
	var member *store.Member
	for i, m := range members {
		if (memberID == "" && m.Role == RoleOwner) || m.ID == memberID || (memberID != "" && m.Email == strings.ToLower(memberID)) {
			member = &members[i]
			break
		}
	}
	if member == nil {
		return "", APISecret{}, ErrMemberNotFound
	}
	rec := APISecret{ID: newID(), WorkspaceID: workspaceID, MemberID: member.ID, Name: strings.TrimSpace(name), CreatedAt: s.clock(), MemberRole: member.Role}
	tok, err := s.mintSecret(rec, workspaceID, "workspace")
	if err != nil {
		return "", APISecret{}, err
	}
	return tok, rec, s.db.CreateAPISecret(ctx, rec)
}

// ReissueSecret signs a fresh token for an existing, unrevoked secret (same id,
// same scope). Dev mode uses it to print a working secret again after a restart.
func (s *Service) ReissueSecret(ctx context.Context, id string) (string, APISecret, error) {
	rec, err := s.db.GetAPISecret(ctx, id)
	if err != nil {
		return "", rec, notFound(err, ErrSecretNotFound)
	}
	if rec.RevokedAt != nil {
		return "", rec, ErrSecretNotFound
	}
	if rec.AppID != "" {
		tok, err := s.mintSecret(rec, rec.AppID, "app")
		return tok, rec, err
	}
	tok, err := s.mintSecret(rec, rec.WorkspaceID, "workspace")
	return tok, rec, err
}

func (s *Service) mintSecret(rec APISecret, audience, scope string) (string, error) {
	sub := rec.MemberID
	if sub == "" {
		sub = audience
	}
	return s.keys.Sign(token.TypeAPISecret, secretClaims{
		Claims: token.Claims{Issuer: s.issuer, Subject: sub, Audience: token.Audience{audience}, IssuedAt: rec.CreatedAt.Unix(), ID: rec.ID},
		Scope:  scope,
	})
}

// RevokeSecret revokes an API secret by id; it fails on its next use.
func (s *Service) RevokeSecret(ctx context.Context, id string) error {
	return notFound(s.db.RevokeAPISecret(ctx, id, s.clock()), ErrSecretNotFound)
}

// ListSecrets lists the secrets of an app or a workspace.
func (s *Service) ListSecrets(ctx context.Context, appID, workspaceID string) ([]APISecret, error) {
	return s.db.ListAPISecrets(ctx, appID, workspaceID)
}

// CreateAPIKey issues an API key for an app; the key is returned only here.
func (s *Service) CreateAPIKey(ctx context.Context, appID, nickname string) (string, APIKey, error) {
	nickname = strings.TrimSpace(nickname)
	if nickname == "" {
		nickname = "API key"
	}
	if len(nickname) > 100 {
		return "", APIKey{}, invalid("nickname", "must be at most 100 characters")
	}
	if _, err := s.GetApp(ctx, appID); err != nil {
		return "", APIKey{}, err
	}
	key := token.NewSecret(APIKeyPrefix)
	rec := APIKey{ID: newID(), AppID: appID, Nickname: nickname, KeyHash: s.hasher.Hash("api-key", key),
		Last4: key[len(key)-4:], CreatedAt: s.clock()}
	if err := s.db.CreateAPIKey(ctx, rec); err != nil {
		return "", APIKey{}, err
	}
	return key, rec, nil
}

// ListAPIKeys lists an app's keys (never the keys themselves).
func (s *Service) ListAPIKeys(ctx context.Context, appID string) ([]APIKey, error) {
	return s.db.ListAPIKeys(ctx, appID)
}

// RevokeAPIKey revokes an app's key; it fails on its next use.
func (s *Service) RevokeAPIKey(ctx context.Context, appID, id string) (APIKey, error) {
	k, err := s.db.RevokeAPIKey(ctx, appID, id, s.clock())
	if errors.Is(err, store.ErrNotFound) {
		return k, ErrAPIKeyNotFound
	}
	return k, err
}
