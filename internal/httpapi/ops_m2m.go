package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/machine"
)

// M2MClient is a machine-to-machine client; its secret is shown only when it
// is created.
type M2MClient struct {
	ID          string     `json:"id" example:"0190c7a2-5b1e-7c3d-9f00-4a1b2c3d4e5f" doc:"The client_id."`
	Name        string     `json:"name" example:"Billing worker" doc:"A name to tell clients apart."`
	Scopes      []string   `json:"scopes" example:"[\"invoices:read\",\"invoices:write\"]" doc:"What the client may ask for in a token request's scope."`
	CreatedAt   time.Time  `json:"created_at" doc:"When it was created (RFC 3339)."`
	LastUsedAt  *time.Time `json:"last_used_at" doc:"When the client last got a token; null if never."`
	SecretLast4 string     `json:"secret_last4" example:"x9Qz" doc:"The secret's last four characters, to tell secrets apart."`
	RevokedAt   *time.Time `json:"revoked_at,omitempty" doc:"Set once the client is revoked."`
}

func m2mClientOut(c machine.Client) M2MClient {
	return M2MClient{ID: c.ID, Name: c.Name, Scopes: c.Scopes, CreatedAt: c.CreatedAt, LastUsedAt: c.LastUsedAt,
		SecretLast4: c.SecretLast4, RevokedAt: c.RevokedAt}
}

type createM2MClientInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Body  struct {
		Client struct {
			Name   string   `json:"name,omitempty" maxLength:"100" example:"Billing worker" doc:"A name to tell clients apart; default \"M2M client\"."`
			Scopes []string `json:"scopes,omitempty" maxItems:"50" example:"[\"invoices:read\",\"invoices:write\"]" doc:"Scopes the client may ask for (RFC 6749 §3.3 scope tokens, at most 100 characters each). Default none."`
		} `json:"client" doc:"The client to create."`
	}
}

type createM2MClientOutput struct {
	Body struct {
		Client       M2MClient `json:"client" doc:"The new client, with its secret this once."`
		ClientSecret string    `json:"client_secret" example:"ghm_0k3v…" doc:"The client's secret, returned only here: store it now."`
	}
}

const createM2MClientDoc = "Creates a machine-to-machine client for the app: a backend service that gets its own short-lived " +
	"access tokens from `POST /v1/auth/{app_id}/oauth/token` (client_credentials). Answers its `client_secret` (`ghm_…`) " +
	"this once; it is stored as a keyed hash. With the app's API secret, or a workspace secret of an owner or admin; " +
	"API keys may not (403)."

var createM2mClientOp = operation{id: "createM2mClient", method: "POST", path: "/v1/apps/{app_id}/m2m/clients", summary: "Create an M2M client", tag: "M2M",
	auth: authApp,
	desc: createM2MClientDoc,
	req:  `{"client":{"name":"Billing worker","scopes":["invoices:read","invoices:write"]}}`,
	resp: body(func(o *createM2MClientOutput) {
		o.Body.Client, o.Body.ClientSecret = exM2MClient, "ghm_EXAMPLE_not_a_real_secret_00000000XMPL"
	})}

func (s *Server) createM2MClient(ctx context.Context, in *createM2MClientInput) (*createM2MClientOutput, error) {
	secret, c, err := s.Machines.CreateClient(ctx, principalFrom(ctx), appFrom(ctx),
		machine.ClientInput{Name: in.Body.Client.Name, Scopes: in.Body.Client.Scopes})
	if err != nil {
		return nil, err
	}
	out := &createM2MClientOutput{}
	out.Body.Client, out.Body.ClientSecret = m2mClientOut(c), secret
	return out, nil
}

type m2mClientsOutput struct {
	Body struct {
		Clients []M2MClient `json:"clients" doc:"The app's M2M clients, newest first."`
	}
}

var listM2mClientsOp = operation{id: "listM2mClients", method: "GET", path: "/v1/apps/{app_id}/m2m/clients", summary: "List M2M clients", tag: "M2M",
	auth: authApp,
	desc: "The app's M2M clients, newest first, revoked ones included (with revoked_at); never their secrets. With the app's API secret or a workspace secret of an owner or admin; API keys may not (403).",
	resp: body(func(o *m2mClientsOutput) { o.Body.Clients = []M2MClient{exM2MClient} })}

