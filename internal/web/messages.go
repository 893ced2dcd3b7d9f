package web

import (
	"net/http"
	"slices"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
)

// The app's own message providers and its message templates: the API's
// /message_service_providers and /message_templates as pages.

type providerRow struct {
	outbound.MessageProvider
	Fields []courier.Field
}

type messagesData struct {
	Providers []providerRow
	Catalog   outbound.Catalog
	Test      *outbound.ProviderTest
	Error     string
}

func (h *Handler) messages(w http.ResponseWriter, r *http.Request) {
	h.messagesPage(w, r, http.StatusOK, messagesData{})
}

func (h *Handler) messagesPage(w http.ResponseWriter, r *http.Request, status int, d messagesData) {
	p, a, v, ok := h.appPage(w, r, "Messages", "messages")
	if !ok {
		return
	}
	list, err := h.Outbound.Providers.List(r.Context(), p, a.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, mp := range list {
		k, _ := courier.KindOf(mp.Type)
		d.Providers = append(d.Providers, providerRow{MessageProvider: mp, Fields: k.Fields})
	}
	if v.CanManage() { // the catalog and overrides need Manage, as in the API
		if d.Catalog, err = h.Outbound.Templates.List(r.Context(), p, a.ID); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	v.Data, v.Notice = d, noticeOf(r)
	h.render(w, r, status, "messages", v)
}

// saveProvider changes one provider slot: name, enabled and its settings
// (a secret left as its hint keeps its value).
func (h *Handler) saveProvider(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Messages", "messages")
	if !ok {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	slug := r.PathValue("slug")
	k, known := courier.KindOf(slug)
	if !known {
		h.notFound(w, r)
		return
	}
	in := outbound.ProviderChange{Slug: slug, Name: f.textp("name"), Enabled: f.check("enabled"), Config: map[string]*string{}}
	for _, fl := range k.Fields {
		if v := f.textp("config." + fl.Name); v != nil {
			in.Config[fl.Name] = v
		}
	}
	_, err := h.Outbound.Providers.Update(r.Context(), p, a.ID, in)
	h.done(w, r, err, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID+"/messages", "saved",
		func(msg string) { h.messagesPage(w, r, http.StatusBadRequest, messagesData{Error: msg}) })
}

// testProvider sends one test message through a provider and shows what
// the provider answered.
func (h *Handler) testProvider(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Messages", "messages")
	if !ok {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	res, err := h.Outbound.Providers.Test(r.Context(), p, a.ID, r.PathValue("slug"), f.text("to"))
	if err != nil {
		if msg, ok := invalid(err); ok {
			h.messagesPage(w, r, http.StatusBadRequest, messagesData{Error: msg})
			return
		}
		h.fail(w, r, err)
		return
	}
	h.messagesPage(w, r, http.StatusOK, messagesData{Test: &res})
}

type templateData struct {
	Message  outbound.Message
	Channel  courier.Channel
	Locale   string
	Locales  []string
	Source   courier.TemplateSource // the override, or the built-in
	Override bool
	Preview  *outbound.Preview
	Error    string
}

// template is one message's template for a channel and locale: the app's
// override when it has one, else the built-in, in an editable form.
func (h *Handler) template(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	h.templatePage(w, r, http.StatusOK, q.Get("channel"), q.Get("locale"), nil, nil, "")
}

func (h *Handler) templatePage(w http.ResponseWriter, r *http.Request, status int, ch, locale string, draft *courier.TemplateSource, pv *outbound.Preview, problem string) {
	p, a, v, ok := h.appPage(w, r, "Message template", "messages")
	if !ok {
		return
	}
	cat, err := h.Outbound.Templates.List(r.Context(), p, a.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	name := r.PathValue("name")
	i := slices.IndexFunc(cat.Messages, func(m outbound.Message) bool { return m.Name == name })
	if i < 0 {
		h.notFound(w, r)
		return
	}
	m := cat.Messages[i]
	d := templateData{Message: m, Channel: courier.Channel(ch), Locale: locale, Locales: cat.Locales, Preview: pv, Error: problem}
	if !slices.Contains(m.Channels, d.Channel) {
		d.Channel = m.Channels[0]
	}
	if !slices.Contains(cat.Locales, d.Locale) {
		d.Locale = courier.DefaultLocale
	}
	d.Source = m.Builtin[d.Channel][d.Locale]
	for _, o := range cat.Overrides {
		if o.Name == name && o.Channel == d.Channel && o.Locale == d.Locale {
			d.Source, d.Override = courier.TemplateSource{Subject: o.Subject, Text: o.Text, HTML: o.HTML}, true
		}
	}
	if draft != nil {
		d.Source = *draft
	}
	v.Data = d
	h.render(w, r, status, "template", v)
}

// saveTemplate previews (action=preview, nothing saved) or saves the
// override, or deletes it (action=delete).
func (h *Handler) saveTemplate(w http.ResponseWriter, r *http.Request) {
	p, a, _, ok := h.appPage(w, r, "Message template", "messages")
	if !ok {
		return
	}
	f, ok := h.form(w, r)
	if !ok {
		return
	}
	name, ch, locale := r.PathValue("name"), courier.Channel(f.text("channel")), f.text("locale")
	src := courier.TemplateSource{Subject: f.text("subject"), Text: f.r.PostFormValue("text"), HTML: f.r.PostFormValue("html")}
	var err error
	switch f.text("action") {
	case "preview":
		pv, err := h.Outbound.Templates.Preview(r.Context(), p, a.ID, outbound.PreviewRequest{Name: name, Channel: ch, Locale: locale, Draft: &src})
		if msg, ok := invalid(err); ok {
			h.templatePage(w, r, http.StatusBadRequest, string(ch), locale, &src, nil, msg)
			return
		} else if err != nil {
			h.fail(w, r, err)
			return
		}
		h.templatePage(w, r, http.StatusOK, string(ch), locale, &src, &pv, "")
		return
	case "delete":
		err = h.Outbound.Templates.Delete(r.Context(), p, a.ID, name, ch, locale)
	default:
		_, err = h.Outbound.Templates.Put(r.Context(), p, a.ID, courier.Override{Name: name, Channel: ch, Locale: locale,
			Subject: src.Subject, Text: src.Text, HTML: src.HTML})
	}
	if msg, ok := invalid(err); ok {
		h.templatePage(w, r, http.StatusBadRequest, string(ch), locale, &src, nil, msg)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/w/"+a.WorkspaceID+"/apps/"+a.ID+"/messages/templates/"+name+"?channel="+string(ch)+"&locale="+locale+"&notice=saved", http.StatusSeeOther)
}
