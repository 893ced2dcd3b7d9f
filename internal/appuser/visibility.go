package appuser

import (
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Who may write which metadata field, and what an anonymous caller may see
// of a user.

// Writer is who writes a user's metadata; it decides which declared fields
// they may set. The schema's flags (visible_registration, visible_profile)
// and the app's profile_management say what users see in the sign-up and
// profile forms; a field a user is not shown is the app's alone.
type Writer int

// Writers of metadata.
const (
	// WriterApp is the app's backend or an administrator (an API secret or
	// key, the command line): every declared field.
	WriterApp Writer = iota
	// WriterRegistration is a person signing up (the user_meta of a code or
	// magic-link request, or of an accepted invitation): fields with
	// visible_registration.
	WriterRegistration
	// WriterProfile is a signed-in user changing their own metadata: fields
	// with visible_profile, and only while the app has profile_management on.
	WriterProfile
)

// msgAppOnly reports a declared field the writer may not set.
const msgAppOnly = "may only be set by the app"

// may reports whether w may set field f of app.
func (w Writer) may(app store.App, f MetaField) bool {
	switch w {
	case WriterRegistration:
		return f.VisibleRegistration
	case WriterProfile:
		return app.ProfileManagement && f.VisibleProfile
	}
	return true
}

// cleanMeta is Schema.Clean for writer w: declared keys w may not set are
// rejected too, with "may only be set by the app".
func cleanMeta(app store.App, meta map[string]any, w Writer, requireAll bool) (map[string]any, MetaErrors, error) {
	sc := SchemaOf(app)
	clean, problems, err := sc.Clean(meta, requireAll)
	if err != nil {
		return nil, nil, err
	}
	for key := range meta {
		if f, ok := sc.field(key); ok && !w.may(app, f) {
			delete(clean, key)
			if problems == nil {
				problems = MetaErrors{}
			}
			problems[key] = msgAppOnly
		}
	}
	return clean, problems, nil
}

// RegistrationMeta judges the user_meta of a sign-up request by the request
// alone: the keys kept (declared, well typed, with visible_registration) and
// the keys dropped, with reasons. Missing required fields are not reported
// (the lookup's required_fields says that). Only a meta too large is an
// error. Sign-in sends answer its errors whether or not the user exists, so
// they cannot tell the two apart.
func RegistrationMeta(app store.App, meta map[string]any) (map[string]any, MetaErrors, error) {
	return cleanMeta(app, meta, WriterRegistration, false)
}

// Anonymous views of a user.

// Redacted returns u as an anonymous caller of the client SDK's lookup may
// see it. supplied is the kind of identifier the caller looked the user up
// by: that contact is shown (the caller gave it), and the other is removed
// with its verified flag, so a lookup by e-mail tells nothing of a phone.
// With supplied "" (a lookup by user id) both contacts are masked
// (MaskEmail, MaskPhone). The metadata stays on the value, for the required
// fields the lookup lists; it must not be shown.
func (u User) Redacted(supplied Kind) User {
	switch supplied {
	case KindEmail:
		u.Phone, u.PhoneVerified = "", false
	case KindPhone:
		u.Email, u.EmailVerified = "", false
	default:
		u.Email, u.Phone = MaskEmail(u.Email), MaskPhone(u.Phone)
	}
	return u
}

// mask stands for hidden characters, always the same whatever their number,
// so it does not tell an address's length.
const mask = "•••"

// MaskEmail shows the first character of an address's local part and its
// domain: "ada@example.com" -> "a•••@example.com". "" stays "".
func MaskEmail(email string) string {
	at := strings.LastIndexByte(email, '@')
	if at <= 0 {
		if email == "" {
			return ""
		}
		return mask
	}
	r := []rune(email[:at])
	return string(r[0]) + mask + email[at:]
}

// MaskPhone shows the last four digits of a number, as cards do:
// "+14155554567" -> "•••• 4567". "" stays "".
func MaskPhone(phone string) string {
	if len(phone) < 8 {
		if phone == "" {
			return ""
		}
		return mask
	}
	return "•••• " + phone[len(phone)-4:]
}
