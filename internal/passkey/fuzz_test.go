package passkey

import (
	"encoding/json"
	"testing"
)

// FuzzParse feeds hostile bodies to the two parsers every anonymous
// finalize request reaches, and what they accept to the verifiers, against
// a real ceremony's state: nothing may panic, and nothing made up verifies.
func FuzzParse(f *testing.F) {
	rp, err := New(Settings{RPID: "example.com", RPName: "Fuzz", Origins: []string{"https://example.com"}})
	if err != nil {
		f.Fatal(err)
	}
	u := User{Handle: make([]byte, 64), Name: "ada@example.com", DisplayName: "ada@example.com"}
	_, reg, err := rp.BeginRegistration(u)
	if err != nil {
		f.Fatal(err)
	}
	_, login, err := rp.BeginLogin(nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`{}`, `[]`, `null`,
		`{"id":"AAAA","rawId":"AAAA","type":"public-key","response":{"clientDataJSON":"e30","attestationObject":"oA"}}`,
		`{"id":"AAAA","rawId":"AAAA","type":"public-key","response":{"clientDataJSON":"eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0","authenticatorData":"AA","signature":"AA","userHandle":"AA"}}`,
		`{"id":"AAAA","rawId":"AAAA","type":"public-key","response":{"clientDataJSON":"` + b64json(map[string]any{"type": "webauthn.create", "challenge": reg.Challenge, "origin": "https://example.com"}) + `","attestationObject":"o2NmbXRkbm9uZWdhdHRTdG10oGhhdXRoRGF0YUA"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if r, err := ParseRegistration(body); err == nil {
			if _, err := rp.FinishRegistration(u, reg.State, r); err == nil {
				t.Fatalf("a made-up registration verified: %q", body)
			}
		}
		if a, err := ParseAssertion(body); err == nil {
			if _, err := rp.FinishLogin(u, login.State, a); err == nil {
				t.Fatalf("a made-up assertion verified: %q", body)
			}
		}
	})
}

func b64json(v any) string {
	b, _ := json.Marshal(v)
	return EncodeID(b)
}
