package courier

import (
	"crypto/rand"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"
)

// outgoing is one e-mail as it goes out: the envelope's addresses and the
// whole message (RFC 5322, MIME), ready for DATA. Its lines end in CRLF and
// none starts with a dot, so it needs no dot-stuffing: it is written as it
// is, followed by the lone "." that ends DATA.
type outgoing struct {
	from, to string // envelope addresses, as MAIL and RCPT take them: <addr>
	id       string // Message-ID, with its angle brackets
	data     []byte
}

// buildMessage turns m into an outgoing message with a fresh Message-ID
// under the sender's domain: text/plain, text/html, or both as
// multipart/alternative, each part quoted-printable (7-bit whatever the
// text, so any server takes it).
//
// Written here rather than by go-mail, which builds a message through
// header maps, a multipart writer and a byte-at-a-time dot-stuffer: that was
// about 6 % of the server's CPU per code login (docs/performance.md). The
// tests parse what this writes with the standard library's readers.
func (s *SMTP) buildMessage(m Message) (*outgoing, *SendError) {
	from := s.from
	if m.From != "" {
		a, err := mail.ParseAddress(m.From)
		if err != nil {
			return nil, &SendError{Provider: smtpProvider, Msg: "invalid from address"}
		}
		from = a
	}
	to, err := mail.ParseAddress(m.To)
	if err != nil {
		// The parser quotes its input, so its error is not wrapped: the address must not reach logs unmasked.
		return nil, &SendError{Provider: smtpProvider, Msg: "invalid recipient address " + MaskAddress(m.To)}
	}
	if m.Text == "" && m.HTML == "" {
		return nil, &SendError{Provider: smtpProvider, Msg: "empty message body"}
	}
	o := &outgoing{from: envelope(from), to: envelope(to), id: "<" + rand.Text() + "@" + domainOf(from.Address) + ">"}
	// About what the parts take once encoded, so that the buffer grows once.
	b := make([]byte, 0, 512+len(m.Text)*11/10+len(m.HTML)*11/10)
	b = header(b, "Date", time.Now().Format(time.RFC1123Z))
	b = header(b, "MIME-Version", "1.0")
	b = header(b, "Message-ID", o.id)
	b = appendSubject(b, m.Subject)
	b = foldedHeader(b, "From", from.String(), true)
	b = foldedHeader(b, "To", to.String(), true)
	switch {
	case m.Text != "" && m.HTML != "":
		boundary := "=_" + rand.Text() // "=_" never occurs in quoted-printable text
		b = append(b, "Content-Type: multipart/alternative;\r\n boundary=\""+boundary+"\"\r\n\r\n"...)
		b = append(b, "--"+boundary+"\r\n"...)
		b = appendPart(b, "text/plain", m.Text)
		b = append(b, "--"+boundary+"\r\n"...)
		b = appendPart(b, "text/html", m.HTML)
		b = append(b, "--"+boundary+"--\r\n"...)
	case m.Text != "":
		b = appendPart(b, "text/plain", m.Text)
	default:
		b = appendPart(b, "text/html", m.HTML)
	}
	o.data = b
	return o, nil
}

// envelope is an address as MAIL FROM and RCPT TO take it: in angle
// brackets, its local part quoted when it must be, without the name.
func envelope(a *mail.Address) string {
	return (&mail.Address{Address: a.Address}).String()
}

func header(b []byte, name, value string) []byte {
	return append(append(append(append(b, name...), ": "...), value...), "\r\n"...)
}

// foldedHeader writes a header whose value may be long (an address with a
// long display name, a long subject): folded so that its lines keep to 78
// characters where the value allows (RFC 5322 §2.2.3). It folds only at a
// single space between two other characters, so no line is blank or
// starts with more white space than the fold's, and unfolding (removing
// the CRLF) gives the value back as it was, as does a reader that joins
// the lines with one space. In an address (structured) it never folds
// between angle brackets (a quoted local part may hold spaces); a quoted
// display name folds like any text, and net/mail writes a non-ASCII one as
// encoded words separated by single spaces, which fold too.
func foldedHeader(b []byte, name, value string, structured bool) []byte {
	b = append(append(b, name...), ": "...)
	col := len(name) + 2
	quoted, angle := false, false
	from := 0  // the start of the part not yet written
	last := -1 // the last place to fold at in it
	for i := 0; i <= len(value); i++ {
		if i < len(value) {
			c := value[i]
			switch {
			case structured && c == '\\' && quoted:
				i++ // the escaped character
				continue
			case structured && c == '"' && !angle:
				quoted = !quoted
			case structured && c == '<' && !quoted:
				angle = true
			case structured && c == '>' && !quoted:
				angle = false
			}
			if c != ' ' || angle || i == 0 || value[i-1] == ' ' || i+1 == len(value) || value[i+1] == ' ' {
				continue
			}
		}
		// i is a place to fold at (or the end): fold at the last one
		// before it when the line would pass 78 characters.
		if col+i-from > 78 && last > from {
			b = append(append(b, value[from:last]...), "\r\n"...)
			col = 0
			from = last
		}
		last = i
	}
	b = append(b, value[from:]...)
	return append(b, "\r\n"...)
}

