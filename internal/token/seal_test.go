package token

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

func mustSealer(t *testing.T, key []byte) *Sealer {
	t.Helper()
	s, err := NewSealer(key)
	if err != nil {
		t.Fatalf("NewSealer() error: %v", err)
	}
	return s
}

func TestSealerRoundTrip(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	s := mustSealer(t, key)
	for _, pt := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte("signing key "), 100)} {
		ad := []byte("signing_keys/42")
		sealed, err := s.Seal(pt, ad)
		if err != nil {
			t.Fatalf("Seal() error: %v", err)
		}
		if want := 1 + 12 + len(pt) + 16; len(sealed) != want {
			t.Errorf("len(Seal(%d bytes)) = %d; want %d", len(pt), len(sealed), want)
		}
		if sealed[0] != 1 {
			t.Errorf("Seal() version byte = %d; want 1", sealed[0])
		}
		if len(pt) > 4 && bytes.Contains(sealed, pt[:5]) {
			t.Errorf("Seal() output contains the plaintext")
		}
		got, err := s.Open(sealed, ad)
		if err != nil {
			t.Fatalf("Open(Seal()) error: %v", err)
		}
		if !bytes.Equal(got, pt) {
			t.Errorf("Open(Seal(%q)) = %q; want %q", pt, got, pt)
		}
	}
	a, _ := s.Seal([]byte("same"), nil)
	b, _ := s.Seal([]byte("same"), nil)
	if bytes.Equal(a[1:13], b[1:13]) {
		t.Errorf("two Seal() calls used the same nonce")
	}
}

func TestSealerOpenFailures(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	s := mustSealer(t, key)
	otherKey := bytes.Repeat([]byte{8}, 32)
	other := mustSealer(t, otherKey)
	ad := []byte("row-1")
	sealed, err := s.Seal([]byte("secret value"), ad)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		c := bytes.Clone(sealed)
		c[i] ^= 1
		return c
	}
	tests := []struct {
		name   string
		sealer *Sealer
		in     []byte
		ad     []byte
	}{
		{"wrong key", other, sealed, ad},
		{"wrong ad", s, sealed, []byte("row-2")},
		{"missing ad", s, sealed, nil},
		{"version changed", s, flip(0), ad},
		{"nonce changed", s, flip(3), ad},
		{"ciphertext changed", s, flip(14), ad},
		{"tag changed", s, flip(len(sealed) - 1), ad},
		{"truncated tag", s, sealed[:len(sealed)-1], ad},
		{"truncated to header", s, sealed[:13], ad},
		{"only version", s, sealed[:1], ad},
		{"empty", s, nil, ad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := tt.sealer.Open(tt.in, tt.ad); err == nil {
				t.Errorf("Open(%s) = %q, nil; want error", tt.name, got)
			}
		})
	}
}

func TestNewSealerKeyLength(t *testing.T) {
	for _, n := range []int{0, 16, 24, 31, 33, 64} {
		if _, err := NewSealer(make([]byte, n)); err == nil {
			t.Errorf("NewSealer(%d bytes) err = nil; want error", n)
		}
	}
}

func TestMasterKeyRoundTrip(t *testing.T) {
	s, err := GenerateMasterKey()
	if err != nil {
		t.Fatalf("GenerateMasterKey() error: %v", err)
	}
	if len(s) != 44 || !strings.HasSuffix(s, "=") {
		t.Errorf("GenerateMasterKey() = %d chars; want 44 with padding", len(s))
	}
	want, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("GenerateMasterKey() is not std base64: %v", err)
	}
	got, err := ParseMasterKey(s)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("ParseMasterKey(GenerateMasterKey()) = %x, %v; want %x, nil", got, err, want)
	}
	s2, _ := GenerateMasterKey()
	if s2 == s {
		t.Errorf("GenerateMasterKey() returned the same key twice")
	}
}

