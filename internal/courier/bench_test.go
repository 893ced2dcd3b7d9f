package courier

import (
	"context"
	"strings"
	"testing"
)

// BenchmarkSMTPSend sends a message the size of a sign-in code's (text and
// HTML, about 3.5 KB encoded) on a kept connection to an in-process SMTP
// server, whose own work is part of each operation.
func BenchmarkSMTPSend(b *testing.B) {
	ts := startServer(b, serverOptions{})
	s := newTestSMTP(b, ts, TLSNone, nil)
	m := Message{
		Channel: ChannelEmail,
		To:      "Ada Lovelace <ada@example.com>",
		Subject: "Your Acme sign-in code: 482913",
		Text:    strings.Repeat("Your code is 482913. It expires in 10 minutes.\n", 10),
		HTML:    "<!doctype html><html><body>" + strings.Repeat(`<p style="margin:0 0 16px;font-family:Helvetica,Arial,sans-serif">Your code is <b>482913</b>. It expires in 10 minutes.</p>`+"\n", 20) + "</body></html>",
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Send(context.Background(), m); err != nil {
			b.Fatal(err)
		}
	}
}
