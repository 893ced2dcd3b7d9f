package courier

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter caps the wait a provider may ask for: a broken or hostile
// endpoint must not park a message for days. The send queue may wait less.
const maxRetryAfter = time.Hour

// maxResponseRead bounds how much of a provider's answer is read.
const maxResponseRead = 64 << 10

// parseRetryAfter reads a Retry-After header, either delay-seconds or an
// HTTP-date (RFC 9110 §10.2.3), relative to now. Missing, malformed or past
// values are 0; values above maxRetryAfter are capped.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	switch {
	case d <= 0:
		return 0
	case d > maxRetryAfter:
		return maxRetryAfter
	}
	return d
}

// statusError classifies an HTTP answer that is not a success by its status
// alone: 408, 425, 429 and 5xx are temporary (429 and 503 with the
// Retry-After the provider sent), every other status is permanent. what
// describes the failure in words the operator can act on; it must not quote
// the provider's body, which may echo the message or the address.
func statusError(provider string, resp *http.Response, code, what string, now time.Time) *SendError {
	se := &SendError{Provider: provider, Status: resp.StatusCode, Code: code, Temporary: temporaryStatus(resp.StatusCode)}
	if se.Temporary {
		se.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
	}
	if what == "" && resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		what = "redirect not followed"
	}
	se.Msg = describeAnswer(resp.StatusCode, code, what)
	return se
}

// temporaryStatus reports whether an HTTP status means "try the same request later".
func temporaryStatus(status int) bool {
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly, status == http.StatusTooManyRequests:
		return true
	case status >= 500:
		return true
	}
	return false
}

// describeAnswer builds a SendError message such as
// "answered 400 (code 21211): the To number is not a valid phone number".
func describeAnswer(status int, code, what string) string {
	var b strings.Builder
	if status > 0 {
		fmt.Fprintf(&b, "answered %d", status)
	}
	if code != "" {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "(code %s)", code)
	}
	if what != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(what)
	}
	return b.String()
}

// transportError classifies a request that got no HTTP answer (DNS, connect,
// TLS, reset, timeout): always temporary. The Go error text is not used, as
// it quotes the URL, which for some providers holds account ids.
func transportError(provider string, ctx context.Context, err error) *SendError {
	se := &SendError{Provider: provider, Temporary: true}
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		se.Msg = "request canceled"
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		se.Msg = "request timed out"
	default:
		se.Msg = "endpoint unreachable"
	}
	return se
}

// isLoopbackHost reports whether host (no port) names this machine.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkEndpoint parses an endpoint URL an app admin chose: absolute https
// (http only for a loopback host, for local gateways and tests), no user
// info or query (credentials belong in the secret fields), no fragment.
func checkEndpoint(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, errors.New("must be an absolute https URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
	default:
		return nil, errors.New("must be an absolute https URL")
	}
	if u.User != nil {
		return nil, errors.New("must not contain a user name or password")
	}
	if u.Fragment != "" || u.RawFragment != "" {
		return nil, errors.New("must not contain a fragment")
	}
	if u.RawQuery != "" || u.ForceQuery {
		// Gateways often take a key in the query; URLs are shown in clear to
		// whoever may read the app's settings, secrets never are.
		return nil, errors.New("must not contain a query string: put credentials in the secret settings (token)")
	}
	return u, nil
}

// httpClient returns a copy of c (or a new client with timeout) that never
// follows a redirect: a redirect could carry the message, or the
// credentials, to a host nobody chose. A 3xx is then a permanent failure.
func httpClient(c *http.Client, timeout time.Duration) *http.Client {
	var cc http.Client
	if c != nil {
		cc = *c
	} else {
		cc.Timeout = timeout
	}
	cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cc
}
