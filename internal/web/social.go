package web

import (
	"net/http"
	"slices"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/social"
)

// The app's social sign-in providers (docs/social-sign-in.md): the API's
// /v1/apps/{app_id}/oauth_providers as a page. Add, change and delete go
// through social.Service's Put and Delete, as PUT and DELETE do: the same
// role rules (Manage: admins and owners), the same checks and messages, the
// same audit entries (oauth_provider.created, .updated, .deleted). Secrets
// (client_secret, Apple's private_key) are never shown again: a form shows
// their hint, and sending the hint back (or nothing) keeps them.

func init() {
	notices["provider-deleted"] = "Provider deleted: it is no longer offered to the app's users."
	notices["webhook-deleted"] = "Endpoint deleted: nothing more is sent to it."
}

// socialSettings are the settings the API's PUT takes besides client_id,
// as the form's field names.
var socialSettings = []string{"client_secret", "issuer", "tenant", "team_id", "key_id", "private_key"}

// socialField is a provider type's setting as the form shows it.
type socialField struct {
	social.Field
	Label, Hint string
	Multiline   bool
}

var socialFieldText = map[string]struct{ label, hint string }{
	"client_secret": {"Client secret", "sealed and never shown again: the form shows a hint; leave it to keep the secret"},
	"issuer":        {"Issuer", "https URL whose /.well-known/openid-configuration describes the provider"},
	"tenant":        {"Tenant", "common (the default), organizations, consumers, a directory (tenant) id or a domain name"},
	"team_id":       {"Team ID", "the 10 characters of your Apple developer team"},
	"key_id":        {"Key ID", "the 10 characters of the Sign in with Apple key"},
	"private_key":   {"Private key", "the .p8 file's contents (-----BEGIN PRIVATE KEY-----); sealed and never shown again"},
}

// socialKind is a provider type as the page offers it.
type socialKind struct {
	Type, Label, ClientIDLabel, DefaultScopes string
	Fields                                    []socialField
}

func kindView(k social.Kind) socialKind {
	out := socialKind{Type: k.Type, Label: k.Label, ClientIDLabel: "Client ID", DefaultScopes: strings.Join(k.Scopes, " ")}
	if k.Type == social.TypeApple {
		out.ClientIDLabel = "Services ID"
	}
	for _, f := range k.Fields {
		t := socialFieldText[f.Name]
		out.Fields = append(out.Fields, socialField{Field: f, Label: t.label, Hint: t.hint, Multiline: f.Name == "private_key"})
	}
	return out
}

// socialForm is what one provider's form shows: a stored provider (secrets
// as their hint), a new one's defaults, or what a refused form sent (its
// secrets never echoed).
type socialForm struct {
	Slug, Name, ClientID, Scopes, Color string
	Enabled, LinkExisting               bool
	Settings                            map[string]string
	Open                                bool // the form a refusal was about
}

type socialRow struct {
	Provider social.Provider
	Kind     socialKind
	Form     socialForm
}

type socialNew struct {
	Kind socialKind
	Form socialForm
}

type socialData struct {
	Providers   []socialRow
	New         []socialNew
	RedirectURI string
	Error       string
}

// socialDraft is a refused form: which one, and what it sent.
type socialDraft struct {
	add  bool // the add form of Type, else the form of Form.Slug
	typ  string
	form socialForm
}

func (h *Handler) socialProviders(w http.ResponseWriter, r *http.Request) {
	h.socialPage(w, r, http.StatusOK, "", nil)
}

