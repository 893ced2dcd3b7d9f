package courier

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"strings"
	"sync"
	"syscall"
	"time"

	gomail "github.com/wneessen/go-mail"
	gosmtp "github.com/wneessen/go-mail/smtp"
)

// TLSPolicy says how the SMTP provider protects the connection.
type TLSPolicy string

// The supported TLS policies.
const (
	TLSNone          TLSPolicy = "none"              // plaintext only
	TLSOpportunistic TLSPolicy = "starttls"          // STARTTLS when the server offers it
	TLSMandatory     TLSPolicy = "starttls-required" // STARTTLS or fail
	TLSImplicit      TLSPolicy = "tls"               // TLS from the first byte (SMTPS)
)

// Valid reports whether p is one of the defined policies.
func (p TLSPolicy) Valid() bool {
	switch p {
	case TLSNone, TLSOpportunistic, TLSMandatory, TLSImplicit:
		return true
	}
	return false
}

// SMTPConfig configures the SMTP e-mail provider. PLAIN and LOGIN credentials are sent only over TLS (or to a
// localhost server), so TLSNone with a Username fails against a remote server instead of leaking the password.
type SMTPConfig struct {
	Host               string
	Port               int    // 0 => 587 for starttls policies, 465 for TLSImplicit, 25 for none
	Username           string // empty => no AUTH
	Password           string
	AuthMethod         string // "", "plain", "login", "cram-md5"; "" => plain when Username set
	TLS                TLSPolicy
	From               string        // default sender, e.g. "Gatehouse <no-reply@example.com>"
	Timeout            time.Duration // connect+send deadline; 0 => 10s
	HELO               string        // optional
	InsecureSkipVerify bool          // tests only
	// DialControl, when set, vets every address dialled (net.Dialer.Control),
	// so an app's SMTP host cannot be a private address.
	DialControl func(network, address string, c syscall.RawConn) error
}

// defaultSMTPTimeout bounds a whole send when SMTPConfig.Timeout is zero.
const defaultSMTPTimeout = 10 * time.Second

// SMTP is the e-mail provider that talks to an SMTP server. It is safe for concurrent use: every Send opens its own
// connection.
type SMTP struct {
	host     string
	port     int
	username string
	password string
	auth     gomail.SMTPAuthType
	policy   TLSPolicy
	from     *mail.Address
	timeout  time.Duration
	helo     string
	tls      *tls.Config

	dialControl func(network, address string, c syscall.RawConn) error

	mu   sync.Mutex
	idle []*smtpConn // kept connections, the most recently used last
}

// NewSMTP validates the config (host required, valid policy, From parses as an address) and returns the provider.
func NewSMTP(cfg SMTPConfig) (*SMTP, error) {
	if strings.TrimSpace(cfg.Host) == "" || strings.TrimSpace(cfg.Host) != cfg.Host {
		return nil, errors.New("courier: smtp host is required and must not contain spaces")
	}
	if !cfg.TLS.Valid() {
		return nil, fmt.Errorf("courier: invalid smtp tls policy %q", cfg.TLS)
	}
	port := cfg.Port
	switch {
	case port < 0 || port > 65535:
		return nil, fmt.Errorf("courier: invalid smtp port %d", cfg.Port)
	case port == 0 && cfg.TLS == TLSImplicit:
		port = 465
	case port == 0 && cfg.TLS == TLSNone:
		port = 25
	case port == 0:
		port = 587
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("courier: invalid smtp timeout %s", cfg.Timeout)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = defaultSMTPTimeout
	}
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("courier: invalid smtp from address: %w", err)
	}
	auth := gomail.SMTPAuthNoAuth
	if cfg.Username != "" {
		switch strings.ToLower(cfg.AuthMethod) {
		case "", "plain":
			auth = gomail.SMTPAuthPlain
		case "login":
			auth = gomail.SMTPAuthLogin
		case "cram-md5":
			auth = gomail.SMTPAuthCramMD5
		default:
			return nil, fmt.Errorf("courier: unsupported smtp auth method %q", cfg.AuthMethod)
		}
	} else if cfg.AuthMethod != "" || cfg.Password != "" {
		// A password or method without a user is a half-finished config; failing now beats sending unauthenticated.
		return nil, errors.New("courier: smtp auth method or password set without username")
	}
	if strings.ContainsAny(cfg.HELO, " \r\n") {
		return nil, fmt.Errorf("courier: invalid smtp helo %q", cfg.HELO)
	}
	return &SMTP{
		host:     cfg.Host,
		port:     port,
		username: cfg.Username,
		password: cfg.Password,
		auth:     auth,
		policy:   cfg.TLS,
		from:     from,
		timeout:  timeout,
		helo:     cfg.HELO,

		dialControl: cfg.DialControl,
		tls: &tls.Config{
			ServerName:         cfg.Host,
			MinVersion:         tls.VersionTLS12,
			InsecureSkipVerify: cfg.InsecureSkipVerify, //nolint:gosec // opt-in, documented as tests only
		},
	}, nil
}

