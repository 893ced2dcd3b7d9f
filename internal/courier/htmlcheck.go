package courier

import (
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/net/html"
)

// checkHTMLSafety refuses what an app's HTML e-mail template may not hold
// (security.md "Message templates"): anything that runs (script, event
// attributes, javascript: URLs), embeds or submits (iframe, object, embed,
// form and its controls, svg, math), or loads from elsewhere when the mail
// is opened (src, srcset, background, a link's stylesheet, CSS url() and
// @import), since a remote image or stylesheet tells its host who opened
// the message and when, and with a template value in its URL would carry a
// code away unopened. Links (<a href>) may go to https, mailto: and tel:
// URLs, and a template value may appear in a URL only as the message's own
// link, the whole href="{{.Link}}". Resources may be inline data:image/
// URLs, or URLs under assetOrigin (this server's base_url) when it is set.
//
// It reads the template's source with the HTML tokenizer, so a tag or
// attribute is recognised however it is spelt (case, entities, quotes);
// the template actions ({{...}}) are seen as the text they are written as.
// It runs when a template is saved or previewed, not when a stored one is
// loaded: a template saved before these rules keeps being sent.
func checkHTMLSafety(src, assetOrigin string) error {
	z := html.NewTokenizer(strings.NewReader(src))
	var inStyle bool
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() == io.EOF {
				return nil
			}
			return htmlRefused("does not parse as HTML: " + z.Err().Error())
		case html.TextToken:
			if inStyle {
				if reason := checkCSS(string(z.Text()), assetOrigin); reason != "" {
					return htmlRefused("<style> " + reason)
				}
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if string(name) == "style" {
				inStyle = false
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			if reason := checkElement(tok, assetOrigin); reason != "" {
				return htmlRefused(reason)
			}
			inStyle = tok.Data == "style" && tt == html.StartTagToken
		}
	}
}

func htmlRefused(reason string) error { return &TemplateError{Field: "html", Reason: reason} }

// refusedElements run, embed, submit or change how the rest is read.
var refusedElements = map[string]string{
	"script":   "e-mail never runs scripts",
	"noscript": "e-mail never runs scripts",
	"iframe":   "a message may not embed other pages",
	"frame":    "a message may not embed other pages",
	"frameset": "a message may not embed other pages",
	"object":   "a message may not embed objects",
	"embed":    "a message may not embed objects",
	"applet":   "a message may not embed objects",
	"portal":   "a message may not embed other pages",
	"form":     "a message may not hold a form: link to a page instead",
	"input":    "a message may not hold form controls",
	"button":   "a message may not hold form controls: use a link",
	"select":   "a message may not hold form controls",
	"textarea": "a message may not hold form controls",
	"base":     "a message may not change where its links point",
	"svg":      "use an <img> with a data:image/ URL instead",
	"math":     "a message may not hold MathML",
	"template": "a message may not hold inert templates",
}

// resourceAttrs load what they name when the message is shown.
var resourceAttrs = map[string]bool{
	"src": true, "srcset": true, "background": true, "poster": true, "lowsrc": true, "dynsrc": true,
	"longdesc": true, "manifest": true, "data": true, "codebase": true, "archive": true, "classid": true,
	"xlink:href": true, "action": true, "formaction": true, "ping": true, "icon": true, "profile": true,
}

func checkElement(tok html.Token, assetOrigin string) string {
	name := tok.Data
	if strings.Contains(name, "{{") {
		return "may not write a tag name with a template value"
	}
	if why, ok := refusedElements[name]; ok {
		return fmt.Sprintf("may not contain <%s>: %s", name, why)
	}
	for _, a := range tok.Attr {
		key := strings.ToLower(a.Key)
		if a.Namespace != "" {
			key = a.Namespace + ":" + key
		}
		switch {
		case strings.Contains(key, "{{"):
			return fmt.Sprintf("<%s> may not have an attribute name with a template value", name)
		case strings.HasPrefix(key, "on"):
			return fmt.Sprintf("<%s %s> is an event handler: e-mail never runs scripts", name, key)
		case scriptURL(a.Val):
			return fmt.Sprintf("<%s %s> may not hold a javascript: or vbscript: URL", name, key)
		case key == "style":
			if reason := checkCSS(a.Val, assetOrigin); reason != "" {
				return fmt.Sprintf("<%s style> %s", name, reason)
			}
		case key == "http-equiv" && !strings.EqualFold(strings.TrimSpace(a.Val), "content-type"):
			return fmt.Sprintf("<%s http-equiv=%q> may not tell the mail client what to do (refresh, cookies)", name, a.Val)
		case key == "href" && (name == "a" || name == "area"):
			if reason := checkLink(a.Val); reason != "" {
				return fmt.Sprintf("<%s href> %s", name, reason)
			}
		case key == "href" || resourceAttrs[key]:
			if reason := checkResource(key, a.Val, assetOrigin); reason != "" {
				return fmt.Sprintf("<%s %s> %s", name, key, reason)
			}
		}
	}
	return ""
}

