package httpapi_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	attackerUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0 Safari/537.36"
	phoneUA    = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1"
)

// page is one answer of the consent page.
type page struct {
	status   int
	header   http.Header
	body     string
	location string
}

// browse sends a request as a browser would, without following redirects.
func (e *env) browse(t *testing.T, method, rawURL, ua string, form url.Values) page {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, rawURL, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", ua)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, header: res.Header, body: string(b), location: res.Header.Get("Location")}
}

var matchNumberRE = regexp.MustCompile(`data-testid="match-number">(\d+)<`)

// testMagicLinkConsentFlow drives R-ML-4 over HTTP: an attacker asks for the
// victim's link and polls; the victim opens the e-mail elsewhere, sees who
// asked and denies, and the attacker gets nothing. Then a genuine
// cross-device sign-in is approved, and a same-device open is one click.
func testMagicLinkConsentFlow(t *testing.T, e *env) {
	login, status := e.authPath("/magic_links/login"), e.authPath("/magic_links/status")
	ask := func(t *testing.T, ua string) (handle string, number int, link string) {
		t.Helper()
		r := scenario{name: "ask for a link", method: "POST", path: login, headers: map[string]string{"User-Agent": ua},
			body: map[string]any{"identifier": "victim@example.com"}, wantStatus: 200,
			events: []string{"verification.email.requested", "challenge.created"}}.run(t, e)
		ml := r.obj("magic_link")
		handle, _ = ml["id"].(string)
		n, _ := ml["match_number"].(float64)
		m, ok := e.Mail.Last("victim@example.com")
		if !ok || handle == "" || n < 10 || n > 99 {
			t.Fatalf("magic_link = %v; want an id and a two-digit match_number", ml)
		}
		e.remember(handle)
		e.remember(linkToken(t, m.Link))
		return handle, int(n), m.Link
	}
	poll := func(t *testing.T, name, handle, ua string, want int, code string, events ...string) response {
		t.Helper()
		e.Clock.Advance(3 * time.Second) // past the poll interval
		return scenario{name: name, method: "POST", path: status, headers: map[string]string{"User-Agent": ua},
			body: map[string]any{"id": handle}, wantStatus: want, wantCode: code, events: events}.run(t, e)
	}
	// The first request creates the victim; what it emits is not under test.
	scenario{name: "the victim's account", method: "POST", path: login, body: map[string]any{"identifier": "victim@example.com"},
		wantStatus: 200, events: []string{"user.created", "verification.email.requested", "challenge.created"}}.run(t, e)

	t.Run("deny", func(t *testing.T) {
		handle, number, link := ask(t, attackerUA)
		if !strings.HasPrefix(link, e.URL+e.authPath("/magic_links/open?sct_magic=")) {
			t.Fatalf("e-mailed link %q; want the consent page of this server", link)
		}
		for _, method := range []string{"GET", "HEAD", "GET"} { // a scanner's visits change nothing
			if p := e.browse(t, method, link, "Mozilla/5.0 (compatible; SafeLinks-Scanner/1.0)", nil); p.status != 200 {
				t.Fatalf("%s link by a scanner = %d; want the page", method, p.status)
			}
		}
		poll(t, "still pending after a scanner", handle, attackerUA, 409, "magic_link_pending")
		p := e.browse(t, "GET", link, phoneUA, nil)
		if p.status != 200 || !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET link on the victim's phone = %d %s; want the HTML consent page", p.status, p.header.Get("Content-Type"))
		}
		for _, h := range []string{"Content-Security-Policy", "X-Frame-Options", "Referrer-Policy", "Cache-Control"} {
			if p.header.Get(h) == "" {
				t.Errorf("consent page lacks %s", h)
			}
		}
		m := matchNumberRE.FindStringSubmatch(p.body)
		if m == nil || m[1] != strconv.Itoa(number) {
			t.Errorf("consent page shows number %v; want %d, the one the asking device got", m, number)
		}
		for _, want := range []string{"Was this you?", "Chrome on Windows", "Approve", "Deny", "v*****@example.com"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("consent page lacks %q", want)
			}
		}
		if strings.Contains(p.body, "victim@example.com") {
			t.Errorf("consent page shows the full address")
		}
		tok := linkToken(t, link)
		d := e.browse(t, "POST", link, phoneUA, url.Values{"sct_magic": {tok}, "decision": {"deny"}})
		if d.status != 200 || !strings.Contains(d.body, "Request denied") {
			t.Fatalf("POST deny = %d; want the denied page", d.status)
		}
		if got := e.events.take(t); !slices.Equal(got, []string{"challenge.failed", "verification.email.denied"}) {
			t.Errorf("deny emitted %v; want verification.email.denied", got)
		}
		poll(t, "the attacker's poll after the deny", handle, attackerUA, 404, "magic_link_denied")
		if again := e.browse(t, "GET", link, phoneUA, nil); again.status != 404 || !strings.Contains(again.body, "expired") {
			t.Errorf("GET link after deny = %d; want the expired page", again.status)
		}
		scenario{name: "the denied token cannot be exchanged", method: "PATCH", path: e.authPath("/magic_links/authenticate"),
			body: map[string]any{"token": tok}, wantStatus: 404, wantCode: "magic_link_not_found_or_expired",
			events: []string{"auth.login.failed"}}.run(t, e)
	})

	t.Run("approve", func(t *testing.T) {
		handle, _, link := ask(t, attackerUA)
		tok := linkToken(t, link)
		poll(t, "pending", handle, attackerUA, 409, "magic_link_pending")
		for _, bad := range []url.Values{{"sct_magic": {tok}}, {"sct_magic": {tok}, "decision": {"yes"}}} {
			if p := e.browse(t, "POST", link, phoneUA, bad); p.status != 400 {
				t.Errorf("POST %v = %d; want 400 (an answer needs a decision)", bad, p.status)
			}
		}
		a := e.browse(t, "POST", link, phoneUA, url.Values{"sct_magic": {tok}, "decision": {"approve"}})
		if a.status != 200 || !strings.Contains(a.body, "Approved") {
			t.Fatalf("POST approve = %d; want the approved page", a.status)
		}
		if got := e.events.take(t); !slices.Equal(got, []string{"challenge.completed", "verification.email.verified"}) {
			t.Errorf("approve emitted %v; want verification.email.verified", got)
		}
		r := poll(t, "the asking device collects its session", handle, attackerUA, 200, "")
		e.tokenSet(t, r, r.str("user_id"))
		poll(t, "once", handle, attackerUA, 404, "magic_link_not_found_or_expired")
	})

	t.Run("same device", func(t *testing.T) {
		handle, _, link := ask(t, browserUA)
		p := e.browse(t, "GET", link, browserUA, nil)
		tok := linkToken(t, link)
		if p.status != http.StatusSeeOther || !strings.Contains(p.location, "sct_magic="+url.QueryEscape(tok)) {
			t.Fatalf("GET link on the asking device = %d to %q; want 303 to the app with the token", p.status, p.location)
		}
		poll(t, "the redirect changed nothing", handle, browserUA, 409, "magic_link_pending")
		r := scenario{name: "the app exchanges the token on the same device", method: "PATCH",
			path: e.authPath("/magic_links/authenticate"), headers: map[string]string{"User-Agent": browserUA},
			body: map[string]any{"token": tok}, wantStatus: 200, events: []string{"verification.email.verified", "challenge.completed"}}.run(t, e)
		e.tokenSet(t, r, r.str("user_id"))
		poll(t, "the other tab collects its session", handle, browserUA, 200, "")
	})

	t.Run("unknown link", func(t *testing.T) {
		for _, u := range []string{e.URL + e.authPath("/magic_links/open"), e.URL + e.authPath("/magic_links/open?sct_magic=forged"),
			e.URL + "/v1/auth/no-such-app/magic_links/open?sct_magic=x"} {
			if p := e.browse(t, "GET", u, phoneUA, nil); p.status != 404 {
				t.Errorf("GET %s = %d; want 404", u, p.status)
			}
		}
		if p := e.browse(t, "POST", e.URL+e.authPath("/magic_links/open"), phoneUA, url.Values{"sct_magic": {"forged"}, "decision": {"approve"}}); p.status != 404 {
			t.Errorf("POST forged = %d; want 404", p.status)
		}
	})
}

// linkToken reads the sct_magic parameter of a link.
func linkToken(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("sct_magic") == "" {
		t.Fatalf("link %q has no sct_magic", link)
	}
	return u.Query().Get("sct_magic")
}
