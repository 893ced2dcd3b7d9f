package couriertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
)

// Compile-time check that Recorder satisfies the interface other packages use.
var _ courier.Provider = (*Recorder)(nil)

func TestRecorderRecordsAndFindsLast(t *testing.T) {
	var r Recorder
	ctx := context.Background()
	msgs := []courier.Message{
		{Channel: courier.ChannelEmail, To: "ada@example.com", Code: "111111"},
		{Channel: courier.ChannelSMS, To: "+14155552671", Code: "222222"},
		{Channel: courier.ChannelEmail, To: "ada@example.com", Code: "333333"},
	}
	for i, m := range msgs {
		id, err := r.Send(ctx, m)
		if err != nil {
			t.Fatalf("Send(%d) error = %v; want nil", i, err)
		}
		if want := fmt.Sprintf("rec-%d", i+1); id != want {
			t.Errorf("Send(%d) id = %q; want %q", i, id, want)
		}
	}
	got := r.Messages()
	if len(got) != len(msgs) {
		t.Fatalf("Messages() has %d entries; want %d", len(got), len(msgs))
	}
	for i := range msgs {
		if got[i] != msgs[i] {
			t.Errorf("Messages()[%d] = %+v; want %+v", i, got[i], msgs[i])
		}
	}
	got[0].Code = "changed"
	if r.Messages()[0].Code != "111111" {
		t.Errorf("Messages() returned the internal slice; a caller's change leaked in")
	}

	tests := []struct {
		to       string
		wantCode string
		wantOK   bool
	}{
		{"ada@example.com", "333333", true},
		{"+14155552671", "222222", true},
		{"bob@example.com", "", false},
	}
	for _, tt := range tests {
		m, ok := r.Last(tt.to)
		if ok != tt.wantOK || m.Code != tt.wantCode {
			t.Errorf("Last(%q) = (code %q, %v); want (code %q, %v)", tt.to, m.Code, ok, tt.wantCode, tt.wantOK)
		}
	}
}

func TestRecorderErr(t *testing.T) {
	boom := errors.New("boom")
	r := Recorder{Err: boom}
	_, err := r.Send(context.Background(), courier.Message{Channel: courier.ChannelEmail, To: "ada@example.com"})
	if !errors.Is(err, courier.ErrDelivery) || !errors.Is(err, boom) {
		t.Errorf("Send() error = %v; want one wrapping ErrDelivery and Err", err)
	}
	if n := len(r.Messages()); n != 0 {
		t.Errorf("Messages() after a failed send has %d entries; want 0", n)
	}
}

func TestRecorderCanceledContext(t *testing.T) {
	var r Recorder
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.Send(ctx, courier.Message{To: "ada@example.com"})
	if !errors.Is(err, courier.ErrDelivery) || !errors.Is(err, context.Canceled) {
		t.Errorf("Send(canceled ctx) error = %v; want ErrDelivery and context.Canceled", err)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	var r Recorder
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := r.Send(context.Background(), courier.Message{To: fmt.Sprintf("u%d@example.com", i)}); err != nil {
				t.Errorf("Send() error = %v", err)
			}
			r.Last("u0@example.com")
		})
	}
	wg.Wait()
	if got := len(r.Messages()); got != n {
		t.Errorf("len(Messages()) = %d; want %d", got, n)
	}
}
