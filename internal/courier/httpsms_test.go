package courier

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

func newTestHTTP(t *testing.T, f *fakeAPI, edit func(*HTTPSMSConfig)) *HTTPSMS {
	t.Helper()
	cfg := HTTPSMSConfig{URL: f.URL + "/send", Token: "tok-77aa", From: "Gatehouse", Timeout: 2 * time.Second, Now: fixedNow}
	if edit != nil {
		edit(&cfg)
	}
	p, err := NewHTTPSMS(cfg)
	if err != nil {
		t.Fatalf("NewHTTPSMS() error = %v", err)
	}
	return p
}

func TestHTTPSMS(t *testing.T) {
	f := startFake(t, func(*recorded) fakeAnswer { return fakeAnswer{status: 200, body: `{"id":"sms-42"}`} })
	p := newTestHTTP(t, f, nil)
	id, err := p.Send(context.Background(), Message{Channel: ChannelSMS, To: "+14155552671", Text: "123456 is your code"})
	if err != nil || id != "sms-42" {
		t.Fatalf("Send = %q, %v; want sms-42", id, err)
	}
	r := f.last(t)
	var got map[string]any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	// The keys of the first version stay, plus the channel.
	want := map[string]any{"channel": "sms", "to": "+14155552671", "text": "123456 is your code", "from": "Gatehouse"}
	if len(got) != len(want) {
		t.Errorf("body = %v; want exactly %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("body[%s] = %#v; want %#v", k, got[k], v)
		}
	}
	if r.path != "/send" || r.header.Get("Authorization") != "Bearer tok-77aa" || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("request %s with headers %v", r.path, r.header)
	}
	if r.header.Get(SignatureHeader) != "" {
		t.Errorf("unsigned provider sent %s", SignatureHeader)
	}
	if _, err := p.Send(context.Background(), Message{Channel: ChannelEmail, To: "a@b.co", Text: "x"}); sendErr(t, err).Temporary {
		t.Errorf("e-mail through an SMS-only endpoint: want a permanent error")
	}
	if !p.Sends(ChannelSMS) || p.Sends(ChannelEmail) {
		t.Errorf("Sends() = sms %v, email %v; want SMS only by default", p.Sends(ChannelSMS), p.Sends(ChannelEmail))
	}
	for _, bad := range []string{"", "ftp://x", "not a url", "http://"} {
		if _, err := NewHTTPSMS(HTTPSMSConfig{URL: bad}); err == nil {
			t.Errorf("NewHTTPSMS(%q) accepted", bad)
		}
	}
	if _, err := NewHTTPSMS(HTTPSMSConfig{URL: "https://x.example", Channels: []Channel{"pigeon"}}); err == nil {
		t.Errorf("NewHTTPSMS(channel pigeon) accepted")
	}
}

