package courier

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// stubProvider records the messages it gets and answers with a fixed id or error.
type stubProvider struct {
	id  string
	err error
	got []Message
}

func (p *stubProvider) Send(_ context.Context, m Message) (string, error) {
	p.got = append(p.got, m)
	return p.id, p.err
}

func TestOutboxStoresAllFields(t *testing.T) {
	want := Message{
		Channel: ChannelEmail,
		To:      "ada@example.com",
		From:    "Acme <no-reply@acme.test>",
		Subject: "Your Acme sign-in code",
		Text:    "code 123456",
		HTML:    "<p>code 123456</p>",
		Code:    "123456",
		Link:    "https://acme.test/l?t=secret",
		AppID:   "app_1",
	}
	var saved []Message
	o := NewOutbox(saveFunc(func(_ context.Context, m Message) (string, error) {
		saved = append(saved, m)
		return "outbox-7", nil
	}))
	id, err := o.Send(context.Background(), want)
	if err != nil {
		t.Fatalf("Send() error = %v; want nil", err)
	}
	if id != "outbox-7" {
		t.Errorf("Send() id = %q; want %q", id, "outbox-7")
	}
	if len(saved) != 1 || saved[0] != want {
		t.Errorf("save got %+v; want exactly [%+v]", saved, want)
	}
}

// saveFunc is an OutboxStore that saves with a function and lists nothing.
type saveFunc func(context.Context, Message) (string, error)

func (f saveFunc) Save(ctx context.Context, m Message) (string, error) { return f(ctx, m) }
func (saveFunc) List(context.Context, string, int) ([]Kept, error)     { return nil, nil }

func TestOutboxSaveError(t *testing.T) {
	dbErr := errors.New("disk full")
	o := NewOutbox(saveFunc(func(context.Context, Message) (string, error) { return "", dbErr }))
	_, err := o.Send(context.Background(), Message{Channel: ChannelSMS, To: "+14155552671"})
	if !errors.Is(err, ErrDelivery) || !errors.Is(err, dbErr) {
		t.Errorf("Send() error = %v; want wrapping ErrDelivery and the save error", err)
	}

	var nilSave Outbox
	if _, err := nilSave.Send(context.Background(), Message{}); !errors.Is(err, ErrDelivery) {
		t.Errorf("Send() on Outbox without save error = %v; want ErrDelivery", err)
	}
}

func TestRouter(t *testing.T) {
	plainErr := errors.New("gateway 503")
	tests := []struct {
		name      string
		email     *stubProvider
		sms       *stubProvider
		channel   Channel
		wantID    string
		wantErr   bool
		wantEmail int
		wantSMS   int
	}{
		{name: "email", email: &stubProvider{id: "e1"}, sms: &stubProvider{id: "s1"}, channel: ChannelEmail, wantID: "e1", wantEmail: 1},
		{name: "sms", email: &stubProvider{id: "e1"}, sms: &stubProvider{id: "s1"}, channel: ChannelSMS, wantID: "s1", wantSMS: 1},
		{name: "no email provider", sms: &stubProvider{id: "s1"}, channel: ChannelEmail, wantErr: true},
		{name: "no sms provider", email: &stubProvider{id: "e1"}, channel: ChannelSMS, wantErr: true, wantEmail: 0},
		{name: "unknown channel", email: &stubProvider{id: "e1"}, sms: &stubProvider{id: "s1"}, channel: "pigeon", wantErr: true},
		{name: "provider error is wrapped", email: &stubProvider{err: plainErr}, channel: ChannelEmail, wantErr: true, wantEmail: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Router
			// Assign only non-nil stubs so the nil cases really hold a nil interface.
			if tt.email != nil {
				r.Email = tt.email
			}
			if tt.sms != nil {
				r.SMS = tt.sms
			}
			id, err := r.Send(context.Background(), Message{Channel: tt.channel, To: "x"})
			if tt.wantErr {
				if !errors.Is(err, ErrDelivery) {
					t.Errorf("Send() error = %v; want ErrDelivery", err)
				}
			} else if err != nil {
				t.Errorf("Send() error = %v; want nil", err)
			}
			if id != tt.wantID {
				t.Errorf("Send() id = %q; want %q", id, tt.wantID)
			}
			if tt.email != nil && len(tt.email.got) != tt.wantEmail {
				t.Errorf("email provider got %d messages; want %d", len(tt.email.got), tt.wantEmail)
			}
			if tt.sms != nil && len(tt.sms.got) != tt.wantSMS {
				t.Errorf("sms provider got %d messages; want %d", len(tt.sms.got), tt.wantSMS)
			}
		})
	}
	r := Router{Email: &stubProvider{err: plainErr}}
	if _, err := r.Send(context.Background(), Message{Channel: ChannelEmail}); !errors.Is(err, plainErr) {
		t.Errorf("Send() error = %v; want it to keep the provider's error", err)
	}
}

