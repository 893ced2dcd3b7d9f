package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestHasherHash(t *testing.T) {
	h := NewHasher([]byte("pepper"))
	got := h.Hash("challenge-1", "123456")

	// Independent computation: 8-byte big-endian length before each part.
	m := hmac.New(sha256.New, []byte("pepper"))
	m.Write([]byte{0, 0, 0, 0, 0, 0, 0, 11})
	m.Write([]byte("challenge-1"))
	m.Write([]byte{0, 0, 0, 0, 0, 0, 0, 6})
	m.Write([]byte("123456"))
	if want := hex.EncodeToString(m.Sum(nil)); got != want {
		t.Errorf("Hash(challenge-1, 123456) = %s; want %s", got, want)
	}
	if got != strings.ToLower(got) || len(got) != 64 {
		t.Errorf("Hash() = %q; want 64 lowercase hex chars", got)
	}
	if again := h.Hash("challenge-1", "123456"); again != got {
		t.Errorf("Hash() not deterministic: %s then %s", got, again)
	}
}

func TestHasherDistinguishes(t *testing.T) {
	h := NewHasher([]byte("pepper"))
	groups := [][]string{
		{"ab", "c"},
		{"a", "bc"},
		{"abc"},
		{"abc", ""},
		{"", "abc"},
		{},
		{""},
		{"", ""},
	}
	seen := map[string][]string{}
	for _, parts := range groups {
		got := h.Hash(parts...)
		if prev, ok := seen[got]; ok {
			t.Errorf("Hash(%q) == Hash(%q)", parts, prev)
		}
		seen[got] = parts
	}
	if NewHasher([]byte("other")).Hash("ab", "c") == h.Hash("ab", "c") {
		t.Errorf("different keys gave the same hash")
	}
}

func TestHasherKeyCopied(t *testing.T) {
	key := []byte("pepper")
	h := NewHasher(key)
	before := h.Hash("x")
	key[0] = 'X'
	if after := h.Hash("x"); after != before {
		t.Errorf("Hash changed after caller modified the key slice")
	}
}

func TestHasherEqual(t *testing.T) {
	h := NewHasher([]byte("pepper"))
	sum := h.Hash("c1", "000123")
	tests := []struct {
		name  string
		hash  string
		parts []string
		want  bool
	}{
		{"match", sum, []string{"c1", "000123"}, true},
		{"upper-case hex", strings.ToUpper(sum), []string{"c1", "000123"}, true},
		{"wrong code", sum, []string{"c1", "000124"}, false},
		{"shifted boundary", sum, []string{"c10", "00123"}, false},
		{"joined", sum, []string{"c1000123"}, false},
		{"truncated hash", sum[:62], []string{"c1", "000123"}, false},
		{"empty hash", "", []string{"c1", "000123"}, false},
		{"not hex", strings.Repeat("zz", 32), []string{"c1", "000123"}, false},
		{"odd length", sum + "0", []string{"c1", "000123"}, false},
	}
	for _, tt := range tests {
		if got := h.Equal(tt.hash, tt.parts...); got != tt.want {
			t.Errorf("Equal(%s, %q) = %v; want %v", tt.name, tt.parts, got, tt.want)
		}
	}
}

// TestHashersReuseStates: the HMAC states a Hasher and a MAC reuse carry
// nothing from one use to the next, whichever goroutine had them: every
// hash, made concurrently and between others, equals one made afresh.
func TestHashersReuseStates(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	h := NewHasher(key)
	m, err := NewMAC(key)
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(parts ...string) string {
		mac := hmac.New(sha256.New, key)
		for _, p := range parts {
			writePart(mac, p)
		}
		return hex.EncodeToString(mac.Sum(nil))
	}
	freshMAC := func(input string) string {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(input))
		return hex.EncodeToString(mac.Sum(nil))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				a, b := strconv.Itoa(g), strconv.Itoa(i)
				if got, want := h.Hash(a, b), fresh(a, b); got != want {
					errs <- "Hash(" + a + ", " + b + ") = " + got + "; want " + want
					return
				}
				if !h.Equal(fresh(b), b) {
					errs <- "Equal refused the hash of " + b
					return
				}
				if got, want := hex.EncodeToString(m.sum([]byte(a+b))), freshMAC(a+b); got != want {
					errs <- "MAC of " + a + b + " = " + got + "; want " + want
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