// Send delivers an e-mail message and returns its Message-ID header value (with angle brackets). The message is
// multipart/alternative when both Text and HTML are set. The whole exchange is bounded by the configured Timeout
// and by ctx; cancelling ctx aborts the connection.
func (s *SMTP) Send(ctx context.Context, m Message) (string, error) {
	if m.Channel != ChannelEmail {
		return "", &SendError{Provider: smtpProvider, Msg: fmt.Sprintf("channel %q is not supported", m.Channel)}
	}
	msg, sendErr := s.buildMessage(m)
	if sendErr != nil {
		return "", sendErr
	}

	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	for try := 0; ; try++ {
		c, reused, err := s.take(ctx)
		if err != nil {
			return "", classifySMTP(ctx, err)
		}
		// go-mail applies ctx only while dialing; closing the connection
		// when ctx ends makes the rest of the conversation honour it too.
		stop := context.AfterFunc(ctx, func() { _ = c.conn.Close() })
		err = transact(c, msg, s.timeout)
		intact := stop()
		if err == nil {
			if intact {
				s.put(c)
			}
			return msg.id, nil
		}
		_ = c.conn.Close()
		// A kept connection that the server closed while it sat idle fails
		// at the first command, MAIL, before anything is sent: once, a new one.
		if reused && try == 0 && ctx.Err() == nil && failedAtMail(err) {
			// The server restarted, most likely: the other kept
			// connections are as dead as this one, so the retry dials.
			s.dropIdle()
			continue
		}
		return "", classifySMTP(ctx, err)
	}
}

// smtpConn is an open, greeted (and, per policy, encrypted and
// authenticated) connection to the SMTP server, kept between sends: a
// send on it costs the message's own commands only, not a TCP and TLS
// handshake, EHLO and AUTH each time.
type smtpConn struct {
	client *gomail.Client
	smtp   *gosmtp.Client
	conn   net.Conn
	born   time.Time
	used   time.Time
}

// The pool of kept connections: at most smtpPoolSize idle ones, none kept
// idle longer than smtpIdleMax (servers drop idle clients, RFC 5321 allows
// after 5 minutes, many sooner) nor used beyond smtpAgeMax. The size is
// above the sends a busy server has in flight: with 8, 16 concurrent code
// logins closed and re-dialed about one connection in ten messages (a TCP
// and TLS handshake, EHLO and AUTH each with a real provider).
const (
	smtpPoolSize = 32
	smtpIdleMax  = 30 * time.Second
	smtpAgeMax   = 5 * time.Minute
)

// take returns a kept connection that is still fresh, or a new one.
func (s *SMTP) take(ctx context.Context) (c *smtpConn, reused bool, err error) {
	now := time.Now()
	for {
		s.mu.Lock()
		n := len(s.idle)
		if n > 0 {
			c = s.idle[n-1]
			s.idle = s.idle[:n-1]
		}
		s.mu.Unlock()
		if c == nil {
			break
		}
		if now.Sub(c.used) < smtpIdleMax && now.Sub(c.born) < smtpAgeMax {
			return c, true, nil
		}
		go s.quit(c)
		c = nil
	}
	c, err = s.dial(ctx)
	return c, false, err
}

