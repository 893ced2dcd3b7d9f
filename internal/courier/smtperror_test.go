package courier

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

func TestSMTPErrorClassification(t *testing.T) {
	// Replies that echo the recipient and the body, as real servers do.
	echo := func(code int, enh smtp.EnhancedCode, msg string) error {
		return &smtp.SMTPError{Code: code, EnhancedCode: enh, Message: msg}
	}
	tests := []struct {
		name   string
		server serverOptions
		edit   func(*SMTPConfig)
		want   wantClass
	}{
		{name: "mailbox unknown", server: serverOptions{rcptErr: echo(550, smtp.EnhancedCode{5, 1, 1}, "<ada@example.com>: user unknown")},
			want: wantClass{status: 550, code: "5.1.1", msg: "RCPT TO"}},
		{name: "greylisted", server: serverOptions{rcptErr: echo(450, smtp.EnhancedCode{4, 2, 0}, "<ada@example.com>: greylisted, try again")},
			want: wantClass{status: 450, code: "4.2.0", temporary: true, msg: "RCPT TO"}},
		{name: "content rejected", server: serverOptions{dataErr: echo(554, smtp.EnhancedCode{5, 7, 1}, "message with 482913 rejected as spam")},
			want: wantClass{status: 554, code: "5.7.1", msg: "transaction failed"}},
		{name: "queue full", server: serverOptions{dataErr: echo(452, smtp.EnhancedCode{4, 3, 1}, "insufficient storage for 482913")},
			want: wantClass{status: 452, code: "4.3.1", temporary: true}},
		{name: "wrong password", server: serverOptions{user: "mailer", pass: "right"},
			edit: func(c *SMTPConfig) { c.Username, c.Password = "mailer", "wrong-pass-8812" },
			want: wantClass{status: 535, msg: "authentication failed"}},
		{name: "auth required", server: serverOptions{user: "mailer", pass: "right"},
			want: wantClass{status: 502, code: "5.7.0", msg: "MAIL FROM"}}, // go-smtp answers 502 5.7.0
		{name: "no STARTTLS offered", edit: func(c *SMTPConfig) { c.TLS = TLSMandatory },
			want: wantClass{msg: "STARTTLS"}},
		{name: "untrusted certificate", server: serverOptions{tlsConfig: selfSignedTLS(t)},
			edit: func(c *SMTPConfig) { c.TLS, c.InsecureSkipVerify = TLSMandatory, false },
			want: wantClass{msg: "certificate"}},
		{name: "implicit TLS on a plain port", edit: func(c *SMTPConfig) { c.TLS, c.InsecureSkipVerify = TLSImplicit, true },
			want: wantClass{msg: "TLS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, tt.server)
			s := newTestSMTP(t, ts, TLSNone, tt.edit)
			m := Message{Channel: ChannelEmail, To: "Ada <ada@example.com>", Subject: "code 482913", Text: "482913 is your code", Code: "482913"}
			_, err := s.Send(context.Background(), m)
			se := sendErr(t, err)
			tt.want.check(t, se)
			for _, leak := range []string{"ada@example.com", "482913", "wrong-pass-8812", "user unknown", "spam"} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error %q contains %q", err, leak)
				}
			}
		})
	}
}

func TestSMTPConnectionRefusedIsTemporary(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr)
	_ = l.Close()
	s, err := NewSMTP(SMTPConfig{Host: addr.IP.String(), Port: addr.Port, TLS: TLSNone, From: "a@b.test", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Send(context.Background(), Message{Channel: ChannelEmail, To: "ada@example.com", Text: "t"})
	wantClass{temporary: true, msg: "connection failed"}.check(t, sendErr(t, err))
}
