package courier

import (
	"embed"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io/fs"
	"path"
	"sort"
	"strings"
	texttemplate "text/template"
)

// templateFiles holds the e-mail templates: for every name, name.subject and name.txt (text/template) and
// name.html (html/template).
//
//go:embed templates
var templateFiles embed.FS

// InvitationData is the data for the "invitation" template.
type InvitationData struct {
	AppName   string // name of the app the person is invited to
	Link      string // invitation link; secret
	ExpiresIn string // human duration, e.g. "7 days"; optional
	To        string // invited address, shown so a forwarded mail is recognisable; optional
}

// CodeData is the data for the "login_code" template.
type CodeData struct {
	AppName   string // name of the app being signed in to
	Code      string // one-time code; secret
	ExpiresIn string // human duration, e.g. "10 minutes"; optional
}

// LinkData is the data for the "magic_link" template.
type LinkData struct {
	AppName   string // name of the app being signed in to
	Link      string // magic sign-in link; secret
	ExpiresIn string // human duration, e.g. "15 minutes"; optional
	// RequestedFrom names the device that asked, e.g. "Chrome on macOS,
	// 203.0.113.7"; optional.
	RequestedFrom string
}

// CodeLockedData is the data for the "code_locked" template, the notice that
// sign-in by code is locked after many wrong codes. It holds no secret.
type CodeLockedData struct {
	AppName string // name of the app whose code sign-in is locked
}

// NoticeData is the data for the "security_notice" template: a change to
// how the user signs in (a second factor added or removed, new backup
// codes, a changed e-mail or phone). It holds no secret.
type NoticeData struct {
	AppName string // name of the app whose account changed
	Notice  string // what changed, one or two sentences
}

// Templates is the parsed set of embedded e-mail templates. It is safe for concurrent use.
type Templates struct {
	sets map[string]templateSet
}

// templateSet is the three parts of one named template.
type templateSet struct {
	subject *texttemplate.Template
	text    *texttemplate.Template
	html    *htmltemplate.Template
}

// LoadTemplates parses every embedded template once. It fails if a template is malformed, a name lacks one of its
// three parts, or an unexpected file is present.
func LoadTemplates() (*Templates, error) {
	return loadTemplates(templateFiles, "templates")
}

// loadTemplates parses the templates in dir of fsys; it is separate from LoadTemplates so tests can feed broken sets.
func loadTemplates(fsys fs.FS, dir string) (*Templates, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("courier: read templates: %w", err)
	}
	parts := make(map[string]map[string]string)
	for _, e := range entries {
		if e.IsDir() {
			return nil, fmt.Errorf("courier: unexpected directory %q in templates", e.Name())
		}
		ext := path.Ext(e.Name())
		if !isTemplateExt(ext) {
			return nil, fmt.Errorf("courier: unexpected template file %q", e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("courier: read template %q: %w", e.Name(), err)
		}
		name := strings.TrimSuffix(e.Name(), ext)
		if parts[name] == nil {
			parts[name] = make(map[string]string)
		}
		parts[name][ext] = string(b)
	}
	if len(parts) == 0 {
		return nil, errors.New("courier: no templates found")
	}

	sets := make(map[string]templateSet, len(parts))
	for name, p := range parts {
		for _, ext := range []string{".subject", ".txt", ".html"} {
			if _, ok := p[ext]; !ok {
				return nil, fmt.Errorf("courier: template %q has no %s part", name, ext)
			}
		}
		var set templateSet
		if set.subject, err = texttemplate.New(name + ".subject").Option("missingkey=error").Parse(p[".subject"]); err != nil {
			return nil, fmt.Errorf("courier: parse template: %w", err)
		}
		if set.text, err = texttemplate.New(name + ".txt").Option("missingkey=error").Parse(p[".txt"]); err != nil {
			return nil, fmt.Errorf("courier: parse template: %w", err)
		}
		if set.html, err = htmltemplate.New(name + ".html").Option("missingkey=error").Parse(p[".html"]); err != nil {
			return nil, fmt.Errorf("courier: parse template: %w", err)
		}
		sets[name] = set
	}
	return &Templates{sets: sets}, nil
}

// isTemplateExt reports whether ext names one of the three parts of a template.
func isTemplateExt(ext string) bool {
	switch ext {
	case ".subject", ".txt", ".html":
		return true
	}
	return false
}

// names returns the template names in sorted order.
func (t *Templates) names() []string {
	names := make([]string, 0, len(t.sets))
	for n := range t.sets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Render builds Subject/Text/HTML for the named template with data. The HTML part is auto-escaped by html/template;
// the subject is folded onto one line because it becomes a header.
func (t *Templates) Render(name string, data any) (subject, text, html string, err error) {
	set, ok := t.sets[name]
	if !ok {
		return "", "", "", fmt.Errorf("courier: unknown template %q", name)
	}
	var b strings.Builder
	if err := set.subject.Execute(&b, data); err != nil {
		return "", "", "", fmt.Errorf("courier: render %s subject: %w", name, err)
	}
	subject = strings.Join(strings.Fields(b.String()), " ")
	b.Reset()
	if err := set.text.Execute(&b, data); err != nil {
		return "", "", "", fmt.Errorf("courier: render %s text: %w", name, err)
	}
	text = b.String()
	b.Reset()
	if err := set.html.Execute(&b, data); err != nil {
		return "", "", "", fmt.Errorf("courier: render %s html: %w", name, err)
	}
	return subject, text, b.String(), nil
}
