package signin

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
)

// TOTP parameters (security R-TOTP-1/2): what every authenticator app
// understands. The secret size is set explicitly: some library versions
// defaulted to 80 bits.
const (
	totpPeriod     = 30
	totpSecretSize = 20
	totpDigits     = 6
	// totpSkew is how many steps either side of now a code may be from.
	totpSkew = 1
)

// newTOTPKey makes a 160-bit secret and its otpauth:// URI (Google's key
// URI format), with the app's name as issuer and the user's e-mail or phone
// as account. The URI is built here: the library's leaves "&" and "=" of an
// issuer unescaped, which cuts "Acme & Co" short in every authenticator app.
func newTOTPKey(issuer, account string) (secret []byte, uri string, err error) {
	secret = make([]byte, totpSecretSize)
	if _, err := rand.Read(secret); err != nil {
		return nil, "", err
	}
	uri = "otpauth://totp/" + uriEscape(issuer) + ":" + uriEscape(account) + "?secret=" + base32NoPad(secret) +
		"&issuer=" + uriEscape(issuer) + "&algorithm=SHA1&digits=" + strconv.Itoa(totpDigits) + "&period=" + strconv.Itoa(totpPeriod)
	return secret, uri, nil
}

// uriEscape percent-encodes every byte but RFC 3986's unreserved ones and
// "@" (spaces as %20, which authenticator apps read, never "+").
func uriEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~@", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// totpStep is the time step of t.
func totpStep(t time.Time) int64 { return t.Unix() / totpPeriod }

// totpCode is the code of secret for a time step.
func totpCode(secret []byte, step int64) (string, error) {
	if step < 0 {
		return "", fmt.Errorf("negative totp step")
	}
	return hotp.GenerateCodeCustom(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(secret), uint64(step),
		hotp.ValidateOpts{Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
}

// matchTOTP returns the step, within ±totpSkew of now, whose code is code;
// ok is false when none is. Every candidate is compared, in constant time,
// so the time taken does not say which step matched.
func matchTOTP(secret []byte, code string, now time.Time) (step int64, ok bool) {
	if len(code) != totpDigits {
		return 0, false
	}
	cur := totpStep(now)
	for s := cur - totpSkew; s <= cur+totpSkew; s++ {
		want, err := totpCode(secret, s)
		if err != nil {
			continue
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 && !ok {
			step, ok = s, true
		}
	}
	return step, ok
}
