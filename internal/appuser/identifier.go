// Package appuser manages the users of apps: creation, invitation, updates, status and lookup.
package appuser

import (
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// Kind is the kind of an identifier.
type Kind string

// Kinds of identifier.
const (
	KindEmail Kind = "email"
	KindPhone Kind = "phone"
)

// ErrInvalidIdentifier is returned, wrapped with a short reason, for any input that is not a usable
// e-mail address or phone number. The reason never echoes the input, which is personal data.
var ErrInvalidIdentifier = errors.New("invalid identifier")

// Limits on e-mail addresses (RFC 5321 §4.5.3.1, with the 254 total imposed by the path limit).
const (
	maxEmailLen = 254
	maxLocalLen = 64
	maxLabelLen = 63
	// maxE164Digits is the longest number E.164 allows, country code included.
	maxE164Digits = 15
)

// Identifier is a normalised e-mail address or E.164 phone number.
type Identifier struct {
	Kind  Kind
	Value string
}

// ParseIdentifier normalises raw into an Identifier. Surrounding white space is trimmed; an input
// containing "@" must be an e-mail address (see ParseEmail), anything else a phone number in
// international form (see ParsePhone). Failures wrap ErrInvalidIdentifier.
func ParseIdentifier(raw string) (Identifier, error) {
	s := strings.TrimSpace(raw)
	if strings.Contains(s, "@") {
		return parseEmail(s)
	}
	return parsePhone(s)
}

// ParseEmail normalises raw as an e-mail address only. It accepts a bare ASCII addr-spec (no display
// name, angle brackets, comments or quoted local part) of at most 254 characters with a local part of
// at most 64, whose domain has at least two labels of [a-z0-9-] and a top-level label of two or more
// characters. The result is lower-cased so that case variants name one user.
func ParseEmail(raw string) (Identifier, error) {
	return parseEmail(strings.TrimSpace(raw))
}

// ParsePhone normalises raw as a phone number only. It must start with "+" or "00" (read as "+");
// spaces, dots, dashes and parentheses are ignored; the number must be valid for its country code.
// The result is in E.164 form, for example "+14155552671".
func ParsePhone(raw string) (Identifier, error) {
	return parsePhone(strings.TrimSpace(raw))
}

func invalid(reason string) error {
	return fmt.Errorf("%w: %s", ErrInvalidIdentifier, reason)
}

// parseEmail expects s already trimmed.
func parseEmail(s string) (Identifier, error) {
	if s == "" {
		return Identifier{}, invalid("empty e-mail address")
	}
	// Checked before parsing so that huge inputs cost nothing.
	if len(s) > maxEmailLen {
		return Identifier{}, invalid("e-mail address is too long")
	}
	addr, err := mail.ParseAddress(s)
	if err != nil {
		return Identifier{}, invalid("malformed e-mail address")
	}
	// Equality rules out display names, <>, comments and quoted local parts, which the parser
	// accepts but strips or rewrites.
	if addr.Name != "" || addr.Address != s {
		return Identifier{}, invalid("e-mail address must be a bare address")
	}
	for i := 0; i < len(s); i++ {
		// ASCII only: Unicode case folding and look-alike characters would let one person hold
		// several identifiers that differ invisibly.
		if s[i] <= ' ' || s[i] > '~' {
			return Identifier{}, invalid("e-mail address must be ASCII")
		}
	}
	at := strings.LastIndexByte(s, '@')
	local, domain := s[:at], strings.ToLower(s[at+1:])
	if local == "" || len(local) > maxLocalLen {
		return Identifier{}, invalid("e-mail local part is empty or too long")
	}
	if err := checkDomain(domain); err != nil {
		return Identifier{}, err
	}
	return Identifier{Kind: KindEmail, Value: strings.ToLower(s)}, nil
}

// checkDomain expects a lower-cased domain.
func checkDomain(domain string) error {
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return invalid("e-mail domain has no dot")
	}
	for _, l := range labels {
		if l == "" || len(l) > maxLabelLen {
			return invalid("e-mail domain has an empty or too long label")
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return invalid("e-mail domain label starts or ends with a dash")
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
				return invalid("e-mail domain has a character other than letters, digits and dashes")
			}
		}
	}
	if len(labels[len(labels)-1]) < 2 {
		return invalid("e-mail top-level domain is too short")
	}
	return nil
}

// parsePhone expects s already trimmed.
func parsePhone(s string) (Identifier, error) {
	var rest string
	switch {
	case strings.HasPrefix(s, "+"):
		rest = s[1:]
	case strings.HasPrefix(s, "00"):
		rest = s[2:]
	default:
		return Identifier{}, invalid("phone number must start with + or 00")
	}
	digits := make([]byte, 0, maxE164Digits)
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case c >= '0' && c <= '9':
			if len(digits) == maxE164Digits {
				return Identifier{}, invalid("phone number is too long")
			}
			digits = append(digits, c)
		case c == ' ' || c == '.' || c == '-' || c == '(' || c == ')':
			// Common formatting, ignored.
		default:
			// Letters too: phonenumbers would read vanity numbers such as 1-800-FLOWERS, which
			// makes an identifier ambiguous.
			return Identifier{}, invalid("phone number has a character other than digits and separators")
		}
	}
	if len(digits) == 0 {
		return Identifier{}, invalid("phone number has no digits")
	}
	num, err := phonenumbers.Parse("+"+string(digits), "")
	if err != nil {
		return Identifier{}, invalid("malformed phone number")
	}
	if !phonenumbers.IsValidNumber(num) {
		return Identifier{}, invalid("phone number is not valid for its country")
	}
	return Identifier{Kind: KindPhone, Value: phonenumbers.Format(num, phonenumbers.E164)}, nil
}
