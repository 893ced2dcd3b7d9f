// Package errs is what every layer shares about errors: the one typed error
// for input that breaks a rule, the sentinels for an unreachable database and
// for work that ran out of time, and the wrapping that names the operation at
// a domain boundary. httpapi's error table matches these by type, never by
// their text.
package errs

import (
	"errors"
	"fmt"
)

// Invalid is input that breaks a rule: which field, and why. Reason does not
// repeat the field ("must use https", not "url must use https").
type Invalid struct {
	Field  string
	Reason string
}

func (e *Invalid) Error() string { return e.Field + " " + e.Reason }

// Invalidf returns an *Invalid for field with a formatted reason.
func Invalidf(field, format string, args ...any) error {
	return &Invalid{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ErrUnavailable is an outage of the database (or another dependency every
// request needs): the request may succeed if retried.
var ErrUnavailable = errors.New("service unavailable")

// ErrTimeout is work that ran out of time: a database statement or lock
// wait past its bound, or a transaction left idle too long. Like
// ErrUnavailable it says nothing about the request, which may succeed if
// retried.
var ErrTimeout = errors.New("timed out")

// Wrap prefixes *err with the operation when it is not nil. Domain methods
// defer it first thing, so a failure logged far away still names what failed
// ("verify otp: store: ..."); sentinels and types stay reachable through
// errors.Is and errors.As.
func Wrap(err *error, op string) {
	if *err != nil {
		*err = fmt.Errorf("%s: %w", op, *err)
	}
}
