// Package webhookverify checks that a request really is a Gatehouse webhook delivery.
//
// Every delivery is a POST whose X-Webhook-Signature header reads
//
//	t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw body)>
//
// with one v1 per valid signing secret while a secret is being rotated. The key is the
// endpoint's signing secret string exactly as the API returned it (whsec_…), used as bytes,
// not decoded. See docs/webhooks.md for the receiver contract and for Node and Python versions.
package webhookverify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header is the name of the HTTP header that carries the signature.
const Header = "X-Webhook-Signature"

// DefaultTolerance is how far the signed timestamp may be from the receiver's clock, either way.
const DefaultTolerance = 5 * time.Minute

// Errors returned by Verify; test them with errors.Is, the returned errors add detail.
var (
	ErrMissingHeader   = errors.New("webhookverify: missing signature header")
	ErrMalformedHeader = errors.New("webhookverify: malformed signature header")
	ErrTimestamp       = errors.New("webhookverify: timestamp outside tolerance")
	ErrSignature       = errors.New("webhookverify: no matching signature")
)

// Sign returns the header value for body at time t, one v1 per secret, as the server sends
// it. It is exported for tests and tooling. t must not be before 1970: Verify accepts only
// non-negative timestamps.
func Sign(body []byte, t time.Time, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(ts)
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(mac(s, ts, body)))
	}
	return b.String()
}

// Verify checks header against body with any of the secrets (several during a rotation) and
// that the signed timestamp is within tolerance of now; a tolerance <= 0 means
// DefaultTolerance. Signatures are compared in constant time. Unknown keys in the header
// (v0=, v2=, …) are ignored and every v1 is tried. Empty secrets are skipped, so that a
// missing configuration value cannot turn into an empty HMAC key anyone could use.
//
// The signature is checked before the timestamp, so ErrTimestamp means an authentic but
// stale (or replayed, or clock-skewed) delivery.
func Verify(header string, body []byte, now time.Time, tolerance time.Duration, secrets ...string) error {
	h, err := parseHeader(header)
	if err != nil {
		return err
	}
	if !h.matches(body, secrets) {
		return ErrSignature
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	// Whole seconds on both sides, like the header; Sub saturates, so huge t cannot overflow.
	skew := now.Truncate(time.Second).Sub(time.Unix(h.unix, 0))
	if skew > tolerance || skew < -tolerance {
		return fmt.Errorf("%w: signed %v from now", ErrTimestamp, skew.Abs())
	}
	return nil
}

// signatureHeader is a parsed X-Webhook-Signature value.
type signatureHeader struct {
	t    string // the digits as sent: they are what was signed
	unix int64
	v1   [][]byte
}

// parseHeader splits header into its t and v1 parts. Parts are comma-separated key=value
// pairs, surrounding spaces and empty parts are tolerated, unknown keys are ignored.
func parseHeader(header string) (signatureHeader, error) {
	var h signatureHeader
	if strings.TrimSpace(header) == "" {
		return h, ErrMissingHeader
	}
	seenT := false
	for part := range strings.SplitSeq(header, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, value, ok := strings.Cut(part, "=")
		if !ok {
			return h, fmt.Errorf("%w: part without '='", ErrMalformedHeader)
		}
		switch key {
		case "t":
			if seenT {
				// Two timestamps would make it ambiguous which one was signed.
				return h, fmt.Errorf("%w: more than one t", ErrMalformedHeader)
			}
			seenT = true
			if !isDigits(value) {
				return h, fmt.Errorf("%w: t is not a decimal number", ErrMalformedHeader)
			}
			// 18 digits always fit an int64; the Node and Python versions use the same bound.
			if len(value) > 18 {
				return h, fmt.Errorf("%w: t out of range", ErrMalformedHeader)
			}
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return h, fmt.Errorf("%w: t out of range", ErrMalformedHeader)
			}
			h.t, h.unix = value, n
		case "v1":
			sig, err := hex.DecodeString(value)
			if err != nil || len(sig) == 0 {
				return h, fmt.Errorf("%w: v1 is not hex", ErrMalformedHeader)
			}
			h.v1 = append(h.v1, sig)
		}
	}
	if !seenT {
		return h, fmt.Errorf("%w: no t", ErrMalformedHeader)
	}
	if len(h.v1) == 0 {
		return h, fmt.Errorf("%w: no v1", ErrMalformedHeader)
	}
	return h, nil
}

// matches reports whether any v1 in h is the HMAC of body under any non-empty secret.
func (h signatureHeader) matches(body []byte, secrets []string) bool {
	for _, s := range secrets {
		if s == "" {
			continue
		}
		want := mac(s, h.t, body)
		for _, got := range h.v1 {
			if hmac.Equal(got, want) {
				return true
			}
		}
	}
	return false
}

// mac returns HMAC-SHA256(secret, ts + "." + body).
func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// isDigits reports whether s is one or more ASCII digits (no sign, no spaces).
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
