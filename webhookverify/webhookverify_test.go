package webhookverify

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Test secrets look like real ones (whsec_ + base64url) but were made up for these tests.
const (
	testSecret  = "whsec_3q2-7wAAAAC_dGVzdC1zZWNyZXQtZm9yLWRvY3MtMQ"
	otherSecret = "whsec_b3RoZXItc2VjcmV0LWZvci10ZXN0cy1vbmx5LTI"
	testBody    = `{"id":"8f14e45f-ceea-467f-a0e6-1b6a1b9b6c2e","event_type":"webhook.test"}`
)

// testNow returns the signing time used by the fixed-clock tests.
func testNow() time.Time { return time.Unix(1700000000, 0) }

// hmacHex computes the expected v1 independently of the package code.
func hmacHex(secret, signed string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(signed))
	return hex.EncodeToString(m.Sum(nil))
}

func TestSignKnownAnswer(t *testing.T) {
	testTime := testNow()
	// Computed once with `openssl dgst -sha256 -hmac` and Python's hmac module; guards
	// against any change to the signed string or the key handling.
	const golden = "66529a803d52512c29e79cc715b03cb0d65a009192dafd776178902626f42e58"

	got := Sign([]byte(testBody), testTime, testSecret)
	computed := hmacHex(testSecret, "1700000000."+testBody)
	if want := "t=1700000000,v1=" + computed; got != want {
		t.Errorf("Sign(...) = %q; want %q", got, want)
	}
	if want := "t=1700000000,v1=" + golden; got != want {
		t.Errorf("Sign(...) = %q; want golden %q", got, want)
	}
}

func TestSignSeveralSecrets(t *testing.T) {
	testTime := testNow()
	got := Sign([]byte(testBody), testTime, testSecret, otherSecret)
	want := "t=1700000000,v1=" + hmacHex(testSecret, "1700000000."+testBody) +
		",v1=" + hmacHex(otherSecret, "1700000000."+testBody)
	if got != want {
		t.Errorf("Sign(two secrets) = %q; want %q", got, want)
	}
}

func TestVerifyTolerance(t *testing.T) {
	testTime := testNow()
	body := []byte(testBody)
	header := Sign(body, testTime, testSecret)
	tests := []struct {
		name      string
		now       time.Time
		tolerance time.Duration
		want      error
	}{
		{"same second", testTime, DefaultTolerance, nil},
		{"sub-second later", testTime.Add(999 * time.Millisecond), DefaultTolerance, nil},
		{"300 s old", testTime.Add(300 * time.Second), DefaultTolerance, nil},
		{"300.9 s old counts as 300", testTime.Add(300*time.Second + 900*time.Millisecond), DefaultTolerance, nil},
		{"301 s old", testTime.Add(301 * time.Second), DefaultTolerance, ErrTimestamp},
		{"300 s in the future", testTime.Add(-300 * time.Second), DefaultTolerance, nil},
		{"301 s in the future", testTime.Add(-301 * time.Second), DefaultTolerance, ErrTimestamp},
		{"a day old", testTime.Add(24 * time.Hour), DefaultTolerance, ErrTimestamp},
		{"zero tolerance means default", testTime.Add(300 * time.Second), 0, nil},
		{"negative tolerance means default", testTime.Add(301 * time.Second), -time.Second, ErrTimestamp},
		{"custom tolerance ok", testTime.Add(10 * time.Second), 10 * time.Second, nil},
		{"custom tolerance exceeded", testTime.Add(11 * time.Second), 10 * time.Second, ErrTimestamp},
		{"zero now", time.Time{}, DefaultTolerance, ErrTimestamp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(header, body, tt.now, tt.tolerance, testSecret)
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Errorf("Verify(%q, now=%v, tol=%v) = %v; want %v", header, tt.now, tt.tolerance, err, tt.want)
			}
		})
	}
}

func TestVerifyTimestampHugeValue(t *testing.T) {
	testTime := testNow()
	// A far-future t must be refused, not overflow into an accepted skew.
	body := []byte(testBody)
	ts := "999999999999999999"
	header := "t=" + ts + ",v1=" + hmacHex(testSecret, ts+"."+testBody)
	if err := Verify(header, body, testTime, DefaultTolerance, testSecret); !errors.Is(err, ErrTimestamp) {
		t.Errorf("Verify(t=%s) = %v; want %v", ts, err, ErrTimestamp)
	}
}

