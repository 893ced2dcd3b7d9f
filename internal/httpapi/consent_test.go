package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
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

var (
	choiceRE      = regexp.MustCompile(`<input type="radio" name="number" value="(\d+)"`)
	preselectedRE = regexp.MustCompile(`<input[^>]*\bchecked\b`)
)

// choices are the numbers the consent page offers, in its order, and fails
// the test unless they are three distinct two-digit numbers, the right one
// once, none of them pre-selected.
func choices(t *testing.T, p page, right int) []int {
	t.Helper()
	var out []int
	for _, m := range choiceRE.FindAllStringSubmatch(p.body, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	sorted := slices.Sorted(slices.Values(out))
	if len(out) != 3 || len(slices.Compact(slices.Clone(sorted))) != 3 || sorted[0] < 10 || sorted[2] > 99 {
		t.Fatalf("consent page offers %v; want three distinct two-digit numbers", out)
	}
	if n := len(slices.DeleteFunc(slices.Clone(out), func(c int) bool { return c != right })); n != 1 {
		t.Fatalf("consent page offers %v; want the match number %d among them once", out, right)
	}
	if preselectedRE.MatchString(p.body) {
		t.Errorf("consent page pre-selects a choice")
	}
	return out
}

// decoy is a choice that is not the right number.
func decoy(offered []int, right int) int {
	return slices.DeleteFunc(slices.Clone(offered), func(c int) bool { return c == right })[0]
}

// eventData is the data of the newest recorded event of type typ.
func (l *eventLog) eventData(t *testing.T, typ string) map[string]any {
	t.Helper()
	ctx := t.Context()
	page, err := l.sys.Webhooks.Deliveries(ctx, servertest.Operator, l.appID, l.endpointID, 1, 100)
	if err != nil {
		t.Fatalf("read the recorded events: %v", err)
	}
	for _, d := range page.Deliveries { // newest first
		if d.EventType != typ {
			continue
		}
		w, err := l.sys.DB.GetDeliveryWork(ctx, d.ID)
		if err != nil {
			t.Fatalf("GetDeliveryWork(%s): %v", d.ID, err)
		}
		var env webhook.Envelope
		if err := json.Unmarshal(w.Body, &env); err != nil {
			t.Fatalf("delivery %s: %v", d.ID, err)
		}
		data, _ := env.Data.(map[string]any)
		return data
	}
	t.Fatalf("no %s event was recorded", typ)
	return nil
}

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
		offered := choices(t, p, number)
		if again := e.browse(t, "GET", link, phoneUA, nil); !slices.Equal(choices(t, again, number), offered) {
			t.Errorf("a reload offers %v, the first load %v; want the same choices in the same order", choices(t, again, number), offered)
		}
		if strings.Contains(p.body, "match-number") {
			t.Errorf("consent page shows the match number; want it asked for")
		}
		for _, want := range []string{"Was this you?", "Chrome on Windows", "Which number does that device show?", "Approve", "Deny",
			"v*****@example.com"} {
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
		handle, number, link := ask(t, attackerUA)
		tok := linkToken(t, link)
		poll(t, "pending", handle, attackerUA, 409, "magic_link_pending")
		right := strconv.Itoa(number)
		for _, bad := range []url.Values{{"sct_magic": {tok}, "number": {right}}, {"sct_magic": {tok}, "decision": {"yes"}, "number": {right}}} {
			if p := e.browse(t, "POST", link, phoneUA, bad); p.status != 400 {
				t.Errorf("POST %v = %d; want 400 (an answer needs a decision)", bad, p.status)
			}
		}
		a := e.browse(t, "POST", link, phoneUA, url.Values{"sct_magic": {tok}, "decision": {"approve"}, "number": {right}})
		if a.status != 200 || !strings.Contains(a.body, "Approved") {
			t.Fatalf("POST approve with the right number = %d; want the approved page", a.status)
		}
		if got := e.events.take(t); !slices.Equal(got, []string{"challenge.completed", "verification.email.verified"}) {
			t.Errorf("approve emitted %v; want verification.email.verified", got)
		}
		if d := e.events.eventData(t, "verification.email.verified"); d["consent_decision"] != "approved" {
			t.Errorf("verified event data %v; want consent_decision approved", d)
		}
		r := poll(t, "the asking device collects its session", handle, attackerUA, 200, "")
		e.tokenSet(t, r, r.str("user_id"))
		poll(t, "once", handle, attackerUA, 404, "magic_link_not_found_or_expired")
	})

	// Approve without the right number is the link's one guess: it denies.
	for _, tc := range []struct {
		name string
		form func(tok string, right int, offered []int) url.Values
	}{
		{"a wrong number", func(tok string, right int, offered []int) url.Values {
			return url.Values{"sct_magic": {tok}, "decision": {"approve"}, "number": {strconv.Itoa(decoy(offered, right))}}
		}},
		{"no number field", func(tok string, _ int, _ []int) url.Values {
			return url.Values{"sct_magic": {tok}, "decision": {"approve"}}
		}},
		{"an empty number", func(tok string, _ int, _ []int) url.Values {
			return url.Values{"sct_magic": {tok}, "decision": {"approve"}, "number": {""}}
		}},
		{"a malformed number", func(tok string, right int, _ []int) url.Values {
			return url.Values{"sct_magic": {tok}, "decision": {"approve"}, "number": {strconv.Itoa(right) + "x"}}
		}},
		{"two numbers", func(tok string, right int, offered []int) url.Values {
			return url.Values{"sct_magic": {tok}, "decision": {"approve"}, "number": {strconv.Itoa(decoy(offered, right)), strconv.Itoa(right)}}
		}},
	} {
		t.Run("approve with "+tc.name, func(t *testing.T) {
			handle, number, link := ask(t, attackerUA)
			tok := linkToken(t, link)
			offered := choices(t, e.browse(t, "GET", link, phoneUA, nil), number)
			d := e.browse(t, "POST", link, phoneUA, tc.form(tok, number, offered))
			if d.status != 200 || !strings.Contains(d.body, "Request denied") || !strings.Contains(d.body, "not the number") {
				t.Fatalf("POST approve with %s = %d; want the denied page saying the number was wrong", tc.name, d.status)
			}
			if got := e.events.take(t); !slices.Equal(got, []string{"challenge.failed", "verification.email.denied"}) {
				t.Errorf("approve with %s emitted %v; want verification.email.denied", tc.name, got)
			}
			if data := e.events.eventData(t, "verification.email.denied"); data["consent_decision"] != "denied" || data["denial_reason"] != "number_mismatch" {
				t.Errorf("denied event data %v; want consent_decision denied, denial_reason number_mismatch", data)
			}
			retry := e.browse(t, "POST", link, phoneUA, url.Values{"sct_magic": {tok}, "decision": {"approve"}, "number": {strconv.Itoa(number)}})
			if retry.status != 404 {
				t.Errorf("POST approve with the right number after %s = %d; want 404 (the link had its one guess)", tc.name, retry.status)
			}
			if got := e.events.take(t); len(got) != 0 {
				t.Errorf("the refused retry emitted %v; want nothing", got)
			}
			poll(t, "the asking device after "+tc.name, handle, attackerUA, 404, "magic_link_denied")
		})
	}

	t.Run("none of these", func(t *testing.T) {
		handle, _, link := ask(t, attackerUA)
		tok := linkToken(t, link)
		d := e.browse(t, "POST", link, phoneUA, url.Values{"sct_magic": {tok}, "decision": {"deny"}, "reason": {"number_mismatch"}})
		if d.status != 200 || !strings.Contains(d.body, "Request denied") {
			t.Fatalf("POST deny (none of these) = %d; want the denied page", d.status)
		}
		if got := e.events.take(t); !slices.Equal(got, []string{"challenge.failed", "verification.email.denied"}) {
			t.Errorf("deny emitted %v; want verification.email.denied", got)
		}
		if data := e.events.eventData(t, "verification.email.denied"); data["denial_reason"] != "number_mismatch" {
			t.Errorf("denied event data %v; want denial_reason number_mismatch", data)
		}
		poll(t, "denied", handle, attackerUA, 404, "magic_link_denied")
	})

	t.Run("50 answers at once", func(t *testing.T) {
		handle, number, link := ask(t, attackerUA)
		tok := linkToken(t, link)
		offered := choices(t, e.browse(t, "GET", link, phoneUA, nil), number)
		forms := make([]url.Values, 50)
		for i := range forms {
			forms[i] = url.Values{"sct_magic": {tok}, "decision": {"approve"}, "number": {strconv.Itoa(number)}}
			if i%2 == 1 {
				forms[i].Set("number", strconv.Itoa(decoy(offered, number)))
			}
		}
		statuses := make([]int, len(forms))
		bodies := make([]string, len(forms))
		var wg sync.WaitGroup
		for i, f := range forms {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", link, strings.NewReader(f.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("User-Agent", phoneUA)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Errorf("POST %d: %v", i, err)
					return
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				statuses[i], bodies[i] = res.StatusCode, string(b)
			})
		}
		wg.Wait()
		won := slices.IndexFunc(statuses, func(s int) bool { return s == 200 })
		if n := len(slices.DeleteFunc(slices.Clone(statuses), func(s int) bool { return s != 404 })); won < 0 || n != len(forms)-1 {
			t.Fatalf("50 answers at once: statuses %v; want one 200 and 49 404", statuses)
		}
		got := e.events.take(t)
		if won%2 == 0 { // the right number won
			if !strings.Contains(bodies[won], "Approved") || !slices.Equal(got, []string{"challenge.completed", "verification.email.verified"}) {
				t.Fatalf("the right number won; events %v; want approved, verification.email.verified once", got)
			}
			r := poll(t, "the asking device collects its session", handle, attackerUA, 200, "")
			e.tokenSet(t, r, r.str("user_id"))
		} else {
			if !strings.Contains(bodies[won], "Request denied") || !slices.Equal(got, []string{"challenge.failed", "verification.email.denied"}) {
				t.Fatalf("a wrong number won; events %v; want denied, verification.email.denied once", got)
			}
			poll(t, "denied", handle, attackerUA, 404, "magic_link_denied")
		}
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
