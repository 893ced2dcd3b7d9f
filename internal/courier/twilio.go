package courier

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// TwilioEndpoint is Twilio's REST API base URL (region US1).
const TwilioEndpoint = "https://api.twilio.com"

// twilioProvider names Twilio in SendErrors.
const twilioProvider = "twilio"

var (
	twilioAccountSID = regexp.MustCompile(`^AC[0-9a-fA-F]{32}$`)
	twilioAPIKeySID  = regexp.MustCompile(`^SK[0-9a-fA-F]{32}$`)
	twilioServiceSID = regexp.MustCompile(`^MG[0-9a-fA-F]{32}$`)
	// A sender: an E.164 number, a short code, or an alphanumeric sender id
	// (up to 11 letters, digits and spaces, at least one letter).
	twilioE164      = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	twilioShortCode = regexp.MustCompile(`^[0-9]{3,8}$`)
	twilioAlpha     = regexp.MustCompile(`^[A-Za-z0-9 ]{1,11}$`)
)

// TwilioConfig configures the Twilio SMS provider (Programmable Messaging).
// Credentials are either the account's auth token, or an API key (SID and
// secret) of the account; From or MessagingServiceSID picks the sender.
type TwilioConfig struct {
	AccountSID          string
	AuthToken           string
	APIKeySID           string
	APIKeySecret        string
	From                string           // E.164 number, short code or alphanumeric sender id
	MessagingServiceSID string           // MG…; required when From is empty; with From, From must be in its pool
	Endpoint            string           // "" => TwilioEndpoint; e.g. https://api.dublin.ie1.twilio.com
	Timeout             time.Duration    // 0 => 10s
	Client              *http.Client     // optional. Redirects are never followed.
	Now                 func() time.Time // optional clock for Retry-After dates
}

// Twilio sends SMS through Twilio's Messages resource.
type Twilio struct {
	cfg    TwilioConfig
	url    string
	user   string
	pass   string
	client *http.Client
	now    func() time.Time
}

// twilioConfigError is a TwilioConfig problem, naming the setting.
type twilioConfigError struct{ field, reason string }

func (e *twilioConfigError) Error() string { return "courier: twilio " + e.field + " " + e.reason }

// NewTwilio validates the config and returns the provider.
func NewTwilio(cfg TwilioConfig) (*Twilio, error) {
	if !twilioAccountSID.MatchString(cfg.AccountSID) {
		return nil, &twilioConfigError{"account_sid", "must be AC followed by 32 hex digits"}
	}
	user, pass := cfg.AccountSID, cfg.AuthToken
	switch {
	case cfg.APIKeySID != "" || cfg.APIKeySecret != "":
		if cfg.AuthToken != "" {
			return nil, &twilioConfigError{"auth_token", "must be empty when an API key is set"}
		}
		if !twilioAPIKeySID.MatchString(cfg.APIKeySID) {
			return nil, &twilioConfigError{"api_key_sid", "must be SK followed by 32 hex digits"}
		}
		if cfg.APIKeySecret == "" {
			return nil, &twilioConfigError{"api_key_secret", "is required with api_key_sid"}
		}
		user, pass = cfg.APIKeySID, cfg.APIKeySecret
	case cfg.AuthToken == "":
		return nil, &twilioConfigError{"auth_token", "is required (or api_key_sid and api_key_secret)"}
	}
	switch {
	case cfg.MessagingServiceSID != "":
		if !twilioServiceSID.MatchString(cfg.MessagingServiceSID) {
			return nil, &twilioConfigError{"messaging_service_sid", "must be MG followed by 32 hex digits"}
		}
		if cfg.From != "" && !validTwilioSender(cfg.From) {
			return nil, &twilioConfigError{"from", "must be an E.164 number, a short code or an alphanumeric sender id"}
		}
	case cfg.From == "":
		return nil, &twilioConfigError{"from", "is required (or messaging_service_sid)"}
	case !validTwilioSender(cfg.From):
		return nil, &twilioConfigError{"from", "must be an E.164 number, a short code or an alphanumeric sender id"}
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = TwilioEndpoint
	}
	if _, err := checkEndpoint(cfg.Endpoint); err != nil {
		return nil, &twilioConfigError{"endpoint", err.Error()}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Twilio{
		cfg:    cfg,
		url:    strings.TrimRight(cfg.Endpoint, "/") + "/2010-04-01/Accounts/" + cfg.AccountSID + "/Messages.json",
		user:   user,
		pass:   pass,
		client: httpClient(cfg.Client, cfg.Timeout),
		now:    now,
	}, nil
}

// validTwilioSender reports whether s can be a Twilio From.
func validTwilioSender(s string) bool {
	if twilioE164.MatchString(s) || twilioShortCode.MatchString(s) {
		return true
	}
	return twilioAlpha.MatchString(s) && strings.ContainsAny(strings.ToLower(s), "abcdefghijklmnopqrstuvwxyz") &&
		strings.TrimSpace(s) == s
}

// twilioError is Twilio's error answer. message is never quoted: it names
// the numbers involved.
type twilioError struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	MoreInfo string `json:"more_info"`
	Status   int    `json:"status"`
}

