package tenant

import (
	"context"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/audit"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// APISecret is an API secret's record; the token itself is shown only once.
type APISecret = store.APISecret

// APIKey is an API key's record; the key itself is shown only once.
type APIKey = store.APIKey

// CreateAppSecret issues an API secret for one app; who may manage the app may.
func (s *Service) CreateAppSecret(ctx context.Context, p access.Principal, appID, name string) (_ string, _ APISecret, err error) {
	defer errs.Wrap(&err, "create app secret")
	rec := APISecret{ID: newID(), AppID: appID, Name: strings.TrimSpace(name), CreatedAt: s.clock()}
	var tok string
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, appID, access.Manage); err != nil {
			return err
		}
		a, err := tx.GetApp(ctx, appID)
		if err != nil {
			return notFound(err, ErrAppNotFound)
		}
		if tok, err = s.mintSecret(rec, appID, "app"); err != nil {
			return err
		}
		if err := tx.CreateAPISecret(ctx, rec); err != nil {
			return err
		}
		return s.record(ctx, tx, p, audit.Change{WorkspaceID: a.WorkspaceID, AppID: appID, Action: "api_secret.created",
			TargetType: "api_secret", TargetID: rec.ID, After: credentialRecord{Name: rec.Name}})
	})
	if err != nil {
		return "", APISecret{}, err
	}
	return tok, rec, nil
}

// CreateWorkspaceSecret issues an API secret for a workspace, acting for one
// member (by id or e-mail; "" picks the first owner) whose role is read
// whenever the secret is used. Owners may.
func (s *Service) CreateWorkspaceSecret(ctx context.Context, p access.Principal, workspaceID, member, name string) (_ string, _ APISecret, err error) {
	defer errs.Wrap(&err, "create workspace secret")
	var tok string
	var rec APISecret
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := lockWorkspace(ctx, tx, p, workspaceID); err != nil {
			return err
		}
		if _, err := access.Workspace(ctx, tx.Queries, p, workspaceID, access.RoleOwner); err != nil {
			return err
		}
		members, err := tx.ListMembers(ctx, workspaceID)
		if err != nil {
			return err
		}
		for _, m := range members {
			if (member == "" && m.Role == access.RoleOwner) || m.ID == member || (member != "" && m.Email == strings.ToLower(member)) {
				if tok, rec, err = s.newWorkspaceSecret(ctx, tx, m, name); err != nil {
					return err
				}
				return s.record(ctx, tx, p, audit.Change{WorkspaceID: workspaceID, Action: "api_secret.created", TargetType: "api_secret",
					TargetID: rec.ID, After: credentialRecord{Name: rec.Name, MemberID: m.ID}})
			}
		}
		return ErrMemberNotFound
	})
	if err != nil {
		return "", APISecret{}, err
	}
	return tok, rec, nil
}

// newWorkspaceSecret signs and stores, in tx, a workspace secret acting for m.
func (s *Service) newWorkspaceSecret(ctx context.Context, tx *store.Tx, m Member, name string) (string, APISecret, error) {
	rec := APISecret{ID: newID(), WorkspaceID: m.WorkspaceID, MemberID: m.ID, Name: strings.TrimSpace(name),
		CreatedAt: s.clock(), MemberRole: m.Role}
	tok, err := s.mintSecret(rec, m.WorkspaceID, "workspace")
	if err != nil {
		return "", APISecret{}, err
	}
	return tok, rec, tx.CreateAPISecret(ctx, rec)
}

// ReissueSecret signs a fresh token for an existing, unrevoked secret (same
// id, same scope). Development mode uses it to print a working secret again
// after a restart; only the operator may.
func (s *Service) ReissueSecret(ctx context.Context, p access.Principal, id string) (_ string, _ APISecret, err error) {
	defer errs.Wrap(&err, "reissue secret")
	if err := access.OperatorOnly(p); err != nil {
		return "", APISecret{}, err
	}
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

// authorizeSecret checks that p may manage the app or workspace a secret belongs to.
func authorizeSecret(ctx context.Context, q store.Queries, p access.Principal, rec APISecret) error {
	if rec.AppID != "" {
		return access.App(ctx, q, p, rec.AppID, access.Manage)
	}
	_, err := access.Workspace(ctx, q, p, rec.WorkspaceID, access.RoleOwner)
	return err
}

// RevokeSecret revokes an API secret by id; it fails on its next use. Who may
// issue the secret may revoke it.
func (s *Service) RevokeSecret(ctx context.Context, p access.Principal, id string) (err error) {
	defer errs.Wrap(&err, "revoke secret")
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		rec, err := tx.GetAPISecret(ctx, id)
		if err != nil {
			if p.Kind == access.KindOperator {
				return notFound(err, ErrSecretNotFound)
			}
			return notFound(err, access.ErrForbidden)
		}
		if err := authorizeSecret(ctx, tx.Queries, p, rec); err != nil {
			return err
		}
		now := s.clock()
		if err := notFound(tx.RevokeAPISecret(ctx, id, now), ErrSecretNotFound); err != nil {
			return err
		}
		workspaceID := rec.WorkspaceID
		if rec.AppID != "" {
			a, err := tx.GetApp(ctx, rec.AppID)
			if err != nil {
				return err
			}
			workspaceID = a.WorkspaceID
		}
		return s.record(ctx, tx, p, audit.Change{WorkspaceID: workspaceID, AppID: rec.AppID, Action: "api_secret.revoked",
			TargetType: "api_secret", TargetID: id, Before: credentialRecord{Name: rec.Name, MemberID: rec.MemberID},
			After: credentialRecord{Name: rec.Name, MemberID: rec.MemberID, Revoked: &now}})
	})
}

