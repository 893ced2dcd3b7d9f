package courier

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

const postmarkToken = "pm-server-token-5f2c"

func newTestPostmark(t *testing.T, f *fakeAPI, edit func(*PostmarkConfig)) *Postmark {
	t.Helper()
	cfg := PostmarkConfig{ServerToken: postmarkToken, From: "Acme <no-reply@acme.test>", Endpoint: f.URL,
		Timeout: 2 * time.Second, Now: fixedNow}
	if edit != nil {
		edit(&cfg)
	}
	p, err := NewPostmark(cfg)
	if err != nil {
		t.Fatalf("NewPostmark() error = %v", err)
	}
	return p
}

func TestPostmarkSend(t *testing.T) {
	f := startFake(t, func(*recorded) fakeAnswer {
		return fakeAnswer{status: 200, body: `{"To":"ada@example.com","SubmittedAt":"2026-11-26T09:00:00.0-05:00",` +
			`"MessageID":"b7bc2f4a-e38e-4336-af7d-e6c392c2f817","ErrorCode":0,"Message":"OK"}`}
	})
	p := newTestPostmark(t, f, nil)
	m := Message{Channel: ChannelEmail, To: "Ada <ada@example.com>", Subject: "Your code", Text: "code 482913",
		HTML: "<p>code 482913</p>"}
	id, err := p.Send(context.Background(), m)
	if err != nil || id != "b7bc2f4a-e38e-4336-af7d-e6c392c2f817" {
		t.Fatalf("Send() = %q, %v; want Postmark's MessageID", id, err)
	}
	r := f.last(t)
	if r.method != http.MethodPost || r.path != "/email" {
		t.Errorf("request %s %s; want POST /email", r.method, r.path)
	}
	for k, want := range map[string]string{"X-Postmark-Server-Token": postmarkToken, "Content-Type": "application/json", "Accept": "application/json"} {
		if got := r.header.Get(k); got != want {
			t.Errorf("header %s = %q; want %q", k, got, want)
		}
	}
	var body map[string]any
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	want := map[string]any{"From": "Acme <no-reply@acme.test>", "To": "Ada <ada@example.com>", "Subject": "Your code",
		"TextBody": "code 482913", "HtmlBody": "<p>code 482913</p>", "MessageStream": "outbound", "TrackOpens": false, "TrackLinks": "None"}
	for k, v := range want {
		if body[k] != v {
			t.Errorf("body[%s] = %#v; want %#v", k, body[k], v)
		}
	}

	// A From override and a custom stream; no HTML part is left out of the body.
	p = newTestPostmark(t, f, func(c *PostmarkConfig) { c.MessageStream = "signin" })
	if _, err := p.Send(context.Background(), Message{Channel: ChannelEmail, To: "ada@example.com", From: "Beta <hi@beta.test>", Subject: "s", Text: "t"}); err != nil {
		t.Fatalf("Send() error = %v", err)
	}
	body = nil
	_ = json.Unmarshal(f.last(t).body, &body)
	if body["From"] != "Beta <hi@beta.test>" || body["MessageStream"] != "signin" {
		t.Errorf("body = %v; want the From override and stream signin", body)
	}
	if _, ok := body["HtmlBody"]; ok {
		t.Errorf("body has HtmlBody without HTML: %v", body)
	}
}

