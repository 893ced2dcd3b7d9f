package web

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"

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
// (hostedView.Title, .Message, .Notice) are translated the same way when
// the catalog has them. A message with a value in it (a number of
// seconds, an address) is made by hostedf: the key and its values, which
// t puts into the translation. Every sentence of the hosted pages' Go code
// is a key (TestHostedTextGo); the API's error texts that a page shows as
// they are stay English, unless a row below has them.
//
// A sentence with a count (its first %s) is keyed by its plural; when the
// count is one (in French, zero or one), t takes the key hostedSingular
// gives for it instead, which is a row of its own. So a template or hostedf
// passes the plural and the count, and "You have 1 unused backup code."
// reads right in every language.

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

// hostedArgs separates a message's key from its values in what hostedf
// makes (a control character: no key or value of a page has one).
const hostedArgs = "\x1f"

// hostedf is a message for a hosted page (a hostedView's Title, Message
// or Notice, a refusal's msg) with values: the catalog key format and the
// values of its %s, kept apart in one string until t translates the key
// and puts them in. In English it reads as fmt.Sprintf(format, args...).
func hostedf(format string, args ...any) string {
	s := format
	for _, a := range args {
		s += hostedArgs + fmt.Sprint(a)
	}
	return s
}

// hostedSingular: the sentences with a count (their first %s), each
// keyed by its plural, and the key for a count of one. (The sentences with
// minutes have none: the window for a recent sign-in is 5 minutes at
// least.)
var hostedSingular = map[string]string{
	"You have %s unused backup codes.":                    "You have %s unused backup code.",
	"Too many attempts. Wait %s seconds, then try again.": "Too many attempts. Wait %s second, then try again.",
}

// hostedOne reports whether count (as a page shows it) takes the singular
// in lang: one, and in French zero too.
func hostedOne(lang, count string) bool {
	return count == "1" || (lang == "fr" && count == "0")
}

