package courier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/mail"
	"strconv"
	"strings"
	"time"
)

// PostmarkEndpoint is Postmark's API base URL.
const PostmarkEndpoint = "https://api.postmarkapp.com"

// postmarkProvider names Postmark in SendErrors.
const postmarkProvider = "postmark"

// PostmarkConfig configures the Postmark e-mail provider. Each message is
// one POST {Endpoint}/email with the server token in
// X-Postmark-Server-Token.
type PostmarkConfig struct {
	ServerToken   string
	From          string           // default sender; must be a confirmed Postmark sender signature or domain
	MessageStream string           // "" => "outbound", the default transactional stream
	Endpoint      string           // "" => PostmarkEndpoint
	Timeout       time.Duration    // 0 => 10s
	Client        *http.Client     // optional. Redirects are never followed.
	Now           func() time.Time // optional clock for Retry-After dates
}

// Postmark sends e-mail through Postmark's Email API.
type Postmark struct {
	cfg    PostmarkConfig
	url    string
	client *http.Client
	now    func() time.Time
}

// NewPostmark validates the config and returns the provider.
func NewPostmark(cfg PostmarkConfig) (*Postmark, error) {
	if cfg.ServerToken == "" {
		return nil, errors.New("courier: postmark server token is required")
	}
	if _, err := mail.ParseAddress(cfg.From); err != nil {
		return nil, errors.New("courier: postmark from must be an e-mail address")
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = PostmarkEndpoint
	}
	if _, err := checkEndpoint(cfg.Endpoint); err != nil {
		return nil, errors.New("courier: postmark endpoint " + err.Error())
	}
	if cfg.MessageStream == "" {
		cfg.MessageStream = "outbound"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Postmark{cfg: cfg, url: strings.TrimRight(cfg.Endpoint, "/") + "/email", client: httpClient(cfg.Client, cfg.Timeout), now: now}, nil
}

// postmarkEmail is the body of POST /email. Tracking is off: open tracking
// needs nothing from a sign-in mail, and link tracking would rewrite the
// secret magic link through Postmark's click-tracking domain.
type postmarkEmail struct {
	From          string `json:"From"`
	To            string `json:"To"`
	Subject       string `json:"Subject"`
	TextBody      string `json:"TextBody,omitempty"`
	HTMLBody      string `json:"HtmlBody,omitempty"`
	MessageStream string `json:"MessageStream"`
	TrackOpens    bool   `json:"TrackOpens"`
	TrackLinks    string `json:"TrackLinks"`
}

// postmarkAnswer is Postmark's answer, success or error: ErrorCode 0 is success.
type postmarkAnswer struct {
	ErrorCode int    `json:"ErrorCode"`
	Message   string `json:"Message"` // never quoted: it may name the recipient
	MessageID string `json:"MessageID"`
}

// postmarkCodes describes the Postmark API error codes a send can meet, and
// whether the same message may go through later.
var postmarkCodes = map[int]struct {
	what      string
	temporary bool
}{
	10:  {"bad or missing server token", false},
	100: {"Postmark is in maintenance", true},
	300: {"invalid e-mail request (check the From and To addresses)", false},
	400: {"sender signature not found", false},
	401: {"sender signature not confirmed", false},
	402: {"invalid JSON", false},
	403: {"incompatible JSON", false},
	405: {"account not allowed to send (out of credits?)", false},
	406: {"inactive recipient (bounced, unsubscribed or marked as spam)", false},
	409: {"JSON required", false},
	412: {"account is pending approval", false},
	413: {"account may not send", false},
	429: {"rate limit exceeded", true},
}

// Send posts one e-mail and returns Postmark's MessageID.
func (p *Postmark) Send(ctx context.Context, m Message) (string, error) {
	if m.Channel != ChannelEmail {
		return "", &SendError{Provider: postmarkProvider, Msg: "sends e-mail only"}
	}
	from := p.cfg.From
	if m.From != "" {
		from = m.From
	}
	if _, err := mail.ParseAddress(from); err != nil {
		return "", &SendError{Provider: postmarkProvider, Msg: "invalid from address"}
	}
	if _, err := mail.ParseAddress(m.To); err != nil {
		// One recipient only: Postmark would take a comma-separated list.
		return "", &SendError{Provider: postmarkProvider, Msg: "invalid recipient address " + MaskAddress(m.To)}
	}
	if m.Text == "" && m.HTML == "" {
		return "", &SendError{Provider: postmarkProvider, Msg: "empty message body"}
	}
	body, err := json.Marshal(postmarkEmail{From: from, To: m.To, Subject: m.Subject, TextBody: m.Text, HTMLBody: m.HTML,
		MessageStream: p.cfg.MessageStream, TrackLinks: "None"})
	if err != nil {
		return "", &SendError{Provider: postmarkProvider, Msg: "encode message"}
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return "", &SendError{Provider: postmarkProvider, Msg: "build request"}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Gatehouse-Courier/1.0")
	req.Header.Set("X-Postmark-Server-Token", p.cfg.ServerToken)
	resp, err := p.client.Do(req)
	if err != nil {
		return "", transportError(postmarkProvider, ctx, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseRead))
	var ans postmarkAnswer
	jsonErr := json.Unmarshal(raw, &ans)
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 && ans.ErrorCode == 0 {
		return ans.MessageID, nil
	}
	return "", p.classify(resp, ans, jsonErr == nil)
}

// classify turns a Postmark error answer into a *SendError. The HTTP status
// decides first (401 token, 413 too large, 429 and 5xx temporary); a 422
// is decided by its ErrorCode.
func (p *Postmark) classify(resp *http.Response, ans postmarkAnswer, parsed bool) *SendError {
	code := ""
	if parsed && ans.ErrorCode != 0 {
		code = strconv.Itoa(ans.ErrorCode)
	}
	known, isKnown := postmarkCodes[ans.ErrorCode]
	what := ""
	switch {
	case isKnown && code != "":
		what = known.what
	case resp.StatusCode == http.StatusUnauthorized:
		what = "bad or missing server token"
	case resp.StatusCode == http.StatusRequestEntityTooLarge:
		what = "message too large"
	case resp.StatusCode == http.StatusTooManyRequests:
		what = "rate limit exceeded"
	case resp.StatusCode >= 500:
		what = "Postmark server error"
	}
	se := statusError(postmarkProvider, resp, code, what, p.now())
	if isKnown && code != "" && known.temporary && !se.Temporary {
		se.Temporary = true
		se.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), p.now())
	}
	return se
}