func (s *Server) listM2MClients(ctx context.Context, _ *appIDInput) (*m2mClientsOutput, error) {
	list, err := s.Machines.ListClients(ctx, principalFrom(ctx), appFrom(ctx))
	if err != nil {
		return nil, err
	}
	out := &m2mClientsOutput{}
	out.Body.Clients = make([]M2MClient, 0, len(list))
	for _, c := range list {
		out.Body.Clients = append(out.Body.Clients, m2mClientOut(c))
	}
	return out, nil
}

var revokeM2mClientOp = operation{id: "revokeM2mClient", method: "DELETE", path: "/v1/apps/{app_id}/m2m/clients/{id}", summary: "Revoke an M2M client", tag: "M2M",
	auth: authApp, errors: []string{"m2m_client_not_found"},
	desc: "Revokes an M2M client: it gets no more tokens, and every session it holds ends at once, so its tokens fail on the next request on every replica. Revoking it again answers the same; an unknown id is 404 m2m_client_not_found. Credentials as for creating one.",
	resp: okBody}

func (s *Server) revokeM2MClient(ctx context.Context, in *appChildInput) (*okOutput, error) {
	if _, err := s.Machines.RevokeClient(ctx, principalFrom(ctx), appFrom(ctx), in.ID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

// M2MTokenRequest documents the token request's parameters, sent as a form
// or as JSON (the handler reads them itself, from either).
type M2MTokenRequest struct {
	GrantType    string `json:"grant_type" enum:"client_credentials" example:"client_credentials" doc:"Always client_credentials."`
	Scope        string `json:"scope,omitempty" example:"invoices:read" doc:"Space-separated scopes, each one of the client's. Omitted: the token carries no scope."`
	ClientID     string `json:"client_id,omitempty" doc:"client_secret_post: the client id (else use HTTP Basic)."`
	ClientSecret string `json:"client_secret,omitempty" doc:"client_secret_post: the client secret (else use HTTP Basic)."`
}

type m2mTokenInput struct {
	AppID         string `path:"app_id" doc:"The app id."`
	Authorization string `header:"Authorization" doc:"client_secret_basic: Basic base64(client_id:client_secret)."`
	ContentType   string `header:"Content-Type" hidden:"true" doc:"application/x-www-form-urlencoded (RFC 6749) or application/json."` // the request body says it
	RawBody       []byte `contentType:"application/x-www-form-urlencoded"`
}

type m2mTokenOutput struct {
	CacheControl string `header:"Cache-Control" doc:"no-store: tokens are never cached."`
	Pragma       string `header:"Pragma" doc:"no-cache."`
	Body         struct {
		AccessToken string `json:"access_token" doc:"The M2M access token (a JWT, typ m2m+jwt)."`
		TokenType   string `json:"token_type" example:"Bearer" doc:"Always Bearer."`
		ExpiresIn   int64  `json:"expires_in" example:"600" doc:"Seconds until the token expires (m2m.token_ttl)."`
		Scope       string `json:"scope,omitempty" example:"invoices:read" doc:"The scopes granted, space-separated; absent when none."`
	}
}

const m2mTokenDoc = "OAuth 2.0 client_credentials grant (RFC 6749 §4.4) for the app's M2M clients. The body is " +
	"`application/x-www-form-urlencoded` or JSON with `grant_type=client_credentials` and an optional `scope` " +
	"(space-separated, each among the client's scopes). The client authenticates with HTTP Basic " +
	"(client_secret_basic) or `client_id` and `client_secret` in the body (client_secret_post), not both.\n\n" +
	"Answers `{access_token, token_type: \"Bearer\", expires_in, scope}` with `Cache-Control: no-store`, and no refresh " +
	"token: the token (claims iss, sub = client id, aud and aid = app id, wid, m2m: true, scope, sid, jti, iat, exp) " +
	"lives m2m.token_ttl (default 10 minutes, at most 15) and its M2M session as long; ask again for another.\n\n" +
	"Errors use this API's `{error, error_code}` shape rather than RFC 6749 §5.2's `{error, error_description}`, with " +
	"RFC 6749's codes as `error_code`: 401 `invalid_client` (unknown client, wrong secret, revoked client; with " +
	"`WWW-Authenticate: Basic` when Basic was used), 400 `unsupported_grant_type`, `invalid_scope`, `invalid_request` " +
	"(missing or repeated parameter, both authentication methods).\n\n" +
	"Failed authentications are limited per client id (ratelimit.m2m_failures_per_client, default 10 per 10 minutes) " +
	"and per client IP (ratelimit.m2m_failures_per_ip, default 30 per 10 minutes). Every attempt takes one from both " +
	"before the secret is compared, and a right secret gives it back; once either is spent, attempts get 429 " +
	"`rate_limited` with `Retry-After`, without the secret being compared (the right one included)."

var m2mTokenOp = operation{id: "m2mToken", method: "POST", path: "/v1/auth/{app_id}/oauth/token", summary: "Get an M2M access token (client_credentials)", tag: "M2M",
	auth: authPublicApp, errors: []string{"invalid_client", "unsupported_grant_type", "invalid_scope", "rate_limited"},
	amend: documentTokenRequest,
	desc:  m2mTokenDoc,
	resp: body(func(o *m2mTokenOutput) {
		o.Body.AccessToken, o.Body.TokenType, o.Body.ExpiresIn, o.Body.Scope = exAccess, "Bearer", 600, "invoices:read"
	})}

func (s *Server) m2mToken(ctx context.Context, in *m2mTokenInput) (*m2mTokenOutput, error) {
	params, err := tokenParams(in.ContentType, in.RawBody)
	if err != nil {
		return nil, err
	}
	r := machine.TokenRequest{GrantType: params["grant_type"], Scope: params["scope"],
		ClientID: params["client_id"], ClientSecret: params["client_secret"], ClientIP: client(ctx, "").IP}
	basic := strings.TrimSpace(in.Authorization) != ""
	if basic {
		id, secret, ok := basicCredentials(in.Authorization)
		switch {
		case !ok:
			return nil, basicChallenge{}
		case r.ClientSecret != "" || (r.ClientID != "" && r.ClientID != id):
			return nil, errs.Invalidf("client_secret", "must not be sent with HTTP Basic: use one client authentication method")
		}
		r.ClientID, r.ClientSecret = id, secret
	}
	g, err := s.Machines.IssueToken(ctx, appFrom(ctx), r)
	if errors.Is(err, machine.ErrInvalidClient) && basic {
		return nil, basicChallenge{}
	}
	if err != nil {
		return nil, err
	}
	out := &m2mTokenOutput{CacheControl: "no-store", Pragma: "no-cache"}
	out.Body.AccessToken, out.Body.TokenType, out.Body.ExpiresIn = g.AccessToken, "Bearer", g.ExpiresIn
	out.Body.Scope = strings.Join(g.Scopes, " ")
	return out, nil
}

// basicChallenge is invalid_client for a client that authenticated with
// HTTP Basic: RFC 6749 §5.2 wants WWW-Authenticate on that 401.
type basicChallenge struct{}

func (basicChallenge) Error() string { return "invalid client (HTTP Basic)" }

// tokenParams reads a token request's parameters from a form or JSON body.
// A parameter sent twice is refused (RFC 6749 §3.2), as is a value that is
// not a string or not clean text.
func tokenParams(contentType string, body []byte) (map[string]string, error) {
	out := map[string]string{}
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "application/x-www-form-urlencoded":
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, errs.Invalidf("body", "is not a valid form")
		}
		for k, v := range vals {
			if len(v) > 1 {
				return nil, errs.Invalidf(k, "must be sent once")
			}
			out[k] = v[0]
		}
	default: // JSON, the only other body the API lets through
		var vals map[string]any
		if err := unmarshalJSON(body, &vals); err != nil || vals == nil {
			return nil, errs.Invalidf("body", "must be a form or a JSON object")
		}
		for k, v := range vals {
			str, ok := v.(string)
			if !ok {
				return nil, errs.Invalidf(k, "must be a string")
			}
			out[k] = str
		}
	}
	for k, v := range out {
		if !cleanText(v) {
			return nil, errs.Invalidf(k, msgBadText)
		}
	}
	return out, nil
}

