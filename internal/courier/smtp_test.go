package courier

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// received is one message as the test SMTP server saw it.
type received struct {
	from   string
	to     []string
	data   []byte
	tls    bool   // whether the connection was encrypted when MAIL was issued
	authed string // the user that authenticated, "" if none
}

// serverOptions shapes a test SMTP server.
type serverOptions struct {
	user, pass string      // non-empty user: AUTH PLAIN offered and required before MAIL
	tlsConfig  *tls.Config // non-nil: STARTTLS offered (or implicit TLS, see below)
	implicit   bool        // wrap the listener in TLS from the first byte
	rcptErr    error       // non-nil: every RCPT TO is answered with it
	dataErr    error       // non-nil: every DATA is answered with it
}

// testServer is an in-process go-smtp server on 127.0.0.1 that records every accepted message.
type testServer struct {
	host string
	port int
	opts serverOptions

	mu    sync.Mutex
	msgs  []received
	conns []*smtp.Conn // every connection accepted, in order
}

func (s *testServer) messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.msgs...)
}

func startServer(t testing.TB, opts serverOptions) *testServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ts := &testServer{opts: opts}
	addr := l.Addr().(*net.TCPAddr)
	ts.host, ts.port = addr.IP.String(), addr.Port

	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		ts.mu.Lock()
		if !slices.Contains(ts.conns, c) { // a session starts again after STARTTLS
			ts.conns = append(ts.conns, c)
		}
		ts.mu.Unlock()
		base := &session{srv: ts, conn: c}
		if opts.user != "" {
			return &authSession{session: base}, nil
		}
		return base, nil
	}))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.ErrorLog = log.New(io.Discard, "", 0)
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	if opts.implicit {
		l = tls.NewListener(l, opts.tlsConfig)
	} else {
		srv.TLSConfig = opts.tlsConfig
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		// Closing l as well covers a Close that runs before Serve has registered the listener.
		_ = srv.Close()
		_ = l.Close()
		<-done
	})
	return ts
}

// session records one SMTP transaction.
type session struct {
	srv    *testServer
	conn   *smtp.Conn
	authed string
	cur    received
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.srv.opts.user != "" && s.authed == "" {
		return smtp.ErrAuthRequired
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.cur = received{from: from, tls: isTLS, authed: s.authed}
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if s.srv.opts.rcptErr != nil {
		return s.srv.opts.rcptErr
	}
	s.cur.to = append(s.cur.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if s.srv.opts.dataErr != nil {
		return s.srv.opts.dataErr
	}
	s.cur.data = b
	s.srv.mu.Lock()
	s.srv.msgs = append(s.srv.msgs, s.cur)
	s.srv.mu.Unlock()
	return nil
}

func (s *session) Reset()        { s.cur = received{} }
func (s *session) Logout() error { return nil }

// authSession is a session that offers and checks AUTH PLAIN against the server's credentials.
type authSession struct {
	*session
}

func (s *authSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *authSession) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.srv.opts.user || pass != s.srv.opts.pass {
			return smtp.ErrAuthFailed
		}
		s.authed = user
		return nil
	}), nil
}

// selfSignedTLS returns a server TLS config with a fresh certificate for 127.0.0.1.
func selfSignedTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "courier test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("create certificate: %v", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		MinVersion:   tls.VersionTLS12,
	}
}

// newTestSMTP builds a provider aimed at ts, letting edit adjust the config first.
func newTestSMTP(t testing.TB, ts *testServer, policy TLSPolicy, edit func(*SMTPConfig)) *SMTP {
	t.Helper()
	cfg := SMTPConfig{
		Host:    ts.host,
		Port:    ts.port,
		TLS:     policy,
		From:    "Gatehouse <no-reply@gatehouse.test>",
		Timeout: 5 * time.Second,
		HELO:    "client.test",
	}
	if edit != nil {
		edit(&cfg)
	}
	s, err := NewSMTP(cfg)
	if err != nil {
		t.Fatalf("NewSMTP(%+v) error = %v", cfg, err)
	}
	return s
}

