package courier

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadTemplates(t *testing.T) {
	tpl, err := LoadTemplates()
	if err != nil {
		t.Fatalf("LoadTemplates() error = %v; want nil", err)
	}
	got := strings.Join(tpl.names(), ",")
	if want := "code_locked,invitation,login_code,magic_link,security_notice"; got != want {
		t.Errorf("LoadTemplates() names = %s; want %s", got, want)
	}
}

func TestLoadTemplatesRejectsBrokenSets(t *testing.T) {
	ok := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name  string
		files fstest.MapFS
	}{
		{"empty", fstest.MapFS{"t": &fstest.MapFile{Mode: fs.ModeDir}}},
		{"no dir", fstest.MapFS{}},
		{"missing html", fstest.MapFS{"t/a.subject": ok("s"), "t/a.txt": ok("t")}},
		{"missing subject", fstest.MapFS{"t/a.txt": ok("t"), "t/a.html": ok("h")}},
		{"stray file", fstest.MapFS{"t/a.subject": ok("s"), "t/a.txt": ok("t"), "t/a.html": ok("h"), "t/a.md": ok("x")}},
		{"bad subject", fstest.MapFS{"t/a.subject": ok("{{.X"), "t/a.txt": ok("t"), "t/a.html": ok("h")}},
		{"bad text", fstest.MapFS{"t/a.subject": ok("s"), "t/a.txt": ok("{{if}}"), "t/a.html": ok("h")}},
		{"bad html", fstest.MapFS{"t/a.subject": ok("s"), "t/a.txt": ok("t"), "t/a.html": ok("<a href=\"{{.L}}\">{{end}}")}},
	}
	for _, tt := range tests {
		if _, err := loadTemplates(tt.files, "t"); err == nil {
			t.Errorf("loadTemplates(%s) error = nil; want an error", tt.name)
		}
	}
	good := fstest.MapFS{"t/a.subject": ok("s"), "t/a.txt": ok("t"), "t/a.html": ok("h")}
	if _, err := loadTemplates(good, "t"); err != nil {
		t.Errorf("loadTemplates(good) error = %v; want nil", err)
	}
}

func TestRenderTemplates(t *testing.T) {
	tpl, err := LoadTemplates()
	if err != nil {
		t.Fatalf("LoadTemplates() error = %v", err)
	}
	const (
		evilApp     = `Acme <script>alert(1)</script>`
		escapedApp  = `Acme &lt;script&gt;alert(1)&lt;/script&gt;`
		link        = "https://id.acme.test/accept?token=tok_abc&app=app_1"
		escapedLink = "https://id.acme.test/accept?token=tok_abc&amp;app=app_1"
	)
	tests := []struct {
		name        string
		data        any
		wantSubject string
		wantText    []string // substrings of the text part
		wantHTML    []string // substrings of the HTML part
	}{
		{
			name:        "invitation",
			data:        InvitationData{AppName: evilApp, Link: link, ExpiresIn: "7 days", To: "ada@example.com"},
			wantSubject: "You're invited to " + evilApp,
			wantText:    []string{link, "7 days", "ada@example.com", evilApp},
			wantHTML:    []string{`href="` + escapedLink + `"`, ">" + escapedLink + "</a>", "7 days", "ada@example.com", escapedApp, "Accept invitation"},
		},
		{
			name:        "login_code",
			data:        CodeData{AppName: evilApp, Code: "482913", ExpiresIn: "10 minutes"},
			wantSubject: "Your " + evilApp + " sign-in code",
			wantText:    []string{"482913", "10 minutes"},
			wantHTML:    []string{">482913</p>", "10 minutes", escapedApp},
		},
		{
			name:        "code_locked",
			data:        CodeLockedData{AppName: evilApp},
			wantSubject: "Sign-in by code to " + evilApp + " is locked",
			wantText:    []string{evilApp, "wrong sign-in codes", "sign in another way", "not disabled"},
			wantHTML:    []string{escapedApp, "wrong sign-in codes", "sign in another way", "not disabled"},
		},
		{
			name:        "security_notice",
			data:        NoticeData{AppName: evilApp, Notice: "An authenticator app was added <b>now</b>."},
			wantSubject: "A change to how you sign in to " + evilApp,
			wantText:    []string{evilApp, "An authenticator app was added <b>now</b>.", "was not you"},
			wantHTML:    []string{escapedApp, "An authenticator app was added &lt;b&gt;now&lt;/b&gt;.", "was not you"},
		},
		{
			name:        "magic_link",
			data:        LinkData{AppName: evilApp, Link: link, ExpiresIn: "15 minutes"},
			wantSubject: "Sign in to " + evilApp,
			wantText:    []string{link, "15 minutes"},
			wantHTML:    []string{`href="` + escapedLink + `"`, ">" + escapedLink + "</a>", "15 minutes", escapedApp},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			subject, text, html, err := tpl.Render(tt.name, tt.data)
			if err != nil {
				t.Fatalf("Render(%q) error = %v", tt.name, err)
			}
			if subject != tt.wantSubject {
				t.Errorf("Render(%q) subject = %q; want %q", tt.name, subject, tt.wantSubject)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(text, w) {
					t.Errorf("Render(%q) text lacks %q:\n%s", tt.name, w, text)
				}
			}
			for _, w := range tt.wantHTML {
				if !strings.Contains(html, w) {
					t.Errorf("Render(%q) html lacks %q:\n%s", tt.name, w, html)
				}
			}
			if strings.Contains(html, "<script>") {
				t.Errorf("Render(%q) html contains an unescaped <script>", tt.name)
			}
			if strings.Contains(text, "<p") || strings.Contains(text, "&lt;") {
				t.Errorf("Render(%q) text contains HTML:\n%s", tt.name, text)
			}
		})
	}
}