// appendPart writes a part's (or a single-part message's) content headers
// and its text, quoted-printable.
func appendPart(b []byte, ctype, text string) []byte {
	b = append(b, "Content-Type: "+ctype+"; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"...)
	return appendQuotedPrintable(b, text)
}

// appendSubject writes the Subject header: its value as it is, folded at
// spaces, when it is printable ASCII, else as RFC 2047 encoded words, one
// per folded line. A line break in the subject is encoded like any other
// control character, so it can never start a header of its own.
func appendSubject(b []byte, s string) []byte {
	plain := len(s) <= 900
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f
	}
	if plain {
		return foldedHeader(b, "Subject", s, false)
	}
	b = append(b, "Subject: "...)
	return append(appendEncodedWords(b, s, len("Subject: ")), "\r\n"...)
}

// appendEncodedWords writes s as "Q" encoded words (RFC 2047 §4.2) of at
// most 75 characters, each on its own folded line: the white space
// between encoded words is not part of the text (§6.2). A word never
// splits a character's bytes, so each decodes alone. The first word
// shares its line with the header's name (taken characters), and is
// shorter by as much, so that no line holding an encoded word is longer
// than 76 characters (§2).
func appendEncodedWords(b []byte, s string, taken int) []byte {
	const open, end, room = "=?UTF-8?q?", "?=", 75 - len("=?UTF-8?q?") - len("?=")
	b = append(b, open...)
	used := min(taken, room-4*3) // the first word still holds any one character
	for _, r := range s {
		var rb [utf8.UTFMax]byte
		n := utf8.EncodeRune(rb[:], r)
		size := 0
		for _, c := range rb[:n] {
			size += qSize(c)
		}
		if used+size > room {
			b = append(b, end+"\r\n "+open...)
			used = 0
		}
		for _, c := range rb[:n] {
			switch {
			case c == ' ':
				b = append(b, '_')
			case qSize(c) == 1:
				b = append(b, c)
			default:
				b = append(b, '=', hexDigits[c>>4], hexDigits[c&0x0f])
			}
		}
		used += size
	}
	return append(b, end...)
}

// qSize is what byte c takes in a Q encoded word of a header: itself for
// the characters RFC 2047 §5(3) allows there (and space, as "_"), else =XX.
func qSize(c byte) int {
	if c == ' ' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!*+-/", c) >= 0 {
		return 1
	}
	return 3
}

const hexDigits = "0123456789ABCDEF"

// appendQuotedPrintable encodes text as quoted-printable (RFC 2045 §6.7):
// its line breaks (LF or CRLF) become CRLF, lines are broken softly to at
// most 76 characters, and besides '=', control characters, non-ASCII bytes
// and white space at a line's end, a dot that would start a line is
// encoded too, so that the message needs no dot-stuffing. It ends with CRLF.
func appendQuotedPrintable(b []byte, text string) []byte {
	const max = 76
	col := 0 // characters on the current output line
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\n' || (c == '\r' && i+1 < len(text) && text[i+1] == '\n') {
			if c == '\r' {
				i++
			}
			b = append(b, "\r\n"...)
			col = 0
			continue
		}
		atEnd := i+1 == len(text) || text[i+1] == '\n' || (text[i+1] == '\r' && i+2 < len(text) && text[i+2] == '\n')
		literal := (c > ' ' && c < 0x7f && c != '=' && !(c == '.' && col == 0)) ||
			((c == ' ' || c == '\t') && !atEnd)
		n := 1
		if !literal {
			n = 3
		}
		// A soft break ("=" at the end) must fit on the line too, unless
		// this is the line's last character.
		limit := max - 1
		if atEnd {
			limit = max
		}
		if col+n > limit {
			b = append(b, "=\r\n"...)
			col = 0
			if c == '.' { // now it would start a line
				literal, n = false, 3
			}
		}
		if literal {
			b = append(b, c)
		} else {
			b = append(b, '=', hexDigits[c>>4], hexDigits[c&0x0f])
		}
		col += n
	}
	if col > 0 || len(text) == 0 {
		b = append(b, "\r\n"...)
	}
	return b
}
