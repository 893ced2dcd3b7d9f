package courier

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// testNow is the fixed clock of the provider tests.
var testNow = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return testNow }

// fakeAnswer is one canned answer of a fake provider API.
type fakeAnswer struct {
	status int
	header map[string]string
	body   string
	delay  time.Duration // sleep before answering (timeouts)
}

// fakeAPI is an httptest server that records each request and answers
// with next(r), the canned answer for that request.
type fakeAPI struct {
	*httptest.Server
	reqs chan *recorded
}

// recorded is one request as the fake saw it.
type recorded struct {
	method, path string
	header       http.Header
	body         []byte
}

func startFake(t *testing.T, answer func(r *recorded) fakeAnswer) *fakeAPI {
	t.Helper()
	f := &fakeAPI{reqs: make(chan *recorded, 16)}
	done := make(chan struct{})
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorded{method: r.Method, path: r.URL.Path, header: r.Header.Clone()}
		rec.body, _ = io.ReadAll(r.Body)
		a := answer(rec)
		select {
		case f.reqs <- rec:
		default:
		}
		if a.delay > 0 {
			select {
			case <-time.After(a.delay):
			case <-r.Context().Done():
			case <-done:
			}
		}
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		if a.body != "" && w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	t.Cleanup(func() { close(done); f.Close() })
	return f
}

// last returns the most recent request the fake got.
func (f *fakeAPI) last(t *testing.T) *recorded {
	t.Helper()
	var rec *recorded
	for {
		select {
		case r := <-f.reqs:
			rec = r
		default:
			if rec == nil {
				t.Fatal("the fake got no request")
			}
			return rec
		}
	}
}

// sendErr asserts err is a *SendError wrapping ErrDelivery and returns it.
func sendErr(t *testing.T, err error) *SendError {
	t.Helper()
	var se *SendError
	if !errors.As(err, &se) || !errors.Is(err, ErrDelivery) {
		t.Fatalf("error = %#v (%v); want a *SendError wrapping ErrDelivery", err, err)
	}
	return se
}

// wantClass checks the classification of a *SendError.
type wantClass struct {
	status    int
	code      string
	temporary bool
	retry     time.Duration
	msg       string // a part the message must contain
}

func (w wantClass) check(t *testing.T, se *SendError) {
	t.Helper()
	if se.Status != w.status || se.Code != w.code || se.Temporary != w.temporary || se.RetryAfter != w.retry {
		t.Errorf("SendError{Status %d, Code %q, Temporary %v, RetryAfter %s}; want {%d, %q, %v, %s} (%v)",
			se.Status, se.Code, se.Temporary, se.RetryAfter, w.status, w.code, w.temporary, w.retry, se)
	}
	if w.msg != "" && !strings.Contains(se.Msg, w.msg) {
		t.Errorf("SendError.Msg = %q; want it to contain %q", se.Msg, w.msg)
	}
	if ok, after := Temporary(se); ok != se.Temporary || after != se.RetryAfter {
		t.Errorf("Temporary() = %v, %s; want the SendError's own %v, %s", ok, after, se.Temporary, se.RetryAfter)
	}
}

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-5", 0},
		{"30", 30 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"999999999999", maxRetryAfter},
		{testNow.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{testNow.Add(-time.Minute).Format(http.TimeFormat), 0},
		{testNow.Add(48 * time.Hour).Format(http.TimeFormat), maxRetryAfter},
		{"soon", 0},
		{"1.5", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, testNow); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
}

func TestTemporaryStatus(t *testing.T) {
	for status, want := range map[int]bool{
		301: false, 302: false, 400: false, 401: false, 403: false, 404: false, 408: true, 409: false,
		413: false, 422: false, 425: true, 429: true, 500: true, 502: true, 503: true, 504: true,
	} {
		if got := temporaryStatus(status); got != want {
			t.Errorf("temporaryStatus(%d) = %v; want %v", status, got, want)
		}
	}
}

func TestCheckEndpoint(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"https://sms.example.com/send", true},
		{"https://sms.example.com:8443/send", true},
		{"https://sms.example.com/send?api_key=k", false},
		{"https://sms.example.com/send?", false},
		{"http://127.0.0.1:8080/send", true},
		{"http://localhost/send", true},
		{"http://[::1]:9/send", true},
		{"http://sms.example.com/send", false},
		{"ftp://sms.example.com", false},
		{"sms.example.com/send", false},
		{"/send", false},
		{"https://", false},
		{"https://user:pw@sms.example.com/", false},
		{"https://sms.example.com/#frag", false},
		{"", false},
		{"not a url", false},
	}
	for _, tt := range tests {
		_, err := checkEndpoint(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("checkEndpoint(%q) error = %v; want ok %v", tt.in, err, tt.ok)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("checkEndpoint(%q) error %q quotes the password", tt.in, err)
		}
	}
}

func TestTransportErrorClassification(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), -time.Second)
	defer cancel2()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		msg  string
	}{
		{"canceled", canceled, context.Canceled, "canceled"},
		{"deadline", expired, context.DeadlineExceeded, "timed out"},
		{"refused", context.Background(), errors.New("dial tcp 10.0.0.1:443: connect: connection refused"), "unreachable"},
	}
	for _, tt := range tests {
		se := transportError("http", tt.ctx, tt.err)
		if !se.Temporary || !strings.Contains(se.Msg, tt.msg) || strings.Contains(se.Msg, "10.0.0.1") {
			t.Errorf("transportError(%s) = %+v; want temporary, saying %q, not quoting the cause", tt.name, se, tt.msg)
		}
	}
}