// basicCredentials decodes "Basic base64(client_id:client_secret)", each
// part form-encoded first (RFC 6749 §2.3.1).
func basicCredentials(header string) (id, secret string, ok bool) {
	scheme, cred, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return "", "", false
	}
	id, secret, found = strings.Cut(string(raw), ":")
	if !found {
		return "", "", false
	}
	if id, err = url.QueryUnescape(id); err != nil {
		return "", "", false
	}
	if secret, err = url.QueryUnescape(secret); err != nil {
		return "", "", false
	}
	return id, secret, id != "" && secret != "" && cleanText(id) && cleanText(secret)
}

// tokenForm reports whether r is a form post to the token endpoint, the
// one JSON route that also takes a form (as OAuth 2.0 clients send).
func tokenForm(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return r.Method == http.MethodPost && mt == "application/x-www-form-urlencoded" &&
		strings.HasPrefix(r.URL.Path, "/v1/auth/") && strings.HasSuffix(r.URL.Path, "/oauth/token")
}

// documentTokenRequest shows the token request's two bodies in the OpenAPI
// document. It runs after registration (m2mTokenOp's amend): declared
// before, a JSON schema would make huma parse every body as JSON.
func documentTokenRequest(s *Server, op *huma.Operation) {
	schema := s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[M2MTokenRequest](), true, "M2MTokenRequest")
	op.Security = []map[string][]string{{schemeClient: {}}, {}}
	op.RequestBody = &huma.RequestBody{Required: true, Description: "The token request, as a form or as JSON.",
		Content: map[string]*huma.MediaType{
			"application/x-www-form-urlencoded": {Schema: schema, Example: map[string]any{"grant_type": "client_credentials", "scope": "invoices:read"}},
			"application/json":                  {Schema: schema, Example: map[string]any{"grant_type": "client_credentials", "scope": "invoices:read"}},
		}}
}

