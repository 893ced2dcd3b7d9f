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
// one command at a time.
func transact(c *smtpConn, msg *outgoing, timeout time.Duration) error {
	// As go-mail does before each message: the deadline set when the
	// connection was dialed has passed on one kept longer than timeout.
	if err := c.smtp.UpdateDeadline(timeout); err != nil {
		return &smtpStepError{reason: gomail.ErrConnCheck, err: err}
	}
	// net/mail never parses one, but a line break would end a command.
	if strings.ContainsAny(msg.from, "\r\n") {
		return &smtpStepError{reason: gomail.ErrGetSender, err: errBadAddress}
	}
	if strings.ContainsAny(msg.to, "\r\n") {
		return &smtpStepError{reason: gomail.ErrGetRcpts, err: errBadAddress}
	}
	if ok, _ := c.smtp.Extension("PIPELINING"); !ok {
		return lockstep(c.smtp, msg)
	}
	return pipelined(c.smtp, msg)
}

// mailCommand is MAIL FROM for from, with the parameters go-mail's (and
// net/smtp's) MAIL adds when the server takes them: the message itself is
// 7-bit, but the addresses may be UTF-8.
func mailCommand(c *gosmtp.Client, from string) string {
	mail := "MAIL FROM:" + from
	if ok, _ := c.Extension("8BITMIME"); ok {
		mail += " BODY=8BITMIME"
	}
	if ok, _ := c.Extension("SMTPUTF8"); ok {
		mail += " SMTPUTF8"
	}
	return mail
}

// lockstep is one mail transaction one command at a time, for a server
// without PIPELINING.
func lockstep(c *gosmtp.Client, msg *outgoing) error {
	esc, _ := c.Extension("ENHANCEDSTATUSCODES")
	if err := command(c, 250, mailCommand(c, msg.from)); err != nil {
		return stepError(gomail.ErrSMTPMailFrom, err, esc)
	}
	if err := command(c, 25, "RCPT TO:"+msg.to); err != nil { // 250 or 251
		return stepError(gomail.ErrSMTPRcptTo, err, esc)
	}
	if err := command(c, 354, "DATA"); err != nil {
		return stepError(gomail.ErrSMTPData, err, esc)
	}
	return finishData(c, msg, esc)
}

// command sends one command line and reads its reply, which must be of
// the class expect (a code or its first digits).
func command(c *gosmtp.Client, expect int, line string) error {
	if err := c.Text.PrintfLine("%s", line); err != nil {
		return err
	}
	_, _, err := c.Text.ReadResponse(expect)
	return err
}

// finishData writes the message and the "." that ends it, in one write
// when the message fits the connection's buffer, and reads the verdict.
func finishData(c *gosmtp.Client, msg *outgoing, esc bool) error {
	w := c.Text.W
	_, _ = w.Write(msg.data)
	_, _ = w.WriteString(".\r\n")
	if err := w.Flush(); err != nil {
		return stepError(gomail.ErrWriteContent, err, esc)
	}
	if _, _, err := c.Text.ReadResponse(250); err != nil {
		return stepError(gomail.ErrSMTPDataClose, err, esc)
	}
	return nil
}

// pipelined is one mail transaction with the envelope pipelined. Every
// reply is read, in order, before any is judged (each command has exactly
// one); the message is written only when MAIL and every RCPT were accepted
// and DATA answered 354. On any failure the caller closes the connection:
// a server that accepted DATA after refusing a recipient gets no message
// and not the lone "." RFC 2920 §3.1 suggests either, as a connection
// closed during DATA aborts the transaction (RFC 5321 §3.8) and this one
// is not kept.
func pipelined(c *gosmtp.Client, msg *outgoing) error {
	w := c.Text.W
	_, _ = w.WriteString(mailCommand(c, msg.from) + "\r\n")
	_, _ = w.WriteString("RCPT TO:" + msg.to + "\r\n")
	_, _ = w.WriteString("DATA\r\n")
	if err := w.Flush(); err != nil { // a write error stays in the buffer and shows here
		return &smtpStepError{reason: gomail.ErrSMTPMailFrom, err: err}
	}
	esc, _ := c.Extension("ENHANCEDSTATUSCODES")
	var first error
	note := func(reason gomail.SendErrReason, err error) {
		if err != nil && first == nil {
			first = stepError(reason, err, esc)
		}
	}
	_, _, err := c.Text.ReadResponse(250)
	note(gomail.ErrSMTPMailFrom, err)
	if first == nil || isReply(first) {
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
	return finishData(c, msg, esc)
}

// isReply reports whether err is the server's answer (a reply code), after
// which the connection still carries the next replies, rather than a failure
// of the connection itself.
func isReply(err error) bool {
	var tpe *textproto.Error
	return errors.As(err, &tpe)
}

// errBadAddress is an envelope address that cannot be sent as a command.
var errBadAddress = errors.New("an address holds a line break")

// smtpStepError is the failure of one step of a pipelined transaction,
// named as go-mail names its own (classifySMTP reads both). code is the
// reply's enhanced status code, when the server offers them.
type smtpStepError struct {
	reason gomail.SendErrReason
	err    error
	code   string
}

// stepError makes the error of a failed step; esc: the server offers
// ENHANCEDSTATUSCODES (RFC 2034), so a reply's text starts with one.
func stepError(reason gomail.SendErrReason, err error, esc bool) *smtpStepError {
	e := &smtpStepError{reason: reason, err: err}
	var tpe *textproto.Error
	if esc && errors.As(err, &tpe) {
		// Only a code of the reply's own class (5.x.x with a 5yz reply).
		if m := enhancedCodePattern.FindString(tpe.Msg); m != "" && int(m[0]-'0') == tpe.Code/100 {
			e.code = m
		}
	}
	return e
}

func (e *smtpStepError) Error() string { return e.reason.String() + ": " + e.err.Error() }
func (e *smtpStepError) Unwrap() error { return e.err }

// enhancedCodePattern is an enhanced status code (RFC 3463, e.g. 5.1.1)
// at the start of a reply's text.
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