// parsed is a received message split into headers and decoded parts (content type -> body).
type parsed struct {
	header mail.Header
	parts  map[string]string
	ctype  string
}

func parseMessage(t *testing.T, raw []byte) parsed {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parse received message: %v\n%s", err, raw)
	}
	ctype, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("parse Content-Type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	p := parsed{header: msg.Header, parts: map[string]string{}, ctype: ctype}
	if !strings.HasPrefix(ctype, "multipart/") {
		p.parts[ctype] = decodeBody(t, msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
		return p
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read multipart: %v", err)
		}
		pt, _, err := mime.ParseMediaType(part.Header.Get("Content-Type"))
		if err != nil {
			t.Fatalf("parse part Content-Type: %v", err)
		}
		p.parts[pt] = decodeBody(t, part.Header.Get("Content-Transfer-Encoding"), part)
	}
	return p
}

func decodeBody(t *testing.T, cte string, r io.Reader) string {
	t.Helper()
	if strings.EqualFold(cte, "quoted-printable") {
		r = quotedprintable.NewReader(r)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read body (%s): %v", cte, err)
	}
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}

func TestSMTPSendPlainText(t *testing.T) {
	ts := startServer(t, serverOptions{})
	s := newTestSMTP(t, ts, TLSNone, nil)
	m := Message{
		Channel: ChannelEmail,
		To:      "ada@example.com",
		Subject: "Your Acme sign-in code",
		Text:    "Your code is 482913.\nIt expires in 10 minutes.",
		Code:    "482913",
	}
	id, err := s.Send(context.Background(), m)
	if err != nil {
		t.Fatalf("Send() error = %v; want nil", err)
	}
	msgs := ts.messages()
	if len(msgs) != 1 {
		t.Fatalf("server received %d messages; want 1", len(msgs))
	}
	got := msgs[0]
	if got.from != "no-reply@gatehouse.test" || len(got.to) != 1 || got.to[0] != "ada@example.com" {
		t.Errorf("envelope = from %q to %q; want from %q to [%q]", got.from, got.to, "no-reply@gatehouse.test", "ada@example.com")
	}
	if got.tls {
		t.Errorf("TLSNone connection was encrypted; want plaintext")
	}
	p := parseMessage(t, got.data)
	if p.ctype != "text/plain" {
		t.Errorf("Content-Type = %q; want text/plain", p.ctype)
	}
	if body := strings.TrimRight(p.parts["text/plain"], "\n"); body != m.Text {
		t.Errorf("text body = %q; want %q", body, m.Text)
	}
	if mid := p.header.Get("Message-Id"); id == "" || mid != id {
		t.Errorf("Send() id = %q; want the Message-ID header %q", id, mid)
	}
	if !strings.HasSuffix(id, "@gatehouse.test>") {
		t.Errorf("Send() id = %q; want it under the sender's domain", id)
	}
	if p.header.Get("Date") == "" {
		t.Errorf("message has no Date header")
	}
}

func TestSMTPSendMultipart(t *testing.T) {
	ts := startServer(t, serverOptions{})
	s := newTestSMTP(t, ts, TLSOpportunistic, nil) // no STARTTLS offered: falls back to plaintext
	m := Message{
		Channel: ChannelEmail,
		To:      "Ada Lovelace <ada@example.com>",
		From:    "Acme Support <support@acme.test>",
		Subject: "Sign in to Acme – ünïcode",
		Text:    "Open https://acme.test/l?t=abc to sign in.",
		HTML:    `<p>Open <a href="https://acme.test/l?t=abc">this link</a> to sign in.</p>`,
	}
	if _, err := s.Send(context.Background(), m); err != nil {
		t.Fatalf("Send() error = %v; want nil", err)
	}
	msgs := ts.messages()
	if len(msgs) != 1 {
		t.Fatalf("server received %d messages; want 1", len(msgs))
	}
	if msgs[0].from != "support@acme.test" {
		t.Errorf("envelope from = %q; want the override %q", msgs[0].from, "support@acme.test")
	}
	p := parseMessage(t, msgs[0].data)
	if p.ctype != "multipart/alternative" {
		t.Errorf("Content-Type = %q; want multipart/alternative", p.ctype)
	}
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(p.header.Get("Subject"))
	if err != nil || subject != m.Subject {
		t.Errorf("Subject = %q (%v); want %q", subject, err, m.Subject)
	}
	from, err := p.header.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Name != "Acme Support" || from[0].Address != "support@acme.test" {
		t.Errorf("From = %v (%v); want Acme Support <support@acme.test>", from, err)
	}
	to, err := p.header.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Name != "Ada Lovelace" || to[0].Address != "ada@example.com" {
		t.Errorf("To = %v (%v); want Ada Lovelace <ada@example.com>", to, err)
	}
	if got := strings.TrimRight(p.parts["text/plain"], "\n"); got != m.Text {
		t.Errorf("text/plain part = %q; want %q", got, m.Text)
	}
	if got := strings.TrimRight(p.parts["text/html"], "\n"); got != m.HTML {
		t.Errorf("text/html part = %q; want %q", got, m.HTML)
	}
}