func TestHTTPEmailSigned(t *testing.T) {
	f := startFake(t, func(*recorded) fakeAnswer { return fakeAnswer{status: 202, body: `{"id":12345}`} })
	const secret = "hmac-secret-31d0"
	p := newTestHTTP(t, f, func(c *HTTPSMSConfig) {
		c.Channels, c.Secret, c.From, c.Token = []Channel{ChannelEmail, ChannelSMS}, secret, "Acme <no-reply@acme.test>", ""
	})
	m := Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "Sign in", Text: "code 482913", HTML: "<p>code 482913</p>"}
	id, err := p.Send(context.Background(), m)
	if err != nil || id != "12345" {
		t.Fatalf("Send() = %q, %v; want the numeric id as a string", id, err)
	}
	r := f.last(t)
	var got map[string]any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"channel": "email", "to": "ada@example.com", "from": "Acme <no-reply@acme.test>", "subject": "Sign in",
		"text": "code 482913", "html": "<p>code 482913</p>"}
	if len(got) != len(want) {
		t.Errorf("body = %v; want exactly %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("body[%s] = %#v; want %#v", k, got[k], v)
		}
	}
	if r.header.Get("Authorization") != "" {
		t.Errorf("Authorization sent without a token")
	}
	sig := r.header.Get(SignatureHeader)
	if err := webhookverify.Verify(sig, r.body, testNow, 0, secret); err != nil {
		t.Errorf("webhookverify.Verify(%q) = %v; want the signature to verify like a webhook's", sig, err)
	}
	if err := webhookverify.Verify(sig, append(r.body, ' '), testNow, 0, secret); err == nil {
		t.Errorf("a changed body verified")
	}
	if !strings.HasPrefix(sig, "t=1795683600,v1=") {
		t.Errorf("signature %q; want it timestamped with the provider's clock", sig)
	}
	if !p.Sends(ChannelEmail) || !p.Sends(ChannelSMS) {
		t.Errorf("Sends() false for a configured channel")
	}
	// An SMS through the same endpoint.
	if _, err := p.Send(context.Background(), Message{Channel: ChannelSMS, To: "+14155552671", Text: "hi", From: "Override"}); err != nil {
		t.Fatalf("Send(sms) error = %v", err)
	}
	got = nil
	_ = json.Unmarshal(f.last(t).body, &got)
	if got["channel"] != "sms" || got["from"] != "Override" {
		t.Errorf("sms body = %v; want channel sms and the From override", got)
	}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name   string
		answer fakeAnswer
		want   wantClass
	}{
		{"bad request echoing the body", fakeAnswer{status: 400, body: `{"error":"bad number +14155552671 for 482913 is your code"}`}, wantClass{status: 400}},
		{"unauthorized", fakeAnswer{status: 401}, wantClass{status: 401}},
		{"not found", fakeAnswer{status: 404}, wantClass{status: 404}},
		{"unprocessable", fakeAnswer{status: 422}, wantClass{status: 422}},
		{"rate limited", fakeAnswer{status: 429, header: map[string]string{"Retry-After": "12"}}, wantClass{status: 429, temporary: true, retry: 12 * time.Second}},
		{"rate limited by date", fakeAnswer{status: 429, header: map[string]string{"Retry-After": testNow.Add(time.Minute).Format(http.TimeFormat)}},
			wantClass{status: 429, temporary: true, retry: time.Minute}},
		{"rate limited, no wait", fakeAnswer{status: 429}, wantClass{status: 429, temporary: true}},
		{"timeout answer", fakeAnswer{status: 408}, wantClass{status: 408, temporary: true}},
		{"server error echoing", fakeAnswer{status: 500, body: "482913 is your code"}, wantClass{status: 500, temporary: true}},
		{"unavailable", fakeAnswer{status: 503, header: map[string]string{"Retry-After": "5"}}, wantClass{status: 503, temporary: true, retry: 5 * time.Second}},
		{"redirect", fakeAnswer{status: 307, header: map[string]string{"Location": "/elsewhere"}}, wantClass{status: 307, msg: "redirect not followed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startFake(t, func(r *recorded) fakeAnswer {
				if r.path != "/send" {
					t.Errorf("the redirect was followed to %s", r.path)
				}
				return tt.answer
			})
			p := newTestHTTP(t, f, nil)
			_, err := p.Send(context.Background(), Message{Channel: ChannelSMS, To: "+14155552671", Text: "482913 is your code"})
			tt.want.check(t, sendErr(t, err))
			for _, leak := range []string{"482913", "+14155552671", "tok-77aa"} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error %q contains %q", err, leak)
				}
			}
		})
	}
}

func TestHTTPTransportErrors(t *testing.T) {
	slow := startFake(t, func(*recorded) fakeAnswer { return fakeAnswer{status: 200, delay: 5 * time.Second} })
	p := newTestHTTP(t, slow, func(c *HTTPSMSConfig) { c.Timeout = 100 * time.Millisecond })
	_, err := p.Send(context.Background(), Message{Channel: ChannelSMS, To: "+14155552671", Text: "t"})
	wantClass{temporary: true, msg: "timed out"}.check(t, sendErr(t, err))

	// The caller's deadline counts too.
	p = newTestHTTP(t, slow, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = p.Send(ctx, Message{Channel: ChannelSMS, To: "+14155552671", Text: "t"})
	wantClass{temporary: true, msg: "timed out"}.check(t, sendErr(t, err))

	down := startFake(t, func(*recorded) fakeAnswer { return fakeAnswer{status: 200} })
	p = newTestHTTP(t, down, nil)
	down.Close()
	_, err = p.Send(context.Background(), Message{Channel: ChannelSMS, To: "+14155552671", Text: "t"})
	wantClass{temporary: true, msg: "unreachable"}.check(t, sendErr(t, err))

	// A client passed in (as the assembly does) still never follows redirects.
	moved := startFake(t, func(r *recorded) fakeAnswer {
		if r.path != "/send" {
			t.Errorf("redirect followed to %s", r.path)
		}
		return fakeAnswer{status: 302, header: map[string]string{"Location": "/other"}}
	})
	p = newTestHTTP(t, moved, func(c *HTTPSMSConfig) { c.Client = &http.Client{} })
	_, err = p.Send(context.Background(), Message{Channel: ChannelSMS, To: "+14155552671", Text: "t"})
	wantClass{status: 302, msg: "redirect"}.check(t, sendErr(t, err))
}
