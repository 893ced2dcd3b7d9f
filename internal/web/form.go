package web

import (
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
)

// maxForm bounds a console form's body.
const maxForm = 64 << 10

// form reads a POSTed form in one place: size-bounded, urlencoded only,
// every value valid UTF-8 without control characters. Fields are read with
// its methods, which record the first problem as an *errs.Invalid.
type form struct {
	r   *http.Request
	err error
}

func parseForm(w http.ResponseWriter, r *http.Request) (*form, error) {
	ct := r.Header.Get("Content-Type")
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	if strings.TrimSpace(strings.ToLower(ct)) != "application/x-www-form-urlencoded" {
		return nil, errs.Invalidf("body", "must be a form (application/x-www-form-urlencoded)")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		return nil, errs.Invalidf("body", "is not a readable form")
	}
	for k, vs := range r.PostForm {
		for _, v := range append([]string{k}, vs...) {
			if !cleanText(v) {
				return nil, errs.Invalidf(k, "must be text without control characters")
			}
		}
	}
	return &form{r: r}, nil
}

// form is parseForm for a handler: a refused form is answered (400 or
// 415 page) and ok is false.
func (h *Handler) form(w http.ResponseWriter, r *http.Request) (_ *form, ok bool) {
	f, err := parseForm(w, r)
	if err != nil {
		h.fail(w, r, err)
		return nil, false
	}
	return f, true
}

func cleanText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// has reports whether the form sent field at all.
func (f *form) has(field string) bool { _, ok := f.r.PostForm[field]; return ok }

// text is a trimmed field.
func (f *form) text(field string) string { return strings.TrimSpace(f.r.PostFormValue(field)) }

// textp is a trimmed field, or nil when the form did not send it.
func (f *form) textp(field string) *string {
	if !f.has(field) {
		return nil
	}
	v := f.text(field)
	return &v
}

// check is a checkbox: on when sent, off otherwise. Forms that show it send
// a hidden "<field>.shown" too, so an unticked box is told from one that
// was not on the form.
func (f *form) check(field string) *bool {
	if !f.has(field + ".shown") {
		return nil
	}
	v := f.has(field)
	return &v
}

// list is a multi-valued field (checkboxes), nil when not on the form.
func (f *form) list(field string) *[]string {
	if !f.has(field + ".shown") {
		return nil
	}
	v := []string{}
	for _, x := range f.r.PostForm[field] {
		if x = strings.TrimSpace(x); x != "" {
			v = append(v, x)
		}
	}
	return &v
}

// lines is a textarea of one value per line, nil when not on the form.
func (f *form) lines(field string) *[]string {
	if !f.has(field) {
		return nil
	}
	v := []string{}
	for _, x := range strings.Split(f.r.PostFormValue(field), "\n") {
		if x = strings.TrimSpace(x); x != "" {
			v = append(v, x)
		}
	}
	return &v
}

// int64p is a whole number, nil when not on the form or empty.
func (f *form) int64p(field string) *int64 {
	s := f.text(field)
	if s == "" {
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil && f.err == nil {
		f.err = errs.Invalidf(field, "must be a whole number")
	}
	return &n
}
