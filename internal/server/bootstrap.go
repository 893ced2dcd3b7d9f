package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// Bootstrap is what development mode prints and writes to DATA_DIR/bootstrap.json.
type Bootstrap struct {
	WorkspaceID string `json:"workspace_id"`
	AppID       string `json:"app_id"`
	APISecret   string `json:"api_secret"`
	BaseURL     string `json:"base_url"`
	// AccessTokenAlg signs the Demo app's access tokens.
	AccessTokenAlg string `json:"access_token_alg"`
	// EmailAuthType is how the Demo app signs in by e-mail: magic or otp.
	EmailAuthType string `json:"email_auth_type"`
}

// BootstrapPath is where DevBootstrap writes its record.
func BootstrapPath(dataDir string) string { return filepath.Join(dataDir, "bootstrap.json") }

type bootstrapState struct {
	WorkspaceID string `json:"workspace_id"`
	AppID       string `json:"app_id"`
	SecretID    string `json:"secret_id"`
}

const bootstrapKey = "dev_bootstrap"

// DevBootstrap creates workspace "Default", app "Demo" and an app API secret
// on the first start in development mode; later starts reuse them (and the
// saved secret if it still works) and rewrite bootstrap.json with the same
// ids. It acts as the operator.
func (s *Server) DevBootstrap(ctx context.Context) (Bootstrap, error) {
	op := access.Operator()
	path := BootstrapPath(s.cfg.DataDir)
	out := Bootstrap{BaseURL: s.cfg.BaseURL}
	var st bootstrapState
	raw, err := s.DB.GetState(ctx, bootstrapKey)
	if err == nil {
		err = json.Unmarshal([]byte(raw), &st)
	}
	if err == nil {
		if _, aerr := s.Tenants.GetApp(ctx, st.AppID); aerr != nil {
			err = aerr
		}
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, tenant.ErrAppNotFound) {
		return out, fmt.Errorf("dev bootstrap: %w", err)
	}
	if err != nil {
		// A first start cut off part-way (a crash between two of these
		// steps) left what it made: find it by slug rather than make it again.
		if st, err = s.devWorkspaceAndApp(ctx, op); err != nil {
			return out, fmt.Errorf("dev bootstrap: %w", err)
		}
	}
	out.WorkspaceID, out.AppID = st.WorkspaceID, st.AppID

	// Reuse the saved secret when it still authenticates for this app.
	var saved Bootstrap
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &saved) == nil && saved.APISecret != "" {
		if p, err := s.Tenants.Authenticate(ctx, saved.APISecret); err == nil && p.AppID == st.AppID {
			out.APISecret = saved.APISecret
			st.SecretID = p.CredentialID
		}
	}
	if out.APISecret == "" && st.SecretID != "" {
		if tok, _, err := s.Tenants.ReissueSecret(ctx, op, st.SecretID); err == nil {
			out.APISecret = tok
		}
	}
	if out.APISecret == "" {
		tok, rec, err := s.Tenants.CreateAppSecret(ctx, op, st.AppID, "dev bootstrap")
		if err != nil {
			return out, fmt.Errorf("dev bootstrap: %w", err)
		}
		out.APISecret, st.SecretID = tok, rec.ID
	}
	app, err := s.Tenants.GetApp(ctx, st.AppID)
	if err != nil {
		return out, fmt.Errorf("dev bootstrap: %w", err)
	}
	// dev_email_auth_type applies on every start, so switching between codes
	// and links is a restart with another value.
	if t := s.cfg.DevEmailAuthType; t != "" && t != app.EmailAuthType {
		if app, err = s.Tenants.UpdateApp(ctx, op, app.WorkspaceID, app.ID, tenant.AppSettings{EmailAuthType: &t}); err != nil {
			return out, fmt.Errorf("dev bootstrap: %w", err)
		}
	}
	out.AccessTokenAlg, out.EmailAuthType = s.Tenants.AccessTokenAlg(app), app.EmailAuthType
	b, _ := json.Marshal(st)
	if err := s.DB.PutState(ctx, bootstrapKey, string(b), s.now()); err != nil {
		return out, fmt.Errorf("dev bootstrap: %w", err)
	}
	return out, writeFile0600(path, out)
}

// DevOwnerEmail owns the development workspace: `gatehouse console link
// --dev --email` with it signs in to the console.
const DevOwnerEmail = "dev@localhost.localdomain"

// devWorkspaceAndApp finds or creates workspace "Default" and its app "Demo".
func (s *Server) devWorkspaceAndApp(ctx context.Context, op access.Principal) (bootstrapState, error) {
	var st bootstrapState
	views, err := s.Tenants.ListWorkspaces(ctx, op)
	if err != nil {
		return st, err
	}
	for _, v := range views {
		if v.Slug == "default" {
			st.WorkspaceID = v.ID
		}
	}
	if st.WorkspaceID == "" {
		nw, err := s.Tenants.CreateWorkspace(ctx, op, tenant.WorkspaceInput{Name: "Default", OwnerEmail: DevOwnerEmail, OwnerName: "Developer"})
		if err != nil {
			return st, err
		}
		st.WorkspaceID = nw.Workspace.ID
	}
	apps, err := s.Tenants.ListApps(ctx, op, st.WorkspaceID)
	if err != nil {
		return st, err
	}
	for _, a := range apps {
		if a.Slug == "demo" {
			st.AppID = a.ID
			return st, nil
		}
	}
	name, origin := "Demo", "http://localhost:3000"
	schema := appuser.Schema{
		{ID: "first_name", Name: "First name", FieldName: "first_name", FieldType: appuser.FieldString, VisibleProfile: true, VisibleRegistration: true},
		{ID: "last_name", Name: "Last name", FieldName: "last_name", FieldType: appuser.FieldString, VisibleProfile: true, VisibleRegistration: true},
	}
	app, err := s.Tenants.CreateApp(ctx, op, st.WorkspaceID, tenant.AppSettings{Name: &name, Origin: &origin, LoginURL: &origin, MetaSchema: &schema})
	if err != nil {
		return st, err
	}
	st.AppID = app.ID
	return st, nil
}

// writeFile0600 replaces path atomically with v as JSON, readable only by its owner.
func writeFile0600(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".bootstrap-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
