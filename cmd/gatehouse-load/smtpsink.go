package main

import (
	"bufio"
	"context"
	"errors"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// smtpSink is a minimal SMTP server for measuring the code login with a real
// SMTP exchange (-smtp ADDR; the server sends to it with smtp.tls none): it
// accepts every message, keeps the newest code sent to each recipient and
// hands it to whoever waits for it. It speaks just enough of RFC 5321 for
// Gatehouse's client (EHLO, MAIL, RCPT, DATA, RSET, NOOP, QUIT), offers
// PIPELINING as real providers do (commands sent together are answered in
// order, in one write), and never stores a message.
type smtpSink struct {
	ln      net.Listener
	mu      sync.Mutex
	codes   map[string]arrival
	waiters map[string]chan arrival
	// lags holds, per message awaited, the time from the send's answer to
	// the end of its DATA at the sink: the send step, provider call included.
	lags []time.Duration
}

// arrival is a code as the sink received it.
type arrival struct {
	code string
	at   time.Time
}

func newSMTPSink(addr string) (*smtpSink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &smtpSink{ln: ln, codes: map[string]arrival{}, waiters: map[string]chan arrival{}}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(conn)
		}
	}()
	return s, nil
}

// sixDigits finds the code in a message: the login_code template's text
// part has it alone on a line.
var sixDigits = regexp.MustCompile(`(?m)^([0-9]{6})\r?$`)

func (s *smtpSink) serve(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	w := bufio.NewWriter(conn)
	// Replies to commands that came together go out together, as a real
	// server answers a pipelined group: flushed once nothing more is read.
	reply := func(line string) bool {
		_, _ = w.WriteString(line + "\r\n")
		if r.Buffered() > 0 {
			return true
		}
		return w.Flush() == nil
	}
	if !reply("220 gatehouse-load sink") {
		return
	}
	var rcpts []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"):
			if !reply("250-gatehouse-load\r\n250-PIPELINING\r\n250-8BITMIME\r\n250 SMTPUTF8") {
				return
			}
		case strings.HasPrefix(cmd, "HELO"), strings.HasPrefix(cmd, "NOOP"):
			reply("250 ok")
		case strings.HasPrefix(cmd, "MAIL"), strings.HasPrefix(cmd, "RSET"):
			rcpts = rcpts[:0]
			reply("250 ok")
		case strings.HasPrefix(cmd, "RCPT"):
			to := strings.TrimSpace(line[strings.IndexByte(line, ':')+1:])
			to = strings.ToLower(strings.Trim(strings.Fields(to)[0], "<>"))
			rcpts = append(rcpts, to)
			reply("250 ok")
		case cmd == "DATA":
			if !reply("354 go on") {
				return
			}
			var body strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" || l == ".\n" {
					break
				}
				body.WriteString(l)
			}
			code := ""
			if m := sixDigits.FindStringSubmatch(body.String()); m != nil {
				code = m[1]
			}
			at := time.Now()
			reply("250 queued")
			for _, to := range rcpts {
				s.deliver(to, arrival{code: code, at: at})
			}
			rcpts = rcpts[:0]
		case cmd == "QUIT":
			reply("221 bye")
			return
		default:
			reply("502 not implemented")
		}
	}
}

func (s *smtpSink) deliver(to string, a arrival) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.waiters[to]; ok {
		delete(s.waiters, to)
		ch <- a
		return
	}
	s.codes[to] = a
}

// await returns the code sent to to, waiting for it up to 10 s, and
// records how long after answered (the send's answer) it arrived.
func (s *smtpSink) await(ctx context.Context, to string, answered time.Time) (string, error) {
	to = strings.ToLower(to)
	s.mu.Lock()
	a, ok := s.codes[to]
	var ch chan arrival
	if ok {
		delete(s.codes, to)
	} else {
		ch = make(chan arrival, 1)
		s.waiters[to] = ch
	}
	s.mu.Unlock()
	if !ok {
		t := time.NewTimer(10 * time.Second)
		defer t.Stop()
		select {
		case a = <-ch:
		case <-ctx.Done():
			return "", ctx.Err()
		case <-t.C:
			s.mu.Lock()
			delete(s.waiters, to)
			s.mu.Unlock()
			return "", errors.New("no message to " + to + " at the SMTP sink after 10 s (is the server's smtp.host this sink?)")
		}
	}
	if a.code == "" {
		return "", errors.New("the message to " + to + " held no code")
	}
	if !answered.IsZero() {
		s.mu.Lock()
		s.lags = append(s.lags, a.at.Sub(answered))
		s.mu.Unlock()
	}
	return a.code, nil
}

// lag reports the q-th percentile of the recorded lags.
func (s *smtpSink) lag(q int) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lags) == 0 {
		return 0
	}
	l := slices.Clone(s.lags)
	slices.Sort(l)
	return l[(len(l)-1)*q/100].Round(10 * time.Microsecond)
}
