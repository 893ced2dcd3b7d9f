package courier

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// NormalizeLocale returns a language tag in its usual case ("fr-CA",
// "zh-Hant-TW", "de"), or "" when tag is not one: a 2-3 letter language,
// then subtags of 2-8 letters or digits, at most 35 characters.
func NormalizeLocale(tag string) string {
	tag = strings.ReplaceAll(strings.TrimSpace(tag), "_", "-")
	if tag == "" || len(tag) > 35 {
		return ""
	}
	parts := strings.Split(tag, "-")
	for i, p := range parts {
		if !alnum(p) || (i == 0 && (len(p) < 2 || len(p) > 3 || !alpha(p))) || len(p) < 1 || len(p) > 8 {
			return ""
		}
		switch {
		case i == 0:
			parts[i] = strings.ToLower(p)
		case len(p) == 2 && alpha(p):
			parts[i] = strings.ToUpper(p) // region
		case len(p) == 4 && alpha(p):
			parts[i] = strings.ToUpper(p[:1]) + strings.ToLower(p[1:]) // script
		default:
			parts[i] = strings.ToLower(p)
		}
	}
	return strings.Join(parts, "-")
}

func alpha(s string) bool {
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return true
}

func alnum(s string) bool {
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}

// BaseLanguage is the language of a tag: "fr" for "fr-CA".
func BaseLanguage(tag string) string {
	base, _, _ := strings.Cut(tag, "-")
	return base
}

// Candidates is the order in which locales are tried for prefs: each
// preferred locale, each followed by its base language, then DefaultLocale;
// invalid tags are skipped and nothing appears twice.
func Candidates(prefs []string) []string {
	out := make([]string, 0, 2*len(prefs)+1)
	add := func(l string) {
		for _, x := range out {
			if x == l {
				return
			}
		}
		out = append(out, l)
	}
	for _, p := range prefs {
		if p = NormalizeLocale(p); p == "" {
			continue
		}
		add(p)
		add(BaseLanguage(p))
	}
	add(DefaultLocale)
	return out
}

// ParseAcceptLanguage returns the languages of an Accept-Language header,
// most preferred first (by q-value, then by order): "*", q=0 and malformed
// entries are dropped, at most 10 are kept.
func ParseAcceptLanguage(h string) []string {
	type entry struct {
		tag string
		q   float64
		i   int
	}
	var list []entry
	for i, part := range strings.Split(h, ",") {
		if i >= 32 {
			break
		}
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || f < 0 || f > 1 {
					f = 0
				}
				q = f
			}
		}
		tag = NormalizeLocale(tag)
		if tag == "" || q <= 0 {
			continue
		}
		list = append(list, entry{tag, q, i})
	}
	sort.SliceStable(list, func(a, b int) bool { return list[a].q > list[b].q })
	out := make([]string, 0, len(list))
	for _, e := range list {
		if len(out) == 10 {
			break
		}
		out = append(out, e.tag)
	}
	return out
}

// durationWords are the units of Duration per language: singular and plural
// of day, hour and minute, in the form that follows "in" ("in 7 Tagen").
var durationWords = map[string][6]string{
	"en": {"day", "days", "hour", "hours", "minute", "minutes"},
	"de": {"Tag", "Tagen", "Stunde", "Stunden", "Minute", "Minuten"},
	"fr": {"jour", "jours", "heure", "heures", "minute", "minutes"},
	"es": {"día", "días", "hora", "horas", "minuto", "minutos"},
}

// Duration puts d into words of locale's language ("10 minutes", "7 Tagen"),
// in whole days, hours or minutes; languages without words get English.
func Duration(locale string, d time.Duration) string {
	w, ok := durationWords[BaseLanguage(locale)]
	if !ok {
		w = durationWords[DefaultLocale]
	}
	n, unit := int(d/time.Minute), 4
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		n, unit = int(d/(24*time.Hour)), 0
	case d >= time.Hour && d%time.Hour == 0:
		n, unit = int(d/time.Hour), 2
	}
	n = max(n, 1)
	if n != 1 {
		unit++
	}
	return strconv.Itoa(n) + " " + w[unit]
}

// NoticeKind is what a security notice is about.
type NoticeKind string

// The security notices.
const (
	NoticeTOTPAdded          NoticeKind = "totp_added"
	NoticeTOTPRemoved        NoticeKind = "totp_removed"
	NoticeBackupCodesCreated NoticeKind = "backup_codes_created"
	NoticeBackupCodeUsed     NoticeKind = "backup_code_used" // Detail: how many are left
	NoticePasskeyAdded       NoticeKind = "passkey_added"    // Detail: the passkey's name
	NoticePasskeyRemoved     NoticeKind = "passkey_removed"  // Detail: the passkey's name
	NoticeEmailChanged       NoticeKind = "email_changed"    // Detail: the new address, masked
	NoticePhoneChanged       NoticeKind = "phone_changed"    // Detail: the new number, masked
	NoticeMFAReset           NoticeKind = "mfa_reset"        // an administrator removed the second factors
)

// Notice is one security notice: its kind and the detail its sentence shows.
type Notice struct {
	Kind   NoticeKind
	Detail string
}