func TestSMTPHeaderInjection(t *testing.T) {
	ts := startServer(t, serverOptions{})
	s := newTestSMTP(t, ts, TLSNone, nil)
	m := Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "Hi\r\nBcc: evil@example.com", Text: "hello"}
	if _, err := s.Send(context.Background(), m); err != nil {
		t.Fatalf("Send() error = %v; want nil", err)
	}
	got := ts.messages()[0]
	if len(got.to) != 1 || got.to[0] != "ada@example.com" {
		t.Errorf("envelope to = %q; want only ada@example.com", got.to)
	}
	if p := parseMessage(t, got.data); p.header.Get("Bcc") != "" {
		t.Errorf("message gained a Bcc header %q from the subject", p.header.Get("Bcc"))
	}
}

func TestSMTPAuth(t *testing.T) {
	const (
		user = "mailer"
		pass = "correct-horse-battery"
	)
	tests := []struct {
		name     string
		user     string
		pass     string
		wantErr  bool
		wantAuth string
	}{
		{name: "right password", user: user, pass: pass, wantAuth: user},
		{name: "wrong password", user: user, pass: "wrong-pa55word-xyz", wantErr: true},
		{name: "no credentials", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, serverOptions{user: user, pass: pass})
			s := newTestSMTP(t, ts, TLSNone, func(c *SMTPConfig) {
				c.Username, c.Password = tt.user, tt.pass
			})
			m := Message{
				Channel: ChannelEmail,
				To:      "ada@example.com",
				Subject: "code",
				Text:    "secret body 771234",
				HTML:    "<p>secret html 771234</p>",
				Code:    "771234",
				Link:    "https://acme.test/l?t=linksecret",
			}
			_, err := s.Send(context.Background(), m)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Send() error = %v; want nil", err)
				}
				msgs := ts.messages()
				if len(msgs) != 1 || msgs[0].authed != tt.wantAuth {
					t.Fatalf("server got %d messages authenticated as %v; want 1 as %q", len(msgs), msgs, tt.wantAuth)
				}
				return
			}
			if !errors.Is(err, ErrDelivery) {
				t.Fatalf("Send() error = %v; want ErrDelivery", err)
			}
			for _, secret := range []string{tt.pass, pass, m.Text, m.HTML, m.Code, m.Link, "771234", "linksecret", m.To} {
				if secret != "" && strings.Contains(err.Error(), secret) {
					t.Errorf("Send() error %q contains %q", err, secret)
				}
			}
			if n := len(ts.messages()); n != 0 {
				t.Errorf("server accepted %d messages; want 0", n)
			}
		})
	}
}