func TestParseMasterKey(t *testing.T) {
	// These bytes encode with '+' and '/' in std base64, so std and url forms differ.
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(0xf8 + i*7)
	}
	std := base64.StdEncoding.EncodeToString(key)
	url := base64.URLEncoding.EncodeToString(key)
	if !strings.Contains(std, "+") || !strings.Contains(std, "P") {
		t.Fatalf("test key encodes as %q; the cases below need a '+' and a 'P'", std)
	}
	valid := []struct{ name, in string }{
		{"std padded", std},
		{"std raw", strings.TrimRight(std, "=")},
		{"url padded", url},
		{"url raw", strings.TrimRight(url, "=")},
		{"whitespace", " \t" + std + "\n"},
		{"trailing newline url raw", strings.TrimRight(url, "=") + "\r\n"},
	}
	for _, tt := range valid {
		got, err := ParseMasterKey(tt.in)
		if err != nil || !bytes.Equal(got, key) {
			t.Errorf("ParseMasterKey(%s) = %x, %v; want %x, nil", tt.name, got, err, key)
		}
	}
	invalid := []struct{ name, in string }{
		{"empty", ""},
		{"spaces", "   "},
		{"16 bytes", base64.StdEncoding.EncodeToString(make([]byte, 16))},
		{"31 bytes", base64.StdEncoding.EncodeToString(make([]byte, 31))},
		{"33 bytes", base64.StdEncoding.EncodeToString(make([]byte, 33))},
		{"64 bytes", base64.RawURLEncoding.EncodeToString(make([]byte, 64))},
		{"hex", strings.Repeat("ab", 32)},
		{"not base64", strings.Repeat("!", 44)},
		{"inner space", std[:20] + " " + std[20:]},
		{"mixed alphabets", strings.Replace(std, "P", "_", 1)}, // std has a '+'; '_' is url-only
	}
	for _, tt := range invalid {
		if got, err := ParseMasterKey(tt.in); err == nil {
			t.Errorf("ParseMasterKey(%s) = %x, nil; want error", tt.name, got)
		} else if len(tt.in) > 8 && strings.Contains(err.Error(), strings.TrimSpace(tt.in)) {
			t.Errorf("ParseMasterKey(%s) error echoes the key", tt.name)
		}
	}
}

// hkdfSHA256 is RFC 5869 written out with HMAC, to check DeriveKey independently.
func hkdfSHA256(secret []byte, info string, n int) []byte {
	ext := hmac.New(sha256.New, make([]byte, sha256.Size)) // empty salt = HashLen zero bytes
	ext.Write(secret)
	prk := ext.Sum(nil)
	var out, prev []byte
	for i := byte(1); len(out) < n; i++ {
		exp := hmac.New(sha256.New, prk)
		exp.Write(prev)
		exp.Write([]byte(info))
		exp.Write([]byte{i})
		prev = exp.Sum(nil)
		out = append(out, prev...)
	}
	return out[:n]
}

func TestDeriveKey(t *testing.T) {
	master := bytes.Repeat([]byte{0x42}, 32)
	seal, err := DeriveKey(master, "seal")
	if err != nil {
		t.Fatalf("DeriveKey(seal) error: %v", err)
	}
	if want := hkdfSHA256(master, "gatehouse/v1/seal", 32); !bytes.Equal(seal, want) {
		t.Errorf("DeriveKey(seal) = %x; want HKDF-SHA256 %x", seal, want)
	}
	again, _ := DeriveKey(master, "seal")
	if !bytes.Equal(seal, again) {
		t.Errorf("DeriveKey(seal) is not deterministic")
	}
	hash, _ := DeriveKey(master, "hash")
	if len(hash) != 32 || bytes.Equal(seal, hash) || bytes.Equal(seal, master) {
		t.Errorf("DeriveKey(hash) = %x; want 32 bytes distinct from seal key and master", hash)
	}
	otherMaster := bytes.Repeat([]byte{0x43}, 32)
	if k, _ := DeriveKey(otherMaster, "seal"); bytes.Equal(k, seal) {
		t.Errorf("DeriveKey with a different master gave the same key")
	}
	if _, err := DeriveKey(master, ""); err == nil {
		t.Errorf("DeriveKey(empty purpose) err = nil; want error")
	}
	if _, err := DeriveKey(master[:16], "seal"); err == nil {
		t.Errorf("DeriveKey(16-byte master) err = nil; want error")
	}
}
