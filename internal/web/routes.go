package web

// routes is the whole console, one line per page or action. Every POST
// runs behind session (CSRF token) and Go's cross-origin protection; no GET
// changes anything.
func (h *Handler) routes() {
	m := h.mux
	m.HandleFunc("GET /console/static/", h.static)
	m.HandleFunc("GET /console/signin", h.signinPage)
	m.HandleFunc("POST /console/signin", h.sendCode)
	m.HandleFunc("POST /console/signin/verify", h.verifyCode)
	m.HandleFunc("POST /console/signin/passkey/begin", h.beginPasskeySignIn)
	m.HandleFunc("POST /console/signin/passkey/finish", h.finishPasskeySignIn)
	m.HandleFunc("GET /console/link", h.linkPage)
	m.HandleFunc("POST /console/link", h.linkSignIn)
	m.HandleFunc("POST /console/signout", h.session(h.signOut))
	m.HandleFunc("GET /console/{$}", h.session(h.home))
	m.HandleFunc("GET /console/account", h.session(h.account))
	m.HandleFunc("POST /console/account/sessions/{id}/revoke", h.session(h.revokeOwnSession))
	m.HandleFunc("POST /console/account/passkeys/begin", h.session(h.beginPasskeyRegistration))
	m.HandleFunc("POST /console/account/passkeys/finish", h.session(h.finishPasskeyRegistration))
	m.HandleFunc("POST /console/account/passkeys/{id}/delete", h.session(h.deletePasskey))

	m.HandleFunc("GET /console/w/{ws}", h.session(h.apps))
	m.HandleFunc("POST /console/w/{ws}/apps", h.session(h.createApp))
	m.HandleFunc("GET /console/w/{ws}/apps/{app}", h.session(h.appSettings))
	m.HandleFunc("POST /console/w/{ws}/apps/{app}", h.session(h.saveAppSettings))
	m.HandleFunc("GET /console/w/{ws}/apps/{app}/preview", h.session(h.previewFlow))
	m.HandleFunc("GET /console/w/{ws}/apps/{app}/keys", h.session(h.keys))
	m.HandleFunc("POST /console/w/{ws}/apps/{app}/keys", h.session(h.createKey))
	m.HandleFunc("POST /console/w/{ws}/apps/{app}/keys/{key}/revoke", h.session(h.revokeKey))
	m.HandleFunc("GET /console/w/{ws}/apps/{app}/users", h.session(h.users))
	m.HandleFunc("GET /console/w/{ws}/apps/{app}/users.csv", h.session(h.usersCSV))
	m.HandleFunc("GET /console/w/{ws}/apps/{app}/users/{user}", h.session(h.user))
	m.HandleFunc("POST /console/w/{ws}/apps/{app}/users/{user}/sessions/revoke", h.session(h.revokeUserSessions))
	m.HandleFunc("GET /console/w/{ws}/apps/{app}/webhooks", h.session(h.webhooks))
	m.HandleFunc("POST /console/w/{ws}/apps/{app}/webhooks", h.session(h.createWebhook))
	m.HandleFunc("GET /console/w/{ws}/apps/{app}/webhooks/{ep}", h.session(h.webhookEndpoint))
	m.HandleFunc("POST /console/w/{ws}/apps/{app}/webhooks/{ep}/rotate", h.session(h.rotateWebhookSecret))
	m.HandleFunc("POST /console/w/{ws}/apps/{app}/webhooks/{ep}/test", h.session(h.testWebhook))
	m.HandleFunc("GET /console/w/{ws}/apps/{app}/webhooks/{ep}/deliveries/{d}", h.session(h.webhookDelivery))
	m.HandleFunc("POST /console/w/{ws}/apps/{app}/webhooks/{ep}/deliveries/{d}/redeliver", h.session(h.redeliverWebhook))

	m.HandleFunc("GET /console/w/{ws}/members", h.session(h.members))
	m.HandleFunc("POST /console/w/{ws}/members", h.session(h.addMember))
	m.HandleFunc("POST /console/w/{ws}/members/{member}/role", h.session(h.changeRole))
	m.HandleFunc("POST /console/w/{ws}/members/{member}/remove", h.session(h.removeMember))
	m.HandleFunc("GET /console/w/{ws}/audit", h.session(h.auditLog))
	m.HandleFunc("GET /console/w/{ws}/audit.csv", h.session(h.auditCSV))
	m.HandleFunc("/console/", h.notFound)
}
