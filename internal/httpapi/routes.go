package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// registerRoutes is the whole API surface, one line per route.
func (s *Server) registerRoutes() {
	// Operations and discovery.
	s.plain(plainOp("health", "GET", "/healthz", "Liveness", "Operations", "application/json",
		"Answers 200 `{\"status\":\"ok\"}` while the process serves requests, with the build: version, commit, build_date (the commit's time) and go_version; commit and build_date are left out when the binary was built without version control information."), s.health)
	s.plain(plainOp("ready", "GET", "/readyz", "Readiness", "Operations", "application/json",
		"Answers 200 when the database answers, 503 otherwise."), s.ready, "503")
	if s.MetricsOnAPI {
		if s.MetricsToken != "" {
			s.plain(plainOp("metrics", "GET", "/metrics", "Prometheus metrics", "Operations", "text/plain",
				"Request counts and latencies by route, plus Go runtime and process metrics. Needs `Authorization: Bearer` with the server's metrics.token (else 401)."),
				s.metricsHandler().ServeHTTP, "401")
		} else {
			s.plain(plainOp("metrics", "GET", "/metrics", "Prometheus metrics", "Operations", "text/plain",
				"Request counts and latencies by route, plus Go runtime and process metrics. Served here in development mode only (or with metrics.token); production servers serve it on metrics.addr."),
				s.metricsHandler().ServeHTTP)
		}
	}
	s.plain(plainOp("jwks", "GET", "/.well-known/jwks.json", "Token signing keys (JWKS)", "Tokens", "application/json",
		"The public keys that verify tokens, by kid, each with kty, alg, use and kid: EC P-256 keys (ES256: refresh tokens, API secrets, and the access tokens of apps on ES256), RSA-2048 keys (RS256) and OKP Ed25519 keys (EdDSA) when an app signs its access tokens with them. A key is listed from the moment it can sign, on every replica (the keys are read again when more than a second old; the answer may be cached for 60 s); a retired key stays listed until every token it signed has expired. An unknown kid means a new key: read the set again (at most once a minute)."), s.jwks)
	s.plain(plainOp("appJwks", "GET", "/v1/auth/{app_id}/.well-known/jwks.json", "Token signing keys (JWKS), per app path", "Tokens", "application/json",
		"The same key set as /.well-known/jwks.json, at the path the server SDKs use."), s.jwks)
	s.plain(plainOp("openapi", "GET", "/v1/openapi.json", "This OpenAPI document", "Operations", "application/json",
		"The OpenAPI 3.1 description of every route, generated from the server's code."), s.openAPIDocument)
	s.plain(plainOp("docsRedirect", "GET", "/v1/docs", "API documentation (redirect)", "Operations", "text/html",
		"Redirects to /v1/docs/."), s.docsRedirect)
	docs := s.docs()
	s.plain(plainOp("docs", "GET", "/v1/docs/{$}", "API documentation", "Operations", "text/html",
		"A documentation page for this API, served by the binary itself (no CDN)."), docs.ServeHTTP)
	s.plain(plainOp("docsAsset", "GET", "/v1/docs/{asset}", "API documentation assets", "Operations", "text/css",
		"The documentation page's script and stylesheet."), docs.ServeHTTP, "not_found")
	s.plain(redirectOp(plainOp("root", "GET", "/{$}", "Start page (redirect to the API documentation)", "Operations", "text/html",
		"Redirects (302) to /v1/docs/, this API's documentation page; only the exact path /, every other unknown path is a JSON 404."), "/v1/docs/"), s.rootRedirect)
	if s.Dev {
		register(s, op("devOutbox", "GET", "/dev/outbox", "Read the development outbox", "Development"), authNone, s.devOutbox)
	}

	// Apps (interface §4.3, §4.4).
	register(s, op("getApp", "GET", "/v1/apps/{id}", "Show an app's public configuration", "Apps"), authPublicApp, s.getApp)
	register(s, op("createApiKey", "POST", "/v1/apps/{app_id}/api_keys", "Create an API key", "Apps"), authApp, s.createAPIKey)
	register(s, op("listApiKeys", "GET", "/v1/apps/{app_id}/api_keys", "List API keys", "Apps"), authApp, s.listAPIKeys)
	register(s, op("revokeApiKey", "DELETE", "/v1/apps/{app_id}/api_keys/{id}", "Revoke an API key", "Apps"), authApp, s.revokeAPIKey, "api_key_not_found")
	register(s, described(op("updateApp", "PATCH", "/v1/apps/{app_id}", "Update an app's settings with its own secret", "Apps"),
		"Changes an app's settings (`{\"app\": {...}}`, the fields of the workspace route) with the app's own API secret (server-sdk-compat §4), or a workspace secret of an owner or admin. API keys may not. Same validation as PATCH /v1/workspaces/{workspace_id}/apps/{app_id}."),
		authApp, s.updateOwnApp, "slug_taken", "app_not_found")
	// The app's own message service providers (interface §2.4, §4.5, §4.6).
	register(s, described(op("listMessageServiceProviders", "GET", "/v1/apps/{app_id}/message_service_providers", "List message service providers", "Apps"), listProvidersDoc()),
		authAppHidden, s.listProviders)
	register(s, described(op("updateMessageServiceProvider", "PATCH", "/v1/apps/{app_id}/message_service_providers", "Update a message service provider", "Apps"), updateProviderDoc()),
		authAppHidden, s.updateProvider, errorsShape, "provider_not_found")
	register(s, described(op("testMessageServiceProvider", "POST", "/v1/apps/{app_id}/message_service_providers/test", "Send a test message through a provider", "Apps"), testProviderDoc),
		authAppHidden, s.testProvider, "provider_not_found", "rate_limited")

	// Machine-to-machine: clients, the client_credentials grant, M2M sessions (interface §4.13).
	register(s, described(op("createM2mClient", "POST", "/v1/apps/{app_id}/m2m/clients", "Create an M2M client", "M2M"), createM2MClientDoc),
		authApp, s.createM2MClient)
	register(s, described(op("listM2mClients", "GET", "/v1/apps/{app_id}/m2m/clients", "List M2M clients", "M2M"),
		"The app's M2M clients, newest first, revoked ones included (with revoked_at); never their secrets. With the app's API secret or a workspace secret of an owner or admin; API keys may not (403)."),
		authApp, s.listM2MClients)
	register(s, described(op("revokeM2mClient", "DELETE", "/v1/apps/{app_id}/m2m/clients/{id}", "Revoke an M2M client", "M2M"),
		"Revokes an M2M client: it gets no more tokens, and every session it holds ends at once, so its tokens fail on the next request on every replica. Revoking it again answers the same; an unknown id is 404 m2m_client_not_found. Credentials as for creating one."),
		authApp, s.revokeM2MClient, "m2m_client_not_found")
	register(s, described(op("m2mToken", "POST", "/v1/auth/{app_id}/oauth/token", "Get an M2M access token (client_credentials)", "M2M"), m2mTokenDoc),
		authPublicApp, s.m2mToken, "invalid_client", "unsupported_grant_type", "invalid_scope", "rate_limited")
	s.documentTokenRequest("/v1/auth/{app_id}/oauth/token")
	register(s, described(op("m2mSession", "GET", "/v1/apps/{app_id}/m2m/session", "The M2M session of the calling token", "M2M"),
		"Answers the session the caller's M2M access token belongs to, while the token works. "+m2mAuthDoc),
		authM2M, s.m2mSession)
	register(s, described(op("revokeM2mSession", "DELETE", "/v1/apps/{app_id}/m2m/revoke", "Revoke the current M2M session", "M2M"),
		"Ends the session of the caller's M2M access token (interface §4.13): that token, and every other of the session, fails from the next request on, on every replica; calling again with it is 401. Answers `{message, verified: true}`. "+m2mAuthDoc),
		authM2M, s.revokeM2MSession)
	register(s, described(op("introspectM2m", "POST", "/v1/apps/{app_id}/m2m/introspect", "Check an M2M access token", "M2M"), introspectDoc),
		authApp, s.introspectM2M)

	// Workspaces, members and their apps.
	register(s, op("listWorkspaces", "GET", "/v1/workspaces", "List the caller's workspaces", "Workspaces"), authWorkspace, s.listWorkspaces)
	register(s, op("createWorkspace", "POST", "/v1/workspaces", "Create a workspace", "Workspaces"), authWorkspace, s.createWorkspace, "slug_taken")
	register(s, op("getWorkspace", "GET", "/v1/workspaces/{workspace_id}", "Get a workspace", "Workspaces"), authWorkspace, s.getWorkspace, "workspace_not_found")
	register(s, op("updateWorkspace", "PATCH", "/v1/workspaces/{workspace_id}", "Update a workspace", "Workspaces"), authWorkspace, s.updateWorkspace, "workspace_not_found", "slug_taken")
	register(s, op("listMembers", "GET", "/v1/workspaces/{workspace_id}/members", "List members", "Workspaces"), authWorkspace, s.listMembers, "workspace_not_found")
	register(s, op("addMember", "POST", "/v1/workspaces/{workspace_id}/members", "Add a member", "Workspaces"), authWorkspace, s.addMember, "workspace_not_found", "member_exists")
	register(s, op("updateMember", "PATCH", "/v1/workspaces/{workspace_id}/members/{member_id}", "Change a member's role", "Workspaces"), authWorkspace, s.updateMember, "member_not_found", "last_owner")
	register(s, op("removeMember", "DELETE", "/v1/workspaces/{workspace_id}/members/{member_id}", "Remove a member", "Workspaces"), authWorkspace, s.removeMember, "member_not_found", "last_owner")
	register(s, op("listWorkspaceApps", "GET", "/v1/workspaces/{workspace_id}/apps", "List a workspace's apps", "Workspaces"), authWorkspace, s.listWorkspaceApps, "workspace_not_found")
	register(s, op("createWorkspaceApp", "POST", "/v1/workspaces/{workspace_id}/apps", "Create an app", "Workspaces"), authWorkspace, s.createWorkspaceApp, "workspace_not_found", "slug_taken")
	register(s, op("getWorkspaceApp", "GET", "/v1/workspaces/{workspace_id}/apps/{app_id}", "Get an app with its private settings", "Workspaces"), authWorkspace, s.getWorkspaceApp, "app_not_found")
	register(s, op("updateWorkspaceApp", "PATCH", "/v1/workspaces/{workspace_id}/apps/{app_id}", "Update an app", "Workspaces"), authWorkspace, s.updateWorkspaceApp, "app_not_found", "slug_taken")
	register(s, op("deleteWorkspaceApp", "DELETE", "/v1/workspaces/{workspace_id}/apps/{app_id}", "Delete an app", "Workspaces"), authWorkspace, s.deleteWorkspaceApp, "app_not_found")

	// Users of apps (interface §4.1, §4.2; client-compat A2–A11, C1).
	register(s, op("createUser", "POST", "/v1/{app_id}/users", "Create a user", "Users"), authApp, s.createUser, "invalid_identifier", "user_exists")
	register(s, op("createUserAuth", "POST", "/v1/auth/{app_id}/users", "Create a user (client SDK path)", "Users"), authApp, s.createUser, "invalid_identifier", "user_exists")
	register(s, smsGuarded(op("inviteUser", "POST", "/v1/{app_id}/users/invite", "Invite a user", "Users")), authApp, s.inviteUser, with(sendErrors, "user_exists")...)
	register(s, described(op("importUsers", "POST", "/v1/{app_id}/users/import", "Import users (status imported)", "Users"), importUsersDoc), authApp, s.importUsers)
	register(s, described(op("listUsers", "GET", "/v1/{app_id}/users", "List users", "Users"), listUsersDoc), authApp, s.listUsers)
	register(s, described(op("getUser", "GET", "/v1/{app_id}/users/{id}", "Get a user", "Users"), getUserDoc), authApp, s.getUser, "user_not_found")
	register(s, op("updateUser", "PATCH", "/v1/{app_id}/users/{id}", "Update a user", "Users"), authApp, s.updateUser, "user_not_found", "invalid_identifier", "user_exists", "invalid_user_meta")
	register(s, op("activateUser", "POST", "/v1/{app_id}/users/{id}/activate", "Activate a user", "Users"), authApp, s.activateUser, "user_not_found")
	register(s, op("deactivateUser", "POST", "/v1/{app_id}/users/{id}/deactivate", "Deactivate a user", "Users"), authApp, s.deactivateUser, "user_not_found")
	register(s, op("deleteUser", "DELETE", "/v1/{app_id}/users/{id}", "Delete a user", "Users"), authApp, s.deleteUser, "user_not_found")
	register(s, described(op("lookupUser", "GET", "/v1/auth/{app_id}/users", "Look a user up by identifier or id", "Users"), lookupUserDoc), authOptionalApp, s.lookupUser, "user_not_found", "invalid_identifier", "rate_limited")
	register(s, op("listUserSessions", "GET", "/v1/apps/{app_id}/users/{id}/sessions", "List a user's sessions", "Sessions"), authApp, s.userSessions, "user_not_found")
	register(s, op("listUserSessionsApp", "GET", "/v1/{app_id}/users/{id}/sessions", "List a user's sessions (alternate path)", "Sessions"), authApp, s.userSessions, "user_not_found")
	register(s, op("revokeUserSession", "DELETE", "/v1/{app_id}/users/{id}/sessions/{session_id}", "End a user's session", "Sessions"), authApp, s.revokeUserSession, "user_not_found", "session_not_found")

	// Webhooks (interface §4.14), with an app API key or secret.
	// Message templates (docs/templates.md).
	register(s, described(op("listMessageTemplates", "GET", "/v1/apps/{app_id}/message_templates", "List messages, their variables and the app's templates", "Messages"),
		"Every message Gatehouse sends (code_locked, invitation, login_code, magic_link, security_notice), its channels, its variables (which are secret), its built-in templates per locale, and the app's overrides. "+templatesDoc),
		authApp, s.listMessageTemplates)
	register(s, described(op("putMessageTemplate", "PUT", "/v1/apps/{app_id}/message_templates/{name}/{channel}/{locale}", "Save the app's template of a message", "Messages"),
		"Creates or replaces the app's own template of one message for one channel and locale. E-mail: subject and text required, html optional (without it the e-mail is text only). SMS: text only. Templates must parse and may use only the message's variables: a 400 names the field and the variable. The html part may not run, embed or load anything: no script, event attributes (on...), javascript: URLs, iframe, object, embed, form or its controls, and no images, stylesheets, CSS url() or @import from other hosts (inline data:image/ URLs and this server's own origin only); links may be https, mailto: or tel:, and a template value may stand in a URL only as href=\"{{.Link}}\" (400 invalid_request naming html and what was refused). Limits: subject 500, text 20,000 (SMS 1,000), html 100,000 bytes. Takes effect within 2 seconds on every replica. "+templatesDoc),
		authApp, s.putMessageTemplate)
	register(s, described(op("deleteMessageTemplate", "DELETE", "/v1/apps/{app_id}/message_templates/{name}/{channel}/{locale}", "Delete the app's template of a message", "Messages"),
		"The built-in template is sent again. 404 template_not_found when the app has no such template. "+templatesDoc),
		authApp, s.deleteMessageTemplate, "template_not_found")
	register(s, described(op("previewMessageTemplate", "POST", "/v1/apps/{app_id}/message_templates/preview", "Render a message with sample values", "Messages"),
		"Renders a draft (`template`) or what the app sends now for `locale` (its override or the built-in template, with fallback to the base language and English), with sample values and the app's name. Answers subject, text and html; for SMS also its length, encoding (GSM-7 or UCS-2) and segments. A draft is checked as when saved (400 naming the field and variable). "+templatesDoc),
		authApp, s.previewMessageTemplate)
	s.plain(pageOp(plainOp("openShortLink", "GET", "/m/{code}", "Open a magic link or invitation sent by SMS", "Sign-in", "text/html",
		"A magic link or an invitation sent by SMS is this short link. A magic link's redirects (303) to the consent link the e-mail would carry (GET /v1/auth/{app_id}/magic_links/open), which works as usual (single use); an invitation's to the invitation link on the app's login page (?sct_magic=...). 404 page: unknown code, or a link that was used, replaced or has expired. 429 page with Retry-After: more short links opened from the client's address than ratelimit.short_link_per_ip allows (found or not; the code is not looked up)."),
		map[int]string{http.StatusSeeOther: "On to the consent link or the invitation link", http.StatusNotFound: "Unknown code, or a used, replaced or expired link",
			http.StatusTooManyRequests: "Too many short links opened from this address (ratelimit.short_link_per_ip)"}), s.openShortLink, "503")

	register(s, op("createWebhook", "POST", "/v1/apps/{app_id}/webhooks", "Create a webhook endpoint", "Webhooks"), authApp, s.createWebhook, "webhook_limit_reached")
	register(s, op("listWebhooks", "GET", "/v1/apps/{app_id}/webhooks", "List webhook endpoints", "Webhooks"), authApp, s.listWebhooks)
	register(s, op("webhookEventTypes", "GET", "/v1/apps/{app_id}/webhooks/event_types", "List the event types", "Webhooks"), authApp, s.webhookEventTypes)
	register(s, op("getWebhook", "GET", "/v1/apps/{app_id}/webhooks/{id}", "Get a webhook endpoint", "Webhooks"), authApp, s.getWebhook, "webhook_not_found")
	register(s, op("updateWebhook", "PATCH", "/v1/apps/{app_id}/webhooks/{id}", "Update a webhook endpoint", "Webhooks"), authApp, s.updateWebhook, "webhook_not_found")
	register(s, op("deleteWebhook", "DELETE", "/v1/apps/{app_id}/webhooks/{id}", "Delete a webhook endpoint", "Webhooks"), authApp, s.deleteWebhook, "webhook_not_found")
	register(s, op("testWebhook", "POST", "/v1/apps/{app_id}/webhooks/{id}/test", "Send a webhook.test event", "Webhooks"), authApp, s.testWebhook, "webhook_not_found")
	register(s, op("listWebhookDeliveries", "GET", "/v1/apps/{app_id}/webhooks/{id}/deliveries", "List deliveries, newest first", "Webhooks"), authApp, s.listDeliveries, "webhook_not_found")
	register(s, op("redeliverWebhook", "POST", "/v1/apps/{app_id}/webhooks/{id}/deliveries/{delivery_id}/redeliver", "Deliver an event again", "Webhooks"), authApp, s.redeliver, "webhook_not_found", "delivery_not_found", "delivery_in_progress")
	register(s, op("rotateWebhookSecret", "POST", "/v1/apps/{app_id}/webhooks/{id}/rotate_secret", "Rotate the signing secret", "Webhooks"), authApp, s.rotateWebhookSecret, "webhook_not_found")

	// Sign-in (interface §4.7, §4.8, §4.10, §4.12; client-compat C2–C8, C18–C24, A12–A15).
	register(s, smsGuarded(op("sendOtp", "POST", "/v1/auth/{app_id}/otps/login", "Send a one-time code", "Sign-in")), authPublicApp, s.sendOTP, with(sendErrors, "code_entry_locked", "too_many_attempts")...)
	register(s, op("verifyOtp", "POST", "/v1/auth/{app_id}/otps/verify", "Verify a one-time code", "Sign-in"), authPublicApp, s.verifyOTP, "invalid_identifier", "invalid_code", "too_many_attempts", "code_entry_locked", "rate_limited")
	register(s, smsGuarded(op("sendLoginMagicLink", "POST", "/v1/auth/{app_id}/magic_links/login", "Send a sign-in magic link", "Sign-in")), authPublicApp, s.sendMagicLink, sendErrors...)
	register(s, smsGuarded(op("sendRegisterMagicLink", "POST", "/v1/auth/{app_id}/magic_links/register", "Send a sign-up magic link", "Sign-in")), authPublicApp, s.sendMagicLink, sendErrors...)
	register(s, op("authenticateMagicLink", "PATCH", "/v1/auth/{app_id}/magic_links/authenticate", "Sign in the device that opened a magic link", "Sign-in"), authPublicApp, s.authenticateMagicLink, "magic_link_not_found_or_expired")
	register(s, op("magicLinkStatus", "POST", "/v1/auth/{app_id}/magic_links/status", "Poll a magic link from the device that asked for it", "Sign-in"), authPublicApp, s.magicLinkStatus, "magic_link_pending", "magic_link_denied", "magic_link_not_found_or_expired", "slow_down", "rate_limited")
	s.plain(pageOp(plainOp("openMagicLink", "GET", "/v1/auth/{app_id}/magic_links/open", "Open an e-mailed magic link (consent page)", "Sign-in", "text/html",
		"Where e-mailed links land (`?sct_magic=<token>`). Opening it changes nothing. The device that asked for the link is redirected (303) to the app's login page with `sct_magic`, where the client SDK signs it in; any other device gets an HTML page asking \"Was this you?\" with the requesting device, place and time, asking which number that device shows among three (the match number and two decoys, the same three in the same order on every opening, none pre-selected), with Approve and Deny buttons. The page never shows which number is right. 404 page: unknown, used or expired link."),
		map[int]string{http.StatusSeeOther: "The device that asked: on to the app's login page with `sct_magic`", http.StatusNotFound: "Unknown app, or an unknown, used or expired link"}), s.magicLinkOpen, "503")
	s.plain(pageOp(plainOp("decideMagicLink", "POST", "/v1/auth/{app_id}/magic_links/open", "Approve or deny a magic link (consent page form)", "Sign-in", "text/html",
		"The consent page's form (`application/x-www-form-urlencoded`: `sct_magic`, `decision` = approve or deny, `number` = the number picked (with approve), optional `reason` = not_requested or number_mismatch (with deny)). Approve with the requesting device's match number verifies the contact and lets that device's next status poll collect its session. Approve with any other `number`, none or a malformed one is the link's one guess: it denies, as Deny does, with `denial_reason` number_mismatch (200 page saying the number was wrong). Deny ends the request (`verification.{channel}.denied` with `consent_decision` and `denial_reason`). Every answer spends the link, and of answers sent at once exactly one is recorded (the others get the 404 page). 400 page: no decision; 404 page: unknown, used or expired link; 415: not a form."),
		map[int]string{http.StatusBadRequest: "No decision, or not approve or deny (nothing is recorded)", http.StatusNotFound: "Unknown app, or an unknown, used or expired link",
			http.StatusUnsupportedMediaType: "The body is not application/x-www-form-urlencoded"}), s.magicLinkDecide, "503")
	register(s, op("confirmInvite", "POST", "/v1/auth/{app_id}/magic_links/confirm_invite", "Accept an invitation", "Sign-in"), authPublicApp, s.confirmInvite, "magic_link_not_found_or_expired")
	register(s, op("refreshTokens", "POST", "/v1/auth/{app_id}/tokens/refresh", "Rotate a refresh token", "Tokens"), authPublicApp, s.refreshTokens, "401", required("X-Refresh-Token"))
	register(s, op("forceRefreshTokens", "POST", "/v1/auth/{app_id}/tokens/force_refresh", "Rotate a refresh token (same as refresh)", "Tokens"), authPublicApp, s.refreshTokens, "401", required("X-Refresh-Token"))
	register(s, described(op("rotateAccess", "POST", "/v1/auth/{app_id}/tokens/rotate_access", "Exchange an access token for a new token set", "Tokens"), rotateAccessDoc), authOptionalApp, s.rotateAccess, required("X-Authorization"))
	register(s, op("verifyRefresh", "POST", "/v1/auth/{app_id}/tokens/verify/refresh", "Check a refresh token without using it", "Tokens"), authPublicApp, s.verifyRefresh, "401", required("Authorization"))
	register(s, op("currentUser", "GET", "/v1/auth/{app_id}/current_user", "The signed-in user", "Sessions"), authUser, s.currentUser)
	register(s, op("updateCurrentUserMeta", "PATCH", "/v1/auth/{app_id}/current_user/meta", "Update the signed-in user's metadata", "Sessions"), authUser, s.updateCurrentUserMeta, "invalid_user_meta")
	register(s, op("signOut", "DELETE", "/v1/auth/{app_id}/current_user", "Sign out (end this session)", "Sessions"), authUser, s.signOut)
	register(s, op("listSessions", "GET", "/v1/auth/{app_id}/sessions", "List the signed-in user's sessions", "Sessions"), authUser, s.listSessions)
	register(s, op("revokeSession", "DELETE", "/v1/auth/{app_id}/sessions/{id}", "End one of the signed-in user's sessions", "Sessions"), authUser, s.revokeSession, "session_not_found")
	// Passkeys (interface §4.9; client-compat C14–C17, C22).
	register(s, described(op("registerDevice", "POST", "/v1/auth/{app_id}/devices/register", "Start adding a passkey", "Passkeys"), registerDeviceDoc), authUser, s.registerDevice, "verification_required", "webauthn_unavailable")
	register(s, described(op("finalizeDevice", "POST", "/v1/auth/{app_id}/devices/finalize", "Finish adding a passkey", "Passkeys"), finalizeDeviceDoc), authUser, s.finalizeDevice, "webauthn_register_error", "webauthn_unavailable")
	register(s, described(op("listDevices", "GET", "/v1/auth/{app_id}/devices", "List the signed-in user's passkeys", "Passkeys"), "The signed-in user's passkeys, oldest first."), authUser, s.listDevices)
	register(s, described(op("renameDevice", "PATCH", "/v1/auth/{app_id}/devices/{id}", "Rename a passkey", "Passkeys"), "Renames one of the signed-in user's passkeys, named by its id or its credential id."), authUser, s.renameDevice, "device_not_found")
	register(s, described(op("deleteDevice", "DELETE", "/v1/auth/{app_id}/devices/{id}", "Remove a passkey", "Passkeys"), "Removes one of the signed-in user's passkeys (client SDK `removeDeviceCredential`), named by its id or its credential id. It stops working at once; removing the last one turns the user's `webauthn_enabled` off. Where the app's mfa_policy is optional or required, it needs a sign-in or step-up within mfa_reverify_minutes (else 403 verification_required), as registering one does. Emits `user.updated` and tells the user by e-mail."), authUser, s.deleteDevice, "device_not_found", "verification_required")
	register(s, described(op("webauthnLoginInitialize", "POST", "/v1/auth/{app_id}/webauthn/login/initialize", "Start a passkey sign-in", "Passkeys"), loginInitializeDoc), authPublicApp, s.webauthnLoginInitialize, "invalid_identifier", "webauthn_unavailable", "rate_limited")
	register(s, described(op("webauthnLoginFinalize", "POST", "/v1/auth/{app_id}/webauthn/login/finalize", "Finish a passkey sign-in", "Passkeys"), loginFinalizeDoc), authPublicApp, s.webauthnLoginFinalize, "webauthn_verification_error", "webauthn_unavailable", "rate_limited")
	register(s, described(op("webauthnRegisterInitialize", "POST", "/v1/auth/{app_id}/webauthn/register/initialize", "Create a user and start a passkey registration", "Passkeys"), registerInitializeDoc), authApp, s.webauthnRegisterInitialize, "invalid_identifier", "user_exists", "webauthn_unavailable")
	register(s, described(op("webauthnRegisterFinalize", "POST", "/v1/auth/{app_id}/webauthn/register/finalize", "Finish a new user's passkey registration", "Passkeys"), registerFinalizeDoc), authPublicApp, s.webauthnRegisterFinalize, "webauthn_register_error", "webauthn_unavailable")
	register(s, described(op("listUserDevices", "GET", "/v1/{app_id}/users/{id}/devices", "List a user's passkeys", "Passkeys"), "A user's passkeys, for an administrator."), authApp, s.userDevices, "user_not_found")
	register(s, described(op("listUserDevicesApps", "GET", "/v1/apps/{app_id}/users/{id}/devices", "List a user's passkeys (alternate path)", "Passkeys"), "The same list at the path of the sessions list."), authApp, s.userDevices, "user_not_found")
	register(s, described(op("deleteUserDevice", "DELETE", "/v1/{app_id}/users/{id}/devices/{device_id}", "Remove a user's passkey", "Passkeys"), "Removes a user's passkey for an administrator (a lost device, say); emits `user.updated`."), authApp, s.deleteUserDevice, "user_not_found", "device_not_found")
	// Challenges, second factors and push (interface §2.6, §4.11; client-compat C9–C13; server-sdk-compat §5).
	register(s, smsGuarded(described(op("createChallenge", "POST", "/v1/auth/{app_id}/challenges", "Create a challenge", "Challenges"), createChallengeDoc)),
		authOptionalApp, s.createChallenge, with(sendErrors, "user_not_found", "identifier_taken", "verification_required", "mfa_method_not_found", "challenge_not_found", "challenge_closed", "factor_locked", "webauthn_unavailable")...)
	register(s, described(op("getChallenge", "GET", "/v1/auth/{app_id}/challenges/{token}", "Read a challenge", "Challenges"),
		"The challenge behind a token, with its status (client SDK getChallengeStatus). A requesting device polls this while a push waits for approval."),
		authPublicApp, s.getChallenge, "challenge_not_found")
	register(s, described(op("verifyChallenge", "POST", "/v1/auth/{app_id}/challenges/{token}/verify", "Answer a challenge", "Challenges"), verifyChallengeDoc),
		authPublicApp, s.verifyChallenge, "401", "challenge_not_found", "challenge_closed", "challenge_pending", "invalid_code", "code_used", "too_many_attempts", "code_entry_locked", "factor_locked", "rate_limited", "webauthn_verification_error", "identifier_taken")
	register(s, smsGuarded(described(op("resendChallenge", "POST", "/v1/auth/{app_id}/challenges/{token}/resend", "Send a challenge's code again", "Challenges"),
		"Sends a new code for a pending email_otp or sms_otp challenge; the old code stops working at once and the attempts left stay as they were. A second factor picked at sign-in (delivery_required) sends its first code this way. Rate limited per address and IP. Emits `verification.{channel}.requested`.")),
		authPublicApp, s.resendChallenge, with(sendErrors, "challenge_not_found", "challenge_closed")...)
	register(s, described(op("cancelChallenge", "DELETE", "/v1/auth/{app_id}/challenges/{token}", "Cancel a challenge", "Challenges"),
		"Cancels a pending challenge (client SDK cancelChallenge, and the first step of switchMfaMethod); cancelling it again answers the same. A second factor cancelled this way can still be replaced by POST /challenges {purpose: mfa} until the sign-in's deadline. Emits `challenge.failed` with reason cancelled."),
		authPublicApp, s.cancelChallenge, "challenge_not_found", "challenge_closed")
	register(s, described(op("enrollMfa", "POST", "/v1/auth/{app_id}/mfa/enroll", "Start adding an authenticator app", "MFA"),
		"Makes a TOTP secret for the signed-in user and returns it with its otpauth:// URI, shown this once. The enrolment works as a second factor once POST /mfa/enroll/verify confirms a code from the app. Needs a sign-in or step-up within the app's mfa_reverify_minutes (else 403 verification_required; pass a completed step_up challenge's token as `challenge`)."),
		authUser, s.enrollMFA, "verification_required")
	register(s, described(op("verifyMfaEnrollment", "POST", "/v1/auth/{app_id}/mfa/enroll/verify", "Confirm an authenticator app", "MFA"),
		"Confirms a TOTP enrolment with a code from the app: wrong code 422 invalid_code (it spends one of the hourly budget of wrong codes, as at sign-in). The code that confirmed the enrolment may be used once more, for the sign-in's second factor that follows in the same 30-second step; used a third time it is 422 code_used. Emits `user.updated` (change mfa_method_added) and tells the user by e-mail."),
		authUser, s.verifyEnrollment, "invalid_code", "code_used", "too_many_attempts", "factor_locked", "mfa_method_not_found", "rate_limited")
	register(s, described(op("createBackupCodes", "POST", "/v1/auth/{app_id}/mfa/backup-codes", "Make new backup codes", "MFA"),
		"Makes 10 single-use backup codes, shown this once; any earlier set stops working. Needs a recent sign-in or step-up as /mfa/enroll does. Emits `user.updated` (change backup_codes_generated) and tells the user."),
		authUser, s.newBackupCodes, "verification_required")
	register(s, described(op("listMfaMethods", "GET", "/v1/auth/{app_id}/mfa/methods", "List the signed-in user's second factors", "MFA"),
		"The user's authenticator apps (verified or not) and, when the app allows webauthn as a second factor, passkeys; with the count of unused backup codes."),
		authUser, s.listMFAMethods)
	register(s, described(op("mfaStatus", "GET", "/v1/auth/{app_id}/mfa/status", "The signed-in user's MFA state", "MFA"),
		"Whether the user has a second factor, which kinds, the app's policy, and whether the policy wants the user to enrol one."),
		authUser, s.mfaStatus)
	register(s, described(op("deleteMfaMethod", "DELETE", "/v1/auth/{app_id}/mfa/methods/{id}", "Remove a second factor", "MFA"),
		"Removes an authenticator app or a passkey of the signed-in user. Once the session's sign-in is older than the app's mfa_reverify_minutes, it needs `?challenge=` with a completed step_up challenge's token (spent by this call), else 403 verification_required with details.recent_sign_in_minutes. 204 on success; emits `user.updated` and tells the user."),
		authUser, s.deleteMFAMethod, "mfa_method_not_found", "verification_required")
	register(s, described(op("pendingPush", "GET", "/v1/auth/{app_id}/push/pending", "List push challenges waiting for this user", "MFA"),
		"The push challenges the signed-in user may approve from this device: what asks, from which device and place, until when. The number to match is shown only on the requesting device."),
		authUser, s.pendingPush)
	register(s, described(op("approvePush", "POST", "/v1/auth/{app_id}/push/{id}/approve", "Approve a push challenge", "MFA"),
		"Approves a push challenge of the signed-in user from another of their sessions, with the number the requesting device shows. The number is taken from the challenge's attempts (3) before it is compared: a wrong one is 400 and the last one fails the challenge; once they are spent every answer, the right one included, is 429 too_many_attempts. Emits `challenge.completed`."),
		authUser, s.approvePush, "challenge_not_found", "challenge_closed", "invalid_code", "too_many_attempts")
	register(s, described(op("denyPush", "POST", "/v1/auth/{app_id}/push/{id}/deny", "Deny a push challenge", "MFA"),
		"Refuses a push challenge (\"this was not me\"): it becomes denied and the requester gets nothing. Emits `challenge.failed` with reason denied."),
		authUser, s.denyPush, "challenge_not_found", "challenge_closed")
	register(s, op("reportError", "POST", "/v1/auth/{app_id}/errors", "Accept a client error report", "Sign-in"), authPublicApp, s.reportError)
	register(s, op("userMetafields", "GET", "/v1/auth/{app_id}/users/metafields", "Whether a user has filled in the required metadata", "Users"), authPublicApp, s.userMetafields, "user_not_found", "invalid_identifier", "rate_limited")

	s.applyOpDocs() // descriptions and examples (opdocs.go); keep last
}