// twilioCodes describes the Messages API error codes a send can meet. All
// are permanent except 20429; 5xx answers are temporary whatever their code.
var twilioCodes = map[int]string{
	20003: "authentication failed (check the account SID and auth token or API key)",
	20404: "account or resource not found (check the account SID)",
	20429: "too many requests",
	21211: "the To number is not a valid phone number",
	21408: "SMS to this region is not enabled in the Twilio geo permissions",
	21606: "the From number cannot send SMS to this destination",
	21608: "trial account: the To number is not verified",
	21610: "the recipient has unsubscribed from this sender (replied STOP)",
	21612: "the To number is not reachable from this sender",
	21614: "the To number is not a mobile number",
	21635: "the To number is a landline",
	21659: "the From number is not a Twilio number, or a short code in another country",
}

// Send creates one Message and returns its SID (SM…).
func (t *Twilio) Send(ctx context.Context, m Message) (string, error) {
	if m.Channel != ChannelSMS {
		return "", &SendError{Provider: twilioProvider, Msg: "sends SMS only"}
	}
	if !twilioE164.MatchString(m.To) {
		return "", &SendError{Provider: twilioProvider, Msg: "recipient " + MaskAddress(m.To) + " is not an E.164 number"}
	}
	form := url.Values{"To": {m.To}, "Body": {m.Text}}
	from := t.cfg.From
	if m.From != "" {
		if !validTwilioSender(m.From) {
			return "", &SendError{Provider: twilioProvider, Msg: "invalid sender override"}
		}
		from = m.From
	}
	if t.cfg.MessagingServiceSID != "" {
		form.Set("MessagingServiceSid", t.cfg.MessagingServiceSID)
	}
	if from != "" {
		// With a Messaging Service too, Twilio sends from this sender of its pool.
		form.Set("From", from)
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, strings.NewReader(form.Encode()))
	if err != nil {
		return "", &SendError{Provider: twilioProvider, Msg: "build request"}
	}
	req.SetBasicAuth(t.user, t.pass)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "Gatehouse-Courier/1.0")
	resp, err := t.client.Do(req)
	if err != nil {
		return "", transportError(twilioProvider, ctx, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseRead))
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		var ok struct {
			SID string `json:"sid"`
		}
		_ = json.Unmarshal(raw, &ok)
		return ok.SID, nil
	}
	var te twilioError
	parsed := json.Unmarshal(raw, &te) == nil
	return "", t.classify(resp, te, parsed)
}

// classify turns a Twilio error answer into a *SendError: 429 or code
// 20429 and 5xx are temporary (with Retry-After), everything else is
// permanent, with Twilio's code kept in Code.
func (t *Twilio) classify(resp *http.Response, te twilioError, parsed bool) *SendError {
	code := ""
	if parsed && te.Code != 0 {
		code = strconv.Itoa(te.Code)
	}
	what := twilioCodes[te.Code]
	if code == "" {
		what = ""
		switch {
		case resp.StatusCode == http.StatusUnauthorized:
			what = twilioCodes[20003]
		case resp.StatusCode == http.StatusTooManyRequests:
			what = twilioCodes[20429]
		case resp.StatusCode >= 500:
			what = "Twilio server error"
		}
	}
	se := statusError(twilioProvider, resp, code, what, t.now())
	if te.Code == 20429 && !se.Temporary {
		se.Temporary = true
		se.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), t.now())
	}
	return se
}

// twilioField lets FromSpec find the field a TwilioConfig error names.
func twilioField(err error) (field, reason string, ok bool) {
	var ce *twilioConfigError
	if errors.As(err, &ce) {
		return ce.field, ce.reason, true
	}
	return "", "", false
}
