package appuser_test

import (
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestRedacted: an anonymous lookup shows the contact the caller supplied and
// nothing of the other; by id, both are masked to a fixed shape.
func TestRedacted(t *testing.T) {
	u := appuser.User{AppUser: store.AppUser{ID: "u1", Status: "active", Email: "ada.lovelace@example.com", EmailVerified: true,
		Phone: "+14155554567", PhoneVerified: true, WebauthnEnabled: true}, Meta: map[string]any{"first_name": "Ada"}}
	for _, tc := range []struct {
		name                   string
		supplied               appuser.Kind
		email, phone           string
		emailVerified, phoneOK bool
	}{
		{"by e-mail", appuser.KindEmail, "ada.lovelace@example.com", "", true, false},
		{"by phone", appuser.KindPhone, "", "+14155554567", false, true},
		{"by id", "", "a•••@example.com", "•••• 4567", true, true},
	} {
		got := u.Redacted(tc.supplied)
		if got.Email != tc.email || got.Phone != tc.phone || got.EmailVerified != tc.emailVerified || got.PhoneVerified != tc.phoneOK {
			t.Errorf("Redacted(%s) = email %q (%v), phone %q (%v); want %q (%v), %q (%v)", tc.name, got.Email, got.EmailVerified,
				got.Phone, got.PhoneVerified, tc.email, tc.emailVerified, tc.phone, tc.phoneOK)
		}
		if got.ID != u.ID || got.Status != u.Status || !got.WebauthnEnabled {
			t.Errorf("Redacted(%s) changed id, status or webauthn_enabled: %+v", tc.name, got.AppUser)
		}
	}
	if u.Email != "ada.lovelace@example.com" || u.Phone != "+14155554567" {
		t.Errorf("Redacted changed the original: %+v", u.AppUser)
	}
	for in, want := range map[string]string{"": "", "a@b.co": "a•••@b.co", "élodie@example.fr": "é•••@example.fr", "x": "•••"} {
		if got := appuser.MaskEmail(in); got != want {
			t.Errorf("MaskEmail(%q) = %q; want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"": "", "+4420794600": "•••• 4600", "+123": "•••"} {
		if got := appuser.MaskPhone(in); got != want {
			t.Errorf("MaskPhone(%q) = %q; want %q", in, got, want)
		}
	}
}
