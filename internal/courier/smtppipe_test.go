package courier

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// scriptedSMTP is a one-connection SMTP server on 127.0.0.1 that greets,
// answers EHLO with ext, then hands the connection to script. It returns
// the SMTP provider pointed at it and a channel that yields script's
// findings (nil when all was as expected).
func scriptedSMTP(t *testing.T, ext string, script func(r *bufio.Reader, w net.Conn) error) (*SMTP, <-chan error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(c)
		_, _ = io.WriteString(c, "220 scripted\r\n")
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "EHLO") {
			done <- errors.New("want EHLO first, got " + line)
			return
		}
		_, _ = io.WriteString(c, "250-scripted\r\n"+ext+"250 8BITMIME\r\n")
		done <- script(r, c)
	}()
	a := l.Addr().(*net.TCPAddr)
	s, err := NewSMTP(SMTPConfig{Host: a.IP.String(), Port: a.Port, TLS: TLSNone, From: "Gatehouse <no-reply@gatehouse.test>",
		Timeout: 3 * time.Second, HELO: "client.test"})
	if err != nil {
		t.Fatal(err)
	}
	return s, done
}

// readLines reads n command lines.
func readLines(r *bufio.Reader, n int) ([]string, error) {
	var out []string
	for range n {
		l, err := r.ReadString('\n')
		if err != nil {
			return out, err
		}
		out = append(out, strings.TrimRight(l, "\r\n"))
	}
	return out, nil
}

// readMessage reads a message's lines up to the lone "." that ends it.
func readMessage(r *bufio.Reader) (string, error) {
	var body strings.Builder
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return body.String(), err
		}
		if l == ".\r\n" {
			return body.String(), nil
		}
		body.WriteString(l)
	}
}

