package courier

import (
	"errors"
	"net/textproto"
	"regexp"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
	gosmtp "github.com/wneessen/go-mail/smtp"
)

// transact sends msg on c's kept connection. When the server offers
// PIPELINING (RFC 2920; every large provider and Postfix do), MAIL, RCPT and
// DATA go out in one write and the message in a second: two round trips
// instead of four, which with a provider across the internet is most of a
// send's time, and two writes and wake-ups fewer on both sides. Without it,
// go-mail talks one command at a time.
func transact(c *smtpConn, msg *gomail.Msg, timeout time.Duration) error {
	if ok, _ := c.smtp.Extension("PIPELINING"); !ok {
		return c.client.SendWithSMTPClient(c.smtp, msg)
	}
	// As go-mail does before each message: the deadline set when the
	// connection was dialed has passed on one kept longer than timeout.
	if err := c.smtp.UpdateDeadline(timeout); err != nil {
		return &smtpStepError{reason: gomail.ErrConnCheck, err: err}
	}
	return pipelined(c.smtp, msg)
}

// pipelined is one mail transaction with the envelope pipelined. Every
// reply is read, in order, before any is judged (each command has exactly
// one); the message is written only when MAIL and every RCPT were accepted
// and DATA answered 354. On any failure the caller closes the connection,
// so a server left waiting for a message never gets one.
func pipelined(c *gosmtp.Client, msg *gomail.Msg) error {
	from, err := msg.GetSender(false)
	if err != nil {
		return &smtpStepError{reason: gomail.ErrGetSender, err: err}
	}
	rcpts, err := msg.GetRecipients()
	if err != nil {
		return &smtpStepError{reason: gomail.ErrGetRcpts, err: err}
	}
	// As go-mail's own MAIL: the body may be 8-bit and the addresses UTF-8
	// when the server says it takes them.
	mail := "MAIL FROM:" + from
	if ok, _ := c.Extension("8BITMIME"); ok {
		mail += " BODY=8BITMIME"
	}
	if ok, _ := c.Extension("SMTPUTF8"); ok {
		mail += " SMTPUTF8"
	}
	lines := make([]string, 0, len(rcpts)+2)
	lines = append(lines, mail)
	for _, r := range rcpts {
		lines = append(lines, "RCPT TO:"+r)
	}
	lines = append(lines, "DATA")
	for _, l := range lines {
		if strings.ContainsAny(l, "\r\n") {
			return &smtpStepError{reason: gomail.ErrSMTPMailFrom, err: errors.New("an address holds a line break")}
		}
	}
	for _, l := range lines {
		_, _ = c.Text.W.WriteString(l)
		_, _ = c.Text.W.WriteString("\r\n")
	}
	if err := c.Text.W.Flush(); err != nil { // a write error stays in the buffer and shows here
		return &smtpStepError{reason: gomail.ErrSMTPMailFrom, err: err}
	}
	var first error
	note := func(reason gomail.SendErrReason, err error) {
		if err != nil && first == nil {
			first = &smtpStepError{reason: reason, err: err}
		}
	}
	_, _, err = c.Text.ReadResponse(250)
	note(gomail.ErrSMTPMailFrom, err)
	for range rcpts {
		if first != nil && !isReply(first) {
			break // the connection failed: no more replies will come
		}
		_, _, err = c.Text.ReadResponse(25) // 250 or 251
		note(gomail.ErrSMTPRcptTo, err)
	}
	if first == nil || isReply(first) {
		_, _, err = c.Text.ReadResponse(354)
		note(gomail.ErrSMTPData, err)
	}
	if first != nil {
		return first
	}
	w := c.Text.DotWriter()
	if _, err := msg.WriteTo(w); err != nil {
		return &smtpStepError{reason: gomail.ErrWriteContent, err: err}
	}
	if err := w.Close(); err != nil { // the final "." and the flush
		return &smtpStepError{reason: gomail.ErrSMTPDataClose, err: err}
	}
	if _, _, err := c.Text.ReadResponse(250); err != nil {
		return &smtpStepError{reason: gomail.ErrSMTPDataClose, err: err}
	}
	return nil
}

// isReply reports whether err is the server's answer (a reply code), after
// which the connection still carries the next replies, rather than a failure
// of the connection itself.
func isReply(err error) bool {
	var tpe *textproto.Error
	return errors.As(err, &tpe)
}

// smtpStepError is the failure of one step of a pipelined transaction,
// named as go-mail names its own (classifySMTP reads both).
type smtpStepError struct {
	reason gomail.SendErrReason
	err    error
}

func (e *smtpStepError) Error() string { return e.reason.String() + ": " + e.err.Error() }
func (e *smtpStepError) Unwrap() error { return e.err }

// enhancedCode is the enhanced status code (RFC 3463, e.g. 5.1.1) that
// starts the text of a reply, or "".
func enhancedCode(tpe *textproto.Error) string {
	return enhancedCodePattern.FindString(tpe.Msg)
}

var enhancedCodePattern = regexp.MustCompile(`^[245]\.\d{1,3}\.\d{1,3}\b`)

// failedAtMail reports whether a transaction failed at its first command,
// MAIL (or go-mail's connection check), before anything was sent.
func failedAtMail(err error) bool {
	var se *gomail.SendError
	if errors.As(err, &se) {
		return se.Reason == gomail.ErrSMTPMailFrom || se.Reason == gomail.ErrConnCheck
	}
	var pe *smtpStepError
	return errors.As(err, &pe) && (pe.reason == gomail.ErrSMTPMailFrom || pe.reason == gomail.ErrConnCheck)
}
