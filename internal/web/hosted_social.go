package web

import (
	"net/http"
	"net/url"
	"regexp"

	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// Social sign-in buttons on the hosted login page (docs/hosted-pages.md,
// docs/social-sign-in.md): one link per enabled provider of the app, to the
// API's GET /v1/auth/{app_id}/oauth/authorize, the route the client SDK's
// signInWithOAuthProvider uses, with the login page's callback_url. That
// route checks the callback as always (social.CallbackFor, the same check
// as the login page's) and ends at the app's callback with the same
// single-use token (sct_magic) a code sign-in here gives. A social sign-in
// leaves no hosted session, so a sign-in that returns to the account page
// (return=/account/{app_id}) shows no buttons.

// socialButton is one provider's button.
type socialButton struct {
	Slug, Name, Icon, Href string
	// Color: the provider's colour (#rrggbb, as its settings hold it, or
	// ""), drawn as the button's edge.
	Color string
}

// hexColor is a colour the page may put into its style element.
var hexColor = regexp.MustCompile(`^#[0-9a-f]{6}$`)

// socialButtons are the app's enabled providers' buttons for the login
// page d (none on a sign-in for the account page).
func (h *Handler) socialButtons(r *http.Request, app tenant.App, d loginData) []socialButton {
	if h.Social == nil || d.Return != "" {
		return nil
	}
	list, err := h.Social.Public(r.Context(), app.ID)
	if err != nil {
		h.Log.WarnContext(r.Context(), "hosted login: list social sign-in providers", "app_id", app.ID, "err", err)
		return nil
	}
	out := make([]socialButton, 0, len(list))
	for _, p := range list {
		q := url.Values{"provider": {p.Slug}}
		if d.Callback != "" {
			q.Set("callback_url", d.Callback)
		}
		b := socialButton{Slug: p.Slug, Name: p.Name, Icon: "/v1/assets/oauth/" + url.PathEscape(p.Type) + ".svg",
			Href: "/v1/auth/" + url.PathEscape(app.ID) + "/oauth/authorize?" + q.Encode()}
		if hexColor.MatchString(p.Color) {
			b.Color = p.Color
		}
		out = append(out, b)
	}
	return out
}