// linkAction is the one template value a URL may hold: the message's own
// link, as the whole attribute.
var linkAction = regexp.MustCompile(`^\{\{-?\s*\.Link\s*-?\}\}$`)

// checkLink allows https, mailto: and tel: links, a fragment, and
// {{.Link}} alone.
func checkLink(v string) string {
	v = strings.TrimSpace(v)
	if linkAction.MatchString(v) {
		return ""
	}
	if strings.Contains(v, "{{") {
		return "may hold a template value only as the whole message link, href=\"{{.Link}}\": any other would put it in a URL that mail scanners fetch"
	}
	if strings.HasPrefix(v, "#") {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil {
		return "is not a URL"
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		if u.Host == "" {
			return "must name a host"
		}
		return ""
	case "mailto", "tel":
		return ""
	}
	return "must be an https, mailto: or tel: URL, or {{.Link}}"
}

// checkResource allows inline images and, when assetOrigin is set, URLs
// under it; srcset is a list of them.
func checkResource(key, v, assetOrigin string) string {
	if key == "ping" || key == "action" || key == "formaction" {
		return "may not send requests from a message"
	}
	if strings.Contains(v, "{{") {
		return "may not hold a template value: a URL would carry it to another site"
	}
	urls := []string{v}
	if key == "srcset" {
		urls = srcsetURLs(v)
	}
	for _, u := range urls {
		if !inlineOrOwn(u, assetOrigin) {
			return externalReason(assetOrigin)
		}
	}
	return ""
}

// srcsetURLs reads the URLs of a srcset as browsers do (HTML "parse a
// srcset attribute"): a URL is a run of non-space characters (commas in it
// included, as in a data: URL) less trailing commas, and its descriptors
// run to the next comma.
func srcsetURLs(v string) []string {
	var out []string
	expectURL := true
	for _, f := range strings.Fields(v) {
		for f != "" {
			if expectURL {
				f = strings.TrimLeft(f, ",")
				if f == "" {
					break
				}
				u := strings.TrimRight(f, ",")
				out = append(out, u)
				expectURL, f = u != f, ""
				continue
			}
			i := strings.IndexByte(f, ',')
			if i < 0 {
				break
			}
			f, expectURL = f[i+1:], true
		}
	}
	return out
}

func externalReason(assetOrigin string) string {
	if assetOrigin == "" {
		return "loads an external resource: use a data:image/ URL"
	}
	return "loads an external resource: use a data:image/ URL or a URL under " + assetOrigin
}

// inlineOrOwn reports whether a resource URL is an inline image or lies
// under assetOrigin ("https://auth.example.com", no trailing slash).
func inlineOrOwn(u, assetOrigin string) bool {
	u = strings.TrimSpace(u)
	lower := strings.ToLower(u)
	for _, p := range []string{"data:image/png", "data:image/gif", "data:image/jpeg", "data:image/webp"} {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	if assetOrigin == "" {
		return false
	}
	p, err := url.Parse(u)
	if err != nil || p.User != nil {
		return false
	}
	return strings.EqualFold(p.Scheme+"://"+p.Host, assetOrigin)
}

// scriptURL reports a javascript: or vbscript: URL, spelt with any case,
// spaces or control characters (which browsers skip); the tokenizer has
// decoded character references already.
func scriptURL(v string) bool {
	var b strings.Builder
	for _, r := range v {
		if r > ' ' && r != 0x7f {
			b.WriteRune(r)
		}
	}
	s := strings.ToLower(b.String())
	return strings.HasPrefix(s, "javascript:") || strings.HasPrefix(s, "vbscript:") || strings.HasPrefix(s, "livescript:")
}

// cssComment is a CSS comment, dropped before the checks (u/**/rl( is not
// url( to a browser, but a/**/b must not hide one either way).
var cssComment = regexp.MustCompile(`(?s)/\*.*?\*/`)

// cssURL finds url( with what follows, up to its closing parenthesis.
var cssURL = regexp.MustCompile(`(?i)url\(\s*(['"]?)([^'")]*)`)

// checkCSS refuses what CSS may load or run: @import, url() outside inline
// images (and assetOrigin), image-set(), old IE expressions and bindings,
// escapes (which could spell any of these), and template values.
func checkCSS(css, assetOrigin string) string {
	if strings.Contains(css, "{{") {
		return "may not hold a template value"
	}
	if strings.Contains(css, `\`) {
		return "may not use CSS escapes (\\)"
	}
	s := strings.ToLower(cssComment.ReplaceAllString(css, ""))
	for _, bad := range []string{"@import", "expression(", "-moz-binding", "behavior:", "image-set(", "javascript:"} {
		if strings.Contains(s, bad) {
			return "may not use " + strings.TrimSuffix(strings.TrimSuffix(bad, "("), ":")
		}
	}
	if strings.Contains(s, "/*") {
		return "has an unclosed comment"
	}
	for _, m := range cssURL.FindAllStringSubmatch(cssComment.ReplaceAllString(css, ""), -1) {
		if !inlineOrOwn(m[2], assetOrigin) {
			return "url() " + externalReason(assetOrigin)
		}
	}
	return ""
}
