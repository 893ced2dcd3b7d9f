package web

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// The hosted pages' text in the languages of the message templates (en,
// de, fr, es), all in this one place. The templates call t with the page's
// language and the English text (a format for fmt when it takes values):
//
//	{{t $.Lang "Continue as %s" .Data.SignedIn}}
//
// The English text is the key, so a string nobody translated yet shows in
// English, and titles and messages that the Go code passes to a page
// (hostedView.Title, .Message) are translated the same way when the
// catalog has them.

// hostedLanguages are the languages of the hosted pages, English first.
var hostedLanguages = []string{"en", "de", "fr", "es"}

// hostedLang is the language of a hosted page, chosen as a message's is
// (outbound.Languages, courier.Candidates): the signed-in user's stored
// locale when it is a language tag, then the request's Accept-Language,
// each tried as given and then as its base language; the first of
// hostedLanguages wins, else English.
func hostedLang(userMeta map[string]any, acceptLanguage string) string {
	prefs := outbound.Languages(userMeta, courier.ParseAcceptLanguage(acceptLanguage))
	for _, c := range courier.Candidates(prefs) {
		for _, l := range hostedLanguages {
			if c == l {
				return l
			}
		}
	}
	return "en"
}

// hostedLangOf is the language of a hosted page of app for r: the user of
// the browser's hosted session (when it has one) first.
func (h *Handler) hostedLangOf(r *http.Request, app tenant.App) string {
	var meta map[string]any
	if app.ID != "" && cookieValue(r, hostedSessionCookie+app.ID) != "" {
		if c, ok := h.hostedCaller(r, app); ok {
			meta = userMeta(c.User.Meta)
		}
	}
	return hostedLang(meta, r.Header.Get("Accept-Language"))
}

// tr is the template function t: text in lang, with args (escaped) put
// into its %s. A text the catalog does not have is shown as it is,
// escaped, with no formatting.
func tr(lang, text string, args ...any) template.HTML {
	row, ok := hostedText[text]
	if !ok {
		return template.HTML(template.HTMLEscapeString(text))
	}
	format := text
	for i, l := range hostedLanguages[1:] {
		if l == lang && row[i] != "" {
			format = row[i]
		}
	}
	if len(args) == 0 {
		return template.HTML(format)
	}
	esc := make([]any, len(args))
	for i, a := range args {
		esc[i] = template.HTMLEscapeString(fmt.Sprint(a))
	}
	return template.HTML(fmt.Sprintf(format, esc...))
}

