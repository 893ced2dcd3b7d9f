package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nyaruka/phonenumbers"

	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
)

// Validate checks every setting in table order and returns a *SettingError
// for the first invalid one. It does not require a master key: development
// mode generates one, so the caller decides.
func (c Config) Validate() error {
	for _, s := range table() {
		if s.check == nil {
			continue
		}
		if err := s.check(c); err != nil {
			return s.invalid(err.Error())
		}
	}
	return nil
}

// masterKeyLen is the size of the AES-256 master key.
const masterKeyLen = 32

// DecodeMasterKey decodes a base64 master key (standard or URL alphabet,
// padding optional, surrounding white space ignored, as in a key file) and
// checks that it is 32 bytes. The error never contains the key.
func DecodeMasterKey(s string) ([]byte, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(b) != masterKeyLen {
			return nil, fmt.Errorf("master key is %d bytes; want %d", len(b), masterKeyLen)
		}
		return b, nil
	}
	return nil, errors.New("master key is not valid base64")
}

func notEmpty(s string) error {
	if s == "" {
		return errors.New("must not be empty")
	}
	return nil
}

func positive(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("must be positive, got %v", d)
	}
	return nil
}

func inRange(n, lo, hi int) error {
	if n < lo || n > hi {
		return fmt.Errorf("%d is out of range %d to %d", n, lo, hi)
	}
	return nil
}

func oneOf(v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	var names []string
	for _, a := range allowed {
		if a != "" {
			names = append(names, a)
		}
	}
	return fmt.Errorf("unknown value %q (want one of %s)", v, strings.Join(names, ", "))
}

func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. \"127.0.0.1:8080\" or \":8080\")", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("invalid port %q", port)
	}
	return nil
}

func checkCIDRs(cidrs []string) error {
	for _, s := range cidrs {
		if _, err := netip.ParsePrefix(s); err != nil {
			return fmt.Errorf("invalid CIDR %q (want e.g. \"10.0.0.0/8\")", s)
		}
	}
	return nil
}

// checkBaseURL requires an absolute http or https URL without user info,
// query or fragment. base_url also must not end in a slash, because links are
// built by appending paths to it; Load trims it.
func checkBaseURL(s string, noTrailingSlash bool) error {
	if s == "" {
		return errors.New("must not be empty")
	}
	// A value with user information may hold a password (sms.http_url), so
	// it is never quoted, not even when it does not parse.
	shown := strconv.Quote(s)
	if strings.Contains(s, "@") {
		shown = "the URL"
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%s is not a valid URL", shown)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%s must start with http:// or https://", shown)
	case u.Host == "":
		return fmt.Errorf("%s has no host", shown)
	case u.User != nil:
		return errors.New("must not contain user information")
	case strings.ContainsAny(s, "?#"):
		return fmt.Errorf("%s must not have a query or fragment", shown)
	case noTrailingSlash && strings.HasSuffix(s, "/"):
		return fmt.Errorf("%s must not end with a slash", shown)
	}
	return nil
}

// checkDatabaseURL accepts the PostgreSQL and SQLite forms. The URL may hold
// a password, so reasons never quote it; only a well-formed scheme is shown.
func checkDatabaseURL(s string) error {
	if s == "" {
		return nil
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || !validScheme(scheme) {
		return errors.New("missing scheme (want postgres://, postgresql://, sqlite:PATH or file:PATH)")
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		if !strings.HasPrefix(rest, "//") {
			return fmt.Errorf("want %s://HOST/DATABASE", strings.ToLower(scheme))
		}
		if _, err := url.Parse(s); err != nil {
			// The url error repeats the URL, so it is not wrapped.
			return errors.New("malformed PostgreSQL URL")
		}
	case "sqlite", "file":
		if strings.TrimPrefix(rest, "//") == "" {
			return errors.New("missing SQLite file path")
		}
	default:
		return fmt.Errorf("unsupported scheme %q (want postgres, postgresql, sqlite or file)", scheme)
	}
	return nil
}

// validScheme reports whether s has URL scheme syntax (RFC 3986 3.1), so
// that only a short scheme-shaped prefix of the URL is ever echoed.
func validScheme(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

func checkMailAddress(s string) error {
	if _, err := mail.ParseAddress(s); err != nil {
		return fmt.Errorf("%q is not an e-mail address (want e.g. \"Gatehouse <no-reply@example.com>\")", s)
	}
	return nil
}

func durationRange(d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return fmt.Errorf("must be between %s and %s", lo, hi)
	}
	return nil
}

// checkRule accepts what the server will parse: ratelimit.ParseRule's
// "N/PERIOD" (5/10m, 30/1h; N up to 10^9, PERIOD whole milliseconds) or off.
// A second parser here accepted "5/1ns", which then stopped `serve`.
func checkRule(s string) error {
	_, err := ratelimit.ParseRule(s)
	return err
}

// emailSuffixRe is a sub-address tag: "+" and at least two more of the
// characters such tags use. Requiring the "+" keeps every address without
// one (most real addresses) from ever being a test identity.
var emailSuffixRe = regexp.MustCompile(`^\+[a-z0-9._-]{2,62}$`)

func checkEmailSuffix(s string) error {
	if s == Off || emailSuffixRe.MatchString(s) {
		return nil
	}
	return errors.New(`must be "+" and 2 to 62 letters, digits, dots, dashes or underscores (e.g. "+scute_test"), or off`)
}

// testCodeDigits is the length of every one-time code (signin's codeDigits):
// a code of another length would be refused before it is compared.
const testCodeDigits = 6

// checkTestCode does not quote the value: an operator who chose a code of
// their own may want it kept from logs.
func checkTestCode(s string) error {
	if len(s) != testCodeDigits || strings.Trim(s, "0123456789") != "" {
		return fmt.Errorf("must be %d digits, as every one-time code", testCodeDigits)
	}
	return nil
}

// checkCountries accepts ISO 3166-1 alpha-2 codes of regions with phone
// numbers (in any case), or * alone; none sends no SMS at all.
func checkCountries(list []string) error {
	if len(list) == 1 && list[0] == "*" {
		return nil
	}
	for _, c := range list {
		if c == "*" {
			return errors.New("* (every country) stands alone")
		}
		if len(c) != 2 || phonenumbers.GetCountryCodeForRegion(strings.ToUpper(c)) == 0 {
			return fmt.Errorf("%q is not an ISO 3166-1 alpha-2 country code with phone numbers", c)
		}
	}
	return nil
}
