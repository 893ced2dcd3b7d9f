package courier

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// FuzzHTMLSafety: what checkHTMLSafety accepts, read again by the full
// HTML parser (which a mail client's engine is closer to than the
// tokenizer the check reads with), holds no refused element, no event
// attribute and no script URL. It never panics on any input.
func FuzzHTMLSafety(f *testing.F) {
	for _, s := range []string{
		`<p><a href="{{.Link}}">x</a></p>`,
		`<img src="data:image/png;base64,AA" srcset="data:image/png;base64,AA 1x,https://e/a.png 2x">`,
		`<style>p{background:url(data:image/png;base64,AA)}</style>`,
		`<scr<script>ipt>`,
		`<svg><p><style><img src=x onerror=alert(1)>`,
		`<table><tr><td><form><input></form></td></tr></table>`,
		`<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`,
		`<noscript><p title="</noscript><img src=x onerror=alert(1)>">`,
		`<a href="jav&#x09;ascript:alert(1)">x</a>`,
		`<!--<script>--><p>x</p>`,
		`<textarea><script>alert(1)</script></textarea>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if checkHTMLSafety(src, "https://auth.example.com") != nil {
			return
		}
		doc, err := html.Parse(strings.NewReader(src))
		if err != nil {
			return
		}
		var walk func(n *html.Node)
		walk = func(n *html.Node) {
			if n.Type == html.ElementNode {
				if _, refused := refusedElements[n.Data]; refused {
					t.Fatalf("accepted %q, which the parser reads with <%s>", src, n.Data)
				}
				for _, a := range n.Attr {
					if strings.HasPrefix(strings.ToLower(a.Key), "on") || scriptURL(a.Val) {
						t.Fatalf("accepted %q, which the parser reads with <%s %s=%q>", src, n.Data, a.Key, a.Val)
					}
				}
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		walk(doc)
	})
}