// op starts an operation description.
func op(id, method, path, summary, tag string) huma.Operation {
	return huma.Operation{OperationID: id, Method: method, Path: path, Summary: summary, Tags: []string{tag}}
}

// register adds a huma operation: its credential rule goes into the metadata
// read by credentials(), and every error it returns goes through fail().
// Its error responses are those of its credential rule, those any operation
// can answer, and codes: the error_code values its own failures bring (and
// statuses, as numbers, answered without one; errdocs.go). codes may also
// name request headers the operation needs (required(name)).
func register[I, O any](s *Server, o huma.Operation, a auth, h func(context.Context, *I) (*O, error), codes ...string) {
	o.Metadata = map[string]any{metaAuth: a}
	switch a {
	case authApp, authAppHidden:
		o.Security = []map[string][]string{{schemeAPISecret: {}}, {schemeKeyHeader: {}}, {schemeAPISecret: {}, schemeKeyHeader: {}}}
	case authWorkspace:
		o.Security = []map[string][]string{{schemeAPISecret: {}}}
	case authUser:
		o.Security = []map[string][]string{{schemeUserAccess: {}}}
	case authOptionalApp:
		o.Security = []map[string][]string{{}, {schemeAPISecret: {}}}
	case authM2M:
		o.Security = []map[string][]string{{schemeM2M: {}}, {schemeM2M: {}, schemeAPISecret: {}}}
	}
	decl := append(append(slices.Clip(anyOperation), "503", codeTimeout), authErrors(a)...)
	var headers []string
	for _, c := range codes {
		if name, ok := strings.CutPrefix(c, headerDecl); ok {
			headers = append(headers, name)
		} else {
			decl = append(decl, c)
		}
	}
	s.documentErrors(&o, decl)
	s.routes = append(s.routes, Route{Method: o.Method, Path: o.Path})
	huma.Register(s.api, o, func(ctx context.Context, in *I) (*O, error) {
		out, err := h(ctx, in)
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		return out, nil
	})
	registered := s.operation(o.Method, o.Path)
	if o.Method != http.MethodGet {
		s.documentErrors(registered, notJSON)
	}
	if registered.RequestBody != nil {
		s.documentErrors(registered, tooLarge)
	}
	s.requireHeaders(registered, headers...)
}