// hostedText: English → German, French, Spanish. Catalog texts are
// trusted HTML (a few hold <strong>); the values put into them are not.
var hostedText = map[string][3]string{
	// Layout.
	"Skip to content":      {"Zum Inhalt springen", "Aller au contenu", "Ir al contenido"},
	"Secured by Gatehouse": {"Geschützt durch Gatehouse", "Sécurisé par Gatehouse", "Protegido por Gatehouse"},
	"Gatehouse":            {"Gatehouse", "Gatehouse", "Gatehouse"},

	// Sign-in page.
	"Sign in":                          {"Anmelden", "Se connecter", "Iniciar sesión"},
	"Sign in to %s":                    {"Bei %s anmelden", "Se connecter à %s", "Iniciar sesión en %s"},
	"Continue as %s":                   {"Weiter als %s", "Continuer en tant que %s", "Continuar como %s"},
	"Or sign in with another account:": {"Oder mit einem anderen Konto anmelden:", "Ou connectez-vous avec un autre compte :", "O inicia sesión con otra cuenta:"},
	"E-mail address or phone number":   {"E-Mail-Adresse oder Telefonnummer", "Adresse e-mail ou numéro de téléphone", "Correo electrónico o número de teléfono"},
	"E-mail address":                   {"E-Mail-Adresse", "Adresse e-mail", "Correo electrónico"},
	"Phone number":                     {"Telefonnummer", "Numéro de téléphone", "Número de teléfono"},
	"Send me a code":                   {"Code senden", "Envoyez-moi un code", "Enviarme un código"},
	"or":                               {"oder", "ou", "o"},
	"or continue with":                 {"oder weiter mit", "ou continuer avec", "o continuar con"},
	"Sign in with a passkey":           {"Mit einem Passkey anmelden", "Se connecter avec une clé d'accès", "Iniciar sesión con una llave de acceso"},
	"Sign in with another account":     {"Mit einem anderen Konto anmelden", "Se connecter avec un autre compte", "Iniciar sesión con otra cuenta"},
	"Continue with %s":                 {"Weiter mit %s", "Continuer avec %s", "Continuar con %s"},
	"We send a one-time code to sign you in. No password needed.": {
		"Wir senden Ihnen einen Einmalcode zur Anmeldung. Kein Passwort nötig.",
		"Nous vous envoyons un code à usage unique pour vous connecter. Aucun mot de passe nécessaire.",
		"Te enviamos un código de un solo uso para iniciar sesión. Sin contraseña."},

	// Code step.
	"Enter your code": {"Code eingeben", "Saisissez votre code", "Introduce tu código"},
	"If <strong>%s</strong> can sign in to %s, a 6-digit code is on its way to it.": {
		"Wenn <strong>%s</strong> sich bei %s anmelden kann, ist ein 6-stelliger Code dorthin unterwegs.",
		"Si <strong>%s</strong> peut se connecter à %s, un code à 6 chiffres y est en route.",
		"Si <strong>%s</strong> puede iniciar sesión en %s, le estamos enviando un código de 6 dígitos."},
	"If <strong>%s</strong> can sign in, a 6-digit code is on its way to it.": {
		"Wenn <strong>%s</strong> sich anmelden kann, ist ein 6-stelliger Code dorthin unterwegs.",
		"Si <strong>%s</strong> peut se connecter, un code à 6 chiffres y est en route.",
		"Si <strong>%s</strong> puede iniciar sesión, le estamos enviando un código de 6 dígitos."},
	"Code": {"Code", "Code", "Código"},
	"Use another address, or send a new code": {
		"Andere Adresse verwenden oder neuen Code senden",
		"Utiliser une autre adresse ou envoyer un nouveau code",
		"Usar otra dirección o enviar un código nuevo"},

	// Second factor.
	"Enter the code from your authenticator app": {"Code aus Ihrer Authenticator-App eingeben", "Saisissez le code de votre application d'authentification", "Introduce el código de tu aplicación de autenticación"},
	"Enter a backup code":                        {"Backup-Code eingeben", "Saisissez un code de secours", "Introduce un código de respaldo"},
	"Use your passkey":                           {"Passkey verwenden", "Utilisez votre clé d'accès", "Usa tu llave de acceso"},
	"Confirm it is you with a passkey of this account: your fingerprint, face, screen lock or security key.": {
		"Bestätigen Sie mit einem Passkey dieses Kontos, dass Sie es sind: Fingerabdruck, Gesicht, Bildschirmsperre oder Sicherheitsschlüssel.",
		"Confirmez que c'est bien vous avec une clé d'accès de ce compte : empreinte digitale, visage, verrouillage de l'écran ou clé de sécurité.",
		"Confirma que eres tú con una llave de acceso de esta cuenta: huella, rostro, bloqueo de pantalla o llave de seguridad."},
	"Using a passkey here needs JavaScript.": {
		"Für einen Passkey wird hier JavaScript benötigt.",
		"Utiliser une clé d'accès ici nécessite JavaScript.",
		"Usar una llave de acceso aquí requiere JavaScript."},
	"Choose another way below.": {"Wählen Sie unten einen anderen Weg.", "Choisissez un autre moyen ci-dessous.", "Elige otra forma a continuación."},
	"Type one of the backup codes you saved when you set up your second factor. Each works once.": {
		"Geben Sie einen der Backup-Codes ein, die Sie beim Einrichten Ihres zweiten Faktors gespeichert haben. Jeder funktioniert einmal.",
		"Saisissez l'un des codes de secours enregistrés lors de la configuration de votre second facteur. Chacun ne fonctionne qu'une fois.",
		"Escribe uno de los códigos de respaldo que guardaste al configurar tu segundo factor. Cada uno funciona una vez."},
	"Open your authenticator app and type the 6-digit code it shows for this account.": {
		"Öffnen Sie Ihre Authenticator-App und geben Sie den 6-stelligen Code ein, den sie für dieses Konto anzeigt.",
		"Ouvrez votre application d'authentification et saisissez le code à 6 chiffres affiché pour ce compte.",
		"Abre tu aplicación de autenticación y escribe el código de 6 dígitos que muestra para esta cuenta."},
	"Backup code":                        {"Backup-Code", "Code de secours", "Código de respaldo"},
	"Continue":                           {"Weiter", "Continuer", "Continuar"},
	"Use a backup code instead":          {"Stattdessen einen Backup-Code verwenden", "Utiliser plutôt un code de secours", "Usar un código de respaldo"},
	"Use your passkey instead":           {"Stattdessen Ihren Passkey verwenden", "Utiliser plutôt votre clé d'accès", "Usar tu llave de acceso"},
	"Use your authenticator app instead": {"Stattdessen Ihre Authenticator-App verwenden", "Utiliser plutôt votre application d'authentification", "Usar tu aplicación de autenticación"},
	"Start again":                        {"Neu beginnen", "Recommencer", "Empezar de nuevo"},
	"Second factor needed":               {"Zweiter Faktor erforderlich", "Second facteur requis", "Se necesita un segundo factor"},

	// The offer to add a passkey.
	"Add a passkey to this device?": {"Diesem Gerät einen Passkey hinzufügen?", "Ajouter une clé d'accès à cet appareil ?", "¿Añadir una llave de acceso a este dispositivo?"},
	"You are signed in as <strong>%s</strong>. With a passkey, you sign in next time with your fingerprint, face or screen lock instead of a code.": {
		"Sie sind als <strong>%s</strong> angemeldet. Mit einem Passkey melden Sie sich nächstes Mal mit Fingerabdruck, Gesicht oder Bildschirmsperre an statt mit einem Code.",
		"Vous êtes connecté en tant que <strong>%s</strong>. Avec une clé d'accès, vous vous connecterez la prochaine fois avec votre empreinte, votre visage ou le verrouillage de l'écran au lieu d'un code.",
		"Has iniciado sesión como <strong>%s</strong>. Con una llave de acceso, la próxima vez iniciarás sesión con tu huella, tu rostro o el bloqueo de pantalla en lugar de un código."},
	"You are signed in. With a passkey, you sign in next time with your fingerprint, face or screen lock instead of a code.": {
		"Sie sind angemeldet. Mit einem Passkey melden Sie sich nächstes Mal mit Fingerabdruck, Gesicht oder Bildschirmsperre an statt mit einem Code.",
		"Vous êtes connecté. Avec une clé d'accès, vous vous connecterez la prochaine fois avec votre empreinte, votre visage ou le verrouillage de l'écran au lieu d'un code.",
		"Has iniciado sesión. Con una llave de acceso, la próxima vez iniciarás sesión con tu huella, tu rostro o el bloqueo de pantalla en lugar de un código."},
	"Add a passkey": {"Passkey hinzufügen", "Ajouter une clé d'accès", "Añadir una llave de acceso"},
	"Not now":       {"Nicht jetzt", "Pas maintenant", "Ahora no"},

	// Magic links, sign-up fields, e-mail and SMS codes as the second factor.
	"Send me a sign-in link": {"Anmeldelink senden", "Envoyez-moi un lien de connexion", "Enviarme un enlace de inicio de sesión"},
	"We e-mail you a link to sign you in. No password needed.": {
		"Wir senden Ihnen per E-Mail einen Link zur Anmeldung. Kein Passwort nötig.",
		"Nous vous envoyons par e-mail un lien pour vous connecter. Aucun mot de passe nécessaire.",
		"Te enviamos por correo un enlace para iniciar sesión. Sin contraseña."},
	"Check your e-mail":    {"Prüfen Sie Ihre E-Mails", "Consultez vos e-mails", "Revisa tu correo"},
	"I've opened the link": {"Ich habe den Link geöffnet", "J'ai ouvert le lien", "He abierto el enlace"},
	"Use another address, or send a new link": {
		"Andere Adresse verwenden oder neuen Link senden",
		"Utiliser une autre adresse ou envoyer un nouveau lien",
		"Usar otra dirección o enviar un enlace nuevo"},
	"If <strong>%s</strong> can sign in to %s, a sign-in link is on its way to it. Open the link on this device to sign in here.": {
		"Wenn <strong>%s</strong> sich bei %s anmelden kann, ist ein Anmeldelink dorthin unterwegs. Öffnen Sie ihn auf diesem Gerät, um sich hier anzumelden.",
		"Si <strong>%s</strong> peut se connecter à %s, un lien de connexion y est en route. Ouvrez-le sur cet appareil pour vous connecter ici.",
		"Si <strong>%s</strong> puede iniciar sesión en %s, le estamos enviando un enlace de inicio de sesión. Ábrelo en este dispositivo para iniciar sesión aquí."},
	"If <strong>%s</strong> can sign in, a sign-in link is on its way to it. Open the link on this device to sign in here.": {
		"Wenn <strong>%s</strong> sich anmelden kann, ist ein Anmeldelink dorthin unterwegs. Öffnen Sie ihn auf diesem Gerät, um sich hier anzumelden.",
		"Si <strong>%s</strong> peut se connecter, un lien de connexion y est en route. Ouvrez-le sur cet appareil pour vous connecter ici.",
		"Si <strong>%s</strong> puede iniciar sesión, le estamos enviando un enlace de inicio de sesión. Ábrelo en este dispositivo para iniciar sesión aquí."},
	"Opening it on another device? That device asks which number this one shows. Choose <strong id=\"match\">%s</strong>, then come back here.": {
		"Sie öffnen ihn auf einem anderen Gerät? Dort werden Sie gefragt, welche Zahl dieses Gerät zeigt. Wählen Sie <strong id=\"match\">%s</strong> und kommen Sie dann hierher zurück.",
		"Vous l'ouvrez sur un autre appareil ? Celui-ci vous demandera quel nombre affiche cet appareil. Choisissez <strong id=\"match\">%s</strong>, puis revenez ici.",
		"¿Lo abres en otro dispositivo? Ese dispositivo te preguntará qué número muestra este. Elige <strong id=\"match\">%s</strong> y vuelve aquí."},
	"You opened your sign-in link for %s.": {"Sie haben Ihren Anmeldelink für %s geöffnet.", "Vous avez ouvert votre lien de connexion pour %s.", "Has abierto tu enlace de inicio de sesión para %s."},
	"You opened your sign-in link.":        {"Sie haben Ihren Anmeldelink geöffnet.", "Vous avez ouvert votre lien de connexion.", "Has abierto tu enlace de inicio de sesión."},
	"Press Continue to sign in on this device. If you did not ask for this link, close this page.": {
		"Drücken Sie auf Weiter, um sich auf diesem Gerät anzumelden. Wenn Sie diesen Link nicht angefordert haben, schließen Sie diese Seite.",
		"Appuyez sur Continuer pour vous connecter sur cet appareil. Si vous n'avez pas demandé ce lien, fermez cette page.",
		"Pulsa Continuar para iniciar sesión en este dispositivo. Si no has pedido este enlace, cierra esta página."},
	"Tell us about yourself":        {"Erzählen Sie uns etwas über sich", "Parlez-nous de vous", "Cuéntanos sobre ti"},
	"(optional)":                    {"(optional)", "(facultatif)", "(opcional)"},
	"Welcome, <strong>%s</strong>.": {"Willkommen, <strong>%s</strong>.", "Bienvenue, <strong>%s</strong>.", "Te damos la bienvenida, <strong>%s</strong>."},
	"Welcome.":                      {"Willkommen.", "Bienvenue.", "Te damos la bienvenida."},
	"%s asks for a few details to finish signing up.": {
		"%s bittet um ein paar Angaben, um die Registrierung abzuschließen.",
		"%s vous demande quelques informations pour terminer l'inscription.",
		"%s te pide algunos datos para terminar el registro."},
	"We ask for a few details to finish signing up.": {
		"Wir bitten um ein paar Angaben, um die Registrierung abzuschließen.",
		"Nous vous demandons quelques informations pour terminer l'inscription.",
		"Te pedimos algunos datos para terminar el registro."},
	"We sent a 6-digit code to your e-mail address. Type it here.": {
		"Wir haben einen 6-stelligen Code an Ihre E-Mail-Adresse gesendet. Geben Sie ihn hier ein.",
		"Nous avons envoyé un code à 6 chiffres à votre adresse e-mail. Saisissez-le ici.",
		"Hemos enviado un código de 6 dígitos a tu correo electrónico. Escríbelo aquí."},
	"We sent a 6-digit code to your phone by text message. Type it here.": {
		"Wir haben einen 6-stelligen Code per SMS an Ihr Telefon gesendet. Geben Sie ihn hier ein.",
		"Nous avons envoyé un code à 6 chiffres par SMS à votre téléphone. Saisissez-le ici.",
		"Hemos enviado un código de 6 dígitos a tu teléfono por SMS. Escríbelo aquí."},
	"Send a new code": {"Neuen Code senden", "Envoyer un nouveau code", "Enviar un código nuevo"},
	"Send a code to my e-mail address instead": {
		"Stattdessen einen Code an meine E-Mail-Adresse senden",
		"Envoyer plutôt un code à mon adresse e-mail",
		"Enviar un código a mi correo electrónico"},
	"Send a code to my phone instead": {
		"Stattdessen einen Code an mein Telefon senden",
		"Envoyer plutôt un code à mon téléphone",
		"Enviar un código a mi teléfono"},

	// Errors (titles and messages the Go code passes).
	"Back to sign-in":        {"Zurück zur Anmeldung", "Retour à la connexion", "Volver al inicio de sesión"},
	"Not found":              {"Nicht gefunden", "Introuvable", "No encontrado"},
	"Refused":                {"Abgelehnt", "Refusé", "Rechazado"},
	"Bad Request":            {"Ungültige Anfrage", "Requête invalide", "Solicitud incorrecta"},
	"Forbidden":              {"Nicht erlaubt", "Interdit", "Prohibido"},
	"Too Many Requests":      {"Zu viele Anfragen", "Trop de requêtes", "Demasiadas solicitudes"},
	"Internal Server Error":  {"Serverfehler", "Erreur du serveur", "Error del servidor"},
	"Unauthorized":           {"Nicht angemeldet", "Non connecté", "No autorizado"},
	"There is no page here.": {"Hier gibt es keine Seite.", "Il n'y a pas de page ici.", "Aquí no hay ninguna página."},
	"There is no app here.":  {"Hier gibt es keine App.", "Il n'y a pas d'application ici.", "Aquí no hay ninguna aplicación."},
	"This request came from another site and was refused.": {
		"Diese Anfrage kam von einer anderen Website und wurde abgelehnt.",
		"Cette requête venait d'un autre site et a été refusée.",
		"Esta solicitud venía de otro sitio y fue rechazada."},
	"This form was not sent from this browser's sign-in page (its CSRF token is missing or wrong, or cookies are off). Go back, reload the page and try again.": {
		"Dieses Formular wurde nicht von der Anmeldeseite dieses Browsers gesendet (sein CSRF-Token fehlt oder ist falsch, oder Cookies sind aus). Gehen Sie zurück, laden Sie die Seite neu und versuchen Sie es erneut.",
		"Ce formulaire n'a pas été envoyé depuis la page de connexion de ce navigateur (son jeton CSRF manque ou est faux, ou les cookies sont désactivés). Revenez en arrière, rechargez la page et réessayez.",
		"Este formulario no se envió desde la página de inicio de sesión de este navegador (falta su token CSRF o es incorrecto, o las cookies están desactivadas). Vuelve atrás, recarga la página e inténtalo de nuevo."},
	"The return address is not one of this app's pages.": {
		"Die Rücksprungadresse ist keine Seite dieser App.",
		"L'adresse de retour n'est pas une page de cette application.",
		"La dirección de retorno no es una página de esta aplicación."},
	"This app has no callback URL set up, or callback_url is not one of its addresses.": {
		"Für diese App ist keine Callback-URL eingerichtet, oder callback_url ist keine ihrer Adressen.",
		"Cette application n'a pas d'URL de rappel, ou callback_url n'est pas l'une de ses adresses.",
		"Esta aplicación no tiene una URL de retorno configurada, o callback_url no es una de sus direcciones."},
	"This sign-in has expired or was started in another browser. Start again.": {
		"Diese Anmeldung ist abgelaufen oder wurde in einem anderen Browser begonnen. Beginnen Sie neu.",
		"Cette connexion a expiré ou a été commencée dans un autre navigateur. Recommencez.",
		"Este inicio de sesión ha caducado o se inició en otro navegador. Empieza de nuevo."},
	"That code is not right, or it has expired. Check it and try again, or ask for a new code.": {
		"Dieser Code ist falsch oder abgelaufen. Prüfen Sie ihn und versuchen Sie es erneut, oder fordern Sie einen neuen Code an.",
		"Ce code est incorrect ou a expiré. Vérifiez-le et réessayez, ou demandez un nouveau code.",
		"Ese código no es correcto o ha caducado. Compruébalo e inténtalo de nuevo, o pide un código nuevo."},
	"You are signed out here. Sign in again.": {
		"Sie sind hier abgemeldet. Melden Sie sich erneut an.",
		"Vous êtes déconnecté ici. Reconnectez-vous.",
		"Has cerrado la sesión aquí. Vuelve a iniciar sesión."},
	"That method is not one this sign-in may use.": {
		"Diese Methode ist für diese Anmeldung nicht erlaubt.",
		"Cette méthode n'est pas autorisée pour cette connexion.",
		"Ese método no está permitido para este inicio de sesión."},
	"This app asks you for a second factor that this page cannot take. Sign in in the app itself.": {
		"Diese App verlangt einen zweiten Faktor, den diese Seite nicht annehmen kann. Melden Sie sich in der App selbst an.",
		"Cette application demande un second facteur que cette page ne peut pas recevoir. Connectez-vous dans l'application elle-même.",
		"Esta aplicación te pide un segundo factor que esta página no admite. Inicia sesión en la propia aplicación."},
	"This app asks you for your passkey as a second factor, which needs JavaScript and a browser that supports passkeys. Sign in in the app itself, or in another browser.": {
		"Diese App verlangt Ihren Passkey als zweiten Faktor; dafür sind JavaScript und ein Browser mit Passkey-Unterstützung nötig. Melden Sie sich in der App selbst oder in einem anderen Browser an.",
		"Cette application demande votre clé d'accès comme second facteur, ce qui nécessite JavaScript et un navigateur compatible. Connectez-vous dans l'application elle-même ou dans un autre navigateur.",
		"Esta aplicación te pide tu llave de acceso como segundo factor, lo que requiere JavaScript y un navegador compatible. Inicia sesión en la propia aplicación o en otro navegador."},

	// Account page.
	"Your account":                      {"Ihr Konto", "Votre compte", "Tu cuenta"},
	"Signed in as <strong>%s</strong>.": {"Angemeldet als <strong>%s</strong>.", "Connecté en tant que <strong>%s</strong>.", "Sesión iniciada como <strong>%s</strong>."},
	"Profile":                           {"Profil", "Profil", "Perfil"},
	"Save profile":                      {"Profil speichern", "Enregistrer le profil", "Guardar perfil"},
	"E-mail address and phone number":   {"E-Mail-Adresse und Telefonnummer", "Adresse e-mail et numéro de téléphone", "Correo electrónico y número de teléfono"},
	"none":                              {"keine", "aucun", "ninguno"},
	"New e-mail address":                {"Neue E-Mail-Adresse", "Nouvelle adresse e-mail", "Nuevo correo electrónico"},
	"Add an e-mail address":             {"E-Mail-Adresse hinzufügen", "Ajouter une adresse e-mail", "Añadir un correo electrónico"},
	"Send a code to this address":       {"Code an diese Adresse senden", "Envoyer un code à cette adresse", "Enviar un código a esta dirección"},
	"New phone number":                  {"Neue Telefonnummer", "Nouveau numéro de téléphone", "Nuevo número de teléfono"},
	"Add a phone number":                {"Telefonnummer hinzufügen", "Ajouter un numéro de téléphone", "Añadir un número de teléfono"},
	"Text a code to this number":        {"Code per SMS an diese Nummer senden", "Envoyer un code par SMS à ce numéro", "Enviar un código por SMS a este número"},
	"Passkeys":                          {"Passkeys", "Clés d'accès", "Llaves de acceso"},
	"Name":                              {"Name", "Nom", "Nombre"},
	"Added":                             {"Hinzugefügt", "Ajoutée", "Añadida"},
	"Last used":                         {"Zuletzt verwendet", "Dernière utilisation", "Último uso"},
	"Actions":                           {"Aktionen", "Actions", "Acciones"},
	"Action":                            {"Aktion", "Action", "Acción"},
	"suspended":                         {"gesperrt", "suspendue", "suspendida"},
	"Rename":                            {"Umbenennen", "Renommer", "Cambiar nombre"},
	"Remove":                            {"Entfernen", "Supprimer", "Quitar"},
	"You have no passkeys. A passkey signs you in with your device's screen lock, with no code to type.": {
		"Sie haben keine Passkeys. Ein Passkey meldet Sie mit der Bildschirmsperre Ihres Geräts an, ohne Code.",
		"Vous n'avez aucune clé d'accès. Une clé d'accès vous connecte avec le verrouillage de l'écran de votre appareil, sans code à saisir.",
		"No tienes llaves de acceso. Una llave de acceso inicia sesión con el bloqueo de pantalla de tu dispositivo, sin escribir códigos."},
	"Two-step sign-in":                {"Anmeldung in zwei Schritten", "Connexion en deux étapes", "Inicio de sesión en dos pasos"},
	"Authenticator apps":              {"Authenticator-Apps", "Applications d'authentification", "Aplicaciones de autenticación"},
	"default":                         {"Standard", "par défaut", "predeterminada"},
	"No authenticator app is set up.": {"Keine Authenticator-App eingerichtet.", "Aucune application d'authentification n'est configurée.", "No hay ninguna aplicación de autenticación configurada."},
	"Name of the new authenticator app (optional)": {"Name der neuen Authenticator-App (optional)", "Nom de la nouvelle application d'authentification (facultatif)", "Nombre de la nueva aplicación de autenticación (opcional)"},
	"Set up an authenticator app":                  {"Authenticator-App einrichten", "Configurer une application d'authentification", "Configurar una aplicación de autenticación"},
	"Backup codes":                                 {"Backup-Codes", "Codes de secours", "Códigos de respaldo"},
	"Make backup codes":                            {"Backup-Codes erstellen", "Créer des codes de secours", "Crear códigos de respaldo"},
	"Linked accounts":                              {"Verknüpfte Konten", "Comptes liés", "Cuentas vinculadas"},
	"Provider":                                     {"Anbieter", "Fournisseur", "Proveedor"},
	"Account":                                      {"Konto", "Compte", "Cuenta"},
	"Unlink":                                       {"Trennen", "Dissocier", "Desvincular"},
	"Where you are signed in":                      {"Wo Sie angemeldet sind", "Où vous êtes connecté", "Dónde has iniciado sesión"},
	"Device":                                       {"Gerät", "Appareil", "Dispositivo"},
	"Signed in":                                    {"Angemeldet", "Connecté", "Sesión iniciada"},
	"this device":                                  {"dieses Gerät", "cet appareil", "este dispositivo"},
	"Sign out here":                                {"Hier abmelden", "Se déconnecter ici", "Cerrar sesión aquí"},
	"Revoke":                                       {"Widerrufen", "Révoquer", "Revocar"},
	"Sign out":                                     {"Abmelden", "Se déconnecter", "Cerrar sesión"},
	"Back to your account":                         {"Zurück zu Ihrem Konto", "Retour à votre compte", "Volver a tu cuenta"},
	"Cancel":                                       {"Abbrechen", "Annuler", "Cancelar"},
	"Confirm":                                      {"Bestätigen", "Confirmer", "Confirmar"},
	"Verify":                                       {"Bestätigen", "Vérifier", "Verificar"},
	"Confirm it's you":                             {"Bestätigen Sie, dass Sie es sind", "Confirmez que c'est vous", "Confirma que eres tú"},
	"Choose another way":                           {"Anderen Weg wählen", "Choisir un autre moyen", "Elegir otra forma"},
	"Your backup codes":                            {"Ihre Backup-Codes", "Vos codes de secours", "Tus códigos de respaldo"},
	"Add an authenticator app":                     {"Authenticator-App hinzufügen", "Ajouter une application d'authentification", "Añadir una aplicación de autenticación"},
	"The six-digit code from the app":              {"Der sechsstellige Code aus der App", "Le code à six chiffres de l'application", "El código de seis dígitos de la aplicación"},

	// Push approval (hosted_push.go).
	"Approve on your other device":       {"Auf Ihrem anderen Gerät bestätigen", "Approuvez sur votre autre appareil", "Aprueba en tu otro dispositivo"},
	"We asked your other devices again.": {"Wir haben Ihre anderen Geräte erneut gefragt.", "Nous avons de nouveau sollicité vos autres appareils.", "Hemos vuelto a preguntar a tus otros dispositivos."},
	"We asked the devices where you are signed in to approve this sign-in. On one of them, approve it and choose this number:": {
		"Wir haben die Geräte, auf denen Sie angemeldet sind, gebeten, diese Anmeldung zu bestätigen. Bestätigen Sie sie auf einem davon und wählen Sie diese Zahl:",
		"Nous avons demandé aux appareils sur lesquels vous êtes connecté d'approuver cette connexion. Sur l'un d'eux, approuvez-la et choisissez ce nombre :",
		"Hemos pedido a los dispositivos en los que has iniciado sesión que aprueben este inicio de sesión. En uno de ellos, apruébalo y elige este número:"},
	"We asked your other signed-in devices. On one of them, approve the request and choose this number:": {
		"Wir haben Ihre anderen angemeldeten Geräte gefragt. Bestätigen Sie die Anfrage auf einem davon und wählen Sie diese Zahl:",
		"Nous avons sollicité vos autres appareils connectés. Sur l'un d'eux, approuvez la demande et choisissez ce nombre :",
		"Hemos preguntado a tus otros dispositivos con sesión iniciada. En uno de ellos, aprueba la solicitud y elige este número:"},
	"Waiting for your approval…":         {"Warten auf Ihre Bestätigung …", "En attente de votre approbation…", "Esperando tu aprobación…"},
	"Waiting for the link to be opened…": {"Warten, bis der Link geöffnet wird …", "En attente de l'ouverture du lien…", "Esperando a que se abra el enlace…"},
	"I've approved it":                   {"Ich habe bestätigt", "Je l'ai approuvée", "Ya lo he aprobado"},
	"Ask my devices again":               {"Meine Geräte erneut fragen", "Solliciter à nouveau mes appareils", "Preguntar de nuevo a mis dispositivos"},
	"Approve on another device instead":  {"Stattdessen auf einem anderen Gerät bestätigen", "Approuver plutôt sur un autre appareil", "Aprobar en otro dispositivo en su lugar"},
	"Not approved yet. Approve the request on your other device, choosing the number shown here, then try again.": {
		"Noch nicht bestätigt. Bestätigen Sie die Anfrage auf Ihrem anderen Gerät mit der hier angezeigten Zahl und versuchen Sie es dann erneut.",
		"Pas encore approuvée. Approuvez la demande sur votre autre appareil en choisissant le nombre affiché ici, puis réessayez.",
		"Aún no se ha aprobado. Aprueba la solicitud en tu otro dispositivo eligiendo el número que se muestra aquí y vuelve a intentarlo."},
	"Too many wrong numbers were chosen on your other device, so this request has ended. Start again.": {
		"Auf Ihrem anderen Gerät wurden zu oft falsche Zahlen gewählt, daher ist diese Anfrage beendet. Beginnen Sie von vorn.",
		"Trop de mauvais nombres ont été choisis sur votre autre appareil : cette demande est terminée. Recommencez.",
		"Se eligieron demasiados números incorrectos en tu otro dispositivo, así que esta solicitud ha terminado. Vuelve a empezar."},
	"Too many wrong numbers were chosen on your other device, so this request has ended. Ask again, or choose another way.": {
		"Auf Ihrem anderen Gerät wurden zu oft falsche Zahlen gewählt, daher ist diese Anfrage beendet. Fragen Sie erneut oder wählen Sie einen anderen Weg.",
		"Trop de mauvais nombres ont été choisis sur votre autre appareil : cette demande est terminée. Redemandez, ou choisissez un autre moyen.",
		"Se eligieron demasiados números incorrectos en tu otro dispositivo, así que esta solicitud ha terminado. Vuelve a preguntar o elige otra forma."},
	"This request was denied on your other device: nothing was approved. Start again.": {
		"Diese Anfrage wurde auf Ihrem anderen Gerät abgelehnt: Es wurde nichts bestätigt. Beginnen Sie von vorn.",
		"Cette demande a été refusée sur votre autre appareil : rien n'a été approuvé. Recommencez.",
		"Esta solicitud se rechazó en tu otro dispositivo: no se aprobó nada. Vuelve a empezar."},
	"This request was denied on your other device: nothing was approved. Ask again, or choose another way.": {
		"Diese Anfrage wurde auf Ihrem anderen Gerät abgelehnt: Es wurde nichts bestätigt. Fragen Sie erneut oder wählen Sie einen anderen Weg.",
		"Cette demande a été refusée sur votre autre appareil : rien n'a été approuvé. Redemandez, ou choisissez un autre moyen.",
		"Esta solicitud se rechazó en tu otro dispositivo: no se aprobó nada. Vuelve a preguntar o elige otra forma."},
	"This request has ended (it expired or was used). Start again.": {
		"Diese Anfrage ist beendet (abgelaufen oder bereits verwendet). Beginnen Sie von vorn.",
		"Cette demande est terminée (expirée ou déjà utilisée). Recommencez.",
		"Esta solicitud ha terminado (caducó o ya se usó). Vuelve a empezar."},
	"This request has ended (it expired or was used). Ask again, or choose another way.": {
		"Diese Anfrage ist beendet (abgelaufen oder bereits verwendet). Fragen Sie erneut oder wählen Sie einen anderen Weg.",
		"Cette demande est terminée (expirée ou déjà utilisée). Redemandez, ou choisissez un autre moyen.",
		"Esta solicitud ha terminado (caducó o ya se usó). Vuelve a preguntar o elige otra forma."},
	"Waiting for your approval": {"Wartet auf Ihre Bestätigung", "En attente de votre approbation", "Esperando tu aprobación"},
	"Another device asks to sign in as you, or to confirm it's you. Approve only if it is you, there, now: type the number that device shows.": {
		"Ein anderes Gerät möchte sich als Sie anmelden oder bestätigen, dass Sie es sind. Bestätigen Sie nur, wenn Sie es gerade selbst dort sind: Geben Sie die Zahl ein, die das Gerät anzeigt.",
		"Un autre appareil demande à se connecter en votre nom, ou à confirmer que c'est vous. N'approuvez que si c'est vous, là-bas, maintenant : saisissez le nombre affiché par cet appareil.",
		"Otro dispositivo pide iniciar sesión como tú, o confirmar que eres tú. Aprueba solo si eres tú, allí, ahora: escribe el número que muestra ese dispositivo."},
	"Number":                                  {"Zahl", "Nombre", "Número"},
	"Approve":                                 {"Bestätigen", "Approuver", "Aprobar"},
	"Deny, it wasn't me":                      {"Ablehnen, das war ich nicht", "Refuser, ce n'était pas moi", "Rechazar, no fui yo"},
	"Approved: the other device goes on.":     {"Bestätigt: Das andere Gerät macht weiter.", "Approuvé : l'autre appareil continue.", "Aprobado: el otro dispositivo continúa."},
	"Denied: the other device gets nothing.":  {"Abgelehnt: Das andere Gerät erhält nichts.", "Refusé : l'autre appareil n'obtient rien.", "Rechazado: el otro dispositivo no obtiene nada."},
	"Type the number the other device shows.": {"Geben Sie die Zahl ein, die das andere Gerät anzeigt.", "Saisissez le nombre affiché par l'autre appareil.", "Escribe el número que muestra el otro dispositivo."},
	"This request is no longer waiting: it was answered, it expired, or it is not yours.": {
		"Diese Anfrage wartet nicht mehr: Sie wurde beantwortet, ist abgelaufen oder gehört nicht Ihnen.",
		"Cette demande n'est plus en attente : elle a reçu une réponse, a expiré, ou n'est pas la vôtre.",
		"Esta solicitud ya no está esperando: se respondió, caducó o no es tuya."},
	"Too many wrong numbers: this request has ended and nothing was approved.": {
		"Zu viele falsche Zahlen: Diese Anfrage ist beendet, und nichts wurde bestätigt.",
		"Trop de mauvais nombres : cette demande est terminée et rien n'a été approuvé.",
		"Demasiados números incorrectos: esta solicitud ha terminado y no se aprobó nada."},
	"That is not the number the other device shows. Check it and try again; if that device shows no number, deny the request.": {
		"Das ist nicht die Zahl, die das andere Gerät anzeigt. Prüfen Sie sie und versuchen Sie es erneut; zeigt das Gerät keine Zahl, lehnen Sie die Anfrage ab.",
		"Ce n'est pas le nombre affiché par l'autre appareil. Vérifiez-le et réessayez ; si cet appareil n'affiche aucun nombre, refusez la demande.",
		"Ese no es el número que muestra el otro dispositivo. Compruébalo y vuelve a intentarlo; si ese dispositivo no muestra ningún número, rechaza la solicitud."},
}

// userMeta reads a user's metadata (a JSON object) for hostedLang.
func userMeta(b []byte) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(b, &m) // stored JSON object; anything else has no locale
	return m
}
