package web

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/console"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// HTMX is the vendored htmx file (static/), pinned: its version is in the
// name and its SHA-256 in the tests.
const HTMX = "htmx-2.0.11.min.js"

// view is what every page gets: the layout's needs and the page's Data.
type view struct {
	Title   string
	Nonce   string
	CSRF    string
	Email   string // the signed-in operator
	Section string // the navigation entry to mark current

	Memberships []console.Membership
	Workspace   *console.Membership // the workspace of the page, with the operator's role there
	AppID       string
	AppName     string

	Message, Code string // error pages
	Notice        string // a line above the page (what a form did)
	Data          any
}

// CanManage reports whether the operator's role lets it change settings
// and credentials (admin or owner); the server decides each action anyway.
func (v view) CanManage() bool {
	return v.Workspace != nil && (v.Workspace.Role == "owner" || v.Workspace.Role == "admin")
}

// IsOwner reports whether the operator owns the page's workspace.
func (v view) IsOwner() bool { return v.Workspace != nil && v.Workspace.Role == "owner" }

type renderer struct {
	pages map[string]*template.Template
}

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"whenp": func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"join": strings.Join,
	"has": func(list []string, v string) bool {
		for _, x := range list {
			if x == v {
				return true
			}
		}
		return false
	},
	"str": func(b []byte) string { return string(b) },
	// ended says how a session ended at now: revoked, expired, or not yet.
	"ended": func(s signin.Session, now time.Time) string {
		switch {
		case s.RevokedAt != nil:
			return "revoked " + s.RevokedAt.UTC().Format("2006-01-02 15:04 UTC")
		case !s.ExpiresAt.After(now):
			return "expired " + s.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC")
		}
		return "live"
	},
	"query1": func(k, v string) template.URL { return query(url.Values{k: {v}}) },
	"list3":  func() []string { return []string{"member", "admin", "owner"} },
	"deref": func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	},
	"last": func(list []webhook.Attempt) *webhook.Attempt {
		if len(list) == 0 {
			return nil
		}
		return &list[len(list)-1]
	},
}

func newRenderer() *renderer {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/partials.html"))
	pages, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	r := &renderer{pages: map[string]*template.Template{}}
	for _, p := range pages {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "templates/"), ".html")
		if name == "layout" || name == "partials" || strings.HasPrefix(name, "hosted_") { // hosted pages: their own layout (hosted.go)
			continue
		}
		r.pages[name] = template.Must(template.Must(layout.Clone()).ParseFS(templateFiles, p))
	}
	return r
}

// render writes page name with status, inside the layout. Rendering goes
// to a buffer first, so a template failure is a clean 500, not half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	v.Nonce = nonceOf(r.Context())
	if sess, ok := sessionOf(r.Context()); ok {
		v.Email = sess.Email
		v.CSRF = h.Console.CSRFToken(sess)
		if v.Memberships == nil {
			v.Memberships, _ = h.Console.Memberships(r.Context(), sess)
		}
	}
	t, ok := h.page.pages[name]
	if !ok {
		panic("web: no page " + name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		h.Log.ErrorContext(r.Context(), "console page failed to render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fragment writes one partial template (for htmx), without the layout.
func (h *Handler) fragment(w http.ResponseWriter, r *http.Request, name string, data any) {
	var buf bytes.Buffer
	if err := h.page.pages["home"].ExecuteTemplate(&buf, name, data); err != nil {
		h.Log.ErrorContext(r.Context(), "console fragment failed to render", "fragment", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// static serves the embedded assets, cached for a year: their names change
// with their content (the htmx file carries its version).
func (h *Handler) static(w http.ResponseWriter, r *http.Request) {
	sub, _ := fs.Sub(staticFiles, "static")
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	http.StripPrefix("/console/static/", http.FileServerFS(sub)).ServeHTTP(w, r)
}
