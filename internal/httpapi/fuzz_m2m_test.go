package httpapi

import (
	"encoding/base64"
	"net/url"
	"testing"
)

// FuzzTokenRequest checks the token endpoint's readers of outside input:
// the form or JSON body gives only clean text, each parameter once; HTTP
// Basic gives back exactly the client id and secret a client encoded (RFC
// 6749 §2.3.1: form-encoded, then base64), and never an empty one.
func FuzzTokenRequest(f *testing.F) {
	for _, s := range [][4]string{
		{"application/x-www-form-urlencoded", "grant_type=client_credentials&scope=a+b", "0190c7a2-5b1e-7c3d", "ghm_abc"},
		{"application/x-www-form-urlencoded", "grant_type=a&grant_type=b", "id", "se:cret"},
		{"application/x-www-form-urlencoded", "x=%00", "", "s"},
		{"application/x-www-form-urlencoded; charset=utf-8", "%zz", "a b", "%"},
		{"application/json", `{"grant_type":"client_credentials","scope":["a"]}`, "ü", "+"},
		{"application/json", `{"a":"\u0000"}`, "id", "x"},
		{"", "null", "id", ""},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, contentType, body, id, secret string) {
		params, err := tokenParams(contentType, []byte(body))
		if err == nil {
			for k, v := range params {
				if !cleanText(v) {
					t.Errorf("tokenParams(%q) %s = %q; want clean text", body, k, v)
				}
			}
		}
		header := "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
		gotID, gotSecret, ok := basicCredentials(header)
		want := id != "" && secret != "" && cleanText(id) && cleanText(secret)
		if ok != want || ok && (gotID != id || gotSecret != secret) {
			t.Errorf("basicCredentials(%q, %q) = %q, %q, %v; want them back: %v", id, secret, gotID, gotSecret, ok, want)
		}
		if gotID, gotSecret, ok := basicCredentials(body); ok && (gotID == "" || gotSecret == "" || !cleanText(gotID) || !cleanText(gotSecret)) {
			t.Errorf("basicCredentials(%q) = %q, %q, true; want non-empty clean text", body, gotID, gotSecret)
		}
	})
}
