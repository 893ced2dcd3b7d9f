package courier

import (
	"strings"
	"unicode/utf16"
)

// gsm7Basic is the GSM 03.38 default alphabet; gsm7Extended are the
// characters that take an escape and so count twice.
const (
	gsm7Basic = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
		"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
	gsm7Extended = "^{}\\[~]|€\f"
)

// SMS encodings.
const (
	EncodingGSM7 = "GSM-7"
	EncodingUCS2 = "UCS-2"
)

// SMSInfo is how an SMS text travels: Length in characters of its encoding
// (GSM-7 septets, an escaped character counting two; UCS-2 code units),
// Encoding, and Segments, the number of messages a carrier bills for it
// (one up to 160 GSM-7 / 70 UCS-2 characters, else 153 / 67 per part).
type SMSInfo struct {
	Length   int    `json:"length" doc:"Length in characters of its encoding (GSM-7 septets, an escaped character counting two; UCS-2 code units)."`
	Encoding string `json:"encoding" doc:"GSM-7 or UCS-2."`
	Segments int    `json:"segments" doc:"Messages a carrier bills for it (one up to 160 GSM-7 / 70 UCS-2 characters, else 153 / 67 per part)."`
}

// MeasureSMS returns the SMSInfo of text.
func MeasureSMS(text string) SMSInfo {
	n, gsm := 0, true
	for _, r := range text {
		switch {
		case strings.ContainsRune(gsm7Basic, r):
			n++
		case strings.ContainsRune(gsm7Extended, r):
			n += 2
		default:
			gsm = false
		}
	}
	if gsm {
		return SMSInfo{Length: n, Encoding: EncodingGSM7, Segments: segments(n, 160, 153)}
	}
	n = len(utf16.Encode([]rune(text)))
	return SMSInfo{Length: n, Encoding: EncodingUCS2, Segments: segments(n, 70, 67)}
}

func segments(n, single, part int) int {
	switch {
	case n == 0:
		return 0
	case n <= single:
		return 1
	}
	return (n + part - 1) / part
}
