package httpapi

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/machine"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// OpenAPI security scheme names.
const (
	schemeAPISecret  = "apiSecret"
	schemeUserAccess = "userAccess"
	schemeM2M        = "m2mToken"
	schemeClient     = "clientBasic"
	schemeKeyHeader  = "apiKeyHeader"
	// schemeMetricsToken is metrics.token on GET /metrics.
	schemeMetricsToken = "metricsToken"
)

// HeaderM2MToken carries an M2M access token (interface §4.13 leaves the
// header's name to us). Authorization and X-Authorization carry one too
// when the value is an M2M token (typ m2m+jwt).
const HeaderM2MToken = "X-M2M-Token"

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
	// authM2M: an M2M access token of the path's app (m2mCredentials).
	authM2M
	// authAppHidden: authApp, but an app the credential does not reach is
	// 404 app_not_found (interface §4.5), whether it exists or not, so ids
	// still cannot be probed.
	authAppHidden
)

const metaAuth = "gatehouse.auth"

// credentials is the huma middleware that finds out who is calling and for
// which app, and refuses a credential that does not belong to the path's app
// or workspace at all (access.Reaches) before any input is read; what the
// caller may do there is decided by the domain method. Each header accepts
// only its own token types: Authorization carries API secrets and API keys
// (and, on M2M routes, an M2M token); X-Authorization carries user tokens or
// an API key (interface §4.3); X-M2M-Token an M2M token.
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
	case authOptionalApp, authApp, authAppHidden:
		authz := strings.TrimSpace(hctx.Header("Authorization"))
		if kind == authOptionalApp && authz == "" {
			app, err := s.Tenants.App(ctx, appParam(hctx))
			if err != nil {
				s.writeError(hctx, err)
				return
			}
			hctx = huma.WithValue(hctx, keyApp, app)
			break
		}
		// Authorization decides who is calling. On authApp routes an API
		// key in X-Authorization (interface §4.3) stands in for it when it
		// is absent; alongside it, the key must be valid and of the same app
		// but adds no right. Other X-Authorization values are user tokens,
		// left to the routes that read them.
		var key string
		if kind == authApp || kind == authAppHidden {
			key = apiKeyIn(hctx.Header("X-Authorization"))
		}
		var p, also access.Principal
		var err error
		switch {
		case authz == "" && key != "":
			p, err = s.Tenants.Authenticate(ctx, key)
		case key != "":
			if p, err = s.principal(ctx, authz); err == nil {
				also, err = s.Tenants.Authenticate(ctx, key)
			}
		default:
			p, err = s.principal(ctx, authz)
		}
		if err != nil {
			s.writeError(hctx, err)
			return
		}
		app, err := s.Tenants.App(ctx, appParam(hctx))
		if errors.Is(err, tenant.ErrAppNotFound) || (err == nil && !access.Reaches(p, app.ID, app.WorkspaceID)) ||
			(err == nil && also.Kind != "" && !access.Reaches(also, app.ID, app.WorkspaceID)) {
			err = access.ErrForbidden // no probing for ids: same answer as another tenant's app
			if kind == authAppHidden {
				err = tenant.ErrAppNotFound
			}
		}
		if err != nil {
			s.writeError(hctx, err)
			return
		}
		hctx = huma.WithValue(huma.WithValue(hctx, keyPrincipal, p), keyApp, app)
	case authM2M:
		var err error
		if hctx, err = s.m2mCredentials(hctx); err != nil {
			s.writeError(hctx, err)
			return
		}
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

// apiKeyIn returns the API key an X-Authorization value holds (raw, or
// after "Bearer "), or "" when it holds none.
func apiKeyIn(header string) string {
	v := bearerValue(header)
	if strings.HasPrefix(v, tenant.APIKeyPrefix) {
		return v
	}
	return ""
}

// bearerValue is a header's value without a leading "Bearer " (in any case).
func bearerValue(header string) string {
	v := strings.TrimSpace(header)
	if scheme, rest, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(rest)
	}
	return v
}

type m2mSessionKey struct{}

// m2mCredentials authenticates an authM2M operation. The M2M token is
// X-M2M-Token, or a value of Authorization or X-Authorization whose typ is
// m2m+jwt; two different ones are refused. The other credentials sent with
// it (an API secret or key in Authorization, an API key in X-Authorization)
// must be valid (else 401) and of the path's app (else 403), and add no
// right: the token alone decides. A user's access token is no M2M token
// and is ignored, so a request with no M2M token at all gets
// m2m_session_required.
func (s *Server) m2mCredentials(hctx huma.Context) (huma.Context, error) {
	ctx := hctx.Context()
	var m2m []string
	if v := bearerValue(hctx.Header(HeaderM2MToken)); v != "" && token.Peek(v) != token.TypeAccess {
		m2m = append(m2m, v)
	}
	var creds []string // API secrets and keys, as Authorization values
	if authz := strings.TrimSpace(hctx.Header("Authorization")); authz != "" {
		switch token.Peek(bearerValue(authz)) {
		case token.TypeM2M:
			m2m = append(m2m, bearerValue(authz))
		case token.TypeAccess:
		default:
			creds = append(creds, authz)
		}
	}
	if xauth := bearerValue(hctx.Header("X-Authorization")); token.Peek(xauth) == token.TypeM2M {
		m2m = append(m2m, xauth)
	} else if key := apiKeyIn(xauth); key != "" {
		creds = append(creds, "Bearer "+key)
	}
	var ps []access.Principal
	for _, c := range creds {
		p, err := s.principal(ctx, c)
		if err != nil {
			return hctx, err
		}
		ps = append(ps, p)
	}
	app, err := s.Tenants.App(ctx, appParam(hctx))
	if errors.Is(err, tenant.ErrAppNotFound) && len(ps) > 0 {
		return hctx, access.ErrForbidden // as on authApp routes
	}
	if err != nil {
		return hctx, err
	}
	for _, p := range ps {
		if !access.Reaches(p, app.ID, app.WorkspaceID) {
			return hctx, access.ErrForbidden
		}
	}
	slices.Sort(m2m)
	m2m = slices.Compact(m2m)
	switch len(m2m) {
	case 0:
		return hctx, machine.ErrSessionRequired
	case 1:
	default:
		return hctx, machine.ErrUnauthenticated // two different M2M tokens: which one?
	}
	sess, err := s.Machines.Authenticate(ctx, app, m2m[0])
	if err != nil {
		return hctx, err
	}
	return huma.WithValue(huma.WithValue(hctx, keyApp, app), m2mSessionKey{}, sess), nil
}

// m2mSessionFrom is the M2M session of an authM2M operation's token.
func m2mSessionFrom(ctx context.Context) machine.Session {
	sess, _ := ctx.Value(m2mSessionKey{}).(machine.Session)
	return sess
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
	if al, ok := ctx.Value(keyAcceptLanguage).(string); ok {
		c.Languages = courier.ParseAcceptLanguage(al)
	}
	if ip.IsValid() {
		c.IP = ip.String()
	}
	return c
}

func appFrom(ctx context.Context) tenant.App {
	a, _ := ctx.Value(keyApp).(tenant.App)
	return a
}
