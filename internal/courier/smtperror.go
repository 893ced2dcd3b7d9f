package courier

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strings"

	gomail "github.com/wneessen/go-mail"
)

// smtpProvider names the SMTP provider in SendErrors.
const smtpProvider = "smtp"

// smtpReplies describes the SMTP reply codes (RFC 5321 §4.2.3) a send
// meets most; the server's own reply text is never quoted, as servers echo
// addresses and, on DATA, parts of the message.
var smtpReplies = map[int]string{
	421: "service not available",
	450: "mailbox unavailable (try later)",
	451: "local error in processing",
	452: "insufficient storage",
	454: "temporary authentication failure",
	502: "command not accepted",
	530: "authentication required",
	534: "authentication mechanism too weak",
	535: "authentication failed (check username and password)",
	550: "mailbox unavailable or relaying denied",
	551: "user not local",
	552: "message exceeds storage allocation",
	553: "mailbox name not allowed",
	554: "transaction failed",
	555: "MAIL FROM/RCPT TO parameters not recognized",
}

// classifySMTP turns a go-mail failure into a *SendError: 4xx replies and
// network trouble are temporary, 5xx replies and configuration mismatches
// (no STARTTLS under starttls-required, an untrusted certificate, a plain
// port under tls, no AUTH offered) are permanent. Status is the reply code,
// Code the enhanced status code (e.g. 5.1.1) when the server sent one.
func classifySMTP(ctx context.Context, err error) *SendError {
	se := &SendError{Provider: smtpProvider}
	phase := "connect"
	var gse *gomail.SendError
	if errors.As(err, &gse) {
		phase = gse.Reason.String()
		se.Status = gse.ErrorCode()
		se.Code = gse.EnhancedStatusCode()
	}
	var pse *smtpStepError
	if errors.As(err, &pse) {
		phase, se.Code = pse.reason.String(), pse.code
		if errors.Is(err, errBadAddress) {
			se.Msg = phase + ": invalid address"
			return se
		}
	}
	var tpe *textproto.Error
	if se.Status == 0 && errors.As(err, &tpe) {
		se.Status = tpe.Code
	}
	if se.Status >= 400 && se.Status <= 599 {
		se.Temporary = se.Status < 500
		what := smtpReplies[se.Status]
		if what == "" {
			what = "refused"
		}
		se.Msg = fmt.Sprintf("%s: %s", phase, describeAnswer(se.Status, se.Code, what))
		return se
	}

	var (
		ne        net.Error
		verifyErr *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		recordErr tls.RecordHeaderError
	)
	text := err.Error()
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		se.Temporary, se.Msg = true, phase+": canceled"
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		se.Temporary, se.Msg = true, phase+": timed out"
	case errors.As(err, &verifyErr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr) || errors.As(err, &invalid):
		se.Msg = phase + ": the server's TLS certificate is not trusted"
	case errors.As(err, &recordErr):
		se.Msg = phase + ": the server does not speak TLS on this port (check tls and port)"
	case strings.Contains(text, "does not support STARTTLS"):
		se.Msg = phase + ": the server does not offer STARTTLS (tls is starttls-required)"
	case errors.Is(err, gomail.ErrPlainAuthNotSupported), errors.Is(err, gomail.ErrLoginAuthNotSupported),
		errors.Is(err, gomail.ErrNoSupportedAuthDiscovered), strings.Contains(text, "does not support SMTP AUTH"):
		se.Msg = phase + ": the server does not offer the AUTH method (or only over TLS)"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne):
		se.Temporary, se.Msg = true, phase+": connection failed"
	default:
		// Unrecognised: counted as temporary, like Temporary does for unclassified errors.
		se.Temporary, se.Msg = true, phase+": failed"
	}
	return se
}
