package courier

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHTTPSMS(t *testing.T) {
	var got map[string]string
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		if r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("Content-Type = %q", r.Header.Get("Content-Type"))
		}
		_ = json.NewDecoder(r.Body).Decode(&got)
		switch got["to"] {
		case "+15550000500":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(got["text"])) // a careless gateway echoing the body
		case "+15550000999":
			time.Sleep(time.Second)
		default:
			_, _ = w.Write([]byte(`{"id":"sms-42"}`))
		}
	}))
	defer srv.Close()

	p, err := NewHTTPSMS(HTTPSMSConfig{URL: srv.URL, Token: "tok", From: "Gatehouse", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Send(context.Background(), Message{Channel: ChannelSMS, To: "+14155552671", Text: "123456 is your code"})
	if err != nil || id != "sms-42" {
		t.Fatalf("Send = %q, %v; want sms-42", id, err)
	}
	if got["to"] != "+14155552671" || got["text"] != "123456 is your code" || got["from"] != "Gatehouse" || auth != "Bearer tok" {
		t.Errorf("request = %v (auth %q)", got, auth)
	}
	for _, to := range []string{"+15550000500", "+15550000999"} {
		_, err := p.Send(context.Background(), Message{Channel: ChannelSMS, To: to, Text: "secret 654321"})
		if !errors.Is(err, ErrDelivery) || strings.Contains(err.Error(), "654321") {
			t.Errorf("Send(%s) err = %v; want ErrDelivery without the text", to, err)
		}
	}
	if _, err := p.Send(context.Background(), Message{Channel: ChannelEmail, To: "a@b.co", Text: "x"}); !errors.Is(err, ErrDelivery) {
		t.Errorf("e-mail through the SMS provider err = %v", err)
	}
	for _, bad := range []string{"", "ftp://x", "not a url", "http://"} {
		if _, err := NewHTTPSMS(HTTPSMSConfig{URL: bad}); err == nil {
			t.Errorf("NewHTTPSMS(%q) accepted", bad)
		}
	}
}