func TestSMTPTLSPolicies(t *testing.T) {
	tests := []struct {
		name       string
		server     serverOptions
		policy     TLSPolicy
		skipVerify bool
		wantErr    bool
		wantTLS    bool
	}{
		{name: "mandatory without STARTTLS", server: serverOptions{}, policy: TLSMandatory, skipVerify: true, wantErr: true},
		{name: "mandatory with STARTTLS", server: serverOptions{tlsConfig: selfSignedTLS(t)}, policy: TLSMandatory, skipVerify: true, wantTLS: true},
		{name: "mandatory with untrusted certificate", server: serverOptions{tlsConfig: selfSignedTLS(t)}, policy: TLSMandatory, wantErr: true},
		{name: "opportunistic with STARTTLS", server: serverOptions{tlsConfig: selfSignedTLS(t)}, policy: TLSOpportunistic, skipVerify: true, wantTLS: true},
		{name: "opportunistic without STARTTLS", server: serverOptions{}, policy: TLSOpportunistic},
		{name: "none ignores STARTTLS", server: serverOptions{tlsConfig: selfSignedTLS(t)}, policy: TLSNone},
		{name: "implicit", server: serverOptions{tlsConfig: selfSignedTLS(t), implicit: true}, policy: TLSImplicit, skipVerify: true, wantTLS: true},
		{name: "implicit against plaintext server", server: serverOptions{}, policy: TLSImplicit, skipVerify: true, wantErr: true},
		{name: "auth over STARTTLS", server: serverOptions{tlsConfig: selfSignedTLS(t), user: "u", pass: "p"}, policy: TLSMandatory, skipVerify: true, wantTLS: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, tt.server)
			s := newTestSMTP(t, ts, tt.policy, func(c *SMTPConfig) {
				c.InsecureSkipVerify = tt.skipVerify
				c.Username, c.Password = tt.server.user, tt.server.pass
			})
			_, err := s.Send(context.Background(), Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "s", Text: "t"})
			if tt.wantErr {
				if !errors.Is(err, ErrDelivery) {
					t.Errorf("Send() error = %v; want ErrDelivery", err)
				}
				if n := len(ts.messages()); n != 0 {
					t.Errorf("server accepted %d messages; want 0", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("Send() error = %v; want nil", err)
			}
			msgs := ts.messages()
			if len(msgs) != 1 {
				t.Fatalf("server received %d messages; want 1", len(msgs))
			}
			if msgs[0].tls != tt.wantTLS {
				t.Errorf("connection encrypted = %v; want %v", msgs[0].tls, tt.wantTLS)
			}
		})
	}
}

// silentListener accepts connections and never writes a byte, like a black-holed mail port.
func silentListener(t *testing.T) (host string, port int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	a := l.Addr().(*net.TCPAddr)
	return a.IP.String(), a.Port
}

func TestSMTPTimeouts(t *testing.T) {
	const bound = 5 * time.Second
	tests := []struct {
		name    string
		timeout time.Duration
		ctx     func() (context.Context, context.CancelFunc)
	}{
		{
			name:    "config timeout",
			timeout: 300 * time.Millisecond,
			ctx:     func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
		},
		{
			name:    "context deadline",
			timeout: time.Minute,
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 300*time.Millisecond)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, port := silentListener(t)
			s, err := NewSMTP(SMTPConfig{Host: host, Port: port, TLS: TLSNone, From: "a@b.test", Timeout: tt.timeout})
			if err != nil {
				t.Fatalf("NewSMTP() error = %v", err)
			}
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			_, err = s.Send(ctx, Message{Channel: ChannelEmail, To: "ada@example.com", Text: "t"})
			elapsed := time.Since(start)
			if !errors.Is(err, ErrDelivery) {
				t.Errorf("Send() error = %v; want ErrDelivery", err)
			}
			var se *SendError
			if !errors.As(err, &se) || !se.Temporary || !strings.Contains(se.Msg, "timed out") {
				t.Errorf("Send() error = %#v; want a temporary *SendError that says it timed out", err)
			}
			if elapsed > bound {
				t.Errorf("Send() took %s; want < %s", elapsed, bound)
			}
		})
	}
}