// plain adds a route served by a plain handler (health, metrics, JWKS, the
// OpenAPI document and its docs page) and describes it in the document too,
// with the errors any operation can answer and codes (as register's).
func (s *Server) plain(o huma.Operation, h http.HandlerFunc, codes ...string) {
	s.documentErrors(&o, append(slices.Clip(anyOperation), codes...))
	pattern := o.Method + " " + o.Path
	o.Path = strings.ReplaceAll(o.Path, "{$}", "") // ServeMux's "exactly this path" marker
	// OpenAPI requires every path template variable to be declared.
	for _, name := range pathParams(o.Path) {
		o.Parameters = append(o.Parameters, &huma.Param{Name: name, In: "path", Required: true, Schema: &huma.Schema{Type: "string"}})
	}
	if ok := o.Responses["200"]; ok != nil && ok.Content["text/html"] != nil {
		// A page's unknown app and failures are plain text (http.Error), a
		// panic's JSON.
		for _, status := range []string{"404", "500", "503"} {
			if r := o.Responses[status]; r != nil {
				r.Content["text/plain"] = &huma.MediaType{Schema: &huma.Schema{Type: "string"}}
			}
		}
	}
	if r := o.Responses["429"]; r != nil && r.Headers == nil {
		// A page's 429 (pageOp) carries Retry-After as the JSON ones do.
		r.Headers = map[string]*huma.Param{"Retry-After": {Description: "Seconds to wait before trying again.",
			Required: true, Schema: &huma.Schema{Type: "integer", Minimum: ptrFloat(1)}}}
	}
	s.api.OpenAPI().AddOperation(&o)
	s.router.HandleFunc(pattern, h)
	s.routes = append(s.routes, Route{Method: o.Method, Path: o.Path})
}

// pathParams lists the {name} variables of a path template, in order.
func pathParams(path string) []string {
	var out []string
	for rest := path; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, strings.TrimSuffix(rest[i+1:i+j], "..."))
		rest = rest[i+j+1:]
	}
}