func TestRenderOptionalFieldsAndUnsafeLink(t *testing.T) {
	tpl, err := LoadTemplates()
	if err != nil {
		t.Fatalf("LoadTemplates() error = %v", err)
	}
	_, text, html, err := tpl.Render("invitation", InvitationData{AppName: "Acme", Link: "javascript:alert(1)"})
	if err != nil {
		t.Fatalf("Render(invitation) error = %v", err)
	}
	if strings.Contains(html, `href="javascript:`) {
		t.Errorf("Render(invitation) html keeps a javascript: href:\n%s", html)
	}
	for _, part := range []string{text, html} {
		if strings.Contains(part, "expires in") || strings.Contains(part, "sent to") {
			t.Errorf("Render(invitation) without ExpiresIn/To mentions them:\n%s", part)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	tpl, err := LoadTemplates()
	if err != nil {
		t.Fatalf("LoadTemplates() error = %v", err)
	}
	if _, _, _, err := tpl.Render("nope", CodeData{}); err == nil {
		t.Errorf("Render(%q) error = nil; want unknown template", "nope")
	}
	// LinkData has no Code field, so login_code must fail rather than render an empty code.
	if _, _, _, err := tpl.Render("login_code", LinkData{AppName: "Acme"}); err == nil {
		t.Errorf("Render(login_code, LinkData) error = nil; want a missing-field error")
	}
	if _, _, _, err := tpl.Render("login_code", map[string]string{"AppName": "Acme"}); err == nil {
		t.Errorf("Render(login_code, map without Code) error = nil; want a missing-key error")
	}
}

func TestRenderSubjectIsOneLine(t *testing.T) {
	tpl, err := LoadTemplates()
	if err != nil {
		t.Fatalf("LoadTemplates() error = %v", err)
	}
	subject, _, _, err := tpl.Render("magic_link", LinkData{AppName: "Acme\r\nBcc: evil@example.com", Link: "https://a.test"})
	if err != nil {
		t.Fatalf("Render(magic_link) error = %v", err)
	}
	if strings.ContainsAny(subject, "\r\n") {
		t.Errorf("Render(magic_link) subject = %q; want a single line", subject)
	}
}