func TestVerifySignatures(t *testing.T) {
	testTime := testNow()
	body := []byte(testBody)
	good := hmacHex(testSecret, "1700000000."+testBody)
	bad := hmacHex(otherSecret, "1700000000."+testBody)
	tests := []struct {
		name    string
		header  string
		secrets []string
		want    error
	}{
		{"single good", "t=1700000000,v1=" + good, []string{testSecret}, nil},
		{"uppercase hex", "t=1700000000,v1=" + strings.ToUpper(good), []string{testSecret}, nil},
		{"first wrong second right", "t=1700000000,v1=" + bad + ",v1=" + good, []string{testSecret}, nil},
		{"first right second wrong", "t=1700000000,v1=" + good + ",v1=" + bad, []string{testSecret}, nil},
		{"v1 before t", "v1=" + good + ",t=1700000000", []string{testSecret}, nil},
		{"unknown keys ignored", "t=1700000000,v0=xyz,v1=" + good + ",v2=" + bad + ",foo=", []string{testSecret}, nil},
		{"empty parts ignored", ",t=1700000000,,v1=" + good + ",", []string{testSecret}, nil},
		{"only wrong v1", "t=1700000000,v1=" + bad, []string{testSecret}, ErrSignature},
		{"right mac under v2 only", "t=1700000000,v1=" + bad + ",v2=" + good, []string{testSecret}, ErrSignature},
		{"truncated v1", "t=1700000000,v1=" + good[:62], []string{testSecret}, ErrSignature},
		{"other t", "t=1700000001,v1=" + good, []string{testSecret}, ErrSignature},
		// The signed string uses t as sent, so a re-formatted t is a different message.
		{"leading zero t", "t=01700000000,v1=" + good, []string{testSecret}, ErrSignature},
		{"no secrets", "t=1700000000,v1=" + good, nil, ErrSignature},
		// An empty key would let anyone sign.
		{"empty secret skipped", "t=1700000000,v1=" + hmacHex("", "1700000000."+testBody), []string{""}, ErrSignature},
		{"secret with whsec_ prefix is used verbatim", "t=1700000000,v1=" + hmacHex(strings.TrimPrefix(testSecret, "whsec_"), "1700000000."+testBody), []string{testSecret}, ErrSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(tt.header, body, testTime, DefaultTolerance, tt.secrets...)
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Errorf("Verify(%q) = %v; want %v", tt.header, err, tt.want)
			}
		})
	}
}

func TestVerifyRotation(t *testing.T) {
	testTime := testNow()
	body := []byte(testBody)
	tests := []struct {
		name     string
		signedBy []string
		secrets  []string
		want     error
	}{
		{"sender has new and old, receiver old", []string{otherSecret, testSecret}, []string{testSecret}, nil},
		{"sender has new and old, receiver new", []string{otherSecret, testSecret}, []string{otherSecret}, nil},
		{"sender old only, receiver both", []string{testSecret}, []string{otherSecret, testSecret}, nil},
		{"sender new only, receiver both", []string{otherSecret}, []string{otherSecret, testSecret}, nil},
		{"sender new only, receiver old", []string{otherSecret}, []string{testSecret}, ErrSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := Sign(body, testTime, tt.signedBy...)
			err := Verify(header, body, testTime, DefaultTolerance, tt.secrets...)
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Errorf("Verify(%q) = %v; want %v", header, err, tt.want)
			}
		})
	}
}