func TestPostmarkErrors(t *testing.T) {
	tests := []struct {
		name   string
		answer fakeAnswer
		want   wantClass
	}{
		{"bad token", fakeAnswer{status: 401, body: `{"ErrorCode":10,"Message":"No Account or Server API tokens were supplied in the HTTP headers."}`},
			wantClass{status: 401, code: "10", msg: "server token"}},
		{"unverified sender", fakeAnswer{status: 422, body: `{"ErrorCode":400,"Message":"The 'From' address you supplied (no-reply@acme.test) is not a Sender Signature on your account."}`},
			wantClass{status: 422, code: "400", msg: "sender signature"}},
		{"invalid request", fakeAnswer{status: 422, body: `{"ErrorCode":300,"Message":"Invalid 'To' address: 'ada@example.com'."}`},
			wantClass{status: 422, code: "300", msg: "invalid e-mail request"}},
		{"inactive recipient", fakeAnswer{status: 422, body: `{"ErrorCode":406,"Message":"You tried to send to recipient(s) that have been marked as inactive. Found inactive addresses: ada@example.com."}`},
			wantClass{status: 422, code: "406", msg: "inactive recipient"}},
		{"out of credits", fakeAnswer{status: 422, body: `{"ErrorCode":405,"Message":"Not allowed to send: you have run out of credits."}`},
			wantClass{status: 422, code: "405"}},
		{"unknown 422 code", fakeAnswer{status: 422, body: `{"ErrorCode":1234,"Message":"Something new."}`},
			wantClass{status: 422, code: "1234"}},
		{"too large", fakeAnswer{status: 413, body: ""}, wantClass{status: 413, msg: "too large"}},
		{"rate limited", fakeAnswer{status: 429, header: map[string]string{"Retry-After": "30"}, body: `{"ErrorCode":429,"Message":"Rate limit exceeded."}`},
			wantClass{status: 429, code: "429", temporary: true, retry: 30 * time.Second}},
		{"rate limited, date", fakeAnswer{status: 429, header: map[string]string{"Retry-After": testNow.Add(2 * time.Minute).Format(http.TimeFormat)}},
			wantClass{status: 429, temporary: true, retry: 2 * time.Minute}},
		{"server error", fakeAnswer{status: 500, body: `{"ErrorCode":0,"Message":"Internal server error"}`},
			wantClass{status: 500, temporary: true, msg: "server error"}},
		{"maintenance", fakeAnswer{status: 503, header: map[string]string{"Retry-After": "120"}, body: `{"ErrorCode":100,"Message":"Maintenance"}`},
			wantClass{status: 503, code: "100", temporary: true, retry: 2 * time.Minute, msg: "maintenance"}},
		{"maintenance code on an odd status", fakeAnswer{status: 422, body: `{"ErrorCode":100,"Message":"Maintenance"}`},
			wantClass{status: 422, code: "100", temporary: true}},
		{"gateway html", fakeAnswer{status: 502, header: map[string]string{"Content-Type": "text/html"}, body: "<html>bad gateway</html>"},
			wantClass{status: 502, temporary: true}},
		{"error code in a 200", fakeAnswer{status: 200, body: `{"ErrorCode":406,"Message":"Inactive recipient"}`},
			wantClass{status: 200, code: "406"}},
		{"redirect", fakeAnswer{status: 302, header: map[string]string{"Location": "https://elsewhere.example/"}},
			wantClass{status: 302, msg: "redirect not followed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startFake(t, func(*recorded) fakeAnswer { return tt.answer })
			p := newTestPostmark(t, f, nil)
			_, err := p.Send(context.Background(), Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "s", Text: "code 482913"})
			tt.want.check(t, sendErr(t, err))
		})
	}
}

func TestPostmarkTransportErrors(t *testing.T) {
	slow := startFake(t, func(*recorded) fakeAnswer { return fakeAnswer{status: 200, delay: 5 * time.Second} })
	p := newTestPostmark(t, slow, func(c *PostmarkConfig) { c.Timeout = 100 * time.Millisecond })
	start := time.Now()
	_, err := p.Send(context.Background(), Message{Channel: ChannelEmail, To: "ada@example.com", Text: "t"})
	wantClass{temporary: true, msg: "timed out"}.check(t, sendErr(t, err))
	if time.Since(start) > 3*time.Second {
		t.Errorf("Send() took %s; want the 100ms timeout to end it", time.Since(start))
	}

	down := startFake(t, func(*recorded) fakeAnswer { return fakeAnswer{status: 200} })
	p = newTestPostmark(t, down, nil)
	down.Close()
	_, err = p.Send(context.Background(), Message{Channel: ChannelEmail, To: "ada@example.com", Text: "t"})
	wantClass{temporary: true, msg: "unreachable"}.check(t, sendErr(t, err))
}

func TestPostmarkRefusesBadMessages(t *testing.T) {
	f := startFake(t, func(*recorded) fakeAnswer { return fakeAnswer{status: 200, body: `{"MessageID":"x"}`} })
	p := newTestPostmark(t, f, nil)
	for name, m := range map[string]Message{
		"sms":            {Channel: ChannelSMS, To: "+14155552671", Text: "t"},
		"two recipients": {Channel: ChannelEmail, To: "a@example.com, b@example.com", Text: "t"},
		"bad from":       {Channel: ChannelEmail, To: "a@example.com", From: "nope", Text: "t"},
		"empty body":     {Channel: ChannelEmail, To: "a@example.com"},
	} {
		_, err := p.Send(context.Background(), m)
		if se := sendErr(t, err); se.Temporary {
			t.Errorf("Send(%s) = %v; want a permanent error", name, se)
		}
	}
	if len(f.reqs) != 0 {
		t.Errorf("the fake got %d requests; want none", len(f.reqs))
	}
}

func TestNewPostmarkValidation(t *testing.T) {
	for name, cfg := range map[string]PostmarkConfig{
		"no token":      {From: "a@acme.test"},
		"bad from":      {ServerToken: "x", From: "acme"},
		"http endpoint": {ServerToken: "x", From: "a@acme.test", Endpoint: "http://api.postmarkapp.com"},
	} {
		if _, err := NewPostmark(cfg); err == nil {
			t.Errorf("NewPostmark(%s) accepted", name)
		}
	}
	p, err := NewPostmark(PostmarkConfig{ServerToken: "x", From: "a@acme.test"})
	if err != nil || p.url != "https://api.postmarkapp.com/email" {
		t.Errorf("NewPostmark(defaults) = %v, %v; want the public endpoint", p, err)
	}
}