// ListSecrets lists the secrets of an app or of a workspace (never the
// secrets themselves), to who may issue them.
func (s *Service) ListSecrets(ctx context.Context, p access.Principal, appID, workspaceID string) (_ []APISecret, err error) {
	defer errs.Wrap(&err, "list secrets")
	if (appID == "") == (workspaceID == "") {
		return nil, errs.Invalidf("app_id", "or workspace_id is required, not both")
	}
	if err := authorizeSecret(ctx, s.db.Queries, p, APISecret{AppID: appID, WorkspaceID: workspaceID}); err != nil {
		return nil, err
	}
	if err := s.exists(ctx, p, appID, workspaceID); err != nil {
		return nil, err
	}
	return s.db.ListAPISecrets(ctx, appID, workspaceID)
}

// CreateAPIKey issues an API key for an app; the key is returned only here.
// Who may manage the app may.
func (s *Service) CreateAPIKey(ctx context.Context, p access.Principal, appID, nickname string) (_ string, _ APIKey, err error) {
	defer errs.Wrap(&err, "create api key")
	key := token.NewSecret(APIKeyPrefix)
	rec := APIKey{ID: newID(), AppID: appID, KeyHash: s.hasher.Hash("api-key", key), Last4: key[len(key)-4:], CreatedAt: s.clock()}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, appID, access.Manage); err != nil {
			return err
		}
		rec.Nickname = strings.TrimSpace(nickname)
		if rec.Nickname == "" {
			rec.Nickname = "API key"
		}
		if len(rec.Nickname) > 100 {
			return errs.Invalidf("nickname", "must be at most 100 characters")
		}
		a, err := tx.GetApp(ctx, appID)
		if err != nil {
			return notFound(err, ErrAppNotFound)
		}
		if err := tx.CreateAPIKey(ctx, rec); err != nil {
			return err
		}
		return s.record(ctx, tx, p, audit.Change{WorkspaceID: a.WorkspaceID, AppID: appID, Action: "api_key.created",
			TargetType: "api_key", TargetID: rec.ID, After: credentialRecord{Name: rec.Nickname}})
	})
	if err != nil {
		return "", APIKey{}, err
	}
	return key, rec, nil
}

// ListAPIKeys lists an app's keys (never the keys themselves).
func (s *Service) ListAPIKeys(ctx context.Context, p access.Principal, appID string) (_ []APIKey, err error) {
	defer errs.Wrap(&err, "list api keys")
	if err := access.App(ctx, s.db.Queries, p, appID, access.Manage); err != nil {
		return nil, err
	}
	return s.db.ListAPIKeys(ctx, appID)
}

// RevokeAPIKey revokes an app's key; it fails on its next use.
func (s *Service) RevokeAPIKey(ctx context.Context, p access.Principal, appID, id string) (_ APIKey, err error) {
	defer errs.Wrap(&err, "revoke api key")
	var k APIKey
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := access.App(ctx, tx.Queries, p, appID, access.Manage); err != nil {
			return err
		}
		now := s.clock()
		if k, err = tx.RevokeAPIKey(ctx, appID, id, now); err != nil {
			return notFound(err, ErrAPIKeyNotFound)
		}
		a, err := tx.GetApp(ctx, appID)
		if err != nil {
			return err
		}
		return s.record(ctx, tx, p, audit.Change{WorkspaceID: a.WorkspaceID, AppID: appID, Action: "api_key.revoked",
			TargetType: "api_key", TargetID: id, Before: credentialRecord{Name: k.Nickname},
			After: credentialRecord{Name: k.Nickname, Revoked: &now}})
	})
	return k, err
}
