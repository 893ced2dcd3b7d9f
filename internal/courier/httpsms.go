package courier

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// HTTPSMSConfig configures the plain HTTP SMS provider: each message is one
// JSON POST {"to": "+14155552671", "text": "..."} to URL, with an optional
// bearer token. Any 2xx is success; an "id" in a JSON answer is the
// provider's message id.
type HTTPSMSConfig struct {
	URL     string
	Token   string
	From    string        // optional sender id, sent as "from"
	Timeout time.Duration // 0 => 10s
	Client  *http.Client  // optional; tests pass their own
}

// HTTPSMS sends SMS through a plain HTTP endpoint (a gateway of your own, or
// an adapter in front of a carrier API).
type HTTPSMS struct {
	cfg    HTTPSMSConfig
	client *http.Client
}

// NewHTTPSMS validates the config and returns the provider.
func NewHTTPSMS(cfg HTTPSMSConfig) (*HTTPSMS, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("courier: SMS endpoint must be an absolute http(s) URL")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	c := cfg.Client
	if c == nil {
		c = &http.Client{Timeout: cfg.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return &HTTPSMS{cfg: cfg, client: c}, nil
}

// Send posts one SMS. Errors never contain the text (it holds the code).
func (h *HTTPSMS) Send(ctx context.Context, m Message) (string, error) {
	if m.Channel != ChannelSMS {
		return "", fmt.Errorf("%w: the HTTP SMS provider sends SMS only", ErrDelivery)
	}
	body, err := json.Marshal(map[string]string{"to": m.To, "text": m.Text, "from": h.cfg.From})
	if err != nil {
		return "", fmt.Errorf("%w: encode message", ErrDelivery)
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("%w: build request", ErrDelivery)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Gatehouse-SMS/1.0")
	if h.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.cfg.Token)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w: SMS endpoint timed out", ErrDelivery)
		}
		return "", fmt.Errorf("%w: SMS endpoint unreachable", ErrDelivery)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("%w: SMS endpoint answered %d", ErrDelivery, resp.StatusCode)
	}
	var ack struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &ack) // the id is optional
	return ack.ID, nil
}