// noticeTexts are the sentences of security notices per language; {detail}
// stands for Notice.Detail.
var noticeTexts = map[string]map[NoticeKind]string{
	"en": {
		NoticeTOTPAdded:          "An authenticator app was added to your account as a second sign-in step.",
		NoticeTOTPRemoved:        "An authenticator app was removed from your account's sign-in steps.",
		NoticeMFAReset:           "An administrator removed your account's authenticator apps and backup codes; set up a second factor again when you are asked to.",
		NoticeBackupCodesCreated: "New backup codes were made for your account; any earlier ones no longer work.",
		NoticeBackupCodeUsed:     "A backup code was used for your account; unused backup codes left: {detail}.",
		NoticePasskeyAdded:       "A passkey ({detail}) was added to your account.",
		NoticePasskeyRemoved:     "A passkey ({detail}) was removed from your account.",
		NoticeEmailChanged:       "The e-mail address of your account was changed from this address to {detail}.",
		NoticePhoneChanged:       "The phone number of your account was changed from this number to {detail}.",
	},
	"de": {
		NoticeTOTPAdded:          "Ihrem Konto wurde eine Authenticator-App als zweiter Anmeldeschritt hinzugefügt.",
		NoticeTOTPRemoved:        "Eine Authenticator-App wurde aus den Anmeldeschritten Ihres Kontos entfernt.",
		NoticeMFAReset:           "Ein Administrator hat die Authenticator-Apps und Backup-Codes Ihres Kontos entfernt; richten Sie einen zweiten Faktor erneut ein, wenn Sie dazu aufgefordert werden.",
		NoticeBackupCodesCreated: "Für Ihr Konto wurden neue Backup-Codes erstellt; frühere Codes funktionieren nicht mehr.",
		NoticeBackupCodeUsed:     "Für Ihr Konto wurde ein Backup-Code verwendet; verbleibende ungenutzte Backup-Codes: {detail}.",
		NoticePasskeyAdded:       "Ihrem Konto wurde ein Passkey ({detail}) hinzugefügt.",
		NoticePasskeyRemoved:     "Ein Passkey ({detail}) wurde aus Ihrem Konto entfernt.",
		NoticeEmailChanged:       "Die E-Mail-Adresse Ihres Kontos wurde von dieser Adresse in {detail} geändert.",
		NoticePhoneChanged:       "Die Telefonnummer Ihres Kontos wurde von dieser Nummer in {detail} geändert.",
	},
	"fr": {
		NoticeTOTPAdded:          "Une application d'authentification a été ajoutée à votre compte comme seconde étape de connexion.",
		NoticeTOTPRemoved:        "Une application d'authentification a été retirée des étapes de connexion de votre compte.",
		NoticeMFAReset:           "Un administrateur a retiré les applications d'authentification et les codes de secours de votre compte ; configurez à nouveau un second facteur lorsque cela vous sera demandé.",
		NoticeBackupCodesCreated: "De nouveaux codes de secours ont été générés pour votre compte ; les anciens ne fonctionnent plus.",
		NoticeBackupCodeUsed:     "Un code de secours a été utilisé pour votre compte ; codes de secours inutilisés restants : {detail}.",
		NoticePasskeyAdded:       "Une clé d'accès ({detail}) a été ajoutée à votre compte.",
		NoticePasskeyRemoved:     "Une clé d'accès ({detail}) a été supprimée de votre compte.",
		NoticeEmailChanged:       "L'adresse e-mail de votre compte a été remplacée par {detail}.",
		NoticePhoneChanged:       "Le numéro de téléphone de votre compte a été remplacé par {detail}.",
	},
	"es": {
		NoticeTOTPAdded:          "Se ha añadido una aplicación de autenticación a tu cuenta como segundo paso de inicio de sesión.",
		NoticeTOTPRemoved:        "Se ha quitado una aplicación de autenticación de los pasos de inicio de sesión de tu cuenta.",
		NoticeMFAReset:           "Un administrador ha quitado las aplicaciones de autenticación y los códigos de respaldo de tu cuenta; vuelve a configurar un segundo factor cuando se te pida.",
		NoticeBackupCodesCreated: "Se han generado nuevos códigos de respaldo para tu cuenta; los anteriores ya no funcionan.",
		NoticeBackupCodeUsed:     "Se ha usado un código de respaldo en tu cuenta; códigos de respaldo sin usar que quedan: {detail}.",
		NoticePasskeyAdded:       "Se ha añadido una llave de acceso ({detail}) a tu cuenta.",
		NoticePasskeyRemoved:     "Se ha eliminado una llave de acceso ({detail}) de tu cuenta.",
		NoticeEmailChanged:       "La dirección de correo de tu cuenta se ha cambiado de esta dirección a {detail}.",
		NoticePhoneChanged:       "El número de teléfono de tu cuenta se ha cambiado de este número a {detail}.",
	},
}

// noticeKinds lists every security notice.
func noticeKinds() []NoticeKind {
	out := make([]NoticeKind, 0, len(noticeTexts[DefaultLocale]))
	for k := range noticeTexts[DefaultLocale] {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// NoticeText is n as a sentence of locale's language (English for
// languages without the sentence).
func NoticeText(locale string, n Notice) string {
	s, ok := noticeTexts[BaseLanguage(locale)][n.Kind]
	if !ok {
		s = noticeTexts[DefaultLocale][n.Kind]
	}
	return strings.ReplaceAll(s, "{detail}", n.Detail)
}