// dropIdle closes every kept connection.
func (s *SMTP) dropIdle() {
	s.mu.Lock()
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	for _, c := range idle {
		_ = c.conn.Close()
	}
}

// put keeps c for the next send, or says goodbye when enough are kept.
func (s *SMTP) put(c *smtpConn) {
	c.used = time.Now()
	s.mu.Lock()
	if len(s.idle) < smtpPoolSize {
		s.idle = append(s.idle, c)
		c = nil
	}
	s.mu.Unlock()
	if c != nil {
		go s.quit(c)
	}
}

func (s *SMTP) quit(c *smtpConn) {
	_ = c.client.CloseWithSMTPClient(c.smtp)
	_ = c.conn.Close()
}

// dial opens, greets and (per policy) secures and authenticates a new
// connection.
func (s *SMTP) dial(ctx context.Context) (*smtpConn, error) {
	// Each connection gets its own copy so nothing the TLS stack or go-mail
	// does to it is shared between connections.
	tlsConfig := s.tls.Clone()
	c := &smtpConn{}
	var mu sync.Mutex
	dial := func(dctx context.Context, network, addr string) (net.Conn, error) {
		var (
			conn net.Conn
			err  error
		)
		nd := &net.Dialer{Control: s.dialControl}
		if s.policy == TLSImplicit {
			d := tls.Dialer{NetDialer: nd, Config: tlsConfig}
			conn, err = d.DialContext(dctx, network, addr)
		} else {
			conn, err = nd.DialContext(dctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		// The dialer may be called twice (port fallback): the last one is the connection.
		mu.Lock()
		if c.conn != nil {
			_ = c.conn.Close()
		}
		c.conn = conn
		mu.Unlock()
		return conn, nil
	}
	client, err := gomail.NewClient(s.host, s.clientOptions(tlsConfig, dial)...)
	if err != nil {
		return nil, &SendError{Provider: smtpProvider, Msg: "client setup failed"}
	}
	// The greeting, STARTTLS and AUTH happen here; ctx ending closes the
	// connection, which ends them.
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if c.conn != nil {
			_ = c.conn.Close()
		}
	})
	sc, err := client.DialToSMTPClientWithContext(ctx)
	stop()
	if err != nil {
		mu.Lock()
		if c.conn != nil {
			_ = c.conn.Close()
		}
		mu.Unlock()
		return nil, fmt.Errorf("dial failed: %w", err)
	}
	c.client, c.smtp, c.born = client, sc, time.Now()
	return c, nil
}

// clientOptions translates the provider's settings into go-mail options.
func (s *SMTP) clientOptions(tlsConfig *tls.Config, dial gomail.DialContextFunc) []gomail.Option {
	opts := []gomail.Option{
		gomail.WithPort(s.port),
		gomail.WithTimeout(s.timeout),
		gomail.WithTLSConfig(tlsConfig),
		gomail.WithDialContextFunc(dial),
		gomail.WithSMTPAuth(s.auth),
		// Each message on a kept connection costs its own commands only: no
		// NOOP before it (a dropped connection shows at MAIL, and Send dials
		// again) and no RSET after it (the end of DATA ends the
		// transaction; a connection that failed is closed, never reused).
		gomail.WithoutNoop(),
		gomail.WithoutRset(),
	}
	switch s.policy {
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	case TLSOpportunistic:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case TLSMandatory:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case TLSImplicit:
		// The dialer already wraps the connection in TLS; STARTTLS on top of it must not be attempted.
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	}
	if s.auth != gomail.SMTPAuthNoAuth {
		opts = append(opts, gomail.WithUsername(s.username), gomail.WithPassword(s.password))
	}
	if s.helo != "" {
		opts = append(opts, gomail.WithHELO(s.helo))
	}
	return opts
}

// domainOf returns the part of an address after the last '@', or "localhost" when there is none.
func domainOf(addr string) string {
	if at := strings.LastIndexByte(addr, '@'); at >= 0 && at < len(addr)-1 {
		return addr[at+1:]
	}
	return "localhost"
}