func TestSMTPCanceledContext(t *testing.T) {
	host, port := silentListener(t)
	s, err := NewSMTP(SMTPConfig{Host: host, Port: port, TLS: TLSNone, From: "a@b.test", Timeout: time.Minute})
	if err != nil {
		t.Fatalf("NewSMTP() error = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Send(ctx, Message{Channel: ChannelEmail, To: "ada@example.com", Text: "t"})
	var se *SendError
	if !errors.Is(err, ErrDelivery) || !errors.As(err, &se) || !se.Temporary || !strings.Contains(se.Msg, "canceled") {
		t.Errorf("Send(canceled ctx) error = %v; want a temporary *SendError that says canceled", err)
	}
}

func TestSMTPRejectsBadMessages(t *testing.T) {
	ts := startServer(t, serverOptions{})
	s := newTestSMTP(t, ts, TLSNone, nil)
	tests := []struct {
		name string
		m    Message
	}{
		{"sms", Message{Channel: ChannelSMS, To: "+14155552671", Text: "body-771234"}},
		{"empty channel", Message{To: "ada@example.com", Text: "body-771234"}},
		{"bad recipient", Message{Channel: ChannelEmail, To: "not an address", Text: "body-771234"}},
		{"two recipients", Message{Channel: ChannelEmail, To: "a@example.com, b@example.com", Text: "body-771234"}},
		{"bad from override", Message{Channel: ChannelEmail, To: "ada@example.com", From: "nope", Text: "body-771234"}},
		{"empty body", Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "s"}},
	}
	for _, tt := range tests {
		_, err := s.Send(context.Background(), tt.m)
		if !errors.Is(err, ErrDelivery) {
			t.Errorf("Send(%s) error = %v; want ErrDelivery", tt.name, err)
		}
		if err != nil && tt.m.Text != "" && strings.Contains(err.Error(), tt.m.Text) {
			t.Errorf("Send(%s) error %q contains the body", tt.name, err)
		}
	}
	if n := len(ts.messages()); n != 0 {
		t.Errorf("server received %d messages; want 0", n)
	}
}

func TestNewSMTPValidation(t *testing.T) {
	base := SMTPConfig{Host: "smtp.example.com", TLS: TLSMandatory, From: "Gatehouse <no-reply@example.com>"}
	tests := []struct {
		name        string
		edit        func(*SMTPConfig)
		wantErr     bool
		wantPort    int
		wantTimeout time.Duration
	}{
		{name: "valid starttls-required", edit: func(*SMTPConfig) {}, wantPort: 587, wantTimeout: 10 * time.Second},
		{name: "valid starttls", edit: func(c *SMTPConfig) { c.TLS = TLSOpportunistic }, wantPort: 587, wantTimeout: 10 * time.Second},
		{name: "implicit default port", edit: func(c *SMTPConfig) { c.TLS = TLSImplicit }, wantPort: 465, wantTimeout: 10 * time.Second},
		{name: "none default port", edit: func(c *SMTPConfig) { c.TLS = TLSNone }, wantPort: 25, wantTimeout: 10 * time.Second},
		{name: "explicit port and timeout", edit: func(c *SMTPConfig) { c.Port = 2525; c.Timeout = time.Second }, wantPort: 2525, wantTimeout: time.Second},
		{name: "bare from", edit: func(c *SMTPConfig) { c.From = "no-reply@example.com" }, wantPort: 587, wantTimeout: 10 * time.Second},
		{name: "auth plain default", edit: func(c *SMTPConfig) { c.Username, c.Password = "u", "p" }, wantPort: 587, wantTimeout: 10 * time.Second},
		{name: "auth login", edit: func(c *SMTPConfig) { c.Username, c.AuthMethod = "u", "login" }, wantPort: 587, wantTimeout: 10 * time.Second},
		{name: "auth cram-md5", edit: func(c *SMTPConfig) { c.Username, c.AuthMethod = "u", "CRAM-MD5" }, wantPort: 587, wantTimeout: 10 * time.Second},
		{name: "missing host", edit: func(c *SMTPConfig) { c.Host = "" }, wantErr: true},
		{name: "blank host", edit: func(c *SMTPConfig) { c.Host = "  " }, wantErr: true},
		{name: "empty policy", edit: func(c *SMTPConfig) { c.TLS = "" }, wantErr: true},
		{name: "unknown policy", edit: func(c *SMTPConfig) { c.TLS = "ssl" }, wantErr: true},
		{name: "missing from", edit: func(c *SMTPConfig) { c.From = "" }, wantErr: true},
		{name: "bad from", edit: func(c *SMTPConfig) { c.From = "Gatehouse" }, wantErr: true},
		{name: "negative port", edit: func(c *SMTPConfig) { c.Port = -1 }, wantErr: true},
		{name: "port too big", edit: func(c *SMTPConfig) { c.Port = 70000 }, wantErr: true},
		{name: "negative timeout", edit: func(c *SMTPConfig) { c.Timeout = -time.Second }, wantErr: true},
		{name: "unknown auth method", edit: func(c *SMTPConfig) { c.Username, c.AuthMethod = "u", "xoauth2" }, wantErr: true},
		{name: "password without user", edit: func(c *SMTPConfig) { c.Password = "p" }, wantErr: true},
		{name: "auth method without user", edit: func(c *SMTPConfig) { c.AuthMethod = "plain" }, wantErr: true},
		{name: "bad helo", edit: func(c *SMTPConfig) { c.HELO = "a\r\nMAIL FROM:<x>" }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			tt.edit(&cfg)
			s, err := NewSMTP(cfg)
			if tt.wantErr {
				if err == nil {
					t.Errorf("NewSMTP(%+v) error = nil; want an error", cfg)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewSMTP(%+v) error = %v; want nil", cfg, err)
			}
			if s.port != tt.wantPort || s.timeout != tt.wantTimeout {
				t.Errorf("NewSMTP(%+v) port, timeout = %d, %s; want %d, %s", cfg, s.port, s.timeout, tt.wantPort, tt.wantTimeout)
			}
		})
	}
}

func TestTLSPolicyValid(t *testing.T) {
	tests := []struct {
		p    TLSPolicy
		want bool
	}{
		{TLSNone, true}, {TLSOpportunistic, true}, {TLSMandatory, true}, {TLSImplicit, true},
		{"", false}, {"TLS", false}, {"ssl", false},
	}
	for _, tt := range tests {
		if got := tt.p.Valid(); got != tt.want {
			t.Errorf("TLSPolicy(%q).Valid() = %v; want %v", tt.p, got, tt.want)
		}
	}
}

// TestSMTPKeepsConnections: sends one after the other share one connection
// (with STARTTLS, one handshake), and a kept connection that the server
// closed while idle is replaced without losing the message.
func TestSMTPKeepsConnections(t *testing.T) {
	ts := startServer(t, serverOptions{tlsConfig: selfSignedTLS(t)})
	s := newTestSMTP(t, ts, TLSMandatory, func(c *SMTPConfig) { c.InsecureSkipVerify = true })
	send := func(to string) {
		t.Helper()
		if _, err := s.Send(context.Background(), Message{Channel: ChannelEmail, To: to, Subject: "Hi", Text: "hello"}); err != nil {
			t.Fatalf("Send(%s) = %v", to, err)
		}
	}
	send("a@example.com")
	send("b@example.com")
	send("c@example.com")
	ts.mu.Lock()
	conns := append([]*smtp.Conn(nil), ts.conns...)
	ts.mu.Unlock()
	if len(conns) != 1 {
		t.Fatalf("three sends opened %d connections; want 1 kept", len(conns))
	}
	for _, m := range ts.messages() {
		if !m.tls {
			t.Errorf("a message went unencrypted on the kept connection")
		}
	}
	// The server drops its connections (a restart); the next send notices
	// and redials, at once, whatever else was kept.
	for range 2 { // two more kept: three in all
		c, err := s.dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s.put(c)
	}
	ts.mu.Lock()
	for _, c := range ts.conns {
		_ = c.Close()
	}
	opened := len(ts.conns)
	ts.mu.Unlock()
	send("d@example.com")
	if got := len(ts.messages()); got != 4 {
		t.Fatalf("server received %d messages; want 4", got)
	}
	ts.mu.Lock()
	n := len(ts.conns)
	ts.mu.Unlock()
	if n != opened+1 {
		t.Errorf("connections = %d after %d were dropped; want one more (the retry dials, however many were kept)", n, opened)
	}
}