func (h *Handler) socialPage(w http.ResponseWriter, r *http.Request, status int, problem string, draft *socialDraft) {
	p, a, v, ok := h.appPage(w, r, "Social sign-in", "social")
	if !ok {
		return
	}
	list, err := h.Social.List(r.Context(), p, a.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := socialData{RedirectURI: h.Social.RedirectURI(a.ID), Error: problem}
	for _, pr := range list {
		k, _ := social.KindOf(pr.Type)
		row := socialRow{Provider: pr, Kind: kindView(k), Form: socialForm{Slug: pr.Slug, Name: pr.Name, ClientID: pr.ClientID,
			Scopes: strings.Join(pr.Scopes, " "), Color: pr.Color, Enabled: pr.Enabled, LinkExisting: pr.LinkExisting, Settings: pr.Settings}}
		if draft != nil && !draft.add && draft.form.Slug == pr.Slug && draft.typ == pr.Type {
			row.Form = draft.form
			for _, f := range k.Fields {
				if f.Secret { // never what was typed: the stored secret's hint
					row.Form.Settings[f.Name] = pr.Settings[f.Name]
				}
			}
		}
		d.Providers = append(d.Providers, row)
	}
	for _, k := range social.Kinds {
		n := socialNew{Kind: kindView(k), Form: socialForm{Enabled: true, LinkExisting: true, Settings: map[string]string{}}}
		if !slices.ContainsFunc(list, func(pr social.Provider) bool { return pr.Slug == k.Type }) {
			n.Form.Slug = k.Type
		}
		if draft != nil && draft.add && draft.typ == k.Type {
			n.Form = draft.form
		}
		d.New = append(d.New, n)
	}
	v.Data, v.Notice = d, noticeOf(r)
	h.render(w, r, status, "social", v)
}

// saveSocialProvider adds a provider (POST .../social, the slug in the
// form) or changes one (POST .../social/{slug}), as PUT
// /v1/apps/{app_id}/oauth_providers/{slug} does.
func (h *Handler) saveSocialProvider(w http.ResponseWriter, r *http.Request) {
	p, a, v, ok := h.appPage(w, r, "Social sign-in", "social")
	if !ok {
		return
	}
	// It can send the app's users' data elsewhere (a new URL) or let a new
	// provider sign them in: a recent sign-in, as for deleting.
	if !h.fresh(w, r) {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	add := r.PathValue("slug") == ""
	slug := r.PathValue("slug")
	if add {
		slug = f.text("slug")
	}
	in := social.Change{Slug: slug, Type: f.text("type"), Enabled: true, Name: f.text("name"), ClientID: f.text("client_id"),
		Settings: map[string]string{}, Scopes: f.text("scopes"),
		Color: f.text("color"), LinkExisting: f.check("link_existing")}
	if e := f.check("enabled"); e != nil {
		in.Enabled = *e
	}
	for _, name := range socialSettings {
		if v := f.text(name); v != "" { // as the API: a setting left empty is not sent
			in.Settings[name] = v
		}
	}
	var err error
	if add && v.CanManage() { // else Put refuses the role, as the API would
		err = h.checkNewSlug(r, p, a.ID, slug)
	}
	if err == nil {
		_, _, err = h.Social.Put(r.Context(), p, a.ID, in)
	}
	h.done(w, r, err, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID+"/social", "saved", func(msg string) {
		draft := &socialDraft{add: add, typ: in.Type, form: socialForm{Slug: slug, Name: in.Name, ClientID: in.ClientID, Scopes: in.Scopes,
			Color: in.Color, Enabled: in.Enabled, LinkExisting: in.LinkExisting == nil || *in.LinkExisting, Settings: map[string]string{}, Open: true}}
		typed := false
		k, _ := social.KindOf(in.Type)
		for name, v := range in.Settings {
			i := slices.IndexFunc(k.Fields, func(x social.Field) bool { return x.Name == name })
			switch {
			case name == "client_secret" || name == "private_key" || i >= 0 && k.Fields[i].Secret:
				typed = typed || !strings.HasPrefix(v, "****") // a hint sent back is no secret typed
			case i >= 0:
				draft.form.Settings[name] = v
			}
		}
		if typed {
			msg += " Secrets are never shown again: type them again."
		}
		h.socialPage(w, r, http.StatusBadRequest, msg, draft)
	})
}

// checkNewSlug refuses, on the add form, a slug the app already uses: PUT
// would replace that provider, which the add form must not do by surprise.
func (h *Handler) checkNewSlug(r *http.Request, p access.Principal, appID, slug string) error {
	list, err := h.Social.List(r.Context(), p, appID)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(list, func(pr social.Provider) bool { return pr.Slug == slug }) {
		return errs.Invalidf("slug", "is already a provider of this app: change that one in its own form, or pick another slug")
	}
	return nil
}

// deleteSocialProvider deletes a provider, as DELETE
// /v1/apps/{app_id}/oauth_providers/{slug} does: users can no longer sign
// in with it. It needs a recent sign-in and the box ticked.
func (h *Handler) deleteSocialProvider(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Social sign-in", "social")
	if !ok {
		return
	}
	if !h.fresh(w, r) {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	if !f.has("confirm") {
		h.socialPage(w, r, http.StatusBadRequest, "Not deleted: tick the box to confirm.", nil)
		return
	}
	err := h.Social.Delete(r.Context(), p, a.ID, r.PathValue("slug"))
	h.done(w, r, err, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID+"/social", "provider-deleted",
		func(msg string) { h.socialPage(w, r, http.StatusBadRequest, msg, nil) })
}