type m2mSessionOutput struct {
	Body struct {
		Session M2MSession `json:"m2m_session" doc:"The session of the caller's token."`
	}
}

// M2MSession is the session an M2M token belongs to.
type M2MSession struct {
	ID        string    `json:"id" doc:"The session id (the token's sid)."`
	ClientID  string    `json:"client_id" doc:"The M2M client the session belongs to."`
	Scopes    []string  `json:"scopes" example:"[\"invoices:read\"]" doc:"The scopes granted."`
	CreatedAt time.Time `json:"created_at" doc:"When the token that started the session was issued (RFC 3339)."`
	ExpiresAt time.Time `json:"expires_at" doc:"When the session ends (RFC 3339)."`
}

const m2mAuthDoc = "The M2M access token goes in `X-M2M-Token` (raw, or after `Bearer `), or in `Authorization: Bearer` " +
	"or `X-Authorization`. An API secret or key sent beside it (Authorization, or an API key in X-Authorization) " +
	"must be valid (401) and of this app (403) but changes nothing: the M2M token decides. A request without an " +
	"M2M token (only an API secret, or a user's access token) gets 401 `m2m_session_required`; an M2M token " +
	"that is invalid, expired, revoked or another app's gets 401."

var m2mSessionOp = operation{id: "m2mSession", method: "GET", path: "/v1/apps/{app_id}/m2m/session", summary: "Get the M2M session of the calling token", tag: "M2M",
	auth: authM2M,
	desc: "Answers the session the caller's M2M access token belongs to, while the token works. " + m2mAuthDoc,
	resp: body(func(o *m2mSessionOutput) {
		o.Body.Session = M2MSession{ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a11", ClientID: exM2MClient.ID, Scopes: []string{"invoices:read"},
			CreatedAt: exT0, ExpiresAt: exT0.Add(10 * time.Minute)}
	})}

func (s *Server) m2mSession(ctx context.Context, _ *appIDInput) (*m2mSessionOutput, error) {
	sess := m2mSessionFrom(ctx)
	out := &m2mSessionOutput{}
	out.Body.Session = M2MSession{ID: sess.ID, ClientID: sess.ClientID, Scopes: sess.Scopes, CreatedAt: sess.CreatedAt, ExpiresAt: sess.ExpiresAt}
	return out, nil
}

