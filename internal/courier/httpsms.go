package courier

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// SignatureHeader carries the HMAC signature of the generic HTTP provider's
// request body when a signing secret is set. Its value has the form of a
// Gatehouse webhook signature, t=<unix seconds>,v1=<hex HMAC-SHA256(secret,
// t + "." + raw body)>, so webhookverify.Verify checks it too.
const SignatureHeader = "X-Gatehouse-Signature"

// HTTPSMSConfig configures the generic HTTP provider: each message is one
// JSON POST to URL, with an optional bearer token and body signature.
//
// An SMS is {"channel":"sms","to":"+14155552671","text":"...","from":"..."}
// (the to/text/from of the first version are unchanged); an e-mail is
// {"channel":"email","to","from","subject","text","html"}. Any 2xx is
// success; an "id" in a JSON answer is the provider's message id.
type HTTPSMSConfig struct {
	URL      string
	Token    string           // optional, sent as Authorization: Bearer <token>
	From     string           // optional default sender, sent as "from"
	Secret   string           // optional HMAC key; set: every request carries SignatureHeader
	Channels []Channel        // what the endpoint accepts; nil => SMS only (the first version)
	Timeout  time.Duration    // 0 => 10s
	Client   *http.Client     // optional; tests pass their own. Redirects are never followed.
	Now      func() time.Time // optional clock for signatures and Retry-After dates
}

// HTTPSMS is the generic HTTP provider: it sends SMS and, when configured,
// e-mail through a plain HTTP endpoint (a gateway of your own, or an
// adapter in front of a carrier or mail API).
type HTTPSMS struct {
	cfg    HTTPSMSConfig
	client *http.Client
	now    func() time.Time
}

// httpProvider names the generic provider in SendErrors.
const httpProvider = "http"

// NewHTTPSMS validates the config and returns the provider.
func NewHTTPSMS(cfg HTTPSMSConfig) (*HTTPSMS, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("courier: HTTP provider endpoint must be an absolute http(s) URL")
	}
	for _, ch := range cfg.Channels {
		if ch != ChannelSMS && ch != ChannelEmail {
			return nil, fmt.Errorf("courier: HTTP provider: unknown channel %q", ch)
		}
	}
	if len(cfg.Channels) == 0 {
		cfg.Channels = []Channel{ChannelSMS}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &HTTPSMS{cfg: cfg, client: httpClient(cfg.Client, cfg.Timeout), now: now}, nil
}

// Sends reports whether the endpoint was set up for ch (see ChannelSender).
func (h *HTTPSMS) Sends(ch Channel) bool { return slices.Contains(h.cfg.Channels, ch) }

// httpSMS is the JSON body of one SMS: the three keys of the first version
// (to, text, from, the last possibly empty) plus the channel.
type httpSMS struct {
	Channel Channel `json:"channel"`
	To      string  `json:"to"`
	From    string  `json:"from"`
	Text    string  `json:"text"`
}

// httpEmail is the JSON body of one e-mail; html may be empty.
type httpEmail struct {
	Channel Channel `json:"channel"`
	To      string  `json:"to"`
	From    string  `json:"from"`
	Subject string  `json:"subject"`
	Text    string  `json:"text"`
	HTML    string  `json:"html"`
}

// Send posts one message. Errors are *SendError and never contain the text,
// the token, the secret or the full address.
func (h *HTTPSMS) Send(ctx context.Context, m Message) (string, error) {
	if !slices.Contains(h.cfg.Channels, m.Channel) {
		return "", &SendError{Provider: httpProvider, Msg: fmt.Sprintf("channel %q is not enabled for this endpoint", m.Channel)}
	}
	from := h.cfg.From
	if m.From != "" {
		from = m.From
	}
	var msg any = httpSMS{Channel: m.Channel, To: m.To, From: from, Text: m.Text}
	if m.Channel == ChannelEmail {
		msg = httpEmail{Channel: m.Channel, To: m.To, From: from, Subject: m.Subject, Text: m.Text, HTML: m.HTML}
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return "", &SendError{Provider: httpProvider, Msg: "encode message"}
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return "", &SendError{Provider: httpProvider, Msg: "build request"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "Gatehouse-Courier/1.0")
	if h.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.cfg.Token)
	}
	if h.cfg.Secret != "" {
		req.Header.Set(SignatureHeader, signBody(body, h.now(), h.cfg.Secret))
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return "", transportError(httpProvider, ctx, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseRead))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The body is the gateway's own; it may echo the message, so it is not quoted.
		return "", statusError(httpProvider, resp, "", "", h.now())
	}
	var ack struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(raw, &ack) // the id is optional
	return rawID(ack.ID), nil
}

// rawID turns a JSON id (string or number) into a string; anything else is "".
func rawID(r json.RawMessage) string {
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(r, &n) == nil {
		return n.String()
	}
	return ""
}

// signBody returns the SignatureHeader value for body at t.
func signBody(body []byte, t time.Time, secret string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}
