package servertest

import "testing"

func TestLeaks(t *testing.T) {
	const jwt = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLWJ5dGVzLWhlcmU"
	for _, tc := range []struct {
		text, secret string
		want         bool
	}{
		{`{"msg":"code","code":"042917"}`, "042917", true},
		{"042917 is your code", "042917", true},
		{"your code is 042917.", "042917", true},
		{"code=042917&x", "042917", true},
		{"at 2031-03-14 15:09:26.1042917+00:00", "042917", false},
		// Six digits inside a number (a time's fraction, a duration) are
		// no leak: CI once failed on six digits inside some logged number.
		{`{"time":"2031-03-14T15:09:26.042917+01:00"}`, "042917", false},
		{`{"ms":0.042917,"n":1}`, "042917", false},
		{"hash a0429171f", "042917", false},
		{"id 1-042917-b", "042917", true},
		{`{"token":"` + jwt + `"}`, jwt, true},
		{"sig=c2lnbmF0dXJlLWJ5dGVzLWhlcmU", jwt, true},
		{"claims eyJzdWIiOiJhbGljZSJ9", jwt, true},
		{"header eyJhbGciOiJFUzI1NiJ9 only", jwt, false},
		{"handle=Zm9vYmFyYmF6cXV4cXV1eA", "Zm9vYmFyYmF6cXV4cXV1eA", true},
		{"nothing here", "Zm9vYmFyYmF6cXV4cXV1eA", false},
		{"a 042917a then 042917", "042917", true},
		// Escaped: a message's text in a JSON log line, a code in a URL.
		{`{"text":"Your code is:\n\n042917\nIt expires"}`, "042917", true},
		{`{"text":"code\t042917"}`, "042917", true},
		{`{"text":"code\u003d042917"}`, "042917", true},
		{"next=%2Fv%3Fcode%3D042917", "042917", true},
		{"q=code%20042917&x=1", "042917", true},
		{`{"n":"\\x042917"}`, "042917", false},
		{"id=%3D1042917", "042917", false},
		{"XXXXX-XXXXX in the text", "XXXXX-XXXXX", true},
		// Two dots do not make a JWT: a link is searched for whole.
		{"https://app.example.com/cb?x=1", "https://app.example.com/cb?x=1", true},
		{"seen example only", "https://app.example.com/cb?x=1", false},
		{"seen a and b", "a1234567890..b1234567890", false},
	} {
		if got := Leaks(tc.text, tc.secret); got != tc.want {
			t.Errorf("Leaks(%q, %q) = %v; want %v", tc.text, tc.secret, got, tc.want)
		}
	}
}
