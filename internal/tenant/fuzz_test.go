package tenant

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
)

// FuzzCheckOrigin checks the CORS origin setting: an accepted origin is a
// bare http(s) scheme and host (no user, path, query or fragment), accepting
// it again gives it back unchanged, and AllowsOrigin grants exactly the
// configured origins, byte for byte.
func FuzzCheckOrigin(f *testing.F) {
	for _, s := range []string{
		"https://app.example.com", "https://app.example.com/", " HTTPS://App.Example.COM:8443 ", "http://localhost:3000",
		"https://app.example.com/path", "https://app.example.com?x", "https://app.example.com#", "https://user@app.example.com",
		"https://:443", "https://[::1]:8080", "null", "*", "file:///", "https:app.example.com", "//app.example.com",
		"https://app.example.com.evil.com", "https://app.example.com:443", "https://%C3%A4pp.example.com", "https://ÄPP.example",
		"javascript://app.example.com", "https://app.example.com\\@evil.com", "https://app.example.com%00",
		"https://[fe80::1%25eth0]", "http://0x7f.1",
	} {
		f.Add(s, "https://app.example.com")
	}
	f.Fuzz(func(t *testing.T, v, header string) {
		o, err := checkOrigin("origin", v)
		if err != nil {
			var inv *errs.Invalid
			if !errors.As(err, &inv) || inv.Field != "origin" {
				t.Fatalf("checkOrigin(%q) error = %v; want an *errs.Invalid on origin", v, err)
			}
			if AllowsOrigin(App{Origin: ""}, header) {
				t.Fatalf("an app with no origin allows %q", header)
			}
			return
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.Contains(o, "#") || strings.Contains(o, "?") ||
			o != u.Scheme+"://"+u.Host {
			t.Fatalf("checkOrigin(%q) = %q; want scheme://host[:port]", v, o)
		}
		if again, err := checkOrigin("origin", o); err != nil || again != o {
			t.Fatalf("checkOrigin(%q) = %q, %v; want it stable (from %q)", o, again, err, v)
		}
		app := App{Origin: o, AllowedOrigins: []string{"https://other.example.com"}}
		if !AllowsOrigin(app, o) {
			t.Fatalf("AllowsOrigin(%q) = false for the configured origin", o)
		}
		if got := AllowsOrigin(app, header); got != (header == o || header == "https://other.example.com") {
			t.Fatalf("AllowsOrigin(origin %q, header %q) = %v", o, header, got)
		}
	})
}

// FuzzCheckURL checks the app URL settings (login_url, callback_url, logos):
// an accepted value is an absolute http(s) URL with a host, no user
// information and no white space (it goes into links in messages), and what
// is stored validates again unchanged, so that reading
// an app's settings and writing them back always works.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://app.example.com/login", " https://app.example.com/cb?x=1#y ", "http://localhost:3000/a b", "HTTPS://EXAMPLE.COM",
		"javascript:alert(1)", "data:text/html,x", "https:/x", "//example.com", "https://user:pw@example.com",
		"https://example.com/%zz", "https://example.com/a%2Fb", "https://example.com/" + strings.Repeat("é", 700),
		"https://example.com/" + strings.Repeat(" ", 1000), "https://[::1]/", "https://example.com:99999/",
		"https://example.com/\u0000", "https://ex ample.com", "https://example.com/;a=b", "https://example.com/?q=<script>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, err := checkURL("login_url", v)
		if err != nil {
			var inv *errs.Invalid
			if !errors.As(err, &inv) || inv.Field != "login_url" {
				t.Fatalf("checkURL(%q) error = %v; want an *errs.Invalid on login_url", v, err)
			}
			return
		}
		u, err := url.Parse(got)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Opaque != "" ||
			strings.IndexFunc(got, unicode.IsSpace) >= 0 || len(got) > 2048 {
			t.Fatalf("checkURL(%q) = %q; want an absolute http(s) URL without user information or white space", v, got)
		}
		if again, err := checkURL("login_url", got); err != nil || again != got {
			t.Fatalf("checkURL(%q) = %q, %v; want it stable (from %q)", got, again, err, v)
		}
	})
}
