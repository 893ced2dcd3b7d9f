package courier

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
)

// checkQuotedPrintable holds what appendQuotedPrintable promises of its
// output for text: CRLF line ends only, lines of at most 76 characters,
// 7-bit printable characters, no line that starts with a dot (so DATA needs
// no dot-stuffing), and the standard library's reader decodes it back to
// text with its line breaks as CRLF.
func checkQuotedPrintable(t *testing.T, text string) {
	t.Helper()
	out := appendQuotedPrintable(nil, text)
	if !bytes.HasSuffix(out, []byte("\r\n")) {
		t.Fatalf("encoding of %q does not end with CRLF: %q", text, out)
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(out), "\r\n"), "\r\n") {
		if len(line) > 76 {
			t.Fatalf("line %d of the encoding of %q has %d characters: %q", i, text, len(line), line)
		}
		if strings.HasPrefix(line, ".") {
			t.Fatalf("line %d of the encoding of %q starts with a dot: %q", i, text, line)
		}
		for j := 0; j < len(line); j++ {
			if c := line[j]; (c < ' ' && c != '\t') || c >= 0x7f {
				t.Fatalf("line %d of the encoding of %q holds byte %#x: %q", i, text, c, line)
			}
		}
		if strings.HasSuffix(line, " ") || strings.HasSuffix(line, "\t") {
			t.Fatalf("line %d of the encoding of %q ends in white space: %q", i, text, line)
		}
	}
	got, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(out)))
	if err != nil {
		t.Fatalf("decode the encoding of %q: %v\n%q", text, err, out)
	}
	want := strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n")
	if !strings.HasSuffix(want, "\r\n") {
		want += "\r\n" // the part's last line break
	}
	if string(got) != want {
		t.Fatalf("the encoding of %q decodes to %q; want %q\n%q", text, got, want, out)
	}
}

func TestQuotedPrintable(t *testing.T) {
	long := strings.Repeat("0123456789", 20)
	for _, text := range []string{
		"Your code is 482913.\nIt expires in 10 minutes.",
		".", ".\n.", "..\n.hidden\n", "a\r\n.b\r\n", // dots that would start a line
		long, "." + long, strings.Repeat(".", 200), // soft breaks, and a dot after one
		strings.Repeat("é", 60), strings.Repeat("a", 74) + "é", strings.Repeat("a", 75) + "=",
		"trailing space \nand tab\t\nend ", "  \n\t", "a=b", "line\r\nbreaks\nmixed\r\n",
		"lone\rcarriage", "\x00\x01\x7f", "<p>Hello ünï</p>\n<p>" + long + "</p>",
		strings.Repeat("a", 75) + " ", strings.Repeat("a", 74) + " b", strings.Repeat("a", 75) + ".",
	} {
		checkQuotedPrintable(t, text)
	}
}

func FuzzQuotedPrintable(f *testing.F) {
	for _, s := range []string{"a", ".\n.", strings.Repeat("é ", 50), "x \r\n.\r\n", strings.Repeat("a", 75) + "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if strings.Contains(strings.ReplaceAll(text, "\r\n", ""), "\r") {
			// A lone CR is encoded (=0D) and comes back as it was, but the
			// decoder reads "=0D" followed by a line break as a CRLF: the
			// comparison below would see a difference that is not one.
			text = strings.ReplaceAll(text, "\r", "")
		}
		checkQuotedPrintable(t, text)
	})
}

func TestSubjectHeader(t *testing.T) {
	for _, s := range []string{
		"Your Acme sign-in code",
		"Sign in to Acme – ünïcode",
		"Hi\r\nBcc: evil@example.com",
		strings.Repeat("Ünïcode subject that goes on ", 12),
		strings.Repeat("x", 1200), // too long for one line: encoded and folded
		"",
	} {
		b := appendSubject([]byte("Subject: "), s)
		if !bytes.HasSuffix(b, []byte("\r\n")) {
			t.Fatalf("subject %q: no CRLF at the end: %q", s, b)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\r\n"), "\r\n")
		for i, l := range lines {
			if len(l) > 998 || (i > 0 && !strings.HasPrefix(l, " ")) {
				t.Fatalf("subject %q: line %d is not a folded header line: %q", s, i, l)
			}
		}
		msg, err := mail.ReadMessage(bytes.NewReader(append(b, "\r\n"...)))
		if err != nil {
			t.Fatalf("subject %q: %v", s, err)
		}
		var dec mime.WordDecoder
		got, err := dec.DecodeHeader(msg.Header.Get("Subject"))
		if err != nil || got != s {
			t.Fatalf("subject %q decodes to %q (%v)", s, got, err)
		}
		if len(msg.Header) != 1 {
			t.Fatalf("subject %q made headers %v", s, msg.Header)
		}
	}
}

// TestSMTPDotsArriveIntact: lines that start with a dot, and a line that is
// a lone dot (which would end DATA), arrive as they were written, in both
// parts (TestSMTPWithoutPipelining sends them one command at a time).
func TestSMTPDotsArriveIntact(t *testing.T) {
	ts := startServer(t, serverOptions{})
	s := newTestSMTP(t, ts, TLSNone, nil)
	m := Message{Channel: ChannelEmail, To: "ada@example.com", Subject: "Dots", Text: dottyText, HTML: "<p>\n.</p>\n" + dottyText}
	if _, err := s.Send(context.Background(), m); err != nil {
		t.Fatalf("Send() error = %v", err)
	}
	p := parseMessage(t, ts.messages()[0].data)
	if got := strings.TrimRight(p.parts["text/plain"], "\n"); got != dottyText {
		t.Errorf("text/plain part = %q; want %q", got, dottyText)
	}
	if got := strings.TrimRight(p.parts["text/html"], "\n"); got != m.HTML {
		t.Errorf("text/html part = %q; want %q", got, m.HTML)
	}
}

// dottyText has lines that DATA would misread unless their dots were
// stuffed or encoded: a lone dot ends the message.
const dottyText = ".\n..two\n.hidden line\nend."