func TestVerifyReserialisedBody(t *testing.T) {
	testTime := testNow()
	raw := []byte("{\n  \"id\": \"8f14e45f-ceea-467f-a0e6-1b6a1b9b6c2e\",\n  \"event_type\": \"webhook.test\",\n  \"data\": {\"a\": 1}\n}")
	header := Sign(raw, testTime, testSecret)
	if err := Verify(header, raw, testTime, DefaultTolerance, testSecret); err != nil {
		t.Fatalf("Verify(raw) = %v; want nil", err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(again, raw) {
		t.Fatalf("re-serialised body equals the raw body; the test needs different spacing")
	}
	if err := Verify(header, again, testTime, DefaultTolerance, testSecret); !errors.Is(err, ErrSignature) {
		t.Errorf("Verify(re-serialised %q) = %v; want %v", again, err, ErrSignature)
	}
	tampered := bytes.Replace(raw, []byte(`"a": 1`), []byte(`"a": 2`), 1)
	if err := Verify(header, tampered, testTime, DefaultTolerance, testSecret); !errors.Is(err, ErrSignature) {
		t.Errorf("Verify(tampered) = %v; want %v", err, ErrSignature)
	}
}

func TestVerifyMalformed(t *testing.T) {
	testTime := testNow()
	body := []byte(testBody)
	good := hmacHex(testSecret, "1700000000."+testBody)
	tests := []struct {
		name   string
		header string
		want   error
	}{
		{"empty", "", ErrMissingHeader},
		{"blank", "   ", ErrMissingHeader},
		{"t without value", "t=", ErrMalformedHeader},
		{"t not a number", "t=abc,v1=00", ErrMalformedHeader},
		{"t negative", "t=-1700000000,v1=" + good, ErrMalformedHeader},
		{"t with plus", "t=+1700000000,v1=" + good, ErrMalformedHeader},
		{"t fractional", "t=1700000000.5,v1=" + good, ErrMalformedHeader},
		{"t too long", "t=" + strings.Repeat("9", 19) + ",v1=" + good, ErrMalformedHeader},
		{"t twice", "t=1700000000,t=1700000000,v1=" + good, ErrMalformedHeader},
		{"no t", "v1=" + good, ErrMalformedHeader},
		{"no v1", "t=1700000000", ErrMalformedHeader},
		{"only v0", "t=1700000000,v0=" + good, ErrMalformedHeader},
		{"v1 empty", "t=1700000000,v1=", ErrMalformedHeader},
		{"v1 not hex", "t=1700000000,v1=zz" + good[2:], ErrMalformedHeader},
		{"v1 odd length", "t=1700000000,v1=" + good[1:], ErrMalformedHeader},
		{"part without =", "t=1700000000,v1=" + good + ",garbage", ErrMalformedHeader},
		{"semicolon separated", "t=1700000000;v1=" + good, ErrMalformedHeader},
		{"spaces around parts are tolerated", " t=1700000000 , v1=" + good + " ", nil},
		{"tab after comma tolerated", "t=1700000000,\tv1=" + good, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(tt.header, body, testTime, DefaultTolerance, testSecret)
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Errorf("Verify(%q) = %v; want %v", tt.header, err, tt.want)
			}
		})
	}
}

func TestErrorsDoNotLeakSecrets(t *testing.T) {
	testTime := testNow()
	body := []byte(testBody)
	headers := []string{
		"", "t=x", Sign(body, testTime, otherSecret), Sign(body, testTime.Add(-time.Hour), testSecret),
	}
	for _, h := range headers {
		err := Verify(h, body, testTime, DefaultTolerance, testSecret)
		if err == nil {
			t.Fatalf("Verify(%q) = nil; want an error", h)
		}
		if msg := err.Error(); strings.Contains(msg, testSecret) || strings.Contains(msg, hmacHex(testSecret, "1700000000."+testBody)) {
			t.Errorf("Verify(%q) error %q contains the secret or the expected signature", h, msg)
		}
	}
}

func FuzzVerify(f *testing.F) {
	testTime := testNow()
	body := []byte(testBody)
	good := hmacHex(testSecret, "1700000000."+testBody)
	f.Add(Sign(body, testTime, testSecret), body)
	f.Add(Sign(body, testTime, otherSecret, testSecret), body)
	f.Add("", body)
	f.Add("t=", body)
	f.Add("t=abc,v1=00", body)
	f.Add("v1="+good, body)
	f.Add(" t=1700000000 , v1="+good+" ,", body)
	f.Add("t=1700000000,v0=,v2=1,v1="+good, []byte{})
	f.Add("t=999999999999999999,v1="+good, body)
	f.Add("t=1700000000,v1=\xff\xfe,=,==,t", []byte("\x00"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		err := Verify(header, body, testTime, DefaultTolerance, testSecret, "")
		if err != nil {
			known := []error{ErrMissingHeader, ErrMalformedHeader, ErrTimestamp, ErrSignature}
			isKnown := false
			for _, k := range known {
				isKnown = isKnown || errors.Is(err, k)
			}
			if !isKnown {
				t.Errorf("Verify(%q) = %v; want one of the package's errors", header, err)
			}
		} else {
			// Accepted: the header must carry the independently computed MAC for its own t.
			var ts string
			for _, p := range strings.Split(header, ",") {
				if k, v, _ := strings.Cut(strings.TrimSpace(p), "="); k == "t" {
					ts = v
				}
			}
			want := hmacHex(testSecret, ts+"."+string(body))
			if !strings.Contains(strings.ToLower(header), "v1="+want) {
				t.Errorf("Verify(%q, %q) = nil; header lacks the real signature %s", header, body, want)
			}
			if n, err := strconv.ParseInt(ts, 10, 64); err != nil || (n-testTime.Unix() > 300 || testTime.Unix()-n > 300) {
				t.Errorf("Verify(%q) = nil; t=%q is outside the tolerance", header, ts)
			}
		}
		// Whatever the body, what Sign produces verifies.
		signed := Sign(body, testTime, testSecret)
		if err := Verify(signed, body, testTime, DefaultTolerance, testSecret); err != nil {
			t.Errorf("Verify(Sign(%q)) = %v; want nil", body, err)
		}
	})
}