func TestLogProviderOmitsSecrets(t *testing.T) {
	var buf bytes.Buffer
	l := NewLog(slog.New(slog.NewTextHandler(&buf, nil)))
	m := Message{
		Channel: ChannelEmail,
		To:      "ada@example.com",
		Subject: "Your code is 918273",
		Text:    "body-text-918273",
		HTML:    "<p>body-html</p>",
		Code:    "918273",
		Link:    "https://acme.test/magic?t=tok_s3cr3t",
		AppID:   "app_42",
	}
	id, err := l.Send(context.Background(), m)
	if err != nil || id != "" {
		t.Fatalf("Send() = (%q, %v); want (\"\", nil)", id, err)
	}
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 1 {
		t.Errorf("Send() wrote %d log lines; want 1: %s", n, out)
	}
	for _, secret := range []string{m.To, m.Subject, m.Text, m.HTML, m.Code, m.Link, "tok_s3cr3t"} {
		if strings.Contains(out, secret) {
			t.Errorf("log line %q contains %q", out, secret)
		}
	}
	for _, want := range []string{"a**@example.com", "not sent: no provider configured", "app_42", "email"} {
		if !strings.Contains(out, want) {
			t.Errorf("log line %q lacks %q", out, want)
		}
	}
}

func TestMaskAddress(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"ada@example.com", "a**@example.com"},
		{"a@example.com", "*@example.com"},
		{"jörg.müller@example.de", "j**********@example.de"},
		{"weird\"@\"local@example.com", "w************@example.com"},
		{"+14155552671", "+1415*****71"},
		{"+442071838750", "+4420******50"},
		{"14155552671", "14155****71"},
		{"+4912345", "+4******"},
		{"+1", "**"},
		{"not-an-address", "n*************"},
		{"x", "*"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := MaskAddress(tt.in); got != tt.want {
			t.Errorf("MaskAddress(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// TestOutboxChanged: a reader waiting on Changed wakes when a message is
// kept, and not when a save fails.
func TestOutboxChanged(t *testing.T) {
	fail := false
	o := NewOutbox(saveFunc(func(context.Context, Message) (string, error) {
		if fail {
			return "", errors.New("disk full")
		}
		return "outbox-1", nil
	}))
	ch, mine, others := o.Changed(""), o.Changed("a@example.com"), o.Changed("b@example.com")
	fail = true
	if _, err := o.Send(context.Background(), Message{Channel: ChannelEmail, To: "a@example.com"}); err == nil {
		t.Fatal("Send() with a failing store = nil error")
	}
	select {
	case <-ch:
		t.Fatal("Changed closed by a message that was not kept")
	default:
	}
	fail = false
	if _, err := o.Send(context.Background(), Message{Channel: ChannelEmail, To: "a@example.com"}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]<-chan struct{}{"any": ch, "the recipient's": mine} {
		select {
		case <-c:
		default:
			t.Errorf("Changed (%s) not closed after a message was kept", name)
		}
	}
	select {
	case <-others:
		t.Error("Changed of another recipient closed")
	default:
	}
	if next := o.Changed(""); next == ch {
		t.Error("Changed returned the closed channel again")
	}
	if next := o.Changed("a@example.com"); next == mine {
		t.Error("Changed(recipient) returned the closed channel again")
	}
}
