package httpapi

import (
	"github.com/danielgtaylor/huma/v2"

	"github.com/gatehouse-auth/gatehouse/internal/webhook/eventschema"
)

// registerRoutes is the whole API surface, one line per route. Each
// operation is declared, with its docs and examples, beside its handler
// (operation.go).
func (s *Server) registerRoutes() {
	// Operations and discovery.
	s.plain(healthOp, s.health)
	s.plain(readyOp, s.ready)
	if s.MetricsOnAPI {
		if s.MetricsToken != "" {
			s.api.OpenAPI().Components.SecuritySchemes[schemeMetricsToken] = &huma.SecurityScheme{Type: "http", Scheme: "bearer",
				Description: "The server's metrics.token (GET /metrics only)."}
		}
		s.plain(metricsOp(s.MetricsToken != ""), s.metricsHandler().ServeHTTP)
	}
	s.plain(jwksOp, s.jwks)
	s.plain(appJwksOp, s.jwks)
	s.plain(openapiOp, s.openAPIDocument)
	s.plain(docsRedirectOp, s.docsRedirect)
	s.plain(docsOp, s.docs().ServeHTTP)
	s.plain(rootOp, s.rootRedirect)
	if s.Dev {
		register(s, devOutboxOp, s.devOutbox)
	}

	// Apps (interface §4.3, §4.4).
	register(s, getAppOp, s.getApp)
	register(s, createApiKeyOp, s.createAPIKey)
	register(s, listApiKeysOp, s.listAPIKeys)
	register(s, revokeApiKeyOp, s.revokeAPIKey)
	register(s, updateAppOp, s.updateOwnApp)
	// The app's own message service providers (interface §2.4, §4.5, §4.6).
	register(s, listMessageServiceProvidersOp, s.listProviders)
	register(s, updateMessageServiceProviderOp, s.updateProvider)
	register(s, testMessageServiceProviderOp, s.testProvider)
	// The app's social sign-in providers (docs/social-sign-in.md).
	register(s, listOauthProvidersOp, s.listOAuthProviders)
	register(s, putOauthProviderOp, s.putOAuthProvider)
	register(s, deleteOauthProviderOp, s.deleteOAuthProvider)

	// Machine-to-machine: clients, the client_credentials grant, M2M sessions (interface §4.13).
	register(s, createM2mClientOp, s.createM2MClient)
	register(s, listM2mClientsOp, s.listM2MClients)
	register(s, revokeM2mClientOp, s.revokeM2MClient)
	register(s, m2mTokenOp, s.m2mToken)
	register(s, m2mSessionOp, s.m2mSession)
	register(s, revokeM2mSessionOp, s.revokeM2MSession)
	register(s, introspectM2mOp, s.introspectM2M)

	// Workspaces, members and their apps.
	register(s, listWorkspacesOp, s.listWorkspaces)
	register(s, createWorkspaceOp, s.createWorkspace)
	register(s, getWorkspaceOp, s.getWorkspace)
	register(s, updateWorkspaceOp, s.updateWorkspace)
	register(s, auditLogOp, s.auditLog)
	register(s, listMembersOp, s.listMembers)
	register(s, addMemberOp, s.addMember)
	register(s, updateMemberOp, s.updateMember)
	register(s, removeMemberOp, s.removeMember)
	register(s, listWorkspaceAppsOp, s.listWorkspaceApps)
	register(s, createWorkspaceAppOp, s.createWorkspaceApp)
	register(s, getWorkspaceAppOp, s.getWorkspaceApp)
	register(s, updateWorkspaceAppOp, s.updateWorkspaceApp)
	register(s, deleteWorkspaceAppOp, s.deleteWorkspaceApp)

	// Users of apps (interface §4.1, §4.2; client-compat A2–A11, C1).
	register(s, createUserOp, s.createUser)
	register(s, createUserAuthOp, s.createUser)
	register(s, inviteUserOp, s.inviteUser)
	register(s, importUsersOp, s.importUsers)
	register(s, listUsersOp, s.listUsers)
	register(s, getUserOp, s.getUser)
	register(s, updateUserOp, s.updateUser)
	register(s, activateUserOp, s.activateUser)
	register(s, deactivateUserOp, s.deactivateUser)
	register(s, deleteUserOp, s.deleteUser)
	register(s, resetUserMfaOp, s.resetUserMFA)
	register(s, lookupUserOp, s.lookupUser)
	register(s, listUserSessionsOp, s.userSessions)
	register(s, listUserSessionsAppOp, s.userSessions)
	register(s, revokeUserSessionOp, s.revokeUserSession)

	// Message templates (docs/templates.md).
	register(s, listMessageTemplatesOp, s.listMessageTemplates)
	register(s, putMessageTemplateOp, s.putMessageTemplate)
	register(s, deleteMessageTemplateOp, s.deleteMessageTemplate)
	register(s, previewMessageTemplateOp, s.previewMessageTemplate)
	s.plain(openShortLinkOp, s.openShortLink)

	// Webhooks (interface §4.14), with an app API key or secret.
	register(s, createWebhookOp, s.createWebhook)
	register(s, listWebhooksOp, s.listWebhooks)
	register(s, webhookEventTypesOp, s.webhookEventTypes)
	register(s, getWebhookOp, s.getWebhook)
	register(s, updateWebhookOp, s.updateWebhook)
	register(s, deleteWebhookOp, s.deleteWebhook)
	register(s, testWebhookOp, s.testWebhook)
	register(s, listWebhookDeliveriesOp, s.listDeliveries)
	register(s, redeliverWebhookOp, s.redeliver)
	register(s, rotateWebhookSecretOp, s.rotateWebhookSecret)
	s.plain(webhookEventSchemaOp, s.eventSchema)
	eventschema.AddToOpenAPI(s.api.OpenAPI()) // the same schemas, and each event type under webhooks

	// Sign-in (interface §4.7, §4.8, §4.10, §4.12; client-compat C2–C8, C18–C24, A12–A15).
	register(s, sendOtpOp, s.sendOTP)
	register(s, verifyOtpOp, s.verifyOTP)
	register(s, sendLoginMagicLinkOp, s.sendMagicLink)
	register(s, sendRegisterMagicLinkOp, s.sendMagicLink)
	register(s, authenticateMagicLinkOp, s.authenticateMagicLink)
	register(s, magicLinkStatusOp, s.magicLinkStatus)
	s.plain(openMagicLinkOp, s.magicLinkOpen)
	s.plain(decideMagicLinkOp, s.magicLinkDecide)
	// Social sign-in (client-compat C25, §6.4): browser navigations.
	s.plain(oauthAuthorizeOp, s.oauthAuthorize)
	s.plain(oauthCallbackOp, s.oauthCallback)
	s.plain(oauthCallbackPostOp, s.oauthCallback)
	s.plain(oauthIconOp, s.oauthIcon)
	register(s, unlinkIdentityOp, s.unlinkIdentity)
	register(s, unlinkUserIdentityOp, s.unlinkUserIdentity)
	register(s, confirmInviteOp, s.confirmInvite)
	register(s, refreshTokensOp, s.refreshTokens)
	register(s, forceRefreshTokensOp, s.refreshTokens)
	register(s, rotateAccessOp, s.rotateAccess)
	register(s, verifyRefreshOp, s.verifyRefresh)
	register(s, currentUserOp, s.currentUser)
	register(s, updateCurrentUserMetaOp, s.updateCurrentUserMeta)
	register(s, signOutOp, s.signOut)
	register(s, listSessionsOp, s.listSessions)
	register(s, revokeSessionOp, s.revokeSession)
	// Passkeys (interface §4.9; client-compat C14–C17, C22).
	register(s, registerDeviceOp, s.registerDevice)
	register(s, finalizeDeviceOp, s.finalizeDevice)
	register(s, listDevicesOp, s.listDevices)
	register(s, renameDeviceOp, s.renameDevice)
	register(s, deleteDeviceOp, s.deleteDevice)
	register(s, webauthnLoginInitializeOp, s.webauthnLoginInitialize)
	register(s, webauthnLoginFinalizeOp, s.webauthnLoginFinalize)
	register(s, webauthnRegisterInitializeOp, s.webauthnRegisterInitialize)
	register(s, webauthnRegisterFinalizeOp, s.webauthnRegisterFinalize)
	register(s, listUserDevicesOp, s.userDevices)
	register(s, listUserDevicesAppsOp, s.userDevices)
	register(s, deleteUserDeviceOp, s.deleteUserDevice)
	// Challenges, second factors and push (interface §2.6, §4.11; client-compat C9–C13; server-sdk-compat §5).
	register(s, createChallengeOp, s.createChallenge)
	register(s, getChallengeOp, s.getChallenge)
	register(s, verifyChallengeOp, s.verifyChallenge)
	register(s, resendChallengeOp, s.resendChallenge)
	register(s, cancelChallengeOp, s.cancelChallenge)
	register(s, enrollMfaOp, s.enrollMFA)
	register(s, verifyMfaEnrollmentOp, s.verifyEnrollment)
	register(s, createBackupCodesOp, s.newBackupCodes)
	register(s, listMfaMethodsOp, s.listMFAMethods)
	register(s, mfaStatusOp, s.mfaStatus)
	register(s, deleteMfaMethodOp, s.deleteMFAMethod)
	register(s, setDefaultMfaMethodOp, s.setDefaultMFAMethod)
	register(s, pendingPushOp, s.pendingPush)
	register(s, approvePushOp, s.approvePush)
	register(s, denyPushOp, s.denyPush)
	register(s, reportErrorOp, s.reportError)
	register(s, userMetafieldsOp, s.userMetafields)
}
