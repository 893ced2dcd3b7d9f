package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/http/httptest"
	netmail "net/mail"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

// mail is one message the SMTP receiver accepted.
type mail struct {
	to, code string
	subject  string    // as the header has it
	slot     int       // whose SMTP port it came in on: the replica slot that sent it
	began    time.Time // MAIL FROM: the sender was alive then
	at       time.Time // end of DATA
}

// mailbox is an SMTP server listening on one port per replica slot, so that
// every message says which replica sent it.
type mailbox struct {
	ports [replicas]int

	mu   sync.Mutex
	got  []mail
	wake chan struct{}
	gate gate // holds the replies to DATA on one slot
}

// gate keeps requests waiting, so that a kill lands while a sender waits
// for its answer.
type gate struct {
	mu      sync.Mutex
	on      bool
	slot    int // for the mailbox: the slot held
	held    int
	release chan struct{}
}

// hold starts holding (on one slot, for the mailbox) or, off, answers the
// held ones.
func (g *gate) hold(on bool, slot int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.on && !on {
		close(g.release)
	}
	if on && !g.on {
		g.release = make(chan struct{})
	}
	g.on, g.slot = on, slot
}

// wait holds the caller while the gate is on (for slot, or any slot when
// slot < 0), for at most 5 s.
func (g *gate) wait(slot int) {
	g.mu.Lock()
	if !g.on || slot >= 0 && slot != g.slot {
		g.mu.Unlock()
		return
	}
	g.held++
	release := g.release
	g.mu.Unlock()
	select {
	case <-release:
	case <-time.After(5 * time.Second):
	}
	g.mu.Lock()
	g.held--
	g.mu.Unlock()
}

// waitHeld waits up to 3 s until at least want requests are held, and
// returns how many are.
func (g *gate) waitHeld(want int) int {
	deadline := time.Now().Add(3 * time.Second)
	for {
		g.mu.Lock()
		n := g.held
		g.mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newMailbox(t *testing.T) *mailbox {
	m := &mailbox{wake: make(chan struct{})}
	for slot := range replicas {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		m.ports[slot] = l.Addr().(*net.TCPAddr).Port
		s := smtp.NewServer(smtpBackend{m: m, slot: slot})
		s.Domain = "mx.scale.test"
		s.ReadTimeout, s.WriteTimeout = 30*time.Second, 30*time.Second
		go func() { _ = s.Serve(l) }()
		t.Cleanup(func() { _ = s.Close() })
	}
	return m
}

type smtpBackend struct {
	m    *mailbox
	slot int
}

func (b smtpBackend) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &smtpSession{m: b.m, slot: b.slot}, nil
}

type smtpSession struct {
	m     *mailbox
	slot  int
	to    []string
	began time.Time
}

func (s *smtpSession) Mail(string, *smtp.MailOptions) error {
	s.began = time.Now()
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

// codeLine is the code's line in the text part of a sign-in code e-mail.
var codeLine = regexp.MustCompile(`(?m)^(\d{6})\r?$`)

func (s *smtpSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	text, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(raw)))
	if err != nil {
		text = raw
	}
	code, subject := "", ""
	if m := codeLine.FindSubmatch(text); m != nil {
		code = string(m[1])
	}
	if msg, err := netmail.ReadMessage(bytes.NewReader(raw)); err == nil {
		subject = msg.Header.Get("Subject")
	}
	s.m.mu.Lock()
	for _, to := range s.to {
		s.m.got = append(s.m.got, mail{to: strings.ToLower(to), code: code, subject: subject, slot: s.slot, began: s.began, at: time.Now()})
	}
	close(s.m.wake)
	s.m.wake = make(chan struct{})
	s.m.mu.Unlock()
	// The message is received; the sender learns it only now. A sender
	// killed while held here never records the send: another replica
	// sends it again (unless its challenge is no longer pending), the one
	// duplicate a kill may cause.
	s.m.gate.wait(s.slot)
	return nil
}

func (s *smtpSession) Reset()        { s.to = nil }
func (s *smtpSession) Logout() error { return nil }

// all returns every message so far.
func (m *mailbox) all() []mail {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]mail(nil), m.got...)
}

// code waits up to timeout (or until ctx ends) for a code sent to to that
// is not in seen.
func (m *mailbox) code(ctx context.Context, to string, seen map[string]bool, timeout time.Duration) (string, bool) {
	deadline := time.After(timeout)
	for {
		m.mu.Lock()
		wake := m.wake
		for _, x := range m.got {
			if x.to == to && x.code != "" && !seen[x.code] {
				m.mu.Unlock()
				return x.code, true
			}
		}
		m.mu.Unlock()
		select {
		case <-wake:
		case <-deadline:
			return "", false
		case <-ctx.Done():
			return "", false
		}
	}
}

// hookReceiver is the webhook endpoint: it checks every request's
// signature and records each delivery by its event id.
type hookReceiver struct {
	srv *httptest.Server

	gate gate // holds deliveries before they are answered

	mu     sync.Mutex
	secret string
	got    map[string]int    // event id -> deliveries received
	types  map[string]string // event id -> event_type
	bad    []string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{got: map[string]int{}, types: map[string]string{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) url() string { return h.srv.URL + "/hooks" }

func (h *hookReceiver) setSecret(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.secret = s
}

func (h *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	h.mu.Lock()
	secret := h.secret
	h.mu.Unlock()
	if err == nil {
		err = webhookverify.Verify(req.Header.Get(webhookverify.Header), body, time.Now(), 0, secret)
	}
	var env struct {
		ID        string `json:"id"`
		EventType string `json:"event_type"`
	}
	if err == nil {
		err = json.Unmarshal(body, &env)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil || env.ID == "" {
		h.bad = append(h.bad, "refused delivery: "+errString(err)+": "+string(body[:min(len(body), 200)]))
		http.Error(w, "bad delivery", http.StatusBadRequest)
		return
	}
	h.got[env.ID]++
	h.types[env.ID] = env.EventType
	h.mu.Unlock()
	h.gate.wait(-1)
	h.mu.Lock()
	w.WriteHeader(http.StatusOK)
}

// received returns how often each event id arrived, and the refused requests.
func (h *hookReceiver) received() (map[string]int, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.got))
	for k, v := range h.got {
		out[k] = v
	}
	return out, append([]string(nil), h.bad...)
}

func errString(err error) string {
	if err == nil {
		return "no event id"
	}
	return err.Error()
}