type m2mRevokeOutput struct {
	Body struct {
		Message  string `json:"message" example:"ok" doc:"A confirmation that the session ended."`
		Verified bool   `json:"verified" example:"true" doc:"Always true: the token was verified and its session has ended."`
	}
}

var revokeM2mSessionOp = operation{id: "revokeM2mSession", method: "DELETE", path: "/v1/apps/{app_id}/m2m/revoke", summary: "Revoke the current M2M session", tag: "M2M",
	auth: authM2M,
	desc: "Ends the session of the caller's M2M access token (interface §4.13): that token, and every other of the session, fails from the next request on, on every replica; calling again with it is 401. Answers `{message, verified: true}`. " + m2mAuthDoc,
	resp: body(func(o *m2mRevokeOutput) { o.Body.Message, o.Body.Verified = "ok", true })}

func (s *Server) revokeM2MSession(ctx context.Context, _ *appIDInput) (*m2mRevokeOutput, error) {
	if err := s.Machines.RevokeSession(ctx, appFrom(ctx), m2mSessionFrom(ctx)); err != nil {
		return nil, err
	}
	out := &m2mRevokeOutput{}
	out.Body.Message, out.Body.Verified = "ok", true
	return out, nil
}

type introspectInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Body  struct {
		Token string `json:"token" maxLength:"16384" doc:"The M2M access token to check."`
	}
}

type introspectOutput struct {
	CacheControl string `header:"Cache-Control" doc:"no-store: tokens are never cached."`
	Body         struct {
		Active    bool   `json:"active" doc:"Whether the token is an M2M token of this app that works now."`
		ClientID  string `json:"client_id,omitempty" doc:"active tokens: the M2M client that holds it."`
		Scope     string `json:"scope,omitempty" example:"invoices:read" doc:"Space-separated."`
		IssuedAt  int64  `json:"iat,omitempty" doc:"Unix seconds."`
		ExpiresAt int64  `json:"exp,omitempty" doc:"Unix seconds."`
		SessionID string `json:"sid,omitempty" doc:"active tokens: the M2M session id."`
		TokenType string `json:"token_type,omitempty" example:"Bearer" doc:"active tokens: Bearer."`
	}
}

const introspectDoc = "Tells a backend that received an M2M token whether it works now (RFC 7662-like): " +
	"`{active: true, client_id, scope, iat, exp, sid, token_type}`, or `{active: false}` for any token that is not an " +
	"active M2M token of this app (invalid, expired, revoked, another app's, a user's token), without saying why. " +
	"With the app's API secret or an API key (or a workspace secret)."

var introspectM2mOp = operation{id: "introspectM2m", method: "POST", path: "/v1/apps/{app_id}/m2m/introspect", summary: "Check an M2M access token", tag: "M2M",
	auth: authApp,
	desc: introspectDoc,
	req:  `{"token":"` + exAccess + `"}`,
	resp: body(func(o *introspectOutput) {
		b := &o.Body
		b.Active, b.ClientID, b.Scope, b.IssuedAt, b.ExpiresAt = true, exM2MClient.ID, "invoices:read", exT0.Unix(), exT0.Add(10*time.Minute).Unix()
		b.SessionID, b.TokenType = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a11", "Bearer"
	})}

func (s *Server) introspectM2M(ctx context.Context, in *introspectInput) (*introspectOutput, error) {
	i, err := s.Machines.Introspect(ctx, principalFrom(ctx), appFrom(ctx), strings.TrimSpace(in.Body.Token))
	if err != nil {
		return nil, err
	}
	out := &introspectOutput{CacheControl: "no-store"}
	out.Body.Active = i.Active
	if i.Active {
		out.Body.ClientID, out.Body.Scope, out.Body.SessionID, out.Body.TokenType = i.ClientID, strings.Join(i.Scopes, " "), i.SessionID, "Bearer"
		out.Body.IssuedAt, out.Body.ExpiresAt = i.IssuedAt.Unix(), i.ExpiresAt.Unix()
	}
	return out, nil
}
