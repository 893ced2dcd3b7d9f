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
		strings.Repeat("ASCII subject that goes on ", 30),         // folded at its spaces
		"x" + strings.Repeat("x", 68) + " ",                       // a space at the fold's place, then nothing
		strings.Repeat("x", 70) + "   " + strings.Repeat("y", 80), // a run of spaces is never a fold
		strings.Repeat("word   ", 40),
		strings.Repeat("x", 1200), // too long for one line: encoded and folded
		"a  b   c", " leading and trailing ",
		"",
	} {
		want := s
		if !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r > '~' }) {
			want = strings.TrimSpace(s) // a reader trims a plain value's ends
		}
		checkHeader(t, "Subject", appendSubject(nil, s), want, true, func(h mail.Header) (string, error) {
			var dec mime.WordDecoder
			return dec.DecodeHeader(h.Get("Subject"))
		})
	}
}

// TestAddressHeaders: long display names, ASCII (quoted) or not (encoded),
// are folded at spaces, and the header reads back as the address.
func TestAddressHeaders(t *testing.T) {
	for _, name := range []string{
		"Ada Lovelace",
		strings.Repeat("Acme Support Team ", 30),
		strings.Repeat("Équipe d’assistance ", 30),
		`Quoted "name", with specials`,
		strings.Repeat("spaced    out ", 20), // runs of spaces inside the quoted name
		strings.Repeat("x", 80) + " " + strings.Repeat("y", 80),
		"",
	} {
		a := &mail.Address{Name: name, Address: "support@acme.test"}
		checkHeader(t, "From", foldedHeader(nil, "From", a.String(), true), a.String(), false, func(h mail.Header) (string, error) {
			list, err := h.AddressList("From")
			if err != nil || len(list) != 1 {
				return "", err
			}
			if list[0].Name != name || list[0].Address != a.Address {
				return list[0].String(), nil
			}
			return a.String(), nil
		})
	}
}

// foldable reports whether a header line's text holds a place to fold at:
// a single space between two other characters, past its first character.
func foldable(l string) bool {
	for i := 2; i < len(l)-1; i++ {
		if l[i] == ' ' && l[i-1] != ' ' && l[i+1] != ' ' {
			return true
		}
	}
	return false
}

// checkHeader holds a written header line to RFC 5322's form (CRLF, folded
// lines that start with white space and keep to 998 characters, to 78
// where a space allowed it, no other header made) and read reads back want.
// ours: the encoded words are this package's, of which no line holds more
// than 76 characters (net/mail writes a name's first encoded word 75 long,
// so that line is a few characters longer).
func checkHeader(t *testing.T, name string, b []byte, want string, ours bool, read func(mail.Header) (string, error)) {
	t.Helper()
	if !bytes.HasSuffix(b, []byte("\r\n")) {
		t.Fatalf("%s %q: no CRLF at the end: %q", name, want, b)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\r\n"), "\r\n")
	for i, l := range lines {
		if len(l) > 998 || (i > 0 && !strings.HasPrefix(l, " ")) || strings.TrimSpace(l) == "" {
			t.Fatalf("%s %q: line %d is not a folded header line: %q", name, want, i, l)
		}
		if len(l) > 78 && foldable(strings.TrimPrefix(l, name+": ")) {
			t.Fatalf("%s %q: line %d is longer than 78 characters and holds a space to fold at: %q", name, want, i, l)
		}
		if ours && strings.Contains(l, "=?") && len(l) > 76 {
			t.Fatalf("%s %q: line %d holds an encoded word and is longer than 76 characters: %q", name, want, i, l)
		}
	}
	msg, err := mail.ReadMessage(bytes.NewReader(append(b, "\r\n"...)))
	if err != nil {
		t.Fatalf("%s %q: %v", name, want, err)
	}
	if len(msg.Header) != 1 {
		t.Fatalf("%s %q made headers %v", name, want, msg.Header)
	}
	if got, err := read(msg.Header); err != nil || got != want {
		t.Fatalf("%s %q reads back as %q (%v)", name, want, got, err)
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
