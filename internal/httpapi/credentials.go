package httpapi

import (
	"context"
	"errors"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// OpenAPI security scheme names.
const (
	schemeAPISecret  = "apiSecret"
	schemeUserAccess = "userAccess"
)

// auth says which credential an operation takes; it travels in the
// operation's metadata so this file alone decides who is calling.
type auth int

const (
	// authNone: no credential, no app.
	authNone auth = iota
	// authPublicApp: no credential; the path's app must exist.
	authPublicApp
	// authApp: an API secret or API key; the path's app must exist. The
	// domain method decides what the credential may do with the app.
	authApp
	// authWorkspace: an API secret; the domain method decides.
	authWorkspace
	// authUser: a user's access token in X-Authorization, for the path's app.
	authUser
	// authOptionalApp: authPublicApp without an Authorization header, authApp
	// with one (a bad credential is refused, never ignored). The domain
	// method decides what the credential adds.
	authOptionalApp
)

const metaAuth = "gatehouse.auth"

// credentials is the huma middleware that finds out who is calling and for
// which app, and refuses a credential that does not belong to the path's app
// or workspace at all (access.Reaches) before any input is read; what the
// caller may do there is decided by the domain method. Each header accepts
// only its own token type: Authorization carries API secrets and API keys (and
// nothing else); user tokens use X-Authorization.
func (s *Server) credentials(hctx huma.Context, next func(huma.Context)) {
	op := hctx.Operation()
	kind, _ := op.Metadata[metaAuth].(auth)
	ctx := hctx.Context()
	switch kind {
	case authPublicApp:
		app, err := s.Tenants.App(ctx, appParam(hctx))
		if err != nil {
			s.writeError(hctx, err)
			return
		}
		hctx = huma.WithValue(hctx, keyApp, app)
	case authOptionalApp, authApp:
		if kind == authOptionalApp && strings.TrimSpace(hctx.Header("Authorization")) == "" {
			app, err := s.Tenants.App(ctx, appParam(hctx))
			if err != nil {
				s.writeError(hctx, err)
				return
			}
			hctx = huma.WithValue(hctx, keyApp, app)
			break
		}
		p, err := s.principal(ctx, hctx.Header("Authorization"))
		if err != nil {
			s.writeError(hctx, err)
			return
		}
		app, err := s.Tenants.App(ctx, appParam(hctx))
		if errors.Is(err, tenant.ErrAppNotFound) || (err == nil && !access.Reaches(p, app.ID, app.WorkspaceID)) {
			err = access.ErrForbidden // no probing for ids: same answer as another tenant's app
		}
		if err != nil {
			s.writeError(hctx, err)
			return
		}
		hctx = huma.WithValue(huma.WithValue(hctx, keyPrincipal, p), keyApp, app)
	case authWorkspace:
		p, err := s.principal(ctx, hctx.Header("Authorization"))
		if err == nil && (p.Kind == access.KindAppSecret || p.Kind == access.KindAPIKey ||
			!access.Reaches(p, "", hctx.Param("workspace_id"))) {
			err = access.ErrForbidden
		}
		if err != nil {
			s.writeError(hctx, err)
			return
		}
		hctx = huma.WithValue(hctx, keyPrincipal, p)
	case authUser:
		app, err := s.Tenants.App(ctx, appParam(hctx))
		if err == nil {
			var caller signin.Caller
			caller, err = s.SignIn.Authenticate(ctx, app, strings.TrimSpace(hctx.Header("X-Authorization")))
			hctx = huma.WithValue(huma.WithValue(hctx, keyApp, app), keyCaller, caller)
		}
		if err != nil {
			s.writeError(hctx, err)
			return
		}
	}
	next(hctx)
}

func appParam(hctx huma.Context) string {
	if id := hctx.Param("app_id"); id != "" {
		return id
	}
	return hctx.Param("id")
}

// principal authenticates "Authorization: Bearer <credential>".
func (s *Server) principal(ctx context.Context, header string) (access.Principal, error) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(cred) == "" {
		return access.Principal{}, tenant.ErrUnauthorized
	}
	return s.Tenants.Authenticate(ctx, strings.TrimSpace(cred))
}

func principalFrom(ctx context.Context) access.Principal {
	p, _ := ctx.Value(keyPrincipal).(access.Principal)
	return p
}

// optionalPrincipal is the caller of an authOptionalApp operation: nil when
// it sent no credential.
func optionalPrincipal(ctx context.Context) *access.Principal {
	if p, ok := ctx.Value(keyPrincipal).(access.Principal); ok {
		return &p
	}
	return nil
}

func callerFrom(ctx context.Context) signin.Caller {
	c, _ := ctx.Value(keyCaller).(signin.Caller)
	return c
}

// client describes the requesting device for sessions and rate limits.
func client(ctx context.Context, userAgent string) signin.Client {
	ip := ClientIP(ctx)
	c := signin.Client{UserAgent: userAgent}
	c.Location, _ = ctx.Value(keyClientLocation).(string)
	if ip.IsValid() {
		c.IP = ip.String()
	}
	return c
}

func appFrom(ctx context.Context) tenant.App {
	a, _ := ctx.Value(keyApp).(tenant.App)
	return a
}
