package courier

import (
	"errors"
	"strings"
	"testing"
)

// TestHTMLTemplateSafety: an app's HTML e-mail template that would run
// script, embed or submit, or load anything from another host when opened
// is refused when saved, naming the field and what was refused; ordinary
// e-mail HTML (the built-in templates, https links, inline images, images
// under the server's own origin) is accepted.
func TestHTMLTemplateSafety(t *testing.T) {
	const own = "https://auth.example.com"
	wrap := func(body string) string {
		return "<!DOCTYPE html><html><head><title>{{.AppName}}</title></head><body>" + body +
			`<p><a href="{{.Link}}">Sign in</a></p></body></html>`
	}
	bad := []struct {
		name, html, wantIn string
	}{
		{"script", `<script>alert(1)</script>`, "<script>"},
		{"script in capitals", `<SCRIPT SRC="https://evil.example/x.js"></SCRIPT>`, "<script>"},
		{"noscript", `<noscript><p>x</p></noscript>`, "<noscript>"},
		{"event attribute", `<img src="data:image/png;base64,AAAA" onerror="alert(1)">`, "onerror"},
		{"event attribute in capitals", `<p ONMOUSEOVER="x()">hi</p>`, "onmouseover"},
		{"javascript link", `<a href="javascript:alert(1)">x</a>`, "javascript:"},
		{"javascript link with entities and spaces", `<a href=" jav&#x61;script&colon;alert(1)">x</a>`, "javascript:"},
		{"javascript link with a tab", "<a href=\"java\tscript:alert(1)\">x</a>", "javascript:"},
		{"vbscript link", `<a href="VBScript:msgbox">x</a>`, "javascript:"},
		{"data link", `<a href="data:text/html,<script>alert(1)</script>">x</a>`, "https, mailto: or tel:"},
		{"http link", `<a href="http://example.com/">x</a>`, "https, mailto: or tel:"},
		{"scheme-relative link", `<a href="//evil.example/">x</a>`, "https, mailto: or tel:"},
		{"code in a link", `<a href="https://evil.example/?c={{.Link}}">x</a>`, "whole message link"},
		{"link with more after it", `<a href="{{.Link}}&utm=1">x</a>`, "whole message link"},
		{"iframe", `<iframe src="https://evil.example/"></iframe>`, "<iframe>"},
		{"object", `<object data="https://evil.example/x.swf"></object>`, "<object>"},
		{"embed", `<embed src="https://evil.example/x.swf">`, "<embed>"},
		{"form", `<form action="https://evil.example/"><input name="code"></form>`, "<form>"},
		{"input without form", `<input type="text" name="code">`, "<input>"},
		{"button", `<button>Go</button>`, "<button>"},
		{"base", `<base href="https://evil.example/">`, "<base>"},
		{"svg", `<svg><image href="https://evil.example/p.png"/></svg>`, "<svg>"},
		{"math", `<math><mi>x</mi></math>`, "<math>"},
		{"meta refresh", `<meta http-equiv="refresh" content="0;url=https://evil.example/">`, "http-equiv"},
		{"external image", `<img src="https://tracker.example/p.gif">`, "external resource"},
		{"external image on http", `<img src="http://auth.example.com/logo.png">`, "external resource"},
		{"image on a look-alike host", `<img src="https://auth.example.com.evil.example/logo.png">`, "external resource"},
		{"image with user info", `<img src="https://auth.example.com@evil.example/logo.png">`, "external resource"},
		{"code in an image URL", `<img src="https://auth.example.com/p.gif?{{.Link}}">`, "template value"},
		{"srcset with an external candidate", `<img src="data:image/png;base64,AA" srcset="data:image/png;base64,AA 1x, https://evil.example/a.png 2x">`, "external resource"},
		{"srcset after a descriptor and a comma", `<img src="data:image/png;base64,AA" srcset="data:image/png;base64,AA 1x,https://evil.example/a.png 2x">`, "external resource"},
		{"table background", `<table background="https://evil.example/bg.png"><tr><td>x</td></tr></table>`, "external resource"},
		{"external stylesheet", `<link rel="stylesheet" href="https://evil.example/a.css">`, "external resource"},
		{"link prefetch", `<link rel="prefetch" href="https://evil.example/">`, "external resource"},
		{"ping on a link", `<a href="https://example.com/" ping="https://evil.example/">x</a>`, "requests"},
		{"video", `<video poster="https://evil.example/p.png"></video>`, "external resource"},
		{"source", `<picture><source srcset="https://evil.example/a.webp"><img src="data:image/png;base64,AA"></picture>`, "external resource"},
		{"style import", `<style>@import url("https://evil.example/a.css");</style>`, "@import"},
		{"style import in capitals", `<style>@IMPORT "https://evil.example/a.css";</style>`, "@import"},
		{"style url", `<style>body { background: url(https://evil.example/p.gif) }</style>`, "url()"},
		{"style url in capitals and quotes", `<style>p{background:URL( 'https://evil.example/p.gif' )}</style>`, "url()"},
		{"style url split by a comment", `<style>p{background:url(/**/https://evil.example/p.gif)}</style>`, "url()"},
		{"font face", `<style>@font-face { font-family: x; src: url(https://evil.example/f.woff) }</style>`, "url()"},
		{"image-set", `<style>p{background-image:image-set("https://evil.example/a.png" 1x)}</style>`, "image-set"},
		{"css escape", `<style>p{background:\75 rl(https://evil.example/p.gif)}</style>`, "escapes"},
		{"expression", `<p style="width: expression(alert(1))">x</p>`, "expression"},
		{"style attribute url", `<td style="background-image:url('https://evil.example/p.gif')">x</td>`, "url()"},
		{"template value in a style attribute", `<p style="color: {{.AppName}}">x</p>`, "template value"},
		{"template value in style", `<style>p { color: {{.AppName}} }</style>`, "template value"},
		{"template value as an attribute", `<p {{.AppName}}>x</p>`, "attribute name"},
		{"unclosed css comment", `<p style="color:red /* ">x</p>`, "unclosed comment"},
	}
	for _, tt := range bad {
		ov := Override{Name: TemplateMagicLink, Channel: ChannelEmail, Locale: "en", Subject: "Sign in to {{.AppName}}",
			Text: "{{.Link}}", HTML: wrap(tt.html)}
		err := ValidateOverride(ov, own)
		var te *TemplateError
		if !errors.As(err, &te) || te.Field != "html" || !strings.Contains(te.Reason, tt.wantIn) {
			t.Errorf("%s: ValidateOverride(%s) = %v; want a TemplateError on html mentioning %q", tt.name, tt.html, err, tt.wantIn)
		}
	}

	good := []struct {
		name, html, origin string
	}{
		{"https link, mailto and tel", `<p><a href="https://example.com/help?x=1#y">Help</a> <a href="mailto:help@example.com">Mail</a> <a href="tel:+15555550100">Call</a> <a href="#top">Top</a></p>`, own},
		{"link with spaces in the action", `<p><a href="{{ .Link }}">again</a></p>`, own},
		{"inline image", `<img alt="{{.AppName}}" src="data:image/png;base64,iVBORw0KGgo=">`, own},
		{"image under the server's origin", `<img alt="" src="https://auth.example.com/assets/logo.png" srcset="https://auth.example.com/a.png 1x, data:image/png;base64,AA 2x">`, own},
		{"styles without loads", `<style>p { color: #333; font-family: 'Segoe UI', sans-serif } /* a comment */ td { background: url(data:image/png;base64,AA) }</style><p style="margin:0;color:#52525b">x</p>`, own},
		{"template values in text and plain attributes", `<p title="{{.AppName}}">{{with .ExpiresIn}}Expires in {{.}}.{{end}} {{.Link}}</p>`, ""},
		{"meta content type", `<meta http-equiv="Content-Type" content="text/html; charset=utf-8">`, ""},
		{"text that mentions script", `<p>Never paste &lt;script&gt; or javascript: into a page; onerror= is text here.</p>`, ""},
	}
	for _, tt := range good {
		ov := Override{Name: TemplateMagicLink, Channel: ChannelEmail, Locale: "en", Subject: "Sign in to {{.AppName}}",
			Text: "{{.Link}}", HTML: wrap(tt.html)}
		if err := ValidateOverride(ov, tt.origin); err != nil {
			t.Errorf("%s: ValidateOverride(%s) = %v; want nil", tt.name, tt.html, err)
		}
	}

	// Without the server's origin, no remote image at all.
	ov := Override{Name: TemplateMagicLink, Channel: ChannelEmail, Locale: "en", Subject: "x", Text: "{{.Link}}",
		HTML: wrap(`<img src="https://auth.example.com/logo.png">`)}
	if err := ValidateOverride(ov, ""); err == nil {
		t.Errorf("ValidateOverride(image on a host, no origin) = nil; want refused")
	}
}

// TestBuiltInHTMLTemplatesPassTheSafetyCheck: the built-in templates, which
// an app's own ones usually start from, are accepted as overrides.
func TestBuiltInHTMLTemplatesPassTheSafetyCheck(t *testing.T) {
	checked := 0
	for _, loc := range []string{"en", "de", "es", "fr"} {
		for _, info := range TemplateCatalog() {
			b, err := templateFiles.ReadFile("templates/" + loc + "/" + info.Name + ".html")
			if err != nil {
				continue
			}
			checked++
			if err := checkHTMLSafety(string(b), ""); err != nil {
				t.Errorf("built-in %s/%s.html: %v", loc, info.Name, err)
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked %d built-in HTML templates; want every one (20)", checked)
	}
}