// tr is the template function t: text in lang, with args (escaped) put
// into its %s; text may be a hostedf message, which carries its args. A
// count sentence with a count of one takes its singular (hostedSingular).
// A text the catalog does not have is shown as it is, escaped, with no
// formatting.
func tr(lang, text string, args ...any) template.HTML {
	if key, vals, ok := strings.Cut(text, hostedArgs); ok && len(args) == 0 {
		if _, known := hostedText[key]; known && strings.Count(key, "%s") == strings.Count(vals, hostedArgs)+1 {
			text = key
			for _, v := range strings.Split(vals, hostedArgs) {
				args = append(args, v)
			}
		}
	}
	if one, ok := hostedSingular[text]; ok && len(args) > 0 && hostedOne(lang, fmt.Sprint(args[0])) {
		text = one
	}
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
	"Approve on your other device": {"Auf Ihrem anderen Gerät bestätigen", "Approuvez sur votre autre appareil", "Aprueba en tu otro dispositivo"},
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

	// Sign-in page's messages (hosted.go, hosted_magic.go, hosted_passkey.go,
	// hosted_signup.go).
	"Too many attempts. Wait %s seconds, then try again.": {
		"Zu viele Versuche. Warten Sie %s Sekunden und versuchen Sie es dann erneut.",
		"Trop de tentatives. Patientez %s secondes, puis réessayez.",
		"Demasiados intentos. Espera %s segundos y vuelve a intentarlo."},
	"Too many attempts. Wait %s second, then try again.": {
		"Zu viele Versuche. Warten Sie %s Sekunde und versuchen Sie es dann erneut.",
		"Trop de tentatives. Patientez %s seconde, puis réessayez.",
		"Demasiados intentos. Espera %s segundo y vuelve a intentarlo."},
	"Enter the code we e-mailed you": {
		"Code aus unserer E-Mail eingeben",
		"Saisissez le code reçu par e-mail",
		"Introduce el código que te enviamos por correo"},
	"Enter the code we texted you": {
		"Code aus unserer SMS eingeben",
		"Saisissez le code reçu par SMS",
		"Introduce el código que te enviamos por SMS"},
	"A new code is on its way.": {
		"Ein neuer Code ist unterwegs.",
		"Un nouveau code est en route.",
		"Te estamos enviando un código nuevo."},
	"This second factor sends no code.": {
		"Dieser zweite Faktor sendet keinen Code.",
		"Ce second facteur n'envoie pas de code.",
		"Este segundo factor no envía ningún código."},
	"Signing you in": {
		"Sie werden angemeldet",
		"Connexion en cours",
		"Iniciando sesión"},
	"The link has not been opened yet. Open it from the e-mail, on this or another device, then try again.": {
		"Der Link wurde noch nicht geöffnet. Öffnen Sie ihn aus der E-Mail, auf diesem oder einem anderen Gerät, und versuchen Sie es dann erneut.",
		"Le lien n'a pas encore été ouvert. Ouvrez-le depuis l'e-mail, sur cet appareil ou un autre, puis réessayez.",
		"El enlace aún no se ha abierto. Ábrelo desde el correo, en este u otro dispositivo, y vuelve a intentarlo."},
	"This sign-in was denied on the device that opened the link (or the number chosen there was not this one). Ask for a new link.": {
		"Diese Anmeldung wurde auf dem Gerät abgelehnt, das den Link geöffnet hat (oder die dort gewählte Zahl war nicht diese). Fordern Sie einen neuen Link an.",
		"Cette connexion a été refusée sur l'appareil qui a ouvert le lien (ou le nombre choisi là-bas n'était pas celui-ci). Demandez un nouveau lien.",
		"Este inicio de sesión se rechazó en el dispositivo que abrió el enlace (o el número elegido allí no era este). Pide un enlace nuevo."},
	"This link has expired, or it was used on another device. Ask for a new link.": {
		"Dieser Link ist abgelaufen oder wurde auf einem anderen Gerät verwendet. Fordern Sie einen neuen Link an.",
		"Ce lien a expiré, ou il a été utilisé sur un autre appareil. Demandez un nouveau lien.",
		"Este enlace ha caducado o se usó en otro dispositivo. Pide un enlace nuevo."},
	"This link is not complete. Open it from the e-mail again, or ask for a new one.": {
		"Dieser Link ist unvollständig. Öffnen Sie ihn erneut aus der E-Mail oder fordern Sie einen neuen an.",
		"Ce lien est incomplet. Ouvrez-le de nouveau depuis l'e-mail, ou demandez-en un nouveau.",
		"Este enlace está incompleto. Ábrelo de nuevo desde el correo o pide uno nuevo."},
	"This link has expired or was used already. Ask for a new link.": {
		"Dieser Link ist abgelaufen oder wurde bereits verwendet. Fordern Sie einen neuen Link an.",
		"Ce lien a expiré ou a déjà été utilisé. Demandez un nouveau lien.",
		"Este enlace ha caducado o ya se usó. Pide un enlace nuevo."},
	"This app cannot use passkeys. Sign in with a code.": {
		"Diese App kann keine Passkeys verwenden. Melden Sie sich mit einem Code an.",
		"Cette application ne peut pas utiliser de clés d'accès. Connectez-vous avec un code.",
		"Esta aplicación no puede usar llaves de acceso. Inicia sesión con un código."},
	"This passkey sign-in was not started on this page, or it has expired. Try again.": {
		"Diese Passkey-Anmeldung wurde nicht auf dieser Seite begonnen oder ist abgelaufen. Versuchen Sie es erneut.",
		"Cette connexion par clé d'accès n'a pas été commencée sur cette page, ou elle a expiré. Réessayez.",
		"Este inicio de sesión con llave de acceso no se inició en esta página o ha caducado. Inténtalo de nuevo."},
	"That passkey did not sign you in (it may have been used already, or is not one of this app's). Try again, or sign in with a code.": {
		"Dieser Passkey hat Sie nicht angemeldet (vielleicht wurde er schon verwendet oder gehört nicht zu dieser App). Versuchen Sie es erneut oder melden Sie sich mit einem Code an.",
		"Cette clé d'accès ne vous a pas connecté (elle a peut-être déjà été utilisée, ou n'appartient pas à cette application). Réessayez, ou connectez-vous avec un code.",
		"Esa llave de acceso no ha iniciado tu sesión (puede que ya se haya usado o que no sea de esta aplicación). Inténtalo de nuevo o inicia sesión con un código."},
	"Second factor refused": {
		"Zweiter Faktor abgelehnt",
		"Second facteur refusé",
		"Segundo factor rechazado"},
	"That passkey was not accepted, and this sign-in cannot try again. Start again.": {
		"Dieser Passkey wurde nicht akzeptiert, und diese Anmeldung kann es nicht noch einmal versuchen. Beginnen Sie neu.",
		"Cette clé d'accès n'a pas été acceptée, et cette connexion ne peut pas réessayer. Recommencez.",
		"Esa llave de acceso no se aceptó y este inicio de sesión no puede volver a intentarlo. Empieza de nuevo."},
	"That passkey was not accepted (it may not be one of yours for this app). Try again.": {
		"Dieser Passkey wurde nicht akzeptiert (vielleicht ist er keiner Ihrer Passkeys für diese App). Versuchen Sie es erneut.",
		"Cette clé d'accès n'a pas été acceptée (ce n'est peut-être pas l'une des vôtres pour cette application). Réessayez.",
		"Esa llave de acceso no se aceptó (puede que no sea una de las tuyas para esta aplicación). Inténtalo de nuevo."},
	"Add a passkey to this device": {
		"Diesem Gerät einen Passkey hinzufügen",
		"Ajouter une clé d'accès à cet appareil",
		"Añadir una llave de acceso a este dispositivo"},
	"The passkey was not added. Try again, or continue without one.": {
		"Der Passkey wurde nicht hinzugefügt. Versuchen Sie es erneut oder fahren Sie ohne fort.",
		"La clé d'accès n'a pas été ajoutée. Réessayez, ou continuez sans.",
		"La llave de acceso no se añadió. Inténtalo de nuevo o continúa sin ella."},
	"Not saved: fill in the fields marked below.": {
		"Nicht gespeichert: Füllen Sie die unten markierten Felder aus.",
		"Non enregistré : remplissez les champs signalés ci-dessous.",
		"No se ha guardado: rellena los campos marcados abajo."},
	"Not saved: check the fields marked below.": {
		"Nicht gespeichert: Prüfen Sie die unten markierten Felder.",
		"Non enregistré : vérifiez les champs signalés ci-dessous.",
		"No se ha guardado: revisa los campos marcados abajo."},

	// The passkey script's status lines (hosted.js, from the passkey forms'
	// data-* attributes).
	"Cancelled, or no passkey was available. Try again, or use a code.": {
		"Abgebrochen, oder es war kein Passkey verfügbar. Versuchen Sie es erneut oder verwenden Sie einen Code.",
		"Annulé, ou aucune clé d'accès n'était disponible. Réessayez, ou utilisez un code.",
		"Cancelado, o no había ninguna llave de acceso disponible. Inténtalo de nuevo o usa un código."},
	"This device already has a passkey for your account.": {
		"Dieses Gerät hat bereits einen Passkey für Ihr Konto.",
		"Cet appareil a déjà une clé d'accès pour votre compte.",
		"Este dispositivo ya tiene una llave de acceso para tu cuenta."},
	"This page cannot use this app's passkeys.": {
		"Diese Seite kann die Passkeys dieser App nicht verwenden.",
		"Cette page ne peut pas utiliser les clés d'accès de cette application.",
		"Esta página no puede usar las llaves de acceso de esta aplicación."},
	"The server refused (%s).": {
		"Der Server hat abgelehnt (%s).",
		"Le serveur a refusé (%s).",
		"El servidor lo ha rechazado (%s)."},

	// Account page: its texts, notices and messages (hosted_account.go).
	"You signed in recently: until %s you can change your e-mail address, phone number, passkeys and second factors without confirming it's you again.": {
		"Sie haben sich vor Kurzem angemeldet: Bis %s können Sie Ihre E-Mail-Adresse, Telefonnummer, Passkeys und zweiten Faktoren ändern, ohne erneut zu bestätigen, dass Sie es sind.",
		"Vous vous êtes connecté récemment : jusqu'au %s, vous pouvez modifier votre adresse e-mail, votre numéro de téléphone, vos clés d'accès et vos seconds facteurs sans confirmer de nouveau que c'est vous.",
		"Has iniciado sesión hace poco: hasta el %s puedes cambiar tu correo electrónico, número de teléfono, llaves de acceso y segundos factores sin volver a confirmar que eres tú."},
	"Changes to your e-mail address, phone number, passkeys and second factors will ask you to confirm it's you first.": {
		"Bei Änderungen an Ihrer E-Mail-Adresse, Telefonnummer, Ihren Passkeys und zweiten Faktoren werden Sie zuerst gebeten zu bestätigen, dass Sie es sind.",
		"Pour modifier votre adresse e-mail, votre numéro de téléphone, vos clés d'accès et vos seconds facteurs, il vous sera d'abord demandé de confirmer que c'est vous.",
		"Para cambiar tu correo electrónico, número de teléfono, llaves de acceso y segundos factores, primero se te pedirá que confirmes que eres tú."},
	"New name for %s": {
		"Neuer Name für %s",
		"Nouveau nom pour %s",
		"Nuevo nombre para %s"},
	"Remove the passkey %s": {
		"Passkey %s entfernen",
		"Supprimer la clé d'accès %s",
		"Quitar la llave de acceso %s"},
	"Remove the authenticator app %s": {
		"Authenticator-App %s entfernen",
		"Supprimer l'application d'authentification %s",
		"Quitar la aplicación de autenticación %s"},
	"Authenticator app": {
		"Authenticator-App",
		"Application d'authentification",
		"Aplicación de autenticación"},
	"You have %s unused backup codes.": {
		"Sie haben %s unbenutzte Backup-Codes.",
		"Il vous reste %s codes de secours inutilisés.",
		"Tienes %s códigos de respaldo sin usar."},
	"You have %s unused backup code.": {
		"Sie haben %s unbenutzten Backup-Code.",
		"Il vous reste %s code de secours inutilisé.",
		"Tienes %s código de respaldo sin usar."},
	"You have no backup codes.": {
		"Sie haben keine Backup-Codes.",
		"Vous n'avez aucun code de secours.",
		"No tienes códigos de respaldo."},
	"Each code signs you in once when you cannot use your authenticator app or passkey.": {
		"Jeder Code meldet Sie einmal an, wenn Sie Ihre Authenticator-App oder Ihren Passkey nicht verwenden können.",
		"Chaque code vous connecte une fois lorsque vous ne pouvez pas utiliser votre application d'authentification ou votre clé d'accès.",
		"Cada código inicia tu sesión una vez cuando no puedes usar tu aplicación de autenticación ni tu llave de acceso."},
	"Default second factor": {
		"Standardmäßiger zweiter Faktor",
		"Second facteur par défaut",
		"Segundo factor predeterminado"},
	"A sign-in asks for your default second factor first.": {
		"Bei einer Anmeldung wird zuerst nach Ihrem standardmäßigen zweiten Faktor gefragt.",
		"Une connexion demande d'abord votre second facteur par défaut.",
		"Al iniciar sesión se te pide primero tu segundo factor predeterminado."},
	"Type": {
		"Art",
		"Type",
		"Tipo"},
	"Passkey": {
		"Passkey",
		"Clé d'accès",
		"Llave de acceso"},
	"Make default": {
		"Als Standard festlegen",
		"Définir par défaut",
		"Establecer como predeterminado"},
	"Make default: %s": {
		"Als Standard festlegen: %s",
		"Définir par défaut : %s",
		"Establecer como predeterminado: %s"},
	"Default second factor changed: sign-ins ask for it first.": {
		"Standardmäßiger zweiter Faktor geändert: Bei der Anmeldung wird zuerst nach ihm gefragt.",
		"Second facteur par défaut modifié : il vous sera demandé en premier à la connexion.",
		"Segundo factor predeterminado cambiado: se te pedirá primero al iniciar sesión."},
	"You have no such second factor.": {
		"Sie haben keinen solchen zweiten Faktor.",
		"Vous n'avez pas ce second facteur.",
		"No tienes ese segundo factor."},
	"A sign-in request is waiting for your approval.": {
		"Eine Anmeldeanfrage wartet auf Ihre Bestätigung.",
		"Une demande de connexion attend votre approbation.",
		"Una solicitud de inicio de sesión espera tu aprobación."},
	"Show it": {
		"Anzeigen",
		"L'afficher",
		"Mostrarla"},
	"Make new backup codes (the old ones stop working)": {
		"Neue Backup-Codes erstellen (die alten funktionieren dann nicht mehr)",
		"Créer de nouveaux codes de secours (les anciens ne fonctionneront plus)",
		"Crear códigos de respaldo nuevos (los anteriores dejarán de funcionar)"},
	"Unlink your %s account": {
		"Ihr %s-Konto trennen",
		"Dissocier votre compte %s",
		"Desvincular tu cuenta de %s"},
	"Sign out here (%s)": {
		"Hier abmelden (%s)",
		"Se déconnecter ici (%s)",
		"Cerrar sesión aquí (%s)"},
	"Revoke %s, signed in %s": {
		"Sitzung auf %s widerrufen, angemeldet am %s",
		"Révoquer la session sur %s, ouverte le %s",
		"Revocar la sesión en %s, iniciada el %s"},
	"Signed out": {
		"Abgemeldet",
		"Déconnecté",
		"Sesión cerrada"},
	"You are signed out. Sign in again.": {
		"Sie sind abgemeldet. Melden Sie sich erneut an.",
		"Vous êtes déconnecté. Reconnectez-vous.",
		"Has cerrado la sesión. Vuelve a iniciar sesión."},
	"This form was not sent from your account page (its CSRF token is missing or wrong). Reload the page and try again.": {
		"Dieses Formular wurde nicht von Ihrer Kontoseite gesendet (sein CSRF-Token fehlt oder ist falsch). Laden Sie die Seite neu und versuchen Sie es erneut.",
		"Ce formulaire n'a pas été envoyé depuis la page de votre compte (son jeton CSRF manque ou est faux). Rechargez la page et réessayez.",
		"Este formulario no se envió desde la página de tu cuenta (falta su token CSRF o es incorrecto). Recarga la página e inténtalo de nuevo."},
	"Session revoked: that device is signed out.": {
		"Sitzung widerrufen: Das Gerät ist abgemeldet.",
		"Session révoquée : cet appareil est déconnecté.",
		"Sesión revocada: se ha cerrado la sesión en ese dispositivo."},
	"Profile saved.": {
		"Profil gespeichert.",
		"Profil enregistré.",
		"Perfil guardado."},
	"Passkey added.": {
		"Passkey hinzugefügt.",
		"Clé d'accès ajoutée.",
		"Llave de acceso añadida."},
	"Passkey renamed.": {
		"Passkey umbenannt.",
		"Clé d'accès renommée.",
		"Llave de acceso renombrada."},
	"Passkey removed: it no longer signs you in.": {
		"Passkey entfernt: Er meldet Sie nicht mehr an.",
		"Clé d'accès supprimée : elle ne vous connecte plus.",
		"Llave de acceso quitada: ya no te permite iniciar sesión."},
	"Authenticator app added: sign-ins will ask for its code.": {
		"Authenticator-App hinzugefügt: Bei der Anmeldung wird nach ihrem Code gefragt.",
		"Application d'authentification ajoutée : son code vous sera demandé à la connexion.",
		"Aplicación de autenticación añadida: al iniciar sesión se te pedirá su código."},
	"Authenticator app removed.": {
		"Authenticator-App entfernt.",
		"Application d'authentification supprimée.",
		"Aplicación de autenticación quitada."},
	"Account unlinked: it no longer signs you in here.": {
		"Konto getrennt: Sie können sich damit hier nicht mehr anmelden.",
		"Compte dissocié : il ne vous connecte plus ici.",
		"Cuenta desvinculada: ya no te permite iniciar sesión aquí."},
	"Saved: your new address is verified and in use.": {
		"Gespeichert: Ihre neue Adresse ist bestätigt und wird verwendet.",
		"Enregistré : votre nouvelle adresse est vérifiée et utilisée.",
		"Guardado: tu nueva dirección está verificada y en uso."},
	"Thank you, that is confirmed. Make your change now.": {
		"Danke, das ist bestätigt. Nehmen Sie Ihre Änderung jetzt vor.",
		"Merci, c'est confirmé. Effectuez maintenant votre modification.",
		"Gracias, queda confirmado. Haz ahora tu cambio."},
	"For your security, this change needs a sign-in in the last %s minutes. Confirm it's you, then make the change again.": {
		"Zu Ihrer Sicherheit erfordert diese Änderung eine Anmeldung in den letzten %s Minuten. Bestätigen Sie, dass Sie es sind, und nehmen Sie die Änderung dann erneut vor.",
		"Pour votre sécurité, cette modification demande une connexion datant de moins de %s minutes. Confirmez que c'est vous, puis refaites la modification.",
		"Por tu seguridad, este cambio requiere haber iniciado sesión en los últimos %s minutos. Confirma que eres tú y vuelve a hacer el cambio."},
	"This is your only way to sign in. Add a passkey, or an e-mail address or phone number this app signs in with, before you unlink it.": {
		"Dies ist Ihre einzige Möglichkeit, sich anzumelden. Fügen Sie einen Passkey oder eine E-Mail-Adresse oder Telefonnummer hinzu, mit der Sie sich bei dieser App anmelden können, bevor Sie es trennen.",
		"C'est votre seul moyen de vous connecter. Ajoutez une clé d'accès, ou une adresse e-mail ou un numéro de téléphone qui permet de se connecter à cette application, avant de le dissocier.",
		"Es tu única forma de iniciar sesión. Añade una llave de acceso, o un correo electrónico o número de teléfono con el que se pueda iniciar sesión en esta aplicación, antes de desvincularla."},
	"You have no such passkey.": {
		"Sie haben keinen solchen Passkey.",
		"Vous n'avez pas cette clé d'accès.",
		"No tienes esa llave de acceso."},
	"You have no such authenticator app waiting to be confirmed.": {
		"Sie haben keine solche Authenticator-App, die auf Bestätigung wartet.",
		"Vous n'avez pas cette application d'authentification en attente de confirmation.",
		"No tienes esa aplicación de autenticación pendiente de confirmar."},
	"You have no such authenticator app.": {
		"Sie haben keine solche Authenticator-App.",
		"Vous n'avez pas cette application d'authentification.",
		"No tienes esa aplicación de autenticación."},
	"You have no such linked account.": {
		"Sie haben kein solches verknüpftes Konto.",
		"Vous n'avez pas ce compte lié.",
		"No tienes esa cuenta vinculada."},
	"You have no such session.": {
		"Sie haben keine solche Sitzung.",
		"Vous n'avez pas cette session.",
		"No tienes esa sesión."},
	"This app does not let you edit your profile here.": {
		"Diese App erlaubt Ihnen nicht, Ihr Profil hier zu bearbeiten.",
		"Cette application ne vous permet pas de modifier votre profil ici.",
		"Esta aplicación no te permite editar tu perfil aquí."},
	"No passkey was made: your browser sent no answer. Try again.": {
		"Es wurde kein Passkey erstellt: Ihr Browser hat keine Antwort gesendet. Versuchen Sie es erneut.",
		"Aucune clé d'accès n'a été créée : votre navigateur n'a envoyé aucune réponse. Réessayez.",
		"No se ha creado ninguna llave de acceso: tu navegador no envió ninguna respuesta. Inténtalo de nuevo."},
	"Choose an e-mail address or a phone number to change.": {
		"Wählen Sie eine E-Mail-Adresse oder eine Telefonnummer, die Sie ändern möchten.",
		"Choisissez une adresse e-mail ou un numéro de téléphone à modifier.",
		"Elige un correo electrónico o un número de teléfono para cambiar."},
	"This app does not sign in with that kind of address.": {
		"Bei dieser App meldet man sich nicht mit dieser Art von Adresse an.",
		"Cette application ne permet pas de se connecter avec ce type d'adresse.",
		"Esta aplicación no permite iniciar sesión con ese tipo de dirección."},
	"This change has expired or was started elsewhere. Start again.": {
		"Diese Änderung ist abgelaufen oder wurde anderswo begonnen. Beginnen Sie neu.",
		"Cette modification a expiré ou a été commencée ailleurs. Recommencez.",
		"Este cambio ha caducado o se inició en otro lugar. Empieza de nuevo."},
	"This confirmation has expired or was started elsewhere. Start again.": {
		"Diese Bestätigung ist abgelaufen oder wurde anderswo begonnen. Beginnen Sie neu.",
		"Cette confirmation a expiré ou a été commencée ailleurs. Recommencez.",
		"Esta confirmación ha caducado o se inició en otro lugar. Empieza de nuevo."},
	"Your browser sent no readable answer. Start again.": {
		"Ihr Browser hat keine lesbare Antwort gesendet. Beginnen Sie neu.",
		"Votre navigateur n'a envoyé aucune réponse lisible. Recommencez.",
		"Tu navegador no envió una respuesta legible. Empieza de nuevo."},

	// The account page's own pages (hosted_account_*.html), and the passkey
	// script's status lines there (hosted_account.js).
	"Keep these codes somewhere safe, such as a password manager. Each one signs you in once when you cannot use your authenticator app or passkey. This is the only time they are shown; any codes you had before no longer work.": {
		"Bewahren Sie diese Codes an einem sicheren Ort auf, etwa in einem Passwort-Manager. Jeder meldet Sie einmal an, wenn Sie Ihre Authenticator-App oder Ihren Passkey nicht verwenden können. Sie werden nur dieses eine Mal angezeigt; Ihre bisherigen Codes funktionieren nicht mehr.",
		"Conservez ces codes en lieu sûr, par exemple dans un gestionnaire de mots de passe. Chacun vous connecte une fois lorsque vous ne pouvez pas utiliser votre application d'authentification ou votre clé d'accès. Ils ne sont affichés que cette fois-ci ; les codes que vous aviez auparavant ne fonctionnent plus.",
		"Guarda estos códigos en un lugar seguro, como un gestor de contraseñas. Cada uno inicia tu sesión una vez cuando no puedes usar tu aplicación de autenticación ni tu llave de acceso. Solo se muestran esta vez; los códigos que tenías antes ya no funcionan."},
	"We sent a code to <strong>%s</strong>. Enter it to make this phone number yours here. Your old one keeps working until then, and gets a notice of the change.": {
		"Wir haben einen Code an <strong>%s</strong> gesendet. Geben Sie ihn ein, um diese Telefonnummer hier zu Ihrer zu machen. Ihre bisherige funktioniert bis dahin weiter und erhält eine Nachricht über die Änderung.",
		"Nous avons envoyé un code au <strong>%s</strong>. Saisissez-le pour faire de ce numéro de téléphone le vôtre ici. L'ancien continue de fonctionner jusque-là et recevra un avis de la modification.",
		"Hemos enviado un código al <strong>%s</strong>. Introdúcelo para que este número de teléfono sea el tuyo aquí. El anterior sigue funcionando hasta entonces y recibirá un aviso del cambio."},
	"We sent a code to <strong>%s</strong>. Enter it to make this e-mail address yours here. Your old one keeps working until then, and gets a notice of the change.": {
		"Wir haben einen Code an <strong>%s</strong> gesendet. Geben Sie ihn ein, um diese E-Mail-Adresse hier zu Ihrer zu machen. Ihre bisherige funktioniert bis dahin weiter und erhält eine Nachricht über die Änderung.",
		"Nous avons envoyé un code à <strong>%s</strong>. Saisissez-le pour faire de cette adresse e-mail la vôtre ici. L'ancienne continue de fonctionner jusque-là et recevra un avis de la modification.",
		"Hemos enviado un código a <strong>%s</strong>. Introdúcelo para que este correo electrónico sea el tuyo aquí. El anterior sigue funcionando hasta entonces y recibirá un aviso del cambio."},
	"Your browser will ask you to create a passkey for this account, with your device's screen lock or a security key.": {
		"Ihr Browser bittet Sie gleich, einen Passkey für dieses Konto zu erstellen, mit der Bildschirmsperre Ihres Geräts oder einem Sicherheitsschlüssel.",
		"Votre navigateur va vous demander de créer une clé d'accès pour ce compte, avec le verrouillage de l'écran de votre appareil ou une clé de sécurité.",
		"Tu navegador te pedirá que crees una llave de acceso para esta cuenta, con el bloqueo de pantalla de tu dispositivo o una llave de seguridad."},
	"Create the passkey": {
		"Passkey erstellen",
		"Créer la clé d'accès",
		"Crear la llave de acceso"},
	"Adding a passkey needs JavaScript: your browser makes the passkey.": {
		"Zum Hinzufügen eines Passkeys wird JavaScript benötigt: Ihr Browser erstellt den Passkey.",
		"Ajouter une clé d'accès nécessite JavaScript : c'est votre navigateur qui la crée.",
		"Añadir una llave de acceso requiere JavaScript: es tu navegador quien la crea."},
	"This browser cannot use passkeys.": {
		"Dieser Browser kann keine Passkeys verwenden.",
		"Ce navigateur ne peut pas utiliser de clés d'accès.",
		"Este navegador no puede usar llaves de acceso."},
	"Cancelled, or no passkey was used.": {
		"Abgebrochen, oder es wurde kein Passkey verwendet.",
		"Annulé, ou aucune clé d'accès n'a été utilisée.",
		"Cancelado, o no se usó ninguna llave de acceso."},
	"This device already has a passkey for this account.": {
		"Dieses Gerät hat bereits einen Passkey für dieses Konto.",
		"Cet appareil a déjà une clé d'accès pour ce compte.",
		"Este dispositivo ya tiene una llave de acceso para esta cuenta."},
	"Use your passkey to confirm it's you.": {
		"Bestätigen Sie mit Ihrem Passkey, dass Sie es sind.",
		"Utilisez votre clé d'accès pour confirmer que c'est vous.",
		"Usa tu llave de acceso para confirmar que eres tú."},
	"Use my passkey": {
		"Meinen Passkey verwenden",
		"Utiliser ma clé d'accès",
		"Usar mi llave de acceso"},
	"A passkey needs JavaScript.": {
		"Ein Passkey benötigt JavaScript.",
		"Une clé d'accès nécessite JavaScript.",
		"Una llave de acceso requiere JavaScript."},
	"The code from your authenticator app": {
		"Der Code aus Ihrer Authenticator-App",
		"Le code de votre application d'authentification",
		"El código de tu aplicación de autenticación"},
	"The code we sent to %s": {
		"Der Code, den wir an %s gesendet haben",
		"Le code envoyé à %s",
		"El código que enviamos a %s"},
	"Some changes need you to have signed in within the last %s minutes. Confirm it's you one of these ways, then make the change again.": {
		"Manche Änderungen setzen voraus, dass Sie sich in den letzten %s Minuten angemeldet haben. Bestätigen Sie auf eine dieser Arten, dass Sie es sind, und nehmen Sie die Änderung dann erneut vor.",
		"Certaines modifications demandent une connexion datant de moins de %s minutes. Confirmez que c'est vous de l'une de ces façons, puis refaites la modification.",
		"Algunos cambios requieren haber iniciado sesión en los últimos %s minutos. Confirma que eres tú de una de estas formas y vuelve a hacer el cambio."},
	"Or <a href=\"%s\">sign in again</a>. You will come back here.": {
		"Oder <a href=\"%s\">melden Sie sich erneut an</a>. Sie kommen dann hierher zurück.",
		"Ou <a href=\"%s\">reconnectez-vous</a>. Vous reviendrez ici.",
		"O <a href=\"%s\">vuelve a iniciar sesión</a>. Volverás aquí."},
	"A code from your authenticator app": {
		"Ein Code aus Ihrer Authenticator-App",
		"Un code de votre application d'authentification",
		"Un código de tu aplicación de autenticación"},
	"Your passkey": {
		"Ihr Passkey",
		"Votre clé d'accès",
		"Tu llave de acceso"},
	"Approve on another device where you're signed in": {
		"Auf einem anderen Gerät bestätigen, auf dem Sie angemeldet sind",
		"Approuver sur un autre appareil où vous êtes connecté",
		"Aprobar en otro dispositivo en el que hayas iniciado sesión"},
	"A code by e-mail to %s": {
		"Ein Code per E-Mail an %s",
		"Un code par e-mail à %s",
		"Un código por correo a %s"},
	"A code by text message to %s": {
		"Ein Code per SMS an %s",
		"Un code par SMS au %s",
		"Un código por SMS al %s"},
	"One of your backup codes": {
		"Einer Ihrer Backup-Codes",
		"L'un de vos codes de secours",
		"Uno de tus códigos de respaldo"},
	"Scan this QR code with your authenticator app, or enter the key by hand. This is the only time it is shown.": {
		"Scannen Sie diesen QR-Code mit Ihrer Authenticator-App oder geben Sie den Schlüssel von Hand ein. Er wird nur dieses eine Mal angezeigt.",
		"Scannez ce code QR avec votre application d'authentification, ou saisissez la clé à la main. Elle n'est affichée que cette fois-ci.",
		"Escanea este código QR con tu aplicación de autenticación o introduce la clave a mano. Solo se muestra esta vez."},
	"QR code of the key for your authenticator app": {
		"QR-Code des Schlüssels für Ihre Authenticator-App",
		"Code QR de la clé pour votre application d'authentification",
		"Código QR de la clave para tu aplicación de autenticación"},
	"Key:": {
		"Schlüssel:",
		"Clé :",
		"Clave:"},
	"Setup link": {
		"Einrichtungslink",
		"Lien de configuration",
		"Enlace de configuración"},
	"Enter the code your authenticator app shows now for this account.": {
		"Geben Sie den Code ein, den Ihre Authenticator-App jetzt für dieses Konto anzeigt.",
		"Saisissez le code que votre application d'authentification affiche maintenant pour ce compte.",
		"Introduce el código que tu aplicación de autenticación muestra ahora para esta cuenta."},
	"(nothing is set up until a code confirms it)": {
		"(eingerichtet wird erst, wenn ein Code es bestätigt)",
		"(rien n'est configuré tant qu'un code ne l'a pas confirmé)",
		"(no se configura nada hasta que un código lo confirme)"},

	// Error pages' titles: http.StatusText of the API's status (hostedFail).
	"Not Found": {
		"Nicht gefunden",
		"Introuvable",
		"No encontrado"},
	"Conflict": {
		"Konflikt",
		"Conflit",
		"Conflicto"},
	"Gone": {
		"Nicht mehr verfügbar",
		"Plus disponible",
		"Ya no disponible"},
	"Unprocessable Entity": {
		"Nicht verarbeitbar",
		"Requête non traitable",
		"No se puede procesar"},
	"Request Entity Too Large": {
		"Anfrage zu groß",
		"Requête trop volumineuse",
		"Solicitud demasiado grande"},
	"Service Unavailable": {
		"Dienst nicht verfügbar",
		"Service indisponible",
		"Servicio no disponible"},

	// The API's error texts (httpapi's errorTable, through h.Describe) that the
	// pages show as they are, for the refusals people meet there. They are
	// translated only while the API's text is this one: a text changed there
	// shows in English.
	"Invalid identifier: send a valid e-mail address or an international phone number": {
		"Ungültige Angabe: Geben Sie eine gültige E-Mail-Adresse oder eine internationale Telefonnummer ein",
		"Identifiant invalide : saisissez une adresse e-mail valide ou un numéro de téléphone international",
		"Identificador no válido: introduce un correo electrónico válido o un número de teléfono internacional"},
	"This app does not accept that kind of identifier": {
		"Diese App akzeptiert diese Art von Angabe nicht",
		"Cette application n'accepte pas ce type d'identifiant",
		"Esta aplicación no acepta ese tipo de identificador"},
	"Too many wrong codes: request a new code later": {
		"Zu viele falsche Codes: Fordern Sie später einen neuen Code an",
		"Trop de codes erronés : demandez un nouveau code plus tard",
		"Demasiados códigos incorrectos: pide un código nuevo más tarde"},
	"Too many wrong codes: sign-in by code is locked until you sign in another way, such as a magic link": {
		"Zu viele falsche Codes: Die Anmeldung per Code ist gesperrt, bis Sie sich auf andere Weise anmelden, etwa mit einem Magic Link",
		"Trop de codes erronés : la connexion par code est bloquée jusqu'à ce que vous vous connectiez autrement, par exemple avec un lien magique",
		"Demasiados códigos incorrectos: el inicio de sesión con código está bloqueado hasta que inicies sesión de otra forma, como con un enlace mágico"},
	"Too many wrong codes for this second factor: use another one": {
		"Zu viele falsche Codes für diesen zweiten Faktor: Verwenden Sie einen anderen",
		"Trop de codes erronés pour ce second facteur : utilisez-en un autre",
		"Demasiados códigos incorrectos para este segundo factor: usa otro"},
	"This code was used already: wait for the next code of your authenticator app": {
		"Dieser Code wurde bereits verwendet: Warten Sie auf den nächsten Code Ihrer Authenticator-App",
		"Ce code a déjà été utilisé : attendez le prochain code de votre application d'authentification",
		"Este código ya se usó: espera al siguiente código de tu aplicación de autenticación"},
	"Another user has this e-mail address or phone number": {
		"Ein anderer Benutzer hat diese E-Mail-Adresse oder Telefonnummer",
		"Un autre utilisateur a cette adresse e-mail ou ce numéro de téléphone",
		"Otro usuario tiene este correo electrónico o número de teléfono"},
	"This app does not send SMS to this phone number's country": {
		"Diese App sendet keine SMS in das Land dieser Telefonnummer",
		"Cette application n'envoie pas de SMS vers le pays de ce numéro de téléphone",
		"Esta aplicación no envía SMS al país de este número de teléfono"},
	"This phone number cannot get codes by SMS (a landline, premium-rate, toll-free or shared-cost number): use a mobile number": {
		"Diese Telefonnummer kann keine Codes per SMS empfangen (Festnetz-, Premium-, gebührenfreie oder Shared-Cost-Nummer): Verwenden Sie eine Mobilnummer",
		"Ce numéro de téléphone ne peut pas recevoir de codes par SMS (numéro fixe, surtaxé, gratuit ou à coût partagé) : utilisez un numéro mobile",
		"Este número de teléfono no puede recibir códigos por SMS (fijo, de tarificación adicional, gratuito o de coste compartido): usa un número móvil"},
	"This app has sent as many SMS today as it may: try again later or use e-mail": {
		"Diese App hat heute so viele SMS gesendet wie erlaubt: Versuchen Sie es später erneut oder verwenden Sie E-Mail",
		"Cette application a envoyé aujourd'hui autant de SMS qu'elle le peut : réessayez plus tard ou utilisez l'e-mail",
		"Esta aplicación ya ha enviado hoy todos los SMS que puede: inténtalo más tarde o usa el correo electrónico"},
	"Too many SMS to numbers like this one: try again later": {
		"Zu viele SMS an ähnliche Nummern: Versuchen Sie es später erneut",
		"Trop de SMS vers des numéros semblables à celui-ci : réessayez plus tard",
		"Demasiados SMS a números como este: inténtalo más tarde"},
	"Service temporarily unavailable": {
		"Dienst vorübergehend nicht verfügbar",
		"Service temporairement indisponible",
		"Servicio no disponible temporalmente"},
	"The request took too long: try again shortly": {
		"Die Anfrage hat zu lange gedauert: Versuchen Sie es gleich erneut",
		"La requête a pris trop de temps : réessayez dans un instant",
		"La solicitud tardó demasiado: vuelve a intentarlo en un momento"},
	"internal error": {
		"interner Fehler",
		"erreur interne",
		"error interno"},
	"An authenticator app or a passkey cannot confirm its own removal. Confirm it's you another way, then remove it again.": {
		"Eine Authenticator-App oder ein Passkey kann das eigene Entfernen nicht bestätigen. Bestätigen Sie auf andere Weise, dass Sie es sind, und entfernen Sie ihn dann erneut.",
		"Une application d'authentification ou une clé d'accès ne peut pas confirmer sa propre suppression. Confirmez que c'est vous d'une autre façon, puis supprimez-la à nouveau.",
		"Una aplicación de autenticación o una llave de acceso no puede confirmar su propia eliminación. Confirma que eres tú de otra forma y vuelve a eliminarla."},
	"Too many wrong codes: this code no longer works. Ask for a new one. (After many wrong codes from your network, new ones are refused for up to an hour.)": {
		"Zu viele falsche Codes: Dieser Code gilt nicht mehr. Fordern Sie einen neuen an. (Nach vielen falschen Codes aus Ihrem Netzwerk werden neue bis zu einer Stunde lang abgelehnt.)",
		"Trop de codes erronés : ce code ne fonctionne plus. Demandez-en un nouveau. (Après de nombreux codes erronés depuis votre réseau, les nouveaux sont refusés pendant une heure au plus.)",
		"Demasiados códigos incorrectos: este código ya no sirve. Pide uno nuevo. (Tras muchos códigos incorrectos desde tu red, los nuevos se rechazan durante una hora como máximo.)"},
	"The device that approved signed in too long ago to confirm it's you. Confirm it another way.": {
		"Das Gerät, das bestätigt hat, wurde vor zu langer Zeit angemeldet, um zu bestätigen, dass Sie es sind. Bestätigen Sie es auf andere Weise.",
		"L'appareil qui a approuvé s'est connecté il y a trop longtemps pour confirmer que c'est vous. Confirmez-le d'une autre façon.",
		"El dispositivo que lo aprobó inició sesión hace demasiado tiempo para confirmar que eres tú. Confírmalo de otra forma."},
	"The code has not been sent yet. Once the wait is over, ask for it below.": {
		"Der Code wurde noch nicht gesendet. Fordern Sie ihn unten an, sobald die Wartezeit vorbei ist.",
		"Le code n'a pas encore été envoyé. Une fois l'attente terminée, demandez-le ci-dessous.",
		"El código aún no se ha enviado. Cuando termine la espera, pídelo abajo."},
	"Send the code": {"Code senden", "Envoyer le code", "Enviar el código"},
	"The device that approved has signed out since, so its approval no longer counts. Start again.": {
		"Das Gerät, das bestätigt hat, wurde inzwischen abgemeldet, daher zählt seine Bestätigung nicht mehr. Beginnen Sie von vorn.",
		"L'appareil qui a approuvé s'est déconnecté depuis : son approbation ne compte plus. Recommencez.",
		"El dispositivo que lo aprobó ha cerrado sesión desde entonces, así que su aprobación ya no cuenta. Vuelve a empezar."},
	"The device that approved has signed out since, so its approval no longer counts. Ask again, or choose another way.": {
		"Das Gerät, das bestätigt hat, wurde inzwischen abgemeldet, daher zählt seine Bestätigung nicht mehr. Fragen Sie erneut oder wählen Sie einen anderen Weg.",
		"L'appareil qui a approuvé s'est déconnecté depuis : son approbation ne compte plus. Redemandez, ou choisissez un autre moyen.",
		"El dispositivo que lo aprobó ha cerrado sesión desde entonces, así que su aprobación ya no cuenta. Vuelve a preguntar o elige otra forma."},
}

// userMeta reads a user's metadata (a JSON object) for hostedLang.
func userMeta(b []byte) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(b, &m) // stored JSON object; anything else has no locale
	return m
}