// TestSMTPPipelinesTheEnvelope: with PIPELINING offered, MAIL, RCPT and DATA
// arrive before the server has answered any of them (a client waiting for
// each reply would time out here), and the message follows the 354.
func TestSMTPPipelinesTheEnvelope(t *testing.T) {
	s, done := scriptedSMTP(t, "250-PIPELINING\r\n250-SMTPUTF8\r\n", func(r *bufio.Reader, w net.Conn) error {
		cmds, err := readLines(r, 3)
		if err != nil {
			return err
		}
		// MAIL carries what the server offers, as go-mail's own MAIL does.
		if cmds[0] != "MAIL FROM:<no-reply@gatehouse.test> BODY=8BITMIME SMTPUTF8" || cmds[1] != "RCPT TO:<ada@example.com>" || cmds[2] != "DATA" {
			return errors.New("envelope = " + strings.Join(cmds, " | "))
		}
		// A multi-line reply inside the group is read whole.
		_, _ = io.WriteString(w, "250-2.1.0 sender\r\n250 2.1.0 ok\r\n250 2.1.5 ok\r\n354 go on\r\n")
		body, err := readMessage(r)
		if err != nil {
			return err
		}
		if !strings.Contains(body, "482913 is your code") {
			return errors.New("message without its text: " + body)
		}
		_, _ = io.WriteString(w, "250 2.0.0 queued\r\n")
		return nil
	})
	if _, err := s.Send(context.Background(), Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "Code", Text: "482913 is your code"}); err != nil {
		t.Fatalf("Send = %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSMTPWithoutPipelining: a server that does not offer PIPELINING gets
// one command at a time, each sent only after the previous one's reply.
func TestSMTPWithoutPipelining(t *testing.T) {
	var raw string // the message as the server read it, before the final "."
	s, done := scriptedSMTP(t, "", func(r *bufio.Reader, w net.Conn) error {
		for _, want := range []struct{ cmd, reply string }{
			{"MAIL FROM:", "250 ok"}, {"RCPT TO:", "250 ok"}, {"DATA", "354 go on"},
		} {
			cmds, err := readLines(r, 1)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(cmds[0], want.cmd) {
				return errors.New("got " + cmds[0] + "; want " + want.cmd)
			}
			// Nothing more may come before the reply: a pipelining client
			// would have sent the next command with this one.
			_ = w.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := r.Peek(1); err == nil {
				return errors.New("a command came before the reply to " + want.cmd)
			}
			_ = w.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.WriteString(w, want.reply+"\r\n")
		}
		var err error
		raw, err = readMessage(r)
		if err != nil {
			return err
		}
		_, _ = io.WriteString(w, "250 queued\r\n")
		return nil
	})
	if _, err := s.Send(context.Background(), Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "Code", Text: dottyText}); err != nil {
		t.Fatalf("Send = %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Taken as written, no dot-stuffing undone: no line needed its dot stuffed.
	p := parseMessage(t, []byte(raw))
	if got := strings.TrimRight(p.parts["text/plain"], "\n"); got != dottyText {
		t.Fatalf("the message arrived as %q; want %q", got, dottyText)
	}
}

// TestSMTPPipelinedRefusalSendsNoMessage: a server that refuses the
// recipient but still answers DATA with 354 (RFC 2920 §3.1 allows it) gets
// no message: the send fails with the recipient's reply and the connection
// is closed before anything more is written.
func TestSMTPPipelinedRefusalSendsNoMessage(t *testing.T) {
	s, done := scriptedSMTP(t, "250-PIPELINING\r\n250-ENHANCEDSTATUSCODES\r\n", func(r *bufio.Reader, w net.Conn) error {
		if _, err := readLines(r, 3); err != nil {
			return err
		}
		_, _ = io.WriteString(w, "250 2.1.0 ok\r\n550 5.1.1 <ada@example.com>: no such user\r\n354 go on\r\n")
		rest, err := r.ReadString('\n')
		if err == nil || rest != "" {
			return errors.New("after the refusal the client wrote " + rest)
		}
		return nil // the client closed the connection
	})
	_, err := s.Send(context.Background(), Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "Code", Text: "482913 is your code"})
	se := sendErr(t, err)
	if se.Temporary || se.Status != 550 || se.Code != "5.1.1" || !strings.Contains(se.Msg, "RCPT TO") {
		t.Errorf("error = %+v; want a permanent 550 (5.1.1) at RCPT TO", se)
	}
	if strings.Contains(err.Error(), "ada@example.com") || strings.Contains(err.Error(), "no such user") {
		t.Errorf("error %q quotes the server's reply", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSMTPKeptConnectionOutlivesTheTimeout: a connection kept longer than
// the SMTP timeout still carries the next message (each send sets its own
// deadline; the one set when it was dialed has passed), without a new dial.
func TestSMTPKeptConnectionOutlivesTheTimeout(t *testing.T) {
	ts := startServer(t, serverOptions{})
	s := newTestSMTP(t, ts, TLSNone, func(c *SMTPConfig) { c.Timeout = time.Second })
	for i := range 2 {
		if i > 0 {
			time.Sleep(1100 * time.Millisecond) // the socket's deadline is wall-clock time
		}
		if _, err := s.Send(context.Background(), Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "Hi", Text: "hello"}); err != nil {
			t.Fatalf("send %d: %v", i+1, err)
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.conns) != 1 || len(ts.msgs) != 2 {
		t.Errorf("%d connections, %d messages; want 1 kept connection carrying 2", len(ts.conns), len(ts.msgs))
	}
}

// TestSMTPPipelinedFailures: a refused MAIL on a new connection fails at
// MAIL with its reply and code, without a retry; a server that closes the
// connection in the middle of the replies gives a temporary failure at
// once, not a wait for the timeout.
func TestSMTPPipelinedFailures(t *testing.T) {
	t.Run("MAIL refused", func(t *testing.T) {
		s, done := scriptedSMTP(t, "250-PIPELINING\r\n250-ENHANCEDSTATUSCODES\r\n", func(r *bufio.Reader, w net.Conn) error {
			if _, err := readLines(r, 3); err != nil {
				return err
			}
			_, _ = io.WriteString(w, "550 5.7.1 sender <no-reply@gatehouse.test> refused\r\n503 5.5.1 no sender\r\n503 5.5.1 no recipients\r\n")
			if rest, err := r.ReadString('\n'); err == nil {
				return errors.New("after the refusal the client wrote " + rest)
			}
			return nil
		})
		_, err := s.Send(context.Background(), Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "Hi", Text: "hello"})
		se := sendErr(t, err)
		if se.Temporary || se.Status != 550 || se.Code != "5.7.1" || !strings.Contains(se.Msg, "MAIL FROM") {
			t.Errorf("error = %+v; want a permanent 550 (5.7.1) at MAIL FROM", se)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("connection closed after MAIL", func(t *testing.T) {
		s, done := scriptedSMTP(t, "250-PIPELINING\r\n", func(r *bufio.Reader, w net.Conn) error {
			if _, err := readLines(r, 3); err != nil {
				return err
			}
			_, _ = io.WriteString(w, "250 ok\r\n")
			return nil // and close
		})
		start := time.Now()
		_, err := s.Send(context.Background(), Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "Hi", Text: "hello"})
		se := sendErr(t, err)
		if !se.Temporary || !strings.Contains(se.Msg, "RCPT TO") || !strings.Contains(se.Msg, "connection failed") {
			t.Errorf("error = %+v; want a temporary connection failure at RCPT TO", se)
		}
		if waited := time.Since(start); waited >= 3*time.Second {
			t.Errorf("the send waited %v, the whole timeout", waited)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestSMTPBadEnvelopeAddress: an address that would break a command line
// (net/mail parses none today) fails permanently, named as an invalid
// address, and is not taken for a dead kept connection (which would make
// every idle one redial).
func TestSMTPBadEnvelopeAddress(t *testing.T) {
	for _, err := range []error{
		&smtpStepError{reason: gomail.ErrGetSender, err: errBadAddress},
		&smtpStepError{reason: gomail.ErrGetRcpts, err: errBadAddress},
	} {
		se := classifySMTP(context.Background(), err)
		if se.Temporary || !strings.Contains(se.Msg, "invalid address") {
			t.Errorf("classifySMTP(%v) = %+v; want permanent, invalid address", err, se)
		}
		if failedAtMail(err) {
			t.Errorf("failedAtMail(%v) = true; want false", err)
		}
	}
}
